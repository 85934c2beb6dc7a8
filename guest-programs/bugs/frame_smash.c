/* A reduction of unrtf's CVE-2016-10091 (cmd_emboss: `char str[10]; sprintf(str, "%d",
 * param)`): a number formatted into a buffer too small for it overruns the saved frame
 * pointer by its last bytes; the caller's locals are then read through the wrong frame. */
#include <stdio.h>
#include <stdlib.h>

struct options { int debug; const char *name; };

static void emboss(int param) {
    char str[10];
    sprintf(str, "%d", param); /* root */
    if (str[0] == '!')
        puts(str);
}

static void print_word(const struct options *opts, int param) {
    const struct options *o = opts;
    emboss(param);
    if (o->debug)
        printf("%s\n", o->name);
}

int main(int argc, char **argv) {
    struct options opts = { argc > 2, "word" };
    print_word(&opts, argc > 1 ? atoi(argv[1]) : 1);
    puts("done");
    return 0;
}
