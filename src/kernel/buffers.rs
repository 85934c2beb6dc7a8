//! The guest buffers a system call hands to the kernel's copy, and whether one reaches
//! rtgrind's memory (`GuestMemory::reaches_runtime`).
//!
//! rtgrind shares the address space with its guest: a buffer address where natively nothing is
//! mapped (the call fails with EFAULT) may be rtgrind's heap, stack, code cache or shadow
//! memory, and the kernel would copy to or from it. Each call that copies is described here by
//! its buffer arguments and where each one's length comes from (`Len`); a call with one that
//! reaches rtgrind's memory fails with EFAULT before it is made. (Natively a call may find
//! another error before it copies, e.g. `stat` of a missing file with a bad buffer is ENOENT:
//! under rtgrind that is EFAULT when the buffer lies in rtgrind's memory.)

use super::guest_mem;
use super::memory::{page_down, GuestMemory, PAGE};

/// Where a buffer argument's length comes from.
#[derive(Clone, Copy)]
enum Len {
    /// A structure of this size.
    Fixed(u64),
    /// The value of argument `i`.
    Arg(usize),
    /// Argument `i` elements of this size.
    ArgTimes(usize, u64),
    /// A NUL-terminated string (a path or a name), read up to `PATH_MAX`.
    Str,
    /// The 32-bit length (`socklen_t`) at the address in argument `i`.
    Socklen(usize),
    /// The descriptor set of `select` for argument `i` descriptors (whole longs).
    FdSet(usize),
    /// What the `ioctl` request in argument 1 copies (`ioctl_len`).
    Ioctl,
}

use Len::*;

/// `stat`, `statfs`, `rusage`, `siginfo_t`, `timespec`, `statx`.
const STAT: u64 = 144;
const STATFS: u64 = 120;
const RUSAGE: u64 = 144;
const SIGINFO: u64 = 128;
const TIMESPEC: u64 = 16;
const STATX: u64 = 256;
const PATH_MAX: u64 = 4096;

