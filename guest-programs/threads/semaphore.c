// semaphore: a counting sem_t guarding a pool of 3 resources used by 6 threads (the number in use
// never exceeds 3), a strict ping-pong between two threads through two semaphores, sem_trywait
// on an empty semaphore, a sem_timedwait that is posted in time, and sem_getvalue.
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-pthread
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <time.h>

enum { POOL = 3, USERS = 6, USES = 2000, PINGS = 10000 };

static sem_t pool;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int in_use, max_in_use, over;
static long uses;

static void *user(void *arg)
{
    (void)arg;
    for (int i = 0; i < USES; i++) {
        sem_wait(&pool);
        pthread_mutex_lock(&m);
        in_use++;
        if (in_use > max_in_use)
            max_in_use = in_use;
        if (in_use > POOL)
            over++;
        uses++;
        pthread_mutex_unlock(&m);
        pthread_mutex_lock(&m);
        in_use--;
        pthread_mutex_unlock(&m);
        sem_post(&pool);
    }
    return NULL;
}

static sem_t ping, pong;
static unsigned long trace; /* must see ping, pong, ping, pong... */
static int turn_errors;
static volatile int turn;

static void *ponger(void *arg)
{
    (void)arg;
    for (int i = 0; i < PINGS; i++) {
        sem_wait(&ping);
        if (turn != 1)
            turn_errors++;
        turn = 0;
        trace = trace * 3 + 2;
        sem_post(&pong);
    }
    return NULL;
}

static sem_t late;
static void *late_poster(void *arg)
{
    (void)arg;
    sem_post(&late);
    return NULL;
}

int main(void)
{
    sem_init(&pool, 0, POOL);
    pthread_t t[USERS];
    for (int i = 0; i < USERS; i++)
        pthread_create(&t[i], NULL, user, NULL);
    for (int i = 0; i < USERS; i++)
        pthread_join(t[i], NULL);
    int v;
    sem_getvalue(&pool, &v);
    printf("pool: uses=%ld over-limit=%d max<=%d:%s value=%d\n", uses, over, POOL,
           max_in_use <= POOL ? "yes" : "no", v);

    sem_init(&ping, 0, 0);
    sem_init(&pong, 0, 0);
    pthread_t p;
    pthread_create(&p, NULL, ponger, NULL);
    for (int i = 0; i < PINGS; i++) {
        if (turn != 0)
            turn_errors++;
        turn = 1;
        trace = trace * 3 + 1;
        sem_post(&ping);
        sem_wait(&pong);
    }
    pthread_join(p, NULL);
    printf("ping-pong: %d rounds trace=%lu turn-errors=%d\n", PINGS, trace, turn_errors);

    sem_t empty;
    sem_init(&empty, 0, 0);
    int rc = sem_trywait(&empty);
    printf("trywait on empty: %s\n", rc == -1 && errno == EAGAIN ? "EAGAIN" : "??");

    sem_init(&late, 0, 0);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 60;
    pthread_t lp;
    pthread_create(&lp, NULL, late_poster, NULL);
    rc = sem_timedwait(&late, &deadline);
    pthread_join(lp, NULL);
    printf("timedwait: %s\n", rc == 0 ? "posted in time" : "timed out");
    sem_getvalue(&late, &v);
    printf("final value=%d\n", v);
    return 0;
}
