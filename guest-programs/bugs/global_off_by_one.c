/* An off-by-one in a loop writing a global array runs into the next global, a pointer, used by printf. */
#include <stdio.h>
static struct { long counts[8]; const char *title; } g = {{0}, "totals"};
int main(int argc, char **argv) {
    int n = argc > 1 ? 8 : 7;
    for (int i = 0; i <= n; i++) /* the test should be < */
        g.counts[i] = i * 1000; /* root */
    printf("%s: %ld\n", g.title, g.counts[0]); /* crash */
    return 0;
}
