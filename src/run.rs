//! The dispatcher loop of one guest thread: find or make the translation for the guest pc,
//! run it, and act on why it stopped (link a block, emulate a syscall or `cpuid`, deliver a
//! signal, switch threads, report a crash).
//!
//! State is split in two. [`Process`] is everything the guest's threads share (code cache,
//! memory map, tool, scheduler, report); [`Runtime`] is one guest thread (its context, signal
//! mask, scheduler index). Each guest thread runs this loop on its own host thread, and only
//! the thread holding the scheduler's baton touches the `Process` (see `kernel::sched`).

use crate::kernel::memory::GuestMemory;
use crate::kernel::sched::Scheduler;
use crate::kernel::signals::{SigInfo, Signals};
use crate::report::Reporter;
use rtgrind_jit::context::{reg, EXIT_FAULT, EXIT_IBL_MISS, EXIT_PENDING, EXIT_SPECIAL_BASE};
use rtgrind_jit::profile::{ticks, PHASE_NAMES};
use rtgrind_jit::{dispatch, translate, BlockId, CodeCache, CodeSource, ExitId, ExitKind, ThreadContext, TranslateError};
use std::path::PathBuf;

#[derive(Default, Debug)]
pub struct RunStats {
    /// Time-stamp counter ticks linking exits and write-protecting code pages (`--stats`).
    pub link_ticks: u64,
    pub protect_ticks: u64,
    pub dispatches: u64,
    pub ibl_misses: u64,
    pub syscalls: u64,
    pub faults: u64,
    pub smc_invalidations: u64,
    pub threads: u64,
    /// Full versions built when a thread first needed one (`ExitKind::FullVersion`).
    pub full_versions: u64,
}

/// When rtgrind started (the clock and the time-stamp counter), for `--stats`: the run's
/// time, and ticks to milliseconds.
static STARTED: std::sync::OnceLock<(std::time::Instant, u64)> = std::sync::OnceLock::new();

/// Notes the start (first thing in `main`).
pub fn started() {
    STARTED.get_or_init(|| (std::time::Instant::now(), ticks()));
}

/// Milliseconds since the start, and ticks per millisecond.
fn run_time() -> (f64, f64) {
    let (at, t0) = *STARTED.get_or_init(|| (std::time::Instant::now(), ticks()));
    let ms = at.elapsed().as_secs_f64() * 1e3;
    (ms, if ms > 0.0 { (ticks() - t0) as f64 / ms } else { 1e6 })
}

pub struct Config {
    pub trace_children: bool,
    pub stats: bool,
    /// rtgrind's own executable and the options a traced child is started with.
    pub self_exe: PathBuf,
    pub child_opts: Vec<String>,
}

/// What all guest threads of the process share.
pub struct Process {
    pub cache: Box<CodeCache>,
    pub mem: GuestMemory,
    pub tool: Box<dyn crate::tools::ToolRun>,
    /// Absolute path of the guest executable (what `/proc/self/exe` means to the guest).
    pub exe_path: PathBuf,
    /// What the guest's own `/proc` files show of its initial stack.
    pub own: crate::kernel::procfs::Own,
    pub config: Config,
    pub report: Reporter,
    pub stats: RunStats,
    pub sched: Scheduler,
    /// Every thread's context, to flush their lookup tables when translations go away.
    pub contexts: Vec<*mut ThreadContext>,
    /// Pinned clocks and random bytes (`--repeatable=yes`).
    pub repeat: Option<crate::kernel::repeat::Repeatable>,
    /// `--stop-at=THREAD:INSTANCE`: stop before that thread's INSTANCE-th block runs.
    pub stop_at: Option<(usize, u64)>,
    /// `--budget-blocks`: the run ends (status 124) once a thread entered this many counted blocks.
    pub budget: Option<u64>,
    /// `--blocks-out`: where to write the main thread's block count at the end.
    pub blocks_out: Option<PathBuf>,
    /// `--created-out`: the log of the names the run creates (`kernel::created`), and beside it
    /// the files it changes, as they were (`kernel::originals`).
    pub created_log: Option<crate::kernel::created::CreatedLog>,
    /// Once the program has threads, all of them run on the one CPU the process was on (as
    /// in rr: only the baton holder runs guest code, and a hand-off within one CPU costs no
    /// cross-CPU wake-up); the CPUs it was allowed before, which the guest still sees.
    pub cpus: Option<[u64; 16]>,
}

