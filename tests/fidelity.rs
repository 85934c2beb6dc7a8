//! Engine fidelity (issue 27): what the guest can see or reach of rtgrind, and how its faults
//! end. Each case compares a run under rtgrind with the native run of the same program.

use crate::common::{compile_snippet, run_native, run_rtgrind, Cmd};
use std::os::unix::process::ExitStatusExt;

/// Writes one byte `argv[1]` bytes away from a local buffer (stack) and says where.
const FAR_WRITE: &str = r#"#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    char buf[16];
    long off = atol(argv[1]);
    buf[off] = 1;
    printf("wrote at %p\n", (void *)&buf[off]);
    return 0;
}
"#;

/// A store far below or above the stack faults as it does natively, in every mode: in a
/// repeatable run (whose guest stack is not at its usual place, rtgrind's own stack being
/// there) it once landed in rtgrind's code cache right below the stack, and the program "did not
/// fail". (The native run's stack size limit is pinned to the usual 8 MiB, so its stack cannot
/// grow to meet the store; rtgrind's guest stack is 8 MiB.) A store 100 KB above the buffer
/// is past the top of the stack natively; a repeatable run's stack pointer starts 256 KiB below
/// its stack's top, and the store landed in the gap until the gap was left unmapped.
#[test]
fn a_store_far_past_the_stack_faults_as_natively_in_every_mode() {
    let exe = compile_snippet("far_write", "c", FAR_WRITE, &["-g", "-O0"]);
    for off in ["-10000000", "-70000000", "100000", "100000000"] {
        let native = run_native(&Cmd::new("sh").args(["-c", "ulimit -s 8192 && exec \"$0\" \"$@\""]).arg(&exe).arg(off));
        assert_eq!(native.status.code(), None, "natively the store at {off} faults: {}", native.describe());
        for mode in [&["--tool=none"][..], &["--tool=none", "--repeatable=yes"], &["--tool=count", "--repeatable=yes"]] {
            let opts: Vec<&str> = ["-q"].iter().chain(mode).copied().collect();
            let out = run_rtgrind(&opts, &Cmd::new(&exe).arg(off));
            assert!(out.stderr_str().contains("(SIGSEGV)") && out.stdout_str().is_empty(), "{mode:?} {off}: {}", out.describe());
        }
    }
}

/// Maps one page of a file as two pages of code and runs or reads past the file's end, or
/// after truncating it, as `argv[1]` says; with a second argument a SIGBUS handler prints the
/// signal, its code and its address from the mapping's start.
const PAST_EOF: &str = r#"#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static char *map;

static void on_bus(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    printf("signal %d code %d at map+%#lx\n", sig, si->si_code, (unsigned long)((char *)si->si_addr - map));
    fflush(stdout);
    _exit(0);
}

int main(int argc, char **argv) {
    const char *mode = argv[1];
    char path[] = "/tmp/rtgrind-past-eof-XXXXXX";
    int fd = mkstemp(path);
    unlink(path);
    static unsigned char page[4096];
    memset(page, 0xc3, sizeof page); /* ret */
    page[4093] = 0xb8;               /* mov eax, imm32: its immediate is past the end */
    if (fd < 0 || write(fd, page, sizeof page) != sizeof page) return 3;
    map = mmap(0, 2 * 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) return 4;
    if (argc > 2) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_bus;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGBUS, &sa, 0);
    }
    void (*f)(void) = (void (*)(void))map;
    if (!strcmp(mode, "code")) {
        ((void (*)(void))(map + 4096))();
    } else if (!strcmp(mode, "straddle")) {
        ((void (*)(void))(map + 4093))();
    } else if (!strcmp(mode, "truncated")) {
        if (ftruncate(fd, 0)) return 5;
        f();
    } else if (!strcmp(mode, "ran-then-truncated")) {
        f();
        if (ftruncate(fd, 0)) return 5;
        f();
    } else if (!strcmp(mode, "data")) {
        printf("%d\n", map[4096]);
    } else if (!strcmp(mode, "data-truncated")) {
        printf("%d\n", map[0]);
        if (ftruncate(fd, 0)) return 5;
        printf("%d\n", map[0]);
    }
    puts("no fault");
    return 0;
}
"#;

/// Code or data in a file mapping past the file's end (mapped longer than the file, or the
/// file truncated after mapping, its code run before or not) raises SIGBUS (BUS_ADRERR at the
/// first byte past the end) as natively: the guest's handler sees the same siginfo, or the
/// program dies of SIGBUS. Reading such code for translation was an internal error of rtgrind
/// (a SIGBUS in the translator), and code translated before the truncation ran on.
#[test]
fn code_and_data_past_the_end_of_a_mapped_file_raise_sigbus_as_natively() {
    let exe = compile_snippet("past_eof", "c", PAST_EOF, &["-g", "-O0"]);
    for mode in ["code", "straddle", "truncated", "ran-then-truncated", "data", "data-truncated"] {
        let native = run_native(&Cmd::new(&exe).args([mode, "handler"]));
        assert!(native.status.success() && native.stdout_str().contains("signal 7 code 2 at map+"), "{mode}: {}", native.describe());
        for tool in ["--tool=none", "--tool=count"] {
            let out = run_rtgrind(["-q", tool], &Cmd::new(&exe).args([mode, "handler"]));
            assert!(out.status.success() && out.stdout == native.stdout, "{mode} {tool}: native {}\nrtgrind {}", native.stdout_str(), out.describe());
        }
        let native = run_native(&Cmd::new(&exe).arg(mode));
        assert_eq!(native.status.signal(), Some(libc::SIGBUS), "{mode}: {}", native.describe());
        let out = run_rtgrind(["-q", "--tool=none"], &Cmd::new(&exe).arg(mode));
        let err = out.stderr_str();
        assert!(
            out.status.signal() == Some(libc::SIGBUS) && err.contains("(SIGBUS)") && err.contains("bus error at address") && out.stdout == native.stdout,
            "{mode}: {}",
            out.describe()
        );
    }
}

/// Stores one byte `argv[2]` bytes away from a buffer `argv[1]` names: `stack` (a local),
/// `heap` (a small malloc'd block, in the brk heap), `mapped` (a large one, mapped) or
/// `global`; with a third argument a SIGSEGV handler prints the signal's code and whether its
/// address is the store's.
const FAR_STORE: &str = r#"#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char global[16];
static char *target;

static void on_segv(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    printf("signal %d code %d at the store's address: %s\n", sig, si->si_code, si->si_addr == target ? "yes" : "no");
    fflush(stdout);
    _exit(0);
}

int main(int argc, char **argv) {
    char local[16];
    char *heap = malloc(16), *mapped = malloc(1 << 20);
    const char *which = argv[1];
    char *base = !strcmp(which, "stack") ? local : !strcmp(which, "heap") ? heap : !strcmp(which, "mapped") ? mapped : global;
    target = base + atol(argv[2]);
    if (argc > 3) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_segv;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, 0);
    }
    *(volatile char *)target = 1;
    printf("wrote at %p\n", (void *)target);
    return 0;
}
"#;

/// The modes a far store is run in: a repeatable run places the guest elsewhere (rtgrind's
/// own binary and stack have the guest's usual places), a tool adds its own memory.
const FAR_MODES: [&[&str]; 3] = [&["-q", "--tool=none"], &["-q", "--tool=none", "--repeatable=yes"], &["-q", "--tool=count", "--repeatable=yes"]];

/// The native run of `FAR_STORE` (its stack limited to the usual 8 MiB, so it cannot grow
/// to meet a store below it).
fn far_store_native(exe: &std::path::Path, args: &[&str]) -> crate::common::Output {
    run_native(&Cmd::new("sh").args(["-c", "ulimit -s 8192 && exec \"$0\" \"$@\""]).arg(exe).args(args))
}

/// A store far from a heap block (brk or mapped) or a global faults as it does natively, in
/// every mode: rtgrind's writable memory was placed by the kernel beside the guest's mappings
/// (the code cache's writable views, rtgrind's libraries' data), and a store 100 MB past a
/// mapped block wrote into it, the program "did not fail". Only stores that fault natively
/// are compared (natively the address may be mapped by chance, as under rtgrind).
#[test]
fn a_store_far_from_the_heap_or_a_global_faults_as_natively_in_every_mode() {
    let exe = compile_snippet("far_store", "c", FAR_STORE, &["-g", "-O0"]);
    for base in ["heap", "mapped", "global"] {
        for off in ["-10000000", "-70000000", "100000000", "1000000000"] {
            let native = far_store_native(&exe, &[base, off]);
            if native.status.signal() != Some(libc::SIGSEGV) {
                eprintln!("{base} {off}: natively no fault (mapped by chance), not compared: {}", native.describe());
                continue;
            }
            for mode in FAR_MODES {
                let out = run_rtgrind(mode, &Cmd::new(&exe).args([base, off]));
                let err = out.stderr_str();
                assert!(
                    out.status.signal() == Some(libc::SIGSEGV)
                        && err.contains("(SIGSEGV)")
                        && err.contains("access not within mapped region")
                        && out.stdout_str().is_empty(),
                    "{mode:?} {base} {off}: {}",
                    out.describe()
                );
            }
        }
    }
}

/// A fault in address space rtgrind keeps free for the guest's faults (its gaps are
/// PROT_NONE: the gaps beside the guest stack, below rtgrind's own mappings) or in rtgrind's
/// own memory (a code arena's read-only view near the guest's code) has the si_code of an
/// address where nothing is mapped, SEGV_MAPERR, as natively; it was SEGV_ACCERR.
#[test]
fn a_fault_in_rtgrind_s_gaps_is_segv_maperr_as_natively() {
    let exe = compile_snippet("far_store_code", "c", FAR_STORE, &["-g", "-O0"]);
    for (base, off) in [("stack", "-10000000"), ("heap", "-250000000"), ("mapped", "100000000"), ("mapped", "-250000000")] {
        let native = far_store_native(&exe, &[base, off, "handler"]);
        if native.stdout_str() != "signal 11 code 1 at the store's address: yes\n" {
            eprintln!("{base} {off}: natively not SEGV_MAPERR, not compared: {}", native.describe());
            continue;
        }
        for mode in FAR_MODES {
            let out = run_rtgrind(mode, &Cmd::new(&exe).args([base, off, "handler"]));
            assert!(out.status.success() && out.stdout == native.stdout, "{mode:?} {base} {off}: {}", out.describe());
        }
    }
}

/// A thread, with a second one waiting on a pipe, writes back the byte it reads at every page
/// from 64 MiB below its stack to 64 MiB above it, a SIGSEGV (and SIGBUS) handler jumping over
/// the pages that fault, and counts the pages its own `/proc/self/maps` shows nothing at that
/// it could write and the writable ones it could not.
const THREAD_STACK_PROBE: &str = r#"#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static sigjmp_buf jb;
static struct { unsigned long lo, hi; int writable; } maps[4096];
static int nmaps, fds[2];

static void on_fault(int sig) {
    (void)sig;
    siglongjmp(jb, 1);
}

/* -1: nothing mapped at `a` in the process's own view; 1: mapped writable; 0: mapped. */
static int mapped(unsigned long a) {
    for (int i = 0; i < nmaps; i++)
        if (a >= maps[i].lo && a < maps[i].hi) return maps[i].writable;
    return -1;
}

static void *probe(void *arg) {
    (void)arg;
    char here;
    unsigned long base = (unsigned long)&here & ~4095UL;
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512], perms[8];
    unsigned long lo, hi;
    while (f && fgets(line, sizeof line, f) && nmaps < 4096)
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3) {
            maps[nmaps].lo = lo, maps[nmaps].hi = hi, maps[nmaps].writable = perms[1] == 'w';
            nmaps++;
        }
    if (f) fclose(f);
    long unmapped_written = 0, writable_faulted = 0;
    for (long k = -16384; k <= 16384; k++) {
        if (k == 0) continue;
        volatile char *p = (volatile char *)(base + k * 4096);
        int m = mapped((unsigned long)p);
        if (sigsetjmp(jb, 1) == 0) {
            char v = *p;
            *p = v;
            if (m < 0 && unmapped_written++ < 3) printf("nothing mapped but written at %+ld pages\n", k);
        } else if (m == 1 && writable_faulted++ < 3) {
            printf("writable but faulted at %+ld pages\n", k);
        }
    }
    printf("nothing mapped but written: %ld, writable but faulted: %ld\n", unmapped_written, writable_faulted);
    return 0;
}

