/* Two workers increment a counter that lives in the main thread's frame (passed by pointer),
 * without a lock: a race on the main thread's stack, which the report names as such. */
#include <pthread.h>
#include <stdio.h>
static void *work(void *arg) {
    long *n = arg;
    for (int i = 0; i < 1000; i++)
        (*n)++; /* race */
    return NULL;
}
int main(void) {
    long n = 0;
    pthread_t a, b;
    pthread_create(&a, NULL, work, &n);
    pthread_create(&b, NULL, work, &n);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%ld\n", n > 0);
    return 0;
}
