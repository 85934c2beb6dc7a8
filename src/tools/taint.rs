//! `--tool=taint --taint-input=stdin|argv|FILE`: which conditional branches, memory
//! addresses, indirect jump targets and syscall arguments depend on the program's input.
//!
//! Input bytes get a shadow bit when they enter the program (a `read` from stdin or from the
//! named file, or the argument strings at start-up); every instruction propagates the bits
//! inline (`shadow::propagate`). Before a conditional branch whose flags are tainted, an
//! access whose address registers are, or an indirect jump whose target is, the site's counter
//! is incremented inline (a branch's by its flags' taint, 0 or 1, with no test); with origins a
//! branch's first event calls out to record its flags' origin, and every other site is found
//! in its counter at the end; syscall arguments are checked in the syscall hook. The report lists each
//! site once, with how often it was reached tainted, by source line where debug info exists.

use super::{ToolRun, REQ_GET_ORIGIN, REQ_GET_TAINT, REQ_TAINT, REQ_UNTAINT};
use crate::kernel::guest_mem;
use crate::kernel::memory::GuestMemory;
use crate::report::lines::SourceLines;
use crate::report::Reporter;
use crate::shadow::memory::ShadowMemory;
use crate::shadow::propagate::Propagation;
use crate::shadow::{self, fast, origin, slot};
use rtgrind_jit::iced_x86::{FlowControl, Instruction, OpAccess, OpKind, Register};
use rtgrind_jit::instrument::code_asm::{qword_ptr, rcx, rdx, rsi, AsmMemoryOperand, AsmRegister64};
use rtgrind_jit::instrument::{tool_area, BlockCode, Inline, InsnSite, Tool, Version};
use rtgrind_jit::ThreadContext;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

/// `--tool=taint`'s options.
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Options of --tool=taint")]
pub struct Options {
    /// Where input comes from: stdin, argv or a file's path.
    #[arg(long, value_name = "stdin|argv|FILE")]
    pub taint_input: Option<String>,

    /// Also track which instruction instance defined each value (origins), and say where each
    /// tainted branch's flags were defined.
    #[arg(long, value_enum, default_value = "no", value_name = "yes|no")]
    pub track_origins: crate::cli::YesNo,
}

/// `--tool=taint`: the run's instrumentation.
pub fn make(cli: &crate::cli::Cli) -> Result<Box<dyn ToolRun>, super::Error> {
    let input = Input::parse(cli.taint.taint_input.as_deref().unwrap_or("stdin"));
    if let Input::File(p) = &input {
        if !p.exists() {
            return Err(super::Error::usage(format!("--taint-input: no such file '{}'", p.display())));
        }
    }
    crate::shadow::claim_layout().map_err(|e| super::Error::internal(format!("internal: {e}")))?;
    match Taint::new(input, cli.taint.track_origins == crate::cli::YesNo::Yes) {
        Ok(t) => Ok(Box::new(t)),
        Err(e) => Err(super::Error::internal(format!("cannot reserve shadow memory: {e}"))),
    }
}

/// Where input comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    Stdin,
    Argv,
    File(PathBuf),
}

impl Input {
    pub fn parse(s: &str) -> Input {
        match s {
            "stdin" => Input::Stdin,
            "argv" => Input::Argv,
            f => Input::File(std::fs::canonicalize(f).unwrap_or_else(|_| PathBuf::from(f))),
        }
    }
}

/// What depends on input at a site.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Branch = 1,
    Address = 2,
    Jump = 3,
    Syscall = 4,
}

impl Kind {
    fn from(v: u64) -> Kind {
        match v {
            1 => Kind::Branch,
            2 => Kind::Address,
            3 => Kind::Jump,
            _ => Kind::Syscall,
        }
    }
    fn describe(self) -> &'static str {
        match self {
            Kind::Branch => "conditional branch",
            Kind::Address => "memory address",
            Kind::Jump => "indirect jump target",
            Kind::Syscall => "syscall argument",
        }
    }
}

/// Sites found tainted: (kind, guest pc, detail) -> (times, origin of the tainted value the
/// first time, 0 without origins).
#[derive(Default)]
pub struct Findings(pub BTreeMap<(Kind, u64, String), (u64, u64)>);

