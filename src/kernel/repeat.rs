//! Repeatable mode (`--repeatable=yes`): the inputs a program gets from the machine rather
//! than from its user are pinned, so every run of the same command sees the same values.
//!
//! Pinned: address-space layout (ASLR off for rtgrind and the guest), AT_RANDOM, `getrandom`,
//! reads of /dev/urandom and /dev/random (all from `--seed`), the clocks (`clock_gettime`,
//! `gettimeofday`, `time`) and `rdtsc`/`rdtscp`, which advance by a fixed step per call from
//! a fixed epoch; CPU time and resource use (`times`, `getrusage`, `sysinfo`), which follow
//! the same clock; `rdrand` and `rdseed` (from `--seed`); pids and tids (a pid namespace, where
//! the system allows one). Standard input is pinned separately, with `--stdin-file`
//! (`stdin_from_file`). Not pinned: files the system writes (`/proc/uptime`, `/proc/self/stat`,
//! `/proc/meminfo`) and files an earlier run left behind.

use super::guest_mem;

/// 2001-09-09 01:46:40 UTC: the virtual clock's start.
const EPOCH_NS: u64 = 1_000_000_000 * 1_000_000_000;
/// How far the virtual clocks move per call.
const STEP_NS: u64 = 1_000;
const TSC_STEP: u64 = 2_500;
/// How long the virtual machine had been up at the virtual clock's start, in seconds.
const BOOT_S: u64 = 1_000;

pub struct Repeatable {
    rng: u64,
    clock_ns: u64,
    tsc: u64,
}