/// One guest thread.
pub struct Runtime {
    pub ctx: Box<ThreadContext>,
    pub sig: Signals,
    /// Index in the scheduler (0 is the main thread).
    pub index: usize,
    /// Where to write 0 and wake a futex when the thread exits (CLONE_CHILD_CLEARTID).
    pub clear_child_tid: u64,
    /// The head of the thread's robust futex list (`set_robust_list`), processed by the
    /// runtime when the thread exits, since its futex waiters wait in the scheduler.
    pub robust_list: u64,
    /// A syscall returned EINTR because a signal arrived: (syscall number, the rax that
    /// restarts it: the number itself, or the i386 one of an `int 0x80`).
    pub interrupted_syscall: Option<(u64, u64)>,
    /// Mask to save in the next signal frame instead of the current one (rt_sigsuspend).
    pub saved_mask: Option<u64>,
    /// Blocks this thread entered under quanta it no longer runs on (its instance count is
    /// `blocks_done + granted - ctx.quantum`).
    pub blocks_done: u64,
    /// The quantum last granted.
    pub granted: u64,
    /// Enter the next block past its count (it was counted when it preempted the thread).
    pub skip_count: bool,
    /// Guest pc of an instruction that faulted writing to a code page: it is run next as a
    /// one-instruction translation that leaves the page writable, so an instruction that
    /// writes into its own page makes progress instead of faulting forever.
    pub smc_step: Option<u64>,
    /// Where the thread goes on in the code cache instead of the translation of its pc: the
    /// full version of a block whose fast version sent it there (`ExitKind::FullVersion`),
    /// at the same point. Dropped if anything else happens first (the pc is still right).
    resume_at: Option<u64>,
    process: *mut Process,
}

/// A `Runtime` moved to the host thread that will run it.
pub struct SendRuntime(pub Box<Runtime>);
// SAFETY: a Runtime is used by exactly one host thread at a time: it is built by the creating
// thread and handed over before the new thread runs; its Process pointer is only dereferenced
// while holding the scheduler's baton.
unsafe impl Send for SendRuntime {}

mod emulate;

struct Source<'a>(&'a GuestMemory);

impl CodeSource for Source<'_> {
    fn read_code(&mut self, addr: u64, buf: &mut [u8]) -> usize {
        // Executable by the map, but a page of a file mapped past its end cannot be read
        // (SIGBUS): the code ends before it.
        let n = self.0.exec_len(addr, buf.len() as u64) as usize;
        crate::kernel::raw::copy_guarded(addr, &mut buf[..n])
    }

    fn fixed_code(&mut self, start: u64, end: u64) -> bool {
        // A block's bytes lie in one or two regions.
        let fixed = |at: u64| self.0.region_at(at).is_some_and(|(_, r)| r.file.is_some() && r.prot & libc::PROT_WRITE == 0);
        fixed(start) && fixed(end - 1)
    }

    fn module_of(&mut self, pc: u64) -> Option<rtgrind_jit::persist::Module> {
        crate::run::modules::module_of(self.0, pc)
    }
}

mod modules;

impl Runtime {
    pub fn new(ctx: Box<ThreadContext>, sig: Signals, index: usize, process: *mut Process) -> Runtime {
        let granted = ctx.quantum;
        Runtime {
            ctx,
            sig,
            index,
            clear_child_tid: 0,
            robust_list: 0,
            interrupted_syscall: None,
            saved_mask: None,
            blocks_done: 0,
            granted,
            skip_count: false,
            smc_step: None,
            resume_at: None,
            process,
        }
    }

    /// The process state. Only the thread holding the scheduler's baton may call this, and
    /// it must not keep the reference across a switch point.
    #[allow(clippy::mut_from_ref)]
    pub fn p(&self) -> &mut Process {
        // SAFETY: the Process outlives every thread (it is leaked at start-up), and the
        // scheduler lets exactly one thread at a time run between switch points, so no two
        // live references from different threads exist; within a thread, callers take one
        // reference per operation.
        unsafe { &mut *self.process }
    }

    /// The tool, this thread's context and the guest memory map, for a tool hook.
    pub fn tool_view(&mut self) -> (&mut dyn crate::tools::ToolRun, &mut ThreadContext, &GuestMemory) {
        // SAFETY: as for `p`; the context is this thread's own and not part of the Process.
        let p = unsafe { &mut *self.process };
        (p.tool.as_mut(), &mut self.ctx, &p.mem)
    }

    pub fn process_ptr(&self) -> *mut Process {
        self.process
    }

    /// The block translating `pc`, translating it if needed.
    fn block_for(&mut self, pc: u64) -> Result<BlockId, TranslateError> {
        let p = self.p();
        if let Some(b) = p.cache.lookup(pc) {
            return Ok(b);
        }
        let id = translate(&mut p.cache, &mut Source(&p.mem), p.tool.as_mut() as &mut dyn rtgrind_jit::instrument::Tool, pc)?;
        let b = p.cache.block(id);
        let t = p.cache.profile.then(ticks);
        p.mem.protect_code(b.guest_start, b.guest_end);
        if let Some(t) = t {
            p.stats.protect_ticks += ticks() - t;
        }
        Ok(id)
    }

    /// Where to enter the translation of `pc` (with its preemption count, unless it was
    /// already counted), translating it if needed.
    fn translation(&mut self, pc: u64) -> Result<u64, TranslateError> {
        let b = self.block_for(pc)?;
        let skip = std::mem::take(&mut self.skip_count);
        let block = self.p().cache.block(b);
        Ok(if skip { block.body } else { block.check_entry })
    }

