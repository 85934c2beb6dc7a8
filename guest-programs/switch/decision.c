/* tcas style: an advisory is issued when the separation is above the threshold; the faulty
 * predicate uses >= where > is meant, so a separation exactly at the threshold is wrongly
 * advised. Correct output for "5 7": "no advisory\nclimb\n". */
#include <stdio.h>
#include <stdlib.h>
static int threshold = 5;
static int advise(int separation) {
    if (separation >= threshold) /* faulty: should be > */
        return 1;
    return 0;
}
static const char *const names[2] = { "no advisory", "climb" };
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        puts(names[advise(atoi(argv[i]))]);
    return 0;
}
