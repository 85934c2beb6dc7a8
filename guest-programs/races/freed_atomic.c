/* A heap block's atomic counter, freed; the allocator hands the same memory out again as a
 * plain counter that two threads increment without a lock (issue 23). The race is the plain
 * counter's: the location's atomic past ended with the block it was in. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
static void *worker(void *arg) {
    long *count = arg;
    *count += 1; /* racing increment */
    return NULL;
}
int main(void) {
    atomic_long *uses = malloc(sizeof *uses);
    atomic_init(uses, 0);
    atomic_fetch_add(uses, 1);
    void *was = uses;
    free(uses);
    long *count = malloc(sizeof *count);
    *count = 0;
    pthread_t t;
    pthread_create(&t, NULL, worker, count);
    *count += 1; /* other increment */
    pthread_join(t, NULL);
    printf("%s %ld\n", (void *)count == was ? "reused" : "moved", *count);
    free(count);
    return 0;
}
