//! The raw `syscall` instruction: results as the kernel returns them (negative errno), with
//! none of libc's errno handling, so they can be handed to the guest unchanged.

/// # Safety
/// The caller must have checked that the syscall cannot touch rtgrind's own memory or state
/// in ways the runtime does not expect (pass-through syscalls act on guest memory only).
pub unsafe fn syscall6(nr: u64, a: [u64; 6]) -> i64 {
    let ret: i64;
    // SAFETY: per the function contract.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") nr as i64 => ret,
            in("rdi") a[0], in("rsi") a[1], in("rdx") a[2],
            in("r10") a[3], in("r8") a[4], in("r9") a[5],
            lateout("rcx") _, lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// Ends the process by `sig` the way the native program would have died of it: default
/// disposition, signal unblocked, sent to ourselves (exit status 128+sig if it does not kill).
/// Raw syscalls only, so it is async-signal-safe and works for the signals glibc reserves,
/// and `tgkill(getpid(), gettid())` rather than raise(), whose cached thread id is stale after a
/// raw fork.
pub fn die_of_signal(sig: i32) -> ! {
    let dfl: [u64; 4] = [libc::SIG_DFL as u64, 0, 0, 0];
    let unblock: u64 = 1 << (sig - 1);
    // SAFETY: these calls change only this process's disposition and mask for `sig`, then end it.
    unsafe {
        syscall6(libc::SYS_rt_sigaction as u64, [sig as u64, dfl.as_ptr() as u64, 0, 8, 0, 0]);
        syscall6(libc::SYS_rt_sigprocmask as u64, [libc::SIG_UNBLOCK as u64, &unblock as *const u64 as u64, 0, 8, 0, 0]);
        // To this thread, which does not block it: sent to the process, another thread could
        // take it while this one reached exit_group first (exit status 128+sig, seen with
        // threads alive at a crash).
        let pid = syscall6(libc::SYS_getpid as u64, [0; 6]);
        let tid = syscall6(libc::SYS_gettid as u64, [0; 6]);
        syscall6(libc::SYS_tgkill as u64, [pid as u64, tid as u64, sig as u64, 0, 0, 0]);
        syscall6(libc::SYS_exit_group as u64, [128 + sig as u64, 0, 0, 0, 0, 0]);
    }
    unreachable!("exit_group returned")
}

// A syscall that a signal can cancel before it starts. The host handler moves a thread whose
// pc is in [rtg_guarded_begin, rtg_guarded_insn] (the syscall not yet executed) to
// rtg_guarded_bail, which returns -EINTR. Without this, a signal that arrives between the
// dispatcher's last look at its queue and the `syscall` instruction would be queued by the
// handler and then wait while the thread sleeps in the kernel (Valgrind's "syscall window").
std::arch::global_asm!(
    ".text",
    ".p2align 4",
    ".globl rtg_guarded_syscall",
    "rtg_guarded_syscall:",
    // rdi = nr, rsi = pointer to 6 arguments
    ".globl rtg_guarded_begin",
    "rtg_guarded_begin:",
    "mov rax, rdi",
    "mov rdi, [rsi]",
    "mov rdx, [rsi+16]",
    "mov r10, [rsi+24]",
    "mov r8, [rsi+32]",
    "mov r9, [rsi+40]",
    "mov rsi, [rsi+8]",
    ".globl rtg_guarded_insn",
    "rtg_guarded_insn:",
    "syscall",
    "ret",
    ".globl rtg_guarded_bail",
    "rtg_guarded_bail:",
    "mov rax, -4",
    "ret",
);

extern "sysv64" {
    fn rtg_guarded_syscall(nr: u64, args: *const u64) -> i64;
    fn rtg_guarded_begin();
    fn rtg_guarded_insn();
    fn rtg_guarded_bail();
}

/// Like [`syscall6`], but returns -EINTR without entering the kernel if a signal arrives
/// before the syscall starts (see above).
///
/// # Safety
/// As for [`syscall6`].
pub unsafe fn guarded_syscall6(nr: u64, a: [u64; 6]) -> i64 {
    // SAFETY: the routine only loads the six arguments and makes the syscall.
    unsafe { rtg_guarded_syscall(nr, a.as_ptr()) }
}

/// If `pc` is inside a guarded syscall that has not started, where to resume instead.
pub fn guarded_cancel_target(pc: u64) -> Option<u64> {
    let (b, i) = (rtg_guarded_begin as *const () as u64, rtg_guarded_insn as *const () as u64);
    (pc >= b && pc <= i).then_some(rtg_guarded_bail as *const () as u64)
}

// A copy that a fault cannot turn into rtgrind's crash: the host handler moves a thread whose
// SIGSEGV or SIGBUS came from `rtg_copy_insn` to `rtg_copy_fault`, which returns 1 (as the
// kernel's copy_from_user has an exception table entry). The translator reads guest code this
// way: a file mapped past its end raises SIGBUS on those pages, which must be the guest's.
std::arch::global_asm!(
    ".text",
    ".p2align 4",
    ".globl rtg_copy_guarded",
    "rtg_copy_guarded:",
    // rdi = destination, rsi = source, rdx = length; returns 0, or 1 if the source faulted
    "mov rcx, rdx",
    ".globl rtg_copy_insn",
    "rtg_copy_insn:",
    "rep movsb",
    "xor eax, eax",
    "ret",
    ".globl rtg_copy_fault",
    "rtg_copy_fault:",
    "mov eax, 1",
    "ret",
);

extern "sysv64" {
    fn rtg_copy_guarded(dst: *mut u8, src: u64, len: usize) -> u64;
    fn rtg_copy_insn();
    fn rtg_copy_fault();
}

/// Copies the guest bytes at `src` into `buf` page by page, stopping at the first page that
/// cannot be read (unmapped, or a file's page past its end); how many bytes were copied.
pub fn copy_guarded(src: u64, buf: &mut [u8]) -> usize {
    let mut done = 0;
    while done < buf.len() {
        let at = src + done as u64;
        let n = ((0x1000 - (at & 0xfff)) as usize).min(buf.len() - done);
        // SAFETY: the destination is our own buffer with room for `n` bytes; a fault reading
        // the source is caught by the host handler (`copy_fault_target`), not taken by rtgrind.
        if unsafe { rtg_copy_guarded(buf[done..].as_mut_ptr(), at, n) } != 0 {
            break;
        }
        done += n;
    }
    done
}

/// If a fault at `pc` is a guarded copy's, where to resume instead.
pub fn copy_fault_target(pc: u64) -> Option<u64> {
    (pc == rtg_copy_insn as *const () as u64).then_some(rtg_copy_fault as *const () as u64)
}

/// `fstat` of a descriptor (rtgrind shares the guest's descriptor table).
pub fn fstat(fd: i32) -> Option<libc::stat> {
    // SAFETY: an all-zero `stat` is a valid value of the plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat fills the local struct.
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some(st)
}

/// The calling thread's CPU affinity mask (1024 CPUs), if the kernel gives it.
pub fn affinity() -> Option<[u64; 16]> {
    let mut mask = [0u64; 16];
    // SAFETY: sched_getaffinity writes at most 128 bytes into `mask`.
    let r = unsafe { syscall6(libc::SYS_sched_getaffinity as u64, [0, 128, mask.as_mut_ptr() as u64, 0, 0, 0]) };
    (r > 0).then_some(mask)
}

/// Sets the calling thread's CPU affinity (threads it creates later inherit it).
pub fn set_affinity(mask: &[u64; 16]) -> bool {
    // SAFETY: sched_setaffinity reads 128 bytes from `mask`; it changes only where this thread runs.
    unsafe { syscall6(libc::SYS_sched_setaffinity as u64, [0, 128, mask.as_ptr() as u64, 0, 0, 0]) == 0 }
}

/// Whether the process runs under a seccomp filter (the guest's: rtgrind installs none), which
/// applies to rtgrind's own system calls too (`Seccomp:` 2 in `/proc/self/status`).
pub fn seccomp_filtered() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| s.lines().any(|l| l.split_once(':').is_some_and(|(k, v)| k == "Seccomp" && v.trim() == "2")))
}

