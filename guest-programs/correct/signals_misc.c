// signals_misc: sigaltstack/SA_ONSTACK, raise, masks and pending signals, SIGFPE, SIGILL, SIGTRAP
// and SIGBUS faults, SIGTERM via kill, SIGPIPE/EPIPE, SIGCHLD, sigqueue (RT queueing),
// SA_NODEFER/SA_RESETHAND, and registers (GPR and XMM) restored by sigreturn.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

static sigjmp_buf env;
static volatile sig_atomic_t count;
static volatile int last_sig, last_code, last_errno_seen;
static void *volatile last_addr;
static volatile long last_rip;
static volatile int last_value;
static volatile int last_pid_is_self, last_status;
static char altstack[65536];
static volatile int on_alt, alt_flag_onstack;
static volatile int order[16];
static volatile int norder;
static volatile int depth, max_depth;

static void install(int sig, void (*fn)(int, siginfo_t *, void *), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fn;
    sa.sa_flags = SA_SIGINFO | flags;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL) != 0) {
        perror("sigaction");
        exit(1);
    }
}

static void record(int sig, siginfo_t *si, void *uctx)
{
    ucontext_t *uc = uctx;
    count++;
    last_sig = sig;
    last_code = si->si_code;
    last_addr = si->si_addr;
    last_rip = (long)uc->uc_mcontext.gregs[REG_RIP];
    last_value = si->si_value.sival_int;
    last_pid_is_self = si->si_pid == getpid();
    last_status = si->si_status;
}

static void record_and_jump(int sig, siginfo_t *si, void *uctx)
{
    record(sig, si, uctx);
    siglongjmp(env, 1);
}

static void on_alt_handler(int sig, siginfo_t *si, void *uctx)
{
    char local;
    stack_t cur;
    record(sig, si, uctx);
    on_alt = &local >= altstack && &local < altstack + sizeof altstack;
    sigaltstack(NULL, &cur);
    alt_flag_onstack = (cur.ss_flags & SS_ONSTACK) != 0;
}

static void rt_order(int sig, siginfo_t *si, void *uctx)
{
    record(sig, si, uctx);
    if (norder < 16)
        order[norder++] = si->si_value.sival_int;
}

static void nodefer(int sig, siginfo_t *si, void *uctx)
{
    record(sig, si, uctx);
    depth++;
    if (depth > max_depth)
        max_depth = depth;
    if (depth < 3)
        raise(sig); /* delivered immediately, nested, because of SA_NODEFER */
    depth--;
}

/* Clobbers registers the interrupted code relies on; sigreturn must restore them. */
static void clobber(int sig, siginfo_t *si, void *uctx)
{
    record(sig, si, uctx);
    __asm__ volatile("pxor %%xmm8, %%xmm8\n\t"
                     "movq $-1, %%r15\n\t"
                     :
                     :
                     : "xmm8", "r15");
}

extern char ud2_insn[], int3_after[];

