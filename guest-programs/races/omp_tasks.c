/* Race-free OpenMP tasks (issue 23): tasks fill distinct slots and the creating thread reads
 * them after `taskwait`; tasks update them inside a `taskgroup` read after its end; a
 * recursive Fibonacci joins its two child tasks with `taskwait`. libgomp's `taskwait` and
 * `taskgroup` end return at once, without its lock, when they read a children count of 0 that
 * the last child's completion stored plainly (an acquire and a release in its source, plain
 * `mov`s in the binary). Two threads, so the schedule is the same on any machine. */
#include <stdio.h>
#define N 40
static long slot[N];
static long fib(int n) {
    if (n < 2)
        return n;
    long a, b;
#pragma omp task shared(a)
    a = fib(n - 1);
#pragma omp task shared(b)
    b = fib(n - 2);
#pragma omp taskwait
    return a + b;
}
int main(void) {
    long s = 0, g = 0, f = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    {
        for (int i = 0; i < N; i++) {
#pragma omp task firstprivate(i)
            slot[i] = (long)i * i;
        }
#pragma omp taskwait
        for (int i = 0; i < N; i++)
            s += slot[i];
#pragma omp taskgroup
        {
            for (int i = 0; i < N; i++) {
#pragma omp task firstprivate(i)
                slot[i] += 1;
            }
        }
        for (int i = 0; i < N; i++)
            g += slot[i];
        f = fib(12);
    }
    printf("%ld %ld %ld\n", s, g, f);
    return 0;
}
