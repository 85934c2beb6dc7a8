// pipe_block: thread A blocks in read() on a pipe long before thread B (after some computation)
// writes to it; then a ping-pong over two pipes where each side blocks in read() in turn, and a
// poll() that waits for data. Must not hang under a serializing scheduler.
// rtgrind-test: variants=pie,static
// rtgrind-test: cflags=-pthread
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int data_pipe[2], back_pipe[2];
static volatile unsigned long sink;

static unsigned long compute(int n)
{
    unsigned long x = 1;
    for (int i = 0; i < n; i++)
        x = x * 2862933555777941757ul + 3037000493ul;
    return x;
}

static void *reader(void *arg)
{
    (void)arg;
    unsigned long total = 0, sum = 0;
    char buf[256];
    ssize_t n;
    while ((n = read(data_pipe[0], buf, sizeof buf)) > 0) {
        total += (unsigned long)n;
        for (ssize_t i = 0; i < n; i++)
            sum = sum * 31 + (unsigned char)buf[i];
    }
    static unsigned long result[2];
    result[0] = total;
    result[1] = sum;
    return result;
}

static void *writer(void *arg)
{
    (void)arg;
    /* The reader is (almost certainly) already blocked by now. */
    unsigned long x = compute(2000000);
    char msg[64];
    for (int i = 0; i < 100; i++) {
        int len = snprintf(msg, sizeof msg, "message %d %lu\n", i, (x >> (i % 32)) % 1000);
        if (write(data_pipe[1], msg, (size_t)len) != len)
            return (void *)1;
    }
    close(data_pipe[1]);
    return NULL;
}

static void *echo(void *arg)
{
    (void)arg;
    char c;
    while (read(data_pipe[0], &c, 1) == 1) {
        c = (char)(c + 1);
        if (write(back_pipe[1], &c, 1) != 1)
            break;
    }
    close(back_pipe[1]);
    return NULL;
}

static void *late_poll_writer(void *arg)
{
    (void)arg;
    sink = compute(500000);
    if (write(data_pipe[1], "p", 1) != 1)
        return (void *)1;
    return NULL;
}

int main(void)
{
    if (pipe(data_pipe) != 0 || pipe(back_pipe) != 0)
        return 1;
    pthread_t a, b;
    pthread_create(&a, NULL, reader, NULL);
    pthread_create(&b, NULL, writer, NULL);
    void *r, *w;
    pthread_join(a, &r);
    pthread_join(b, &w);
    unsigned long *res = r;
    printf("reader got %lu bytes, hash %lu, writer status %ld\n", res[0], res[1], (long)w);
    close(data_pipe[0]);

    /* Ping-pong: main writes one byte, the echo thread answers with byte+1. */
    if (pipe(data_pipe) != 0)
        return 1;
    pthread_t e;
    pthread_create(&e, NULL, echo, NULL);
    char c = 0;
    unsigned long chk = 0;
    for (int i = 0; i < 2000; i++) {
        char out = (char)(i & 0x7f);
        if (write(data_pipe[1], &out, 1) != 1 || read(back_pipe[0], &c, 1) != 1)
            return 2;
        chk = chk * 131 + (unsigned char)c;
    }
    close(data_pipe[1]);
    char eof;
    ssize_t last = read(back_pipe[0], &eof, 1);
    pthread_join(e, NULL);
    printf("ping-pong: 2000 round trips, checksum %lu, then read returned %zd\n", chk, last);
    close(data_pipe[0]);
    close(back_pipe[0]);

    /* poll() with an infinite timeout until another thread writes. */
    if (pipe(data_pipe) != 0)
        return 1;
    pthread_t p;
    pthread_create(&p, NULL, late_poll_writer, NULL);
    struct pollfd pfd = {.fd = data_pipe[0], .events = POLLIN};
    int n = poll(&pfd, 1, -1);
    char got = 0;
    ssize_t rd = read(data_pipe[0], &got, 1);
    pthread_join(p, NULL);
    printf("poll: %d ready, revents has POLLIN: %s, read %zd byte '%c'\n", n,
           (pfd.revents & POLLIN) ? "yes" : "no", rd, got);
    return 0;
}
