/* OpenMP atomics (issue 23): `atomic write` and `atomic read` compile to plain `mov`s (relaxed:
 * nothing in the binary says atomic), `update` and `capture` to lock-prefixed instructions.
 * None of them races. The one race is the plain increment just after an atomic statement. */
#include <stdio.h>
static long flag, total, plain;
static int next;
int main(void) {
    long seen = 0;
#pragma omp parallel num_threads(2)
    {
#pragma omp atomic write
        flag = 1;
#pragma omp atomic update
        total += 2;
        int mine;
#pragma omp atomic capture
        mine = next++;
        plain += mine; /* racing increment */
        long f;
#pragma omp atomic read
        f = flag;
#pragma omp atomic
        seen += f;
    }
    printf("%ld %ld %d %ld\n", total, seen, next, plain);
    return 0;
}
