/* An atomicity violation that needs an interleaving (issue 23's --explore): a reader checks a
 * shared pointer and then uses it; another thread clears it. The program crashes only when
 * the clearing falls between a check and its use, which the default round-robin schedule
 * never does (the reader runs its loop within one quantum) and a few PCT or random
 * schedules do. */
#include <pthread.h>
#include <stdio.h>
struct conf {
    int verbose;
};
static struct conf the_conf = {1};
static struct conf *volatile conf = &the_conf;
static int seen[64];
/* Out of line, as a log call between a check and its use would be. */
__attribute__((noinline)) static void note(int i) {
    seen[i % 64]++;
}
static void *reader(void *arg) {
    long sum = 0;
    for (int i = 0; i < 3000; i++) {
        if (conf != NULL) { /* race check */
            note(i);
            sum += conf->verbose; /* race use */
        }
    }
    return (void *)sum;
}
static void *closer(void *arg) {
    for (volatile int i = 0; i < 2000; i++)
        ;
    conf = NULL; /* race clear */
    return arg;
}
int main(void) {
    pthread_t a, b;
    void *sum;
    pthread_create(&a, NULL, reader, NULL);
    pthread_create(&b, NULL, closer, NULL);
    pthread_join(a, &sum);
    pthread_join(b, NULL);
    printf("%ld\n", (long)sum > 0);
    return 0;
}
