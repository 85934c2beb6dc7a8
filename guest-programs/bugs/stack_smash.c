/* strcpy of an argument into a fixed-size stack buffer: the overflow overwrites the saved
 * return address, and the crash comes when greet returns. */
#include <stdio.h>
#include <string.h>
/* The argument is first copied to an aligned buffer, so that strcpy takes the same path
 * whatever the argument's address (which moves with the environment's size). */
static char input[256] __attribute__((aligned(64)));
static void greet(const char *name) {
    char buf[16];
    strcpy(buf, name); /* root */
    printf("hello %s\n", buf);
}
int main(int argc, char **argv) {
    strncpy(input, argc > 1 ? argv[1] : "world", sizeof input - 1);
    greet(input);
    return 0;
}
