//! Signals, virtualized: the guest's handler table, mask and alternate stack are rtgrind's
//! records, and the host's handlers are rtgrind's own.
//!
//! Design. Synchronous faults (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP raised by the CPU)
//! in translated code are mapped back to the guest instruction by the code cache's pc table;
//! the host handler copies the guest registers out of the signal frame into the thread
//! context and resumes at `rtg_fault_resume`, so the dispatcher sees an ordinary exit with
//! `EXIT_FAULT`. Asynchronous signals are only recorded by the host handler; the block the
//! thread is in gets its exits unlinked (and the inline lookup table emptied) so the thread
//! reaches the dispatcher at the end of that block, where the guest frame is built. Host
//! handlers are installed without SA_RESTART, so a blocking syscall returns EINTR to the
//! dispatcher; it is restarted after the guest handler if the guest asked for SA_RESTART.
//!
//! The real signal mask follows the guest's (minus the fault signals), so a signal the guest
//! blocks stays pending in the kernel exactly as it would natively. Signals the guest ignores
//! are ignored for real; signals whose default action is to ignore keep the real default, so
//! neither interrupts a syscall natively uninterrupted.

use super::guest_mem;
use rtgrind_jit::cache::Fixup;
use rtgrind_jit::context::{reg, ThreadContext, EXIT_FAULT};
use rtgrind_jit::{dispatch, CodeCache};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub const NSIG: usize = 65;
const SYNC_SIGNALS: [i32; 5] = [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE, libc::SIGTRAP];

/// The guest's `struct sigaction` (kernel layout).
#[derive(Clone, Copy, Debug, Default)]
pub struct GuestAction {
    pub handler: u64,
    pub flags: u64,
    pub restorer: u64,
    pub mask: u64,
}

/// Signals whose guest disposition is the default action and that action ends the process
/// (bit n-1 for signal n), kept lock-free for the handler.
static DEFAULT_FATAL: AtomicU64 = AtomicU64::new(0);

/// `-q` was given: a death by signal is said only when the program brought it on itself
/// (`SigInfo::reported`). Read by the handler too (`die_now`).
static QUIET: AtomicBool = AtomicBool::new(false);

/// Sets `-q` for the fatal signal line (once, at start-up).
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::SeqCst);
}

/// The code cache, for the handler (one per process).
static CACHE: AtomicPtr<CodeCache> = AtomicPtr::new(std::ptr::null_mut());

/// What the host handler of one thread hands to that thread's dispatcher. Found by the
/// handler through the thread context's `runtime_data`.
pub struct Inbox {
    pending: AtomicU64,
    queues: [SigQueue; NSIG],
    fault_sig: AtomicI32,
    fault_info: std::cell::UnsafeCell<[u8; 128]>,
    /// The fault's trap number and error code.
    fault_trap: std::cell::UnsafeCell<(u64, u64)>,
}
// SAFETY: the UnsafeCell is written by the signal handler of the thread that owns the inbox
// and read by that thread's dispatcher after `fault_sig` is published (SeqCst).
unsafe impl Sync for Inbox {}

impl Inbox {
    fn new() -> Inbox {
        Inbox {
            pending: AtomicU64::new(0),
            queues: [const { SigQueue::new() }; NSIG],
            fault_sig: AtomicI32::new(0),
            fault_info: std::cell::UnsafeCell::new([0; 128]),
            fault_trap: std::cell::UnsafeCell::new((0, 0)),
        }
    }
    /// Signals queued for this thread (bit n-1 for signal n).
    pub fn pending_bits(&self) -> u64 {
        self.pending.load(Ordering::SeqCst)
    }
}

/// Queued siginfos of one signal: real-time signals queue (standard ones have at most one
/// instance pending, which the kernel already guarantees). Single producer (the handler,
/// which cannot nest: all signals are masked while it runs), single consumer (the dispatcher
/// of the same thread).
struct SigQueue {
    head: AtomicU64,
    tail: AtomicU64,
    slots: [std::cell::UnsafeCell<[u8; 128]>; 32],
}