/// The buffer arguments of the x86-64 call `nr`: (argument index, its length). (The calls rtgrind
/// answers itself are here too: it copies with the same reach as the kernel.)
fn buffers(nr: i64) -> &'static [(usize, Len)] {
    use libc as l;
    match nr {
        l::SYS_read | l::SYS_write | l::SYS_pread64 | l::SYS_pwrite64 | l::SYS_getdents64 | l::SYS_getdents => &[(1, Arg(2))],
        l::SYS_sendto => &[(1, Arg(2)), (4, Arg(5))],
        l::SYS_recvfrom => &[(1, Arg(2)), (5, Fixed(4)), (4, Socklen(5))],
        l::SYS_getrandom | l::SYS_getcwd | l::SYS_sethostname | l::SYS_setdomainname | l::SYS_rt_sigpending | l::SYS_rt_sigsuspend => &[(0, Arg(1))],
        l::SYS_sched_getaffinity | l::SYS_sched_setaffinity => &[(2, Arg(1))],
        // A path (or a name) and nothing else copied.
        l::SYS_open | l::SYS_creat | l::SYS_access | l::SYS_mkdir | l::SYS_rmdir | l::SYS_unlink | l::SYS_chmod | l::SYS_chown | l::SYS_lchown => &[(0, Str)],
        l::SYS_truncate | l::SYS_chdir | l::SYS_chroot | l::SYS_mknod | l::SYS_memfd_create | l::SYS_acct | l::SYS_execve | l::SYS_mq_unlink => &[(0, Str)],
        l::SYS_openat | l::SYS_faccessat | l::SYS_faccessat2 | l::SYS_mkdirat | l::SYS_unlinkat | l::SYS_fchmodat | l::SYS_fchownat => &[(1, Str)],
        l::SYS_mknodat | l::SYS_inotify_add_watch | l::SYS_fremovexattr => &[(1, Str)],
        l::SYS_openat2 => &[(1, Str), (2, Arg(3))],
        l::SYS_rename | l::SYS_link | l::SYS_symlink | l::SYS_removexattr | l::SYS_lremovexattr => &[(0, Str), (1, Str)],
        l::SYS_renameat | l::SYS_renameat2 | l::SYS_linkat => &[(1, Str), (3, Str)],
        l::SYS_symlinkat => &[(0, Str), (2, Str)],
        l::SYS_stat | l::SYS_lstat => &[(0, Str), (1, Fixed(STAT))],
        l::SYS_fstat => &[(1, Fixed(STAT))],
        l::SYS_newfstatat => &[(1, Str), (2, Fixed(STAT))],
        l::SYS_statx => &[(1, Str), (4, Fixed(STATX))],
        l::SYS_statfs => &[(0, Str), (1, Fixed(STATFS))],
        l::SYS_fstatfs => &[(1, Fixed(STATFS))],
        l::SYS_readlink => &[(0, Str), (1, Arg(2))],
        l::SYS_readlinkat => &[(1, Str), (2, Arg(3))],
        l::SYS_utime => &[(0, Str), (1, Fixed(16))],
        l::SYS_utimes => &[(0, Str), (1, Fixed(2 * 16))],
        // (A NULL path is allowed: address 0 never reaches rtgrind's memory.)
        l::SYS_utimensat | l::SYS_futimesat => &[(1, Str), (2, Fixed(2 * 16))],
        l::SYS_getxattr | l::SYS_lgetxattr | l::SYS_setxattr | l::SYS_lsetxattr => &[(0, Str), (1, Str), (2, Arg(3))],
        l::SYS_fgetxattr | l::SYS_fsetxattr => &[(1, Str), (2, Arg(3))],
        l::SYS_listxattr | l::SYS_llistxattr => &[(0, Str), (1, Arg(2))],
        l::SYS_flistxattr => &[(1, Arg(2))],
        l::SYS_uname => &[(0, Fixed(390))],
        l::SYS_sysinfo => &[(0, Fixed(112))],
        l::SYS_times => &[(0, Fixed(32))],
        l::SYS_time => &[(0, Fixed(8))],
        l::SYS_gettimeofday | l::SYS_settimeofday => &[(0, Fixed(16)), (1, Fixed(8))],
        l::SYS_clock_gettime | l::SYS_clock_getres | l::SYS_clock_settime => &[(1, Fixed(TIMESPEC))],
        l::SYS_nanosleep => &[(0, Fixed(TIMESPEC)), (1, Fixed(TIMESPEC))],
        l::SYS_clock_nanosleep => &[(2, Fixed(TIMESPEC)), (3, Fixed(TIMESPEC))],
        l::SYS_getrlimit | l::SYS_setrlimit => &[(1, Fixed(16))],
        l::SYS_prlimit64 => &[(2, Fixed(16)), (3, Fixed(16))],
        l::SYS_getrusage => &[(1, Fixed(RUSAGE))],
        l::SYS_pipe | l::SYS_pipe2 => &[(0, Fixed(8))],
        l::SYS_socketpair => &[(3, Fixed(8))],
        l::SYS_wait4 => &[(1, Fixed(4)), (3, Fixed(RUSAGE))],
        l::SYS_waitid => &[(2, Fixed(SIGINFO)), (4, Fixed(RUSAGE))],
        l::SYS_bind | l::SYS_connect => &[(1, Arg(2))],
        l::SYS_accept | l::SYS_accept4 | l::SYS_getsockname | l::SYS_getpeername => &[(2, Fixed(4)), (1, Socklen(2))],
        l::SYS_getsockopt => &[(4, Fixed(4)), (3, Socklen(4))],
        l::SYS_setsockopt => &[(3, Arg(4))],
        l::SYS_epoll_wait | l::SYS_epoll_pwait => &[(1, ArgTimes(2, 12))],
        l::SYS_epoll_ctl => &[(3, Fixed(12))],
        l::SYS_poll => &[(0, ArgTimes(1, 8))],
        l::SYS_ppoll => &[(0, ArgTimes(1, 8)), (2, Fixed(TIMESPEC))],
        l::SYS_select | l::SYS_pselect6 => &[(1, FdSet(0)), (2, FdSet(0)), (3, FdSet(0)), (4, Fixed(16))],
        l::SYS_rt_sigaction => &[(1, Fixed(32)), (2, Fixed(32))],
        l::SYS_rt_sigprocmask => &[(1, Arg(3)), (2, Arg(3))],
        l::SYS_sigaltstack => &[(0, Fixed(24)), (1, Fixed(24))],
        l::SYS_rt_sigtimedwait => &[(0, Arg(3)), (1, Fixed(SIGINFO)), (2, Fixed(TIMESPEC))],
        l::SYS_rt_sigqueueinfo => &[(2, Fixed(SIGINFO))],
        l::SYS_getgroups | l::SYS_setgroups => &[(1, ArgTimes(0, 4))],
        l::SYS_getresuid | l::SYS_getresgid => &[(0, Fixed(4)), (1, Fixed(4)), (2, Fixed(4))],
        l::SYS_sendfile => &[(2, Fixed(8))],
        l::SYS_copy_file_range => &[(1, Fixed(8)), (3, Fixed(8))],
        l::SYS_timerfd_settime => &[(2, Fixed(32)), (3, Fixed(32))],
        l::SYS_timerfd_gettime => &[(1, Fixed(32))],
        l::SYS_signalfd | l::SYS_signalfd4 => &[(1, Fixed(8))],
        l::SYS_ioctl => &[(2, Ioctl)],
        _ => &[],
    }
}

