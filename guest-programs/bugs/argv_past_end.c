/* Reads two numbers from its arguments without checking how many there are (a reduction of
 * giflib's and html2text's bugs: an option missing its argument): with one argument, the
 * second read takes argv[argc], NULL, and atoi crashes on it. */
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) static int next_number(char ***args) {
    return atoi(*((*args)++)); /* root */
}
int main(int argc, char **argv) {
    char **args = argv + 1;
    int width = next_number(&args);
    int height = next_number(&args);
    printf("%d\n", width * height);
    return 0;
}