    /// This thread's instance count: blocks it has entered (counted translations only).
    pub fn instance(&self) -> u64 {
        self.blocks_done + self.granted - self.ctx.quantum
    }

    /// Runs on a new quantum `q` from the scheduler, capped so a `--stop-at` instance of
    /// this thread ends a quantum exactly there.
    pub fn set_quantum(&mut self, q: u64) {
        self.blocks_done = self.instance();
        let q = match self.p().stop_at {
            Some((t, n)) if t == self.index && n > self.blocks_done => q.min(n - self.blocks_done),
            _ => q,
        };
        let q = match self.p().budget {
            Some(b) => q.min(b.saturating_sub(self.blocks_done).max(1)),
            None => q,
        };
        self.granted = q;
        self.ctx.quantum = q;
    }

    /// A one-instruction translation of `pc` whose page is not write-protected (see `smc_step`).
    fn step_translation(&mut self, pc: u64) -> Result<u64, TranslateError> {
        self.invalidate(pc, pc + 1);
        let p = self.p();
        let id = rtgrind_jit::translate_limited(&mut p.cache, &mut Source(&p.mem), p.tool.as_mut() as &mut dyn rtgrind_jit::instrument::Tool, pc, 1)?;
        Ok(p.cache.block(id).check_entry)
    }

    /// Drops translations of `[start, end)` and everything that may jump into them.
    pub fn invalidate(&mut self, start: u64, end: u64) {
        if self.p().cache.invalidate(start, end) > 0 {
            self.flush_lookup_tables();
        }
    }

    /// Empties every thread's inline lookup table (their entries may name dropped blocks).
    pub fn flush_lookup_tables(&mut self) {
        self.each_context(ThreadContext::ibl_clear);
    }

    /// Applies `f` to every thread's context, this one's included.
    fn each_context(&mut self, f: impl Fn(&mut ThreadContext)) {
        f(&mut self.ctx);
        let me = &mut *self.ctx as *mut ThreadContext;
        for &c in &self.p().contexts {
            if c != me {
                // SAFETY: contexts of other threads are only read by their own translated
                // code, which does not run while this thread holds the baton.
                f(unsafe { &mut *c });
            }
        }
    }

    /// Runs the guest thread until the process exits or the thread does; never returns.
    pub fn run(&mut self) -> ! {
        dispatch::install_context(&mut self.ctx);
        // The direct exit the last block left by, to link to the next block's translation.
        let mut link_from: Option<ExitId> = None;
        loop {
            self.ctx.pending = 0;
            let mut resume_at = self.resume_at.take();
            if self.p().tool.fork_requested() {
                self.fork_for_the_tool();
                link_from = None;
                resume_at = None;
            }
            if let Some((start, end)) = self.p().tool.retranslate_requested() {
                self.invalidate(start, end);
                link_from = None;
                resume_at = None;
            }
            if let Some(info) = self.take_signal() {
                link_from = None;
                self.handle_signal(info);
                continue;
            }
            let pc = self.ctx.rip;
            let step = self.smc_step.take() == Some(pc);
            let host = match resume_at {
                Some(h) if !step => Ok(h),
                _ if step => self.step_translation(pc),
                _ => self.translation(pc),
            };
            let host = match host {
                Ok(h) => h,
                Err(e) => {
                    link_from = None;
                    self.translate_failed(e);
                    continue;
                }
            };
            if let Some(e) = link_from.take() {
                let p = self.p();
                if let Some(b) = p.cache.lookup(pc) {
                    let t = p.cache.profile.then(ticks);
                    p.cache.link(e, b);
                    if let Some(t) = t {
                        p.stats.link_ticks += ticks() - t;
                    }
                }
            }
            self.interrupted_syscall = None;
            self.p().stats.dispatches += 1;
            // SAFETY: the context is installed on this thread and `host` is a live translation
            // of `pc`, which is where the context's guest state expects to continue.
            unsafe { dispatch::run(&mut self.ctx, host) };
            if step {
                self.invalidate(pc, pc + 1);
            }
            link_from = self.exited(self.ctx.exit_id as u32);
        }
    }

    /// The tool asked for a copy of the process (the switch search's fork at a candidate):
    /// forks, and gives the child its own descriptors and the tool's budget.
    fn fork_for_the_tool(&mut self) {
        // No exit signal: a "clone child", which the guest's own wait(-1) does not see
        // (only __WALL or __WCLONE waits do): the program cannot reap the tool's children.
        let files = crate::kernel::raw::detach_files();
        let r = self.fork_process(0, 0, 0);
        if r == 0 {
            files.install();
        } else {
            files.close();
        }
        let (tool, ctx, _) = self.tool_view();
        if let Some(budget) = tool.forked(ctx, r) {
            let limit = self.instance() + budget;
            self.p().budget = Some(limit);
            self.set_quantum(self.ctx.quantum.max(1));
        }
    }

