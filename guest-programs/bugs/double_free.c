/* Two pointers to one block: both owners free it. (At -O2 the alias is no instruction: one
 * register holds both pointers, and the first free is the line to name.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
struct doc { char *title; char *body; };
int main(int argc, char **argv) {
    struct doc d;
    d.title = strdup(argc > 1 ? argv[1] : "title");
    d.body = d.title; /* root */
    if (argc <= 1) d.body = strdup("body");
    printf("%s: %s\n", d.title, d.body);
    free(d.title); /* first free */
    free(d.body); /* crash */
    return 0;
}