impl SigQueue {
    const fn new() -> SigQueue {
        SigQueue { head: AtomicU64::new(0), tail: AtomicU64::new(0), slots: [const { std::cell::UnsafeCell::new([0; 128]) }; 32] }
    }
    /// Handler side. Drops the signal if 32 are already queued.
    fn push(&self, raw: [u8; 128]) {
        let (h, t) = (self.head.load(Ordering::SeqCst), self.tail.load(Ordering::SeqCst));
        if t - h >= 32 {
            return;
        }
        // SAFETY: slot t%32 is not visible to the consumer until tail is advanced below.
        unsafe { *self.slots[(t % 32) as usize].get() = raw };
        self.tail.store(t + 1, Ordering::SeqCst);
    }
    /// Dispatcher side: the oldest entry and whether more remain.
    fn pop(&self) -> Option<([u8; 128], bool)> {
        let (h, t) = (self.head.load(Ordering::SeqCst), self.tail.load(Ordering::SeqCst));
        if h == t {
            return None;
        }
        // SAFETY: slot h%32 was published by the producer's tail store.
        let raw = unsafe { *self.slots[(h % 32) as usize].get() };
        self.head.store(h + 1, Ordering::SeqCst);
        Some((raw, h + 1 != t))
    }
}

/// A signal to hand to the guest: number and raw siginfo.
#[derive(Clone, Copy)]
pub struct SigInfo {
    pub sig: i32,
    pub raw: [u8; 128],
    /// For a fault the CPU raised: its trap number and error code (the ucontext's `trapno`
    /// and `err`).
    pub trap: Option<(u64, u64)>,
}

impl SigInfo {
    pub fn new(sig: i32, code: i32, addr: u64) -> SigInfo {
        let mut raw = [0u8; 128];
        raw[0..4].copy_from_slice(&sig.to_le_bytes());
        raw[8..12].copy_from_slice(&code.to_le_bytes());
        raw[16..24].copy_from_slice(&addr.to_le_bytes());
        SigInfo { sig, raw, trap: None }
    }
    pub fn code(&self) -> i32 {
        i32::from_le_bytes(self.raw[8..12].try_into().unwrap())
    }
    pub fn addr(&self) -> u64 {
        u64::from_le_bytes(self.raw[16..24].try_into().unwrap())
    }

    /// Whether dying of this signal gets rtgrind's line. Without `-q`, always. With `-q`, as
    /// Valgrind's `-q`, only a signal whose default action dumps core and that the program
    /// raised: a fault (or the kernel's own, e.g. a terminal's SIGQUIT: si_code > 0), and,
    /// unlike Valgrind, one the process sent itself (abort(), raise, kill(getpid())), the
    /// crash of an assertion, which the searches' runs (all `-q`) look for. So a program
    /// that another process ends (kill, SIGTERM, SIGINT; a parent's kill of its child) or that
    /// dies of a signal that ends it quietly natively (SIGPIPE, SIGALRM) prints what it prints
    /// natively, nothing more.
    pub fn reported(&self) -> bool {
        if !QUIET.load(Ordering::SeqCst) {
            return true;
        }
        const CORE: [i32; 10] =
            [libc::SIGQUIT, libc::SIGILL, libc::SIGTRAP, libc::SIGABRT, libc::SIGBUS, libc::SIGFPE, libc::SIGSEGV, libc::SIGXCPU, libc::SIGXFSZ, libc::SIGSYS];
        // SI_USER (kill), SI_QUEUE (sigqueue), SI_TKILL (tgkill): si_pid names the sender.
        let sent = matches!(self.code(), 0 | -1 | -6);
        let sender = i32::from_le_bytes(self.raw[16..20].try_into().unwrap());
        // SAFETY: getpid has no preconditions (and is async-signal-safe, for `die_now`).
        let own = sent && sender == unsafe { libc::getpid() };
        CORE.contains(&self.sig) && (self.code() > 0 || own)
    }
}

/// One guest thread's signal state. Actions are the process's, shared by all threads.
pub struct Signals {
    pub actions: Arc<Mutex<[GuestAction; NSIG]>>,
    pub inbox: Arc<Inbox>,
    /// The guest's blocked set (bit n-1 for signal n).
    pub mask: u64,
    pub altstack: (u64, i32, u64),
}

/// The host mask for a guest mask: fault signals (and SIGKILL/SIGSTOP) are never blocked.
pub fn real_mask(guest: u64) -> u64 {
    SYNC_SIGNALS.iter().chain(&[libc::SIGKILL, libc::SIGSTOP]).fold(guest, |m, &s| m & !bit(s))
}

fn bit(sig: i32) -> u64 {
    1u64 << (sig - 1)
}

/// Default action of a signal is to ignore it.
fn default_ignores(sig: i32) -> bool {
    matches!(sig, libc::SIGCHLD | libc::SIGURG | libc::SIGWINCH | libc::SIGCONT)
}
fn default_stops(sig: i32) -> bool {
    matches!(sig, libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU)
}