    /// The translated code left by exit `id`: does what it left for; the exit to link if it
    /// was a direct one.
    fn exited(&mut self, id: u32) -> Option<ExitId> {
        match id {
            EXIT_IBL_MISS => {
                self.p().stats.ibl_misses += 1;
                let target = self.ctx.next_rip;
                self.ctx.rip = target;
                if let Ok(b) = self.block_for(target) {
                    let h = self.p().cache.block(b).host_start;
                    self.ctx.ibl_insert(target, h);
                }
            }
            EXIT_FAULT => {
                self.p().stats.faults += 1;
                let info = self.sig.take_fault();
                self.handle_fault(info);
            }
            EXIT_PENDING => {}
            id if id >= EXIT_SPECIAL_BASE => unreachable!("unknown exit id {id:#x}"),
            id => {
                let exit = self.p().cache.exit(id);
                let (kind, pc, target) = (exit.kind, exit.pc, exit.target);
                self.ctx.rip = target;
                match kind {
                    ExitKind::Direct => return Some(id),
                    ExitKind::FullVersion { at } => self.resume_at = self.full_version(id, at),
                    ExitKind::Preempt => self.preempted(target),
                    // A spinning thread lets the one it waits for run (without, it spun out
                    // its whole quantum at every wait: libgomp's barriers, glibc's spinlocks).
                    ExitKind::Yield => {
                        let q = self.p().sched.yield_now(self.index, target, self.instance());
                        self.set_quantum(q);
                    }
                    ExitKind::Syscall => self.guest_syscall(),
                    ExitKind::Int80 => self.int80(),
                    ExitKind::Cpuid => {
                        let g = &mut self.ctx.gpr;
                        let r = rtgrind_jit::cpuid::emulate(g[reg::RAX as usize] as u32, g[reg::RCX as usize] as u32);
                        g[reg::RAX as usize] = r[0] as u64;
                        g[reg::RBX as usize] = r[1] as u64;
                        g[reg::RCX as usize] = r[2] as u64;
                        g[reg::RDX as usize] = r[3] as u64;
                    }
                    ExitKind::Xgetbv => self.xgetbv(pc),
                    ExitKind::X87Saved => self.x87_saved(pc),
                    ExitKind::Rdtsc => {
                        let t = self.p().repeat.as_mut().map_or(0, |r| r.rdtsc());
                        self.ctx.gpr[reg::RAX as usize] = t & 0xffff_ffff;
                        self.ctx.gpr[reg::RDX as usize] = t >> 32;
                        if self.p().cache.exit(id).note.as_deref() == Some("rdtscp") {
                            self.ctx.gpr[reg::RCX as usize] = 0;
                        }
                    }
                    ExitKind::Random { reg, bits } => {
                        let v = self.p().repeat.as_mut().map_or(0, |r| r.random_u64());
                        let g = &mut self.ctx.gpr[reg as usize];
                        // As the CPU: a 32-bit destination zero-extends, a 16-bit one merges.
                        *g = match bits {
                            16 => (*g & !0xffff) | (v & 0xffff),
                            32 => v & 0xffff_ffff,
                            _ => v,
                        };
                        // Success: CF set, OF, SF, ZF, AF and PF clear.
                        self.ctx.rflags = (self.ctx.rflags & !0x8d4) | 1;
                    }
                    ExitKind::ClientRequest => self.client_request(),
                    ExitKind::Emulate => self.emulate(pc),
                    ExitKind::Unsupported => {
                        let p = self.p();
                        let note = p.cache.exit(id).note.clone().unwrap_or_default();
                        let place = p.report.describe_pc(pc, &p.mem);
                        p.report.error(&format!("unsupported instruction `{note}` at {pc:#x}{place}"));
                        self.finish_and_exit(crate::EXIT_UNSUPPORTED);
                    }
                }
            }
        }
        None
    }

    /// The fast version of a block built lazily left by exit `id` to go on in its full
    /// version at point `at`: the block is replaced by one with both versions (unless that
    /// happened already); where to enter the full one, or None to go on at the thread's pc
    /// as after any exit.
    fn full_version(&mut self, id: ExitId, at: Option<u16>) -> Option<u64> {
        let p = self.p();
        let (old, pc) = (p.cache.exit(id).block, p.cache.exit(id).pc);
        if p.cache.block(old).valid {
            p.cache.drop_block(old);
            // Inline lookups may name the old translation: every thread's forgets it.
            self.each_context(|c| c.ibl_forget(pc));
            let p = self.p();
            let new =
                translate::translate_full_version(&mut p.cache, &mut Source(&p.mem), p.tool.as_mut() as &mut dyn rtgrind_jit::instrument::Tool, pc).ok()?;
            let b = p.cache.block(new);
            p.mem.protect_code(b.guest_start, b.guest_end);
            p.stats.full_versions += 1;
        }
        let p = self.p();
        p.cache.block(p.cache.lookup(pc)?).full_entry(at)
    }

