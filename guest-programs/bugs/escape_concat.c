/* Each byte of the argument is escaped as "#xx" by the program's own code into a fresh string,
 * which strcat appends to a buffer sized for two characters per byte (unzip's CVE-2022-0529
 * as gcc -O2 builds it: the escape's bytes are the program's, so strcat's copy keeps their
 * origin). The overflow rewrites the next block's header and glibc aborts when it is freed:
 * the strcat that wrote it is found among the copying calls given a pointer into the block
 * before. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static char *escape(unsigned char c) {
    static const char hex[] = "0123456789abcdef";
    char *r = malloc(4);
    r[0] = '#';
    r[1] = hex[c >> 4];
    r[2] = hex[c & 15];
    r[3] = '\0';
    return r;
}
int main(int argc, char **argv) {
    const char *s = argc > 1 ? argv[1] : "ok";
    size_t n = strlen(s);
    char *buffer = malloc(n * 2 + 1);
    char *next = malloc(24);
    strcpy(next, "tail");
    buffer[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        char *e = escape((unsigned char)s[i]);
        strcat(buffer, e); /* root */
        free(e);
    }
    printf("%zu %s\n", strlen(buffer), next);
    free(next); /* crash */
    free(buffer);
    return 0;
}