pub struct Taint {
    input: Input,
    shadow: *mut ShadowMemory,
    prop: Propagation,
    findings: Box<Findings>,
    counters: Counters,
    /// Descriptors reading input (stdin, or the input file's open descriptors).
    input_fds: HashSet<i32>,
    /// Origin memory (`--track-origins=yes`).
    origins: Option<*mut ShadowMemory>,
    threads: u64,
    /// Blocks get a fast version (`shadow::fast`; `RTGRIND_FAST_PATH=0` turns it off).
    fast: bool,
    /// What the block being translated uses (for its fast version's start).
    block_use: fast::BlockUse,
    /// Whether the flags' plan of the block being translated is made (`flags_plan`, from the
    /// block's code its full version's sites show): only if a full version is translated, as
    /// most blocks have only their fast version.
    planned: bool,
    /// The fast version being translated.
    fast_block: fast::FastBlock,
}

impl Taint {
    pub fn new(input: Input, track_origins: bool) -> std::io::Result<Taint> {
        let shadow = Box::into_raw(Box::new(ShadowMemory::with_summary()?));
        let origins = if track_origins { Some(Box::into_raw(Box::new(ShadowMemory::for_origins()?))) } else { None };
        let input_fds = if input == Input::Stdin { HashSet::from([0]) } else { HashSet::new() };
        let prop = Propagation::new(shadow, origins);
        Ok(Taint {
            input,
            shadow,
            prop,
            findings: Box::default(),
            counters: Counters::default(),
            input_fds,
            origins,
            threads: 0,
            fast: fast::enabled(),
            block_use: Default::default(),
            fast_block: fast::FastBlock::new(0, 0, false, &Default::default()),
            planned: false,
        })
    }

    /// Gives guest memory `[start, end)` shadow of its own (see `shadow::memory`).
    fn cover(&mut self, start: u64, end: u64) {
        self.mem().cover(start, end);
        if let Some(o) = self.origin_mem() {
            o.cover(start, end);
        }
    }

    fn origin_mem(&mut self) -> Option<&mut ShadowMemory> {
        // SAFETY: as in `mem`.
        self.origins.map(|o| unsafe { &mut *o })
    }

    /// The origin a syscall at `pc` gives what it writes.
    fn syscall_origin(&mut self, ctx: &mut ThreadContext, pc: u64) -> u64 {
        let site = self.prop.sites.id(pc);
        origin::here(site, ctx.counter)
    }

    /// "file:line (function), thread T, block instance N" for an origin.
    fn describe_origin(&self, o: u64, lines: &mut SourceLines, mem: &GuestMemory) -> String {
        let Some(pc) = self.prop.sites.pc(origin::site(o)) else { return "no definition seen".into() };
        let place = lines.describe(&[pc], mem).pop().unwrap_or_default();
        format!("{pc:#x} {place}, thread {} block instance {}", origin::thread(o), origin::instance(o))
    }

    fn mem(&mut self) -> &mut ShadowMemory {
        // SAFETY: the shadow memory lives as long as the tool; tool hooks run on the thread
        // holding the baton while no translated code (hence no call-out) runs.
        unsafe { &mut *self.shadow }
    }

    /// Which flags' writes of the block are dead and which keep the flags' taint for the branch
    /// after them (`propagate::dead_flags`, `flags_for_branch`).
    fn flags_plan(&mut self, reach: &[Instruction]) {
        self.prop.dead_flags = crate::shadow::propagate::dead_flags(reach);
        self.prop.flags_for_branch.clear();
        if self.origins.is_none() {
            // (With origins a branch's first event calls out, on the slot's value.)
            self.prop.flags_for_branch = crate::shadow::propagate::flags_for_branch(reach);
        }
        self.planned = true;
    }