/// How many bytes the `ioctl` request `req` copies from or to its argument: the size encoded in
/// it (`_IOC`, when it says it copies), or that of the terminal and interface requests that
/// predate the encoding; 0 (not checked) for any other.
fn ioctl_len(req: u64) -> u64 {
    let req = req as u32;
    if req >> 30 != 0 {
        return u64::from((req >> 16) & 0x3fff);
    }
    match req {
        // TCGETS, TCSETS, TCSETSW, TCSETSF: the kernel's struct termios.
        0x5401..=0x5404 => 36,
        // TCGETA, TCSETA, TCSETAW, TCSETAF: struct termio.
        0x5405..=0x5408 => 18,
        // TIOCGWINSZ, TIOCSWINSZ.
        0x5413 | 0x5414 => 8,
        // TIOCGPGRP, TIOCSPGRP, TIOCOUTQ, TIOCMGET, FIONREAD, FIONBIO, TIOCGETD, TIOCSETD,
        // TIOCGSID, FIOASYNC.
        0x540f | 0x5410 | 0x5411 | 0x5415 | 0x541b | 0x5421 | 0x5423 | 0x5424 | 0x5429 | 0x5452 => 4,
        // SIOCGIFCONF: struct ifconf.
        0x8912 => 16,
        // SIOCGIFNAME .. SIOCSIFHWBROADCAST, SIOCGIFINDEX ..: struct ifreq.
        0x8910..=0x8938 => 40,
        _ => 0,
    }
}

/// Whether the NUL-terminated string at `start` reaches rtgrind's memory before its end: the
/// guest's own memory is read for the NUL (a part it cannot read is the kernel's EFAULT anyway),
/// and the first byte not the guest's is looked at as `reaches_runtime` does.
fn string_reaches_runtime(mem: &GuestMemory, start: u64) -> bool {
    let mut chunk = [0u8; 512];
    let mut at = start;
    while at < start.saturating_add(PATH_MAX) {
        let Some((_, r)) = mem.region_at(at) else { return mem.reaches_runtime(at, 1) };
        let stop = r.end.min(page_down(at) + PAGE).min(at + chunk.len() as u64);
        let piece = &mut chunk[..(stop - at) as usize];
        if !guest_mem::read(at, piece) || piece.contains(&0) {
            return false;
        }
        at = stop;
    }
    false
}

/// Whether a buffer the x86-64 call `nr` would copy with arguments `a` reaches rtgrind's
/// memory (the `buffers` table; the vectors of readv/writev and the message headers of
/// sendmsg/recvmsg are followed to each buffer).
pub fn reach_runtime(mem: &GuestMemory, nr: u64, a: &[u64; 6]) -> bool {
    use libc as l;
    let iov = |at: u64, count: u64| -> bool {
        let count = count.min(1024);
        if mem.reaches_runtime(at, count * 16) {
            return true;
        }
        let Some(raw) = guest_mem::read_vec(at, (count * 16) as usize) else { return false };
        raw.chunks_exact(16).any(|e| mem.reaches_runtime(le(&e[..8]), le(&e[8..])))
    };
    match nr as i64 {
        l::SYS_readv | l::SYS_writev | l::SYS_preadv | l::SYS_pwritev | l::SYS_preadv2 | l::SYS_pwritev2 => iov(a[1], a[2]),
        l::SYS_sendmsg | l::SYS_recvmsg => {
            if mem.reaches_runtime(a[1], 56) {
                return true;
            }
            let Some(h) = guest_mem::read_vec(a[1], 56) else { return false };
            let q = |i: usize| le(&h[i..i + 8]);
            // (struct msghdr: name, namelen, iov, iovlen, control, controllen, flags.)
            mem.reaches_runtime(q(0), q(8) & 0xffff_ffff) || iov(q(16), q(24)) || mem.reaches_runtime(q(32), q(40))
        }
        nr => buffers(nr).iter().any(|&(i, len)| {
            let at = a[i];
            let len = match len {
                Str => return string_reaches_runtime(mem, at),
                Fixed(n) => n,
                Arg(j) => a[j],
                ArgTimes(j, size) => a[j].saturating_mul(size),
                Socklen(j) => {
                    let mut b = [0u8; 4];
                    if guest_mem::read(a[j], &mut b) {
                        u64::from(u32::from_le_bytes(b))
                    } else {
                        0
                    }
                }
                FdSet(j) => (a[j] & 0xffff_ffff).div_ceil(64) * 8,
                Ioctl => ioctl_len(a[1]),
            };
            mem.reaches_runtime(at, len)
        }),
    }
}

/// The little-endian u64 in the 8 bytes of `b`.
fn le(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.try_into().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::ioctl_len;

    #[test]
    fn ioctl_lengths_come_from_the_request_or_the_terminal_table() {
        assert_eq!(ioctl_len(0x5401), 36, "TCGETS");
        assert_eq!(ioctl_len(0x5413), 8, "TIOCGWINSZ");
        assert_eq!(ioctl_len(0x8004_5430), 4, "TIOCGPTN, _IOR('T', 0x30, unsigned int)");
        assert_eq!(ioctl_len(0x5409), 0, "TCSBRK takes a number, not a pointer");
    }
}