impl Signals {
    /// Installs rtgrind's host handlers (once per process) and sets up the first thread.
    /// The handler keeps a pointer to `cache`, which must stay where it is (it is boxed).
    pub fn install(ctx: &mut ThreadContext, cache: &mut CodeCache) -> Signals {
        CACHE.store(cache, Ordering::SeqCst);
        dispatch::set_signal_handler(host_handler);
        let actions = Arc::new(Mutex::new([GuestAction::default(); NSIG]));
        let s = Signals::for_thread(actions, 0, (0, libc::SS_DISABLE, 0));
        s.enter_host_thread(ctx);
        for sig in 1..NSIG as i32 {
            if sig == libc::SIGKILL || sig == libc::SIGSTOP {
                continue;
            }
            s.apply_host_action(sig);
        }
        s
    }

    /// Signal state for a new thread: its own inbox, the process's actions, an inherited
    /// mask. `enter_host_thread` must run on the host thread that will run it.
    pub fn for_thread(actions: Arc<Mutex<[GuestAction; NSIG]>>, mask: u64, altstack: (u64, i32, u64)) -> Signals {
        Signals { actions, inbox: Arc::new(Inbox::new()), mask, altstack }
    }

    /// Gives the calling host thread its alternate signal stack, points `ctx` at this inbox
    /// and applies the guest mask for real.
    pub fn enter_host_thread(&self, ctx: &mut ThreadContext) {
        // Host handlers need their own stack: the guest's may be anything.
        const ALT: usize = 256 * 1024;
        let stack = Box::leak(vec![0u8; ALT].into_boxed_slice());
        let ss = libc::stack_t { ss_sp: stack.as_mut_ptr() as *mut libc::c_void, ss_flags: 0, ss_size: ALT };
        // SAFETY: the stack is leaked, so it outlives every handler invocation on this thread.
        unsafe { libc::sigaltstack(&ss, std::ptr::null_mut()) };
        ctx.runtime_data = Arc::as_ptr(&self.inbox) as u64;
        // Its Rust code must run on its own thread-local storage (Rust's and the C library's:
        // errno, malloc's caches, the scheduler's PARKED), not its creator's.
        ctx.adopt_host_thread();
        self.apply_mask();
    }

    fn action(&self, sig: i32) -> GuestAction {
        self.actions.lock().unwrap()[sig as usize]
    }

    /// Makes the host's disposition of `sig` match what the guest asked for.
    fn apply_host_action(&self, sig: i32) {
        let g = self.action(sig);
        let sync = SYNC_SIGNALS.contains(&sig);
        const SA_RESTORER: u64 = 0x0400_0000;
        // The kernel's struct sigaction: handler, flags, restorer, mask.
        let fatal = g.handler == libc::SIG_DFL as u64 && !default_ignores(sig) && !default_stops(sig);
        if fatal {
            DEFAULT_FATAL.fetch_or(bit(sig), Ordering::SeqCst);
        } else {
            DEFAULT_FATAL.fetch_and(!bit(sig), Ordering::SeqCst);
        }
        let act: [u64; 4] = if !sync && g.handler == libc::SIG_IGN as u64 {
            [libc::SIG_IGN as u64, 0, 0, 0]
        } else if !sync && g.handler == libc::SIG_DFL as u64 && (default_ignores(sig) || default_stops(sig)) {
            [libc::SIG_DFL as u64, 0, 0, 0]
        } else {
            let flags = (libc::SA_SIGINFO | libc::SA_ONSTACK) as u64 | SA_RESTORER;
            [dispatch::signal_entry_addr() as u64, flags, dispatch::sigreturn_restorer_addr(), u64::MAX]
        };
        // The raw syscall, not libc's sigaction(): glibc refuses the signals it reserves for
        // itself (32 and 33), which guest glibc uses for thread cancellation and setxid.
        // SAFETY: installs a handler (rtgrind's entry stub) or a default disposition.
        unsafe { super::raw::syscall6(libc::SYS_rt_sigaction as u64, [sig as u64, act.as_ptr() as u64, 0, 8, 0, 0]) };
    }

