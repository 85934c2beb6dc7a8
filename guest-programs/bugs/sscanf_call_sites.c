/* Two call sites of sscanf with the same conversion: a harmless one in main, and one in parse
 * that overflows a global buffer into the pointer after it, once per argument. Suppressing
 * the last overflow leaves the earlier one's; every instance of sscanf's store is then
 * suppressed, and the report must name parse's call, not main's, which reached that store
 * first. */
#include <stdio.h>
static struct {
    char buf[8];
    const char *name;
} g = {"", "nobody"};
static void parse(const char *line) {
    sscanf(line, "%s", g.buf); /* root */
}
int main(int argc, char **argv) {
    char greeting[32];
    sscanf("hello there", "%s", greeting);
    for (int i = 1; i < argc; i++)
        parse(argv[i]);
    printf("%s, %s\n", greeting, g.name); /* crash */
    return 0;
}
