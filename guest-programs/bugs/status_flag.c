/* A name copied without a bound check overwrites the status field after it: the program
 * then reports an error on stderr and exits with status 1, without crashing. */
#include <stdio.h>
#include <string.h>
struct config { char name[8]; int verbose; int status; };
int main(int argc, char **argv) {
    struct config c = { "", 0, 0 };
    strcpy(c.name, argc > 1 ? argv[1] : "default"); /* root */
    if (c.status != 0) {
        fprintf(stderr, "error: bad status %d\n", c.status);
        return 1;
    }
    printf("hello %s\n", c.name);
    return 0;
}
