/* find() returns NULL for an unknown device; the polling loop dereferences it. Suppressing
 * the NULL's definition skips the `ready` test, and what the skipped region would have
 * written becomes corrupt: the local `seen`, a stack slot addressed from rbp. So the loop's
 * test is corrupt too, its region (the loop) is skipped, and the suppression run ends without
 * the crash. (The stack slot was once marked at a wrong address when the tool's code had
 * borrowed rbp at the branch, and the run went on forever.) */
#include <stdio.h>
#include <string.h>
struct device { const char *name; int ready; };
static struct device devices[] = { { "disk", 1 }, { "net", 1 } };
static struct device *find(const char *name) {
    for (unsigned i = 0; i < sizeof devices / sizeof devices[0]; i++)
        if (strcmp(devices[i].name, name) == 0) return &devices[i];
    return NULL;
}
int main(int argc, char **argv) {
    struct device *d = find(argc > 1 ? argv[1] : "disk"); /* root */
    int polls = 0, seen = 0;
    while (seen < 3) {
        polls++;
        if (d->ready) /* crash */
            seen++;
    }
    printf("%d polls\n", polls);
    return 0;
}