    /// Code that records (kind, pc) through a call-out when `flag` (a tool-area slot, or a
    /// register's shadow) is non-zero.
    fn check(&mut self, b: &mut Inline, slots: &[usize], kind: Kind, pc: u64) {
        if kind == Kind::Branch && !self.first_event_calls_out(kind) {
            return self.count_branch(b, pc);
        }
        if b.flags_live() {
            return self.check_flag_free(b, slots, kind, pc);
        }
        b.clobber_flags();
        let t = b.scratch();
        let a = b.asm();
        let mut skip = a.create_label();
        for (i, &s) in slots.iter().enumerate() {
            let slot = qword_ptr(tool_area(s)).gs();
            if i == 0 {
                a.mov(t, slot).unwrap();
            } else {
                a.or(t, slot).unwrap();
            }
        }
        a.test(t, t).unwrap();
        a.jz(skip).unwrap();
        self.record_site(b, t, kind, pc, false);
        let a = b.asm();
        a.set_label(&mut skip).unwrap();
        a.zero_bytes().unwrap();
    }

    /// `check` where the guest's flags are live (before every conditional branch, for one):
    /// each shadow is tested with `jrcxz` on a copy in rcx, so the flags need no save.
    fn check_flag_free(&mut self, b: &mut Inline, slots: &[usize], kind: Kind, pc: u64) {
        let a = b.asm();
        let (mut tainted, mut done) = (a.create_label(), a.create_label());
        // rcx (a guest value, or a lent register's) waits in a slot of its own.
        a.mov(qword_ptr(tool_area(slot::CHECK_RCX)).gs(), rcx).unwrap();
        for &s in slots {
            let mut clean = a.create_label();
            a.mov(rcx, qword_ptr(tool_area(s)).gs()).unwrap();
            a.jrcxz(clean).unwrap();
            a.jmp(tainted).unwrap();
            a.set_label(&mut clean).unwrap();
        }
        a.mov(rcx, qword_ptr(tool_area(slot::CHECK_RCX)).gs()).unwrap();
        a.jmp(done).unwrap();
        a.set_label(&mut tainted).unwrap();
        self.record_site(b, rcx, kind, pc, true);
        let a = b.asm();
        a.mov(rcx, qword_ptr(tool_area(slot::CHECK_RCX)).gs()).unwrap();
        a.set_label(&mut done).unwrap();
        a.zero_bytes().unwrap();
    }

    /// Whether a site's first event calls out: only a branch's with origins, to record the
    /// origin of its flags then. Other sites are found in their counters at the end (`fini`).
    fn first_event_calls_out(&self, kind: Kind) -> bool {
        kind == Kind::Branch && self.origins.is_some()
    }

    /// A conditional branch's check without origins: its counter goes up by the flags' taint
    /// (0 or 1, see `Propagation::write_flags`) with `mov`, `lea`, `mov`: no branch, no
    /// call-out, the guest's flags untouched. The taint comes in the register the flags'
    /// writer kept it in where that is the instruction just before, else from its slot.
    fn count_branch(&mut self, b: &mut Inline, pc: u64) {
        let counter = self.counters.slot(Kind::Branch, pc);
        let x = match self.prop.flags_register(b, pc) {
            Some(x) => x,
            None => {
                let t = b.scratch();
                b.asm().mov(t, qword_ptr(tool_area(slot::FLAGS)).gs()).unwrap();
                t
            }
        };
        let v = b.scratch();
        let at = counter_operand(b, counter);
        let a = b.asm();
        a.mov(v, at).unwrap();
        a.lea(v, qword_ptr(v + x)).unwrap();
        a.mov(at, v).unwrap();
    }

