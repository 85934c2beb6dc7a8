/* A copy into a static buffer runs past the buffer and on to where memory ends, and faults
 * there in the copy itself (netcat's rservice: a command line copied into `static char
 * buf[256]`; unace 1.2b's CVE-2015-2063, a header's length gone below zero, copied by gcc
 * -O2's inline `rep movsq`). The copy is the root cause, not the line that stepped its
 * destination. */
#include <stdio.h>
#include <string.h>
static char buf[256];
static char *to = buf + 1; /* a pointer the loader relocates (unace's `t_mhead`) */
int main(int argc, char **argv) {
    char *p = buf;
    *p++ = '<';
    if (argc > 2 && strcmp(argv[2], "loop") == 0)
        for (size_t i = 0; argv[1][i]; i++)
            p[i] = argv[1][i]; /* root-loop */
    else if (argc > 2 && strncmp(argv[2], "rep", 3) == 0) {
        /* "rep-wrapped": a length gone below zero (a 1-byte argument), as unace's */
        size_t n = strlen(argv[1]) - (argv[2][3] == '-' ? 2 : 0);
        const char *s = argv[1];
        char *d = to;
        __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory"); /* root-rep */
    } else if (argc > 2 && strcmp(argv[2], "strcpy") == 0)
        strcpy(p, argv[1]); /* root-strcpy */
    else
        memcpy(p, argv[1], strlen(argv[1])); /* root */
    puts(buf);
    return 0;
}
