/* A worker thread adds up a total and exits; after joining it, the main thread's test uses >=
 * where > is meant. The faulty predicate runs after a thread has exited: the trace must not
 * take that thread's `exit` for the program's end. Expected output for "8": "low\n". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static int total;
static void *work(void *arg) {
    int n = *(int *)arg;
    for (int i = 0; i < 4; i++)
        total += n / 4;
    return NULL;
}
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 8;
    pthread_t t;
    pthread_create(&t, NULL, work, &n);
    pthread_join(t, NULL);
    if (total >= 8) /* faulty: should be > */
        puts("high");
    else
        puts("low");
    return 0;
}
