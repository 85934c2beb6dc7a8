/* A name copied without a bound check overwrites the status field after it: the program
 * then reports an error on stderr and exits with status 1, without crashing. */
#include <stdio.h>
#include <string.h>
/* The argument is first copied to an aligned buffer, so that strcpy takes the same path
 * whatever the argument's address (which moves with the environment's size). */
static char input[256] __attribute__((aligned(64)));
struct config { char name[8]; int verbose; int status; };
int main(int argc, char **argv) {
    struct config c = { "", 0, 0 };
    strncpy(input, argc > 1 ? argv[1] : "default", sizeof input - 1);
    strcpy(c.name, input); /* root */
    if (c.status != 0) {
        fprintf(stderr, "error: bad status %d\n", c.status);
        return 1;
    }
    printf("hello %s\n", c.name);
    return 0;
}
