/* A heap buffer overflow runs into the next block's malloc header; glibc notices when that
 * block is freed and aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    char *name = malloc(24);
    char *next = malloc(24);
    strcpy(next, "next");
    strcpy(name, argc > 1 ? argv[1] : "name"); /* root */
    printf("%s %s\n", name, next);
    free(name);
    free(next); /* crash */
    return 0;
}