int main(void)
{
    /* 1. raise(SIGUSR1) with an SA_SIGINFO handler: runs synchronously, SI_TKILL. */
    install(SIGUSR1, record, 0);
    count = 0;
    raise(SIGUSR1);
    printf("raise SIGUSR1: count=%d sig=%s code=%s\n", (int)count,
           last_sig == SIGUSR1 ? "SIGUSR1" : "?", last_code == SI_TKILL ? "SI_TKILL" : "?");

    /* 2. sigaltstack + SA_ONSTACK. */
    stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0 };
    if (sigaltstack(&ss, NULL) != 0)
        perror("sigaltstack");
    install(SIGUSR2, on_alt_handler, SA_ONSTACK);
    raise(SIGUSR2);
    printf("SA_ONSTACK: handler on alt stack=%d SS_ONSTACK seen=%d\n", on_alt, alt_flag_onstack);
    install(SIGUSR2, on_alt_handler, 0);
    raise(SIGUSR2);
    printf("without SA_ONSTACK: handler on alt stack=%d\n", on_alt);

    /* 3. Blocked signals stay pending and are delivered when unblocked; standard ones coalesce. */
    sigset_t set, pend;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    count = 0;
    raise(SIGUSR1);
    raise(SIGUSR1);
    sigpending(&pend);
    printf("blocked: count=%d pending=%d\n", (int)count, sigismember(&pend, SIGUSR1));
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    sigpending(&pend);
    printf("unblocked: count=%d pending=%d\n", (int)count, sigismember(&pend, SIGUSR1));

    /* 4. Real-time signals queue: three sigqueue()s while blocked arrive in order with values. */
    install(SIGRTMIN, rt_order, 0);
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN);
    sigprocmask(SIG_BLOCK, &set, NULL);
    for (int i = 1; i <= 3; i++)
        sigqueue(getpid(), SIGRTMIN, (union sigval){ .sival_int = i * 11 });
    count = 0;
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    printf("RT signals: count=%d order=%d,%d,%d code=%s\n", (int)count, order[0], order[1],
           order[2], last_code == SI_QUEUE ? "SI_QUEUE" : "?");

    /* 5. SIGFPE from integer division by zero and from INT_MIN / -1. */
    install(SIGFPE, record_and_jump, 0);
    volatile int zero = 0, minus1 = -1, big = -2147483647 - 1;
    if (sigsetjmp(env, 1) == 0)
        printf("no SIGFPE? %d\n", 10 / zero);
    printf("div by zero: SIGFPE=%d code=%s\n", last_sig == SIGFPE,
           last_code == FPE_INTDIV ? "FPE_INTDIV" : "?");
    last_sig = 0;
    if (sigsetjmp(env, 1) == 0)
        printf("no SIGFPE? %d\n", big / minus1);
    printf("INT_MIN/-1: SIGFPE=%d\n", last_sig == SIGFPE);

    /* 6. SIGILL from ud2: si_addr and RIP are the ud2 itself. */
    install(SIGILL, record_and_jump, 0);
    if (sigsetjmp(env, 1) == 0)
        __asm__ volatile(".globl ud2_insn\nud2_insn: ud2");
    printf("ud2: SIGILL=%d code=%s si_addr ok=%d rip ok=%d\n", last_sig == SIGILL,
           last_code == ILL_ILLOPN ? "ILL_ILLOPN" : "?", last_addr == (void *)ud2_insn,
           last_rip == (long)ud2_insn);

    /* 7. SIGTRAP from int3: the handler returns and execution continues after the int3. */
    install(SIGTRAP, record, 0);
    count = 0;
    __asm__ volatile("int3\n.globl int3_after\nint3_after:");
    printf("int3: SIGTRAP=%d count=%d code=%s rip after int3=%d\n", last_sig == SIGTRAP,
           (int)count, last_code == SI_KERNEL ? "SI_KERNEL" : "?", last_rip == (long)int3_after);

    /* 8. SIGBUS: touching a page of a file mapping beyond the end of the file. */
    char path[] = "/tmp/rtgrind-sigbus-XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0) {
        unlink(path);
        write(fd, "abc", 3);
        long pg = sysconf(_SC_PAGESIZE);
        char *m = mmap(NULL, 2 * pg, PROT_READ, MAP_SHARED, fd, 0);
        install(SIGBUS, record_and_jump, 0);
        char first = m[0];
        if (sigsetjmp(env, 1) == 0)
            printf("no SIGBUS? %d\n", ((volatile char *)m)[pg + 5]);
        printf("beyond EOF: first byte=%c SIGBUS=%d code=%s offset=%ld\n", first,
               last_sig == SIGBUS, last_code == BUS_ADRERR ? "BUS_ADRERR" : "?",
               (long)((char *)last_addr - m));
        munmap(m, 2 * pg);
        close(fd);
    }

    /* 9. kill(getpid(), SIGTERM) with a handler: SI_USER from ourselves. */
    install(SIGTERM, record, 0);
    count = 0;
    kill(getpid(), SIGTERM);
    printf("SIGTERM: count=%d code=%s from self=%d\n", (int)count,
           last_code == SI_USER ? "SI_USER" : "?", last_pid_is_self);

    /* 10. SIGPIPE: write to a pipe whose read end is closed -> handler, then EPIPE. */
    install(SIGPIPE, record, 0);
    int p[2];
    pipe(p);
    close(p[0]);
    count = 0;
    ssize_t w = write(p[1], "x", 1);
    int e = errno;
    printf("SIGPIPE: count=%d write=%zd errno=%s\n", (int)count, w, e == EPIPE ? "EPIPE" : "?");
    close(p[1]);

    /* 11. SIGCHLD from a child that exits with status 5, waited for with sigsuspend. */
    install(SIGCHLD, record, 0);
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigset_t old;
    sigprocmask(SIG_BLOCK, &set, &old);
    count = 0;
    pid_t child = fork();
    if (child == 0)
        _exit(5);
    while (count == 0)
        sigsuspend(&old);
    sigprocmask(SIG_SETMASK, &old, NULL);
    int status;
    waitpid(child, &status, 0);
    printf("SIGCHLD: count=%d code=%s si_status=%d wait status=%d\n", (int)count,
           last_code == CLD_EXITED ? "CLD_EXITED" : "?", last_status, WEXITSTATUS(status));

    /* 12. SA_NODEFER lets the handler be re-entered by its own signal. */
    install(SIGUSR1, nodefer, SA_NODEFER);
    depth = max_depth = 0;
    raise(SIGUSR1);
    printf("SA_NODEFER: max nesting depth=%d\n", max_depth);

    /* 13. SA_RESETHAND: the first SIGWINCH runs the handler, the second gets SIG_DFL (ignore). */
    install(SIGWINCH, record, SA_RESETHAND);
    count = 0;
    raise(SIGWINCH);
    raise(SIGWINCH);
    struct sigaction now;
    sigaction(SIGWINCH, NULL, &now);
    printf("SA_RESETHAND: count=%d handler now default=%d\n", (int)count,
           now.sa_handler == SIG_DFL);

    /* 14. Registers live across a signal delivered at a syscall are restored by sigreturn. */
    install(SIGUSR2, clobber, 0);
    unsigned long r15_out, xmm_out;
    long nr = SYS_kill, pid = getpid(), sig = SIGUSR2;
    __asm__ volatile("movq $0x5555aaaa5555aaaa, %%r15\n\t"
                     "movq %%r15, %%xmm8\n\t"
                     "syscall\n\t"
                     "movq %%r15, %0\n\t"
                     "movq %%xmm8, %1\n\t"
                     : "=r"(r15_out), "=r"(xmm_out), "+a"(nr)
                     : "D"(pid), "S"(sig)
                     : "rcx", "r11", "r15", "xmm8", "memory");
    printf("registers across handler: r15 ok=%d xmm8 ok=%d kill ret=%ld\n",
           r15_out == 0x5555aaaa5555aaaaul, xmm_out == 0x5555aaaa5555aaaaul, nr);

    printf("done\n");
    return 0;
}
