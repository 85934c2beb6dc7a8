/* A lost update that trips an assertion (issue 23's failure loop): two workers increment a
 * shared counter without a lock, yielding between the load and the store, so under the
 * round-robin schedule each overwrites the other's increments and the main thread's check
 * fails. The root cause is the race between the load and the store. */
#include <assert.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
static long counter;
static void *work(void *arg) {
    for (int i = 0; i < 3; i++) {
        long c = counter; /* race load */
        sched_yield();
        counter = c + 1; /* race store */
    }
    return arg;
}
int main(void) {
    pthread_t a, b;
    pthread_create(&a, NULL, work, NULL);
    pthread_create(&b, NULL, work, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%ld\n", counter);
    assert(counter == 6); /* failure */
    return 0;
}
