/* A worker overflows a name field into the pointer beside it; the main thread, after joining
 * it (no race: the join orders every access), writes through the pointer and crashes. The
 * failure's root cause is the worker's store past the field, not a race. */
#include <pthread.h>
#include <stdio.h>
struct job {
    char name[8];
    char *out;
};
static struct job job;
static void *work(void *arg) {
    const char *src = arg;
    for (int i = 0; src[i]; i++)
        job.name[i] = src[i]; /* overflow */
    return NULL;
}
int main(void) {
    static char buf[16];
    job.out = buf;
    pthread_t t;
    pthread_create(&t, NULL, work, "a name longer than eight bytes");
    pthread_join(t, NULL);
    job.out[0] = 'x'; /* crash */
    puts(buf);
    return 0;
}
