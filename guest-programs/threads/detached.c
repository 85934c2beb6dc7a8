// detached: 8 detached threads (4 created detached through an attribute, 4 detached after
// creation) each compute a value and signal completion through a semaphore; main waits for all
// and prints the values. pthread_join on a detached thread is not attempted (undefined).
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-pthread
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>

enum { N = 8 };

static sem_t done;
static unsigned long results[N];

static void *worker(void *arg)
{
    long id = (long)arg;
    unsigned long x = (unsigned long)id + 1;
    for (int i = 0; i < 50000; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    results[id] = x >> 33;
    sem_post(&done);
    return NULL;
}

int main(void)
{
    sem_init(&done, 0, 0);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int state = -1;
    pthread_attr_getdetachstate(&attr, &state);
    printf("attribute detached: %s\n", state == PTHREAD_CREATE_DETACHED ? "yes" : "no");
    for (long i = 0; i < N; i++) {
        pthread_t t;
        if (i % 2 == 0) {
            if (pthread_create(&t, &attr, worker, (void *)i) != 0)
                return 1;
        } else {
            if (pthread_create(&t, NULL, worker, (void *)i) != 0)
                return 1;
            if (pthread_detach(t) != 0)
                return 2;
        }
    }
    pthread_attr_destroy(&attr);
    for (int i = 0; i < N; i++)
        sem_wait(&done);
    for (int i = 0; i < N; i++)
        printf("thread %d: %lu\n", i, results[i]);
    return 0;
}