    /// A check's slow path: counts the site's event in its counter, inline, and the first
    /// time, if it must (`first_event_calls_out`), records (kind, pc) and the flags' origin
    /// through a call-out (a call-out per event made a tainted hot loop 60 times slower than
    /// native). Clobbers `t`, which is rcx when `flags_live` (the sequence then leaves the
    /// flags alone).
    fn record_site(&mut self, b: &mut Inline, t: AsmRegister64, kind: Kind, pc: u64, flags_live: bool) {
        let counter = self.counters.slot(kind, pc);
        if !self.first_event_calls_out(kind) {
            // rcx (`flags_live`) counts with `lea`; no other register is needed.
            let at = counter_operand(b, counter);
            let a = b.asm();
            if flags_live {
                a.mov(t, at).unwrap();
                a.lea(t, qword_ptr(t + 1)).unwrap();
                a.mov(at, t).unwrap();
            } else {
                a.add(at, 1).unwrap();
            }
            return;
        }
        let a = b.asm();
        let (mut first, mut done) = (a.create_label(), a.create_label());
        if flags_live {
            // rcx counts (`lea`, `jrcxz`: no flags); another register, put back, points.
            let p = if t == rdx { rsi } else { rdx };
            a.mov(qword_ptr(tool_area(slot::SITE)).gs(), p).unwrap();
            a.mov(p, counter).unwrap();
            a.mov(t, qword_ptr(p)).unwrap();
            a.lea(t, qword_ptr(t + 1)).unwrap();
            a.mov(qword_ptr(p), t).unwrap();
            a.mov(p, qword_ptr(tool_area(slot::SITE)).gs()).unwrap();
            a.lea(t, qword_ptr(t - 1)).unwrap();
            a.jrcxz(first).unwrap();
        } else {
            a.mov(t, counter).unwrap();
            a.add(qword_ptr(t), 1).unwrap();
            a.cmp(qword_ptr(t), 1).unwrap();
            a.je(first).unwrap();
        }
        a.jmp(done).unwrap();
        a.set_label(&mut first).unwrap();
        a.mov(t, pc).unwrap();
        a.mov(qword_ptr(tool_area(slot::SITE)).gs(), t).unwrap();
        a.mov(qword_ptr(tool_area(slot::WHAT)).gs(), kind as i32).unwrap();
        b.callout(record, &*self.findings as *const Findings as u64, t);
        let a = b.asm();
        a.set_label(&mut done).unwrap();
        a.zero_bytes().unwrap();
    }

    fn taint_argv(&mut self, ctx: &ThreadContext) {
        let rsp = ctx.gpr[4];
        let argc = guest_mem::read_u64(rsp).unwrap_or(0);
        for i in 1..argc {
            if let Some(p) = guest_mem::read_u64(rsp + 8 + 8 * i) {
                if let Some(s) = guest_mem::read_cstr(p, 1 << 20) {
                    self.mem().set_range(p, s.len() as u64, 1);
                }
            }
        }
    }
}

fn gpr_slot(r: Register) -> Option<usize> {
    shadow::gpr_number(r).map(shadow::gpr_slot)
}

/// A site's first event: the site, with the origin of the flags of a branch (the count is its
/// counter's, `Counters`).
extern "C" fn record(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::TaintFirstEvent);
    // SAFETY: rtg_callout passes this thread's context; `arg` is the tool's boxed Findings,
    // which nothing else references while translated code runs.
    let (ctx, f) = unsafe { (&mut *ctx, &mut *(arg as *mut Findings)) };
    let (pc, kind) = (*shadow::word(ctx, slot::SITE), Kind::from(*shadow::word(ctx, slot::WHAT)));
    let origin = if kind == Kind::Branch { *shadow::word(ctx, slot::ORIGIN_FLAGS) } else { 0 };
    f.0.entry((kind, pc, String::new())).or_insert((0, origin));
}

/// The event counters of the checked sites, one a (kind, pc), given at translation time; the
/// translated code counts in them inline. (Pages: a counter's address never changes. They are
/// below 2 GiB where the system gives room there, so code names a counter by a 32-bit
/// displacement, without a register to point at it: see `counter_operand`.)
#[derive(Default)]
struct Counters {
    pages: Vec<&'static mut [u64; 512]>,
    by_site: std::collections::HashMap<(Kind, u64), usize>,
}

impl Counters {
    /// The address of the counter of `kind` at `pc` (a retranslation keeps it).
    fn slot(&mut self, kind: Kind, pc: u64) -> u64 {
        let n = self.by_site.len();
        let i = *self.by_site.entry((kind, pc)).or_insert(n);
        if i / 512 == self.pages.len() {
            self.pages.push(counter_page());
        }
        &mut self.pages[i / 512][i % 512] as *mut u64 as u64
    }

