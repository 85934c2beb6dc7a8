//! Guest threads: `clone` with CLONE_VM|CLONE_THREAD, thread exit with CLONE_CHILD_CLEARTID,
//! and `futex`, all under the deterministic scheduler (`sched.rs`). Each guest thread is a host
//! thread of its own (so it has its own kernel tid, signal mask and `gs`-based context), but
//! only the thread holding the scheduler's baton runs.

use super::guest_mem;
use super::memory::raw_mmap;
use super::raw::{self, syscall6};
use super::sched::Deadlock;
use super::signals::Signals;
use crate::run::{Runtime, SendRuntime};
use rtgrind_jit::context::reg;
use rtgrind_jit::ThreadContext;

const FUTEX_WAIT: i32 = 0;
const FUTEX_WAKE: i32 = 1;
const FUTEX_REQUEUE: i32 = 3;
const FUTEX_CMP_REQUEUE: i32 = 4;
const FUTEX_WAKE_OP: i32 = 5;
const FUTEX_WAIT_BITSET: i32 = 9;
const FUTEX_WAKE_BITSET: i32 = 10;
/// Exit status when every guest thread waits forever.
pub const EXIT_DEADLOCK: i32 = 123;

fn read_u32(addr: u64) -> Option<u32> {
    let mut b = [0u8; 4];
    guest_mem::read(addr, &mut b).then(|| u32::from_le_bytes(b))
}

/// Where the host stacks of guest threads go: a slice of the address space no guest has
/// anything in (between the code cache's writable views at 0x5100_0000_0000 and PIE programs
/// at 0x5555_..., apart from the shadow slices). Left to glibc (std's threads), each went right
/// below its guest thread's stack, among the guest's mappings: a guest store a few MiB below a
/// thread stack, which natively faults, wrote into rtgrind's stack without a fault.
const HOST_STACKS: u64 = 0x5200_0000_0000;
/// A host thread's stack (glibc puts the thread's TLS and descriptor at its top).
const HOST_STACK: u64 = 2 << 20;
/// Each stack sits at the top of a slot of twice its size whose lower half stays PROT_NONE:
/// a guard below every stack, and the next slot's guard above it.
const STACK_SLOT: u64 = 2 * HOST_STACK;

/// The host stacks made so far: the next slot to try, the threads running on them (a stack
/// is taken again once its thread has exited: `pthread_tryjoin_np`) and the unused ones.
struct HostStacks {
    next: u64,
    pid: i32,
    used: Vec<(libc::pthread_t, u64)>,
    free: Vec<u64>,
}

static HOST_STACK_POOL: std::sync::Mutex<HostStacks> = std::sync::Mutex::new(HostStacks { next: 0, pid: 0, used: Vec::new(), free: Vec::new() });

/// The low end of a host stack of `HOST_STACK` bytes with a guard gap below and above it, in
/// the `HOST_STACKS` slice (or where the kernel puts it if the slice is full), or one an
/// exited thread left.
fn host_stack(pool: &mut HostStacks) -> Option<u64> {
    // SAFETY: getpid has no arguments and no side effects.
    let pid = unsafe { libc::getpid() };
    if pool.pid != pid {
        // A forked child: the threads are its parent's (their stacks are left as they are).
        pool.pid = pid;
        pool.used.clear();
    }
    if let Some(s) = pool.free.pop() {
        return Some(s);
    }
    if let Some(i) = pool.used.iter().position(|&(t, _)| {
        // SAFETY: `t` is a joinable thread of this process not joined yet; joining it when it
        // has exited (its kernel tid cleared) frees only glibc's descriptor, not the stack.
        unsafe { libc::pthread_tryjoin_np(t, std::ptr::null_mut()) == 0 }
    }) {
        return Some(pool.used.swap_remove(i).1);
    }
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
    let slots = (1u64 << 40) / STACK_SLOT;
    let mut slot = None;
    while slot.is_none() && pool.next < slots {
        let at = HOST_STACKS + pool.next * STACK_SLOT;
        match raw_mmap(at, STACK_SLOT, libc::PROT_NONE, flags | libc::MAP_FIXED_NOREPLACE, -1, 0) {
            Ok(p) if p == at => slot = Some(at),
            Ok(p) => {
                // SAFETY: an old kernel placed our fresh mapping elsewhere; it is ours to drop.
                unsafe { libc::munmap(p as *mut libc::c_void, STACK_SLOT as usize) };
            }
            Err(libc::EEXIST) => {}
            // Not a slot taken: no memory, or a seccomp filter. Try it again next time.
            Err(_) => return None,
        }
        pool.next += 1;
    }
    let slot = match slot {
        Some(s) => s,
        None => raw_mmap(0, STACK_SLOT, libc::PROT_NONE, flags, -1, 0).ok()?,
    };
    let stack = slot + STACK_SLOT - HOST_STACK;
    // SAFETY: the upper half of the slot just mapped, ours alone.
    if unsafe { libc::mprotect(stack as *mut libc::c_void, HOST_STACK as usize, libc::PROT_READ | libc::PROT_WRITE) } != 0 {
        // SAFETY: the slot was just mapped and is not used.
        unsafe { libc::munmap(slot as *mut libc::c_void, STACK_SLOT as usize) };
        return None;
    }
    Some(stack)
}

