/* find() returns NULL for an unknown device; the polling loop dereferences it. Suppressing
 * the NULL's definition skips the `ready` test, so the loop never counts three readings and
 * the suppression run does not end: it is stopped by its budget and counts as a run without
 * the crash. (`seen` is a global: a skipped region's stores to the stack become corrupt, so a
 * local `seen` would make the loop's test corrupt and end the loop: the test
 * a_skipped_region_makes_the_stack_slots_it_writes_corrupt builds it so.) At -O2 find() is
 * inlined and its NULL is made in main's registers: named where it is made. */
#include <stdio.h>
#include <string.h>
struct device { const char *name; int ready; };
static struct device devices[] = { { "disk", 1 }, { "net", 1 } };
static struct device *find(const char *name) {
    for (unsigned i = 0; i < sizeof devices / sizeof devices[0]; i++)
        if (strcmp(devices[i].name, name) == 0) return &devices[i];
    return NULL; /* NULL made */
}
static int seen;
int main(int argc, char **argv) {
    struct device *d = find(argc > 1 ? argv[1] : "disk"); /* root */
    int polls = 0;
    while (seen < 3) {
        polls++;
        if (d->ready) /* crash */
            seen++;
    }
    printf("%d polls\n", polls);
    return 0;
}