    /// Puts each site's count into its finding; a site seen without a call-out (see
    /// `Taint::first_event_calls_out`) becomes one here.
    fn count_into(&self, findings: &mut Findings) {
        for (&(kind, pc), &i) in &self.by_site {
            let n = self.pages[i / 512][i % 512];
            if n > 0 {
                findings.0.entry((kind, pc, String::new())).or_insert((0, 0)).0 = n;
            }
        }
    }
}

/// A zeroed page of counters, below 2 GiB if there is room (else anywhere). Never freed:
/// translated code holds the counters' addresses until the process ends.
fn counter_page() -> &'static mut [u64; 512] {
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_32BIT;
    // SAFETY: a fresh anonymous mapping of one page, never unmapped.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0) };
    if p == libc::MAP_FAILED {
        return Box::leak(Box::new([0; 512]));
    }
    // SAFETY: the page is 4 KiB, aligned, zeroed and owned by nothing else.
    unsafe { &mut *(p as *mut [u64; 512]) }
}

/// The memory operand of the counter at `counter`: a 32-bit displacement where it is below
/// 2 GiB (`counter_page`), else through a lent register.
fn counter_operand(b: &mut Inline, counter: u64) -> AsmMemoryOperand {
    if counter < 1 << 31 {
        return qword_ptr(counter);
    }
    let p = b.scratch();
    b.asm().mov(p, counter).unwrap();
    qword_ptr(p)
}

impl Tool for Taint {
    fn two_versions(&mut self, _pc: u64, code: &BlockCode) -> bool {
        if self.origins.is_some() {
            self.prop.dead_origins = crate::shadow::propagate::dead_origins(code);
        }
        if self.fast {
            self.block_use = fast::block_use(code);
        }
        self.planned = false;
        self.fast
    }

    fn block_start(&mut self, _pc: u64, b: &mut Inline) {
        fast::block_start(b, &mut self.prop, &self.block_use, &mut self.fast_block, &mut |_| {});
    }

    fn full_entry(&mut self, b: &mut Inline) {
        fast::mark_dirty(b);
    }

    fn before_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        if b.version() != Version::Fast && !self.planned {
            self.flags_plan(site.reach);
        }
        if b.version() == Version::Fast {
            // Clean data, checked; origins propagate as in the full version, except the flags':
            // the flags are clean here, and only a branch report reads their origin, of tainted
            // flags, which only the full version writes (with their origin).
            if self.fast_block.before(site, b) && self.origins.is_some() {
                b.release_scratch();
                self.prop.flags_origin_unread = true;
                self.prop.before_origins_only(site, b);
            }
            return;
        }
        let ins = site.ins;
        let pc = ins.ip();
        if ins.flow_control() == FlowControl::ConditionalBranch && ins.condition_code() != rtgrind_jit::iced_x86::ConditionCode::None {
            self.check(b, &[slot::FLAGS], Kind::Branch, pc);
        }
        if matches!(ins.flow_control(), FlowControl::IndirectBranch | FlowControl::IndirectCall) && ins.op0_kind() == OpKind::Register {
            if let Some(s) = gpr_slot(ins.op0_register()) {
                self.check(b, &[s], Kind::Jump, pc);
            }
        }
        let mut addr_slots = Vec::new();
        for m in site.info.used_memory() {
            if m.access() == OpAccess::NoMemAccess {
                continue;
            }
            for r in [m.base(), m.index()] {
                if let Some(s) = gpr_slot(r) {
                    if !addr_slots.contains(&s) {
                        addr_slots.push(s);
                    }
                }
            }
        }
        if !addr_slots.is_empty() {
            self.check(b, &addr_slots, Kind::Address, pc);
        }
        self.prop.before(site, b);
    }

    fn after_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        // (With origins, the fast version's `movs`/`stos` move them in a call-out.)
        if b.version() == Version::Fast && self.origins.is_none() {
            return;
        }
        self.prop.after(site, b);
    }
}

