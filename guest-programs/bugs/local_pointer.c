/* A stack buffer overflow corrupts a local pointer stored next to it; the pointer is
 * dereferenced later in the same function. */
#include <stdio.h>
#include <string.h>
struct frame { char buf[16]; int *out; };
static int store_sum(const char *digits) {
    int total = 0;
    struct frame f;
    f.out = &total;
    for (int i = 0; digits[i]; i++)
        f.buf[i] = digits[i]; /* root */
    for (int i = 0; i < 16 && f.buf[i]; i++)
        total += f.buf[i] - '0';
    *f.out += 1; /* crash */
    return total;
}
int main(int argc, char **argv) {
    printf("%d\n", store_sum(argc > 1 ? argv[1] : "123"));
    return 0;
}
