/* A use after free through a varargs function: a block freed too early on one path is handed
 * out again for a handler; a varargs function then adds its arguments to the freed block's
 * count, which is now the handler's function pointer, and the call through it crashes. The
 * write through the dangling pointer (values fetched with va_arg, through the register-save
 * area) is the first point of memory corruption. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
struct counter { long count; long step; };
struct handler { void (*run)(const char *); const char *arg; };
static void say(const char *s) { puts(s); }
/* Where the program keeps its handler (the compiler cannot see what it calls). */
struct handler *volatile current;
__attribute__((noinline)) static void add_all(struct counter *c, int n, ...) {
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        c->count += va_arg(ap, long); /* root */
    va_end(ap);
}
int main(int argc, char **argv) {
    struct counter *c = malloc(sizeof *c);
    c->count = 0;
    c->step = 1;
    if (argc > 1)
        free(c); /* freed too early on this path */
    struct handler *h = malloc(sizeof *h);
    h->run = say;
    h->arg = "done";
    current = h;
    add_all(c, 2, 40L, 1L);
    current->run(current->arg); /* crash */
    if (argc <= 1)
        free(c);
    free(h);
    return 0;
}