static void *wait_on_pipe(void *arg) {
    char c;
    (void)arg;
    return read(fds[0], &c, 1) == 1 ? 0 : arg;
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fault;
    sigaction(SIGSEGV, &sa, 0);
    sigaction(SIGBUS, &sa, 0);
    pthread_t waiter, prober;
    if (pipe(fds) || pthread_create(&waiter, 0, wait_on_pipe, 0) || pthread_create(&prober, 0, probe, 0)) return 2;
    pthread_join(prober, 0);
    if (write(fds[1], "x", 1) != 1) return 3;
    pthread_join(waiter, 0);
    return 0;
}
"#;

/// rtgrind's per-thread memory is not beside the guest's: a guest thread writing at pages up
/// to 64 MiB from its stack faults wherever its own memory map shows nothing, as natively.
/// The host stacks of guest threads were glibc's (std's threads), each mapped right below its
/// guest thread's stack, and 1028 pages where the guest has nothing took the writes.
#[test]
fn a_thread_s_far_stores_fault_where_nothing_of_the_guest_is_mapped() {
    let exe = compile_snippet("thread_stack_probe", "c", THREAD_STACK_PROBE, &["-O0", "-g", "-pthread"]);
    let native = far_store_native(&exe, &[]);
    let clean = "nothing mapped but written: 0, writable but faulted: 0\n";
    assert!(native.status.success() && native.stdout_str() == clean, "{}", native.describe());
    for mode in FAR_MODES {
        let out = run_rtgrind(mode, &Cmd::new(&exe));
        assert!(out.status.success() && out.stdout_str() == clean, "{mode:?}: {}", out.describe());
    }
}

/// Installs a seccomp filter that makes `mmap` fail with EPERM (or, with `trap` as
/// `argv[1]`, raise SIGSYS), then grows its heap by 1 MiB with `sbrk` and writes all of it;
/// with `fork` as `argv[2]` it then forks and waits for the child.
const BRK_UNDER_SECCOMP: &str = r#"#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int trap = argc > 1 && !strcmp(argv[1], "trap");
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, trap ? SECCOMP_RET_TRAP : SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)) {
        perror("seccomp");
        return 2;
    }
    if (!trap) {
        void *m = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        printf("mmap: %s\n", m == MAP_FAILED ? strerror(errno) : "mapped");
    }
    char *p = sbrk(1 << 20);
    if (p == (char *)-1) {
        printf("sbrk: %s\n", strerror(errno));
        return 1;
    }
    memset(p, 1, 1 << 20);
    puts("ok");
    if (argc > 2 && !strcmp(argv[2], "fork")) {
        fflush(stdout);
        pid_t c = fork();
        if (c == 0) _exit(7);
        if (c < 0) {
            perror("fork");
            return 3;
        }
        int st;
        waitpid(c, &st, 0);
        printf("child exited %d\n", WEXITSTATUS(st));
    }
    return 0;
}
"#;

/// brk is not mmap: a program whose seccomp filter denies `mmap` still grows its heap with
/// `sbrk`, as natively. The filter applies to rtgrind's own calls too, and the brk heap grew
/// by mmap: sbrk failed with ENOMEM. It now grows by mprotect in a range reserved at start-up.
#[test]
fn brk_grows_under_a_seccomp_filter_that_denies_mmap() {
    let exe = compile_snippet("brk_seccomp", "c", BRK_UNDER_SECCOMP, &["-O2", "-g"]);
    let native = run_native(&Cmd::new(&exe));
    assert!(native.status.success() && native.stdout_str() == "mmap: Operation not permitted\nok\n", "{}", native.describe());
    for mode in [&["-q", "--tool=none"][..], &["-q", "--tool=none", "--repeatable=yes"]] {
        let out = run_rtgrind(mode, &Cmd::new(&exe));
        assert!(out.status.success() && out.stdout == native.stdout, "{mode:?}: {}", out.describe());
    }
}

/// rtgrind does not exempt itself from the guest's seccomp filter (the kernel applies it to
/// the whole process, as under Valgrind): where its own `mmap` is denied, here the copy of the
/// code cache a fork needs, it stops with one `unsupported:` line that says why. The fork had
/// failed with ENOMEM for the guest (a filter answering EPERM), and rtgrind died of an internal
/// SIGSEGV (one raising SIGSYS: the skipped `mmap` "returned" its own number, 9).
#[test]
fn rtgrinds_own_mmap_denied_by_a_seccomp_filter_is_said() {
    let exe = compile_snippet("brk_seccomp_fork", "c", BRK_UNDER_SECCOMP, &["-O2", "-g"]);
    for (action, printed) in [("errno", "mmap: Operation not permitted\nok\n"), ("trap", "ok\n")] {
        let native = run_native(&Cmd::new(&exe).args([action, "fork"]));
        assert!(native.status.success() && native.stdout_str() == format!("{printed}child exited 7\n"), "{action}: {}", native.describe());
        for mode in [&["-q", "--tool=none"][..], &["-q", "--tool=none", "--repeatable=yes"]] {
            let out = run_rtgrind(mode, &Cmd::new(&exe).args([action, "fork"]));
            let err = out.stderr_str();
            let said: Vec<&str> = err.lines().filter(|l| l.contains("unsupported: fork at ") && l.contains("seccomp filter")).collect();
            assert!(
                out.status.code() == Some(125)
                    && said.len() == 1
                    && !err.contains("internal error")
                    && !err.contains("panicked")
                    && out.stdout_str() == printed,
                "{action} {mode:?}: {}",
                out.describe()
            );
        }
    }
}

/// A vfork child writes a global before `_exit`, and the parent prints it.
const VFORK_WRITE: &str = r#"#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int shared = 1;

int main(void) {
    pid_t p = vfork();
    if (p == 0) {
        shared = 2;
        _exit(0);
    }
    waitpid(p, 0, 0);
    printf("after vfork the parent sees %d\n", shared);
    return 0;
}
"#;

/// vfork is fork under rtgrind, as under Valgrind (docs/ARCHITECTURE.md, "Syscalls"): the
/// parent waits for the child as natively, but does not share its memory, so a write the
/// child makes before `_exit` (undefined for a program, seen natively) is not seen.
#[test]
fn vfork_is_a_fork_the_parent_does_not_see_the_child_s_writes() {
    let exe = compile_snippet("vfork_write", "c", VFORK_WRITE, &["-O0", "-g"]);
    let native = run_native(&Cmd::new(&exe));
    assert_eq!(native.stdout_str(), "after vfork the parent sees 2\n", "{}", native.describe());
    let out = run_rtgrind(["-q", "--tool=none"], &Cmd::new(&exe));
    assert!(out.status.success() && out.stdout_str() == "after vfork the parent sees 1\n", "{}", out.describe());
}

/// Options: a file an option names that cannot be written is an error before the banner (the
/// error is the only line); `--stop-at` naming a thread that never exists, or an instance the
/// run never reaches, says so at the end.
#[test]
fn option_errors_come_before_the_banner_and_a_stop_point_never_reached_is_said() {
    let exe = compile_snippet("far_write_options", "c", FAR_WRITE, &["-g", "-O0"]);
    for bad in ["--record-schedule=/nonexistent/schedule", "--sched=replay:/nonexistent/schedule", "--log-file=/nonexistent/log"] {
        let out = run_rtgrind([bad], &Cmd::new(&exe).arg("0"));
        let err = out.stderr_str();
        assert!(out.status.code() == Some(2) && err.lines().count() == 1 && err.starts_with("rtgrind: error: "), "{bad}: {}", out.describe());
    }
    let out = run_rtgrind(["-q", "--stop-at=5:100"], &Cmd::new(&exe).arg("0"));
    assert_eq!(out.stderr_str(), format!("=={0}== stop-at: not reached: thread 5 never existed (the program had 1 thread)\n", pid(&out)), "{}", out.describe());
    let out = run_rtgrind(["-q", "--stop-at=0:1000000000"], &Cmd::new(&exe).arg("0"));
    assert!(out.stderr_str().ends_with("stop-at: not reached: the program ended before thread 0 ran 1000000000 blocks\n"), "{}", out.describe());
}

/// Runs one trapping instruction per case named on the command line (each at a label of its
/// own name) under a handler that prints what the kernel said: signal, si_code, si_addr and
/// the ucontext's rip (both relative to the instruction), trap number and error code.
const TRAPS: &str = r#"#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

static sigjmp_buf back;
static const char *at;

static void on_signal(int sig, siginfo_t *si, void *ucv) {
    ucontext_t *uc = ucv;
    long rip = (long)uc->uc_mcontext.gregs[REG_RIP] - (long)at;
    long addr = si->si_addr ? (long)si->si_addr - (long)at : 0;
    printf("sig %d code %d addr %s%ld rip %ld trapno %lld err %#llx\n", sig, si->si_code, si->si_addr ? "at+" : "", addr, rip,
           (long long)uc->uc_mcontext.gregs[REG_TRAPNO], (long long)uc->uc_mcontext.gregs[REG_ERR]);
    siglongjmp(back, 1);
}

