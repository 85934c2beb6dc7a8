/* Escapes each byte of the argument as "#xx" into a buffer sized for two characters per byte
 * (a reduction of unzip's CVE-2022-0529): the strcat calls of the loop run past the block into
 * the next block's header, a few bytes each, and glibc aborts when that block is freed. The
 * header's bytes come from several calls made at one line: every call made there is
 * suppressed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void escape(char *out, const char *s) {
    out[0] = '\0';
    for (size_t i = 0; s[i]; i++) {
        char esc[8];
        snprintf(esc, sizeof esc, "#%02x", (unsigned char)s[i]);
        strcat(out, esc); /* root */
    }
}
int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "ok";
    char *escaped = malloc(strlen(name) * 2 + 1);
    char *copy = malloc(32);
    snprintf(copy, 32, "%s", name);
    escape(escaped, name);
    printf("%s %zu\n", copy, strlen(escaped));
    free(copy); /* crash */
    free(escaped);
    return 0;
}
