// stdin_echo: reads all of stdin with fgets/getchar and prints line count, byte count, checksum.
// rtgrind-test: stdin=first line\nsecond line\n\nfourth line with more words\nlast line, no newline
#include <stdio.h>
#include <string.h>

int main(void)
{
    char line[256];
    unsigned long lines = 0, bytes = 0, sum = 0;
    while (fgets(line, sizeof line, stdin)) {
        size_t n = strlen(line);
        bytes += n;
        if (n && line[n - 1] == '\n')
            lines++;
        for (size_t i = 0; i < n; i++)
            sum = sum * 31 + (unsigned char)line[i];
        line[strcspn(line, "\n")] = 0;
        printf("> %s\n", line);
    }
    printf("lines=%lu bytes=%lu checksum=%016lx\n", lines, bytes, sum);
    return 0;
}
