/* A copy into a static buffer runs past the buffer and on to where memory ends, and faults
 * there in the copy itself (netcat's rservice: a command line copied into `static char
 * buf[256]`). The copy is the root cause, not the line that stepped its destination. */
#include <stdio.h>
#include <string.h>
static char buf[256];
int main(int argc, char **argv) {
    char *p = buf;
    *p++ = '<';
    if (argc > 2 && strcmp(argv[2], "loop") == 0)
        for (size_t i = 0; argv[1][i]; i++)
            p[i] = argv[1][i]; /* root-loop */
    else if (argc > 2 && strcmp(argv[2], "strcpy") == 0)
        strcpy(p, argv[1]); /* root-strcpy */
    else
        memcpy(p, argv[1], strlen(argv[1])); /* root */
    puts(buf);
    return 0;
}
