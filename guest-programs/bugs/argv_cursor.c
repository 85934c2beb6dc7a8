/* An option parser takes an option's numbers from argv without checking for its end (giflib's
 * getarg, Debian #715963, as gcc -O2 builds it): "-s 10", where -s wants two, reads argv[argc],
 * NULL, and sscanf crashes on it. At -O2 the parser is inlined and the argv cursor lives in a
 * register, stepped by a `lea` per argument taken: the step past the end, not the loader's
 * argv, is the root cause. */
#include <stdio.h>
static int take_numbers(char ***argv, int count, int *out) {
    for (int i = 0; i < count; i++)
        if (sscanf(*((*argv)++), "%d", &out[i]) != 1) /* root */
            return -1;
    return 0;
}
int main(int argc, char **argv) {
    int size[2] = {0, 0};
    char **arg = argv + 1;
    while (*arg) {
        if (arg[0][0] == '-' && arg[0][1] == 's') {
            arg++;
            if (take_numbers(&arg, 2, size) < 0)
                return 1;
        } else {
            arg++;
        }
    }
    printf("%d %d\n", size[0], size[1]);
    return 0;
}
