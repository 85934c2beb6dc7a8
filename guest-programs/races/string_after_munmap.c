/* strlen of a string whose page the program has unmapped (one thread: no race, a crash): the
 * race tool reads strings in place from pages it knows readable (`calls::Readable`), and must
 * forget them when the guest unmaps, so that the guest's strlen faults as natively (SIGSEGV)
 * instead of rtgrind reading the dead page. Prints 5, then dies. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
int main(void) {
    char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    strcpy(p, "hello");
    printf("%zu\n", strlen(p));
    fflush(stdout);
    munmap(p, 4096);
    printf("%zu\n", strlen(p));
    return 0;
}
