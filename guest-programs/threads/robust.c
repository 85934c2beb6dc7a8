// robust: a thread that dies holding a robust mutex. The main thread waits for the mutex
// while the owner exits without unlocking; its lock returns EOWNERDEAD (the runtime marks the
// futex FUTEX_OWNER_DIED and wakes it, as the kernel does for its own waiters), it makes the
// mutex consistent, and the mutex works again. A second owner dies before anyone waits.
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-pthread
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t m;
static sem_t locked;

static void *owner(void *arg)
{
    int wait_for_waiter = *(int *)arg;
    pthread_mutex_lock(&m);
    sem_post(&locked);
    /* Round 1: die only once the main thread waits for m (glibc sets FUTEX_WAITERS,
     * bit 31 of the lock word, before it sleeps). */
    while (wait_for_waiter && !(__atomic_load_n((unsigned *)&m.__data.__lock, __ATOMIC_ACQUIRE) & 0x80000000u))
        sched_yield();
    return NULL; /* dies holding m */
}

static const char *name(int r)
{
    return r == 0 ? "0" : r == EOWNERDEAD ? "EOWNERDEAD" : strerror(r);
}

int main(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&m, &a);
    sem_init(&locked, 0, 0);
    for (int round = 1; round <= 2; round++) {
        pthread_t t;
        int wait_for_waiter = round == 1;
        pthread_create(&t, NULL, owner, &wait_for_waiter);
        sem_wait(&locked);
        if (round == 2)
            pthread_join(t, NULL);
        int r = pthread_mutex_lock(&m);
        printf("round %d: lock after the owner died: %s\n", round, name(r));
        if (r == EOWNERDEAD)
            printf("round %d: consistent: %s\n", round, name(pthread_mutex_consistent(&m)));
        printf("round %d: unlock: %s\n", round, name(pthread_mutex_unlock(&m)));
        if (round == 1)
            pthread_join(t, NULL);
    }
    printf("lock again: %s\n", name(pthread_mutex_lock(&m)));
    return 0;
}
