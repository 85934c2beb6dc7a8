/* Asynchronous signals landing while translated code is inside an indirect-branch lookup:
 * a fast interval timer interrupts a loop of indirect calls and returns. (The runtime empties
 * the lookup table when a signal arrives; a lookup that had just matched must still reach its
 * target, not address 0.) The output does not depend on how many signals arrived. */
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>

static volatile long ticks;
static void on_alarm(int sig) { (void)sig; ticks++; }

static long add1(long x) { return x + 1; }
static long add3(long x) { return x + 3; }
static long twice(long x) { return x * 2 % 1000003; }
static long (*const ops[])(long) = {add1, add3, twice, add1};

int main(void) {
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, 0);
    struct itimerval it = {{0, 50}, {0, 50}};
    setitimer(ITIMER_REAL, &it, 0);
    long v = 1;
    for (long i = 0; i < 8000000; i++)
        v = ops[(i ^ v) & 3](v);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, 0);
    printf("v=%ld signals arrived: %s\n", v, ticks > 0 ? "yes" : "no");
    return 0;
}
