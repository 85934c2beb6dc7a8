// condvar_pc: producer/consumer over a bounded buffer with a mutex and two condition variables;
// 2 producers, 3 consumers, end-of-stream markers; prints counts and checksums (which do not
// depend on which consumer took which item). Also pthread_cond_broadcast and a timed wait that
// is satisfied before its (generous) deadline.
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-pthread
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

enum { CAP = 8, PRODUCERS = 2, CONSUMERS = 3, ITEMS = 20000 };

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static long buf[CAP];
static int head, count;

static void put(long v)
{
    pthread_mutex_lock(&m);
    while (count == CAP)
        pthread_cond_wait(&not_full, &m);
    buf[(head + count) % CAP] = v;
    count++;
    pthread_cond_signal(&not_empty);
    pthread_mutex_unlock(&m);
}

static long get(void)
{
    pthread_mutex_lock(&m);
    while (count == 0)
        pthread_cond_wait(&not_empty, &m);
    long v = buf[head];
    head = (head + 1) % CAP;
    count--;
    pthread_cond_signal(&not_full);
    pthread_mutex_unlock(&m);
    return v;
}

static void *producer(void *arg)
{
    long id = (long)arg;
    for (long i = 1; i <= ITEMS; i++)
        put(id * 1000000 + i);
    return NULL;
}

struct result {
    long n;
    unsigned long sum, sumsq;
};

static void *consumer(void *arg)
{
    struct result *r = arg;
    for (;;) {
        long v = get();
        if (v < 0)
            break;
        r->n++;
        r->sum += (unsigned long)v;
        r->sumsq += (unsigned long)v * (unsigned long)v;
    }
    return NULL;
}

/* Broadcast: N waiters wait for a flag; one broadcast wakes them all. */
static pthread_cond_t go_cv = PTHREAD_COND_INITIALIZER;
static int go, waiting, woke;

static void *waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m);
    waiting++;
    pthread_cond_broadcast(&not_empty); /* tells main that one more is waiting */
    while (!go)
        pthread_cond_wait(&go_cv, &m);
    woke++;
    pthread_mutex_unlock(&m);
    return NULL;
}

/* Timed wait whose condition is made true long before the deadline. */
static int ready;
static pthread_cond_t ready_cv = PTHREAD_COND_INITIALIZER;

static void *setter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m);
    ready = 1;
    pthread_cond_signal(&ready_cv);
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(void)
{
    pthread_t p[PRODUCERS], c[CONSUMERS];
    struct result res[CONSUMERS] = {{0}};
    for (long i = 0; i < CONSUMERS; i++)
        pthread_create(&c[i], NULL, consumer, &res[i]);
    for (long i = 0; i < PRODUCERS; i++)
        pthread_create(&p[i], NULL, producer, (void *)(i + 1));
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(p[i], NULL);
    for (int i = 0; i < CONSUMERS; i++)
        put(-1);
    struct result total = {0};
    for (int i = 0; i < CONSUMERS; i++) {
        pthread_join(c[i], NULL);
        total.n += res[i].n;
        total.sum += res[i].sum;
        total.sumsq += res[i].sumsq;
    }
    printf("items=%ld sum=%lu sumsq=%lu buffered=%d\n", total.n, total.sum, total.sumsq, count);

    enum { W = 5 };
    pthread_t w[W];
    for (int i = 0; i < W; i++)
        pthread_create(&w[i], NULL, waiter, NULL);
    pthread_mutex_lock(&m);
    while (waiting < W)
        pthread_cond_wait(&not_empty, &m);
    go = 1;
    pthread_cond_broadcast(&go_cv);
    pthread_mutex_unlock(&m);
    for (int i = 0; i < W; i++)
        pthread_join(w[i], NULL);
    printf("broadcast woke %d of %d\n", woke, W);

    pthread_t s;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 60;
    pthread_mutex_lock(&m);
    pthread_create(&s, NULL, setter, NULL);
    int rc = 0;
    while (!ready && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&ready_cv, &m, &deadline);
    pthread_mutex_unlock(&m);
    pthread_join(s, NULL);
    printf("timedwait: ready=%d %s\n", ready, rc == ETIMEDOUT ? "timed out" : "in time");
    return 0;
}
