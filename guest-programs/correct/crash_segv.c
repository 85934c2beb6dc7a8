// crash_segv: prints a line, flushes, then dies from SIGSEGV by writing through a NULL pointer.
// rtgrind-test: signal=SEGV
#include <stdio.h>

__attribute__((noipa)) static void store(int *p, int v)
{
    *p = v;
}

int main(void)
{
    printf("about to write through NULL\n");
    fflush(stdout);
    store(NULL, 1);
    printf("still alive?\n");
    return 0;
}
