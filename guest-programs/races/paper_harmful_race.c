/* The "harmful data race" example of the dissertation's chapter 6 (Fig. 6.3, 6.4), in C: two
 * threads run the same code on shared ints *x and *y. Lines "1" and "2" top *x up to its
 * capacity (3) outside any critical section; "3" and "4" set *y from *x and index an array
 * with it inside one; "5" indexes another array with *x. The arrays end at a guard page, so an
 * index past the end (a buffer overflow) faults. Under the round-robin schedule both threads
 * read *x at "1" before either updates it at "2" (foo, long enough to be preempted, yields),
 * so the second update adds a stale amount: *x becomes 5, and the second thread crashes at
 * "4" on *y, defined at "3" (no race: under the lock); suppressing that, it crashes at "5" on
 * *x, defined at "2": one access of a harmful write-write race with the other thread's "2",
 * the paper's answer. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#define CAPACITY 3
struct item {
    int data;
};
static int *x, *y;
static struct item **structArray, **structArray2;
static pthread_mutex_t cs = PTHREAD_MUTEX_INITIALIZER;
__attribute__((noinline)) static int foo(int v) { /* what *x lacks to reach its capacity */
    sched_yield();
    return CAPACITY - v;
}
__attribute__((noinline)) static int foo2(int v) {
    return v;
}
static void *work(void *arg) {
    int a = foo(*x); /* line 1 */
    *x = *x + a; /* line 2 */
    pthread_mutex_lock(&cs);
    *y = foo2(*x); /* line 3 */
    int b = structArray[*y]->data; /* line 4 */
    pthread_mutex_unlock(&cs);
    int c = structArray2[*x]->data; /* line 5 */
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
    static int xv = 1, yv;
    x = &xv, y = &yv;
    structArray = guarded_array(CAPACITY + 1);
    structArray2 = guarded_array(CAPACITY + 1);
    pthread_t t[2];
    long sum = 0;
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(t[i], &r);
        sum += (long)r;
    }
    printf("x=%d sum=%ld\n", *x, sum);
    return 0;
}
