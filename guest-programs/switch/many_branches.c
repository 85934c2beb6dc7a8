/* For the switch benchmark: the faulty predicate comes first, then 10,000 branch instances
 * (5,000 iterations of a loop test and an `if`) that every last-executed-first search tries
 * before it. Expected output: "on 4165833". */
#include <stdio.h>
static const char *const modes[2] = { "off", "on" };
int main(void) {
    volatile int level = 3;
    int on = 0;
    if (level > 3) /* faulty: should be >= */
        on = 1;
    unsigned sum = 0;
    for (int i = 0; i < 5000; i++)
        if (i % 3 == 0)
            sum += i;
    printf("%s %u\n", modes[on], sum);
    return 0;
}
