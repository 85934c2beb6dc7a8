/* Race-free: a message passed with C11 release/acquire. The producer fills a plain struct and
 * then sets an `_Atomic int` flag with a release store; the consumer spins on an acquire load of
 * the flag (yielding) and then reads the struct. The release/acquire pair orders the plain
 * stores before the plain loads, so there is no data race. On x86-64 both atomics are plain
 * `mov`s and no read-modify-write touches the flag: rtgrind knows the flag atomic from its
 * `_Atomic` type in the DWARF (without, it reported the flag's store and load and the
 * message's fields: the lines marked below). The output is fixed. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
struct message {
    int id;
    char text[16];
};
static struct message msg;
static _Atomic int ready;
static void *producer(void *arg) {
    msg.id = 7; /* plain store */
    snprintf(msg.text, sizeof msg.text, "hello");
    atomic_store_explicit(&ready, 1, memory_order_release); /* release store */
    return arg;
}
static void *consumer(void *arg) {
    while (!atomic_load_explicit(&ready, memory_order_acquire)) /* acquire load */
        sched_yield();
    printf("%d %s\n", msg.id, msg.text); /* plain load */
    return arg;
}
int main(void) {
    pthread_t p, c;
    pthread_create(&c, NULL, consumer, NULL);
    pthread_create(&p, NULL, producer, NULL);
    pthread_join(c, NULL);
    pthread_join(p, NULL);
    return 0;
}
