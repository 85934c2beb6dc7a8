/* lookup() returns NULL on its error path; the pointer is passed through two more functions
 * and dereferenced in the third. */
#include <stdio.h>
#include <string.h>
struct entry { const char *name; int value; };
static struct entry table[] = { { "one", 1 }, { "two", 2 } };
static struct entry *lookup(const char *key) {
    for (unsigned i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, key) == 0) return &table[i];
    return NULL;
}
static int value_of(struct entry *e) { return e->value; } /* crash */
static int doubled(struct entry *e) { return 2 * value_of(e); }
static int report(struct entry *e) { return printf("%d\n", doubled(e)); }
int main(int argc, char **argv) {
    struct entry *e = lookup(argc > 1 ? argv[1] : "one"); /* root */
    report(e);
    return 0;
}
