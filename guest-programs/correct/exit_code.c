// exit_code: a non-zero exit status (42) through exit() after atexit handlers run.
// rtgrind-test: exit=42
#include <stdio.h>
#include <stdlib.h>

static void first(void) { puts("atexit handler 1"); }
static void second(void) { puts("atexit handler 2"); }

int main(void)
{
    atexit(first);
    atexit(second);
    puts("exiting with 42");
    exit(42);
}
