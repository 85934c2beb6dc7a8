/* A heap overflow that crashes nothing (issue 24: a heap overflow caught by the redzone): the
 * loop fills one int past a block of `n` ints, into the allocator's slack, and nothing reads
 * it. Natively the program prints its sum and exits 0. With heap redzones the block's redzone
 * is overwritten, its free says so, and suppression finds the store. With n = 8 the block is
 * a multiple of 8 bytes: the int past it is the redzone's first granule, not shared with it.
 * A second argument allocates the block with memalign, posix_memalign, aligned_alloc or
 * valloc instead (their blocks get redzones too). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>

static int *allocate(size_t bytes, const char *how) {
    void *p = NULL;
    if (!how)
        p = malloc(bytes);
    else if (!strcmp(how, "memalign"))
        p = memalign(64, bytes);
    else if (!strcmp(how, "posix_memalign"))
        p = posix_memalign(&p, 32, bytes) ? NULL : p;
    else if (!strcmp(how, "aligned_alloc"))
        p = aligned_alloc(64, bytes);
    else if (!strcmp(how, "valloc"))
        p = valloc(bytes);
    return p;
}
static void fill(int *a, int n) {
    for (int i = 0; i <= n; i++)
        a[i] = i * 3; /* root */ /* (<= writes one past the end) */
}
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 9;
    int *a = allocate(n * sizeof *a, argc > 2 ? argv[2] : NULL);
    fill(a, n);
    int sum = 0;
    for (int i = 0; i < n; i++)
        sum += a[i];
    printf("%d\n", sum);
    free(a);
    return 0;
}
