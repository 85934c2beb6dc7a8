/* A wrong count printed through a library that formats numbers by table lookup
 * (libdigits.c, built as libdigits.so): with no arguments the program should print 6 and
 * prints 3 (--failure=output: with "6\n"). The root cause is the wrong count, stored in
 * set_count; the digit the library writes is looked up with it, so the output's definition
 * leads back there, not into the library (whose table nobody wrote). */
#include <unistd.h>
char *format_number(unsigned long value, char *end);
static int count;
static void set_count(int argc) {
    count = argc + 2; /* root: should be argc + 5 */
}
int main(int argc, char **argv) {
    (void)argv;
    char text[32];
    set_count(argc);
    text[31] = '\n';
    char *s = format_number(count, text + 31);
    return write(1, s, text + 32 - s) > 0 ? 0 : 1;
}
