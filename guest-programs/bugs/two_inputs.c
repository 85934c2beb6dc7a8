/* One bug, two crashes: set_key's bound lets the key overflow into the fields after it. A
 * key of 9-16 characters corrupts `val` (the crash is in puts); a longer one also corrupts
 * `cmp` (the crash is the call through it). */
#include <stdio.h>
#include <string.h>
struct rec { char key[8]; const char *val; int (*cmp)(const char *, const char *); };
static void set_key(struct rec *r, const char *s) {
    for (size_t i = 0; s[i] != '\0' && i < 32; i++)
        r->key[i] = s[i]; /* root */
}
int main(int argc, char **argv) {
    struct rec r = { "", "value", strcmp };
    set_key(&r, argc > 1 ? argv[1] : "key");
    if (r.cmp(r.key, "stop") == 0) /* crash-call */
        return 1;
    puts(r.val); /* crash-puts */
    return 0;
}
