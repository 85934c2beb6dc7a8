/* A name is kept in a stack buffer when it is short and in a heap block when it is long; the
 * cleanup frees it either way. glibc aborts ("free(): invalid pointer") on the stack buffer:
 * the pointer's definition is the root cause. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    const char *arg = argc > 1 ? argv[1] : "a rather long default name";
    char small[32];
    char *name;
    if (strlen(arg) < sizeof small)
        name = small; /* root */
    else
        name = malloc(strlen(arg) + 1);
    strcpy(name, arg);
    printf("hello %s\n", name);
    free(name); /* crash */
    return 0;
}