    /// The guest's rt_sigaction.
    pub fn sigaction(&mut self, sig: i32, new: u64, old: u64) -> i64 {
        if !(1..NSIG as i32).contains(&sig) {
            return -libc::EINVAL as i64;
        }
        if old != 0 {
            let a = self.action(sig);
            let mut b = [0u8; 32];
            for (i, v) in [a.handler, a.flags, a.restorer, a.mask].iter().enumerate() {
                b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
            }
            if !guest_mem::write(old, &b) {
                return -libc::EFAULT as i64;
            }
        }
        if new != 0 {
            if sig == libc::SIGKILL || sig == libc::SIGSTOP {
                return -libc::EINVAL as i64;
            }
            let mut b = [0u8; 32];
            if !guest_mem::read(new, &mut b) {
                return -libc::EFAULT as i64;
            }
            let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
            self.actions.lock().unwrap()[sig as usize] = GuestAction { handler: w(0), flags: w(1), restorer: w(2), mask: w(3) };
            self.apply_host_action(sig);
        }
        0
    }

    /// Sets the real mask to the guest's, never blocking the fault signals.
    pub fn apply_mask(&self) {
        let real = real_mask(self.mask);
        // SAFETY: setting this thread's mask from a fully initialised 8-byte set.
        unsafe { super::raw::syscall6(libc::SYS_rt_sigprocmask as u64, [libc::SIG_SETMASK as u64, &real as *const u64 as u64, 0, 8, 0, 0]) };
    }

    pub fn sigprocmask(&mut self, how: i32, set: u64, old: u64, size: u64) -> i64 {
        if size != 8 {
            return -libc::EINVAL as i64;
        }
        let prev = self.mask;
        if set != 0 {
            let Some(s) = guest_mem::read_u64(set) else { return -libc::EFAULT as i64 };
            self.mask = match how {
                libc::SIG_BLOCK => prev | s,
                libc::SIG_UNBLOCK => prev & !s,
                libc::SIG_SETMASK => s,
                _ => return -libc::EINVAL as i64,
            } & !(bit(libc::SIGKILL) | bit(libc::SIGSTOP));
            self.apply_mask();
        }
        if old != 0 && !guest_mem::write_u64(old, prev) {
            return -libc::EFAULT as i64;
        }
        0
    }

    pub fn sigaltstack(&mut self, new: u64, old: u64, rsp: u64) -> i64 {
        let on = self.on_altstack(rsp);
        if old != 0 {
            let (sp, flags, size) = self.altstack;
            let flags = if on { libc::SS_ONSTACK } else { flags };
            let mut b = [0u8; 24];
            b[0..8].copy_from_slice(&sp.to_le_bytes());
            b[8..12].copy_from_slice(&flags.to_le_bytes());
            b[16..24].copy_from_slice(&size.to_le_bytes());
            if !guest_mem::write(old, &b) {
                return -libc::EFAULT as i64;
            }
        }
        if new != 0 {
            let mut b = [0u8; 24];
            if !guest_mem::read(new, &mut b) {
                return -libc::EFAULT as i64;
            }
            if on {
                return -libc::EPERM as i64;
            }
            let sp = u64::from_le_bytes(b[0..8].try_into().unwrap());
            let flags = i32::from_le_bytes(b[8..12].try_into().unwrap());
            let size = u64::from_le_bytes(b[16..24].try_into().unwrap());
            if flags & libc::SS_DISABLE != 0 {
                self.altstack = (0, libc::SS_DISABLE, 0);
            } else {
                if size < 2048 {
                    return -libc::ENOMEM as i64;
                }
                self.altstack = (sp, 0, size);
            }
        }
        0
    }

    fn on_altstack(&self, rsp: u64) -> bool {
        let (sp, flags, size) = self.altstack;
        flags & libc::SS_DISABLE == 0 && rsp > sp && rsp <= sp + size
    }

    /// Takes one pending asynchronous signal the guest does not block.
    pub fn take_pending(&mut self) -> Option<SigInfo> {
        let inbox = &self.inbox;
        let p = inbox.pending.load(Ordering::SeqCst) & !self.mask;
        if p == 0 {
            return None;
        }
        let sig = p.trailing_zeros() as i32 + 1;
        inbox.pending.fetch_and(!bit(sig), Ordering::SeqCst);
        let (raw, more) = inbox.queues[sig as usize].pop()?;
        if more {
            inbox.pending.fetch_or(bit(sig), Ordering::SeqCst);
        }
        Some(SigInfo { sig, raw, trap: None })
    }

    /// Whether a queued signal is deliverable under mask `m`.
    pub fn pending_under(&self, m: u64) -> bool {
        self.inbox.pending.load(Ordering::SeqCst) & !m != 0
    }

