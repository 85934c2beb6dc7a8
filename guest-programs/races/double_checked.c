/* Double-checked locking done wrong: the first check of `inited` takes no lock, and the
 * initializer raises the flag before it sets the object's field. A second thread that checks
 * between the two sees inited == 1, skips the lock, and reads the field before it is set: its
 * assertion fails (SIGABRT, in that worker). Under the round-robin schedule the first worker
 * initializes and yields after raising the flag (sched_yield is a switch point, as a
 * preemption would be), so the second worker's check falls in that window. The right answer:
 * the flag is published before the field (the unlocked check's race with `inited = 1`; the
 * field's store after it, whose race with the use is harmful); setting the field first (with
 * a release store of the flag and an acquire load of it) fixes it. */
#include <assert.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
struct obj {
    int field;
};
static struct obj *obj;
static int inited;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct obj *get(void) {
    if (!inited) { /* race check */
        pthread_mutex_lock(&lock);
        if (!inited) {
            obj = calloc(1, sizeof *obj); /* race obj store */
            inited = 1; /* race publish */
            sched_yield();
            obj->field = 42; /* set after the flag */
        }
        pthread_mutex_unlock(&lock);
    }
    return obj; /* race obj load */
}
static void *user(void *arg) {
    int v = get()->field; /* race use */
    assert(v == 42); /* failure */
    return (void *)(long)v;
}
int main(void) {
    pthread_t t[2];
    long sum = 0;
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, user, NULL);
    for (int i = 0; i < 2; i++) {
        void *v;
        pthread_join(t[i], &v);
        sum += (long)v;
    }
    printf("%ld\n", sum);
    free(obj);
    return 0;
}
