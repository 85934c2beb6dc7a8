/* A branch that is never taken natively; tests/tools.rs switches one of its instances with
 * `--tool=switch` and expects exactly that iteration to run the body. The branch is on the
 * line marked `flipped`. */
#include <stdio.h>

int main(void) {
    volatile int limit = 42;
    for (int i = 0; i < 5; i++) {
        if (i * 10 == limit) /* flipped */
            printf("body ran at i=%d\n", i);
    }
    puts("done");
    return 0;
}
