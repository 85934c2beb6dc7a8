/* The size of a table is computed wrongly (a count of pairs used as a count of ints) two
 * calls before the table is filled; filling it writes past the end, over the next block's
 * malloc header, and freeing that block aborts. */
#include <stdio.h>
#include <stdlib.h>
static size_t count_pairs(int n) { return (size_t)n / 2; }
static size_t table_size(int n) { return count_pairs(n) * sizeof(int); /* should be n * sizeof(int) */ }
static int *make_table(int n) { return malloc(table_size(n)); }
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 4;
    int *t = make_table(n);
    char *label = malloc(32);
    snprintf(label, 32, "squares of %d", n);
    for (int i = 0; i < n; i++)
        t[i] = i * i; /* root */
    printf("%s: %d\n", label, t[n - 1]);
    free(t);
    free(label); /* crash */
    return 0;
}
