/* The "non-data-race error" example of the dissertation's chapter 6 (Fig. 6.5, 6.6), in C: the
 * code of paper_harmful_race.c with lines "-1" and "0" before it and "6" after it. "-1" sets
 * the shared z to a wrong constant (4; the right value is 1): the error. "0" sets *x from it,
 * to 8, where foo (what *x lacks to reach its capacity, 3) is 0, so the race of lines "1"-"2"
 * is there but cannot change a value: every order leaves *x at 8. *x and *y, 8, overflow the
 * arrays (which end at a guard page) at "4" and "5": SIGSEGV. The paper's chain: the crashes
 * at "4" and "5" lead to "3" and "2" (its races with the other thread are not harmful),
 * suppressing "2" reaches the assertion at "6" on z, whose definition "-1" races only benignly
 * with the other thread's "-1" (the same constant); suppressing it, nothing fails: the root
 * cause is line "-1". */
#include <assert.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#define CAPACITY 3
#define RIGHT_Z 1
struct item {
    int data;
};
static int *x, *y, z;
static struct item **structArray, **structArray2;
static pthread_mutex_t cs = PTHREAD_MUTEX_INITIALIZER;
__attribute__((noinline)) static int foo(int v) { /* what *x lacks to reach its capacity */
    sched_yield();
    return v >= CAPACITY ? 0 : CAPACITY - v;
}
__attribute__((noinline)) static int foo2(int v) {
    return v;
}
static void *work(void *arg) {
    z = 4; /* line -1 */
    *x = 2 * z; /* line 0 */
    int a = foo(*x); /* line 1 */
    *x = *x + a; /* line 2 */
    pthread_mutex_lock(&cs);
    *y = foo2(*x); /* line 3 */
    int b = structArray[*y]->data; /* line 4 */
    pthread_mutex_unlock(&cs);
    int c = structArray2[*x]->data; /* line 5 */
    assert(z == RIGHT_Z); /* line 6 */
    return (void *)(long)(b + c);
}
static struct item **guarded_array(int n) { /* n pointers, then a page that faults */
    char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(p + 4096, 4096, PROT_NONE);
    struct item **a = (struct item **)(p + 4096) - n;
    for (int i = 0; i < n; i++) {
        a[i] = malloc(sizeof **a);
        a[i]->data = i;
    }
    return a;
}
int main(void) {
    static int xv, yv;
    x = &xv, y = &yv;
    structArray = guarded_array(CAPACITY + 1);
    structArray2 = guarded_array(CAPACITY + 1);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("x=%d\n", *x);
    return 0;
}
