// rwlock: 2 writers and 3 readers share an array under a pthread_rwlock. Writers keep the
// invariant "all elements equal"; readers check it under the read lock. Also tryrdlock/
// trywrlock results while a lock is held. Prints the final state and the violation count.
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-pthread
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

enum { LEN = 64, WRITERS = 2, READERS = 3, WRITES = 3000, READS = 5000 };

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static long data[LEN];
static long violations;
static pthread_mutex_t vm = PTHREAD_MUTEX_INITIALIZER;

static void *writer(void *arg)
{
    (void)arg;
    for (int i = 0; i < WRITES; i++) {
        pthread_rwlock_wrlock(&rw);
        long v = data[0] + 1;
        for (int j = 0; j < LEN; j++)
            data[j] = v;
        pthread_rwlock_unlock(&rw);
    }
    return NULL;
}

static void *reader(void *arg)
{
    (void)arg;
    long bad = 0;
    for (int i = 0; i < READS; i++) {
        pthread_rwlock_rdlock(&rw);
        for (int j = 1; j < LEN; j++)
            if (data[j] != data[0])
                bad++;
        pthread_rwlock_unlock(&rw);
    }
    pthread_mutex_lock(&vm);
    violations += bad;
    pthread_mutex_unlock(&vm);
    return NULL;
}

static void *try_while_read_locked(void *arg)
{
    int *out = arg;
    out[0] = pthread_rwlock_tryrdlock(&rw);
    if (out[0] == 0)
        pthread_rwlock_unlock(&rw);
    out[1] = pthread_rwlock_trywrlock(&rw);
    return NULL;
}

static void *try_while_write_locked(void *arg)
{
    int *out = arg;
    out[0] = pthread_rwlock_tryrdlock(&rw);
    out[1] = pthread_rwlock_trywrlock(&rw);
    return NULL;
}

static const char *name(int rc)
{
    return rc == 0 ? "ok" : rc == EBUSY ? "EBUSY" : "other";
}

int main(void)
{
    pthread_t w[WRITERS], r[READERS];
    for (int i = 0; i < READERS; i++)
        pthread_create(&r[i], NULL, reader, NULL);
    for (int i = 0; i < WRITERS; i++)
        pthread_create(&w[i], NULL, writer, NULL);
    for (int i = 0; i < WRITERS; i++)
        pthread_join(w[i], NULL);
    for (int i = 0; i < READERS; i++)
        pthread_join(r[i], NULL);
    printf("data[0]=%ld data[%d]=%ld violations=%ld\n", data[0], LEN - 1, data[LEN - 1],
           violations);

    int res[2];
    pthread_t t;
    pthread_rwlock_rdlock(&rw);
    pthread_create(&t, NULL, try_while_read_locked, res);
    pthread_join(t, NULL);
    pthread_rwlock_unlock(&rw);
    printf("main holds read lock: tryrdlock=%s trywrlock=%s\n", name(res[0]), name(res[1]));
    pthread_rwlock_wrlock(&rw);
    pthread_create(&t, NULL, try_while_write_locked, res);
    pthread_join(t, NULL);
    pthread_rwlock_unlock(&rw);
    printf("main holds write lock: tryrdlock=%s trywrlock=%s\n", name(res[0]), name(res[1]));
    return 0;
}
