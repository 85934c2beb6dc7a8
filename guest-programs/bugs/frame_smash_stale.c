/* A reduction of unrtf's CVE-2016-10091 as cmd_expand has it (`char str[10]; sprintf(str,
 * "%d", param / 4)`): the number's NUL overruns the saved frame pointer's low byte, and the
 * caller then reads its locals through the wrong frame, from slots an earlier call left its
 * own values in (computed from the same parameter). The frame pointer is what went wrong,
 * not the call that left the values. */
#include <stdio.h>
#include <stdlib.h>

struct options { int debug; const char *name; };

static volatile long sink;

/* Leaves values made from the parameter all over the stack below its caller's frame. */
static void scale(int param) {
    volatile long steps[64];
    for (int i = 0; i < 64; i++)
        steps[i] = (long)param * 7 + i; /* stale */
    sink = steps[param & 63];
}

static void expand(int param) {
    char str[10];
    sprintf(str, "%d", param / 4); /* root */
    if (str[0] == '!')
        puts(str);
}

static void print_word(const struct options *opts, int param) {
    const struct options *o = opts;
    scale(param);
    expand(param);
    if (o->debug)
        printf("%s\n", o->name);
}

int main(int argc, char **argv) {
    struct options opts = { argc > 2, "word" };
    print_word(&opts, argc > 1 ? atoi(argv[1]) : 1);
    puts("done");
    return 0;
}