/// What rtgrind says when one of its own calls fails under the guest's seccomp filter.
pub const SECCOMP_DENIED: &str = "the program's seccomp filter applies to rtgrind's own system calls too";

/// The CPU the calling thread runs on now.
pub fn current_cpu() -> Option<u32> {
    let mut cpu = 0u32;
    // SAFETY: getcpu writes one u32; the other arguments are unused (null).
    let r = unsafe { syscall6(libc::SYS_getcpu as u64, [&mut cpu as *mut u32 as u64, 0, 0, 0, 0, 0]) };
    (r == 0).then_some(cpu)
}

/// A private anonymous read-write mapping of `len` bytes, asked for at `place` (a hint far
/// from the guest's code and data), with no swap reserved: a tool's log or trace buffer, of
/// which only the part written is ever touched.
pub fn reserve(place: u64, len: usize) -> std::io::Result<u64> {
    // SAFETY: a fresh anonymous mapping (no MAP_FIXED: nothing existing is replaced).
    let p = unsafe {
        libc::mmap(place as *mut libc::c_void, len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE, -1, 0)
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(p as u64)
}

/// For a child a tool asked for (`ToolRun::fork_requested`): a forked process shares its open
/// files' offsets with its parent, so a child reading its input would move the parent's (which
/// then reads nothing: a fork search over `sort` lost a sixth of its candidates so), and the
/// parent reading on would move the child's.
/// Before the fork, every regular file open by name for reading only gets a second description
/// at its current offset, with the same flags; the child puts them in place of the shared ones
/// (`Detached::install`), the parent closes them (`Detached::close`). Made before the fork, the
/// offsets are the fork's whatever either process reads next. Files open for writing stay
/// shared, so what parent and children write to one (a log) is appended, not written over.
pub struct Detached(Vec<(i32, i32, i32)>);

pub fn detach_files() -> Detached {
    let mut own_files = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else { return Detached(own_files) };
    let fds: Vec<i32> = dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect();
    for fd in fds {
        let Some(st) = fstat(fd) else { continue };
        let Ok(path) = std::fs::read_link(format!("/proc/self/fd/{fd}")) else { continue };
        let name = path.to_string_lossy();
        if st.st_mode & libc::S_IFMT != libc::S_IFREG || !name.starts_with('/') || name.ends_with(" (deleted)") {
            continue;
        }
        let Ok(cpath) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else { continue };
        // SAFETY: plain fcntl/lseek/open/close on descriptors this process owns.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            let fd_flags = libc::fcntl(fd, libc::F_GETFD);
            let offset = libc::lseek(fd, 0, libc::SEEK_CUR);
            if flags < 0 || offset < 0 || flags & libc::O_ACCMODE != libc::O_RDONLY {
                continue;
            }
            let own = libc::open(cpath.as_ptr(), (flags & !(libc::O_CREAT | libc::O_TRUNC | libc::O_EXCL)) | libc::O_CLOEXEC);
            if own < 0 {
                continue;
            }
            if libc::lseek(own, offset, libc::SEEK_SET) != offset {
                libc::close(own);
                continue;
            }
            own_files.push((fd, own, fd_flags.max(0)));
        }
    }
    Detached(own_files)
}

impl Detached {
    /// In the child: each file's own description replaces the shared one under its number.
    pub fn install(self) {
        for (fd, own, fd_flags) in self.0 {
            // SAFETY: dup2/fcntl/close on descriptors this process owns.
            unsafe {
                if libc::dup2(own, fd) == fd {
                    libc::fcntl(fd, libc::F_SETFD, fd_flags);
                }
                libc::close(own);
            }
        }
    }

    /// In the parent (or when the fork failed): the child's descriptions are not wanted here.
    pub fn close(self) {
        for (_, own, _) in self.0 {
            // SAFETY: closing a descriptor detach_files opened.
            unsafe { libc::close(own) };
        }
    }
}
