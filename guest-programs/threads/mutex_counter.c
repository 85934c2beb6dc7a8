// mutex_counter: 4 threads x 100000 increments of a shared counter under a pthread mutex, plus a
// weighted sum and a trylock/recursive-mutex/errorcheck-mutex check; prints the totals.
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-pthread
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

enum { NTHREADS = 4, ITERS = 100000 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static unsigned long weighted;

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&lock);
        counter++;
        weighted += (unsigned long)(id + 1) * (unsigned long)(i % 7);
        pthread_mutex_unlock(&lock);
    }
    return (void *)(id * 10);
}

int main(void)
{
    pthread_t t[NTHREADS];
    for (long i = 0; i < NTHREADS; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0) {
            perror("pthread_create");
            return 1;
        }
    long rets = 0;
    for (int i = 0; i < NTHREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        rets += (long)r;
    }
    printf("counter=%ld (expected %d)\n", counter, NTHREADS * ITERS);
    printf("weighted=%lu\n", weighted);
    printf("join values sum=%ld\n", rets);

    /* trylock on a held mutex fails with EBUSY. */
    pthread_mutex_lock(&lock);
    printf("trylock while held: %s\n", pthread_mutex_trylock(&lock) == EBUSY ? "EBUSY" : "??");
    pthread_mutex_unlock(&lock);

    /* Recursive and error-checking mutexes. */
    pthread_mutexattr_t a;
    pthread_mutex_t rec, chk;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&rec, &a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&chk, &a);
    pthread_mutex_lock(&rec);
    pthread_mutex_lock(&rec);
    pthread_mutex_unlock(&rec);
    pthread_mutex_unlock(&rec);
    printf("recursive relock: ok\n");
    pthread_mutex_lock(&chk);
    printf("errorcheck relock: %s\n", pthread_mutex_lock(&chk) == EDEADLK ? "EDEADLK" : "??");
    pthread_mutex_unlock(&chk);
    printf("errorcheck unlock unowned: %s\n", pthread_mutex_unlock(&chk) == EPERM ? "EPERM" : "??");
    return 0;
}
