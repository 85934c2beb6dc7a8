// tgkill: signals directed at one thread. pthread_kill(SIGUSR1) runs the handler in the target
// thread (which waits in sigsuspend); a raw tgkill syscall does the same; a signal sent to a
// thread that blocks it stays pending for that thread only (sigpending) until sigwait takes it;
// threads inherit the creator's signal mask; a process-directed kill() goes to the one thread
// that does not block the signal.
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-pthread
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static __thread int my_index = -1; /* 0 = main */
static volatile sig_atomic_t handled_by[8];
static volatile sig_atomic_t handled_count;
static sem_t ready, sent;

static void on_usr1(int sig)
{
    (void)sig;
    if (my_index >= 0 && my_index < 8)
        handled_by[my_index]++;
    handled_count++;
}

/* Waits for one SIGUSR1 with the signal blocked outside sigsuspend, so it cannot arrive early. */
static void *suspend_thread(void *arg)
{
    my_index = (int)(long)arg;
    sigset_t usr1, old, wait_mask;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, &old);
    wait_mask = old;
    sigdelset(&wait_mask, SIGUSR1);
    sem_post(&ready);
    int before = handled_by[my_index];
    while (handled_by[my_index] == before)
        sigsuspend(&wait_mask);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return NULL;
}

static pid_t tid_of_raw;
static void *raw_tgkill_target(void *arg)
{
    tid_of_raw = (pid_t)syscall(SYS_gettid);
    return suspend_thread(arg);
}

static void *pending_thread(void *arg)
{
    my_index = (int)(long)arg;
    char *out = malloc(128);
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    /* SIGUSR2 was blocked by main before creating this thread: the mask is inherited. */
    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    int inherited = sigismember(&cur, SIGUSR2);
    sem_post(&ready);
    sem_wait(&sent);
    sigset_t pend;
    sigpending(&pend);
    int was_pending = sigismember(&pend, SIGUSR2);
    int sig = 0;
    sigwait(&usr2, &sig);
    sigpending(&pend);
    snprintf(out, 128, "inherited-mask=%s pending-before=%s sigwait=%s pending-after=%s",
             inherited ? "yes" : "no", was_pending ? "yes" : "no",
             sig == SIGUSR2 ? "SIGUSR2" : "other", sigismember(&pend, SIGUSR2) ? "yes" : "no");
    return out;
}

int main(void)
{
    my_index = 0;
    sem_init(&ready, 0, 0);
    sem_init(&sent, 0, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);

    /* Main blocks SIGUSR1 for the whole run (children inherit this, then adjust). */
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, NULL);

    /* 1: pthread_kill at a thread waiting in sigsuspend. */
    pthread_t t1;
    pthread_create(&t1, NULL, suspend_thread, (void *)1);
    sem_wait(&ready);
    int rc = pthread_kill(t1, SIGUSR1);
    pthread_join(t1, NULL);
    printf("pthread_kill: rc=%d handled by thread 1: %d, by main: %d\n", rc, handled_by[1],
           handled_by[0]);

    /* 2: the raw tgkill system call. */
    pthread_t t2;
    pthread_create(&t2, NULL, raw_tgkill_target, (void *)2);
    sem_wait(&ready);
    rc = (int)syscall(SYS_tgkill, getpid(), tid_of_raw, SIGUSR1);
    pthread_join(t2, NULL);
    printf("tgkill: rc=%d handled by thread 2: %d, by main: %d\n", rc, handled_by[2],
           handled_by[0]);

    /* 3: a signal blocked by its target thread stays pending for that thread. */
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &usr2, NULL);
    pthread_t t3;
    pthread_create(&t3, NULL, pending_thread, (void *)3);
    sem_wait(&ready);
    pthread_kill(t3, SIGUSR2);
    sem_post(&sent);
    void *msg;
    pthread_join(t3, &msg);
    printf("blocked signal: %s\n", (char *)msg);
    free(msg);
    sigset_t pend;
    sigpending(&pend);
    printf("main sees SIGUSR2 pending: %s\n", sigismember(&pend, SIGUSR2) ? "yes" : "no");

    /* 4: kill() to the process: only thread 4 leaves SIGUSR1 unblocked (in sigsuspend). */
    pthread_t t4;
    pthread_create(&t4, NULL, suspend_thread, (void *)4);
    sem_wait(&ready);
    kill(getpid(), SIGUSR1);
    pthread_join(t4, NULL);
    printf("kill(getpid()): handled by thread 4: %d, by main: %d, total handled: %d\n",
           handled_by[4], handled_by[0], handled_count);

    /* 5: pthread_kill with signal 0 checks that a live thread exists. */
    pthread_t t5;
    pthread_create(&t5, NULL, suspend_thread, (void *)5);
    sem_wait(&ready);
    printf("pthread_kill(t, 0) on a live thread: %d\n", pthread_kill(t5, 0));
    pthread_kill(t5, SIGUSR1);
    pthread_join(t5, NULL);
    printf("done: total handled %d\n", handled_count);
    return 0;
}
