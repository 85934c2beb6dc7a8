/* For the switch benchmark: the faulty predicate comes first, then 10,000 branch instances
 * (5,000 iterations of a loop test and an `if`) that every last-executed-first search tries
 * before it. Expected output: "large 4165833". */
#include <stdio.h>
static const char *const names[2] = { "small", "large" };
int main(void) {
    volatile int x = 10;
    int big = 0;
    if (x > 10) /* faulty: should be >= */
        big = 1;
    unsigned sum = 0;
    for (int i = 0; i < 5000; i++)
        if (i % 3 == 0)
            sum += i;
    printf("%s %u\n", names[big], sum);
    return 0;
}
