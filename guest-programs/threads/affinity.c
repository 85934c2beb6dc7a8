// affinity: the CPUs a threaded program may run on, as it sees them. rtgrind runs all threads
// of a threaded program on one CPU; the guest must still see the CPUs it was allowed
// (sched_getaffinity before and after creating a thread, in the thread, and in a child forked
// after threads exist, which runs wherever the program could), and pinning itself succeeds.
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-pthread
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static int count(void)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    if (sched_getaffinity(0, sizeof s, &s) != 0)
        return -1;
    return CPU_COUNT(&s);
}

static void *worker(void *arg)
{
    (void)arg;
    *(int *)arg = count();
    return NULL;
}

int main(void)
{
    int before = count();
    int in_thread = 0;
    pthread_t t;
    pthread_create(&t, NULL, worker, &in_thread);
    pthread_join(t, NULL);
    int after = count();
    printf("same in thread: %d, after: %d\n", in_thread == before, after == before);
    pid_t pid = fork();
    if (pid == 0) {
        printf("same in child: %d\n", count() == before);
        fflush(stdout);
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    printf("pin to cpu 0: %d\n", sched_setaffinity(0, sizeof one, &one));
    return 0;
}
