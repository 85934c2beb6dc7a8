/* gzip style: a global buffer indexed without a bound check overflows into the global pointer
 * declared next to it; the pointer is used later. */
#include <stdio.h>
#include <string.h>
struct globals { char name[16]; const char *suffix; } g = { "", ".gz" };
static void set_name(const char *s) {
    size_t i;
    for (i = 0; s[i] != '\0'; i++)
        g.name[i] = s[i]; /* root */
    g.name[i] = '\0';
}
int main(int argc, char **argv) {
    set_name(argc > 1 ? argv[1] : "file");
    printf("%s%s\n", g.name, g.suffix); /* crash */
    return 0;
}
