/* Race-free: a single-producer single-consumer ring buffer of 4 slots. The producer writes a
 * slot and then publishes it with a release store of `tail`; the consumer sees it with an
 * acquire load of `tail`, reads the slot, and frees it with a release store of `head`, which
 * the producer acquires before reusing the slot. Each slot's write and read are ordered by
 * those pairs, so there is no data race, and the consumer receives 1..100 in order. On
 * x86-64 the atomics are plain `mov`s that no read-modify-write touches: rtgrind knows them
 * atomic from their `_Atomic` type in the DWARF (without, it reported the marked lines). Each
 * side yields while it waits. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#define SLOTS 4
#define COUNT 100
static int ring[SLOTS];
static _Atomic unsigned head, tail; /* next slot to read, next slot to write */
static void *producer(void *arg) {
    for (int v = 1; v <= COUNT; v++) {
        unsigned t = atomic_load_explicit(&tail, memory_order_relaxed);
        while (t - atomic_load_explicit(&head, memory_order_acquire) == SLOTS) /* head acquire */
            sched_yield();
        ring[t % SLOTS] = v; /* slot write */
        atomic_store_explicit(&tail, t + 1, memory_order_release); /* tail release */
    }
    return arg;
}
static void *consumer(void *arg) {
    long sum = 0, in_order = 1;
    for (int expect = 1; expect <= COUNT; expect++) {
        unsigned h = atomic_load_explicit(&head, memory_order_relaxed);
        while (atomic_load_explicit(&tail, memory_order_acquire) == h) /* tail acquire */
            sched_yield();
        int v = ring[h % SLOTS]; /* slot read */
        atomic_store_explicit(&head, h + 1, memory_order_release); /* head release */
        in_order &= v == expect;
        sum += v;
    }
    printf("sum %ld, in order: %s\n", sum, in_order ? "yes" : "no");
    return arg;
}
int main(void) {
    pthread_t p, c;
    pthread_create(&c, NULL, consumer, NULL);
    pthread_create(&p, NULL, producer, NULL);
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    return 0;
}
