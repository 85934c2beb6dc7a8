/* A library copy overflowing into a pointer: strcpy fills a global buffer from the command
 * line and runs into the pointer declared after it, which is then handed to puts, or to
 * fprintf through varargs. Between the overflow and the crash the pointer passes through the
 * calling convention's moves: lazy binding's trampoline saves and restores the argument
 * registers, fprintf's prologue spills them to its register-save area. Those moves define
 * nothing: the root cause is the strcpy. */
#include <stdio.h>
#include <string.h>
struct { char buf[16]; const char *name; } g = { "", "world" };
int main(int argc, char **argv) {
    if (argc > 2)
        strcpy(g.buf, argv[2]); /* root */
    if (argc > 1 && strcmp(argv[1], "printf") == 0)
        fprintf(stdout, "hello %s\n", g.name);
    else
        puts(g.name);
    return 0;
}
