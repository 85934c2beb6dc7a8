/* Counts readings above a limit; the predicate uses >= for >, so the one reading equal to
 * the limit, the second of five, is wrongly counted: the critical instance is the second of
 * its site, not the last. Expected output: "0". */
#include <stdio.h>
static const int readings[5] = { 1, 5, 2, 3, 1 };
int main(void) {
    volatile int limit = 5;
    int above = 0;
    for (int i = 0; i < 5; i++)
        if (readings[i] >= limit) /* faulty: should be > */
            above++;
    printf("%d\n", above);
    return 0;
}
