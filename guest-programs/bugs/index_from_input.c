/* A table indexed by a number from the input, unchecked: a large one takes the access far
 * past the table. The index's definition is the root cause, not the table's allocation (the
 * address is computed from both; the table pointer is good, the index is not). */
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int *table = malloc(16 * sizeof(int));
    int slot = argc > 1 ? atoi(argv[1]) : 0; /* root */
    for (int i = 0; i < 16; i++)
        table[i] = i;
    table[slot] = -1; /* crash */
    printf("%d\n", table[0]);
    free(table);
    return 0;
}
