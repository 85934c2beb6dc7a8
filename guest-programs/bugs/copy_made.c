/* A library copy of bytes the program made overflows one object into the next, a pointer:
 * `memcpy(label, made, 24)` into a 16-byte global `label` writes `made[16..24]` over the next
 * global `name`, which `printf("%s")` then follows; with a second argument, the same between
 * two blocks of the heap (over the next block's header and its first field). The copy keeps
 * the bytes' origin (the loop that filled `made`, in bounds), so the copy, not the loop, must
 * be found: its destination lies in another object than the pointer it overwrote. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
char label[16] = "x";
char *name = "hello";
struct rec {
    const char *name;
    long n;
};
/* (The blocks, as the program keeps them: the compiler cannot see through these.) */
struct rec *volatile kept;
char *volatile shown;
int main(int argc, char **argv) {
    char made[64];
    for (int i = 0; i < 64; i++)
        made[i] = 'a' + i % 26;
    if (argc > 2) {
        char *text = malloc(16);
        struct rec *r = malloc(sizeof *r);
        r->name = "hello";
        r->n = 1;
        kept = r;
        shown = text;
        memcpy(text, made, argc > 1 ? 40 : 16); /* heap root */
        printf("%s %ld\n", kept->name, kept->n);
        return 0;
    }
    memcpy(label, made, argc > 1 ? 24 : 16); /* root */
    printf("%s %s\n", label, name);
    return 0;
}
