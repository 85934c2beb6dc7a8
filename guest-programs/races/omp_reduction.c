/* Race-free OpenMP: a parallel for with a reduction, a critical section and an atomic update,
 * then the results read by the main thread. */
#include <stdio.h>
int main(void) {
    long sum = 0, crit = 0, atom = 0;
    static long squares[1000];
#pragma omp parallel for reduction(+ : sum) num_threads(3)
    for (int i = 0; i < 1000; i++) {
        squares[i] = (long)i * i;
        sum += i;
#pragma omp critical
        crit += 2;
#pragma omp atomic
        atom += 3;
    }
    long total = 0;
    for (int i = 0; i < 1000; i++)
        total += squares[i];
    printf("%ld %ld %ld %ld\n", sum, crit, atom, total);
    return 0;
}
