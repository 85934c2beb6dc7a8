// openmp: libgomp with exactly 4 threads (omp_set_num_threads, dynamic adjustment off): a
// parallel for with a + reduction, a max reduction, a critical section, atomics, a barrier
// between two phases, a static schedule recording which thread ran each chunk, and sections.
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-fopenmp
#include <omp.h>
#include <stdio.h>

enum { N = 200000 };

static double a[N];

int main(void)
{
    omp_set_dynamic(0);
    omp_set_num_threads(4);

    long sum = 0;
    long maxv = 0;
#pragma omp parallel for reduction(+ : sum) reduction(max : maxv) schedule(static)
    for (long i = 0; i < N; i++) {
        long v = (i * 7919) % 10007;
        sum += v;
        if (v > maxv)
            maxv = v;
    }
    printf("reduction: sum=%ld max=%ld\n", sum, maxv);

    int team = 0;
    long critical_total = 0;
    long atomic_total = 0;
    int owner[8] = {0};
    int phase_errors = 0;
#pragma omp parallel
    {
        int id = omp_get_thread_num();
#pragma omp single
        team = omp_get_num_threads();
#pragma omp for schedule(static, 1)
        for (int i = 0; i < 8; i++)
            owner[i] = omp_get_thread_num();
        for (int k = 0; k < 1000; k++) {
#pragma omp atomic
            atomic_total += id + 1;
        }
#pragma omp critical
        critical_total += (long)(id + 1) * 100;
#pragma omp for
        for (int i = 0; i < N; i++)
            a[i] = i * 0.5;
        /* implicit barrier after the for: phase 2 reads what other threads wrote */
#pragma omp for reduction(+ : phase_errors)
        for (int i = 0; i < N; i++)
            if (a[N - 1 - i] != (N - 1 - i) * 0.5)
                phase_errors++;
    }
    printf("team size: %d\n", team);
    printf("static,1 chunk owners: %d %d %d %d %d %d %d %d\n", owner[0], owner[1], owner[2],
           owner[3], owner[4], owner[5], owner[6], owner[7]);
    printf("atomic total=%ld critical total=%ld phase errors=%d\n", atomic_total, critical_total,
           phase_errors);

    int s1 = 0, s2 = 0;
#pragma omp parallel sections
    {
#pragma omp section
        for (int i = 0; i < 1000; i++)
            s1 += i;
#pragma omp section
        for (int i = 0; i < 1000; i++)
            s2 += 2 * i;
    }
    printf("sections: %d %d\n", s1, s2);

    double dot = 0;
#pragma omp parallel for reduction(+ : dot) schedule(dynamic, 1000)
    for (int i = 0; i < N; i++)
        dot += a[i] * 2.0; /* exact in double for these values */
    printf("dynamic schedule dot=%.1f\n", dot);
    printf("outside parallel: threads=%d in_parallel=%d\n", omp_get_num_threads(),
           omp_in_parallel());
    return 0;
}