    /// The thread's quantum ran out (or the runtime asked it to stop) before `target`: the
    /// stop point and budget are checked, and the scheduler picks who runs next.
    fn preempted(&mut self, target: u64) {
        self.skip_count = true;
        if self.p().stop_at == Some((self.index, self.instance())) {
            self.stop_here();
        }
        if self.p().budget.is_some_and(|b| self.instance() >= b) {
            let b = self.p().budget.unwrap_or(0);
            self.p().report.line(&format!("budget of {b} blocks exhausted: the run is stopped"));
            self.finish_and_exit(crate::EXIT_BUDGET);
        }
        let q = self.p().sched.preempt(self.index, target, self.instance());
        self.set_quantum(q);
    }

    /// A `syscall`: the tool's hooks around it, and the call (unless the tool suppressed it).
    fn guest_syscall(&mut self) {
        self.p().stats.syscalls += 1;
        let nr = self.ctx.gpr[reg::RAX as usize];
        let args = self.syscall_args();
        let (tool, ctx, _) = self.tool_view();
        if let Some(ret) = tool.syscall_pre(ctx, nr, &args) {
            // The tool suppressed the call: it returns `ret` without running.
            ctx.gpr[reg::RAX as usize] = ret as u64;
        } else {
            self.syscall();
        }
        let (tool, ctx, mem) = self.tool_view();
        let ret = ctx.gpr[reg::RAX as usize] as i64;
        tool.syscall_post(ctx, nr, &args, ret, mem);
    }

    /// The instruction at `pc` saved the x87 environment: the last-instruction pointer it
    /// wrote, the code cache's, becomes the guest's (a saved pointer that is not the cache's
    /// is left as it is: `xsaveopt` may not have written it).
    fn x87_saved(&mut self, pc: u64) {
        use rtgrind_jit::iced_x86::{Decoder, DecoderOptions, Register};
        let mut code = [0u8; 15];
        let n = Source(&self.p().mem).read_code(pc, &mut code);
        let ins = Decoder::with_ip(64, &code[..n], pc, DecoderOptions::NONE).decode();
        let Some((offset, wide)) = translate::saved_fip(&ins) else { return };
        let (gpr, fs_base) = (self.ctx.gpr, self.ctx.fs_base);
        let value = |r: Register, _: usize, _: usize| match r {
            Register::ES | Register::CS | Register::SS | Register::DS => Some(0),
            Register::FS => Some(fs_base),
            _ if r.is_gpr() => Some(gpr[r.full_register() as usize - Register::RAX as usize] & (u64::MAX >> (64 - 8 * r.size()))),
            _ => None,
        };
        let Some(at) = ins.virtual_address(0, 0, value).map(|a| a + offset) else { return };
        let mut raw = [0u8; 8];
        let width = if wide { 8 } else { 4 };
        if !crate::kernel::guest_mem::read(at, &mut raw[..width]) {
            return;
        }
        if let Some(guest) = self.p().cache.guest_fip(u64::from_le_bytes(raw), wide) {
            crate::kernel::guest_mem::write(at, &guest.to_le_bytes()[..width]);
        }
    }

    /// `xgetbv` at `pc`: the state components shown enabled (or in use: the guest's, saved
    /// in its xsave area's header), or the #GP of an undefined register.
    fn xgetbv(&mut self, pc: u64) {
        let xinuse = u64::from_le_bytes(self.ctx.xsave.0[512..520].try_into().unwrap());
        match rtgrind_jit::cpuid::xgetbv(self.ctx.gpr[reg::RCX as usize] as u32, xinuse) {
            Some(v) => {
                self.ctx.gpr[reg::RAX as usize] = v & 0xffff_ffff;
                self.ctx.gpr[reg::RDX as usize] = v >> 32;
            }
            None => {
                self.ctx.rip = pc;
                let info = SigInfo { trap: Some((13, 0)), ..SigInfo::new(libc::SIGSEGV, libc::SI_KERNEL, 0) };
                self.handle_fault(info);
            }
        }
    }

    /// `int 0x80`: the kernel's i386 system call, which a 64-bit process may make too. The
    /// calls whose arguments mean the same in both ABIs (`syscall::i386_call`) run as their
    /// x86-64 selves with the 32-bit argument registers zero-extended, the registers
    /// untouched but rax (as the kernel leaves them); any other returns -ENOSYS.
    fn int80(&mut self) {
        let i386 = self.ctx.gpr[reg::RAX as usize] as u32;
        let Some(nr) = crate::kernel::syscall::i386_call(i386) else {
            self.ctx.gpr[reg::RAX as usize] = -(libc::ENOSYS as i64) as u64;
            return;
        };
        let guest = self.ctx.gpr;
        let args = [reg::RBX, reg::RCX, reg::RDX, reg::RSI, reg::RDI, reg::RBP].map(|r| guest[r as usize] as u32 as u64);
        for (r, a) in [reg::RDI, reg::RSI, reg::RDX, reg::R10, reg::R8, reg::R9].into_iter().zip(args) {
            self.ctx.gpr[r as usize] = a;
        }
        self.ctx.gpr[reg::RAX as usize] = nr;
        self.guest_syscall();
        let ret = self.ctx.gpr[reg::RAX as usize];
        self.ctx.gpr = guest;
        self.ctx.gpr[reg::RAX as usize] = ret;
        if let Some((nr, _)) = self.interrupted_syscall {
            self.interrupted_syscall = Some((nr, i386 as u64));
        }
    }

