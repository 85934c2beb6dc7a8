/* A worker fills a table of its own (each granule's first access), then rewrites it in later
 * epochs (a lock and an unlock between rounds: the granules hold its own older accesses);
 * rtgrind records those in the code cache (issue 30). The last rewrite comes before the unlock
 * that publishes the table, which main acquires: main reads the table without a race. After
 * the unlock the worker writes one more word, new to its epoch, which main reads without
 * synchronization: the one race, at its two lines. Main fills the table once before it starts
 * the worker, so the fill's code is first translated while one thread runs (without the
 * inline record, which starts with the second thread). */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#define N 4096
#define ROUNDS 8

static long table[N];
static long late;
static int published;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static void fill(long k) {
    for (int i = 0; i < N; i++)
        table[i] = (long)i * k;
}

static void *worker(void *arg) {
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        pthread_mutex_lock(&lock);
        pthread_mutex_unlock(&lock);
        fill(r + 1);
    }
    pthread_mutex_lock(&lock);
    published = 1;
    pthread_mutex_unlock(&lock);
    late = 7; /* racing write */
    return NULL;
}

int main(void) {
    pthread_t t;
    fill(1);
    pthread_create(&t, NULL, worker, NULL);
    for (;;) {
        pthread_mutex_lock(&lock);
        int p = published;
        pthread_mutex_unlock(&lock);
        if (p)
            break;
        sched_yield();
    }
    long sum = 0;
    for (int i = 0; i < N; i++)
        sum += table[i];
    long l = late; /* racing read */
    pthread_join(t, NULL);
    printf("%ld %s\n", sum, l == 0 || l == 7 ? "ok" : "?");
    return 0;
}
