//! The guest's system calls. Most pass straight to the kernel; the ones that touch what
//! rtgrind virtualizes (memory map, brk, signals, TLS, processes, exec, /proc/self/exe) are
//! emulated here.

use super::guest_mem;
use super::raw::{self, guarded_syscall6, syscall6};
use crate::run::Runtime;
use rtgrind_jit::context::reg;

/// Syscalls the kernel restarts after a handler installed with SA_RESTART.
pub fn restartable(nr: u64) -> bool {
    use libc as l;
    [
        l::SYS_read,
        l::SYS_write,
        l::SYS_readv,
        l::SYS_writev,
        l::SYS_pread64,
        l::SYS_pwrite64,
        l::SYS_ioctl,
        l::SYS_wait4,
        l::SYS_waitid,
        l::SYS_open,
        l::SYS_openat,
        l::SYS_futex,
        l::SYS_accept,
        l::SYS_accept4,
        l::SYS_recvfrom,
        l::SYS_recvmsg,
        l::SYS_sendto,
        l::SYS_sendmsg,
        l::SYS_flock,
        l::SYS_fcntl,
    ]
    .contains(&(nr as i64))
}

/// The x86-64 system call that does what i386 system call `nr` does (`int 0x80`), for those
/// whose arguments are numbers, strings and byte buffers (the same in both ABIs, but for
/// pointers, which must be below 4 GiB).
pub fn i386_call(nr: u32) -> Option<u64> {
    use libc as l;
    let x86_64 = match nr {
        1 => l::SYS_exit,
        3 => l::SYS_read,
        4 => l::SYS_write,
        6 => l::SYS_close,
        10 => l::SYS_unlink,
        12 => l::SYS_chdir,
        20 => l::SYS_getpid,
        27 => l::SYS_alarm,
        29 => l::SYS_pause,
        36 => l::SYS_sync,
        37 => l::SYS_kill,
        39 => l::SYS_mkdir,
        40 => l::SYS_rmdir,
        41 => l::SYS_dup,
        57 => l::SYS_setpgid,
        60 => l::SYS_umask,
        63 => l::SYS_dup2,
        64 => l::SYS_getppid,
        65 => l::SYS_getpgrp,
        66 => l::SYS_setsid,
        132 => l::SYS_getpgid,
        158 => l::SYS_sched_yield,
        199 => l::SYS_getuid,
        200 => l::SYS_getgid,
        201 => l::SYS_geteuid,
        202 => l::SYS_getegid,
        224 => l::SYS_gettid,
        238 => l::SYS_tkill,
        252 => l::SYS_exit_group,
        270 => l::SYS_tgkill,
        _ => return None,
    };
    Some(x86_64 as u64)
}

/// Syscalls that can wait in the kernel for something another thread does.
fn may_block(nr: u64) -> bool {
    use libc as l;
    [
        l::SYS_read,
        l::SYS_write,
        l::SYS_readv,
        l::SYS_writev,
        l::SYS_pread64,
        l::SYS_pwrite64,
        l::SYS_wait4,
        l::SYS_waitid,
        l::SYS_nanosleep,
        l::SYS_clock_nanosleep,
        l::SYS_poll,
        l::SYS_ppoll,
        l::SYS_select,
        l::SYS_pselect6,
        l::SYS_epoll_wait,
        l::SYS_epoll_pwait,
        l::SYS_accept,
        l::SYS_accept4,
        l::SYS_connect,
        l::SYS_recvfrom,
        l::SYS_recvmsg,
        l::SYS_sendto,
        l::SYS_sendmsg,
        l::SYS_pause,
        l::SYS_flock,
        l::SYS_msgrcv,
        l::SYS_semop,
        l::SYS_open,
        l::SYS_openat,
        l::SYS_rt_sigtimedwait,
        l::SYS_fcntl,
    ]
    .contains(&(nr as i64))
}

