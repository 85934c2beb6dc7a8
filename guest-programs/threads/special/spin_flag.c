/* The main thread busy-waits on a flag a second thread sets (no yield, no futex: a plain
 * loop on a volatile). Under PCT, a strict-priority schedule, the main thread may rank above
 * the setter: unless the scheduler lets a thread that keeps the others from running drop
 * below them, the run never ends. Prints "done". */
#include <pthread.h>
#include <stdio.h>
static volatile int flag;
static void *setter(void *arg) {
    flag = 1;
    return arg;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, setter, NULL);
    while (!flag)
        ;
    pthread_join(t, NULL);
    puts("done");
    return 0;
}