/// Runs `f` on a new host thread whose stack is a `host_stack`. The thread never returns
/// (it ends with a raw `exit`, so glibc's own cleanup never runs: the stack is reused once
/// `pthread_tryjoin_np` says the thread is gone). Returns whether it was started.
fn spawn_on_host_stack(f: Box<dyn FnOnce() + Send>) -> bool {
    extern "C" fn start(arg: *mut libc::c_void) -> *mut libc::c_void {
        // SAFETY: `arg` is the box `spawn_on_host_stack` leaked for this thread alone.
        let f = unsafe { Box::from_raw(arg as *mut Box<dyn FnOnce() + Send>) };
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
            // The panic hook has reported it; unwinding into glibc is not allowed.
            std::process::abort();
        }
        std::ptr::null_mut()
    }
    let mut pool = HOST_STACK_POOL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(stack) = host_stack(&mut pool) else { return false };
    let arg = Box::into_raw(Box::new(f)) as *mut libc::c_void;
    // SAFETY: the attribute object is initialised before use and destroyed after; the stack
    // is ours, `HOST_STACK` bytes, and used by this thread alone until it has exited.
    let (r, thread) = unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        libc::pthread_attr_init(&mut attr);
        libc::pthread_attr_setstack(&mut attr, stack as *mut libc::c_void, HOST_STACK as usize);
        let mut thread: libc::pthread_t = 0;
        let r = libc::pthread_create(&mut thread, &attr, start, arg);
        libc::pthread_attr_destroy(&mut attr);
        (r, thread)
    };
    if r != 0 {
        // SAFETY: the thread was not created, so the box is still ours.
        drop(unsafe { Box::from_raw(arg as *mut Box<dyn FnOnce() + Send>) });
        pool.free.push(stack);
        return false;
    }
    pool.used.push((thread, stack));
    true
}