/// Whether a call `may_block` lists returns promptly all the same, so that the thread keeps
/// the baton (another thread taking it while the kernel answers would make the run's
/// interleaving depend on how fast it answers): reads and writes of regular files, block
/// devices and non-blocking descriptors; opening anything but a FIFO; `fcntl` other than
/// waiting for a lock.
fn prompt(nr: u64, a: &[u64; 6]) -> bool {
    use libc as l;
    let mode_of = |st: &l::stat| st.st_mode & l::S_IFMT;
    match nr as i64 {
        l::SYS_read | l::SYS_write | l::SYS_readv | l::SYS_writev | l::SYS_pread64 | l::SYS_pwrite64 => {
            let fd = a[0] as i32;
            // SAFETY: fstat and fcntl(F_GETFL) of a descriptor number into a local buffer.
            let (st, flags) = unsafe {
                let mut st: l::stat = std::mem::zeroed();
                if l::fstat(fd, &mut st) != 0 {
                    return true;
                }
                (st, l::fcntl(fd, l::F_GETFL))
            };
            matches!(mode_of(&st), l::S_IFREG | l::S_IFBLK) || (flags >= 0 && flags & l::O_NONBLOCK != 0)
        }
        l::SYS_open | l::SYS_openat => {
            let (dir, path) = if nr as i64 == l::SYS_open { (l::AT_FDCWD, a[0]) } else { (a[0] as i32, a[1]) };
            let Some(path) = crate::kernel::guest_mem::read_cstr(path, 4096).and_then(|p| std::ffi::CString::new(p).ok()) else { return true };
            // SAFETY: fstatat of a NUL-terminated path into a local buffer.
            let st = unsafe {
                let mut st: l::stat = std::mem::zeroed();
                if l::fstatat(dir, path.as_ptr(), &mut st, 0) != 0 {
                    return true;
                }
                st
            };
            mode_of(&st) != l::S_IFIFO
        }
        l::SYS_fcntl => !matches!(a[1] as i32, l::F_SETLKW | l::F_OFD_SETLKW),
        _ => false,
    }
}

const ENOSYS: i64 = -(libc::ENOSYS as i64);

impl Runtime {
    fn arg(&self, i: usize) -> u64 {
        let r = [reg::RDI, reg::RSI, reg::RDX, reg::R10, reg::R8, reg::R9][i];
        self.ctx.gpr[r as usize]
    }

    /// Handles the `syscall` the guest just executed (`ctx.rip` is already past it).
    /// The six syscall argument registers.
    pub fn syscall_args(&self) -> [u64; 6] {
        [self.arg(0), self.arg(1), self.arg(2), self.arg(3), self.arg(4), self.arg(5)]
    }

