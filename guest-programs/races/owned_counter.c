/* A counter one thread increments with atomic read-modify-writes thousands of times in a row
 * (rtgrind makes those inline while the thread owns the location: issue 30). Each increment
 * still releases what the thread wrote before it, and only that: main waits for the count to
 * reach its end, then reads what the worker wrote before its last increment (no race) and
 * what it wrote after it (a race). */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#define ROUNDS 10000

static long count;
static int before;
static volatile int after;

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++)
        __atomic_fetch_add(&count, 1, __ATOMIC_SEQ_CST);
    before = 1;
    __atomic_fetch_add(&count, 1, __ATOMIC_SEQ_CST);
    after = 2; /* racing write */
    return NULL;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    while (__atomic_load_n(&count, __ATOMIC_ACQUIRE) != ROUNDS + 1)
        sched_yield();
    int b = before;
    int a = after; /* racing read */
    pthread_join(t, NULL);
    printf("%d %ld %s\n", b, count, a == 0 || a == 2 ? "ok" : "?");
    return 0;
}
