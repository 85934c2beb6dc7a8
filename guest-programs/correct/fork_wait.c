// fork_wait: fork children that compute and exit with distinct codes, waitpid in a fixed order,
// a child killed by a signal, a pipe from child to parent and one from parent to child.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long work(unsigned seed)
{
    unsigned long x = seed;
    for (int i = 0; i < 100000; i++)
        x = x * 2862933555777941757ul + 3037000493ul;
    return x;
}

int main(void)
{
    enum { N = 5 };
    pid_t pids[N];

    /* Flush before forking so buffered output is not duplicated in the children. */
    printf("parent: forking %d children\n", N);
    fflush(stdout);
    for (int i = 0; i < N; i++) {
        pids[i] = fork();
        if (pids[i] < 0) {
            perror("fork");
            return 1;
        }
        if (pids[i] == 0)
            exit((int)(work(i) % 100) + i); /* a distinct, computed exit code */
    }
    for (int i = 0; i < N; i++) {
        int status;
        if (waitpid(pids[i], &status, 0) != pids[i]) {
            perror("waitpid");
            return 1;
        }
        printf("child %d: exited=%d code=%d (expected %d)\n", i, WIFEXITED(status),
               WEXITSTATUS(status), (int)(work(i) % 100) + i);
    }

    /* A child that dies from a signal. */
    pid_t k = fork();
    if (k == 0) {
        raise(SIGKILL);
        _exit(0);
    }
    int status;
    waitpid(k, &status, 0);
    printf("signalled child: signaled=%d sig=%s\n", WIFSIGNALED(status),
           WTERMSIG(status) == SIGKILL ? "SIGKILL" : "?");

    /* Child computes, writes its result into a pipe; parent reads it. */
    int up[2], down[2];
    if (pipe(up) != 0 || pipe(down) != 0) {
        perror("pipe");
        return 1;
    }
    pid_t c = fork();
    if (c == 0) {
        close(up[0]);
        close(down[1]);
        char req[64];
        ssize_t n = read(down[0], req, sizeof req - 1);
        req[n > 0 ? n : 0] = 0;
        unsigned long h = 5381;
        for (char *s = req; *s; s++)
            h = h * 33 + (unsigned char)*s;
        char reply[128];
        int len = snprintf(reply, sizeof reply, "child got '%s' hash=%lu", req, h);
        write(up[1], reply, (size_t)len);
        _exit(0);
    }
    close(up[1]);
    close(down[0]);
    const char *msg = "hello child";
    write(down[1], msg, strlen(msg));
    close(down[1]);
    char buf[256];
    size_t total = 0;
    ssize_t n;
    while ((n = read(up[0], buf + total, sizeof buf - 1 - total)) > 0)
        total += (size_t)n;
    buf[total] = 0;
    close(up[0]);
    waitpid(c, &status, 0);
    printf("pipe: %s (child status %d)\n", buf, WEXITSTATUS(status));

    /* wait() with no children left. */
    printf("wait with no children: %d\n", (int)wait(NULL));

    /* The child's stdout output goes to the same stream as ours. */
    fflush(stdout);
    c = fork();
    if (c == 0) {
        printf("hello from the child\n");
        fflush(stdout);
        _exit(3);
    }
    waitpid(c, &status, 0);
    printf("child that printed exited with %d\n", WEXITSTATUS(status));
    return 0;
}