/// SplitMix64: a small, fast, well-mixed generator for seeded (reproducible) choices.
pub(crate) fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Turns ASLR off for this process and re-executes it (the layout of rtgrind itself is chosen
/// before main runs). Returns only if ASLR is already off.
/// `--stdin-file=FILE`: the guest reads FILE as its standard input. A FILE that does not exist
/// yet is first created from rtgrind's own standard input (read to its end), so the first run
/// captures the input and every later run with the same option replays it byte for byte. An
/// existing FILE is only read, never changed. Returns whether the input was captured now.
pub fn stdin_from_file(path: &std::path::Path) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    let captured = match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(mut f) => {
            std::io::copy(&mut std::io::stdin().lock(), &mut f)?;
            true
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
        Err(e) => return Err(e),
    };
    let f = std::fs::File::open(path)?;
    // SAFETY: dup2 onto fd 0 replaces only rtgrind's (and so the guest's) standard input; `f`
    // keeps its own descriptor, closed when it drops.
    if unsafe { libc::dup2(f.as_raw_fd(), 0) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(captured)
}

const ADDR_NO_RANDOMIZE: libc::c_ulong = 0x0040000;

/// Turns address-space randomization off for the programs this process executes next; whether
/// it was on. Async-signal-safe (two system calls): a search calls it between fork and exec of
/// a repeatable run, which then need not execute itself again (`ensure_no_aslr`).
pub fn no_aslr_at_exec() -> bool {
    // SAFETY: personality(0xffffffff) only queries.
    let cur = unsafe { libc::personality(0xffff_ffff) };
    if cur < 0 || cur as libc::c_ulong & ADDR_NO_RANDOMIZE != 0 {
        return false;
    }
    // SAFETY: sets a flag that takes effect at the next execve.
    unsafe { libc::personality(cur as libc::c_ulong | ADDR_NO_RANDOMIZE) };
    true
}

/// Runs this rtgrind again without address-space randomization if it has it (a repeatable
/// run's addresses must be the same in every run).
pub fn ensure_no_aslr() {
    if !no_aslr_at_exec() {
        return;
    }
    let args: Vec<std::ffi::CString> = std::env::args_os().map(|a| std::ffi::CString::new(a.into_encoded_bytes()).unwrap_or_default()).collect();
    let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    // SAFETY: NULL-terminated argv of live C strings; the environment is inherited.
    unsafe { libc::execv(c"/proc/self/exe".as_ptr(), argv.as_ptr()) };
    // If exec failed, run with ASLR on: values other than addresses are still pinned.
}

impl Repeatable {
    pub fn new(seed: u64) -> Repeatable {
        Repeatable { rng: seed ^ 0x05ee_d0fc_0ffe, clock_ns: EPOCH_NS, tsc: 1 << 32 }
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n + 8);
        while v.len() < n {
            v.extend_from_slice(&splitmix(&mut self.rng).to_le_bytes());
        }
        v.truncate(n);
        v
    }

    /// What `rdrand` or `rdseed` gives.
    pub fn random_u64(&mut self) -> u64 {
        splitmix(&mut self.rng)
    }

    pub fn rdtsc(&mut self) -> u64 {
        self.tsc += TSC_STEP;
        self.tsc
    }

    fn now(&mut self) -> u64 {
        self.clock_ns += STEP_NS;
        self.clock_ns
    }

    /// The syscalls repeatable mode answers itself; None: not one of them.
    pub fn syscall(&mut self, nr: u64, a: [u64; 6]) -> Option<i64> {
        let fault = -(libc::EFAULT as i64);
        match nr as i64 {
            libc::SYS_getrandom => {
                let n = (a[1] as usize).min(1 << 25);
                let b = self.bytes(n);
                Some(if guest_mem::write(a[0], &b) { n as i64 } else { fault })
            }
            libc::SYS_clock_gettime => {
                let t = self.now();
                let mut ts = [0u8; 16];
                ts[..8].copy_from_slice(&(t / 1_000_000_000).to_le_bytes());
                ts[8..].copy_from_slice(&(t % 1_000_000_000).to_le_bytes());
                Some(if a[1] == 0 || guest_mem::write(a[1], &ts) { 0 } else { fault })
            }
            libc::SYS_gettimeofday => {
                let t = self.now();
                let mut tv = [0u8; 16];
                tv[..8].copy_from_slice(&(t / 1_000_000_000).to_le_bytes());
                tv[8..].copy_from_slice(&(t % 1_000_000_000 / 1000).to_le_bytes());
                Some(if a[0] == 0 || guest_mem::write(a[0], &tv) { 0 } else { fault })
            }
            libc::SYS_time => {
                let s = self.now() / 1_000_000_000;
                Some(if a[0] == 0 || guest_mem::write_u64(a[0], s) { s as i64 } else { fault })
            }
            // CPU time and resource use follow the virtual clock; the rest of their fields
            // (page faults, context switches, maximum RSS...) are zero.
            libc::SYS_times => {
                let ticks = (self.now() - EPOCH_NS) / 10_000_000 + BOOT_S * 100;
                let mut tms = [0u8; 32];
                tms[..8].copy_from_slice(&ticks.to_le_bytes());
                Some(if a[0] == 0 || guest_mem::write(a[0], &tms) { ticks as i64 } else { fault })
            }
            libc::SYS_getrusage => {
                let cpu = self.now() - EPOCH_NS;
                let mut ru = [0u8; 144];
                ru[..8].copy_from_slice(&(cpu / 1_000_000_000).to_le_bytes());
                ru[8..16].copy_from_slice(&(cpu % 1_000_000_000 / 1000).to_le_bytes());
                Some(if guest_mem::write(a[1], &ru) { 0 } else { fault })
            }
            libc::SYS_sysinfo => self.sysinfo(a[0]),
            _ => None,
        }
    }

    /// `sysinfo`: the machine's sizes, with uptime on the virtual clock, no load, half the
    /// memory free and one process (free memory and load differ from run to run).
    fn sysinfo(&mut self, at: u64) -> Option<i64> {
        // SAFETY: sysinfo writes one struct sysinfo into a local.
        let mut si: libc::sysinfo = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::sysinfo(&mut si) } != 0 {
            return Some(-(libc::EFAULT as i64));
        }
        si.uptime = ((self.now() - EPOCH_NS) / 1_000_000_000 + BOOT_S) as i64;
        si.loads = [0; 3];
        si.freeram = si.totalram / 2;
        si.sharedram = 0;
        si.bufferram = 0;
        si.freeswap = si.totalswap;
        si.procs = 1;
        // SAFETY: a plain-old-data struct viewed as its bytes.
        let bytes = unsafe { std::slice::from_raw_parts(&si as *const libc::sysinfo as *const u8, std::mem::size_of::<libc::sysinfo>()) };
        Some(if guest_mem::write(at, bytes) { 0 } else { -(libc::EFAULT as i64) })
    }

    /// For open("/dev/urandom" or "/dev/random"): a file of seeded bytes instead.
    pub fn random_device(&mut self, path: u64) -> Option<i64> {
        let p = guest_mem::read_cstr(path, 32)?;
        if p != b"/dev/urandom" && p != b"/dev/random" {
            return None;
        }
        // SAFETY: memfd_create with a static name; the fd is handed to the guest.
        let fd = unsafe { libc::memfd_create(c"rtgrind-random".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Some(-(libc::EMFILE as i64));
        }
        let data = self.bytes(1 << 20);
        // SAFETY: writing our own buffer to our own memfd, then rewinding it.
        unsafe {
            libc::write(fd, data.as_ptr() as *const libc::c_void, data.len());
            libc::lseek(fd, 0, libc::SEEK_SET);
        }
        Some(fd as i64)
    }
}

