/* Corruption that travels: an overflow corrupts a message's reply pointer, the message is
 * copied with memcpy, sent through a pipe and read back, and only then is the pointer used. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
struct msg { char text[16]; const char *reply; };
/* Called through a pointer so that the copy is glibc's memcpy, not code gcc inlines. */
static void *(*volatile copy_fn)(void *, const void *, size_t) = memcpy;
static void set_text(struct msg *m, const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++)
        m->text[i] = s[i]; /* root */
    m->text[n < 16 ? n : 15] = '\0';
}
int main(int argc, char **argv) {
    struct msg m = { "", "pong" }, copy, got;
    int fd[2];
    set_text(&m, argc > 1 ? argv[1] : "ping");
    copy_fn(&copy, &m, sizeof m);
    if (pipe(fd) != 0 || write(fd[1], &copy, sizeof copy) != sizeof copy) return 2;
    if (read(fd[0], &got, sizeof got) != sizeof got) return 3;
    puts(got.reply); /* crash */
    return 0;
}
