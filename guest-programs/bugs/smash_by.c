/* A 32-byte stack buffer filled past its end by the library call the first argument names,
 * with the text of the second (or standard input, for read and gets): the overflow reaches the saved
 * frame pointer and the return address, and with a long text the caller's frame. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
char *gets(char *s); /* removed from C11, still in glibc */
__attribute__((noinline)) static void fill(const char *how, const char *text) {
    char buf[32];
    if (!strcmp(how, "read"))
        buf[read(0, buf, 512) > 0 ? 0 : 0] = 'r'; /* root */
    else if (!strcmp(how, "memcpy"))
        memcpy(buf, text, strlen(text) + 1); /* root */
    else if (!strcmp(how, "sprintf"))
        sprintf(buf, "<%s>", text); /* root */
    else if (!strcmp(how, "gets"))
        gets(buf); /* root */
    else
        sscanf(text, "%s", buf); /* root */
    printf("%.8s\n", buf);
}
int main(int argc, char **argv) {
    fill(argc > 1 ? argv[1] : "sscanf", argc > 2 ? argv[2] : "short");
    return 0;
}