#define CASE(name, insn) \
    extern const char name[]; \
    if (!strcmp(which, #name)) { \
        at = name; \
        printf("%s: ", #name); \
        if (!sigsetjmp(back, 1)) { \
            asm volatile(".globl " #name "\n" #name ": " insn); \
            printf("no trap\n"); \
        } \
    }

int main(int argc, char **argv) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, 0);
    sigaction(SIGILL, &sa, 0);
    sigaction(SIGTRAP, &sa, 0);
    sigaction(SIGBUS, &sa, 0);
    setvbuf(stdout, 0, _IONBF, 0);
    for (int i = 1; i < argc; i++) {
        const char *which = argv[i];
        CASE(int41, "int $0x41");
        CASE(int0d, "int $0x0d");
        CASE(int1_long, "int $1");
        CASE(int3, "int3");
        CASE(int3_long, ".byte 0xcd, 0x03");
        CASE(int4, "int $4");
        CASE(int1, "int1");
        CASE(ud2, "ud2");
        CASE(ud1, "ud1 %eax, %eax");
        CASE(hlt, "hlt");
        CASE(cli, "cli");
        CASE(in, "in $0x80, %al");
        CASE(out, "out %al, $0x80");
        CASE(indx, "xor %edx, %edx; inb %dx, %al");
        CASE(rdpmc, "xor %ecx, %ecx; rdpmc");
        CASE(rdmsr, "xor %ecx, %ecx; rdmsr");
        CASE(movcr, "mov %cr0, %rax");
        CASE(swapgs, "swapgs");
        CASE(sysret, "sysretq");
        CASE(xbegin, "xbegin 1f; 1:");
        CASE(xend, "xend");
        CASE(xtest, "xtest");
        CASE(xabort, "xabort $1");
    }
    return 0;
}
"#;

/// The native run's output and rtgrind's (under each of `tools`) for the TRAPS cases
/// `cases`, each compared line by line with the native one.
fn traps_as_natively(name: &str, cases: &[&str], tools: &[&str]) {
    let exe = compile_snippet(name, "c", TRAPS, &["-O0"]);
    let native = run_native(&Cmd::new(&exe).args(cases));
    assert_eq!(native.status.code(), Some(0), "{}", native.describe());
    assert_eq!(native.stdout_str().lines().count(), cases.len(), "{}", native.describe());
    for tool in tools {
        let out = run_rtgrind(["-q", tool], &Cmd::new(&exe).args(cases));
        assert_eq!(out.stdout_str(), native.stdout_str(), "{tool}: {}", out.describe());
        assert_eq!(out.status.code(), Some(0), "{tool}: {}", out.describe());
    }
}

/// `int n` other than `int3` and `int 0x80` raises what it raises natively: a general-protection
/// fault (SIGSEGV, SI_KERNEL, si_addr 0, rip at the instruction, error code the vector's
/// selector) but for the vectors user code may use (`int 4`: a trap, rip after it), and
/// `int1` (icebp) a debug trap (SIGTRAP, TRAP_BRKPT; the rip the host's kernel reports). It
/// ended the run with "unsupported instruction" (exit 125).
#[test]
fn int_n_and_int1_raise_the_signals_the_kernel_gives() {
    let cases = ["int41", "int0d", "int1_long", "int3", "int3_long", "int4", "int1"];
    traps_as_natively("traps_int", &cases, &["--tool=none", "--tool=count", "--tool=taint"]);
}

/// Privileged instructions (`hlt`, `cli`, `in`, `out`, `rdpmc`, `rdmsr`, moves to and from
/// control registers, `swapgs`, `sysret`) raise SIGSEGV (SI_KERNEL) and the undefined ones
/// (`ud2`, `ud1`) SIGILL (ILL_ILLOPN) as natively, with the trap number and error code of
/// the exception in the guest's ucontext (they were a page fault's, 14 and 4, and `swapgs` and
/// `sysret` ended the run with "unsupported instruction").
#[test]
fn privileged_and_undefined_instructions_raise_the_native_signal() {
    let cases = ["ud2", "ud1", "hlt", "cli", "in", "out", "indx", "rdpmc", "rdmsr", "movcr", "swapgs", "sysret"];
    traps_as_natively("traps_privileged", &cases, &["--tool=none", "--tool=count", "--tool=taint"]);
}

/// RTM is hidden from the guest's CPUID (leaf 7 EBX bits 4 and 11, HLE and RTM), and its
/// instructions raise #UD as on a CPU without it: SIGILL, ILL_ILLOPN, si_addr and rip at the
/// instruction, whatever the host has (natively too on this test's hosts without RTM). `xbegin`
/// ended the run with "unsupported instruction" (exit 125); `xtest`, `xend` and `xabort` ran
/// natively (on a host with RTM: `xtest` said "not in a transaction" on a CPU the guest was
/// told has no RTM).
#[test]
fn rtm_instructions_raise_sigill_as_on_a_cpu_without_rtm() {
    let cpuid = compile_snippet("cpuid_rtm", "c", CPUID_RTM, &["-O1"]);
    let out = run_rtgrind(["-q"], &Cmd::new(&cpuid));
    assert_eq!(out.stdout_str(), "hle 0 rtm 0\n", "{}", out.describe());
    let cases = ["xbegin", "xend", "xtest", "xabort"];
    let exe = compile_snippet("traps_rtm", "c", TRAPS, &["-O0"]);
    let expected: String = cases.iter().map(|c| format!("{c}: sig 4 code 2 addr at+0 rip 0 trapno 6 err 0\n")).collect();
    let native = run_native(&Cmd::new(&cpuid));
    if native.stdout_str() == "hle 0 rtm 0\n" {
        assert_eq!(run_native(&Cmd::new(&exe).args(cases)).stdout_str(), expected, "natively, without RTM");
    }
    for tool in ["--tool=none", "--tool=count"] {
        let out = run_rtgrind(["-q", tool], &Cmd::new(&exe).args(cases));
        assert_eq!(out.stdout_str(), expected, "{tool}: {}", out.describe());
    }
}

/// Prints CPUID leaf 7's HLE and RTM bits.
const CPUID_RTM: &str = r#"#include <cpuid.h>
#include <stdio.h>
int main(void) {
    unsigned a, b, c, d;
    __cpuid_count(7, 0, a, b, c, d);
    printf("hle %u rtm %u\n", (b >> 4) & 1, (b >> 11) & 1);
    return 0;
}
"#;

/// i386 system calls through `int $0x80` from a 64-bit program (non-PIE: its buffer below
/// 4 GiB).
const INT80: &str = r#"#include <stdio.h>
#include <unistd.h>
static char msg[] = "hello via int 0x80\n";
int main(void) {
    setvbuf(stdout, 0, _IONBF, 0);
    long r;
    register long r8 asm("r8") = 8, r9 asm("r9") = 9, r10 asm("r10") = 10, r11 asm("r11") = 11;
    long rcx, rdx;
    asm volatile("mov $20, %%eax; mov $0x77, %%ecx; mov $0x66, %%edx; int $0x80; mov %%rcx, %1; mov %%rdx, %2"
                 : "=a"(r), "=r"(rcx), "=r"(rdx), "+r"(r8), "+r"(r9), "+r"(r10), "+r"(r11) : : "rcx", "rdx", "memory");
    printf("getpid %s, r8-r11 %ld %ld %ld %ld, rcx %lx rdx %lx\n", r == getpid() ? "right" : "wrong", r8, r9, r10, r11, rcx, rdx);
    asm volatile("int $0x80" : "=a"(r) : "a"(4), "b"(1), "c"(msg), "d"(sizeof msg - 1) : "memory");
    printf("write %ld\n", r);
    asm volatile("int $0x80" : "=a"(r) : "a"(9999) : "memory");
    printf("no such call %ld\n", r);
    asm volatile("int $0x80" : "=a"(r) : "a"((1L << 32) | 20) : "memory");
    printf("rax's upper half %s\n", r == getpid() ? "ignored" : "used");
    asm volatile("int $0x80" : "=a"(r) : "a"(252), "b"(7) : "memory");
    printf("exit_group returned\n");
    return 1;
}
"#;

/// `int $0x80` makes the kernel's 32-bit system call in a 64-bit process too: getpid, write
/// (a buffer below 4 GiB), an unknown number (-ENOSYS), exit_group, with eax's number (rax's
/// upper half ignored) and every register but rax as it was. It ended the run with
/// "unsupported instruction" (exit 125).
#[test]
fn int_0x80_makes_the_i386_system_call() {
    let exe = compile_snippet("int80", "c", INT80, &["-O1", "-no-pie"]);
    let native = run_native(&Cmd::new(&exe));
    assert_eq!(native.status.code(), Some(7), "{}", native.describe());
    assert!(native.stdout_str().starts_with("getpid right, r8-r11 8 9 10 11, rcx 77 rdx 66\nhello"), "{}", native.describe());
    for tool in ["--tool=none", "--tool=taint"] {
        let out = run_rtgrind(["-q", tool], &Cmd::new(&exe));
        assert_eq!(out.stdout_str(), native.stdout_str(), "{tool}: {}", out.describe());
        assert_eq!(out.status.code(), Some(7), "{tool}: {}", out.describe());
    }
}

/// Writes one byte to a pipe from every 64 KiB below 4 GiB and every 16 MiB of the top of the
/// address space that the program has nothing mapped at (by its `/proc/self/maps`; and not
/// where its stack may grow), with `write`, `writev` and an i386 `write` through `int $0x80`.
const FOREIGN_BUFFERS: &str = r#"#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static unsigned long lo[4096], hi[4096];
static int n;

static unsigned long stack_lo;

/* The program's mappings, and below its stack the 16 MiB it may grow into (natively a copy
   there may grow it; rtgrind's guest stack is mapped whole). */
static int own(unsigned long a) {
    for (int i = 0; i < n; i++) if (a >= lo[i] && a < hi[i]) return 1;
    return a >= stack_lo - (16UL << 20) && a < stack_lo;
}

int main(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    while (n < 4096 && fgets(line, sizeof line, f)) {
        sscanf(line, "%lx-%lx", &lo[n], &hi[n]);
        if (strstr(line, "[stack]")) stack_lo = lo[n];
        n++;
    }
    fclose(f);
    int p[2];
    if (pipe(p)) return 1;
    char c;
    long leaks = 0, probes = 0, vleaks = 0;
    for (int pass = 0; pass < 2; pass++) {
        unsigned long from = pass ? 0x7f0000000000UL : 0x10000, to = pass ? 0x800000000000UL : 0x100000000UL, step = pass ? 1UL << 24 : 1UL << 16;
        for (unsigned long a = from; a < to; a += step) {
            if (own(a)) continue;
            probes++;
            if (write(p[1], (void *)a, 1) == 1) { leaks++; read(p[0], &c, 1); }
            struct iovec v = {(void *)a, 1};
            if (writev(p[1], &v, 1) == 1) { vleaks++; read(p[0], &c, 1); }
        }
    }
    long r;
    asm volatile("int $0x80" : "=a"(r) : "a"(4), "b"(p[1]), "c"(0x12345678), "d"(1) : "memory");
    printf("write from memory the program does not have: %ld of %s probes succeeded, writev %ld; int 0x80 write from 0x12345678: %s\n",
           leaks, probes > 1000 ? "many" : "few", vleaks, r == -EFAULT ? "EFAULT" : r == 1 ? "wrote" : "other");
    return 0;
}
"#;

/// A system call's buffer in rtgrind's memory is EFAULT, as natively where the program has
/// nothing mapped: a non-PIE program's `write` from the code cache's executable view (256 MiB
/// above its code, 0x12345678 among it) or from rtgrind's stack copied rtgrind's bytes out (1029
/// addresses; the i386 `write` from 0x12345678 wrote), in every mode.
#[test]
fn system_call_buffers_in_rtgrinds_memory_are_efault_as_natively() {
    let exe = compile_snippet("foreign_buffers", "c", FOREIGN_BUFFERS, &["-O1", "-no-pie"]);
    let native = run_native(&Cmd::new(&exe));
    assert!(native.stdout_str().contains(": 0 of many probes succeeded, writev 0; int 0x80 write from 0x12345678: EFAULT"), "{}", native.describe());
    for opts in [&["-q", "--tool=none"][..], &["-q", "--tool=taint"], &["-q", "--tool=none", "--repeatable=yes"]] {
        let out = run_rtgrind(opts.iter().copied(), &Cmd::new(&exe));
        assert_eq!(out.stdout_str(), native.stdout_str(), "{opts:?}: {}", out.describe());
    }
}

/// Hands every address the program has nothing mapped at (as `FOREIGN_BUFFERS` finds them:
/// every 1 MiB below 4 GiB and 16 MiB at the top; and every 1 MiB of the 256 MiB at
/// 0x510000000000, where rtgrind puts the writable view of its code cache) to the calls that copy a path, a structure
/// or a sized buffer: as each call's output buffer (`stat`, `fstat`, `lstat`, `newfstatat`,
/// `statx`, `readlink`, `getdents64`, `ioctl` TCGETS and TIOCGPTN on a pseudo-terminal,
/// `uname`, `clock_gettime`) and as a path (`open`, `stat`, `access`, `readlink`, `mkdir`);
/// counts the calls that did not fail with EFAULT.
const FOREIGN_PATHS_AND_STRUCTS: &str = r#"#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static unsigned long lo[4096], hi[4096];
static int n;
static unsigned long stack_lo;

static int own(unsigned long a) {
    for (int i = 0; i < n; i++) if (a >= lo[i] && a < hi[i]) return 1;
    return a >= stack_lo - (16UL << 20) && a < stack_lo;
}

#define CALLS 15
static const char *names[CALLS] = {"stat buf", "fstat buf", "lstat buf", "newfstatat buf", "statx buf", "readlink buf", "getdents64 buf",
                                   "ioctl TCGETS", "ioctl TIOCGPTN", "uname", "clock_gettime", "open path", "stat path", "access path", "readlink path"};
static long not_efault[CALLS];
/* Counts call `i` unless it failed with EFAULT (closing what an open opened). */
#define C(i, call) do { long r_ = (call); if (r_ >= 0 || errno != EFAULT) not_efault[i]++; if (i == 11 && r_ >= 0) close(r_); } while (0)

int main(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    while (n < 4096 && fgets(line, sizeof line, f)) {
        sscanf(line, "%lx-%lx", &lo[n], &hi[n]);
        if (strstr(line, "[stack]")) stack_lo = lo[n];
        n++;
    }
    fclose(f);
    int dir = open("/", O_RDONLY | O_DIRECTORY);
    int pty = posix_openpt(O_RDWR | O_NOCTTY);
    if (dir < 0 || pty < 0) return 1;
    char buf[256];
    long probes = 0;
    unsigned long from[] = {0x10000, 0x7f0000000000UL, 0x510000000000UL}, to[] = {0x100000000UL, 0x800000000000UL, 0x510010000000UL};
    unsigned long step[] = {1UL << 20, 1UL << 24, 1UL << 20};
    for (int pass = 0; pass < 3; pass++) {
        for (unsigned long a = from[pass]; a < to[pass]; a += step[pass]) {
            if (own(a)) continue;
            probes++;
            void *p = (void *)a;
            lseek(dir, 0, SEEK_SET);
            C(0, syscall(SYS_stat, "/", p));
            C(1, syscall(SYS_fstat, 0, p));
            C(2, syscall(SYS_lstat, "/", p));
            C(3, syscall(SYS_newfstatat, AT_FDCWD, "/", p, 0));
            C(4, syscall(SYS_statx, AT_FDCWD, "/", 0, 0x7ff, p));
            C(5, syscall(SYS_readlink, "/proc/self/cwd", p, 64));
            C(6, syscall(SYS_getdents64, dir, p, 4096));
            C(7, syscall(SYS_ioctl, pty, TCGETS, p));
            C(8, syscall(SYS_ioctl, pty, TIOCGPTN, p));
            C(9, syscall(SYS_uname, p));
            C(10, syscall(SYS_clock_gettime, CLOCK_MONOTONIC, p));
            C(11, syscall(SYS_open, p, O_RDONLY));
            C(12, syscall(SYS_stat, p, buf));
            C(13, syscall(SYS_access, p, F_OK));
            C(14, syscall(SYS_readlink, p, buf, sizeof buf));
        }
    }
    printf("%s probes\n", probes > 1000 ? "many" : "few");
    for (int i = 0; i < CALLS; i++) printf("%s: %ld not EFAULT\n", names[i], not_efault[i]);
    return 0;
}
"#;

/// The calls that copy a path, a structure or a sized buffer fail with EFAULT when it lies in
/// rtgrind's memory, as natively where nothing is mapped: `stat` and the rest wrote their
/// structure over rtgrind's translated code, and a path there was read from it (ENOENT).
#[test]
fn paths_and_structures_in_rtgrinds_memory_are_efault_as_natively() {
    let exe = compile_snippet("foreign_paths", "c", FOREIGN_PATHS_AND_STRUCTS, &["-O1", "-no-pie"]);
    let native = run_native(&Cmd::new(&exe));
    let out = native.stdout_str();
    assert!(
        out.starts_with("many probes\n") && out.lines().skip(1).all(|l| l.ends_with(": 0 not EFAULT")) && out.lines().count() == 16,
        "{}",
        native.describe()
    );
    for opts in [&["-q", "--tool=none"][..], &["-q", "--tool=none", "--repeatable=yes"]] {
        let rt = run_rtgrind(opts.iter().copied(), &Cmd::new(&exe));
        assert_eq!(rt.stdout_str(), native.stdout_str(), "{opts:?}: {}", rt.describe());
    }
}

/// `write` from System V shared memory.
const SHM_WRITE: &str = r#"#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <unistd.h>
int main(void) {
    int id = shmget(IPC_PRIVATE, 8192, IPC_CREAT | 0600);
    char *p = shmat(id, 0, 0);
    strcpy(p, "from shared memory\n");
    ssize_t w = write(1, p, strlen(p));
    shmdt(p);
    shmctl(id, IPC_RMID, 0);
    printf("wrote %zd\n", w);
    return 0;
}
"#;

/// Memory the guest attached with `shmat` is the guest's: a `write` from it is not taken for
/// rtgrind's memory (EFAULT) and the mapping is listed in its maps as natively.
#[test]
fn system_call_buffers_in_shared_memory_are_the_guests() {
    let exe = compile_snippet("shm_write", "c", SHM_WRITE, &["-O1"]);
    let native = run_native(&Cmd::new(&exe));
    assert_eq!(native.stdout_str(), "from shared memory\nwrote 19\n", "{}", native.describe());
    let out = run_rtgrind(["-q"], &Cmd::new(&exe));
    crate::common::assert_same(&native, &out);
}

/// The process's own `/proc` files reached relative to a descriptor of `/proc` or
/// `/proc/self`, or from a working directory there; and rtgrind's descriptors (from the
/// guest's descriptor limit up) by path (`stat`, `readlink`, `fstatat` and `openat` from a
/// descriptor of `/proc/self/fd`), `poll`, `ppoll` and `select`, each compared with a closed
/// descriptor's answer (natively: past the limit).
const PROC_RELATIVE: &str = r#"#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <unistd.h>

static char *slurp(int fd, size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    ssize_t r;
    while (fd >= 0 && (r = read(fd, b + n, cap - n)) > 0) {
        n += r;
        if (n == cap) b = realloc(b, cap *= 2);
    }
    if (fd >= 0) close(fd);
    *len = fd < 0 ? (size_t)-1 : n;
    return b;
}

static void same(const char *what, int fd1, int fd2) {
    size_t n1, n2;
    char *a = slurp(fd1, &n1), *b = slurp(fd2, &n2);
    printf("%s: %s\n", what, n1 == n2 && n1 != (size_t)-1 && !memcmp(a, b, n1) ? "same" : "differ");
}

int main(int argc, char **argv) {
    setvbuf(stdout, 0, _IONBF, 0);
    int self = open("/proc/self", O_RDONLY | O_DIRECTORY);
    int proc = open("/proc", O_RDONLY | O_DIRECTORY);
    same("openat(/proc/self, maps)", openat(self, "maps", O_RDONLY), open("/proc/self/maps", O_RDONLY));
    same("openat(/proc, self/auxv)", openat(proc, "self/auxv", O_RDONLY), open("/proc/self/auxv", O_RDONLY));
    size_t n;
    char *cmd = slurp(openat(proc, "self/cmdline", O_RDONLY), &n);
    for (size_t i = 0; i < n; i++) if (!cmd[i]) cmd[i] = ' ';
    printf("openat(/proc, self/cmdline): %.*s\n", (int)n, cmd);
    char pid[32];
    snprintf(pid, sizeof pid, "%d/environ", getpid());
    same("openat(/proc, PID/environ)", openat(proc, pid, O_RDONLY), open("/proc/self/environ", O_RDONLY));
    if (chdir("/proc/self") == 0) same("chdir(/proc/self); open(auxv)", open("auxv", O_RDONLY), open("/proc/self/auxv", O_RDONLY));
    char link[256];
    ssize_t l = readlinkat(self, "exe", link, sizeof link);
    char link2[256];
    ssize_t l2 = readlink("/proc/self/exe", link2, sizeof link2);
    printf("readlinkat(/proc/self, exe): %s\n", l == l2 && !memcmp(link, link2, l) ? "same" : "differ");
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    int fddir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY);
    for (int fd = rl.rlim_cur - 8; fd < (int)rl.rlim_cur + 8; fd++) {
        /* Only the closed ones: under rtgrind those at and above the guest's limit are its own. */
        if (fcntl(fd, F_GETFD) >= 0) continue;
        char p[64], buf[64];
        snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
        struct stat st;
        int s1 = stat(p, &st), e1 = errno;
        int s2 = lstat(p, &st), e2 = errno;
        ssize_t r = readlink(p, buf, sizeof buf);
        int e3 = errno;
        char name[16];
        snprintf(name, sizeof name, "%d", fd);
        int s4 = fstatat(fddir, name, &st, 0), e4 = errno;
        int s5 = faccessat(fddir, name, F_OK, 0), e5 = errno;
        int o6 = openat(fddir, name, O_RDONLY), e6 = errno;
        struct pollfd pf[2] = {{fd, POLLIN, 0}, {0, 0, 0}};
        int pr = poll(pf, 2, 1000);
        struct timespec ts = {1, 0};
        int ppr = ppoll(pf, 1, &ts, 0);
        unsigned long *set = calloc(rl.rlim_cur / 64 + 2, 8);
        set[fd / 64] |= 1UL << (fd % 64);
        struct timeval tv = {0, 0};
        /* (Only from the limit up: below it a closed descriptor is inside rtgrind's larger
           descriptor table, EBADF, where natively it is past the program's, ignored.) */
        if (fd >= (int)rl.rlim_cur) {
            int sr = select(fd + 1, (fd_set *)set, 0, 0, &tv), es = errno;
            printf("select %d %s; ", sr, sr < 0 ? strerror(es) : "");
        }
        free(set);
        printf("fd limit%+d: stat %d %s, lstat %d %s, readlink %zd %s, fstatat %d %s, faccessat %d %s, openat %d %s, poll %d revents %#x, ppoll %d\n",
               fd - (int)rl.rlim_cur, s1, strerror(e1), s2, strerror(e2), r, strerror(e3), s4, strerror(e4), s5, strerror(e5), o6, strerror(e6), pr, pf[0].revents, ppr);
    }
    return 0;
}
"#;

