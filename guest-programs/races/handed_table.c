/* A worker fills a table and publishes it under a lock; main, having acquired that lock, reads
 * it: each granule's write word is the worker's, of an epoch main's clock covers, which rtgrind
 * checks in the code cache against the worker's entry in main's tool-area table of clock
 * entries (issue 30). After the unlock the worker writes the table's last word again, in its
 * next epoch, and tells main through a pipe (no synchronization): main's read of that word
 * finds the worker's write of an epoch it does not cover, the one race, at its two lines. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#define N 4096

static long table[N];
static int published;
static int fds[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < N; i++)
        table[i] = i;
    pthread_mutex_lock(&lock);
    published = 1;
    pthread_mutex_unlock(&lock);
    table[N - 1] = 7; /* racing write */
    if (write(fds[1], "x", 1) != 1)
        return NULL;
    return NULL;
}

int main(void) {
    pthread_t t;
    if (pipe(fds) != 0)
        return 1;
    pthread_create(&t, NULL, worker, NULL);
    for (;;) {
        pthread_mutex_lock(&lock);
        int p = published;
        pthread_mutex_unlock(&lock);
        if (p)
            break;
        sched_yield();
    }
    char c;
    if (read(fds[0], &c, 1) != 1)
        return 1;
    long sum = 0;
    for (int i = 0; i < N; i++)
        sum += table[i]; /* racing read */
    pthread_join(t, NULL);
    printf("%ld\n", sum);
    return 0;
}
