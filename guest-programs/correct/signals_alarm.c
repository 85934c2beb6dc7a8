// signals_alarm: asynchronous SIGALRM/SIGVTALRM from setitimer interrupting CPU loops, pause(),
// and a blocking pipe read (EINTR without SA_RESTART, transparently restarted with SA_RESTART).
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static volatile sig_atomic_t fired;
static int pipe_fds[2];
static volatile sig_atomic_t write_from_handler;

static void on_alarm(int sig)
{
    (void)sig;
    fired++;
    if (write_from_handler) {
        int saved = errno;
        write(pipe_fds[1], "X", 1);
        errno = saved;
    }
}

static void set_handler(int sig, int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

static void arm(int which, long first_ms, long interval_ms)
{
    struct itimerval it;
    it.it_value.tv_sec = first_ms / 1000;
    it.it_value.tv_usec = (first_ms % 1000) * 1000;
    it.it_interval.tv_sec = interval_ms / 1000;
    it.it_interval.tv_usec = (interval_ms % 1000) * 1000;
    setitimer(which, &it, NULL);
}

/* A CPU loop with real work that only ends when the handler has run `want` times. */
static unsigned long spin_until(int want)
{
    unsigned long x = 1, iters = 0;
    while (fired < want) {
        x = x * 6364136223846793005ul + 1442695040888963407ul;
        x ^= x >> 29;
        iters++;
    }
    return x + iters; /* used only to keep the loop alive */
}

/* The same with a table on the stack read at a computed index: a tool that checks loads
 * borrows registers for that check, which stay borrowed around the loop (its back edge links
 * to a head inside the block); the signal must still get the thread out. */
static unsigned long spin_table_until(int want)
{
    unsigned char table[256];
    for (int i = 0; i < 256; i++)
        table[i] = (unsigned char)(i * 7 + 1);
    unsigned long x = 1, s = 0;
    while (fired < want) {
        s += table[(x >> 7) & 255];
        x = x * 6364136223846793005ul + s;
    }
    return x + s;
}

int main(void)
{
    volatile unsigned long sink;

    /* 1. One-shot ITIMER_REAL interrupting a CPU loop. */
    set_handler(SIGALRM, 0);
    fired = 0;
    arm(ITIMER_REAL, 30, 0);
    sink = spin_until(1);
    printf("one-shot SIGALRM interrupted the loop: fired=%d\n", (int)fired);

    /* 2. Periodic ITIMER_REAL: three ticks, then disarm. */
    fired = 0;
    arm(ITIMER_REAL, 10, 10);
    sink = spin_until(3);
    arm(ITIMER_REAL, 0, 0);
    printf("periodic SIGALRM: at least 3 ticks=%d\n", fired >= 3);

    /* 3. ITIMER_VIRTUAL counts only user CPU time: SIGVTALRM. */
    set_handler(SIGVTALRM, 0);
    fired = 0;
    arm(ITIMER_VIRTUAL, 20, 0);
    sink = spin_until(1);
    printf("SIGVTALRM interrupted the loop: fired=%d\n", (int)fired);

    /* 3b. One-shot ITIMER_REAL interrupting a loop over a table on the stack. */
    fired = 0;
    arm(ITIMER_REAL, 30, 0);
    sink = spin_table_until(1);
    printf("SIGALRM interrupted the table loop: fired=%d\n", (int)fired);
    (void)sink;

    /* Steps 4-6 block in the kernel until a tick arrives. The timers are periodic so that a
     * tick which happens to arrive before the blocking call (a loaded machine) cannot make the
     * program hang: the next tick interrupts the call. Outputs do not depend on tick counts. */

    /* 4. pause() returns -1/EINTR once the handler has run. */
    fired = 0;
    arm(ITIMER_REAL, 20, 20);
    int r = pause();
    int e = errno;
    arm(ITIMER_REAL, 0, 0);
    printf("pause returned %d errno=%s handler ran=%d\n", r, e == EINTR ? "EINTR" : "other",
           fired > 0);

    /* 5. Blocking read on an empty pipe, handler without SA_RESTART: read fails with EINTR. */
    if (pipe(pipe_fds) != 0) {
        perror("pipe");
        return 1;
    }
    char c = 0;
    fired = 0;
    write_from_handler = 0;
    arm(ITIMER_REAL, 50, 50);
    ssize_t n = read(pipe_fds[0], &c, 1);
    e = errno;
    arm(ITIMER_REAL, 0, 0);
    printf("read without SA_RESTART: n=%zd errno=%s handler ran=%d\n", n,
           n < 0 && e == EINTR ? "EINTR" : "other", fired > 0);

    /* 6. Same with SA_RESTART: the handler writes a byte, the restarted read returns it. */
    set_handler(SIGALRM, SA_RESTART);
    fired = 0;
    write_from_handler = 1;
    arm(ITIMER_REAL, 50, 50);
    n = read(pipe_fds[0], &c, 1);
    arm(ITIMER_REAL, 0, 0);
    write_from_handler = 0;
    printf("read with SA_RESTART: n=%zd data=%c handler ran=%d\n", n, n == 1 ? c : '?',
           fired > 0);

    close(pipe_fds[0]);
    close(pipe_fds[1]);
    printf("done\n");
    return 0;
}