/// Reads the process's own `/proc` files by paths with `.` and `..` and says whether each is
/// what the plain path gives.
const PROC_DOT_DOT: &str = r#"#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char a[1 << 16], b[1 << 16];

static long slurp(const char *path, char *buf) {
    int fd = open(path, O_RDONLY);
    long n = 0, r;
    if (fd < 0) return -1;
    while ((r = read(fd, buf + n, (1 << 16) - n)) > 0) n += r;
    close(fd);
    return n;
}

int main(void) {
    char odd[128], plain[128];
    /* (Not smaps: its counts change as the reads touch the buffers.) */
    const char *files[] = {"maps", "cmdline", "auxv", "environ"};
    for (int i = 0; i < 4; i++) {
        const char *forms[] = {"/proc/self/../self/%s", "/proc/./self/task/%d/../%d/%s", "/proc/self/fd/../%s", "/proc/thread-self/../%d/%s", "/proc/../proc/self/fdinfo/../%s"};
        for (int f = 0; f < 5; f++) {
            if (f == 1 || f == 3) {
                if (f == 1) snprintf(odd, sizeof odd, forms[f], gettid(), gettid(), files[i]);
                else snprintf(odd, sizeof odd, forms[f], gettid(), files[i]);
                snprintf(plain, sizeof plain, "/proc/self/task/%d/%s", gettid(), files[i]);
            } else {
                snprintf(odd, sizeof odd, forms[f], files[i]);
                snprintf(plain, sizeof plain, "/proc/self/%s", files[i]);
            }
            /* (Both opened before either is read: maps as at the same moment.) */
            int fo = open(odd, O_RDONLY), fp = open(plain, O_RDONLY);
            long n1 = 0, n2 = 0, r;
            while (fo >= 0 && (r = read(fo, a + n1, sizeof a - n1)) > 0) n1 += r;
            while (fp >= 0 && (r = read(fp, b + n2, sizeof b - n2)) > 0) n2 += r;
            printf("form %d %s: %s\n", f, files[i], fo >= 0 && n1 == n2 && !memcmp(a, b, n1) ? "same" : "differ");
            close(fo);
            close(fp);
        }
    }
    char l1[256], l2[256];
    ssize_t r1 = readlink("/proc/self/fd/../exe", l1, sizeof l1), r2 = readlink("/proc/self/exe", l2, sizeof l2);
    printf("readlink exe: %s\n", r1 == r2 && r1 > 0 && !memcmp(l1, l2, r1) ? "same" : "differ");
    return 0;
}
"#;

/// The process's own `/proc` files named with `..` (`/proc/self/../self/maps`,
/// `/proc/./self/task/TID/../TID/maps`, `/proc/self/fd/../maps` ...) are the guest's, as by
/// their plain names (they were rtgrind's: its mappings, its command line and auxv).
#[test]
fn proc_paths_with_dot_dot_are_the_guests_own_files() {
    let exe = compile_snippet("proc_dot_dot", "c", PROC_DOT_DOT, &["-O1"]);
    let native = run_native(&Cmd::new(&exe));
    let out = native.stdout_str();
    assert!(out.lines().count() == 21 && !out.contains("differ"), "{}", native.describe());
    let rt = run_rtgrind(["-q"], &Cmd::new(&exe));
    assert_eq!(rt.stdout_str(), out, "{}", rt.describe());
}

/// `openat(fd of /proc/self, "maps")`, `openat(fd of /proc, "self/cmdline")` and a relative
/// open from `/proc/self` give the guest's files, as their absolute paths do (they gave
/// rtgrind's: its command line, its mappings); rtgrind's descriptors are not found by any
/// path, `poll` says POLLNVAL for them and `select` ignores them as natively a descriptor past
/// the process's table (they were found, polled and selected).
#[test]
fn proc_paths_relative_to_a_descriptor_and_rtgrinds_descriptors_by_path_poll_and_select() {
    let exe = compile_snippet("proc_relative", "c", PROC_RELATIVE, &["-O1"]);
    let native = run_native(&Cmd::new(&exe).args(["a", "b"]));
    assert_eq!(native.status.code(), Some(0), "{}", native.describe());
    assert!(native.stdout_str().contains("self/cmdline): "), "{}", native.describe());
    for tool in ["--tool=none", "--tool=taint"] {
        let out = run_rtgrind(["-q", tool], &Cmd::new(&exe).args(["a", "b"]));
        let name = tool.trim_start_matches("--tool=");
        if let Err(e) = crate::common::compare_tool(&native, &out, name) {
            panic!("{tool}: {e}");
        }
    }
}

/// Far transfers, segment loads, the fs and gs bases and `sysenter`, each case in a handler
/// that prints the signal it raised (as TRAPS). Far pointers are read with REX.W (m16:64 on
/// Intel CPUs, m16:32 on AMD's, which then take the selector from the offset's upper bytes:
/// both as natively).
const SEGMENTS: &str = r#"#define _GNU_SOURCE
#include <asm/prctl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static sigjmp_buf back;
static const char *at;

