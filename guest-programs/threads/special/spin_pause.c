/* The main thread busy-waits on a flag a second thread sets, with `pause` in its loop (the
 * spin-wait hint of glibc's spinlocks and libgomp's barriers). Under rtgrind's scheduler one
 * thread runs at a time: a `pause` lets the others run, so the setter gets its turn at the
 * first one. Prints how many times the loop paused. */
#include <pthread.h>
#include <stdio.h>
static volatile int flag;
static void *setter(void *arg) {
    flag = 1;
    return arg;
}
int main(void) {
    pthread_t t;
    long spins = 0;
    pthread_create(&t, NULL, setter, NULL);
    while (!flag) {
        __builtin_ia32_pause();
        spins++;
    }
    pthread_join(t, NULL);
    printf("%ld pauses\n", spins);
    return 0;
}
