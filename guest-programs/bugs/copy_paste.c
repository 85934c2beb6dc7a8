/* Fig. 5.1 of the suppression dissertation: a copy-paste error makes q2 alias p2 (the `root`
 * line should read &y[0]). The crash comes at `crash1` (index out of range), then, with that
 * suppressed, at `crash2` (a struct pointer out of the array), then at `crash3` (double free). */
#include <stdio.h>
#include <stdlib.h>
struct s { int f; };
static int readInt(void) { int v = 0; if (scanf("%d", &v) != 1) exit(3); return v; }
int main(void) {
    int *x = malloc(2 * sizeof(int)), *y = malloc(2 * sizeof(int));
    int *intArray = malloc(16 * sizeof(int));
    struct s **structArray = calloc(4096, sizeof(struct s *));
    int *p1 = &x[1];
    int *p2 = &x[0];
    int *q1 = &y[1];
    int *q2 = &x[0]; /* root */
    *p1 = readInt();
    *p2 = readInt();
    *q1 = readInt();
    *q2 = readInt();
    int a = *p1 + *p2;
    int b = *q1 + *q2;
    int c = a + b + 1;
    for (int i = 0; i < 4; i++) structArray[i] = malloc(sizeof(struct s));
    intArray[c] = 0; /* crash1 */
    structArray[*p2]->f = 0; /* crash2 */
    free(p2);
    free(q2); /* crash3 */
    printf("%d\n", c);
    return 0;
}
