/* A tokenizer keeps the current token in a 16-byte heap buffer and its statistics in the heap
 * block allocated right after it. Commands, one a line: `tok WORD`, `label`, `hit`, `end`.
 *   root A: `tok WORD` copies WORD into the buffer with memcpy and no length check. A WORD of 24
 *           or more characters runs into the next block: first into its malloc header (size),
 *           from 32 on into st->label, from 40 on into st->hits as well.
 * Where it crashes depends on what the input does next: `label` prints st->label in
 * print_label(), `hit` counts through st->hits in add_hit(), and at the end main frees the
 * blocks, where glibc finds the broken header of the statistics block and aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct stats {
    const char *label;
    long *hits;
    long count;
};

static char *token;
static struct stats *st;

static void print_label(void) {
    printf("label %c%s\n", st->label[0], st->label + 1); /* crash */
}

static void add_hit(size_t len) {
    st->hits[len % 4] += 1; /* crash */
    st->count++;
}

int main(int argc, char **argv) {
    static long hits[4];
    char line[256], word[200];
    token = malloc(16);
    st = malloc(sizeof *st);
    st->label = "tokens";
    st->hits = hits;
    st->count = 0;
    FILE *in = argc > 1 ? fopen(argv[1], "r") : NULL;
    if (!in)
        return 2;
    while (fgets(line, sizeof line, in)) {
        if (sscanf(line, "tok %199s", word) == 1)
            memcpy(token, word, strlen(word) + 1); /* root: A */
        else if (strncmp(line, "label", 5) == 0)
            print_label();
        else if (strncmp(line, "hit", 3) == 0)
            add_hit(strlen(token));
        else if (strncmp(line, "end", 3) == 0)
            break;
    }
    fclose(in);
    printf("%ld tokens counted, %ld %ld %ld %ld\n", st->count, hits[0], hits[1], hits[2], hits[3]);
    free(token);
    free(st); /* crash */
    return 0;
}
