/* A dice game whose rolls come from getrandom(). Commands, one a line: `player NAME`,
 * `roll V`, `title WORD`, `walk TARGET STEP`, `score`.
 *   root A (flaky): `roll V` records V on the face a random byte picks, but takes the byte
 *           modulo SIDES + 1, not SIDES: one byte in seven picks face 6, which is game.player,
 *           and the next `score` crashes in show_player(). Whether it does depends only on the
 *           random bytes (under rtgrind --repeatable=yes, on --seed).
 *   root B: `title WORD` copies WORD into game.title[8] with strcpy, unchecked: a WORD of 8
 *           or more characters runs into game.motto, and `score` crashes in show_motto().
 *   hang:   `walk TARGET STEP` steps towards TARGET without checking STEP: a STEP of 0 (or
 *           less) never gets there, and the program loops forever. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define SIDES 6

static struct {
    long score[SIDES];
    const char *player;
    char title[8];
    const char *motto;
    char spare[32];
} game = { { 0 }, "nobody", "dice", "roll on", "" };

static void show_player(void) {
    printf("player %c%s", game.player[0], game.player + 1); /* crash */
}

static void show_motto(void) {
    printf(", %s: %c%s\n", game.title, game.motto[0], game.motto + 1); /* crash */
}

int main(int argc, char **argv) {
    FILE *in = argc > 1 ? fopen(argv[1], "r") : NULL;
    char line[256], word[200];
    long v, target, step;
    if (!in)
        return 2;
    while (fgets(line, sizeof line, in)) {
        if (sscanf(line, "player %199s", word) == 1) {
            game.player = strdup(word);
        } else if (sscanf(line, "roll %ld", &v) == 1) {
            unsigned char r;
            if (getrandom(&r, 1, 0) != 1)
                return 3;
            game.score[r % (SIDES + 1)] = v; /* root: A */
        } else if (sscanf(line, "title %199s", word) == 1) {
            strcpy(game.title, word); /* root: B */
        } else if (sscanf(line, "walk %ld %ld", &target, &step) == 2) {
            long pos = 0;
            while (pos < target) /* hang: STEP <= 0 never gets there */
                pos += step;
            printf("walked to %ld\n", pos);
        } else if (strncmp(line, "score", 5) == 0) {
            show_player();
            show_motto();
        }
    }
    fclose(in);
    return 0;
}