/// Arguments a syscall takes (the others are not checked); unknown ones are checked in full.
pub(crate) fn arg_count(nr: i64) -> usize {
    match nr {
        libc::SYS_close
        | libc::SYS_brk
        | libc::SYS_exit
        | libc::SYS_exit_group
        | libc::SYS_dup
        | libc::SYS_set_tid_address
        | libc::SYS_uname
        | libc::SYS_pipe => 1,
        libc::SYS_munmap
        | libc::SYS_fstat
        | libc::SYS_stat
        | libc::SYS_lstat
        | libc::SYS_dup2
        | libc::SYS_clock_gettime
        | libc::SYS_gettimeofday
        | libc::SYS_arch_prctl
        | libc::SYS_pipe2
        | libc::SYS_kill
        | libc::SYS_access
        | libc::SYS_set_robust_list => 2,
        libc::SYS_read
        | libc::SYS_write
        | libc::SYS_open
        | libc::SYS_lseek
        | libc::SYS_mprotect
        | libc::SYS_ioctl
        | libc::SYS_readv
        | libc::SYS_writev
        | libc::SYS_getrandom
        | libc::SYS_fcntl
        | libc::SYS_getdents64
        | libc::SYS_madvise
        | libc::SYS_tgkill
        | libc::SYS_readlink => 3,
        libc::SYS_openat
        | libc::SYS_newfstatat
        | libc::SYS_pread64
        | libc::SYS_pwrite64
        | libc::SYS_rt_sigaction
        | libc::SYS_rt_sigprocmask
        | libc::SYS_wait4
        | libc::SYS_prlimit64
        | libc::SYS_readlinkat => 4,
        libc::SYS_mremap => 5,
        _ => 6,
    }
}

/// The guest buffer (address, length) a successful syscall wrote, if it is one we know.
pub(crate) fn written_buffer(nr: i64, a: &[u64; 6], ret: i64) -> Option<(u64, u64)> {
    let ret_len = ret.max(0) as u64;
    Some(match nr {
        libc::SYS_read | libc::SYS_pread64 | libc::SYS_getdents64 | libc::SYS_getrandom | libc::SYS_recvfrom => (a[1], ret_len),
        libc::SYS_readlink => (a[1], ret_len),
        libc::SYS_readlinkat => (a[2], ret_len),
        libc::SYS_fstat | libc::SYS_stat | libc::SYS_lstat => (a[1], 144),
        libc::SYS_newfstatat => (a[2], 144),
        libc::SYS_clock_gettime => (a[1], 16),
        libc::SYS_gettimeofday => (a[0], 16),
        libc::SYS_uname => (a[0], 390),
        libc::SYS_pipe | libc::SYS_pipe2 => (a[0], 8),
        _ => return None,
    })
}

impl ToolRun for Taint {
    fn start(&mut self, ctx: &mut ThreadContext, mem: &GuestMemory) {
        for (s, e) in shadow::initial_ranges(ctx.gpr[4], mem) {
            self.cover(s, e);
        }
        shadow::init_thread(ctx);
        if self.input == Input::Argv {
            self.taint_argv(ctx);
        }
    }

    fn thread_start(&mut self, child: &mut ThreadContext) {
        self.threads += 1;
        shadow::start_thread(child, self.threads);
    }

    fn syscall_pre(&mut self, ctx: &mut ThreadContext, nr: u64, _args: &[u64; 6]) -> Option<i64> {
        const ARG_REGS: [usize; 6] = [7, 6, 2, 10, 8, 9]; // rdi rsi rdx r10 r8 r9
        for (i, &r) in ARG_REGS.iter().enumerate().take(arg_count(nr as i64)) {
            if *shadow::gpr(ctx, r) != 0 {
                let pc = ctx.rip.wrapping_sub(2);
                self.findings.0.entry((Kind::Syscall, pc, format!("syscall {nr} argument {}", i + 1))).or_default().0 += 1;
            }
        }
        None
    }