    /// The fault the handler recorded for an `EXIT_FAULT`.
    pub fn take_fault(&self) -> SigInfo {
        let sig = self.inbox.fault_sig.swap(0, Ordering::SeqCst);
        // SAFETY: written by this thread's handler before it published fault_sig.
        let (raw, trap) = unsafe { (*self.inbox.fault_info.get(), *self.inbox.fault_trap.get()) };
        SigInfo { sig, raw, trap: Some(trap) }
    }

    /// Whether the guest's disposition for `sig` is its default action.
    pub fn is_default(&self, sig: i32) -> bool {
        self.action(sig).handler == libc::SIG_DFL as u64
    }
    pub fn is_ignored(&self, sig: i32) -> bool {
        self.action(sig).handler == libc::SIG_IGN as u64
    }
    /// The default action of `sig` ignores it.
    pub fn default_is_ignore(sig: i32) -> bool {
        default_ignores(sig) || default_stops(sig)
    }

    /// Builds the guest's signal frame and points the context at its handler.
    /// Returns false if the frame could not be written (the guest must then die of SIGSEGV).
    pub fn deliver(&mut self, ctx: &mut ThreadContext, info: &SigInfo) -> bool {
        let sig = info.sig;
        let act = self.action(sig);
        let rsp = ctx.gpr[reg::RSP as usize];
        let use_alt = act.flags & libc::SA_ONSTACK as u64 != 0 && self.altstack.1 & libc::SS_DISABLE == 0 && !self.on_altstack(rsp);
        let mut sp = if use_alt { self.altstack.0 + self.altstack.2 } else { rsp - 128 };
        const XS: usize = rtgrind_jit::context::XSAVE_SIZE - 192; // 832: legacy + header + AVX
        let fp_size = XS + 4;
        sp -= fp_size as u64;
        sp &= !63;
        let fpstate = sp;
        const FRAME: u64 = 8 + 304 + 128;
        sp -= FRAME;
        sp = (sp & !15) - 8;
        let frame = sp;

        let mut fp = ctx.xsave.0[..XS].to_vec();
        fp.extend_from_slice(&0x4650_5845u32.to_le_bytes()); // FP_XSTATE_MAGIC2
        fp[464..468].copy_from_slice(&0x4650_5853u32.to_le_bytes()); // FP_XSTATE_MAGIC1
        fp[468..472].copy_from_slice(&(fp_size as u32).to_le_bytes());
        fp[472..480].copy_from_slice(&7u64.to_le_bytes());
        fp[480..484].copy_from_slice(&(XS as u32).to_le_bytes());

        let mut uc = vec![0u8; 304];
        let put = |b: &mut [u8], off: usize, v: u64| b[off..off + 8].copy_from_slice(&v.to_le_bytes());
        put(&mut uc, 0, 0x7); // UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS
        put(&mut uc, 16, self.altstack.0);
        uc[24..28].copy_from_slice(&(if self.on_altstack(rsp) { libc::SS_ONSTACK } else { self.altstack.1 }).to_le_bytes());
        put(&mut uc, 32, self.altstack.2);
        let g = &ctx.gpr;
        let mc = 40;
        let order = [8, 9, 10, 11, 12, 13, 14, 15, 7, 6, 5, 3, 2, 0, 1, 4]; // r8..r15 rdi rsi rbp rbx rdx rax rcx rsp
        for (i, &r) in order.iter().enumerate() {
            put(&mut uc, mc + i * 8, g[r]);
        }
        put(&mut uc, mc + 16 * 8, ctx.rip);
        put(&mut uc, mc + 17 * 8, ctx.rflags);
        put(&mut uc, mc + 18 * 8, 0x002b_0000_0000_0033); // cs=0x33 gs=0 fs=0 ss=0x2b
        let (trapno, err) = info.trap.unwrap_or(match sig {
            libc::SIGSEGV | libc::SIGBUS if info.code() > 0 => (14, 4),
            libc::SIGFPE => (0, 0),
            libc::SIGILL => (6, 0),
            libc::SIGTRAP => (3, 0),
            _ => (0, 0),
        });
        put(&mut uc, mc + 19 * 8, err);
        put(&mut uc, mc + 20 * 8, trapno);
        put(&mut uc, mc + 21 * 8, self.mask);
        put(&mut uc, mc + 22 * 8, if info.code() > 0 { info.addr() } else { 0 });
        put(&mut uc, mc + 23 * 8, fpstate);
        put(&mut uc, 296, self.mask);

        let ok = guest_mem::write(fpstate, &fp)
            && guest_mem::write_u64(frame, act.restorer)
            && guest_mem::write(frame + 8, &uc)
            && guest_mem::write(frame + 8 + 304, &info.raw);
        if !ok {
            return false;
        }
        ctx.gpr[reg::RSP as usize] = frame;
        ctx.gpr[reg::RDI as usize] = sig as u64;
        ctx.gpr[reg::RSI as usize] = frame + 8 + 304;
        ctx.gpr[reg::RDX as usize] = frame + 8;
        ctx.gpr[reg::RAX as usize] = 0;
        ctx.rip = act.handler;
        ctx.rflags &= !(0x400 | 0x100 | 0x10000); // DF, TF, RF
        self.mask |= act.mask;
        if act.flags & libc::SA_NODEFER as u64 == 0 {
            self.mask |= bit(sig);
        }
        self.apply_mask();
        if act.flags & libc::SA_RESETHAND as u64 != 0 {
            self.actions.lock().unwrap()[sig as usize].handler = libc::SIG_DFL as u64;
            self.apply_host_action(sig);
        }
        true
    }

