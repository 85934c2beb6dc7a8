// many_threads: 128 threads alive at the same time (they all wait at a start gate), each computes
// a Collatz statistic over its own range, returns it through pthread_join; half use a small
// explicit stack size. Then a second wave of 128 short-lived threads (create/join in turn).
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-pthread
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { N = 128, SPAN = 200 };

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int arrived, open_gate;

static void *worker(void *arg)
{
    long id = (long)arg;
    pthread_mutex_lock(&m);
    arrived++;
    pthread_cond_broadcast(&cv);
    while (!open_gate)
        pthread_cond_wait(&cv, &m);
    pthread_mutex_unlock(&m);
    unsigned long best = 0, total = 0;
    for (unsigned long n = id * SPAN + 1; n <= (unsigned long)(id + 1) * SPAN; n++) {
        unsigned long x = n, steps = 0;
        while (x != 1) {
            x = (x & 1) ? 3 * x + 1 : x / 2;
            steps++;
        }
        total += steps;
        if (steps > best)
            best = steps;
    }
    return (void *)(total * 1000 + best);
}

static void *tiny(void *arg)
{
    return (void *)((long)arg * 3 + 1);
}

int main(void)
{
    pthread_t t[N];
    pthread_attr_t small;
    pthread_attr_init(&small);
    pthread_attr_setstacksize(&small, 64 * 1024);
    for (long i = 0; i < N; i++) {
        int rc = pthread_create(&t[i], i % 2 ? &small : NULL, worker, (void *)i);
        if (rc != 0) {
            printf("pthread_create %ld failed: %d\n", i, rc);
            return 1;
        }
    }
    pthread_mutex_lock(&m);
    while (arrived < N)
        pthread_cond_wait(&cv, &m);
    printf("all %d threads alive at the gate\n", arrived);
    open_gate = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&m);
    unsigned long sum = 0, x = 0;
    for (int i = 0; i < N; i++) {
        void *r;
        pthread_join(t[i], &r);
        sum += (unsigned long)r;
        x = x * 1000003 ^ (unsigned long)r;
    }
    printf("sum=%lu hash=%lu\n", sum, x);
    long s2 = 0;
    for (long i = 0; i < N; i++) {
        pthread_t u;
        void *r;
        pthread_create(&u, &small, tiny, (void *)i);
        pthread_join(u, &r);
        s2 += (long)r;
    }
    printf("second wave sum=%ld\n", s2);
    return 0;
}
