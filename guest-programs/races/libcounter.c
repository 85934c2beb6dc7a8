/* A library of the program's own (not the C runtime): its unsynchronized counter races, and
 * is checked as the program's code is. Built as libcounter.so. */
static long bumps;
void bump(void) {
    bumps++; /* race */
}
long bumped(void) {
    return bumps;
}
