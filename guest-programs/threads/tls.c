// tls: __thread variables (zero-initialised, initialised, an array, a 64-byte aligned one, and a
// static one inside a function) are per thread: each thread sees fresh initial values, changes
// them, and reports what it saw; main's copies are unchanged. Also pthread_key_create values and
// destructors, and pthread_getspecific in threads that never set the key.
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-pthread
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { N = 6 };

__thread long tls_zero;
__thread long tls_init = 42;
__thread char tls_name[32] = "initial";
__thread long tls_aligned __attribute__((aligned(64))) = 7;

static long bump(void)
{
    static __thread long calls = 100;
    return ++calls;
}

static pthread_barrier_t bar;
static pthread_key_t key;
static int destructor_calls;
static long destructor_sum;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void destructor(void *v)
{
    pthread_mutex_lock(&m);
    destructor_calls++;
    destructor_sum += (long)(intptr_t)v;
    pthread_mutex_unlock(&m);
}

struct report {
    long zero, init, aligned_ok, bump3;
    char name[32];
    void *addr;
    int key_was_null;
};

static void *worker(void *arg)
{
    long id = (long)arg;
    static struct report reports[N];
    struct report *r = &reports[id];
    r->zero = tls_zero;
    r->init = tls_init;
    strcpy(r->name, tls_name);
    r->aligned_ok = ((uintptr_t)&tls_aligned % 64 == 0) && tls_aligned == 7;
    r->key_was_null = pthread_getspecific(key) == NULL;
    tls_zero = id * 1000;
    tls_init += id;
    snprintf(tls_name, sizeof tls_name, "thread-%ld", id);
    tls_aligned = id;
    bump();
    bump();
    r->bump3 = bump();
    r->addr = &tls_init;
    if (id % 2 == 0)
        pthread_setspecific(key, (void *)(intptr_t)(id + 1));
    /* All threads are alive here at once (so their TLS blocks are distinct); let the others
       run and change their copies: ours must survive. */
    pthread_barrier_wait(&bar);
    for (int i = 0; i < 100; i++)
        sched_yield();
    if (tls_zero != id * 1000 || tls_init != 42 + id || tls_aligned != id ||
        strncmp(tls_name, "thread-", 7) != 0)
        r->bump3 = -1;
    return r;
}

int main(void)
{
    pthread_barrier_init(&bar, NULL, N);
    pthread_key_create(&key, destructor);
    pthread_setspecific(key, (void *)1000);
    tls_init = -1;
    strcpy(tls_name, "main");
    pthread_t t[N];
    for (long i = 0; i < N; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    struct report *rs[N];
    for (int i = 0; i < N; i++) {
        void *r;
        pthread_join(t[i], &r);
        rs[i] = r;
    }
    int distinct = 1;
    for (int i = 0; i < N; i++) {
        struct report *r = rs[i];
        printf("thread %d saw zero=%ld init=%ld name=%s aligned=%s bump=%ld key-null=%s\n", i,
               r->zero, r->init, r->name, r->aligned_ok ? "ok" : "BAD", r->bump3,
               r->key_was_null ? "yes" : "no");
        for (int j = 0; j < i; j++)
            if (rs[j]->addr == r->addr)
                distinct = 0;
        if (r->addr == (void *)&tls_init)
            distinct = 0;
    }
    printf("per-thread addresses distinct: %s\n", distinct ? "yes" : "no");
    printf("main: init=%ld name=%s zero=%ld bump=%ld key=%ld\n", tls_init, tls_name, tls_zero,
           bump(), (long)(intptr_t)pthread_getspecific(key));
    printf("destructors: %d calls, sum %ld\n", destructor_calls, destructor_sum);
    return 0;
}
