/* Rewrites the file it is given in place, as mp3gain rewrites a tag: a file that starts with
 * "gain " and a number is marked "done", and the number, printed into a short buffer, overflows
 * into the pointer after it, which the program then uses. A file marked done is left alone and
 * the program exits normally, so only a run that finds the file as it was fails: each run of a
 * search must start from the file the first one found. A second argument "remove" removes the
 * file instead of marking it; "rename" writes the marked file as a new one beside it (which
 * must not exist) and renames it over the given one, as editors save. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static struct {
    char value[12];
    const char *unit;
} tag = {"", "dB"};
int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    FILE *f = fopen(argv[1], "r+");
    if (!f)
        return 2;
    char line[64] = "";
    if (!fgets(line, sizeof line, f) || strncmp(line, "gain ", 5) != 0) {
        fclose(f);
        return 0;
    }
    double gain = atof(line + 5);
    if (argc > 2 && strcmp(argv[2], "remove") == 0) {
        fclose(f);
        unlink(argv[1]);
    } else if (argc > 2 && strcmp(argv[2], "rename") == 0) {
        fclose(f);
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.new", argv[1]);
        FILE *t = fopen(tmp, "wx");
        if (!t)
            return 2;
        fputs("done\n", t);
        fclose(t);
        rename(tmp, argv[1]);
    } else {
        rewind(f);
        fputs("done\n", f);
        fclose(f);
    }
    sprintf(tag.value, "%f", gain); /* root */
    printf("%s %s\n", tag.value, tag.unit);
    return 0;
}
