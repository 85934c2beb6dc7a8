/* A command interpreter with one global record whose handler pointer two different bugs can
 * overwrite. Commands, one a line: `name WORD`, `set I V`, `use I`, `call`, `show`.
 *   root A: `name WORD` copies WORD into rec.name[16] with strcpy, unchecked: a WORD of 32 or
 *           more characters runs through rec.slots into rec.h.
 *   root B: `set I V` stores V into rec.slots[I] behind an off-by-one check (I == 2 passes),
 *           and rec.slots[2] is rec.h.
 * Either way nothing shows until a later command goes through rec.h, and which command decides
 * the crash site: `call` loads h->fn in call(), `show` loads h->label in show(). Both bugs
 * crash at the same two sites, so only the root cause tells their inputs apart. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct handler {
    const char *label;
    void (*fn)(const char *);
};

static void greet(const char *who) { printf("hello, %s\n", who); }
static void shout(const char *who) { printf("HEY, %s!\n", who); }
static struct handler handlers[2] = { { "greet", greet }, { "shout", shout } };

static struct {
    char name[16];
    long slots[2];
    struct handler *h;
    char spare[32];
} rec = { "nobody", { 0, 0 }, &handlers[0], "" };

static void call(void) {
    void (*fn)(const char *) = rec.h->fn; /* crash */
    fn(rec.name);
}

static void show(void) {
    const char *label = rec.h->label; /* crash */
    printf("handler %s, slots %ld %ld\n", label, rec.slots[0], rec.slots[1]);
}

int main(int argc, char **argv) {
    FILE *in = argc > 1 ? fopen(argv[1], "r") : NULL;
    char line[256], word[200];
    long i, v;
    if (!in)
        return 2;
    while (fgets(line, sizeof line, in)) {
        if (sscanf(line, "name %199s", word) == 1) {
            strcpy(rec.name, word); /* root: A */
        } else if (sscanf(line, "set %ld %ld", &i, &v) == 2) {
            if (i < 0 || i > 2) /* the test should be i >= 2 */
                continue;
            rec.slots[i] = v; /* root: B */
        } else if (sscanf(line, "use %ld", &i) == 1) {
            if (i >= 0 && i < 2)
                rec.h = &handlers[i];
        } else if (strncmp(line, "call", 4) == 0) {
            call();
        } else if (strncmp(line, "show", 4) == 0) {
            show();
        }
    }
    fclose(in);
    return 0;
}
