/* Race-free: a mutex-protected counter, a spinlock-protected one (pthread_spin_unlock is a
 * plain store), a C11 atomic counter read with atomic_load, a result handed over by
 * pthread_join, a condition variable's flag, a barrier, and a semaphore. */
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
static long locked, spun;
static pthread_spinlock_t spin;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_long counted;
static int ready;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t barrier;
static sem_t sem;
static long before_barrier[2], handed;
static void *work(void *arg) {
    long id = (long)arg;
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&lock);
        locked++;
        pthread_mutex_unlock(&lock);
        pthread_spin_lock(&spin);
        spun++;
        pthread_spin_unlock(&spin);
        atomic_fetch_add(&counted, 1);
    }
    before_barrier[id] = id + 1;
    pthread_barrier_wait(&barrier);
    long other = before_barrier[1 - id];
    if (id == 0) {
        pthread_mutex_lock(&lock);
        while (!ready)
            pthread_cond_wait(&cond, &lock);
        pthread_mutex_unlock(&lock);
        sem_wait(&sem);
        other += handed;
    }
    return (void *)other;
}
int main(void) {
    pthread_t t[2];
    pthread_barrier_init(&barrier, NULL, 2);
    sem_init(&sem, 0, 0);
    pthread_spin_init(&spin, 0);
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, work, (void *)i);
    pthread_mutex_lock(&lock);
    ready = 1;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
    handed = 40;
    sem_post(&sem);
    long sum = 0;
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(t[i], &r);
        sum += (long)r;
    }
    printf("%ld %ld %ld %ld\n", locked, spun, atomic_load(&counted), sum);
    return 0;
}
