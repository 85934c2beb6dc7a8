/* A pointer computed from a global nobody set on this path: nothing the computation read was
 * ever defined, so the crash is blamed on the computation itself (a constant defined there). */
#include <stdlib.h>
static long base;
int main(int argc, char **argv) {
    if (argc > 1)
        base = (long)malloc(64);
    *(long *)(base + 16) = 42; /* root */
    return 0;
}
