/* A heap overflow that natively lands in a block of counters the program sets again before
 * it reads them, so nothing shows it. The table of entries (pointers) was allocated before the
 * title and lies below it. A layout that puts the table right after the title turns the
 * overflow into a corrupt entry pointer, and printing that entry crashes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    const char *name;
    int size;
};

int main(int argc, char **argv) {
    struct entry **table = malloc(2 * sizeof *table); /* follower */
    for (int i = 0; i < 2; i++) {
        table[i] = malloc(sizeof **table);
        table[i]->name = i ? "second" : "first";
        table[i]->size = i + 1;
    }
    char *title = malloc(24); /* buffer */
    int *counts = calloc(8, sizeof *counts);
    strcpy(title, argc > 1 ? argv[1] : "report"); /* root */
    for (int i = 0; i < 8; i++)
        counts[i] = i * i;
    title[23] = '\0';
    printf("%s\n", title);
    for (int i = 0; i < 2; i++)
        printf("%s %d %d\n", table[i]->name, table[i]->size, counts[i + 1]); /* crash */
    return 0;
}
