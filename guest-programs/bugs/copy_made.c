/* A library copy of bytes the program made overflows one global into the next, a pointer:
 * `memcpy(label, made, 24)` into a 16-byte `label` writes `made[16..24]` over `name`, which
 * `printf("%s")` then follows. The copy keeps the bytes' origin (the loop that filled
 * `made`, in bounds), so the copy, not the loop, must be found: its destination lies in
 * another object than the pointer it overwrote. */
#include <stdio.h>
#include <string.h>
char label[16] = "x";
char *name = "hello";
int main(int argc, char **argv) {
    char made[32];
    for (int i = 0; i < 32; i++)
        made[i] = 'a' + i % 26;
    memcpy(label, made, argc > 1 ? 24 : 16); /* root */
    printf("%s %s\n", label, name);
    return 0;
}
