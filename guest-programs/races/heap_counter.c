/* A race in a heap block: two threads add to a counter in a block calloc made (in make(), called
 * from main), which main frees before the end. The race report names the block, the offset in
 * it, and where it was allocated. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
struct counter {
    long pad[600];
    long hits;
};
__attribute__((noinline)) static struct counter *make(void) {
    return calloc(1, sizeof(struct counter)); /* alloc */
}
static void *work(void *arg) {
    struct counter *c = arg;
    for (int i = 0; i < 100; i++)
        c->hits++; /* race */
    return NULL;
}
int main(void) {
    void *before = malloc(100);
    struct counter *c = make(); /* call make */
    free(before);
    pthread_t a, b;
    pthread_create(&a, NULL, work, c);
    pthread_create(&b, NULL, work, c);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%ld\n", c->hits);
    free(c);
    return 0;
}
