/* A block is filled by memset with a byte from the program, then a pointer is read from it and
 * printed: what memset wrote is defined at its line (its stores keep the program's constant,
 * as a real definition), not at the malloc that made the block. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)atoi(argv[1]) : 16;
    char **slots = malloc(n + sizeof(char *));
    memset(slots, 'x', n); /* root */
    puts(slots[0]); /* crash */
    free(slots);
    return 0;
}
