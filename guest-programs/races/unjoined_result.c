/* The main thread reads a worker's result without joining it first (it waits by polling a
 * plain flag): races on the flag and on the result. */
#include <pthread.h>
#include <stdio.h>
static int done;
static long result;
static void *work(void *arg) {
    result = 6 * 7; /* race result */
    done = 1; /* race flag */
    return arg;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, work, NULL);
    while (!done) /* race flag read */
        ;
    printf("%ld\n", result); /* race result read */
    pthread_join(t, NULL);
    return 0;
}
