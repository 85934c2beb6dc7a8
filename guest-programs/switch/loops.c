/* Switching an instance of the loop's tests makes the loop run forever (done is never set);
 * those switched runs must end by their budget. The faulty predicate comes before the loop.
 * Expected output: "large 3". */
#include <stdio.h>
static const char *const names[2] = { "small", "large" };
int main(void) {
    volatile int x = 10;
    int big = 0;
    if (x > 10) /* faulty: should be >= */
        big = 1;
    int done = 0, i = 0;
    while (!done) {
        i++;
        if (i == 3)
            done = 1;
    }
    printf("%s %d\n", names[big], i);
    return 0;
}
