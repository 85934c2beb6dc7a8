/* A helper frees the block it was lent on its error path and returns early; the caller, which
 * owns the block, frees it again. glibc aborts in the second free ("double free detected"):
 * the first free is the root cause, not the allocation and not the caller's error check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int process(char *p, int n) {
    if (n > 3) {
        free(p); /* root */
        return -1;
    }
    strcpy(p, "ok");
    return 0;
}
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    char *p = malloc(32);
    if (process(p, n) < 0 && rand() % 2 == 0)
        fprintf(stderr, "error\n");
    free(p); /* crash */
    return 0;
}
