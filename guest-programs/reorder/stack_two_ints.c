/* The shape of ncompress's comprexx (the dissertation's Fig. 5.6): a name copied into a fixed
 * stack buffer with strcpy. Natively the overflow lands on two ints beside the buffer, which
 * are set again before they are used: nothing crashes. A layout that puts the buffer right
 * below the saved frame pointer and return address turns the same overflow into a crash. */
#include <stdio.h>
#include <string.h>

static int compress_name(const char *name) {
    char tempname[24];
    int fdin = 0;
    int fdout = 0;
    strcpy(tempname, name); /* root */
    fdin = 3;
    fdout = 4;
    printf("%s: %d %d\n", tempname, fdin, fdout);
    return fdin + fdout;
}

int main(int argc, char **argv) {
    return compress_name(argc > 1 ? argv[1] : "file.txt") == 7 ? 0 : 1;
}
