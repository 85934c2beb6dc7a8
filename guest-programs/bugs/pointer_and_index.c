/* A loop writes past a struct's array into the pointer after it; a second loop then reads
 * through that pointer with its own index k, set just before. The crash's address is computed
 * from both: the pointer, which points nowhere, is what went wrong; `k = 0` is not the answer.
 * The filling loop is out of line (gcc -O2 would otherwise assume it stays in bounds). */
#include <stdio.h>
#include <stdlib.h>
struct rec {
    int vals[4];
    int *p;
};
__attribute__((noipa)) static void fill(int *vals, int n) {
    for (int i = 0; i < n; i++)
        vals[i] = 7; /* root */
}
int main(int argc, char **argv) {
    struct rec r;
    int n = argc > 1 ? atoi(argv[1]) : 4;
    int k;
    r.p = malloc(64);
    fill(r.vals, n);
    int sum = 0;
    for (k = 0; k < 4; k++)
        sum += r.p[k]; /* crash */
    printf("%d\n", sum);
    return 0;
}
