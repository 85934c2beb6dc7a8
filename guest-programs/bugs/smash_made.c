/* A stack buffer overflowed by a library copy of a string the program built itself (not one
 * from the input): strcpy, sprintf or memcpy keeps the bytes' origin, the program's fill
 * loop, which never wrote the stack. The copy that put them over the return address is the
 * root cause. Arguments: the string's length, and which copy (strcpy, sprintf, memcpy). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static char made[1024];
static void greet(int n, const char *how) {
    char buf[16];
    if (strcmp(how, "sprintf") == 0)
        sprintf(buf, "<%s>", made); /* root-sprintf */
    else if (strcmp(how, "memcpy") == 0)
        memcpy(buf, made, n + 1); /* root-memcpy */
    else
        strcpy(buf, made); /* root */
    printf("%s\n", buf);
}
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 8;
    for (int i = 0; i < n && i < 1000; i++)
        made[i] = 'a' + i % 26;
    greet(n, argc > 2 ? argv[2] : "strcpy");
    return 0;
}