    fn syscall_post(&mut self, ctx: &mut ThreadContext, nr: u64, a: &[u64; 6], ret: i64, mem: &GuestMemory) {
        for r in [0, 1, 11] {
            *shadow::gpr(ctx, r) = 0;
        }
        let defined = if self.origins.is_some() { self.syscall_origin(ctx, ctx.rip.wrapping_sub(2)) } else { 0 };
        *shadow::word(ctx, slot::ORIGIN_GPR) = defined;
        let nr = nr as i64;
        if ret < 0 {
            return;
        }
        if let Some((start, end)) = shadow::mapped_by(nr, a, ret, mem) {
            self.cover(start, end);
        }
        if let Input::File(path) = &self.input {
            let opened = match nr {
                libc::SYS_open => Some(a[0]),
                libc::SYS_openat => Some(a[1]),
                _ => None,
            };
            if let Some(p) = opened.and_then(|p| guest_mem::read_cstr(p, 4096)) {
                let p = PathBuf::from(String::from_utf8_lossy(&p).into_owned());
                if std::fs::canonicalize(&p).ok().as_ref() == Some(path) {
                    self.input_fds.insert(ret as i32);
                }
            }
        }
        if nr == libc::SYS_close {
            if !(self.input == Input::Stdin && a[0] == 0) {
                self.input_fds.remove(&(a[0] as i32));
            }
            return;
        }
        if nr == libc::SYS_readv {
            let from_input = self.input_fds.contains(&(a[0] as i32));
            let mut left = ret as u64;
            for i in 0..a[2].min(1024) {
                let (Some(base), Some(len)) = (guest_mem::read_u64(a[1] + 16 * i), guest_mem::read_u64(a[1] + 16 * i + 8)) else { break };
                let n = len.min(left);
                self.mem().set_range(base, n, from_input as u8);
                if let Some(o) = self.origin_mem() {
                    o.set64_range(base, n, defined);
                }
                left -= n;
            }
            return;
        }
        if let Some((buf, len)) = written_buffer(nr, a, ret) {
            let from_input = matches!(nr, libc::SYS_read | libc::SYS_pread64 | libc::SYS_recvfrom) && self.input_fds.contains(&(a[0] as i32));
            self.mem().set_range(buf, len, from_input as u8);
            if let Some(o) = self.origin_mem() {
                o.set64_range(buf, len, defined);
            }
        }
    }

    fn client_request(&mut self, _ctx: &mut ThreadContext, req: &[u64; 6], _mem: &GuestMemory) -> Option<u64> {
        match req[0] {
            REQ_TAINT | REQ_UNTAINT => {
                self.mem().set_range(req[1], req[2].min(1 << 32), (req[0] == REQ_TAINT) as u8);
                Some(1)
            }
            REQ_GET_TAINT => {
                let bytes: Vec<u8> = (0..req[2].min(1 << 20)).map(|i| (self.mem().get(req[1] + i) != 0) as u8).collect();
                Some(guest_mem::write(req[3], &bytes) as u64)
            }
            REQ_GET_ORIGIN => {
                let o = self.origin_mem()?.get64(req[1]);
                Some(self.prop.sites.pc(origin::site(o)).unwrap_or(0))
            }
            super::REQ_RUNNING_ON_RTGRIND => Some(1),
            _ => None,
        }
    }

    fn fini(&mut self, report: &mut Reporter, mem: &GuestMemory) {
        self.counters.count_into(&mut self.findings);
        let f = &self.findings.0;
        let sites: Vec<u64> = f.keys().map(|k| k.1).collect();
        let mut lines = SourceLines::default();
        let places = lines.describe(&sites, mem);
        report.line(&format!(
            "taint: input from {}; {} input-dependent sites",
            match &self.input {
                Input::Stdin => "stdin".to_string(),
                Input::Argv => "the arguments".to_string(),
                Input::File(p) => p.display().to_string(),
            },
            f.len()
        ));
        for (((kind, pc, detail), (n, o)), place) in f.iter().zip(places) {
            let detail = if detail.is_empty() { String::new() } else { format!(" ({detail})") };
            report.line(&format!("taint: {:<20} at {pc:#x} {place}{detail}: {n} times", kind.describe()));
            if self.origins.is_some() && *kind == Kind::Branch {
                report.line(&format!("taint:   its flags were defined at {}", self.describe_origin(*o, &mut lines, mem)));
            }
        }
    }
}
