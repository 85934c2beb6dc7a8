/* Adds up the digits of a file read one byte at a time; the size test at the end uses >= where
 * > is meant, so a sum of exactly 10 is called big. The fork search forks while the file is
 * being read: each child must read from its own offset, or the children's reads would move
 * the forward run's and it would see the file end early. Expected output for a file "1234":
 * "small\n". */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int fd = open(argc > 1 ? argv[1] : "/dev/null", O_RDONLY);
    int sum = 0;
    char c;
    while (read(fd, &c, 1) == 1)
        if (c >= '0' && c <= '9')
            sum += c - '0';
    if (sum >= 10) /* faulty: should be > */
        puts("big");
    else
        puts("small");
    return 0;
}
