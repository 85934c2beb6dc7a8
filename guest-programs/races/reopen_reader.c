/* A reader uses a shared resource while a worker closes and reopens it, with no lock (a RAW
 * race): the reloader frees the configuration, clears the pointer, and only then loads the new
 * one, so a reader that looks between the two gets NULL and crashes. Under the round-robin
 * schedule (sched_yield is a switch point, as a preemption would be) the reader's second
 * iteration falls in that window: SIGSEGV at the use. The root cause is the race between the
 * reloader's clearing store (the definition the crash used) and the reader's load of it.
 * (`cfg` is not static: were it, gcc -O2 would load it once before the reader's loop.) */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
struct conf {
    int level;
    char name[12];
};
struct conf *cfg; /* the open handle, global (other modules would use it) */
static struct conf *open_conf(int level) {
    struct conf *c = malloc(sizeof *c);
    c->level = level;
    snprintf(c->name, sizeof c->name, "level%d", level);
    return c;
}
static void *reader(void *arg) {
    long total = 0;
    for (int i = 0; i < 4; i++) {
        struct conf *c = cfg; /* race load */
        total += c->level; /* crash */
        sched_yield();
    }
    return (void *)total;
}
static void *reloader(void *arg) {
    struct conf *old = cfg;
    cfg = NULL; /* race close */
    free(old);
    sched_yield();
    cfg = open_conf(2); /* race reopen */
    return arg;
}
int main(void) {
    pthread_t r, w;
    void *total;
    cfg = open_conf(1);
    pthread_create(&r, NULL, reader, NULL);
    pthread_create(&w, NULL, reloader, NULL);
    pthread_join(r, &total);
    pthread_join(w, NULL);
    printf("%s %ld\n", cfg->name, (long)total);
    free(cfg);
    return 0;
}
