/* A race through the C library's strlen (its reads are the trusted library's: the string is
 * checked at the program's call, up to its NUL): the main thread measures a shared name while
 * a worker changes a letter in it with no synchronization. A second worker copies a string
 * with strcpy under a mutex, and the main thread compares it with strcmp under the same mutex:
 * no race there. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
static char name[32] = "hello";
static char guarded[32];
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static void *renamer(void *arg) {
    name[2] = 'L'; /* racing write */
    return arg;
}
static void *copier(void *arg) {
    pthread_mutex_lock(&m);
    strcpy(guarded, (const char *)arg); /* locked copy */
    pthread_mutex_unlock(&m);
    return NULL;
}
int main(void) {
    pthread_t a, b;
    pthread_create(&a, NULL, renamer, NULL);
    pthread_create(&b, NULL, copier, "abc");
    size_t n = strlen(name); /* racing strlen */
    pthread_join(b, NULL);
    pthread_mutex_lock(&m);
    int same = strcmp(guarded, "abc") == 0;
    pthread_mutex_unlock(&m);
    pthread_join(a, NULL);
    printf("%zu %d\n", n, same);
    return 0;
}
