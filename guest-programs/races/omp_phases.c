/* Race-free OpenMP phases (issue 23): `single` and its implicit barrier, explicit barriers
 * between phases that read each other's writes, `master` then a barrier, and one parallel
 * region run several times (libgomp reuses its threads; the master writes what the next
 * region reads). libgomp's barriers spin on a generation word with plain loads before they
 * sleep on it with a futex, and the last thread to arrive stores it plainly: a thread that
 * sees the store while spinning never waits in the kernel. Two threads, so the schedule is
 * the same on any machine. */
#include <omp.h>
#include <stdio.h>
#define N 64
static long shared_val, phase1[N], phase2[N], mval, out[N];
static long param, res[2];
int main(void) {
    int nt = 0;
#pragma omp parallel num_threads(2)
    {
        int me = omp_get_thread_num(), n = omp_get_num_threads();
#pragma omp single
        {
            shared_val = 42;
            nt = n;
        }
        for (int i = me; i < N; i += n)
            phase1[i] = shared_val + i;
#pragma omp barrier
        for (int i = me; i < N; i += n)
            phase2[i] = phase1[(i + 1) % N] * 2;
#pragma omp barrier
#pragma omp master
        mval = phase2[0] + phase2[N - 1];
#pragma omp barrier
        for (int i = me; i < N; i += n)
            out[i] = phase2[i] + mval;
    }
    long total = 0;
    for (int it = 0; it < 5; it++) {
        param = it * 100 + 7;
#pragma omp parallel num_threads(2)
        res[omp_get_thread_num()] = param + omp_get_thread_num();
        total += res[0] + res[1];
    }
    long s = 0;
    for (int i = 0; i < N; i++)
        s += out[i];
    printf("%d %ld %ld %ld\n", nt, s, mval, total);
    return 0;
}
