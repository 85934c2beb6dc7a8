// proc_maps: the process's own memory map, read from /proc/self/maps as glibc's
// pthread_getattr_np and gnulib's c-stack do: the stack variable is in the line named [stack],
// the program's code in a line naming the program, lines are sorted and do not overlap, and
// no mapping belongs to anything but the program (no translator's code cache or heap).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return 1;
    int local = 0;
    unsigned long here = (unsigned long)&local, code = (unsigned long)&main, prev_end = 0;
    int stack = 0, program = 0, sorted = 1, foreign = 0;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char path[4096] = "";
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %4095[^\n]", &lo, &hi, path) < 2)
            continue;
        if (lo < prev_end || hi <= lo)
            sorted = 0;
        prev_end = hi;
        if (here >= lo && here < hi && strcmp(path, "[stack]") == 0)
            stack = 1;
        if (code >= lo && code < hi && strcmp(path, exe) == 0)
            program = 1;
        if (strstr(path, "rtgrind") || strstr(path, "memfd:"))
            foreign = 1;
    }
    fclose(f);
    printf("stack variable in [stack]: %s\n", stack ? "yes" : "no");
    printf("code in a line naming the program: %s\n", program ? "yes" : "no");
    printf("sorted, no overlaps: %s\n", sorted ? "yes" : "no");
    printf("mappings of others: %s\n", foreign ? "yes" : "none");
    return 0;
}
