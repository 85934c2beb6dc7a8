/* C11 atomics in a heap block and in a frame, used with explicit orders (plain `mov`s on
 * x86-64, which nothing in the code tells from racy accesses, and which no global's `_Atomic`
 * type in the DWARF covers): the producer fills a heap message and publishes it with a release
 * store of the block's flag, the consumer spins on an acquire load of it and reads the message;
 * main's own frame holds a flag a starter thread sets with GCC's builtin and main waits on. No
 * race there. The one race is the stamp main writes while the producer reads it as the value
 * the release store publishes: an argument of the atomic operation, not the atomic itself. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
struct box {
    int id;
    char text[16];
    _Atomic int ready;
};
static int stamp = 1;
static void *producer(void *arg) {
    struct box *b = arg;
    b->id = 7;
    snprintf(b->text, sizeof b->text, "hello");
    atomic_store_explicit(&b->ready, stamp, memory_order_release); /* racing read */
    return NULL;
}
static void *consumer(void *arg) {
    struct box *b = arg;
    while (!atomic_load_explicit(&b->ready, memory_order_acquire))
        sched_yield();
    printf("%d %s\n", b->id, b->text);
    return NULL;
}
static int started_at;
static void *starter(void *arg) {
    int *go = arg;
    started_at = 42;
    __atomic_store_n(go, 1, __ATOMIC_RELEASE);
    return NULL;
}
int main(void) {
    struct box *b = calloc(1, sizeof *b);
    int go = 0;
    pthread_t p, c, s;
    pthread_create(&s, NULL, starter, &go);
    while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
        sched_yield();
    printf("started %d\n", started_at);
    pthread_create(&c, NULL, consumer, b);
    pthread_create(&p, NULL, producer, b);
    stamp = 3; /* racing write */
    pthread_join(c, NULL);
    pthread_join(p, NULL);
    pthread_join(s, NULL);
    free(b);
    return 0;
}
