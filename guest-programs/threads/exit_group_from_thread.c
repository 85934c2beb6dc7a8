// exit_group_from_thread: a non-main thread calls exit(7) while main is blocked in
// pthread_join on another thread (which waits on a condition variable forever). exit() runs the
// atexit handlers and flushes stdio in the exiting thread, and exit_group ends every thread.
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-pthread
// rtgrind-test: exit=7
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static sem_t blocked;

static void at_exit_handler(void)
{
    printf("atexit handler ran\n");
}

static void *forever(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m);
    sem_post(&blocked);
    for (;;)
        pthread_cond_wait(&never, &m);
    return NULL;
}

static void *exiter(void *arg)
{
    (void)arg;
    sem_wait(&blocked);
    unsigned long x = 1;
    for (int i = 0; i < 100000; i++)
        x = x * 6364136223846793005ul + 1;
    printf("exiter: work=%lu, calling exit(7)\n", x % 1000);
    exit(7);
}

int main(void)
{
    atexit(at_exit_handler);
    sem_init(&blocked, 0, 0);
    printf("main: starting threads\n");
    pthread_t a, b;
    pthread_create(&a, NULL, forever, NULL);
    pthread_create(&b, NULL, exiter, NULL);
    pthread_join(a, NULL); /* never returns */
    printf("not reached\n");
    return 0;
}
