/* A race through the C library's memcpy: a worker copies a message into a shared buffer while
 * the main thread reads the buffer with no synchronization (the copy's stores are the library's,
 * which is trusted: the range is checked at the program's call). A second worker fills another
 * buffer with memset under a mutex, and main reads it under the same mutex: no race there. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
static char shared[64];
static char guarded[64];
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static const char message[] = "a message from the worker";
static volatile size_t length = sizeof message; /* (a size the compiler cannot see: a call) */
static void *copier(void *arg) {
    memcpy(shared, message, length); /* racing copy */
    return arg;
}
static void *filler(void *arg) {
    pthread_mutex_lock(&m);
    memset(guarded, 'x', length); /* locked fill */
    pthread_mutex_unlock(&m);
    return arg;
}
int main(void) {
    pthread_t a, b;
    pthread_create(&a, NULL, copier, NULL);
    pthread_create(&b, NULL, filler, NULL);
    char first = shared[0]; /* racing read */
    pthread_mutex_lock(&m);
    char g = guarded[0];
    pthread_mutex_unlock(&m);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%d %d\n", first != 0, g == 'x' || g == 0);
    return 0;
}