    /// rt_sigreturn: restores the state saved in the frame at the guest's rsp.
    pub fn sigreturn(&mut self, ctx: &mut ThreadContext) -> bool {
        let ucp = ctx.gpr[reg::RSP as usize];
        let mut uc = vec![0u8; 304];
        if !guest_mem::read(ucp, &mut uc) {
            return false;
        }
        let get = |off: usize| u64::from_le_bytes(uc[off..off + 8].try_into().unwrap());
        let mc = 40;
        let order = [8, 9, 10, 11, 12, 13, 14, 15, 7, 6, 5, 3, 2, 0, 1, 4];
        for (i, &r) in order.iter().enumerate() {
            ctx.gpr[r] = get(mc + i * 8);
        }
        ctx.rip = get(mc + 16 * 8);
        const FIX: u64 = 0x40000 | 0x800 | 0x400 | 0x100 | 0x80 | 0x40 | 0x10 | 0x4 | 0x1 | 0x10000;
        ctx.rflags = (ctx.rflags & !FIX) | (get(mc + 17 * 8) & FIX);
        let fpstate = get(mc + 23 * 8);
        if fpstate != 0 {
            let mut fp = vec![0u8; 832];
            if !guest_mem::read(fpstate, &mut fp) {
                return false;
            }
            fp[520..528].fill(0); // XCOMP_BV: standard format
            let bv = u64::from_le_bytes(fp[512..520].try_into().unwrap()) & 7;
            fp[512..520].copy_from_slice(&bv.to_le_bytes());
            fp[28..32].copy_from_slice(&0xffffu32.to_le_bytes());
            ctx.xsave.0[..832].copy_from_slice(&fp);
        }
        self.mask = get(296) & !(bit(libc::SIGKILL) | bit(libc::SIGSTOP));
        self.apply_mask();
        // The kernel restores the alternate stack settings from uc_stack.
        let (sp, flags, size) = (get(16), i32::from_le_bytes(uc[24..28].try_into().unwrap()), get(32));
        if flags & libc::SS_DISABLE != 0 {
            self.altstack = (0, libc::SS_DISABLE, 0);
        } else if size >= 2048 {
            self.altstack = (sp, 0, size);
        }
        true
    }
}

impl Signals {
    /// Forgets queued signals (a forked child starts with none pending).
    pub fn clear_pending(&self) {
        self.inbox.pending.store(0, Ordering::SeqCst);
        for q in &self.inbox.queues {
            while q.pop().is_some() {}
        }
    }
}

const REG_ORDER: [usize; 16] = [
    13, // rax  <- gregs[REG_RAX]
    14, // rcx
    12, // rdx
    11, // rbx
    15, // rsp
    10, // rbp
    9,  // rsi
    8,  // rdi
    0, 1, 2, 3, 4, 5, 6, 7, // r8..r15
];

