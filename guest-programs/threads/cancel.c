// cancel: pthread_cancel of threads blocked at cancellation points (pthread_cond_wait, read on
// an empty pipe, nanosleep, sem_wait), each with cleanup handlers that must run (in LIFO order);
// a thread with cancellation disabled that finishes its work and then honours the pending
// cancel at pthread_testcancel. Every join must return PTHREAD_CANCELED.
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-pthread
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static sem_t ready;
static char log_buf[512];
static pthread_mutex_t log_m = PTHREAD_MUTEX_INITIALIZER;

static void note(const char *s)
{
    pthread_mutex_lock(&log_m);
    strcat(log_buf, s);
    strcat(log_buf, " ");
    pthread_mutex_unlock(&log_m);
}

static void unlock_cleanup(void *arg)
{
    note("condwait-unlock");
    pthread_mutex_unlock(arg);
}

static void *cond_waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m);
    pthread_cleanup_push(unlock_cleanup, &m);
    sem_post(&ready);
    for (;;)
        pthread_cond_wait(&cv, &m); /* never signalled */
    pthread_cleanup_pop(1);
    return NULL;
}

static void outer_cleanup(void *arg)
{
    note((const char *)arg);
}

static int pipe_fds[2];

static void *pipe_reader(void *arg)
{
    (void)arg;
    char c;
    pthread_cleanup_push(outer_cleanup, "read-outer");
    pthread_cleanup_push(outer_cleanup, "read-inner");
    sem_post(&ready);
    ssize_t n = read(pipe_fds[0], &c, 1); /* nothing is ever written */
    printf("read returned %zd (not reached)\n", n);
    pthread_cleanup_pop(0);
    pthread_cleanup_pop(0);
    return NULL;
}

static void *sleeper(void *arg)
{
    (void)arg;
    pthread_cleanup_push(outer_cleanup, "sleep");
    sem_post(&ready);
    struct timespec ts = {1000, 0};
    nanosleep(&ts, NULL);
    pthread_cleanup_pop(0);
    return NULL;
}

static sem_t never;

static void *sem_waiter(void *arg)
{
    (void)arg;
    pthread_cleanup_push(outer_cleanup, "semwait");
    sem_post(&ready);
    sem_wait(&never);
    pthread_cleanup_pop(0);
    return NULL;
}

static sem_t go;
static int disabled_work_done;

static void *disabled(void *arg)
{
    (void)arg;
    int old;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    pthread_cleanup_push(outer_cleanup, "testcancel");
    sem_post(&ready);
    sem_wait(&go); /* a cancellation point, but cancellation is disabled */
    disabled_work_done = 1;
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
    pthread_testcancel();
    pthread_cleanup_pop(0);
    disabled_work_done = 2; /* not reached */
    return NULL;
}

static void cancel_and_join(const char *what, void *(*fn)(void *))
{
    pthread_t t;
    void *r;
    log_buf[0] = 0;
    pthread_create(&t, NULL, fn, NULL);
    sem_wait(&ready);
    if (fn == cond_waiter) {
        /* Once main can take the mutex, the waiter is inside pthread_cond_wait. */
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
    }
    pthread_cancel(t);
    if (fn == disabled)
        sem_post(&go);
    pthread_join(t, &r);
    printf("%-10s canceled=%s cleanups: %s\n", what, r == PTHREAD_CANCELED ? "yes" : "no",
           log_buf);
}

int main(void)
{
    sem_init(&ready, 0, 0);
    sem_init(&never, 0, 0);
    sem_init(&go, 0, 0);
    if (pipe(pipe_fds) != 0)
        return 1;
    cancel_and_join("condwait", cond_waiter);
    /* The cleanup handler released the mutex: it can be taken again. */
    printf("mutex free after cancel: %s\n", pthread_mutex_trylock(&m) == 0 ? "yes" : "no");
    pthread_mutex_unlock(&m);
    cancel_and_join("read", pipe_reader);
    cancel_and_join("nanosleep", sleeper);
    cancel_and_join("sem_wait", sem_waiter);
    cancel_and_join("disabled", disabled);
    printf("disabled thread finished its work: %d\n", disabled_work_done);
    return 0;
}