    /// A client request (the guest's magic sequence, rax pointing at its six words): the
    /// tool's answer in rdx.
    fn client_request(&mut self) {
        let at = self.ctx.gpr[reg::RAX as usize];
        let mut raw = [0u8; 48];
        if crate::kernel::guest_mem::read(at, &mut raw) {
            let req: [u64; 6] = std::array::from_fn(|i| u64::from_le_bytes(raw[i * 8..][..8].try_into().unwrap()));
            let (tool, ctx, mem) = self.tool_view();
            if let Some(answer) = tool.client_request(ctx, &req, mem) {
                self.ctx.gpr[reg::RDX as usize] = answer;
            }
        }
    }

    /// The next signal to deliver: one the kernel sent to this host thread, or one another
    /// guest thread sent with tgkill.
    fn take_signal(&mut self) -> Option<SigInfo> {
        if let Some(i) = self.sig.take_pending() {
            return Some(i);
        }
        if !self.p().cache.preemption() {
            return None;
        }
        let raw = self.p().sched.take_directed(self.index, self.sig.mask)?;
        Some(SigInfo { sig: i32::from_le_bytes(raw[0..4].try_into().unwrap()), raw, trap: None })
    }

    fn translate_failed(&mut self, e: TranslateError) {
        match e {
            TranslateError::NotExecutable(pc) => {
                let info = self.code_fault(pc);
                self.handle_fault(info);
            }
            TranslateError::Invalid(pc) => self.handle_fault(SigInfo::new(libc::SIGILL, 2 /* ILL_ILLOPN */, pc)),
            TranslateError::Cache(e) if crate::kernel::raw::seccomp_filtered() => {
                self.p().report.error(&format!("unsupported: {e}: {}", crate::kernel::raw::SECCOMP_DENIED));
                self.finish_and_exit(crate::EXIT_UNSUPPORTED);
            }
            TranslateError::Cache(e) => {
                self.p().report.error(&format!("{e}"));
                self.finish_and_exit(crate::EXIT_INTERNAL);
            }
        }
    }

    /// The fault the CPU raises fetching the instruction at `pc`, which the translator could
    /// not read whole: at the first byte it could not read, SIGBUS if that byte is mapped
    /// executable (a page of a file past its end), else SIGSEGV.
    fn code_fault(&mut self, pc: u64) -> SigInfo {
        let mem = &self.p().mem;
        let mut insn = [0u8; 16];
        let n = Source(mem).read_code(pc, &mut insn);
        let at = if n < insn.len() { pc + n as u64 } else { pc };
        match mem.region_at(at) {
            Some((_, r)) if r.prot & libc::PROT_EXEC != 0 => SigInfo::new(libc::SIGBUS, 2 /* BUS_ADRERR */, at),
            Some(_) => SigInfo::new(libc::SIGSEGV, 2 /* SEGV_ACCERR */, at),
            None => SigInfo::new(libc::SIGSEGV, 1 /* SEGV_MAPERR */, at),
        }
    }

    /// A synchronous fault of the guest (from translated code or from fetching code).
    fn handle_fault(&mut self, info: SigInfo) {
        if info.sig == libc::SIGSEGV && info.code() == 2 {
            // A write into a page we write-protected because code was translated from it.
            if let Some((s, e)) = self.p().mem.unprotect_code_page(info.addr()) {
                self.p().stats.smc_invalidations += 1;
                self.invalidate(s, e);
                self.smc_step = Some(self.ctx.rip);
                return;
            }
        }
        let mut info = info;
        if info.sig == libc::SIGSEGV {
            let code = self.p().mem.native_segv_code(info.addr(), info.code());
            info.raw[8..12].copy_from_slice(&code.to_le_bytes());
        }
        self.handle_signal(info);
    }

