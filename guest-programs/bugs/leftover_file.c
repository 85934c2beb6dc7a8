/* Counts the entries of a directory (the one it runs in, or its second argument), then
 * overflows a global into the pointer after it and crashes on it; before crashing it leaves a
 * file in that directory, so a second run counts one more entry and reaches the same crash
 * some blocks later. A third argument copies with a loop of the program's own. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
static struct {
    char name[8];
    const char *greeting;
} g = {"", "hello"};
int main(int argc, char **argv) {
    const char *dir = argc > 2 ? argv[2] : ".";
    int entries = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        entries++;
    if (d)
        closedir(d);
    char left[4096];
    snprintf(left, sizeof left, "%s/leftover-%d", dir, entries);
    FILE *f = fopen(left, "w");
    if (f)
        fclose(f);
    if (argc > 3) /* a third argument: the program's own loop copies */
        for (size_t i = 0; i == 0 || argv[1][i - 1]; i++)
            g.name[i] = argv[1][i]; /* loop root */
    else
        strcpy(g.name, argc > 1 ? argv[1] : "x"); /* root */
    printf("%s %s\n", g.name, g.greeting); /* crash */
    return 0;
}
