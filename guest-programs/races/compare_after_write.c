/* A worker compares the start of a buffer with memcmp in one epoch and again after an unlock (its
 * own reads of those granules, of this epoch and the one before: recorded in place, issue 30),
 * then waits on a pipe (no synchronization) while main writes a byte further on, in a granule the
 * worker never read. The worker's next memcmp reads up to that byte (the first difference): its
 * read of that granule races with main's write (another thread's write there, not ordered before
 * it: the range's check may not record it in place), at their two lines. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define N 64
#define CALLS 1000

static char buf[N], other[N];
static volatile size_t head = 16;
static size_t whole = N;
static int fds[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg) {
    (void)arg;
    int same = 0;
    for (int e = 0; e < 2; e++) {
        pthread_mutex_lock(&lock);
        for (int i = 0; i < CALLS; i++)
            same += memcmp(buf, other, head) == 0;
        pthread_mutex_unlock(&lock);
    }
    char c;
    if (read(fds[0], &c, 1) != 1)
        return NULL;
    int later = memcmp(buf, other, whole); /* racing compare */
    return (void *)(long)(same == 2 * CALLS && later > 0);
}

int main(void) {
    pthread_t t;
    if (pipe(fds) != 0)
        return 1;
    pthread_create(&t, NULL, worker, NULL);
    buf[40] = 1; /* racing write */
    if (write(fds[1], "x", 1) != 1)
        return 1;
    void *ok;
    pthread_join(t, &ok);
    printf("%s\n", ok ? "ok" : "?");
    return 0;
}
