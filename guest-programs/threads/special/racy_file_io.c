/* Two threads increment a counter without synchronization while one of them also writes and
 * reads back a regular file on every trip: its output depends on the interleaving, which must
 * not depend on how fast the kernel answers (the file's reads and writes never wait for
 * another thread, so the writer keeps running as it would between any two instructions). */
// rtgrind-test: variants=pie
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static volatile long counter;

static void *bump(void *arg) {
    FILE *f = arg;
    char buf[64];
    for (int i = 0; i < 20000; i++) {
        long c = counter;
        if (f && i % 20 == 0) {
            fprintf(f, "%d\n", i);
            fflush(f);
            rewind(f);
            if (fgets(buf, sizeof buf, f) == NULL)
                return NULL;
            fseek(f, 0, SEEK_END);
        }
        counter = c + 1;
    }
    return NULL;
}

int main(void) {
    FILE *f = tmpfile();
    if (!f)
        return 1;
    pthread_t a, b;
    pthread_create(&a, NULL, bump, f);
    pthread_create(&b, NULL, bump, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("counter=%ld of 40000\n", counter);
    return 0;
}
