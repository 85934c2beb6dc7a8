/* grid: small integer matrix tool.
 *
 * usage: grid COMMAND < matrix
 * stdin: "ROWS COLS" (each 1..5) followed by ROWS*COLS integers.
 * COMMAND is one of:
 *   sums       row sums, then column sums
 *   max        the largest element and its position
 *   transpose  the transposed matrix
 *   trace      the sum of the main diagonal (square matrices only)
 */
#include <stdio.h>
#include <string.h>

#define MAXDIM 5

struct grid {
    int rows, cols;
    int cell[MAXDIM][MAXDIM];
};

static int read_grid(struct grid *g)
{
    if (scanf("%d %d", &g->rows, &g->cols) != 2)
        return 0;
    if (g->rows < 1 || g->rows > MAXDIM || g->cols < 1 || g->cols > MAXDIM)
        return 0;
    for (int r = 0; r < g->rows; r++)
        for (int c = 0; c < g->cols; c++)
            if (scanf("%d", &g->cell[r][c]) != 1)
                return 0;
    return 1;
}

static void print_grid(const struct grid *g)
{
    for (int r = 0; r < g->rows; r++) {
        for (int c = 0; c < g->cols; c++)
            printf(c ? " %d" : "%d", g->cell[r][c]);
        printf("\n");
    }
}

static void sums(const struct grid *g)
{
    for (int r = 0; r < g->rows; r++) {
        int s = 0;
        for (int c = 0; c < g->cols; c++)
            s += g->cell[r][c];
        printf("row %d: %d\n", r, s);
    }
    for (int c = 0; c < g->cols; c++) {
        int s = 0;
        for (int r = 0; r < g->rows; r++)
            s += g->cell[r][c];
        printf("col %d: %d\n", c, s);
    }
}

static void transpose(const struct grid *g, struct grid *t)
{
    memset(t->cell, 0, sizeof t->cell);
    for (int r = 0; r < g->rows; r++)
        for (int c = 0; c < g->cols; c++)
            t->cell[c][r] = g->cell[r][c];
    t->rows = g->cols;
    t->cols = g->rows;
}

int main(int argc, char **argv)
{
    struct grid g, t;
    const char *cmd = argc > 1 ? argv[1] : "";

    if (!read_grid(&g)) {
        printf("bad matrix\n");
        return 0;
    }
    if (strcmp(cmd, "sums") == 0) {
        sums(&g);
    } else if (strcmp(cmd, "max") == 0) {
        int br = 0, bc = 0;
        for (int r = 0; r < g.rows; r++)
            for (int c = 0; c < g.cols; c++)
                if (g.cell[r][c] > g.cell[br][bc]) {
                    br = r;
                    bc = c;
                }
        printf("max %d at %d,%d\n", g.cell[br][bc], br, bc);
    } else if (strcmp(cmd, "transpose") == 0) {
        transpose(&g, &t);
        printf("%d %d\n", t.rows, t.cols);
        print_grid(&t);
    } else if (strcmp(cmd, "trace") == 0) {
        int s = 0;
        if (g.rows != g.cols) {
            printf("not square\n");
            return 0;
        }
        for (int i = 0; i < g.rows; i++)
            s += g.cell[i][i];
        printf("trace %d\n", s);
    } else {
        printf("unknown command\n");
    }
    return 0;
}