static void on_signal(int sig, siginfo_t *si, void *ucv) {
    ucontext_t *uc = ucv;
    long rip = (long)uc->uc_mcontext.gregs[REG_RIP] - (long)at;
    long addr = si->si_addr ? (long)si->si_addr - (long)at : 0;
    printf("sig %d code %d addr %s%ld rip %ld trapno %lld err %#llx", sig, si->si_code, si->si_addr ? "at+" : "", addr, rip,
           (long long)uc->uc_mcontext.gregs[REG_TRAPNO], (long long)uc->uc_mcontext.gregs[REG_ERR]);
    siglongjmp(back, 1);
}

struct far { uint64_t off; uint16_t sel; } __attribute__((packed));
static struct far fp;
struct far32 { uint32_t off; uint16_t sel; } __attribute__((packed));
static struct far32 fp32 = {0, 0x33};
static uint64_t buf[4];
static uint64_t area[8] = {1, 2, 3, 4, 5, 6, 7, 8};
uint64_t global = 0x40;

#define CASE(name, insn, ...) \
    extern const char name[]; \
    if (!strcmp(which, #name)) { \
        at = name; \
        printf("%s: ", #name); \
        if (!sigsetjmp(back, 1)) { \
            asm volatile(".globl " #name "\n" #name ": " insn : __VA_ARGS__); \
            printf("no trap"); \
        } \
        printf(" r %lx r2 %lx\n", r, r2); \
    }

/* An iretq frame: ss, rsp, rflags, cs, rip. */
#define IRET(cs, ss) "push $" #ss "; lea 8(%%rsp), %%rax; push %%rax; pushfq; push $" #cs "; lea 1f(%%rip), %%rax; push %%rax; iretq; 1:"
#define LRET(cs) "push $" #cs "; lea 1f(%%rip), %%rax; push %%rax; lretq; 1:"
#define GS(sel) "mov $" #sel ", %%eax; mov %%eax, %%gs; mov %%gs, %0; rdgsbase %1; xor %%eax, %%eax; mov %%eax, %%gs"

int main(int argc, char **argv) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, 0);
    sigaction(SIGILL, &sa, 0);
    setvbuf(stdout, 0, _IONBF, 0);
    for (int i = 1; i < argc; i++) {
        const char *which = argv[i];
        unsigned long r = 0, r2 = 0;
        fp.sel = 0x33;
        CASE(iret, IRET(0x33, 0x2b), :: "rax", "memory");
        CASE(iret_cs08, IRET(0x08, 0x2b), :: "rax", "memory");
        CASE(iret_cs08_ss0, IRET(0x08, 0), :: "rax", "memory");
        CASE(iret_ss0, IRET(0x33, 0), :: "rax", "memory");
        CASE(iret_ss33, IRET(0x33, 0x33), :: "rax", "memory");
        CASE(iret_flags, "pushfq; orq $0x801, (%%rsp); pop %%rcx; push $0x2b; lea 8(%%rsp), %%rax; push %%rax; push %%rcx; push $0x33; lea 1f(%%rip), %%rax; push %%rax;"
                         "iretq; 1: seto %b0; setc %b1; movzbl %b0, %k0; movzbl %b1, %k1", "=r"(r), "=r"(r2) :: "rax", "rcx", "memory");
        CASE(lret, LRET(0x33), :: "rax", "memory");
        CASE(lret_31, LRET(0x31), :: "rax", "memory");
        CASE(lret_08, LRET(0x08), :: "rax", "memory");
        CASE(lret_2b, LRET(0x2b), :: "rax", "memory");
        CASE(lret_0, LRET(0), :: "rax", "memory");
        CASE(lret_imm, "lea 1f(%%rip), %%rax; mov %%rsp, %%rcx; push $0x33; push %%rax; lretq $0; 1: sub %%rsp, %%rcx; mov %%rcx, %0", "=r"(r) :: "rax", "rcx", "memory");
        CASE(lret_32, "lea 1f(%%rip), %%rax; push $0x33; push %%rax; mov 8(%%rsp), %%ecx; mov %%ecx, 4(%%rsp); lretl; 1: add $8, %%rsp", :: "rax", "rcx", "memory");
        CASE(ljmp, "lea 1f(%%rip), %%rax; mov %%rax, fp(%%rip); rex.W ljmp *fp(%%rip); 1:", :: "rax", "memory");
        CASE(lcall, "lea 1f(%%rip), %%rax; mov %%rax, fp(%%rip); rex.W lcall *fp(%%rip); jmp 2f; 1: lretq; 2:", :: "rax", "memory");
        CASE(ljmp32, "lea 1f(%%rip), %%eax; mov %%eax, fp32(%%rip); ljmp *fp32(%%rip); 1:", :: "rax", "memory");
        CASE(lcall32, "lea 1f(%%rip), %%eax; mov %%eax, fp32(%%rip); mov %%rsp, %%rcx; lcall *fp32(%%rip); jmp 2f; 1: sub %%rsp, %%rcx; mov %%rcx, %0; lretl; 2:", "=r"(r) :: "rax", "rcx", "memory");
        CASE(lss, "movq $5, buf(%%rip); movw $0x2b, buf+8(%%rip); rex.W lss buf(%%rip), %%eax; mov %%rax, %0", "=r"(r) :: "rax", "memory");
        CASE(lfs0, "rdfsbase %%rcx; movq $0, buf(%%rip); movw $0, buf+8(%%rip); rex.W lfs buf(%%rip), %%eax; rdfsbase %0; wrfsbase %%rcx", "=r"(r) :: "rax", "rcx", "memory");
        CASE(lgs2b, "movq $5, buf(%%rip); movw $0x2b, buf+8(%%rip); rex.W lgs buf(%%rip), %%eax; rdgsbase %0; mov %%rax, %1; mov %%gs, %%eax; xor %%eax, %%eax; mov %%eax, %%gs",
             "=r"(r), "=r"(r2) :: "rax", "memory");
        CASE(rdfsbase, "rdfsbase %0; mov %%fs:0, %1; sub %1, %0; xor %1, %1", "=r"(r), "=r"(r2));
        CASE(wrfsbase, "rdfsbase %%rcx; wrfsbase %1; mov %%fs:8, %0; wrfsbase %%rcx", "=r"(r) : "r"(area) : "rcx");
        CASE(rdgsbase, "rdgsbase %0", "=r"(r));
        CASE(wrgsbase, "wrgsbase %2; rdgsbase %0; mov %%gs:8, %1; sub %2, %0; xor %%eax, %%eax; wrgsbase %%rax", "=&r"(r), "=&r"(r2) : "r"(area) : "rax");
        CASE(wrgsbase32, "mov $0x1234, %%eax; wrgsbase %%eax; rdgsbase %0; xor %%eax, %%eax; wrgsbase %%rax", "=r"(r) :: "rax");
        CASE(gs_null_read, "mov %%gs:0, %0", "=r"(r));
        CASE(gs_sel, "mov %%gs, %0", "=r"(r));
        CASE(gs_2b, GS(0x2b), "=r"(r), "=r"(r2) :: "rax");
        CASE(gs_2a, GS(0x2a), "=r"(r), "=r"(r2) :: "rax");
        CASE(gs_33, GS(0x33), "=r"(r), "=r"(r2) :: "rax");
        CASE(gs_7b, GS(0x7b), "=r"(r), "=r"(r2) :: "rax");
        CASE(gs_10, GS(0x10), "=r"(r), "=r"(r2) :: "rax");
        CASE(gs_63, GS(0x63), "=r"(r), "=r"(r2) :: "rax");
        CASE(gs_04, GS(0x04), "=r"(r), "=r"(r2) :: "rax");
        CASE(gs_null, "wrgsbase %1; xor %%eax, %%eax; mov %%eax, %%gs; rdgsbase %0", "=r"(r) : "r"(area) : "rax");
        CASE(gs_push_pop, "mov $0x2b, %%eax; mov %%eax, %%gs; push %%gs; pop %0; push $0; pop %%gs; mov %%gs, %1", "=r"(r), "=r"(r2) :: "rax", "memory");
        /* String instructions reading through gs, and gs operands with 32-bit addressing (the
           address wraps at 4 GiB before the base is added; 32-bit registers' upper halves
           are not used). */
#define WITH_AREA(insn) "wrgsbase %2;" insn "; xor %%ecx, %%ecx; wrgsbase %%rcx"
        CASE(gs_lods, WITH_AREA("mov $16, %%esi; lodsq %%gs:(%%rsi), %%rax; mov %%rsi, %1; mov %%rax, %0"), "=&r"(r), "=&r"(r2) : "r"(area) : "rax", "rsi", "rcx");
        CASE(gs_lodsb_down, WITH_AREA("std; mov $24, %%esi; mov $-1, %%rax; lodsb %%gs:(%%rsi), %%al; cld; mov %%rsi, %1; mov %%rax, %0"), "=&r"(r), "=&r"(r2) : "r"(area) : "rax", "rsi", "rcx");
        CASE(gs_rep_movs, WITH_AREA("mov $8, %%esi; lea buf(%%rip), %%rdi; mov $20, %%ecx; rep movsb %%gs:(%%rsi), %%es:(%%rdi); mov %%rsi, %0; mov buf+8(%%rip), %1"), "=&r"(r), "=&r"(r2) : "r"(area) : "rsi", "rdi", "rcx", "memory");
        CASE(gs_repe_cmps, WITH_AREA("xor %%esi, %%esi; lea area+8(%%rip), %%rdi; mov $24, %%ecx; repe cmpsb %%es:(%%rdi), %%gs:(%%rsi); pushfq; pop %1; and $0x8d5, %1; shl $32, %%rsi; lea (%%rsi,%%rcx), %0"), "=&r"(r), "=&r"(r2) : "r"(area) : "rsi", "rdi", "rcx", "cc");
        CASE(gs_repne_cmps, WITH_AREA("xor %%esi, %%esi; lea area+8(%%rip), %%rdi; mov $24, %%ecx; repne cmpsq %%es:(%%rdi), %%gs:(%%rsi); pushfq; pop %1; and $0x8d5, %1; shl $32, %%rsi; lea (%%rsi,%%rcx), %0"), "=&r"(r), "=&r"(r2) : "r"(area) : "rsi", "rdi", "rcx", "cc");
        CASE(gs_lods_fault, WITH_AREA("mov $1, %%esi; shl $46, %%rsi; lodsb %%gs:(%%rsi), %%al"), "=&r"(r), "=&r"(r2) : "r"(area) : "rax", "rsi", "rcx");
        CASE(gs_addr32_lods, WITH_AREA("mov $0xabcd000000000010, %%rsi; lodsq %%gs:(%%esi), %%rax; mov %%rsi, %1; mov %%rax, %0"), "=&r"(r), "=&r"(r2) : "r"(area) : "rax", "rsi", "rcx");
        CASE(gs_addr32, WITH_AREA("mov $0x12345678fffffff8, %%rbx; mov $3, %%edx; mov %%gs:16(%%ebx), %0; addq $5, %%gs:(%%ebx,%%edx,8); mov area+16(%%rip), %1"), "=&r"(r), "=&r"(r2) : "r"(area) : "rbx", "rdx", "rcx", "memory", "cc");
        if (!strcmp(which, "gs_operands")) {
            syscall(SYS_arch_prctl, ARCH_SET_GS, area);
            uint64_t k = 2, b = 8, g = 0;
            asm volatile("mov %%gs:8(,%1,8), %0" : "=r"(r) : "r"(k));
            asm volatile("addq $100, %%gs:(%0,%1,8)" : : "r"(b), "r"(k) : "memory", "cc");
            asm volatile("cmpq $104, %%gs:24; sete %b0; movzbl %b0, %k0" : "=r"(r2) :: "cc");
            asm volatile("lea 1f(%%rip), %%rax; mov %%rax, %%gs:32; call *%%gs:(%1); jmp 2f; 1: mov $7, %0; ret; 2:" : "=&r"(g) : "r"(32L) : "rax", "memory");
            syscall(SYS_arch_prctl, ARCH_GET_GS, &b);
            printf("gs_operands: %lu %lu %lu %lu get_gs %s\n", r, r2, area[3], g, b == (uint64_t)area ? "area" : "other");
            asm volatile("xor %%eax, %%eax; mov %%eax, %%gs; movq %%gs:global(%%rip), %0" : "=r"(r) :: "rax");
            printf("gs_operands: rip-relative %lx\n", r);
        }
        CASE(sysenter, "sysenter");
    }
    return 0;
}
"#;

/// Whether the host CPU is AMD's (`sysenter` is #UD in 64-bit mode there; on Intel's it is
/// the kernel's 32-bit entry, which rtgrind does not run).
fn host_is_amd() -> bool {
    std::fs::read_to_string("/proc/cpuinfo")
        .is_ok_and(|c| c.lines().any(|l| l.starts_with("vendor_id") && (l.contains("AuthenticAMD") || l.contains("HygonGenuine"))))
}

/// `iret`, far returns, far jumps and calls through a far pointer, `lss`/`lfs`/`lgs`, loads
/// and reads of the gs selector, `rdfsbase`/`wrfsbase`/`rdgsbase`/`wrgsbase`, gs-relative
/// operands (the guest's gs base: from `arch_prctl`, `wrgsbase` or a selector) and, on AMD,
/// `sysenter` behave as natively: the same values, or the same signal with the same code, trap
/// number and error code (a #GP's selector), under every tool that changes translation; so do
/// `lods`/`movs`/`cmps` through gs (with `rep`, `repe`, `repne`, backwards, faulting, with
/// 32-bit addressing) and gs operands with 32-bit addressing (the address wrapped at 4 GiB).
/// They ended the run with "unsupported instruction" (exit 125).
#[test]
fn far_transfers_segment_loads_and_gs_operands_run_as_natively() {
    let mut cases = vec![
        "iret",
        "iret_cs08",
        "iret_cs08_ss0",
        "iret_ss0",
        "iret_ss33",
        "iret_flags",
        "lret",
        "lret_31",
        "lret_08",
        "lret_2b",
        "lret_0",
        "lret_imm",
        "ljmp",
        "lcall",
        "ljmp32",
        "lcall32",
        "lss",
        "lfs0",
        "lgs2b",
        "rdfsbase",
        "wrfsbase",
        "rdgsbase",
        "wrgsbase",
        "wrgsbase32",
        "gs_null_read",
        "gs_sel",
        "gs_2b",
        "gs_2a",
        "gs_33",
        "gs_7b",
        "gs_10",
        "gs_63",
        "gs_04",
        "gs_null",
        "gs_push_pop",
        "gs_operands",
        "gs_lods",
        "gs_lodsb_down",
        "gs_rep_movs",
        "gs_repe_cmps",
        "gs_repne_cmps",
        "gs_lods_fault",
        "gs_addr32_lods",
        "gs_addr32",
    ];
    if host_is_amd() {
        cases.push("sysenter");
    }
    let exe = compile_snippet("segments", "c", SEGMENTS, &["-O0", "-no-pie"]);
    let native = run_native(&Cmd::new(&exe).args(&cases));
    assert_eq!(native.status.code(), Some(0), "{}", native.describe());
    assert_eq!(native.stdout_str().lines().count(), cases.len() + 1, "{}", native.describe());
    for tool in ["--tool=none", "--tool=count", "--tool=taint"] {
        let out = run_rtgrind(["-q", tool], &Cmd::new(&exe).args(&cases));
        let name = tool.trim_start_matches("--tool=");
        if let Err(e) = crate::common::compare_tool(&native, &out, name) {
            panic!("{tool}: {e}");
        }
    }
}

/// What CPUID leaf 7 (AVX-512F), `xgetbv` and leaf 0xd say of the state components, and
/// whether `xsave` and `xsavec` of every component stay within the size leaf 0xd reports
/// (lazily bound: ld.so's trampoline saves the vector state by that size at each first call).
const XSTATE: &str = r#"#include <cpuid.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long xgetbv(unsigned ecx) {
    unsigned lo, hi;
    asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(ecx));
    return (unsigned long long)hi << 32 | lo;
}