/// Reports (see `SigInfo::reported`) and dies of `sig` from inside a signal handler: no
/// allocation, no locks.
fn die_now(info: &SigInfo, pc: u64) -> ! {
    let sig = info.sig;
    if !info.reported() {
        super::raw::die_of_signal(sig)
    }
    let mut buf = [0u8; 160];
    let mut n = 0;
    let mut put = |b: &[u8]| {
        let k = b.len().min(buf.len() - n);
        buf[n..n + k].copy_from_slice(&b[..k]);
        n += k;
    };
    let mut num = [0u8; 20];
    let dec = |mut v: u64, out: &mut [u8; 20]| -> usize {
        let mut i = 20;
        loop {
            i -= 1;
            out[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                return i;
            }
        }
    };
    put(b"==");
    // SAFETY: getpid is async-signal-safe.
    let i = dec(unsafe { libc::getpid() } as u64, &mut num);
    put(&num[i..]);
    put(b"== Process terminating with default action of signal ");
    let i = dec(sig as u64, &mut num);
    put(&num[i..]);
    put(b" at 0x");
    let mut hex = [0u8; 16];
    for (k, h) in hex.iter_mut().enumerate() {
        *h = b"0123456789abcdef"[((pc >> (60 - 4 * k)) & 15) as usize];
    }
    let first = hex.iter().position(|&c| c != b'0').unwrap_or(15);
    put(&hex[first..]);
    put(b" (thread waiting to be scheduled)\n");
    raw_write(super::fds::REPORT.load(Ordering::Relaxed), &buf[..n]);
    super::raw::die_of_signal(sig)
}

/// To rtgrind's stderr copy or log (`kernel::fds`), from the handler.
fn raw_write(fd: i32, msg: &[u8]) {
    // SAFETY: write(2) of a valid buffer.
    unsafe { libc::write(fd, msg.as_ptr() as *const libc::c_void, msg.len()) };
}

