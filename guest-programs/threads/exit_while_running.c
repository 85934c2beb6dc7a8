// exit_while_running: threads that pthread_exit (from a nested call, with a cleanup handler)
// while others still compute; main joins them, then main itself calls pthread_exit while the
// last thread is still running. That thread prints the final lines and returns, so the process
// exits with status 0 when its last thread ends.
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-pthread
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>

static sem_t main_leaving;
static int cleanup_ran;

static unsigned long spin(unsigned long n)
{
    unsigned long x = n;
    for (unsigned long i = 0; i < n; i++)
        x = x * 2862933555777941757ul + 3037000493ul;
    return x;
}

static void cleanup(void *arg)
{
    cleanup_ran += (int)(long)arg;
}

static int leave_early(int depth)
{
    if (depth < 0)
        return 0;
    if (depth == 0)
        pthread_exit((void *)11);
    int r = leave_early(depth - 1) + 1;
    printf("not reached\n");
    return r;
}

static void *early(void *arg)
{
    (void)arg;
    pthread_cleanup_push(cleanup, (void *)5);
    leave_early(10);
    pthread_cleanup_pop(0);
    return NULL;
}

static volatile unsigned long sink;

static void *long_running(void *arg)
{
    long id = (long)arg;
    sink = spin(300000);
    return (void *)(20 + id);
}

static void *last(void *arg)
{
    (void)arg;
    sem_wait(&main_leaving);
    unsigned long r = spin(200000);
    printf("last thread: main has left, work=%lu\n", r % 1000);
    printf("last thread: returning; the process exits with status 0\n");
    return NULL;
}

int main(void)
{
    sem_init(&main_leaving, 0, 0);
    pthread_t a, b[3], c;
    pthread_create(&c, NULL, last, NULL);
    for (long i = 0; i < 3; i++)
        pthread_create(&b[i], NULL, long_running, (void *)i);
    pthread_create(&a, NULL, early, NULL);
    void *r;
    pthread_join(a, &r);
    printf("early thread exited with %ld, cleanup sum %d\n", (long)r, cleanup_ran);
    long sum = 0;
    for (int i = 0; i < 3; i++) {
        pthread_join(b[i], &r);
        sum += (long)r;
    }
    printf("long-running threads returned sum %ld\n", sum);
    printf("main: calling pthread_exit\n");
    sem_post(&main_leaving);
    pthread_exit(NULL);
}
