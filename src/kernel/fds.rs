//! rtgrind's own descriptors, out of the guest's reach.
//!
//! rtgrind shares the guest's descriptor table. Its own files (the copy of standard error its
//! report goes to, the `--log-file`, a schedule being recorded) are moved at start-up into a
//! range reserved at the top of the descriptor limit, and the guest sees a limit lowered by
//! the range, as under Valgrind (its `fd_hard_limit`): `getrlimit(RLIMIT_NOFILE)` says the
//! range's start; a call naming a descriptor in the range fails with EBADF as for one not open
//! (`close`, `dup2`/`dup3` onto it, `read`, `fcntl`, ...); `close_range` (glibc's `closefrom`)
//! closes the guest's descriptors around it; `fcntl(F_DUPFD)` and every call that makes a
//! descriptor never hand out a number in it (EMFILE, as at the limit). Before, a guest's
//! `close_range(3, ~0U, 0)` closed the log file and a `dup2` onto fd 1000 replaced the stderr
//! copy, so a crash report went to the program's stdout or nowhere.

use super::guest_mem;
use super::raw::syscall6;
use std::os::fd::{FromRawFd, IntoRawFd};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

/// How many descriptors are reserved.
const RESERVED: u32 = 8;

/// The first reserved descriptor (`u32::MAX`: none reserved).
static BASE: AtomicU64 = AtomicU64::new(u32::MAX as u64);
/// The soft RLIMIT_NOFILE at start-up, which the guest sees as `BASE`.
static LIMIT: AtomicU64 = AtomicU64::new(0);

/// Where the signal handler writes a fatal line (the log file, else the stderr copy).
pub static REPORT: AtomicI32 = AtomicI32::new(2);
/// The stderr copy, for the signal handler's internal errors.
pub static STDERR: AtomicI32 = AtomicI32::new(2);

fn base() -> u32 {
    BASE.load(Ordering::Relaxed) as u32
}

/// Reserves the top `RESERVED` descriptors under the soft limit (once, at start-up, before
/// any of rtgrind's own files are opened). A limit too low to spare them reserves nothing.
pub fn reserve() {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit fills a local struct.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 || rl.rlim_cur < 64 || rl.rlim_cur > i32::MAX as u64 {
        return;
    }
    LIMIT.store(rl.rlim_cur, Ordering::Relaxed);
    BASE.store(rl.rlim_cur - RESERVED as u64, Ordering::Relaxed);
}

/// A descriptor of rtgrind's own (in the reserved range).
pub fn is_reserved(fd: u64) -> bool {
    let fd = fd as u32;
    fd >= base() && fd - base() < RESERVED
}

/// A close-on-exec duplicate of `fd` in the reserved range, if one is free.
pub fn dup_reserved(fd: i32) -> Option<i32> {
    // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor; nothing else is touched.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, base() as i32) };
    if new >= 0 && is_reserved(new as u64) {
        return Some(new);
    }
    if new >= 0 {
        // SAFETY: closing the duplicate just made.
        unsafe { libc::close(new) };
    }
    None
}

/// `file` moved into the reserved range (left where it is if the range is full or unset).
pub fn own(file: std::fs::File) -> std::fs::File {
    let fd = file.into_raw_fd();
    match dup_reserved(fd) {
        Some(new) => {
            // SAFETY: `fd` was the file's own descriptor, replaced by `new`, which only the
            // returned File owns.
            unsafe {
                libc::close(fd);
                std::fs::File::from_raw_fd(new)
            }
        }
        // SAFETY: `fd` is still the file's own descriptor.
        None => unsafe { std::fs::File::from_raw_fd(fd) },
    }
}

const EBADF: i64 = -(libc::EBADF as i64);
const EMFILE: i64 = -(libc::EMFILE as i64);

