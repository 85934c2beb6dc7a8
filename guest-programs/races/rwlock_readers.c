/* Race-free: a table guarded by a pthread_rwlock. Three readers take the read lock together
 * and check the table's invariant (its two halves always sum to 100), yielding while they hold
 * it so that readers overlap; a writer takes the write lock to move amounts between the
 * halves. Every access is ordered by the lock (glibc's rwlock is lock-prefixed
 * read-modify-writes and futexes): rtgrind must report no race, and the output is fixed. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static int table[2] = {60, 40};
static long writes;
static void *reader(void *arg) {
    long torn = 0;
    for (int i = 0; i < 50; i++) {
        pthread_rwlock_rdlock(&rw);
        int a = table[0]; /* read under the read lock */
        sched_yield();
        if (a + table[1] != 100)
            torn++;
        pthread_rwlock_unlock(&rw);
    }
    return (void *)torn;
}
static void *writer(void *arg) {
    for (int i = 0; i < 20; i++) {
        pthread_rwlock_wrlock(&rw);
        table[0] -= 1; /* write under the write lock */
        sched_yield();
        table[1] += 1;
        writes++;
        pthread_rwlock_unlock(&rw);
    }
    return arg;
}
int main(void) {
    pthread_t r[3], w;
    long torn = 0;
    for (int i = 0; i < 3; i++)
        pthread_create(&r[i], NULL, reader, NULL);
    pthread_create(&w, NULL, writer, NULL);
    for (int i = 0; i < 3; i++) {
        void *t;
        pthread_join(r[i], &t);
        torn += (long)t;
    }
    pthread_join(w, NULL);
    printf("torn %ld, table %d %d, %ld writes\n", torn, table[0], table[1], writes);
    return 0;
}
