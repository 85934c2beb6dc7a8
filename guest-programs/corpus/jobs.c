/* A job runner with two data races (for `rtgrind triage --tool=race`). The input's first
 * line names the job: a worker checks a shared configuration pointer and then reads a field
 * of it, while another thread clears that pointer without a lock. Two pointers, each cleared
 * by a thread of its own: two root causes (the clearing writes). The field read decides the
 * crash site, and both pointers' readers crash at the same two sites.
 * Input: "conf FIELD" | "backup FIELD" | "none", FIELD one of verbose, level. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct conf {
    int verbose;
    int level;
};
static struct conf the_conf = {1, 2};
static struct conf *volatile conf = &the_conf;
static struct conf *volatile backup = &the_conf;
static char job[16], field[16];
static int seen[64];

/* Out of line, as a log call between a check and its use would be. */
__attribute__((noinline)) static void note(int i) {
    for (volatile int k = 0; k < 20; k++)
        seen[(i + k) % 64]++;
}

static int show(struct conf *c) {
    if (field[0] == 'v')
        return c->verbose; /* crash: verbose */
    return c->level; /* crash: level */
}

static void *worker(void *arg) {
    long sum = 0;
    struct conf *volatile *slot = strcmp(job, "conf") == 0 ? &conf : strcmp(job, "backup") == 0 ? &backup : NULL;
    for (int i = 0; slot != NULL && i < 3000; i++) {
        if (*slot != NULL) { /* race check */
            note(i);
            sum += show(*slot); /* race use */
        }
    }
    return (void *)sum;
}

static void *closer(void *arg) {
    for (volatile int i = 0; i < 2000; i++)
        ;
    conf = NULL; /* root: A */
    return arg;
}

static void *reloader(void *arg) {
    for (volatile int i = 0; i < 2000; i++)
        ;
    backup = NULL; /* root: B */
    return arg;
}

int main(int argc, char **argv) {
    FILE *in = argc > 1 ? fopen(argv[1], "r") : stdin;
    if (in == NULL || fscanf(in, "%15s %15s", job, field) < 1)
        return 2;
    pthread_t w, c, r;
    void *sum;
    pthread_create(&w, NULL, worker, NULL);
    pthread_create(&c, NULL, closer, NULL);
    pthread_create(&r, NULL, reloader, NULL);
    pthread_join(w, &sum);
    pthread_join(c, NULL);
    pthread_join(r, NULL);
    printf("%ld\n", (long)sum > 0);
    return 0;
}
