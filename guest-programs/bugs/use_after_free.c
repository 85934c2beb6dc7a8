/* A write through a pointer to a freed block lands in the block malloc hands out next,
 * where it overwrites a function pointer. The blocks come from an allocation wrapper, as in
 * most real programs, and the handler runs out of line (so that gcc -O2 can neither prove
 * the two blocks apart nor call `say` directly). */
#include <stdio.h>
#include <stdlib.h>
struct counter { long count; long step; };
struct handler { void (*run)(const char *); const char *arg; };
static void say(const char *s) { puts(s); }
__attribute__((noipa)) static void *xmalloc(size_t n) {
    void *p = malloc(n);
    if (!p) abort();
    return p;
}
__attribute__((noipa)) static void run(struct handler *h) {
    h->run(h->arg); /* crash */
}
int main(int argc, char **argv) {
    struct counter *c = xmalloc(sizeof *c);
    c->count = 0;
    c->step = 1;
    if (argc > 1) free(c); /* the bug: freed too early on this path */
    struct handler *h = xmalloc(sizeof *h);
    h->run = say;
    h->arg = "done";
    c->count = 41; /* root */
    run(h);
    if (argc <= 1) free(c);
    free(h);
    return 0;
}
