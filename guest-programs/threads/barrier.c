// barrier: 4 threads run 200 rounds separated by a pthread_barrier; in each round every thread
// writes its slot, and after the barrier every thread checks the whole row. Exactly one thread
// per wait gets PTHREAD_BARRIER_SERIAL_THREAD. Prints the checksum and counts.
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-pthread
#include <pthread.h>
#include <stdio.h>

enum { N = 4, ROUNDS = 200 };

static pthread_barrier_t bar;
static unsigned long row[N];
static unsigned long checksum[N];
static int bad[N];
static int serial[N];

static unsigned long value(int round, int id)
{
    return (unsigned long)round * 7919u + (unsigned long)id * 104729u + 1;
}

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    for (int r = 0; r < ROUNDS; r++) {
        row[id] = value(r, id);
        if (pthread_barrier_wait(&bar) == PTHREAD_BARRIER_SERIAL_THREAD)
            serial[id]++;
        unsigned long s = 0;
        for (int j = 0; j < N; j++) {
            if (row[j] != value(r, j))
                bad[id]++;
            s += row[j];
        }
        checksum[id] = checksum[id] * 31 + s;
        /* Nobody may overwrite the row before everyone has read it. */
        pthread_barrier_wait(&bar);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[N];
    pthread_barrier_init(&bar, NULL, N);
    for (long i = 0; i < N; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&bar);
    int nserial = 0, nbad = 0;
    for (int i = 0; i < N; i++) {
        nserial += serial[i];
        nbad += bad[i];
        if (checksum[i] != checksum[0])
            nbad++;
    }
    printf("rounds=%d checksum=%lu mismatches=%d serial-thread returns=%d\n", ROUNDS,
           checksum[0], nbad, nserial);
    return 0;
}
