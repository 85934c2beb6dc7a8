/* record() has no bound check: slot 4 of the scores lands on the limit stored after them,
 * and an assertion on the limit fails later. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
struct table { int scores[4]; int limit; };
static struct table g = { { 0 }, 10 };
static void record(int slot, int v) {
    g.scores[slot] = v; /* root */
}
int main(int argc, char **argv) {
    int slot = argc > 1 ? atoi(argv[1]) : 0;
    record(slot, 99);
    assert(g.limit <= 10); /* crash */
    printf("limit %d\n", g.limit);
    return 0;
}
