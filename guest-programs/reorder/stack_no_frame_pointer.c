/* The Fig. 5.6 shape in code built without a frame pointer (-Og): a name copied into a fixed
 * stack buffer with strcpy, in a frame with two ints the function passes by address (so they
 * live in its frame too). Natively a 39-character name runs over the frame's padding into the
 * saved rbx, which the caller no longer needs: nothing crashes. A layout that puts the buffer
 * right below the saved register and the return address turns the same overflow into a
 * return to a wild address. */
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) static void set(int *slot, int value) {
    *slot = value;
}

__attribute__((noinline)) static int compress_name(const char *name) {
    char tempname[24];
    int fdin = 0;
    int fdout = 0;
    strcpy(tempname, name); /* root */
    set(&fdin, 3);
    set(&fdout, 4);
    printf("%s: %d %d\n", tempname, fdin, fdout);
    return fdin + fdout;
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "file.txt";
    int done = compress_name(name);
    printf("%s compressed: %d\n", name, done); /* crash */
    return done == 7 ? 0 : 1;
}
