// racy_counter (not differential: its output depends on the thread interleaving): threads
// increment a shared volatile counter without synchronization. The load and the store of each
// increment are separated by a call and a short loop, so they sit in different basic blocks and
// a thread switch between them loses updates. Prints the final counter (at most THREADS*ITERS).
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-pthread
#include <pthread.h>
#include <stdio.h>

enum { THREADS = 3, ITERS = 200000 };

static volatile long counter;
static volatile unsigned long sink;
static pthread_barrier_t start; /* all threads begin together (natively, too) */

__attribute__((noinline)) static unsigned long work(unsigned long i)
{
    unsigned long x = i;
    for (unsigned long k = 0; k < 1 + (i % 5); k++) {
        x = x * 6364136223846793005ul + 1442695040888963407ul;
        sink = x;
    }
    return x;
}

static void *worker(void *arg)
{
    unsigned long id = (unsigned long)arg;
    pthread_barrier_wait(&start);
    for (unsigned long i = 0; i < ITERS; i++) {
        long tmp = counter;       /* load */
        work(i + id);             /* other blocks in between */
        counter = tmp + 1;        /* store */
        work(i * 3 + id);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    pthread_barrier_init(&start, NULL, THREADS);
    for (unsigned long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("counter=%ld of %d\n", counter, THREADS * ITERS);
    return 0;
}
