/* A worker reads each granule of a table one byte per epoch, five bytes in five epochs (a mutex
 * between them ticks its clock, as glibc's malloc does under xz's LZ match finder, which reads its
 * window that way): each granule moves to a full cell at the third epoch, and its list of the
 * worker's reads grows onto the heap at the fifth. Then the worker reads each whole granule, a
 * read that takes over all its earlier ones, so the granule fits the compact words again and goes
 * back to them (issue 30: in the light call-out, the lists emptied, not freed). After a pipe (no
 * synchronization), main writes a byte of the last granule: the write races with the worker's
 * whole read, which only the words it went back to hold, at their two lines. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#define GRANULES 2000

static unsigned long table[GRANULES];
static pthread_mutex_t tick = PTHREAD_MUTEX_INITIALIZER;
static int go[2];

static void *worker(void *arg) {
    (void)arg;
    unsigned long sum = 0;
    for (int k = 0; k < 5; k++) {
        for (int i = 0; i < GRANULES; i++)
            sum += ((volatile unsigned char *)&table[i])[k];
        /* A new epoch for the next byte. */
        pthread_mutex_lock(&tick);
        pthread_mutex_unlock(&tick);
    }
    for (int i = 0; i < GRANULES; i++)
        sum += ((volatile unsigned long *)table)[i]; /* racing read */
    char c = 'x';
    if (write(go[1], &c, 1) != 1)
        return NULL;
    return (void *)(sum + 1);
}

int main(void) {
    for (int i = 0; i < GRANULES; i++)
        table[i] = 0x0101010101010101ul * (unsigned long)(i % 7);
    if (pipe(go) != 0)
        return 1;
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    char c;
    if (read(go[0], &c, 1) != 1)
        return 1;
    ((volatile unsigned char *)&table[GRANULES - 1])[3] = (unsigned char)c; /* racing write */
    void *sum;
    pthread_join(t, &sum);
    printf("%s\n", sum ? "ok" : "?");
    return 0;
}