/* Whether the save instruction (0: xsave, 1: xsavec) wrote past `size` bytes. */
static int past(int compact, unsigned size) {
    unsigned char *area = aligned_alloc(64, size + 4096);
    memset(area, 0, 64 * 10); /* a zero header for xsavec */
    memset(area + size, 0x5a, 4096);
    asm volatile("vpcmpeqd %%ymm1, %%ymm1, %%ymm1" ::: "xmm1");
    if (compact)
        asm volatile("xsavec64 (%0)" : : "r"(area), "a"(-1), "d"(-1) : "memory");
    else
        asm volatile("xsave64 (%0)" : : "r"(area), "a"(-1), "d"(-1) : "memory");
    int wrote = 0;
    for (unsigned i = size; i < size + 4096; i++)
        wrote |= area[i] != 0x5a;
    free(area);
    return wrote;
}

static sigjmp_buf back;
static void on_segv(int sig) { siglongjmp(back, sig); }

int main(void) {
    unsigned a, b, c, d;
    __cpuid_count(7, 0, a, b, c, d);
    unsigned avx512f = (b >> 16) & 1;
    unsigned long long xcr0 = xgetbv(0);
    __cpuid_count(0xd, 0, a, b, c, d);
    unsigned long long supported = (unsigned long long)d << 32 | a;
    unsigned size = b, all = c;
    unsigned need = 576; /* legacy area and header */
    for (int i = 2; i < 32; i++)
        if (xcr0 >> i & 1) {
            unsigned sa, sb, sc, sd;
            __cpuid_count(0xd, i, sa, sb, sc, sd);
            if (sa + sb > need)
                need = sa + sb;
        }
    __cpuid_count(0xd, 1, a, b, c, d);
    int has_xsavec = a >> 1 & 1;
    printf("avx512f %u, xcr0 avx512 %#llx, 0xd.0 avx512 %#llx\n", avx512f, xcr0 & 0xe0, supported & 0xe0);
    printf("enabled within supported %d, size covers enabled %d, within all %d\n", (xcr0 & ~supported) == 0, size >= need, size <= all);
    printf("xsave past size %d, xsavec past size %d\n", past(0, size), has_xsavec ? past(1, size) : 0);
    signal(SIGSEGV, on_segv);
    int sig = sigsetjmp(back, 1);
    if (!sig)
        xgetbv(0x4711);
    printf("xgetbv(0x4711): signal %d\n", sig);
    return 0;
}
"#;

/// The state components the guest sees agree: with AVX-512 hidden from leaf 7, `xgetbv` shows
/// XCR0 without its state (bits 5-7) and leaf 0xd does not list it; the size leaf 0xd
/// reports covers every enabled component's sub-leaf and what `xsave`/`xsavec` of every
/// component write (the host's, however much more it enables); glibc's lazy binding works;
/// an undefined `xgetbv` register raises SIGSEGV. (`xgetbv` ran natively: on a host with
/// AVX-512, XCR0 showed its state to a guest told there is no AVX-512. This host has none,
/// so the test fails without the feature only there; `cpuid::tests` checks leaf 0xd's
/// masking on an AVX-512 host's values.)
#[test]
fn xgetbv_and_cpuid_leaf_0xd_agree_with_hidden_avx512() {
    let exe = compile_snippet("xstate", "c", XSTATE, &["-O1", "-Wl,-z,lazy"]);
    let expected = "avx512f 0, xcr0 avx512 0, 0xd.0 avx512 0\nenabled within supported 1, size covers enabled 1, within all 1\n\
                    xsave past size 0, xsavec past size 0\nxgetbv(0x4711): signal 11\n";
    let native = run_native(&Cmd::new(&exe));
    if native.stdout_str().starts_with("avx512f 0,") {
        assert_eq!(native.stdout_str(), expected, "{}", native.describe());
    }
    for tool in ["--tool=none", "--tool=taint"] {
        let out = run_rtgrind(["-q", tool], &Cmd::new(&exe));
        assert_eq!(out.stdout_str(), expected, "{tool}: {}", out.describe());
    }
}

/// Saves of the x87 environment after x87 instructions, and where their last-instruction
/// pointer (FIP) points: zero, at the instruction's label, or elsewhere.
const X87_POINTER: &str = r#"#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

extern char at_fldpi[], at_fdiv[], at_fld1[];
static uint64_t frame_fip;

static void on_usr1(int sig, siginfo_t *si, void *ucv) {
    (void)sig, (void)si;
    frame_fip = ((ucontext_t *)ucv)->uc_mcontext.fpregs->rip;
}

/* A saved pointer: zero, at the label (+ offset), or elsewhere (the low 32 bits only for
   the 32-bit formats). */
static const char *where(const unsigned char *area, int off, int wide, const char *label) {
    static char buf[8][32];
    static int n;
    uint64_t v = 0, l = (uintptr_t)label;
    memcpy(&v, area + off, wide ? 8 : 4);
    if (!wide)
        l &= 0xffffffff;
    char *b = buf[n++ % 8];
    if (v == 0)
        return "0";
    if (v - l < 64)
        snprintf(b, 32, "at+%d", (int)(v - l));
    else
        snprintf(b, 32, "elsewhere");
    return b;
}

__attribute__((noinline)) static void stenv(unsigned char *env) {
    asm volatile("fnstenv %0" : "=m"(*(unsigned char(*)[28])env));
}

int main(void) {
    unsigned char env[28], save[108], fx[512] __attribute__((aligned(16))), fx64[512] __attribute__((aligned(16)));
    static unsigned char xs[4096] __attribute__((aligned(64)));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_usr1;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, 0);

    asm volatile("fninit; .globl at_fldpi\nat_fldpi: fldpi; fnstenv %0; fnsave %1; frstor %1; fxsave %2; fxsave64 %3; fstp %%st(0)"
                 : "=m"(env), "=m"(save), "=m"(fx), "=m"(fx64) :: "memory");
    printf("fldpi: fnstenv %s, fnsave %s, fxsave %s, fxsave64 %s\n", where(env, 12, 0, at_fldpi), where(save, 12, 0, at_fldpi),
           where(fx, 8, 0, at_fldpi), where(fx64, 8, 1, at_fldpi));

    /* An unmasked zero divide left pending. */
    unsigned short cw = 0x037b;
    asm volatile("fninit; fldcw %4; fld1; fldz; .globl at_fdiv\nat_fdiv: fdivrp; fnstenv %0; fxsave %1; fxsave64 %2; xor %%edx, %%edx; mov $1, %%eax; xsave64 %3"
                 : "=m"(env), "=m"(fx), "=m"(fx64), "=m"(xs) : "m"(cw) : "memory", "eax", "edx");
    raise(SIGUSR1);
    asm volatile("fnclex; fninit");
    printf("fdiv pending: fnstenv %s, fxsave %s, fxsave64 %s, xsave64 %s, signal frame %s\n", where(env, 12, 0, at_fdiv), where(fx, 8, 0, at_fdiv),
           where(fx64, 8, 1, at_fdiv), where(xs, 8, 1, at_fdiv), where((unsigned char *)&frame_fip, 0, 1, at_fdiv));

    /* The x87 instruction in another block than the save (a linked one, the third time). */
    for (int i = 0; i < 3; i++) {
        asm volatile(".globl at_fld1\nat_fld1: fld1; fstp %%st(0)" ::: "memory");
        stenv(env);
    }
    printf("another block: fnstenv %s\n", where(env, 12, 0, at_fld1));
    return 0;
}
"#;

/// The x87 last-instruction pointer that `fnstenv`, `fnsave`, `fxsave`, `xsave` and a signal
/// frame show is the guest's instruction (or zero where the CPU saves none: `fxsave` and
/// `xsave` on AMD), as natively, never the code cache's: with the x87 instruction in the
/// same block as the save (written after it) or in another (the runtime maps the cache's).
/// `fnstenv` and `fnsave` showed the code cache's address. Under taint, whose call-outs save
/// and restore the x87 state, an AMD CPU forgets the pointer (zero: never the cache's).
#[test]
fn the_x87_last_instruction_pointer_is_the_guests() {
    let exe = compile_snippet("x87_pointer", "c", X87_POINTER, &["-O1"]);
    let native = run_native(&Cmd::new(&exe));
    assert!(native.status.success() && native.stdout_str().starts_with("fldpi: fnstenv at+0, fnsave at+0"), "{}", native.describe());
    for tool in ["--tool=none", "--tool=count"] {
        let out = run_rtgrind(["-q", tool], &Cmd::new(&exe));
        assert_eq!(out.stdout_str(), native.stdout_str(), "{tool}: {}", out.describe());
    }
    let out = run_rtgrind(["-q", "--tool=taint"], &Cmd::new(&exe));
    assert!(out.status.success() && out.stdout_str().lines().count() == 3 && !out.stdout_str().contains("elsewhere"), "{}", out.describe());
}

/// The `==PID==` of rtgrind's first line.
fn pid(out: &crate::common::Output) -> String {
    out.stderr_str().trim_start_matches("==").split("==").next().unwrap_or_default().to_string()
}

