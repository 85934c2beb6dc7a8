/* Two threads take 2,000 turns each with a spinlock, each turn adding to a shared total under
 * the lock: no race (the C library's lock is a `lock xchg`, its unlock a plain store, which
 * releases: made in a light call-out since issue 30, as is the plain load of the thread's exit
 * word by which `pthread_join` finds the worker gone, an acquire). After its last turn the
 * worker writes one more word without the lock, which main reads once it has seen the worker
 * finish (under the lock, before it wrote that word): the one race, at its two lines. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#define TURNS 2000

static pthread_spinlock_t lock;
static int turn, finished;
static long total, late;

static void take_turns(int me) {
    for (int r = 0; r < TURNS;) {
        pthread_spin_lock(&lock);
        if (turn == me) {
            total += r++;
            turn = !me;
        }
        pthread_spin_unlock(&lock);
        sched_yield();
    }
}

static void *worker(void *arg) {
    (void)arg;
    take_turns(1);
    pthread_spin_lock(&lock);
    finished = 1;
    pthread_spin_unlock(&lock);
    late = 7; /* racing write */
    return NULL;
}

int main(void) {
    pthread_t t;
    pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE);
    pthread_create(&t, NULL, worker, NULL);
    take_turns(0);
    for (;;) {
        pthread_spin_lock(&lock);
        int f = finished;
        pthread_spin_unlock(&lock);
        if (f)
            break;
        sched_yield();
    }
    long l = late; /* racing read */
    pthread_join(t, NULL);
    printf("%ld %s\n", total, l == 0 || l == 7 ? "ok" : "?");
    return 0;
}
