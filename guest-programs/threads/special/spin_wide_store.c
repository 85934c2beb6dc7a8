// spin_wide_store (not differential: it only has to finish): two threads each raise a flag
// and spin until they see the other's, storing 16 bytes on every trip. Neither can finish
// unless the scheduler preempts the one that runs first, so a tool whose wide shadow stores
// clobbered the engine's block count (kept in an AVX-512 register) hung here.
// rtgrind-test: variants=pie
// rtgrind-test: cflags=-pthread
#include <pthread.h>
#include <stdio.h>

static volatile int raised[2];
static char sink[2][16];

static void spin(int me)
{
    raised[me] = 1;
    while (!raised[1 - me])
        __asm__ volatile("movdqu %%xmm0, %0" : "=m"(sink[me]) : : "memory");
}

static void *other(void *arg)
{
    (void)arg;
    spin(1);
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, other, NULL);
    spin(0);
    pthread_join(t, NULL);
    puts("both flags seen");
    return 0;
}
