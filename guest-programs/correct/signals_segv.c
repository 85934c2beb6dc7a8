// signals_segv: SIGSEGV with SA_SIGINFO (si_addr, si_code, faulting RIP), recovery by siglongjmp,
// by fixing the mapping and returning, and by editing the ucontext (skip insn, set a register).
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

static sigjmp_buf env;
static volatile sig_atomic_t handled;
static void *volatile last_addr;
static volatile int last_code;
static volatile int usr1_blocked_in_handler;
static volatile int segv_blocked_in_handler;

enum mode { MODE_JUMP, MODE_FIX_MAPPING, MODE_SKIP_INSN };
static volatile enum mode mode;
static char *volatile fix_page;
static long page_size;

extern char fault_insn[], fault_insn_end[];

/* Loads from (addr) with a known instruction at the global label fault_insn; r12 holds a marker. */
__attribute__((noipa)) static long load_marked(const long *addr)
{
    long out;
    __asm__ volatile("movabs $0x1122334455667788, %%r12\n\t"
                     ".globl fault_insn\n"
                     "fault_insn:\n\t"
                     "movq (%1), %0\n"
                     ".globl fault_insn_end\n"
                     "fault_insn_end:\n\t"
                     : "=a"(out)
                     : "a"(addr)
                     : "r12", "memory");
    return out;
}

static void handler(int sig, siginfo_t *si, void *uctx)
{
    ucontext_t *uc = uctx;
    sigset_t cur;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    usr1_blocked_in_handler = sigismember(&cur, SIGUSR1);
    segv_blocked_in_handler = sigismember(&cur, SIGSEGV);
    handled++;
    last_addr = si->si_addr;
    last_code = si->si_code;
    if (sig != SIGSEGV)
        _exit(99);
    switch (mode) {
    case MODE_JUMP:
        siglongjmp(env, 1);
    case MODE_FIX_MAPPING:
        mprotect(fix_page, page_size, PROT_READ | PROT_WRITE);
        return;                     /* the faulting store is retried and now succeeds */
    case MODE_SKIP_INSN: {
        greg_t *g = uc->uc_mcontext.gregs;
        int rip_ok = g[REG_RIP] == (greg_t)(uintptr_t)fault_insn;
        int r12_ok = g[REG_R12] == (greg_t)0x1122334455667788;
        printf("  handler: rip at fault_insn=%d r12 preserved=%d\n", rip_ok, r12_ok);
        g[REG_RIP] = (greg_t)(uintptr_t)fault_insn_end;  /* skip the load */
        g[REG_RAX] = 4242;                               /* ...and fake its result */
        return;
    }
    }
}

/* Hides constant bad addresses from the compiler's bounds warnings. */
__attribute__((noipa)) static volatile int *bad(uintptr_t a)
{
    return (volatile int *)a;
}

static const char *code_name(int code)
{
    return code == SEGV_MAPERR ? "SEGV_MAPERR" : code == SEGV_ACCERR ? "SEGV_ACCERR" : "other";
}

static int segv_blocked_now(void)
{
    sigset_t cur;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    return sigismember(&cur, SIGSEGV);
}

int main(void)
{
    page_size = sysconf(_SC_PAGESIZE);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGUSR1);
    if (sigaction(SIGSEGV, &sa, NULL) != 0) {
        perror("sigaction");
        return 1;
    }

    /* 1. Read and write through small bad pointers, recover with siglongjmp (mask restored). */
    mode = MODE_JUMP;
    for (uintptr_t a = 0x10; a <= 0x50; a += 0x10) {
        if (sigsetjmp(env, 1) == 0) {
            if (a % 0x20)
                (void)*bad(a);
            else
                *bad(a) = 1;
            printf("no fault at %#lx?\n", (unsigned long)a);
        } else {
            printf("fault %s at %#lx: si_addr match=%d code=%s usr1 blocked in handler=%d "
                   "segv blocked in handler=%d, after siglongjmp segv blocked=%d\n",
                   a % 0x20 ? "read" : "write", (unsigned long)a, last_addr == (void *)a,
                   code_name(last_code), usr1_blocked_in_handler, segv_blocked_in_handler,
                   segv_blocked_now());
        }
    }

    /* 2. Access to a PROT_NONE page and write to a read-only page: SEGV_ACCERR. */
    char *pages = mmap(NULL, 2 * page_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(pages + page_size, page_size, PROT_READ);
    if (sigsetjmp(env, 1) == 0)
        (void)*(volatile char *)(pages + 123);
    printf("PROT_NONE read: offset=%ld code=%s\n", (long)((char *)last_addr - pages),
           code_name(last_code));
    if (sigsetjmp(env, 1) == 0)
        *(volatile char *)(pages + page_size + 7) = 1;
    printf("read-only write: offset=%ld code=%s\n", (long)((char *)last_addr - pages),
           code_name(last_code));

    /* 3. Jump to an unmapped address: the fault is at the instruction fetch. */
    if (sigsetjmp(env, 1) == 0) {
        void (*volatile fn)(void) = (void (*)(void))0x1000;
        fn();
    }
    printf("call to 0x1000: si_addr match=%d code=%s\n", last_addr == (void *)0x1000,
           code_name(last_code));

    /* 4. sigsetjmp(env, 0) does not restore the mask: SIGSEGV stays blocked after the jump. */
    if (sigsetjmp(env, 0) == 0)
        (void)*bad(0x10);
    printf("sigsetjmp(env,0): segv blocked after jump=%d\n", segv_blocked_now());
    sigset_t unblock;
    sigemptyset(&unblock);
    sigaddset(&unblock, SIGSEGV);
    sigaddset(&unblock, SIGUSR1);
    sigprocmask(SIG_UNBLOCK, &unblock, NULL);
    printf("after unblock: segv blocked=%d\n", segv_blocked_now());

    /* 5. Handler makes the page writable and returns: the store is restarted. */
    mode = MODE_FIX_MAPPING;
    fix_page = pages;
    int before = handled;
    for (int i = 0; i < 100; i++)
        ((volatile char *)pages)[i * 17] = (char)i;
    long sum = 0;
    for (int i = 0; i < 100; i++)
        sum += ((volatile char *)pages)[i * 17];
    printf("fix-mapping: handler ran %d time(s), sum=%ld\n", handled - before, sum);

    /* 6. Handler skips the faulting load by editing RIP in the ucontext and sets RAX. */
    mode = MODE_SKIP_INSN;
    for (int i = 0; i < 3; i++) {
        long v = load_marked((const long *)(uintptr_t)(0x100 + i * 8));
        printf("skip-insn %d: value=%ld si_addr match=%d\n", i, v,
               last_addr == (void *)(uintptr_t)(0x100 + i * 8));
    }
    long good = 31337;
    printf("non-faulting load_marked: %ld\n", load_marked(&good));

    munmap(pages, 2 * page_size);
    printf("total SIGSEGVs handled: %d\n", handled);
    return 0;
}
