/* An off-by-one in a loop that clears a global array of pointers: it clears one element past
 * the end too, while every global is still zero. Whatever follows the array in any layout
 * already holds zero, so the write changes nothing: no layout can expose it (as the gzip
 * input of the dissertation's Table 5.4). */
#include <stdio.h>

static char *names[4];
static char *cursor;
static long count;

int main(int argc, char **argv) {
    for (int i = 0; i <= 4; i++) /* the test should be < */
        names[i] = NULL; /* root */
    for (int i = 1; i < argc && count < 4; i++)
        names[count++] = argv[i];
    cursor = count > 0 ? names[0] : "none";
    printf("%ld names, first %s\n", count, cursor);
    return 0;
}
