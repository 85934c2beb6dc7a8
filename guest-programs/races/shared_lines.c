/* Two threads compare the same table of short lines with memcmp, unordered (as sort's two
 * threads compare its lines): the worker first, then main, so that each line's granule holds the
 * worker's read when main's memcmp reads it, and moves to a full cell (reads by two threads not
 * ordered with each other) in the memory call's light call-out (issue 30). Then, after a pipe
 * (no synchronization), the worker changes a byte of the last line, which main's memcmp read
 * once, when its granule moved: the write races with that read, which only the new cell holds,
 * at their two lines. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define LINES 2000

static char lines[LINES][8] __attribute__((aligned(8)));
/* (Not a constant: a call of memcmp at -O2 too, not an inlined load.) */
static volatile size_t width = sizeof lines[0];
static int go[2], done[2];

/* Not inlined: the compare's line is named in this function at -O2 too. */
__attribute__((noinline)) static int compare_all(void) {
    int same = 0;
    for (int i = 1; i < LINES; i++)
        same += memcmp(lines[i - 1], lines[i], width) == 0; /* racing compare */
    return same;
}

static void *worker(void *arg) {
    (void)arg;
    int same = compare_all();
    char c = 'x';
    if (write(go[1], &c, 1) != 1 || read(done[0], &c, 1) != 1)
        return NULL;
    lines[LINES - 1][6] = c; /* racing write */
    return (void *)(long)(same == 0);
}

int main(void) {
    for (int i = 0; i < LINES; i++)
        snprintf(lines[i], sizeof lines[i], "%07d", i);
    if (pipe(go) != 0 || pipe(done) != 0)
        return 1;
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    char c;
    if (read(go[0], &c, 1) != 1)
        return 1;
    int same = compare_all();
    if (write(done[1], &c, 1) != 1)
        return 1;
    void *ok;
    pthread_join(t, &ok);
    printf("%s\n", ok && same == 0 ? "ok" : "?");
    return 0;
}
