// hello: the smallest libc program (printf, puts, putchar, exit status 0).
#include <stdio.h>

int main(void)
{
    printf("Hello, world!\n");
    puts("puts works");
    printf("%d %s %c %5.2f %x\n", 42, "str", 'c', 3.14159, 0xbeefu);
    putchar('!');
    putchar('\n');
    return 0;
}
