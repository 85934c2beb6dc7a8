/* wrap: fills words into lines of at most WIDTH characters.
 *
 * usage: wrap [WIDTH] < text          (WIDTH 4..60, default 20)
 * Words are separated by whitespace.  A word longer than WIDTH is split into
 * pieces of WIDTH-1 characters, each followed by a hyphen on a line of its
 * own, and the rest of it continues like a normal word.  At the end a summary
 * line gives the number of words, of long words (longer than half the width)
 * and of output lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int width = 20;
static int col = 0;      /* characters on the current output line */
static int nlines = 0;

static void end_line(void)
{
    if (col > 0) {
        printf("\n");
        nlines++;
        col = 0;
    }
}

/* Appends a word that fits in a line, starting a new line if it must. */
static void emit_word(const char *w, int len)
{
    if (col > 0 && col + 1 + len > width)
        end_line();
    if (col > 0) {
        printf(" ");
        col++;
    }
    printf("%.*s", len, w);
    col += len;
}

/* Splits a word longer than the width into hyphenated pieces. */
static void split_word(const char *w, int len)
{
    int piece = width - 1;
    end_line();
    while (len > piece) {
        printf("%.*s-\n", piece, w);
        nlines++;
        w += piece;
        len -= piece;
    }
    emit_word(w, len);
}

int main(int argc, char **argv)
{
    char word[128];
    int nwords = 0, nlong = 0;

    if (argc > 1) {
        width = atoi(argv[1]);
        if (width < 4 || width > 60) {
            printf("bad width\n");
            return 0;
        }
    }
    while (scanf("%127s", word) == 1) {
        int len = (int)strlen(word);
        nwords++;
        if (len > width) /* P1 */
            split_word(word, len); /* P1 taken */
        else
            emit_word(word, len);
        if (len > width / 2) /* P2 */
            nlong++; /* P2 taken */
    }
    end_line();
    printf("words %d long %d lines %d\n", nwords, nlong, nlines);
    return 0;
}
