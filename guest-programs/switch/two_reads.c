/* Two reads of standard input with branches between them, and a crash that depends on the
 * second read's bytes through no branch: no single switch avoids it. Each forked child must
 * read the second four bytes as the original run did; a child reading at its parent's offset
 * (or the end of the input) would not crash, and the switch before its fork would look
 * critical: the loop's last test switched leaves the count, and the output, unchanged.
 * Input "xaxb!zzz": crashes; expected output "2\n". */
#include <stdio.h>
#include <unistd.h>
static int x;
int main(void) {
    char a[8] = {0}, b[8] = {0};
    if (read(0, a, 4) < 0)
        return 1;
    int n = 0;
    for (int i = 0; i < 4; i++)
        if (a[i] == 'x')
            n++;
    if (read(0, b, 4) < 0)
        return 1;
    int *where[2] = {&x, NULL};
    *where[b[0] == '!'] = n; /* the crash: a NULL store when the fifth byte is '!' */
    printf("%d\n", n);
    return 0;
}
