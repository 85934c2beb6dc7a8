/* Locals of one frame in code built without a frame pointer (-Og): gcc takes the address of
 * `gap` and `first` with `lea reg, [rsp+N]`, and that of `second`, at rsp itself, with a copy
 * of rsp (`mov r12, rsp`). Under any layout of the frame each address must follow its local:
 * the program prints where `second` is from `first` (-48 as built) and the three values,
 * which stay intact only if no two locals were made to overlap. */
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) static void set(long *slot, long value) {
    *slot = value;
}

__attribute__((noinline)) static int three_locals(const char *s) {
    char first[16];
    long gap;
    char second[32];
    set(&gap, 5);
    strcpy(first, s);
    strcpy(second, "second");
    printf("%ld %s %s %ld\n", (long)(second - first), first, second, gap);
    return first[0] + second[1];
}

int main(int argc, char **argv) {
    return three_locals(argc > 1 ? argv[1] : "first") & 1;
}
