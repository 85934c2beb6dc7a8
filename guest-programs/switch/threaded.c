/* A worker thread classifies a reading with >= where > is meant; the main thread prints what
 * it found. Expected output for 50: "normal". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static const char *const kinds[2] = { "normal", "high" };
static int reading, high;
static void *classify(void *arg) {
    (void)arg;
    if (reading >= 50) /* faulty: should be > */
        high = 1;
    return NULL;
}
int main(int argc, char **argv) {
    reading = argc > 1 ? atoi(argv[1]) : 10;
    pthread_t t;
    pthread_create(&t, NULL, classify, NULL);
    pthread_join(t, NULL);
    puts(kinds[high]);
    return 0;
}
