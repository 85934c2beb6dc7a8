/* Counts the entries of the directory it runs in, leaves a file there, then says whether it
 * found any: the test uses > where it should use >= (an empty directory has "." and ".."
 * only). Expected output in an empty directory: "big\n". Every run must find the directory as
 * the first did: the search's runs' files are moved away after each, and the fork search's
 * children (which would see their parent's file) are not used for a program that changes
 * files. */
#include <dirent.h>
#include <stdio.h>
int main(void) {
    int n = 0;
    DIR *d = opendir(".");
    while (d && readdir(d))
        n++;
    if (d)
        closedir(d);
    FILE *f = fopen("made-by-run", "w");
    if (f)
        fclose(f);
    if (n > 2) /* faulty: should be >= */
        puts("big");
    else
        puts("small");
    return 0;
}