    pub fn syscall(&mut self) {
        let nr = self.ctx.gpr[reg::RAX as usize];
        let a = self.syscall_args();
        // The syscall instruction itself clobbers rcx and r11.
        self.ctx.gpr[reg::RCX as usize] = self.ctx.rip;
        self.ctx.gpr[reg::R11 as usize] = self.ctx.rflags;
        if self.foreign_buffer(nr, &a) {
            self.ctx.gpr[reg::RAX as usize] = -(libc::EFAULT as i64) as u64;
            return;
        }
        if let Some(r) = super::fds::before(nr, &a).or_else(|| self.answered_by_the_runtime(nr, a)) {
            self.ctx.gpr[reg::RAX as usize] = r as u64;
            return;
        }
        // (A search's run keeps the files it changes, as they were: `kernel::originals`.)
        if let Some(log) = self.p().created_log.as_ref() {
            for c in super::originals::changed_by(nr, &a) {
                super::originals::keep(&c, log);
            }
        }
        // (A search's run logs the names it creates: `kernel::created`.)
        let creates = self.p().created_log.as_ref().and_then(|_| super::created::target(nr, &a)).filter(|&(d, p)| !super::created::exists(d, p));
        let ret = match nr as i64 {
            libc::SYS_rt_sigreturn => {
                if !self.sig.sigreturn(&mut self.ctx) {
                    let info = crate::kernel::signals::SigInfo::new(libc::SIGSEGV, 0x80, 0);
                    self.die_by_signal(&info);
                }
                return;
            }
            libc::SYS_brk | libc::SYS_mmap | libc::SYS_munmap | libc::SYS_mprotect | libc::SYS_mremap | libc::SYS_madvise => self.memory_call(nr, a),
            libc::SYS_rt_sigaction => {
                if a[3] != 8 {
                    -(libc::EINVAL as i64)
                } else {
                    self.sig.sigaction(a[0] as i32, a[1], a[2])
                }
            }
            libc::SYS_rt_sigprocmask => {
                let r = self.sig.sigprocmask(a[0] as i32, a[1], a[2], a[3]);
                self.p().sched.set_mask(self.index, self.sig.mask);
                r
            }
            libc::SYS_sigaltstack => self.sig.sigaltstack(a[0], a[1], self.ctx.gpr[reg::RSP as usize]),
            libc::SYS_rt_sigsuspend => self.sigsuspend(nr, a[0]),
            libc::SYS_arch_prctl => self.arch_prctl(a[0] as i32, a[1]),
            libc::SYS_exit_group => self.program_exit(a[0] as i32),
            libc::SYS_exit => self.thread_exit(a[0] as i32),
            libc::SYS_futex => self.futex(a),
            libc::SYS_set_tid_address => {
                self.clear_child_tid = a[0];
                // SAFETY: gettid has no arguments and no side effects.
                unsafe { syscall6(libc::SYS_gettid as u64, [0; 6]) }
            }
            libc::SYS_clone => self.clone(a),
            libc::SYS_fork | libc::SYS_vfork => self.clone([libc::SIGCHLD as u64, 0, 0, 0, 0, 0]),
            libc::SYS_clone3 | libc::SYS_rseq => ENOSYS,
            libc::SYS_tgkill | libc::SYS_tkill => {
                let (tgid, tid, sig) = if nr as i64 == libc::SYS_tgkill { (a[0] as i32, a[1] as i32, a[2] as i32) } else { (-1, a[0] as i32, a[1] as i32) };
                self.tgkill(tgid, tid, sig).unwrap_or_else(|| self.passthrough(nr, a))
            }
            libc::SYS_execve => self.execve(a[0], a[1], a[2]),
            // The guest sees the CPUs it was allowed, not the one rtgrind pinned it to; its own
            // pinning is a no-op (every thread runs on that one CPU).
            libc::SYS_sched_getaffinity if self.p().cpus.is_some() => {
                let cpus = self.p().cpus.unwrap_or_default();
                let r = self.passthrough(nr, a);
                if r > 0 {
                    let bytes: Vec<u8> = cpus.iter().flat_map(|w| w.to_le_bytes()).collect();
                    guest_mem::write(a[2], &bytes[..(r as usize).min(128)]);
                }
                r
            }
            libc::SYS_sched_setaffinity if self.p().cpus.is_some() => 0,
            // Yielding is a switch point: the policy picks who runs next (a spinning thread
            // that yields lets the others on, and the order stays the scheduler's).
            libc::SYS_sched_yield if self.p().cache.preemption() => {
                let pc = self.ctx.rip;
                let q = self.p().sched.yield_now(self.index, pc, self.instance());
                self.set_quantum(q);
                0
            }
            // Kept by the runtime (see `release_robust_futexes`), not the kernel, whose own
            // processing at thread exit cannot wake waiters queued in the scheduler.
            libc::SYS_set_robust_list if a[1] == 24 => {
                self.robust_list = a[0];
                0
            }
            libc::SYS_execveat => ENOSYS,
            libc::SYS_readlink => self.readlink(libc::AT_FDCWD as u64, a[0], a[1], a[2]).unwrap_or_else(|| self.passthrough(nr, a)),
            libc::SYS_readlinkat => self.readlink(a[0], a[1], a[2], a[3]).unwrap_or_else(|| self.passthrough(nr, a)),
            libc::SYS_open => {
                let b = self.exe_alias(libc::AT_FDCWD as u64, a[0]);
                self.passthrough(nr, [b.unwrap_or(a[0]), a[1], a[2], a[3], a[4], a[5]])
            }
            libc::SYS_openat => {
                let b = self.exe_alias(a[0], a[1]);
                self.passthrough(nr, [a[0], b.unwrap_or(a[1]), a[2], a[3], a[4], a[5]])
            }
            // System V shared memory is the guest's memory (its buffers go to the kernel).
            libc::SYS_shmat => {
                let r = self.passthrough(nr, a);
                if r >= 0 {
                    // SAFETY: IPC_STAT fills the struct it is given.
                    let mut ds: libc::shmid_ds = unsafe { std::mem::zeroed() };
                    // SAFETY: as above, for the segment just attached.
                    if unsafe { libc::shmctl(a[0] as i32, libc::IPC_STAT, &mut ds) } == 0 {
                        let prot = if a[2] as i32 & libc::SHM_RDONLY != 0 { libc::PROT_READ } else { libc::PROT_READ | libc::PROT_WRITE };
                        let len = super::memory::page_up(ds.shm_segsz as u64);
                        self.p().mem.add(r as u64, len, prot, Some("/SYSV".to_string()));
                    }
                }
                r
            }
            libc::SYS_shmdt => {
                let r = self.passthrough(nr, a);
                if r == 0 {
                    if let Some((s, reg)) = self.p().mem.region_at(a[0]).map(|(s, r)| (s, r.end)) {
                        self.p().mem.remove(s, reg - s);
                    }
                }
                r
            }
            libc::SYS_getdents64 => {
                let r = self.passthrough(nr, a);
                self.fd_dir_entries(a[0], a[1], r)
            }
            // (`prompt` matters only when another thread could take the baton: no extra
            // syscalls for a single thread's reads and writes.)
            _ if may_block(nr) && (!self.p().cache.preemption() || !prompt(nr, &a)) => self.blocking_call(nr, a),
            _ => self.passthrough(nr, a),
        };
        let ret = super::fds::after(nr, &a, ret);
        if ret == -(libc::EINTR as i64) {
            self.interrupted_syscall = Some((nr, nr));
        }
        if ret >= 0 {
            self.maybe_shrunk(nr, a, ret);
            if let (Some((dir, path)), Some(log)) = (creates, self.p().created_log.as_mut()) {
                log.record(dir, path);
            }
        }
        self.ctx.gpr[reg::RAX as usize] = ret as u64;
    }

