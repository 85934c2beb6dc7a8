/* Crashes only when the marker file named by its argument does not exist yet (and creates
 * it): a failure that no second run repeats. */
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (access(argv[1], F_OK) == 0) return 0;
    FILE *f = fopen(argv[1], "w");
    if (f) fclose(f);
    volatile int *p = 0;
    return *p; /* crash */
}
