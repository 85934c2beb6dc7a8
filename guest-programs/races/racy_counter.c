/* Two threads add to a shared counter with no lock: a data race on `hits`. */
#include <pthread.h>
#include <stdio.h>
static long hits;
static void *work(void *arg) {
    for (int i = 0; i < 1000; i++)
        hits++; /* race */
    return arg;
}
int main(void) {
    pthread_t a, b;
    pthread_create(&a, NULL, work, NULL);
    pthread_create(&b, NULL, work, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%ld\n", hits);
    return 0;
}