impl Runtime {
    /// A new guest thread. Returns its tid (or a negative errno).
    pub(crate) fn clone_thread(&mut self, a: [u64; 6]) -> i64 {
        let flags = a[0];
        if flags & libc::CLONE_THREAD as u64 == 0 {
            let pc = self.ctx.rip - 2;
            let p = self.p();
            let place = p.report.describe_pc(pc, &p.mem);
            p.report.error(&format!("clone with CLONE_VM but without CLONE_THREAD is not supported (at {pc:#x}{place})"));
            self.finish_and_exit(crate::EXIT_UNSUPPORTED);
        }
        let quantum = self.p().sched.quantum;
        if !self.p().cache.preemption() {
            // From now on translations count blocks; the existing ones do not, so they go.
            self.p().cache.set_preemption(true);
            self.flush_lookup_tables();
            self.set_quantum(quantum);
        }
        if self.p().cpus.is_none() {
            if let (Some(cpus), Some(cpu)) = (raw::affinity(), raw::current_cpu()) {
                let mut one = [0u64; 16];
                one[(cpu / 64) as usize % 16] = 1 << (cpu % 64);
                if raw::set_affinity(&one) {
                    self.p().cpus = Some(cpus);
                }
            }
        }
        let mut ctx = ThreadContext::new_boxed();
        ctx.gpr = self.ctx.gpr;
        ctx.gpr[reg::RAX as usize] = 0;
        if a[1] != 0 {
            ctx.gpr[reg::RSP as usize] = a[1];
        }
        ctx.rip = self.ctx.rip;
        ctx.rflags = self.ctx.rflags;
        ctx.fs_base = if flags & libc::CLONE_SETTLS as u64 != 0 { a[4] } else { self.ctx.fs_base };
        ctx.gs_base = self.ctx.gs_base;
        ctx.gs_selector = self.ctx.gs_selector;
        ctx.xsave.0.copy_from_slice(&self.ctx.xsave.0);
        ctx.tool_area = self.ctx.tool_area;
        self.p().tool.thread_start(&mut ctx);
        // Threads start without an alternate signal stack (Linux clears it for CLONE_VM).
        let sig = Signals::for_thread(self.sig.actions.clone(), self.sig.mask, (0, libc::SS_DISABLE, 0));
        let index = self.p().sched.add_thread(0, sig.inbox.clone(), self.sig.mask);
        let ctx_ptr = &mut *ctx as *mut ThreadContext;
        ctx.quantum = 0;
        let mut rt = Box::new(Runtime::new(ctx, sig, index, self.process_ptr()));
        if flags & libc::CLONE_CHILD_CLEARTID as u64 != 0 {
            rt.clear_child_tid = a[3];
        }
        let (tx, rx) = std::sync::mpsc::channel::<i32>();
        let moved = SendRuntime(rt);
        // (Unnamed: the thread has its creator's name, as natively, not one of rtgrind's.)
        let spawned = spawn_on_host_stack(Box::new(move || {
            let mut rt = moved;
            rt.0.sig.enter_host_thread(&mut rt.0.ctx);
            // SAFETY: gettid has no arguments and no side effects.
            let tid = unsafe { syscall6(libc::SYS_gettid as u64, [0; 6]) } as i32;
            let _ = tx.send(tid);
            let q = rt.0.p().sched.syscall_end(rt.0.index);
            rt.0.set_quantum(q);
            rt.0.run()
        }));
        if !spawned {
            return -(libc::EAGAIN as i64);
        }
        let Ok(tid) = rx.recv() else { return -(libc::EAGAIN as i64) };
        let p = self.p();
        p.sched.set_tid(index, tid);
        p.contexts.push(ctx_ptr);
        p.stats.threads += 1;
        if flags & libc::CLONE_PARENT_SETTID as u64 != 0 {
            guest_mem::write(a[2], &(tid as u32).to_le_bytes());
        }
        if flags & libc::CLONE_CHILD_SETTID as u64 != 0 {
            guest_mem::write(a[3], &(tid as u32).to_le_bytes());
        }
        tid as i64
    }

    fn deadlock(&mut self, d: Deadlock) -> ! {
        let p = self.p();
        for l in d.0 {
            p.report.line(&l);
        }
        self.finish_and_exit(EXIT_DEADLOCK)
    }

    /// `exit` of one thread (the process ends with its last thread).
    pub(crate) fn thread_exit(&mut self, code: i32) -> ! {
        self.release_robust_futexes();
        if self.clear_child_tid != 0 && guest_mem::write(self.clear_child_tid, &0u32.to_le_bytes()) {
            self.p().sched.futex_wake(self.clear_child_tid, 1, u32::MAX);
        }
        match self.p().sched.exit(self.index, self.instance()) {
            Ok(0) => self.program_exit(code),
            Ok(_) => {
                // The baton has been handed on: from here this thread touches nothing shared.
                // SAFETY: ends only this host thread (its guest thread has exited).
                unsafe { syscall6(libc::SYS_exit as u64, [code as u64, 0, 0, 0, 0, 0]) };
                unreachable!("exit returned")
            }
            Err(d) => self.deadlock(d),
        }
    }

    /// What the kernel does for a dying thread's robust futexes (`handle_futex_death`), for
    /// waiters that wait in the scheduler: every futex on the thread's robust list (and the one
    /// it was taking or releasing) that it still owns gets FUTEX_OWNER_DIED, and one waiter is
    /// woken, whose lock then returns EOWNERDEAD.
    fn release_robust_futexes(&mut self) {
        const OWNER_DIED: u32 = 0x4000_0000;
        const WAITERS: u32 = 0x8000_0000;
        const TID_MASK: u32 = 0x3fff_ffff;
        let head = self.robust_list;
        if head == 0 || !self.p().cache.preemption() {
            return;
        }
        // SAFETY: gettid has no arguments and no side effects.
        let tid = unsafe { syscall6(libc::SYS_gettid as u64, [0; 6]) } as u32;
        let (Some(first), Some(offset), Some(pending)) = (guest_mem::read_u64(head), guest_mem::read_u64(head + 8), guest_mem::read_u64(head + 16)) else {
            return;
        };
        let die = |rt: &mut Runtime, entry: u64| {
            // Bit 0 of an entry marks a PI futex, which rtgrind does not emulate.
            if entry & 1 != 0 {
                return;
            }
            let addr = entry.wrapping_add(offset);
            let Some(v) = read_u32(addr) else { return };
            if v & TID_MASK != tid {
                return;
            }
            if guest_mem::write(addr, &((v & WAITERS) | OWNER_DIED).to_le_bytes()) && v & WAITERS != 0 {
                rt.p().sched.futex_wake(addr, 1, u32::MAX);
            }
        };
        let mut entry = first;
        // The list is circular through the head; a corrupt one is cut off.
        for _ in 0..2048 {
            if entry == head || entry == 0 {
                break;
            }
            let next = guest_mem::read_u64(entry & !1).unwrap_or(head);
            if entry != pending {
                die(self, entry);
            }
            entry = next;
        }
        if pending != 0 {
            die(self, pending);
        }
    }

