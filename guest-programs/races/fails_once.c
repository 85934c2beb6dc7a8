/* Fails the first time only: it aborts unless a marker file (its argument) exists, and makes
 * the file before it aborts. A run of it under any schedule repeats the schedule, not the
 * file system: the failure does not repeat. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static long total;
static void *work(void *arg) {
    total += (long)arg;
    return NULL;
}
int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    pthread_t t;
    pthread_create(&t, NULL, work, (void *)1L);
    pthread_join(t, NULL);
    if (access(argv[1], F_OK) != 0) {
        close(open(argv[1], O_CREAT | O_WRONLY, 0644));
        abort(); /* first run only */
    }
    printf("%ld\n", total);
    return 0;
}