/// `w`: says it is ready and waits to be killed (`t`: with a second thread waiting too; `s`:
/// sends itself SIGTERM instead).
/// Otherwise forks three children and says how each ended: one its parent kills with SIGTERM,
/// one that sends itself SIGTERM, one that calls abort().
const KILLED: &str = r#"#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void *wait_too(void *arg) {
    for (;;)
        pause();
    return arg;
}
int main(int argc, char **argv) {
    pthread_t t;
    if (argc > 1 && argv[1][0] == 't')
        pthread_create(&t, 0, wait_too, 0);
    if (argc > 1 && argv[1][0] == 's') {
        printf("ending\n");
        fflush(stdout);
        raise(SIGTERM);
    }
    if (argc > 1) {
        printf("ready\n");
        fflush(stdout);
        for (;;)
            pause();
    }
    for (int how = 0; how < 3; how++) {
        int p[2];
        char b;
        if (pipe(p) != 0)
            return 1;
        pid_t c = fork();
        if (c == 0) {
            if (how == 1)
                kill(getpid(), SIGTERM);
            if (how == 2)
                abort();
            write(p[1], "r", 1);
            for (;;)
                pause();
        }
        if (how == 0 && read(p[0], &b, 1) == 1)
            kill(c, SIGTERM);
        int st;
        waitpid(c, &st, 0);
        printf("child %d: signal %d\n", how, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        fflush(stdout);
    }
    return 0;
}
"#;

/// Runs `command` until it prints its first line, sends it `sig`, and returns its output and
/// how it ended (killed with SIGKILL if `sig` does not end it within the time limit).
fn killed_when_ready(mut command: std::process::Command, sig: i32) -> (String, String, std::process::ExitStatus) {
    use std::io::{BufRead, Read};
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    // A shell runs a background job with SIGINT and SIGQUIT ignored, and the program would
    // inherit that (CI runs the suite so): they get their default action back first.
    // SAFETY: signal(2) in the child between fork and exec; no allocation, no lock.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            Ok(())
        })
    };
    let mut child = command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("cannot start the program");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut first = String::new();
    let _ = stdout.read_line(&mut first);
    // SAFETY: kill(2) of the child we started; no memory is involved.
    unsafe { libc::kill(child.id() as i32, sig) };
    let deadline = std::time::Instant::now() + crate::common::run_timeout();
    while child.try_wait().ok().flatten().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let _ = child.kill();
    let status = child.wait().expect("wait");
    let (mut out, mut err) = (String::new(), String::new());
    let _ = stdout.read_to_string(&mut out);
    let _ = child.stderr.take().expect("piped stderr").read_to_string(&mut err);
    (first + &out, err, status)
}

/// Under `-q`, a program that another process kills (SIGTERM, SIGINT, even SIGQUIT, whose
/// default action dumps core) prints what it prints natively: no line of rtgrind's, as with
/// Valgrind's `-q`; without `-q` the line stays. A program that sends itself SIGTERM, a forked
/// child its parent kills or that sends itself SIGTERM, end quietly too (the harness's `compare`
/// expects no line for a signal that does not dump core); one that calls abort() still has its line (a crash,
/// which the searches' `-q` runs look for). With two threads, whichever takes the signal.
#[test]
fn quiet_runs_killed_by_another_process_print_nothing_of_rtgrind() {
    use std::os::unix::process::ExitStatusExt;
    let exe = compile_snippet("killed", "c", KILLED, &["-g", "-O1", "-pthread"]);
    for (sig, how) in [(libc::SIGTERM, "w"), (libc::SIGINT, "w"), (libc::SIGQUIT, "w"), (libc::SIGTERM, "t")] {
        let mut native = std::process::Command::new(&exe);
        native.arg(how);
        let native = killed_when_ready(native, sig);
        assert_eq!((native.0.as_str(), native.1.as_str(), native.2.signal()), ("ready\n", "", Some(sig)), "native");
        for quiet in [true, false] {
            let mut rt = std::process::Command::new(crate::common::rtgrind_bin());
            rt.args(if quiet { &["-q"][..] } else { &[] }).arg(&exe).arg(how);
            let (out, err, status) = killed_when_ready(rt, sig);
            assert_eq!((out.as_str(), status.signal()), ("ready\n", Some(sig)), "signal {sig}: {err}");
            let line = err.lines().any(|l| l.contains(&format!("Process terminating with default action of signal {sig} ")));
            if quiet {
                assert_eq!(err, "", "-q, signal {sig} from another process");
            } else {
                assert!(line, "without -q the line stays: {err}");
            }
        }
    }
    let native = run_native(&Cmd::new(&exe).arg("s"));
    crate::common::assert_same(&native, &run_rtgrind(["-q"], &Cmd::new(&exe).arg("s")));
    let native = run_native(&Cmd::new(&exe));
    let rt = run_rtgrind(["-q"], &Cmd::new(&exe));
    assert_eq!(native.stdout_str(), "child 0: signal 15\nchild 1: signal 15\nchild 2: signal 6\n", "{}", native.describe());
    assert_eq!((rt.stdout_str(), rt.status.code()), (native.stdout_str(), Some(0)), "{}", rt.describe());
    let err = rt.stderr_str();
    assert!(err.lines().count() == 1 && err.contains("Process terminating with default action of signal 6 (SIGABRT)"), "{}", rt.describe());
}

/// Closes every descriptor but the standard ones (`c`: glibc's closefrom, else close_range),
/// fills the descriptor table with F_DUPFD up to the limit it reads, closes them, puts its
/// stdout on every descriptor from 3 to 1023 with dup2, then crashes.
const CLOSE_ALL: &str = r#"#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (argv[1][0] == 'c')
        closefrom(3);
    else
        syscall(SYS_close_range, 3, ~0U, 0);
    long n = 0, top = 0;
    int fd;
    while ((fd = fcntl(1, F_DUPFD, 3)) >= 0) {
        n++;
        top = fd > top ? fd : top;
    }
    printf("filled to the limit: %d, EMFILE: %d, all below it: %d\n", n + 3 == (long)rl.rlim_cur, errno == EMFILE, top < (long)rl.rlim_cur);
    printf("F_DUPFD at the limit: %d\n", fcntl(1, F_DUPFD, (int)rl.rlim_cur) < 0 && errno == EINVAL);
    syscall(SYS_close_range, 3, ~0U, 0);
    for (int i = 3; i < 1024; i++)
        dup2(1, i);
    printf("crashing\n");
    fflush(stdout);
    *(volatile int *)0 = 1;
    return 0;
}
"#;

/// rtgrind's descriptors are its own: a guest that closes every descriptor (close_range,
/// closefrom), fills the table with F_DUPFD and puts its stdout on every one up to 1023 with
/// dup2 still has its crash reported on stderr or in the log file, as Valgrind's are; the
/// guest's limit (getrlimit) is where F_DUPFD stops. (The limit is 1024, so the range
/// rtgrind keeps for itself at its top is among the dup2's targets too.)
#[test]
fn closing_or_replacing_every_descriptor_leaves_rtgrinds_own() {
    use std::os::unix::process::ExitStatusExt;
    let exe = compile_snippet("close_all", "c", CLOSE_ALL, &["-g", "-O1"]);
    let dir = crate::common::scratch_dir("close_all");
    for how in ["close_range", "closefrom"] {
        let cmd = |rtgrind: &[String]| Cmd::new("sh").args(["-c", "ulimit -n 1024 && exec \"$@\"", "sh"]).args(rtgrind).arg(&exe).arg(how);
        let native = run_native(&cmd(&[]));
        assert_eq!(native.stdout_str(), "filled to the limit: 1, EMFILE: 1, all below it: 1\nF_DUPFD at the limit: 1\ncrashing\n", "{}", native.describe());
        let bin = crate::common::rtgrind_bin().to_string_lossy().into_owned();
        let rt = run_native(&cmd(&[bin.clone(), "-q".into()]));
        crate::common::assert_same(&native, &rt);
        let log = dir.join(format!("{how}.log"));
        let rt = run_native(&cmd(&[bin, "-q".into(), format!("--log-file={}", log.display())]));
        let logged = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(rt.stdout == native.stdout && rt.stderr.is_empty() && rt.status.signal() == Some(libc::SIGSEGV), "{}", rt.describe());
        assert!(logged.lines().count() == 1 && logged.contains("(SIGSEGV)"), "{how}: the log: {logged:?}");
    }
}