    /// Hands a signal to the guest: run its handler, ignore it, or die of it.
    pub fn handle_signal(&mut self, info: SigInfo) {
        let sig = info.sig;
        let sync = info.code() > 0 && matches!(sig, libc::SIGSEGV | libc::SIGBUS | libc::SIGILL | libc::SIGFPE | libc::SIGTRAP);
        if sync && (self.sig.mask & (1 << (sig - 1)) != 0 || self.sig.is_ignored(sig)) {
            // The kernel forces a blocked or ignored fault signal to its default action.
            self.die_by_signal(&info);
        }
        if self.sig.is_ignored(sig) {
            return;
        }
        if self.sig.is_default(sig) {
            if Signals::default_is_ignore(sig) {
                return;
            }
            self.die_by_signal(&info);
        }
        if let Some((nr, rax)) = self.interrupted_syscall.take() {
            let restart = self.sig.actions.lock().unwrap()[sig as usize].flags & libc::SA_RESTART as u64 != 0;
            if restart && crate::kernel::syscall::restartable(nr) {
                // (`syscall` and `int 0x80` are both two bytes long.)
                self.ctx.rip -= 2;
                self.ctx.gpr[reg::RAX as usize] = rax;
            }
        }
        if let Some(m) = self.saved_mask.take() {
            self.sig.mask = m;
        }
        // The frame's x87 last-instruction pointer is the guest's (the CPU saved the cache's).
        let fip = u64::from_le_bytes(self.ctx.xsave.0[8..16].try_into().unwrap());
        if let Some(guest) = self.p().cache.guest_fip(fip, true) {
            self.ctx.xsave.0[8..16].copy_from_slice(&guest.to_le_bytes());
        }
        if !self.sig.deliver(&mut self.ctx, &info) {
            self.die_by_signal(&SigInfo::new(libc::SIGSEGV, 0x80, 0));
        }
        let (tool, ctx, _) = self.tool_view();
        tool.signal_handler(ctx, sig);
        self.p().sched.set_mask(self.index, self.sig.mask);
    }

    /// Reports the fatal signal in one line (unless `-q` leaves it out: `SigInfo::reported`)
    /// and ends rtgrind the way it ended the guest.
    pub fn die_by_signal(&mut self, info: &SigInfo) -> ! {
        let (tool, ctx, mem) = self.tool_view();
        tool.fatal_signal(ctx, info.sig, info.code(), info.addr(), mem);
        if info.reported() {
            let p = self.p();
            let line = p.report.fatal_signal_line(info, self.ctx.rip, &p.mem);
            p.report.line(&line);
        }
        self.print_stats();
        self.p().report.flush();
        crate::kernel::raw::die_of_signal(info.sig)
    }

    /// `--stop-at` reached: report where, dump the registers, end the run.
    fn stop_here(&mut self) -> ! {
        let (pc, n) = (self.ctx.rip, self.instance());
        let p = self.p();
        let place = p.report.describe_pc(pc, &p.mem);
        p.report.line(&format!("stop-at: thread {} instance {n}: before the block at {pc:#x}{place}", self.index));
        const NAMES: [&str; 16] = ["rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"];
        for row in NAMES.iter().zip(self.ctx.gpr).collect::<Vec<_>>().chunks(4) {
            let line = row.iter().map(|(n, v)| format!("{n:>3}={v:#018x}")).collect::<Vec<_>>().join(" ");
            p.report.line(&format!("stop-at: {line}"));
        }
        p.report.line(&format!("stop-at: rip={pc:#018x} rflags={:#x} fs_base={:#x}", self.ctx.rflags, self.ctx.fs_base));
        p.stop_at = None;
        self.finish_and_exit(0)
    }

    /// The tool's findings and, with `--stats`, the engine's figures.
    pub fn print_stats(&mut self) {
        let written = self.write_code_cache();
        if self.index == 0 {
            if let Some(f) = self.p().blocks_out.clone() {
                let _ = std::fs::write(f, self.instance().to_string());
            }
        }
        let p = self.p();
        p.tool.fini(&mut p.report, &p.mem);
        // (A stop point reached has ended the run already, and is forgotten then.)
        if let Some((t, n)) = p.stop_at {
            let threads = p.stats.threads + 1;
            let why = if t as u64 >= threads {
                format!("thread {t} never existed (the program had {threads} thread{})", if threads == 1 { "" } else { "s" })
            } else {
                format!("the program ended before thread {t} ran {n} blocks")
            };
            p.report.line(&format!("stop-at: not reached: {why}"));
        }
        if !p.config.stats {
            return;
        }
        let c = p.cache.stats;
        let s = &p.stats;
        let lines = [
            format!(
                "stats: {} blocks translated ({} guest instructions), {} KiB of code in {} arenas",
                c.blocks_translated,
                c.guest_insns_translated,
                c.bytes_used / 1024,
                c.arenas
            ),
            format!(
                "stats: {} block links, {} blocks invalidated ({} by writes to code), {} blocks installed from images",
                c.links,
                c.invalidated,
                s.smc_invalidations,
                c.installed - c.from_disk
            ),
            format!(
                "stats: {} exits to dispatcher, {} indirect-branch lookup misses, {} syscalls, {} faults, {} threads created",
                s.dispatches, s.ibl_misses, s.syscalls, s.faults, s.threads
            ),
        ];
        for l in lines
            .into_iter()
            .chain(written)
            .chain(translation_lines(&c, &p.cache.profile_stats, s))
            .chain(crate::tools::callouts::lines())
            .chain(crate::shadow::memory::table_lines())
        {
            p.report.line(&l);
        }
    }

