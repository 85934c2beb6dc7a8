/* Two threads call a library's unsynchronized increment (libcounter.c). */
#include <pthread.h>
#include <stdio.h>
void bump(void);
long bumped(void);
static void *work(void *arg) {
    for (int i = 0; i < 1000; i++)
        bump();
    return arg;
}
int main(void) {
    pthread_t a, b;
    pthread_create(&a, NULL, work, NULL);
    pthread_create(&b, NULL, work, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%ld\n", bumped());
    return 0;
}
