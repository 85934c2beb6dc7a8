// Threaded kernel: 4 threads hand a token around a ring with a mutex and condition variables,
// and bump a shared counter with lock xadd (atomic fetch-add) between hand-offs.
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ROUNDS 4000
#define WORK 40000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_changed = PTHREAD_COND_INITIALIZER;
static int turn;
static long counter;
static unsigned long checksum[THREADS];

static void *worker(void *arg)
{
    int me = (int)(long)arg;
    unsigned long h = 1469598103934665603ul ^ (unsigned long)me;
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < WORK; i++) {
            h = (h ^ (unsigned long)i) * 1099511628211ul;
            if ((i & 63) == 0)
                __atomic_fetch_add(&counter, 1, __ATOMIC_SEQ_CST);
        }
        pthread_mutex_lock(&lock);
        while (turn != me)
            pthread_cond_wait(&turn_changed, &lock);
        turn = (turn + 1) % THREADS;
        pthread_cond_broadcast(&turn_changed);
        pthread_mutex_unlock(&lock);
    }
    checksum[me] = h;
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    unsigned long sum = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        sum ^= checksum[i];
    }
    printf("threads: counter=%ld checksum=%016lx\n", counter, sum);
    return 0;
}
