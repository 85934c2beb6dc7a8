/* One branch that depends on the input and one that does not, whichever input source the
 * taint tool is told about: the first line of stdin, the first argument, or the first line of
 * the file named by the second argument. tests/tools.rs finds the two lines by their
 * `dependent`/`independent` markers. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    char buf[64] = "";
    int counter = 0;
    if (argc > 2) {
        FILE *f = fopen(argv[2], "r");
        if (!f || !fgets(buf, sizeof buf, f)) return 2;
        fclose(f);
    } else if (argc > 1) {
        strncpy(buf, argv[1], sizeof buf - 1);
    } else if (!fgets(buf, sizeof buf, stdin)) {
        return 1;
    }
    for (int i = 0; i < 10; i++)
        if (i % 3 == 0) counter += i; /* independent */
    if (buf[0] == 'x')                /* dependent */
        puts("got x");
    else
        puts("no x");
    printf("%d\n", counter);
    return 0;
}
