/* The same on the stack: a local struct's two ints share one 8-byte word. A helper counts the
 * entries it fills in one of them; the other, the first slot to overwrite, comes from the
 * input unchecked and is the root cause. */
#include <stdio.h>
#include <stdlib.h>
struct span {
    int first;
    int count;
};
static void fill(int *table, struct span *s) {
    for (s->count = 0; s->count < 16; s->count++)
        table[s->count] = s->count;
}
int main(int argc, char **argv) {
    struct span s;
    int *table = malloc(16 * sizeof(int));
    s.first = argc > 1 ? atoi(argv[1]) : 0; /* root */
    fill(table, &s);
    table[s.first] = -1; /* crash */
    printf("%d\n", table[0]);
    free(table);
    return 0;
}