    /// After a call that may have shrunk a file (truncate, ftruncate, an open with O_TRUNC):
    /// the translations of code mapped from it go, so code fetched past its new end raises
    /// SIGBUS as natively instead of running from the old translation.
    fn maybe_shrunk(&mut self, nr: u64, a: [u64; 6], ret: i64) {
        use std::os::unix::fs::MetadataExt;
        let trunc = libc::O_TRUNC as u64;
        let id = match nr as i64 {
            libc::SYS_ftruncate => super::memory::file_id(a[0] as i32),
            libc::SYS_creat => super::memory::file_id(ret as i32),
            libc::SYS_open if a[1] & trunc != 0 => super::memory::file_id(ret as i32),
            libc::SYS_openat if a[2] & trunc != 0 => super::memory::file_id(ret as i32),
            libc::SYS_truncate => {
                use std::os::unix::ffi::OsStringExt;
                let path = guest_mem::read_cstr(a[0], 4096).map(std::ffi::OsString::from_vec);
                path.and_then(|p| std::fs::metadata(p).ok()).map(|m| (m.dev(), m.ino()))
            }
            _ => return,
        };
        let Some(id) = id else { return };
        for (s, e) in self.p().mem.exec_ranges_of(id) {
            self.invalidate(s, e);
        }
    }

