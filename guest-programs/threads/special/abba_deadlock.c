// abba_deadlock (not differential: it never finishes, natively either): two threads take two
// mutexes in opposite orders. A barrier after each has taken its first mutex guarantees that
// both then block on the other's mutex, whatever the schedule; main blocks in pthread_join.
// Under rtgrind every thread is blocked forever: it must report a deadlock (exit status 123).
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-pthread
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both_hold_one;

static void *ab(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&a);
    pthread_barrier_wait(&both_hold_one);
    pthread_mutex_lock(&b); /* held by ba forever */
    pthread_mutex_unlock(&b);
    pthread_mutex_unlock(&a);
    return NULL;
}

static void *ba(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&b);
    pthread_barrier_wait(&both_hold_one);
    pthread_mutex_lock(&a); /* held by ab forever */
    pthread_mutex_unlock(&a);
    pthread_mutex_unlock(&b);
    return NULL;
}

int main(void)
{
    pthread_barrier_init(&both_hold_one, NULL, 2);
    printf("starting two threads that lock A,B and B,A\n");
    fflush(stdout);
    pthread_t t1, t2;
    pthread_create(&t1, NULL, ab, NULL);
    pthread_create(&t2, NULL, ba, NULL);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    printf("not reached: no deadlock?\n");
    return 0;
}