    /// Writes the images this run made to the translation cache (`--code-cache`), once, at
    /// the run's end (whichever way it ends); `--stats`' line of what it read and wrote.
    fn write_code_cache(&mut self) -> Option<String> {
        let p = self.p();
        let disk = p.cache.disk.take()?;
        let start = std::time::Instant::now();
        let n = disk.write(&p.cache).unwrap_or_else(|e| {
            p.report.line(&format!("warning: cannot write the translation cache in '{}': {e}", disk.dir().display()));
            0
        });
        let ((read, skipped), damaged) = (disk.files, disk.damaged);
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        Some(format!(
            "stats: {} blocks installed from the cache ({read} files read in {:.2} ms, {skipped} skipped, {damaged} damaged entries skipped), {n} images written to it in {:.2} ms",
            p.cache.stats.from_disk,
            ms(disk.opening),
            ms(start.elapsed())
        ))
    }

    pub fn finish_and_exit(&mut self, code: i32) -> ! {
        self.print_stats();
        self.p().report.flush();
        // SAFETY: ending the process (all threads); guest buffers were flushed by the guest.
        unsafe { libc::_exit(code) }
    }

    /// The program exits with `code`: the tool's findings, and its exit status if it has one
    /// for what it found (Valgrind's `--error-exitcode`).
    pub fn program_exit(&mut self, code: i32) -> ! {
        self.print_stats();
        self.p().report.flush();
        let code = self.p().tool.exit_code().unwrap_or(code);
        // SAFETY: ending the process (all threads); guest buffers were flushed by the guest.
        unsafe { libc::_exit(code) }
    }
}

/// `--stats`' figures of translation: code size per block and guest instruction, time by
/// phase (exclusive, adding up to the translation total), the runtime's work for new blocks,
/// and how often each guest instruction was decoded.
fn translation_lines(c: &rtgrind_jit::cache::CacheStats, t: &rtgrind_jit::profile::TranslateProfile, s: &RunStats) -> Vec<String> {
    let (blocks, insns) = (c.blocks_translated.max(1) as f64, c.guest_insns_translated.max(1) as f64);
    let (run_ms, per_ms) = run_time();
    let ms = |ticks: u64| ticks as f64 / per_ms;
    let total = ms(t.total_ticks);
    let pct = |x: f64| if total > 0.0 { 100.0 * x / total } else { 0.0 };
    let tool_decodes = crate::tools::TOOL_DECODES.load(std::sync::atomic::Ordering::Relaxed);
    let mut v = vec![
        format!(
            "stats: per block {:.1} guest instructions, {:.0} bytes of code; {:.1} bytes of code per guest instruction",
            c.guest_insns_translated as f64 / blocks,
            c.bytes_used as f64 / blocks,
            c.bytes_used as f64 / insns
        ),
        format!(
            "stats: translation {total:.2} ms of the run's {run_ms:.2} ms ({:.0}%), {:.2} us per block, {:.0} ns per guest instruction:",
            100.0 * total / run_ms.max(1e-9),
            1e3 * total / blocks,
            1e6 * total / insns
        ),
    ];
    // Each time in a phase costs about one switch (a counter read), which the phase's time
    // includes: taken out, and said on a line of its own.
    let cost = rtgrind_jit::profile::switch_cost();
    let mut timing = total;
    for (i, (_, name)) in PHASE_NAMES.iter().enumerate() {
        let x = (ms(t.phase_ticks[i]) - ms(1) * cost * t.phase_entries[i] as f64).max(0.0);
        timing -= x;
        v.push(format!("stats:   {name:<21} {x:>9.2} ms {:>5.1}%", pct(x)));
    }
    v.push(format!("stats:   {:<21} {:>9.2} ms {:>5.1}% ({} phase switches)", "(timing itself)", timing.max(0.0), pct(timing.max(0.0)), t.switches));
    v.push(format!("stats: after translation: linking {:.2} ms, write-protecting code pages {:.2} ms", ms(s.link_ticks), ms(s.protect_ticks)));
    v.push(format!(
        "stats: decodes per translated instruction {:.2} (block {:.2}, flag look-ahead {:.2}, tool {:.2}); {:.2} passes over each block's body, {} blocks with two versions ({} of them with the fast one only, {} full versions built later), {} built twice",
        (t.decoded + t.lookahead_decoded + tool_decodes) as f64 / insns,
        t.decoded as f64 / insns,
        t.lookahead_decoded as f64 / insns,
        tool_decodes as f64 / insns,
        t.bodies as f64 / blocks,
        t.two_version_blocks,
        t.lazy_full_blocks,
        s.full_versions,
        t.rebuilt
    ));
    v
}
