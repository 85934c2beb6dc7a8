/* A write through a pointer to a freed block lands in the block malloc hands out next,
 * where it overwrites a function pointer. */
#include <stdio.h>
#include <stdlib.h>
struct counter { long count; long step; };
struct handler { void (*run)(const char *); const char *arg; };
static void say(const char *s) { puts(s); }
int main(int argc, char **argv) {
    struct counter *c = malloc(sizeof *c);
    c->count = 0;
    c->step = 1;
    if (argc > 1) free(c); /* the bug: freed too early on this path */
    struct handler *h = malloc(sizeof *h);
    h->run = say;
    h->arg = "done";
    c->count += 41; /* root */
    h->run(h->arg); /* crash */
    if (argc <= 1) free(c);
    free(h);
    return 0;
}