/// Gives the guest fixed process and thread ids: the program runs as pid 2 of a new pid
/// namespace (pid 1 is a small rtgrind reaper that passes the exit status out), so getpid,
/// gettid and everything derived from them are the same in every run. Needs the right to
/// create a pid namespace (root, or unprivileged user namespaces); without it, pids stay the
/// kernel's. Returns in the process that is to run the guest.
pub fn enter_pid_namespace() {
    // SAFETY: unshare only affects the pid namespace of this process's future children.
    if unsafe { libc::unshare(libc::CLONE_NEWPID) } != 0 {
        return;
    }
    // The reaper reports a death by signal through this pipe (an init cannot die of a
    // signal it sends itself, and an exit code could be the guest's own).
    let mut pipe = [0i32; 2];
    // SAFETY: creating a pipe into a local array.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return;
    }
    // SAFETY: fork in a single-threaded process (rtgrind has started no threads yet).
    let init = unsafe { libc::fork() };
    if init < 0 {
        return;
    }
    if init > 0 {
        // SAFETY: closing our copy of the write end.
        unsafe { libc::close(pipe[1]) };
        forward_signals_to(init);
        std::process::exit(wait_and_replicate(init, pipe[0]));
    }
    // SAFETY: the reaper and the guest do not read the pipe.
    unsafe { libc::close(pipe[0]) };
    // pid 1 of the new namespace: run the guest as pid 2 and reap everything.
    // SAFETY: as above.
    let guest = unsafe { libc::fork() };
    if guest == 0 {
        // SAFETY: the guest does not report through the pipe.
        unsafe { libc::close(pipe[1]) };
        return;
    }
    if guest < 0 {
        std::process::exit(crate::EXIT_INTERNAL);
    }
    forward_signals_to(guest);
    loop {
        let mut status = 0;
        // SAFETY: waiting for any child of the namespace's init.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == guest {
            if libc::WIFSIGNALED(status) {
                let sig = libc::WTERMSIG(status) as u8;
                // SAFETY: one byte to the outer rtgrind.
                unsafe { libc::write(pipe[1], &sig as *const u8 as *const libc::c_void, 1) };
            }
            // SAFETY: ends the reaper (and with it the namespace's remaining processes).
            unsafe { libc::_exit(if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 0 }) };
        }
        if pid < 0 {
            // SAFETY: as above.
            unsafe { libc::_exit(crate::EXIT_INTERNAL) };
        }
    }
}

static FORWARD_TO: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn forward(sig: libc::c_int) {
    // SAFETY: kill is async-signal-safe.
    unsafe { libc::kill(FORWARD_TO.load(std::sync::atomic::Ordering::SeqCst), sig) };
}

/// Passes the signals a user sends to a command on to `pid`.
fn forward_signals_to(pid: i32) {
    FORWARD_TO.store(pid, std::sync::atomic::Ordering::SeqCst);
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2] {
        // SAFETY: installing an async-signal-safe handler.
        unsafe { libc::signal(sig, forward as *const () as libc::sighandler_t) };
    }
}

/// Waits for the namespace's init and ends this process the way the guest ended.
fn wait_and_replicate(init: i32, pipe: i32) -> i32 {
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(init, &mut status, 0) };
        if r == init || (r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)) {
            break;
        }
    }
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { crate::EXIT_INTERNAL };
    let mut sig_byte = 0u8;
    // SAFETY: reading one byte from our pipe; the writer has exited, so this cannot block.
    if unsafe { libc::read(pipe, &mut sig_byte as *mut u8 as *mut libc::c_void, 1) } == 1 {
        super::raw::die_of_signal(sig_byte as i32);
    }
    code
}
