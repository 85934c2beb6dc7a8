/* strcpy of an argument into a fixed-size stack buffer: the overflow overwrites the saved
 * return address, and the crash comes when greet returns. */
#include <stdio.h>
#include <string.h>
static void greet(const char *name) {
    char buf[16];
    strcpy(buf, name); /* root */
    printf("hello %s\n", buf);
}
int main(int argc, char **argv) {
    greet(argc > 1 ? argv[1] : "world");
    return 0;
}
