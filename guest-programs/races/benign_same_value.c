/* Benign races (issue 23's harm test): both workers store the value `verbose` already has,
 * which the main thread reads meanwhile, and both store the same value in `seen`. Reversing
 * any of them changes no value read or left: each is reported benign, and the exit status is
 * the program's. */
#include <pthread.h>
#include <stdio.h>
static int verbose = 1;
static int seen;
static void *work(void *arg) {
    verbose = 1; /* race same value */
    seen = 7; /* race same write */
    return arg;
}
int main(void) {
    pthread_t a, b;
    pthread_create(&a, NULL, work, NULL);
    pthread_create(&b, NULL, work, NULL);
    if (verbose) /* race read */
        puts("verbose");
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%d\n", seen);
    return 0;
}
