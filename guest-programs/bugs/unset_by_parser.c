/* An option parser (giflib's getarg, Debian #715963) takes "-s N" and a file name, writing
 * both through pointers it got as varargs; "-s" given without its number makes it read
 * argv[argc] (NULL), and sscanf crashes on it. Suppressing the step past the end skips the
 * rest of the parse, so the name it would have set stays as main initialised it (NULL), and
 * the run fails there otherwise: the step is the root cause, so qualified; the NULL is no
 * corruption. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
static int get_args(int argc, char **argv, ...) {
    va_list ap;
    va_start(ap, argv);
    int *size = va_arg(ap, int *);
    char **name = va_arg(ap, char **);
    va_end(ap);
    for (char **arg = argv + 1; arg < argv + argc;) {
        if (strcmp(*arg, "-s") == 0) {
            if (sscanf(*++arg, "%d", size) != 1) /* root */
                return -1;
            arg++;
        } else {
            *name = *arg++;
        }
    }
    return 0;
}
int main(int argc, char **argv) {
    int size = 0;
    char *name = NULL; /* unset */
    get_args(argc, argv, &size, &name);
    printf("%d %zu\n", size, strlen(name));
    return 0;
}
