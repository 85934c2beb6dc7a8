/* A heap overflow through memcpy into a neighbouring block's pointer, used via printf("%s"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
struct entry { char key[16]; };
struct label { const char *text; };
int main(int argc, char **argv) {
    const char *in = argc > 1 ? argv[1] : "key";
    struct entry *e = malloc(sizeof *e);
    struct label *l = malloc(sizeof *l);
    l->text = "label";
    memcpy(e->key, in, strlen(in) + 1); /* root */
    printf("%s: %s\n", e->key, l->text); /* crash */
    return 0;
}