/// The host handler, called by `rtg_signal_entry` with the host `fs` restored.
extern "sysv64" fn host_handler(sig: i32, info: *mut libc::siginfo_t, ucv: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo and ucontext for an SA_SIGINFO handler.
    let (info, uc) = unsafe { (&*info, &mut *(ucv as *mut libc::ucontext_t)) };
    let gregs = &mut uc.uc_mcontext.gregs;
    let pc = gregs[libc::REG_RIP as usize] as u64;
    if let Some(resume) = super::raw::copy_fault_target(pc).filter(|_| matches!(sig, libc::SIGSEGV | libc::SIGBUS) && info.si_code > 0) {
        // A guarded copy of guest memory faulted: it reports so, the guest's fault is raised
        // by the runtime where the guest would take it.
        gregs[libc::REG_RIP as usize] = resume as i64;
        return;
    }
    let ctx_p = rtgrind_jit::context::current_context();
    let cache_p = CACHE.load(Ordering::SeqCst);
    if ctx_p.is_null() || cache_p.is_null() {
        return;
    }
    // SAFETY: the gs base is this thread's context and CACHE the process's code cache, both
    // alive for the whole run. The context is only used by its own thread. The cache is
    // touched only when `pc` is inside translated code (or the enter/exit routines), i.e. when
    // this thread holds the scheduler's baton and no Rust code of any thread is using it.
    let (ctx, cache) = unsafe { (&mut *ctx_p, &mut *cache_p) };
    if ctx.runtime_data == 0 {
        return;
    }
    // SAFETY: runtime_data points at the Inbox of the Signals that owns this context.
    let inbox = unsafe { &*(ctx.runtime_data as *const Inbox) };
    let in_cache = cache.contains_host(pc);
    let sync = SYNC_SIGNALS.contains(&sig) && info.si_code > 0;
    let raw: [u8; 128] = {
        // SAFETY: siginfo_t is 128 plain bytes.
        unsafe { std::mem::transmute_copy(info) }
    };
    if sync {
        if !in_cache {
            let what = if dispatch::in_dispatch_code(pc) { "the dispatcher" } else { "rtgrind itself" };
            // SAFETY: si_addr is valid to read for the fault signals this branch handles.
            let addr = unsafe { info.si_addr() } as u64;
            let msg = format!("rtgrind: internal error: signal {sig} in {what} at host pc {pc:#x} (address {addr:#x})\n");
            raw_write(super::fds::STDERR.load(Ordering::Relaxed), msg.as_bytes());
            // SAFETY: terminating the process.
            unsafe { libc::_exit(125) };
        }
        // A trap reports the pc past its instruction: past a `PcEntry::trap`'s bytes (whatever
        // the signal: `int 4` is a SIGSEGV), else a SIGTRAP's is the instruction before pc.
        let (e, after) = match cache.guest_pc_at(pc) {
            Some((e, start)) if e.trap => (e, pc == start + e.guest_len as u64),
            _ if sig == libc::SIGTRAP => match cache.guest_pc_at(pc - 1) {
                Some((e, _)) => (e, true),
                None => return,
            },
            Some((e, _)) => (e, false),
            None => return,
        };
        for (r, &g) in REG_ORDER.iter().enumerate() {
            ctx.gpr[r] = gregs[g] as u64;
        }
        match e.fixup {
            Fixup::None => {}
            Fixup::IblSaved => {
                ctx.gpr[reg::RCX as usize] = ctx.save_rcx;
                ctx.gpr[reg::RDX as usize] = ctx.save_rdx;
            }
            Fixup::Scratch(r) => ctx.gpr[r as usize] = ctx.scratch[0],
            Fixup::Scratch2(r, r2) => {
                ctx.gpr[r as usize] = ctx.scratch[0];
                ctx.gpr[r2 as usize] = ctx.scratch[1];
            }
            Fixup::FlagsSaved => {}
        }
        for r in 0..16 {
            if e.stolen & (1 << r) != 0 {
                ctx.gpr[r] = ctx.tool_spill[r];
            }
        }
        ctx.rflags = gregs[libc::REG_EFL as usize] as u64;
        if matches!(e.fixup, Fixup::FlagsSaved) {
            // SF ZF AF PF CF from AH, OF from bit 0.
            const LAHF: u64 = 0xd5;
            let saved = ctx.flags_save;
            ctx.rflags = (ctx.rflags & !(LAHF | 0x800)) | ((saved >> 8) & LAHF) | ((saved & 1) << 11);
        }
        ctx.rip = e.guest_pc + if after { e.guest_len as u64 } else { 0 };
        ctx.exit_id = EXIT_FAULT as u64;
        let mut raw = raw;
        let mut sig = sig;
        // The exception the CPU raised, for the guest's ucontext.
        let mut trap = (gregs[libc::REG_TRAPNO as usize] as u64, gregs[libc::REG_ERR as usize] as u64);
        if let Some(stack_segment) = e.tool_stack_segment.filter(|_| matches!(sig, libc::SIGSEGV | libc::SIGBUS) && info.si_code == libc::SI_KERNEL) {
            // A tool's shadow access through a non-canonical address: the signal is the one
            // the guest's own access raises (#SS for rsp- and rbp-based addresses, #GP else),
            // not the one the tool's choice of base register raised.
            sig = if stack_segment { libc::SIGBUS } else { libc::SIGSEGV };
            raw[0..4].copy_from_slice(&sig.to_le_bytes());
            trap = (if stack_segment { 12 } else { 13 }, 0);
        }
        // SAFETY: si_addr is valid to read for the fault signals this branch handles.
        let addr = unsafe { info.si_addr() } as u64;
        if matches!(sig, libc::SIGILL | libc::SIGFPE) || (sig == libc::SIGTRAP && addr == pc) {
            // The kernel reports the faulting instruction's address (a debug trap's pc): the
            // guest's, not ours.
            raw[16..24].copy_from_slice(&ctx.rip.to_le_bytes());
        }
        // SAFETY: only this handler writes fault_info and fault_trap, and only the dispatcher
        // of this thread reads them, after fault_sig is published below.
        unsafe {
            *inbox.fault_info.get() = raw;
            *inbox.fault_trap.get() = trap;
        }
        inbox.fault_sig.store(sig, Ordering::SeqCst);
        gregs[libc::REG_RIP as usize] = dispatch::fault_resume_addr() as i64;
        return;
    }
    if DEFAULT_FATAL.load(Ordering::SeqCst) & bit(sig) != 0 && super::sched::PARKED.with(|p| p.get()) {
        // This thread is parked waiting for the baton and may never run again to act on it:
        // end the process now, the way the signal would natively.
        die_now(&SigInfo { sig, raw, trap: None }, ctx.rip);
    }
    inbox.queues[sig as usize].push(raw);
    inbox.pending.fetch_or(bit(sig), Ordering::SeqCst);
    if let Some(bail) = super::raw::guarded_cancel_target(pc) {
        // About to block in the kernel: do not, so the signal is delivered now.
        gregs[libc::REG_RIP as usize] = bail as i64;
        return;
    }
    ctx.pending = 1;
    let running = if in_cache {
        cache.block_at_host(pc)
    } else if dispatch::in_dispatch_code(pc) {
        cache.block_at_host(ctx.entry_target)
    } else {
        None
    };
    if in_cache || dispatch::in_dispatch_code(pc) {
        if let Some(b) = running {
            cache.unlink_block_exits(b);
        }
        ctx.ibl_clear();
    }
}
