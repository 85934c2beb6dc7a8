/* A bounds check that lets one index too many through: the crash is avoided by switching the
 * check's instance for that index. */
#include <stdio.h>
#include <stdlib.h>
static int *table[4];
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 3;
    for (int i = 0; i < 4; i++) table[i] = malloc(sizeof(int));
    long sum = 0;
    for (int i = 0; i <= n; i++) {
        if (i <= 4) /* faulty: should be i < 4 */
            sum += *table[i] = i;
    }
    printf("%ld\n", sum);
    return 0;
}
