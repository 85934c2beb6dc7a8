/* sscanf("%s") into a 16-byte stack buffer, after a harmless sscanf in main. 40 characters
 * at -O2 (parse inlined into main) reach only the low byte of main's return address with the
 * terminating NUL: the return lands inside libc's code and the crash comes later. */
#include <stdio.h>
static int parse(const char *line) {
    char word[16];
    int n = 0;
    sscanf(line, "%s %d", word, &n); /* root */
    return n + word[0];
}
int main(int argc, char **argv) {
    int a = 0, b = 0;
    sscanf("12 34", "%d %d", &a, &b);
    printf("%d\n", parse(argc > 1 ? argv[1] : "x 1") + a + b);
    return 0;
}