/// Before a guest syscall: its answer if it names a reserved descriptor (EBADF, or for
/// `close_range` the guest's descriptors closed around the range), else None.
pub fn before(nr: u64, a: &[u64; 6]) -> Option<i64> {
    if base() == u32::MAX {
        return None;
    }
    use libc as l;
    let named = match nr as i64 {
        l::SYS_close_range => return Some(close_range(a)),
        l::SYS_poll | l::SYS_ppoll => return poll(a),
        l::SYS_select | l::SYS_pselect6 => return select(a),
        l::SYS_fcntl if matches!(a[1] as i32, l::F_DUPFD | l::F_DUPFD_CLOEXEC) && a[2] as u32 >= base() => {
            // (As natively for a minimum at or above the limit.)
            return is_reserved(a[0]).then_some(EBADF).or(Some(-(l::EINVAL as i64)));
        }
        l::SYS_dup2 | l::SYS_dup3 | l::SYS_sendfile | l::SYS_tee => &[a[0], a[1]][..],
        l::SYS_copy_file_range | l::SYS_splice | l::SYS_epoll_ctl => &[a[0], a[2]],
        l::SYS_mmap if a[3] as i32 & l::MAP_ANONYMOUS == 0 => &[a[4]],
        l::SYS_read
        | l::SYS_write
        | l::SYS_close
        | l::SYS_fstat
        | l::SYS_lseek
        | l::SYS_pread64
        | l::SYS_pwrite64
        | l::SYS_readv
        | l::SYS_writev
        | l::SYS_preadv
        | l::SYS_pwritev
        | l::SYS_preadv2
        | l::SYS_pwritev2
        | l::SYS_ioctl
        | l::SYS_dup
        | l::SYS_fcntl
        | l::SYS_flock
        | l::SYS_fsync
        | l::SYS_fdatasync
        | l::SYS_ftruncate
        | l::SYS_fallocate
        | l::SYS_fadvise64
        | l::SYS_getdents
        | l::SYS_getdents64
        | l::SYS_fchdir
        | l::SYS_fchmod
        | l::SYS_fchown
        | l::SYS_fstatfs
        | l::SYS_fgetxattr
        | l::SYS_fsetxattr
        | l::SYS_flistxattr
        | l::SYS_fremovexattr
        | l::SYS_sync_file_range
        | l::SYS_syncfs
        | l::SYS_readahead => &[a[0]],
        _ => return None,
    };
    named.iter().any(|&fd| is_reserved(fd)).then_some(EBADF)
}

/// `poll`/`ppoll` of an array that names a reserved descriptor: as for a descriptor not
/// open, its entry gets POLLNVAL and the call returns at once. The others are polled without
/// waiting (what the kernel does once any entry is ready), the reserved ones left out.
fn poll(a: &[u64; 6]) -> Option<i64> {
    let n = a[1] as usize;
    if n == 0 || n > 1 << 16 {
        return None;
    }
    let mut raw = guest_mem::read_vec(a[0], n * 8)?;
    let fd = |e: &[u8]| i32::from_le_bytes(e[..4].try_into().unwrap());
    if !raw.chunks(8).any(|e| fd(e) >= 0 && is_reserved(fd(e) as u64)) {
        return None;
    }
    let mut host: Vec<libc::pollfd> = raw
        .chunks(8)
        .map(|e| libc::pollfd { fd: if fd(e) >= 0 && is_reserved(fd(e) as u64) { -1 } else { fd(e) }, events: i16::from_le_bytes([e[4], e[5]]), revents: 0 })
        .collect();
    // SAFETY: polls our own copy of the array, without waiting.
    let r = unsafe { syscall6(libc::SYS_poll as u64, [host.as_mut_ptr() as u64, n as u64, 0, 0, 0, 0]) };
    if r < 0 {
        return Some(r);
    }
    let mut ready = 0;
    for (e, h) in raw.chunks_mut(8).zip(&host) {
        let revents = if fd(e) >= 0 && is_reserved(fd(e) as u64) { libc::POLLNVAL } else { h.revents };
        e[6..8].copy_from_slice(&revents.to_le_bytes());
        ready += (revents != 0) as i64;
    }
    Some(if guest_mem::write(a[0], &raw) { ready } else { -(libc::EFAULT as i64) })
}

/// `select`/`pselect6` naming a reserved descriptor: it is taken out of the sets and the call
/// goes on, as natively for a descriptor past the process's descriptor table, which the
/// kernel's select ignores (the table grows by powers of two from 64 as descriptors are made;
/// a program's reaches the top of its limit, where rtgrind's are, only if it once had
/// descriptors past half of it, and then a closed one in the sets would be EBADF).
fn select(a: &[u64; 6]) -> Option<i64> {
    let nfds = (a[0] as u32).min(base() + RESERVED);
    for &set in a[1..4].iter().filter(|&&set| set != 0) {
        for fd in base()..nfds {
            let mut byte = [0u8];
            let at = set + fd as u64 / 8;
            if guest_mem::read(at, &mut byte) && byte[0] & (1 << (fd % 8)) != 0 {
                guest_mem::write(at, &[byte[0] & !(1 << (fd % 8))]);
            }
        }
    }
    None
}

