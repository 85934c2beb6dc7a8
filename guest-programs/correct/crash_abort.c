// crash_abort: prints to stdout and stderr, then dies from SIGABRT via abort().
// rtgrind-test: signal=ABRT
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    printf("calling abort\n");
    fflush(stdout);
    fprintf(stderr, "stderr before abort\n");
    abort();
}