    /// What the runtime answers itself, before any emulation: an open of a file of the
    /// process's own `/proc` directory (`kernel::procfs`: the guest's, not rtgrind's), and in a
    /// repeatable run the random devices and the calls that read the machine (`kernel::repeat`).
    fn answered_by_the_runtime(&mut self, nr: u64, a: [u64; 6]) -> Option<i64> {
        let maps = match nr as i64 {
            libc::SYS_open => self.proc_open(libc::AT_FDCWD as u64, a[0], a[1]),
            libc::SYS_openat => self.proc_open(a[0], a[1], a[2]),
            // `/proc/self/fd/N` of one of rtgrind's descriptors is not found.
            libc::SYS_stat | libc::SYS_lstat | libc::SYS_access => self.rtgrind_fd_path(libc::AT_FDCWD as u64, a[0]),
            libc::SYS_newfstatat | libc::SYS_statx | libc::SYS_faccessat | libc::SYS_faccessat2 => self.rtgrind_fd_path(a[0], a[1]),
            _ => None,
        };
        if let Some(fd) = maps {
            return Some(fd);
        }
        self.p().repeat.as_ref()?;
        let dev = match nr as i64 {
            libc::SYS_open => self.random_device(a[0]),
            libc::SYS_openat => self.random_device(a[1]),
            _ => None,
        };
        dev.or_else(|| self.p().repeat.as_mut().and_then(|r| r.syscall(nr, a)))
    }

    /// brk, mmap, munmap, mprotect, mremap, madvise: on the guest's memory map, dropping the
    /// translations of code they change.
    fn memory_call(&mut self, nr: u64, a: [u64; 6]) -> i64 {
        let end = a[0].saturating_add(a[1]);
        match nr as i64 {
            libc::SYS_brk => self.p().mem.guest_brk(a[0]) as i64,
            libc::SYS_mmap => {
                let fixed = a[3] as i32 & libc::MAP_FIXED != 0;
                let r = self.p().mem.guest_mmap(a[0], a[1], a[2] as i32, a[3] as i32, a[4] as i32, a[5]);
                if fixed && r >= 0 {
                    self.invalidate(a[0], a[0] + a[1]);
                }
                r
            }
            libc::SYS_munmap => {
                self.invalidate(a[0], end);
                self.p().mem.guest_munmap(a[0], a[1])
            }
            libc::SYS_mprotect => {
                self.invalidate(a[0], end);
                self.p().mem.guest_mprotect(a[0], a[1], a[2] as i32)
            }
            libc::SYS_mremap => {
                self.invalidate(a[0], end);
                self.p().mem.guest_mremap(a[0], a[1], a[2], a[3] as i32, a[4])
            }
            _ => {
                if !self.p().mem.gaps(a[0], end).is_empty() && a[2] as i32 == libc::MADV_DONTNEED {
                    -(libc::ENOMEM as i64)
                } else {
                    self.invalidate(a[0], end);
                    self.passthrough(nr, a)
                }
            }
        }
    }

    /// rt_sigsuspend with the mask at `mask_at`.
    fn sigsuspend(&mut self, nr: u64, mask_at: u64) -> i64 {
        let Some(m) = guest_mem::read_u64(mask_at) else { return -(libc::EFAULT as i64) };
        let old = self.sig.mask;
        // The kernel swaps the mask and sleeps atomically; a signal already queued by
        // rtgrind's handler that `m` unblocks ends the wait at once.
        if !self.sig.pending_under(m) {
            let real = crate::kernel::signals::real_mask(m);
            let threads = self.p().cache.preemption();
            if threads {
                let pc = self.ctx.rip;
                self.p().sched.syscall_begin(self.index, nr, pc, self.instance());
            }
            // SAFETY: rt_sigsuspend with a mask we own; fault signals stay unblocked.
            let _ = unsafe { guarded_syscall6(nr, [&real as *const u64 as u64, 8, 0, 0, 0, 0]) };
            if threads {
                let q = self.p().sched.syscall_end(self.index);
                self.set_quantum(q);
            }
        }
        self.sig.mask = m;
        self.saved_mask = Some(old);
        -(libc::EINTR as i64)
    }

