/* The double free of double_free_early_return.c for blocks glibc keeps elsewhere than its
 * per-thread cache, where no word of the block tells it was freed: a fast bin's (the cache for
 * its size full), one merged into the top chunk or a neighbour, and an mmapped one, unmapped by
 * the first free (the second then faults reading its header). The first free is the root
 * cause in each. Arguments: the block size, how many blocks of that size to free first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
char *keep[8];
/* (Not inlined, as if in a file of its own: gcc -O2 drops a malloc whose block only reaches
 * free.) */
__attribute__((noinline)) int process(char *p, int n) {
    if (n > 3) {
        free(p); /* root */
        return -1;
    }
    strcpy(p, "ok");
    return 0;
}
int main(int argc, char **argv) {
    size_t size = argc > 1 ? strtoul(argv[1], 0, 0) : 32;
    int fill = argc > 2 ? atoi(argv[2]) : 0;
    int n = argc > 3 ? atoi(argv[3]) : 5;
    for (int i = 0; i < fill && i < 8; i++)
        keep[i] = malloc(size);
    char *p = malloc(size);
    for (int i = 0; i < fill && i < 8; i++)
        free(keep[i]);
    if (process(p, n) < 0 && rand() % 2 == 0)
        fprintf(stderr, "error\n");
    free(p); /* crash */
    return 0;
}
