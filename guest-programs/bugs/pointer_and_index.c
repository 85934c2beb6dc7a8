/* A loop writes past a struct's array into the pointer after it; a second loop then reads
 * through that pointer with its own index k, set just before. The crash's address is computed
 * from both: the pointer, which points nowhere, is what went wrong; `k = 0` is not the answer. */
#include <stdio.h>
#include <stdlib.h>
struct rec {
    int vals[4];
    int *p;
};
int main(int argc, char **argv) {
    struct rec r;
    int n = argc > 1 ? atoi(argv[1]) : 4;
    int k;
    r.p = malloc(64);
    for (int i = 0; i < n; i++)
        r.vals[i] = 7; /* root */
    int sum = 0;
    for (k = 0; k < 4; k++)
        sum += r.p[k]; /* crash */
    printf("%d\n", sum);
    return 0;
}