    /// A call that may wait in the kernel: other threads run meanwhile, and a signal already
    /// pending for the guest interrupts it before it starts.
    fn blocking_call(&mut self, nr: u64, a: [u64; 6]) -> i64 {
        let threads = self.p().cache.preemption();
        if threads {
            // Let other threads run while this one may wait in the kernel.
            let pc = self.ctx.rip;
            self.p().sched.syscall_begin(self.index, nr, pc, self.instance());
        }
        // SAFETY: as in `passthrough`; the process state is not touched meanwhile.
        let r = if self.sig.pending_under(self.sig.mask) { -(libc::EINTR as i64) } else { unsafe { guarded_syscall6(nr, a) } };
        if threads {
            let q = self.p().sched.syscall_end(self.index);
            self.set_quantum(q);
        }
        r
    }

    /// tgkill/tkill to another thread of this process: queued by the scheduler (so the
    /// signal reaches the thread even while it waits for the baton, and deterministically).
    /// None: not ours to emulate, pass it to the kernel.
    fn tgkill(&mut self, tgid: i32, tid: i32, sig: i32) -> Option<i64> {
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() };
        if !self.p().cache.preemption() || (tgid != -1 && tgid != pid) || !(1..65).contains(&sig) {
            return None;
        }
        let to = self.p().sched.thread_of_tid(tid)?;
        if to == self.index {
            return None;
        }
        let mut info = crate::kernel::signals::SigInfo::new(sig, -6 /* SI_TKILL */, 0);
        info.raw[16..20].copy_from_slice(&pid.to_le_bytes());
        // SAFETY: getuid has no preconditions.
        info.raw[20..24].copy_from_slice(&unsafe { libc::getuid() }.to_le_bytes());
        self.p().sched.send_directed(to, info.raw).then_some(0)
    }

    fn passthrough(&mut self, nr: u64, a: [u64; 6]) -> i64 {
        // SAFETY: syscalls not emulated above act on guest memory and guest file descriptors;
        // the ones that could change rtgrind's own state (memory map, signals, TLS, threads,
        // exec) are all emulated.
        let r = unsafe { syscall6(nr, a) };
        if r == -(libc::EFAULT as i64) {
            // Maybe it wrote into a page we write-protected for code: unprotect and retry.
            let wp = self.p().mem.unprotect_all_code();
            if !wp.is_empty() {
                for (s, e) in wp {
                    self.invalidate(s, e);
                }
                // SAFETY: as above.
                return unsafe { syscall6(nr, a) };
            }
        }
        r
    }

    fn arch_prctl(&mut self, code: i32, addr: u64) -> i64 {
        const SET_GS: i32 = 0x1001;
        const SET_FS: i32 = 0x1002;
        const GET_FS: i32 = 0x1003;
        const GET_GS: i32 = 0x1004;
        match code {
            SET_FS => {
                self.ctx.fs_base = addr;
                0
            }
            SET_GS => {
                // (The kernel loads the null selector, then the base.)
                self.ctx.gs_base = addr;
                self.ctx.gs_selector = 0;
                0
            }
            GET_FS | GET_GS => {
                let v = if code == GET_FS { self.ctx.fs_base } else { self.ctx.gs_base };
                if guest_mem::write_u64(addr, v) {
                    0
                } else {
                    -(libc::EFAULT as i64)
                }
            }
            _ => -(libc::EINVAL as i64),
        }
    }

    /// Forks the whole process (rtgrind and the guest) with clone `flags` (no CLONE_VM): the
    /// child gets a private copy of the code cache. Returns the child's pid in the parent, 0
    /// in the child, or a negative errno.
    pub fn fork_process(&mut self, flags: u64, parent_tid: u64, child_tid: u64) -> i64 {
        let snap = match self.p().cache.prepare_fork() {
            Ok(s) => s,
            Err(e) if raw::seccomp_filtered() => {
                // Natively the fork needs no new mapping; rtgrind's copy of its code cache
                // does, and the filter denied it: say so rather than fail the guest's fork.
                let pc = self.ctx.rip - 2;
                let p = self.p();
                let place = p.report.describe_pc(pc, &p.mem);
                p.report
                    .error(&format!("unsupported: fork at {pc:#x}{place}: rtgrind cannot copy its code cache for the child ({e}): {}", raw::SECCOMP_DENIED));
                self.finish_and_exit(crate::EXIT_UNSUPPORTED);
            }
            Err(_) => return -(libc::ENOMEM as i64),
        };
        self.p().report.flush();
        // SAFETY: a clone without CLONE_VM and without a new stack is a fork: the child gets a
        // copy of rtgrind and continues from here on its own copy of the host stack.
        let r = unsafe { syscall6(libc::SYS_clone as u64, [flags, 0, parent_tid, child_tid, 0, 0]) };
        if r != 0 {
            self.p().cache.discard_fork(snap);
            return r;
        }
        self.sig.clear_pending();
        // The child has one thread: it runs where the program was allowed to (and pins itself
        // again if it creates threads).
        if let Some(cpus) = self.p().cpus.take() {
            raw::set_affinity(&cpus);
        }
        if let Err(e) = self.p().cache.after_fork_child(snap) {
            self.p().report.error(&format!("cannot copy the code cache after fork: {e}"));
            self.finish_and_exit(crate::EXIT_INTERNAL);
        }
        0
    }

    /// clone/fork/vfork. Processes (no CLONE_VM) work: the child continues under rtgrind.
    /// vfork and CLONE_VM|CLONE_VFORK become a plain fork, as in Valgrind.
    fn clone(&mut self, a: [u64; 6]) -> i64 {
        let flags = a[0];
        let vm = flags & libc::CLONE_VM as u64 != 0;
        let vfork = flags & libc::CLONE_VFORK as u64 != 0;
        if vm && !vfork {
            return self.clone_thread(a);
        }
        let new_flags = flags & !((libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_SETTLS) as u64);
        let r = self.fork_process(new_flags, a[2], a[3]);
        if r != 0 {
            return r;
        }
        if a[1] != 0 {
            self.ctx.gpr[reg::RSP as usize] = a[1];
        }
        if flags & libc::CLONE_SETTLS as u64 != 0 {
            self.ctx.fs_base = a[4];
        }
        r
    }

    fn execve(&mut self, path_p: u64, argv_p: u64, envp_p: u64) -> i64 {
        // `/proc/self/exe` is rtgrind to the kernel: the program starts itself again.
        let path_p = self.exe_alias(libc::AT_FDCWD as u64, path_p).unwrap_or(path_p);
        if !self.p().config.trace_children {
            return self.passthrough(libc::SYS_execve as u64, [path_p, argv_p, envp_p, 0, 0, 0]);
        }
        let (Some(path), Some(argv), Some(envp)) = (guest_mem::read_cstr(path_p, 4096), guest_mem::read_str_array(argv_p), guest_mem::read_str_array(envp_p))
        else {
            return -(libc::EFAULT as i64);
        };
        let cpath = std::ffi::CString::new(path.clone()).unwrap_or_default();
        // SAFETY: access() with a valid C string.
        if unsafe { libc::access(cpath.as_ptr(), libc::X_OK) } != 0 {
            return -(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::ENOENT) as i64);
        }
        let mut args: Vec<Vec<u8>> = vec![self.p().config.self_exe.as_os_str().as_encoded_bytes().to_vec()];
        args.extend(self.p().config.child_opts.iter().map(|s| s.as_bytes().to_vec()));
        args.push(b"--".to_vec());
        args.push(path);
        args.extend(argv.into_iter().skip(1));
        let c = |v: &Vec<u8>| std::ffi::CString::new(v.clone()).unwrap_or_default();
        let cargs: Vec<_> = args.iter().map(c).collect();
        let cenv: Vec<_> = envp.iter().map(c).collect();
        let mut pa: Vec<*const libc::c_char> = cargs.iter().map(|s| s.as_ptr()).collect();
        pa.push(std::ptr::null());
        let mut pe: Vec<*const libc::c_char> = cenv.iter().map(|s| s.as_ptr()).collect();
        pe.push(std::ptr::null());
        self.p().report.flush();
        let exe = c(&self.p().config.self_exe.as_os_str().as_encoded_bytes().to_vec());
        // SAFETY: NULL-terminated argument and environment arrays of live C strings.
        unsafe { libc::execve(exe.as_ptr(), pa.as_ptr(), pe.as_ptr()) };
        -(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::ENOEXEC) as i64)
    }

    /// In repeatable mode, /dev/urandom and /dev/random are files of seeded bytes.
    fn random_device(&mut self, path: u64) -> Option<i64> {
        self.p().repeat.as_mut()?.random_device(path)
    }

    /// Whether a buffer the call `nr` would read or write with the kernel's copy reaches
    /// rtgrind's memory (`kernel::buffers`): the call then fails with EFAULT as natively,
    /// where nothing is mapped there, instead of reading or writing rtgrind.
    fn foreign_buffer(&self, nr: u64, a: &[u64; 6]) -> bool {
        super::buffers::reach_runtime(&self.p().mem, nr, a)
    }

    /// Whether the path at `p` (relative to `dirfd`) is the process's own `/proc/.../exe`.
    fn is_self_exe(&self, dirfd: u64, p: u64) -> bool {
        super::procfs::proc_path(dirfd, p).is_some_and(|path| super::procfs::own_file(&path) == Some(super::procfs::OwnFile::Exe))
    }

    /// ENOENT if the path at `p` (relative to `dirfd`) is `fd/N` or `fdinfo/N` of one of
    /// rtgrind's descriptors in the process's own `/proc` directory.
    fn rtgrind_fd_path(&self, dirfd: u64, p: u64) -> Option<i64> {
        let path = super::procfs::proc_path(dirfd, p)?;
        (super::procfs::own_file(&path) == Some(super::procfs::OwnFile::RtgrindFd)).then_some(-(libc::ENOENT as i64))
    }

    /// readlink of /proc/self/exe names the guest program, not rtgrind; `/proc/self/fd/N` of
    /// one of rtgrind's descriptors is not found.
    fn readlink(&mut self, dirfd: u64, path: u64, buf: u64, size: u64) -> Option<i64> {
        if let Some(r) = self.rtgrind_fd_path(dirfd, path) {
            return Some(r);
        }
        if !self.is_self_exe(dirfd, path) {
            return None;
        }
        let s = self.p().exe_path.as_os_str().as_encoded_bytes();
        let n = s.len().min(size as usize);
        Some(if guest_mem::write(buf, &s[..n]) { n as i64 } else { -(libc::EFAULT as i64) })
    }

    /// For open("/proc/self/exe"): a guest address holding the guest program's path.
    fn exe_alias(&mut self, dirfd: u64, path: u64) -> Option<u64> {
        if !self.is_self_exe(dirfd, path) {
            return None;
        }
        let mut s = self.p().exe_path.as_os_str().as_encoded_bytes().to_vec();
        s.push(0);
        // Put the string below the guest's red zone; it is only read by the kernel.
        let at = (self.ctx.gpr[reg::RSP as usize] - 128 - s.len() as u64 - 64) & !15;
        guest_mem::write(at, &s).then_some(at)
    }
}