/// `close_range(first, last, flags)` of the guest: the same over its descriptors below and
/// above the reserved range.
fn close_range(a: &[u64; 6]) -> i64 {
    let (first, last) = (a[0] as u32, a[1] as u32);
    let call = |lo: u32, hi: u32| {
        // SAFETY: closes (or marks close-on-exec) guest descriptors only: the range excludes
        // rtgrind's.
        unsafe { syscall6(libc::SYS_close_range as u64, [lo as u64, hi as u64, a[2], 0, 0, 0]) }
    };
    let (b, end) = (base(), base() + RESERVED);
    if first > last || last < b || first >= end {
        return call(first, last);
    }
    let mut r = 0;
    if first < b {
        r = call(first, b - 1);
    }
    if r == 0 && last >= end {
        r = call(end, last);
    }
    r
}

/// After a guest syscall that returned `ret`: a new descriptor that landed in the reserved
/// range is closed and the call fails as at the limit; the descriptor limit read is the
/// guest's.
pub fn after(nr: u64, a: &[u64; 6], ret: i64) -> i64 {
    if base() == u32::MAX || ret < 0 {
        return ret;
    }
    use libc as l;
    let close = |fd: i32| {
        // SAFETY: closing a descriptor the guest's call just made, which it never sees.
        unsafe { libc::close(fd) };
    };
    match nr as i64 {
        l::SYS_getrlimit if a[0] as u32 == l::RLIMIT_NOFILE => guest_limit(a[1]),
        l::SYS_prlimit64 if a[1] as u32 == l::RLIMIT_NOFILE && a[3] != 0 && (a[0] == 0 || a[0] as u32 == std::process::id()) => guest_limit(a[3]),
        l::SYS_pipe | l::SYS_pipe2 | l::SYS_socketpair => {
            let at = if nr as i64 == l::SYS_socketpair { a[3] } else { a[0] };
            let mut two = [0u8; 8];
            if !guest_mem::read(at, &mut two) {
                return ret;
            }
            let fds = [i32::from_le_bytes(two[..4].try_into().unwrap()), i32::from_le_bytes(two[4..].try_into().unwrap())];
            if fds.iter().all(|&fd| (fd as u32) < base()) {
                return ret;
            }
            fds.into_iter().for_each(close);
            EMFILE
        }
        l::SYS_open
        | l::SYS_openat
        | l::SYS_openat2
        | l::SYS_creat
        | l::SYS_dup
        | l::SYS_fcntl
        | l::SYS_socket
        | l::SYS_accept
        | l::SYS_accept4
        | l::SYS_epoll_create
        | l::SYS_epoll_create1
        | l::SYS_eventfd
        | l::SYS_eventfd2
        | l::SYS_signalfd
        | l::SYS_signalfd4
        | l::SYS_timerfd_create
        | l::SYS_memfd_create
        | l::SYS_inotify_init
        | l::SYS_inotify_init1
        | l::SYS_fanotify_init
        | l::SYS_pidfd_open
        | l::SYS_pidfd_getfd
        | l::SYS_userfaultfd
        | l::SYS_perf_event_open
        | l::SYS_open_by_handle_at
        | l::SYS_io_uring_setup
            if ret as u64 >= base() as u64 =>
        {
            if nr as i64 == l::SYS_fcntl && !matches!(a[1] as i32, l::F_DUPFD | l::F_DUPFD_CLOEXEC) {
                return ret;
            }
            close(ret as i32);
            EMFILE
        }
        _ => ret,
    }
}

/// The `struct rlimit` the guest just read at `at`: the soft limit rtgrind started under is
/// the reserved range's start to the guest.
fn guest_limit(at: u64) -> i64 {
    if guest_mem::read_u64(at) == Some(LIMIT.load(Ordering::Relaxed)) && !guest_mem::write_u64(at, base() as u64) {
        return -(libc::EFAULT as i64);
    }
    0
}
