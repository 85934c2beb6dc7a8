/* strcpy of an argument straight into a 64-byte stack buffer: a long argument (400 or 1200
 * characters) overwrites the saved frame pointer and the return address, and the caller's
 * frame beyond them. Where the argument lies and how the stack is aligned follow the
 * environment's size natively; under a search they must not. */
#include <stdio.h>
#include <string.h>
static void greet(const char *s) {
    char buf[64];
    strcpy(buf, s); /* root */
    printf("hi %s\n", buf);
}
int main(int argc, char **argv) {
    greet(argc > 1 ? argv[1] : "x");
    return 0;
}