/// Reads each view of its memory map the kernel gives (maps and smaps, of the process and of
/// its thread, by `self`, `thread-self` and its pid), reads and writes back one byte in every
/// writable mapping listed there but the kernel's special ones, and says whether each lists
/// the same writable mappings as `/proc/self/maps` and whether `smaps_rollup` spans them.
const TOUCH_MAPS: &str = r#"#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static char buf[1 << 23];
static unsigned long regions[2][8192][2];
static long slurp(const char *path) {
    int fd = open(path, O_RDONLY);
    long n = 0, r;
    while (fd >= 0 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
        n += r;
    close(fd);
    buf[n] = 0;
    return n;
}
/* The writable mappings `path` lists, in `out`; their number. Each gets a byte written. */
static int touch(const char *path, unsigned long (*out)[2], unsigned long *first, unsigned long *last) {
    int k = 0;
    slurp(path);
    for (char *l = buf; *l;) {
        char *nl = strchr(l, '\n');
        unsigned long lo, hi;
        char perms[5];
        if (nl)
            *nl = 0;
        if (sscanf(l, "%lx-%lx %4s", &lo, &hi, perms) == 3 && !strstr(l, "[vsyscall]")) {
            if (!*first)
                *first = lo;
            *last = hi;
            if (perms[1] == 'w' && !strstr(l, "[v") && k < 8192) {
                out[k][0] = lo;
                out[k][1] = hi;
                k++;
            }
        }
        if (!nl)
            break;
        l = nl + 1;
    }
    for (int i = 0; i < k; i++) {
        volatile char *p = (volatile char *)out[i][0];
        char c = *p;
        *p = c;
    }
    return k;
}
int main(void) {
    char views[8][64];
    int pid = getpid(), tid = gettid();
    unsigned long first = 0, last = 0, f, l;
    /* (stdout's buffer is allocated first: the heap must not appear between two views.) */
    printf("views of the memory map\n");
    snprintf(views[0], 64, "/proc/self/task/%d/maps", tid);
    snprintf(views[1], 64, "/proc/self/smaps");
    snprintf(views[2], 64, "/proc/self/task/%d/smaps", tid);
    snprintf(views[3], 64, "/proc/%d/maps", pid);
    snprintf(views[4], 64, "/proc/%d/smaps", pid);
    snprintf(views[5], 64, "/proc/%d/task/%d/maps", pid, tid);
    snprintf(views[6], 64, "/proc/thread-self/smaps");
    snprintf(views[7], 64, "/proc/%d/maps", tid);
    int n = touch("/proc/self/maps", regions[0], &first, &last);
    for (int v = 0; v < 8; v++) {
        f = l = 0;
        int m = touch(views[v], regions[1], &f, &l);
        printf("view %d: same writable mappings as maps: %d\n", v, m == n && !memcmp(regions[0], regions[1], n * sizeof regions[0][0]));
    }
    slurp("/proc/self/smaps_rollup");
    unsigned long lo = 0, hi = 0;
    sscanf(buf, "%lx-%lx", &lo, &hi);
    printf("smaps_rollup spans maps: %d, has Rss: %d\n", lo == first && hi == last, strstr(buf, "\nRss: ") != 0);
    printf("survived\n");
    return 0;
}
"#;

/// Every view of the memory map shows the guest's mappings only, as `/proc/self/maps` does:
/// a program that writes a byte into every writable mapping it finds in its thread's maps or
/// smaps (a conservative collector scanning its roots) survives, as natively. They showed
/// rtgrind's own (code cache, heap, stacks) but through `/proc/self/maps`.
#[test]
fn every_view_of_the_memory_map_is_the_guests() {
    let exe = compile_snippet("touch_maps", "c", TOUCH_MAPS, &["-g", "-O1"]);
    let native = run_native(&Cmd::new(&exe));
    assert!(native.stdout_str().ends_with("survived\n") && !native.stdout_str().contains(": 0"), "{}", native.describe());
    for tool in ["none", "taint"] {
        let rt = run_rtgrind(["-q", &format!("--tool={tool}")], &Cmd::new(&exe));
        if let Err(e) = crate::common::compare_tool(&native, &rt, tool) {
            panic!("{e}");
        }
    }
}

/// Compares its `/proc/self/cmdline`, `environ` and `auxv` (of the process, its thread and its
/// pid) with its argv, environment and the auxiliary vector on its stack, prints the command
/// line; with `again`, starts itself again through `/proc/self/exe` with `second` and says
/// whether it kept its pid.
const SELF_VIEWS: &str = r#"#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
extern char **environ;
static char buf[1 << 20];
static long slurp(const char *path) {
    int fd = open(path, O_RDONLY);
    long n = 0, r;
    while (fd >= 0 && (r = read(fd, buf + n, sizeof buf - n)) > 0)
        n += r;
    close(fd);
    return n;
}
/* `strs` as the kernel lays them out: each with its NUL. */
static int same_strings(long n, char **strs) {
    long at = 0;
    for (; *strs; strs++) {
        long len = strlen(*strs) + 1;
        if (at + len > n || memcmp(buf + at, *strs, len))
            return 0;
        at += len;
    }
    return at == n;
}
int main(int argc, char **argv) {
    char path[64];
    char **env = environ;
    while (*env)
        env++;
    unsigned long *auxv = (unsigned long *)(env + 1);
    long auxn = 0;
    while (auxv[auxn])
        auxn += 2;
    auxn += 2;
    const char *dirs[] = {"self", "thread-self", path};
    snprintf(path, sizeof path, "%d/task/%d", getpid(), gettid());
    for (int d = 0; d < 3; d++) {
        char file[96];
        snprintf(file, sizeof file, "/proc/%s/cmdline", dirs[d]);
        int cmdline = same_strings(slurp(file), argv);
        snprintf(file, sizeof file, "/proc/%s/environ", dirs[d]);
        int environ_ = same_strings(slurp(file), environ);
        snprintf(file, sizeof file, "/proc/%s/auxv", dirs[d]);
        long n = slurp(file);
        int aux = n == auxn * 8 && !memcmp(buf, auxv, n);
        printf("%s: cmdline is argv: %d, environ is the environment: %d, auxv is the stack's: %d\n", d == 2 ? "pid/task/tid" : dirs[d], cmdline, environ_, aux);
    }
    if (argc > 2 && !strcmp(argv[1], "second")) {
        printf("second: same pid: %d\n", atoi(argv[2]) == getpid());
        return 0;
    }
    /* The kernel reads the command line from the program's memory. */
    argv[argc - 1][0] = 'X';
    long n = slurp("/proc/self/cmdline");
    for (long i = 0; i < n; i++)
        buf[i] = buf[i] ? buf[i] : ' ';
    printf("rewritten: %.*s\n", (int)n, buf);
    fflush(stdout);
    if (argc > 1 && !strcmp(argv[1], "Xgain")) {
        char pid[16];
        snprintf(pid, sizeof pid, "%d", getpid());
        execl("/proc/self/exe", argv[0], "second", pid, (char *)0);
        perror("execl");
        return 1;
    }
    return 0;
}
"#;

/// The guest's own `/proc/self/cmdline` (its argv as it is now in its memory), `environ` and
/// `auxv` (the vector rtgrind gave it, as on its stack), by `self`, `thread-self` and
/// `PID/task/TID`, and `execve("/proc/self/exe")` starts the program again (under rtgrind with
/// `--trace-children=yes`), not rtgrind on the program's arguments. They were rtgrind's.
#[test]
fn the_guest_sees_its_own_command_line_environment_auxv_and_exe() {
    let exe = compile_snippet("self_views", "c", SELF_VIEWS, &["-g", "-O1"]);
    let native = run_native(&Cmd::new(&exe).arg("again"));
    let expected = format!(
        "self: cmdline is argv: 1, environ is the environment: 1, auxv is the stack's: 1\n\
         thread-self: cmdline is argv: 1, environ is the environment: 1, auxv is the stack's: 1\n\
         pid/task/tid: cmdline is argv: 1, environ is the environment: 1, auxv is the stack's: 1\n\
         rewritten: {} Xgain \n",
        exe.display()
    );
    assert!(native.stdout_str().starts_with(&expected) && native.stdout_str().ends_with("second: same pid: 1\n"), "{}", native.describe());
    for trace in ["--trace-children=no", "--trace-children=yes"] {
        let rt = run_rtgrind(["-q", trace], &Cmd::new(&exe).arg("again"));
        crate::common::assert_same(&native, &rt);
    }
    let rt = run_rtgrind(["--trace-children=yes"], &Cmd::new(&exe).arg("again"));
    assert_eq!(rt.stderr_str().matches("== Command: ").count(), 2, "the second program runs under rtgrind: {}", rt.describe());
}

/// Says its name as the kernel knows it (prctl, comm, stat, status), a thread's before and
/// after pthread_setname_np, and the descriptors `/proc/self/fd` and `fdinfo` list.
const NAMES_AND_FDS: &str = r#"#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
static char buf[4096];
static int go[2], tid;
static const char *slurp(const char *path) {
    int fd = open(path, O_RDONLY);
    long n = fd < 0 ? 0 : read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    return buf;
}
static void *worker(void *arg) {
    char c;
    tid = gettid();
    write(go[1], "r", 1);
    read(*(int *)arg, &c, 1);
    return 0;
}
static int by_number(const void *a, const void *b) {
    return *(const int *)a - *(const int *)b;
}
static void list(const char *dir, const char *label) {
    int fds[64], n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)) && n < 64)
        if (e->d_name[0] != '.')
            fds[n++] = atoi(e->d_name);
    closedir(d);
    qsort(fds, n, sizeof fds[0], by_number);
    printf("%s:", label);
    for (int i = 0; i < n; i++)
        printf(" %d", fds[i]);
    printf("\n");
}
int main(void) {
    char name[17] = {0}, path[64];
    int done[2];
    prctl(PR_GET_NAME, name);
    printf("PR_GET_NAME: %s\n", name);
    printf("comm: %s", slurp("/proc/self/comm"));
    slurp("/proc/self/stat");
    printf("stat: %.*s\n", (int)(strrchr(buf, ')') - strchr(buf, '(') + 1), strchr(buf, '('));
    slurp("/proc/self/status");
    printf("status: %.*s\n", (int)strcspn(buf, "\n"), buf);
    pthread_t t;
    if (pipe(go) || pipe(done) || pthread_create(&t, 0, worker, &done[0]))
        return 1;
    read(go[0], name, 1);
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
    printf("thread: %s", slurp(path));
    pthread_setname_np(t, "worker-one");
    printf("thread named: %s", slurp(path));
    pthread_getname_np(t, name, sizeof name);
    printf("pthread_getname_np: %s\n", name);
    write(done[1], "x", 1);
    pthread_join(t, 0);
    close(go[0]), close(go[1]), close(done[0]), close(done[1]);
    list("/proc/self/fd", "fd");
    list("/proc/self/fdinfo", "fdinfo");
    snprintf(path, sizeof path, "/proc/%d/task/%d/fd", getpid(), getpid());
    list(path, "PID/task/TID/fd");
    return 0;
}
"#;

/// The guest's name is the program's, as the kernel names a program it starts (its file's
/// name cut to 15 bytes), in `prctl(PR_GET_NAME)`, `/proc/self/comm`, `stat` and `status`, and
/// its threads have it (then the name pthread_setname_np gives them), not "rtgrind" and
/// "guest-1"; `/proc/self/fd` and `fdinfo` list the guest's descriptors, not rtgrind's own
/// (its stderr copy, `--log-file`).
#[test]
fn the_guest_sees_its_own_name_and_descriptors() {
    let exe = compile_snippet("a_program_with_a_long_name", "c", NAMES_AND_FDS, &["-g", "-O1", "-pthread"]);
    let native = run_native(&Cmd::new(&exe));
    assert!(
        native.stdout_str().starts_with("PR_GET_NAME: a_program_with_\ncomm: a_program_with_\nstat: (a_program_with_)\nstatus: Name:\ta_program_with_\n"),
        "{}",
        native.describe()
    );
    let log = crate::common::scratch_dir("names").join("log");
    for opts in [vec!["-q".to_string()], vec!["-q".into(), format!("--log-file={}", log.display())]] {
        let rt = run_rtgrind(&opts, &Cmd::new(&exe));
        crate::common::assert_same(&native, &rt);
    }
}

/// Prints what a program reads from the machine besides the clocks: CPU time and resource use,
/// the system's uptime, load and free memory, and the CPU's random numbers.
const MACHINE_READS: &str = r#"#include <stdio.h>
#include <sys/times.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <immintrin.h>
int main(void) {
    struct tms t;
    clock_t c = times(&t);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    struct sysinfo si;
    sysinfo(&si);
    unsigned long long r64 = 0;
    unsigned int r32 = 0;
    unsigned short r16 = 0;
    int ok = _rdrand64_step(&r64) & _rdrand32_step(&r32) & _rdseed16_step(&r16);
    printf("times %ld %ld\n", (long)c, (long)t.tms_utime);
    printf("getrusage %ld.%06ld %ld %ld %ld\n", ru.ru_utime.tv_sec, ru.ru_utime.tv_usec, ru.ru_maxrss, ru.ru_minflt, ru.ru_nivcsw);
    printf("sysinfo %ld %lu %lu %hu\n", si.uptime, si.loads[0], si.freeram, si.procs);
    printf("rdrand %d %llx %x %x\n", ok, r64, r32, r16);
    return 0;
}
"#;

/// A repeatable run pins what a program reads from the machine: two runs print the same
/// CPU times, resource use, uptime, load, free memory and `rdrand`/`rdseed` numbers (natively
/// they differ), and another `--seed` gives other random numbers.
#[test]
fn a_repeatable_run_pins_cpu_time_resource_use_and_the_cpus_random_numbers() {
    let exe = compile_snippet("machine_reads", "c", MACHINE_READS, &["-O1", "-mrdrnd", "-mrdseed"]);
    let runs: Vec<String> = (0..2)
        .map(|_| {
            let out = run_rtgrind(["-q", "--repeatable=yes"], &Cmd::new(&exe));
            assert!(out.status.success(), "{}", out.describe());
            out.stdout_str()
        })
        .collect();
    assert_eq!(runs[0], runs[1], "two repeatable runs differ");
    assert!(runs[0].contains("rdrand 1 "), "{}", runs[0]);
    let reseeded = run_rtgrind(["-q", "--repeatable=yes", "--seed=7"], &Cmd::new(&exe)).stdout_str();
    let line = |s: &str| s.lines().find(|l| l.starts_with("rdrand")).unwrap_or_default().to_string();
    assert_ne!(line(&reseeded), line(&runs[0]), "--seed does not change rdrand");
}

/// A large interpreter is repeatable: ten repeatable runs of python3 and of perl, each using
/// its hash seed, random numbers, clocks, ids and (python) two threads, print the same and
/// execute the same number of blocks.
#[test]
fn python3_and_perl_execute_the_same_blocks_in_every_repeatable_run() {
    const PYTHON: &str = "import os, random, threading, time, uuid\n\
        d = {str(i): i for i in range(200)}\n\
        out = []\n\
        def work(n):\n    out.append(sum(hash(k) % 97 for k in d) + n)\n\
        ts = [threading.Thread(target=work, args=(i,)) for i in range(2)]\n\
        [t.start() for t in ts]; [t.join() for t in ts]\n\
        print(list(d)[:3], set('abcdefgh'), random.random(), os.urandom(4).hex(), uuid.uuid4(), id(object()), time.time(), time.process_time(), os.times()[0], sorted(out))\n";
    const PERL: &str = "my %h = map { $_ => 1 } 'a'..'z'; print join('', keys %h), ' ', rand(), ' ', time, ' ', (times)[0], ' ', \\%h, \"\\n\";";
    // (In a directory of its own: `python3 -c` looks for modules in its working directory, and
    // other tests' runs create and remove files in theirs.)
    let dir = crate::common::scratch_dir("repeatable-interpreters");
    for (interp, script) in [("/usr/bin/python3", PYTHON), ("/usr/bin/perl", PERL)] {
        let flag = if interp.ends_with("python3") { "-c" } else { "-e" };
        let mut first: Option<(String, String)> = None;
        for run in 0..10 {
            let out = run_rtgrind(["--tool=count", "--repeatable=yes"], &Cmd::new(interp).arg(flag).arg(script).cwd(&dir));
            assert!(out.status.success(), "{interp} run {run}: {}", out.describe());
            let blocks = out.stderr_str().lines().find(|l| l.contains("count: blocks:")).map(|l| l.split_whitespace().last().unwrap_or_default().to_string());
            let this = (out.stdout_str(), blocks.unwrap_or_else(|| panic!("{interp}: no block count: {}", out.describe())));
            match &first {
                None => first = Some(this),
                Some(f) => assert_eq!(&this, f, "{interp}: run {run} differs from run 0"),
            }
        }
    }
}
