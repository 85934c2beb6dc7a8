/* A name copied into a global buffer with strcpy: natively the overflow runs into an array
 * nobody uses, and nothing shows it. A layout that puts the greeting pointer after the buffer
 * turns the same overflow into a corrupt pointer, which printf dereferences. */
#include <stdio.h>
#include <string.h>

static char line[16];
static char spare[32];
static const char *greeting = "hello";

int main(int argc, char **argv) {
    strcpy(line, argc > 1 ? argv[1] : "world"); /* root */
    printf("%s, %s\n", greeting, line);
    return spare[0];
}
