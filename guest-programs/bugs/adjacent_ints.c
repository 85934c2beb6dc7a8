/* Two ints share one 8-byte word: a table slot from the input, unchecked, and the count of
 * entries filled, written after it. The slot's definition is the root cause; the count's
 * stores, the last to the word, have nothing to do with the crash. */
#include <stdio.h>
#include <stdlib.h>
struct cursor {
    int slot;
    int used;
};
static struct cursor cur;
int main(int argc, char **argv) {
    int *table = malloc(16 * sizeof(int));
    cur.slot = argc > 1 ? atoi(argv[1]) : 0; /* root */
    for (cur.used = 0; cur.used < 16; cur.used++)
        table[cur.used] = cur.used;
    table[cur.slot] = -1; /* crash */
    printf("%d\n", table[0]);
    free(table);
    return 0;
}