    /// `futex`, implemented by the scheduler once the process has threads.
    pub(crate) fn futex(&mut self, a: [u64; 6]) -> i64 {
        if !self.p().cache.preemption() {
            // One thread: nothing can wake a waiter but the kernel (timeouts, signals).
            // SAFETY: futex on guest memory only.
            return unsafe { syscall6(libc::SYS_futex as u64, a) };
        }
        let (addr, op, val) = (a[0], a[1] as i32 & 0x7f, a[2] as u32);
        let pc = self.ctx.rip;
        match op {
            FUTEX_WAIT | FUTEX_WAIT_BITSET => {
                let bitset = if op == FUTEX_WAIT_BITSET { a[5] as u32 } else { u32::MAX };
                if bitset == 0 {
                    return -(libc::EINVAL as i64);
                }
                match read_u32(addr) {
                    None => -(libc::EFAULT as i64),
                    Some(v) if v != val => -(libc::EAGAIN as i64),
                    Some(_) => match self.p().sched.futex_wait(self.index, addr, bitset, a[3] != 0, pc, self.instance()) {
                        Ok((r, q)) => {
                            self.set_quantum(q);
                            if r == -(libc::EINTR as i64) {
                                self.interrupted_syscall = Some((libc::SYS_futex as u64, libc::SYS_futex as u64));
                            }
                            r
                        }
                        Err(d) => self.deadlock(d),
                    },
                }
            }
            FUTEX_WAKE | FUTEX_WAKE_BITSET => {
                let bitset = if op == FUTEX_WAKE_BITSET { a[5] as u32 } else { u32::MAX };
                self.p().sched.futex_wake(addr, val as u64, bitset)
            }
            FUTEX_REQUEUE => self.p().sched.futex_requeue(addr, val as u64, a[4], a[3]),
            FUTEX_CMP_REQUEUE => match read_u32(addr) {
                None => -(libc::EFAULT as i64),
                Some(v) if v != a[5] as u32 => -(libc::EAGAIN as i64),
                Some(_) => self.p().sched.futex_requeue(addr, val as u64, a[4], a[3]),
            },
            FUTEX_WAKE_OP => self.futex_wake_op(addr, val as u64, a[3], a[4], a[5] as u32),
            _ => -(libc::ENOSYS as i64),
        }
    }

    /// FUTEX_WAKE_OP: `old = *uaddr2; *uaddr2 = old OP arg; wake(uaddr); if old CMP cmparg { wake(uaddr2) }`.
    fn futex_wake_op(&mut self, addr: u64, n: u64, n2: u64, addr2: u64, enc: u32) -> i64 {
        let (op, cmp) = ((enc >> 28) & 7, (enc >> 24) & 15);
        let mut oparg = (enc >> 12) & 0xfff;
        let cmparg = enc & 0xfff;
        if (enc >> 31) & 1 != 0 {
            oparg = 1u32.checked_shl(oparg).unwrap_or(0);
        }
        let Some(old) = read_u32(addr2) else { return -(libc::EFAULT as i64) };
        let new = match op {
            0 => oparg,
            1 => old.wrapping_add(oparg),
            2 => old | oparg,
            3 => old & !oparg,
            4 => old ^ oparg,
            _ => return -(libc::ENOSYS as i64),
        };
        if !guest_mem::write(addr2, &new.to_le_bytes()) {
            return -(libc::EFAULT as i64);
        }
        let sched = &self.p().sched;
        let mut woken = sched.futex_wake(addr, n, u32::MAX);
        let (o, c) = (old as i32, cmparg as i32);
        let hit = match cmp {
            0 => o == c,
            1 => o != c,
            2 => o < c,
            3 => o <= c,
            4 => o > c,
            5 => o >= c,
            _ => false,
        };
        if hit {
            woken += sched.futex_wake(addr2, n2, u32::MAX);
        }
        woken
    }
}
