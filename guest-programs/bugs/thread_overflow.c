/* A worker thread copies its argument into a shared record without a bound and overwrites
 * the pointer after the buffer; the main thread uses the pointer after joining it. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
struct shared { char name[16]; const char *greeting; } s = { "", "hello" };
static void *worker(void *arg) {
    const char *src = arg;
    for (size_t i = 0; src[i]; i++)
        s.name[i] = src[i]; /* root */
    return NULL;
}
int main(int argc, char **argv) {
    pthread_t t;
    pthread_create(&t, NULL, worker, argc > 1 ? argv[1] : "bob");
    pthread_join(t, NULL);
    printf("%s %s\n", s.greeting, s.name);
    return 0;
}
