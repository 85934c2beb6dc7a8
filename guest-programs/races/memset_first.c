/* A race whose earlier access is a call of the C library's memset: the main thread fills a
 * shared buffer after starting a worker that reads it with no synchronization. In the run's
 * order the fill comes first and the worker reads 'y'; the harm test holds the main thread back
 * at the call until the worker has read (0): harmful, and the output changes. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
static char shared[32];
static volatile size_t length = sizeof shared; /* (a size the compiler cannot see: a call) */
static char seen;
static void *reader(void *arg) {
    seen = shared[3]; /* racing read */
    return arg;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, reader, NULL);
    memset(shared, 'y', length); /* racing fill */
    pthread_join(t, NULL);
    printf("%c\n", seen ? seen : '-');
    return 0;
}
