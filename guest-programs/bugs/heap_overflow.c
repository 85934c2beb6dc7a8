/* A heap buffer overflow runs into the next block's malloc header; glibc notices when that
 * block is freed and aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* The argument is first copied to an aligned buffer, so that strcpy takes the same path
 * whatever the argument's address (which moves with the environment's size). */
static char input[256] __attribute__((aligned(64)));
int main(int argc, char **argv) {
    char *name = malloc(24);
    char *next = malloc(24);
    strcpy(next, "next");
    strncpy(input, argc > 1 ? argv[1] : "name", sizeof input - 1);
    strcpy(name, input); /* root */
    printf("%s %s\n", name, next);
    free(name);
    free(next); /* crash */
    return 0;
}
