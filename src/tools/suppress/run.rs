//! One run of the suppression tool: trace and suppress at once (dissertation Fig. 7.1).
//!
//! Every value carries an origin (its defining instance, `shadow::propagate::Policy`) and a
//! corrupt bit (the taint shadow). From each suppression point of the plan on, what the point
//! defines is corrupt, and corruption propagates like taint; guards in front of instructions
//! that would use a corrupt value in a way that matters (a store, an address, a branch, a
//! return address, an indirect target, a divisor, a syscall argument) suppress them: a
//! call-out marks what they would have written corrupt and the block is left past them (or,
//! for a branch, at the point where its paths meet). When the program dies, the crash
//! analysis names the locations the crashing instruction used and their origins: the next
//! suppression points.

use super::area;
use super::events;
use super::frames::{
    call_sites_between, calls_into, calls_with, frame_entries, init_call_log, init_table, logged_call, logged_ordinals, CALLEE_SAVED, CALL_LOG_ENTRY,
    CALL_LOG_WRAP_BIT, ENTRY_WORDS_USED, MASKS,
};
use super::guards::{
    call_store_callout, guard_callout, guest_regs, hit, plain_store_of, point_callout, string_copy, string_store, Guard, GuardKind, PointCheck, State,
};
use super::ordinals;
use super::plan::{self, Outcome, Plan, Point};
use super::records;
use super::redzones::{Overwritten, Redzones};
use super::watch::{self, WatchCheck, Watched};
use crate::kernel::guest_mem;
use crate::kernel::memory::GuestMemory;
use crate::report::symbols::Callees;
use crate::report::Reporter;
use crate::shadow::memory::ShadowMemory;
use crate::shadow::propagate::{effective_address, r16, r32, writes, Policy, Propagation};
use crate::shadow::{self, fast, origin, slot};
use crate::tools::expected::ExpectedOutput;
use crate::tools::heap::{Hook, Kind};
use crate::tools::{decode, ToolRun};
use rtgrind_jit::iced_x86::{ConditionCode, FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpAccess, OpKind, Register, UsedMemory};
use rtgrind_jit::instrument::code_asm::{qword_ptr, AsmMemoryOperand, AsmRegister64, CodeLabel};
use rtgrind_jit::instrument::{tool_area, BlockCode, Inline, InsnSite, RecordRef, Tool, Version, When};
use rtgrind_jit::ThreadContext;
use std::collections::HashMap;

pub struct SuppressRun {
    program: String,
    plan: Plan,
    prop: Propagation,
    /// Origin memory, in a run that traces (`Plan::trace`): the crash analysis needs it.
    origins: Option<*mut ShadowMemory>,
    state: Box<State>,
    // Boxed: translations hold their addresses, which must not move as the vectors grow.
    #[allow(clippy::vec_box)]
    guards: Vec<Box<Guard>>,
    #[allow(clippy::vec_box)]
    checks: Vec<Box<PointCheck>>,
    #[allow(clippy::vec_box)]
    watch_checks: Vec<Box<WatchCheck>>,
    /// Locations the failure used narrower than their origin granule (`Outcome::narrow`).
    narrow: Vec<(u64, u64)>,
    threads: u64,
    crash: Option<Failed>,
    /// For the failure's definitions made in a library: (origin, return address of the
    /// program's call they belong to), from the call log.
    def_sites: Vec<(u64, u64)>,
    /// Definitions that are a whole library call (what, the call's instance word, its return
    /// address, the callee): a copy that moved the program's bytes where they corrupted.
    call_defs: Vec<CallDef>,
    /// What counts its executions, for points named by ordinal (`ordinals`).
    anchors: ordinals::Anchors,
    /// Whether every call site of the program counts its calls (see `at_call`).
    every_call_counted: bool,
    /// The program's basic blocks, for the ordinals of a traced run's definitions.
    segments: ordinals::Segments,
    /// The failing thread's logged calls at the failure: return address and ordinal by
    /// instance word (a library's definitions are named by their call).
    call_ordinals: HashMap<u64, (u64, u64)>,
    /// The syscall being handled was suppressed (`syscall_pre` said so).
    syscall_suppressed: bool,
    failure: Option<Failure>,
    /// Ranges of the C runtime's functions in the program.
    crt: Vec<(u64, u64)>,
    lifetime: crate::tools::Lifetime,
    /// The main program's mapping name (for its symbols and relocations).
    main_path: String,
    /// What its calls through the PLT reach (read once, at the first crash analysis that asks).
    callees: Option<std::rc::Rc<Callees>>,
    /// Its data objects (read once, at the first crash analysis that asks).
    objects: Option<std::rc::Rc<Vec<(u64, u64)>>>,
    /// The program's entry point, where instances restart (`restart_count`), and whether they
    /// have (boxed: translations hold its address).
    entry: Option<u64>,
    restarted: Box<std::sync::atomic::AtomicBool>,
    /// Bytes in flight in pipes (by inode): their origin and corrupt bit, so both survive a
    /// round trip through the kernel.
    pipes: HashMap<u64, std::collections::VecDeque<(u64, u8)>>,
    /// Armed blocks get a fast version (`shadow::fast`; `RTGRIND_FAST_PATH=0` turns it off):
    /// while no register is corrupt, loads are checked clean instead of propagated, and no
    /// guard can fire.
    fast: bool,
    /// What the block being translated uses (for its fast version's start).
    block_use: fast::BlockUse,
    /// The fast version being translated.
    fast_block: fast::FastBlock,
    /// Heap redzones, in a run with them (`Plan::redzones`).
    redzones: Option<Redzones>,
    /// The heap hooks' call-out arguments (boxed: translations hold their addresses).
    #[allow(clippy::vec_box)]
    heap_sites: Vec<Box<HeapSite>>,
    /// A guard of the instruction being instrumented may skip it inline (`events`).
    skips_here: bool,
    /// The instruction being instrumented was changed by a layout (`InsnSite::rewritten`):
    /// its records hold its encoding, not the guest's bytes.
    rewritten_here: bool,
}

/// An allocation function's hook, as its call-out is told.
struct HeapSite {
    hook: Hook,
    run: *mut SuppressRun,
    /// Registers the hook's code lent (`guards::guest_regs`).
    spilled: u16,
}

/// At an allocation function's entry, `ret` or jump out, in a run with redzones.
extern "C" fn heap_hook(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::SuppressHeapHook);
    // SAFETY: rtg_callout passes this thread's context; `arg` is a `HeapSite` the tool keeps,
    // whose tool is boxed for the whole run and touched by one thread at a time (the one
    // holding the baton, which is running this call-out, not any other of its methods).
    let (ctx, site) = unsafe { (&mut *ctx, &*(arg as *const HeapSite)) };
    // SAFETY: as above.
    unsafe { &mut *site.run }.heap_hook(ctx, site.hook, site.spilled);
}

/// The failure: (signal, or a negative `Failure` code; guest pc; the thread's block instance;
/// used locations with their origins; for a named failure, what happened).
/// Locations a failure used, each with its origin (what the report says of it, origin).
type Locations = Vec<(String, u64)>;

struct Failed {
    /// The fatal signal, or (negative) a named failure's kind.
    signal: i32,
    pc: u64,
    instance: u64,
    /// The locations it used, with their origins.
    used: Vec<(String, u64)>,
    /// For a named failure, what happened.
    what: String,
    /// The calls it happened under, a library's too (return addresses, innermost first).
    calls: Vec<u64>,
}

/// `Failed::signal` of an overwritten redzone (a named failure's is -1).
pub(super) const REDZONE_FAILURE: i32 = -2;

/// A library call of the program that is a definition as a whole (a copy that wrote where the
/// failure read): what it wrote, the call's instance word, its return address, the callee.
struct CallDef {
    what: String,
    word: u64,
    ret: u64,
    name: String,
}

/// A copying call found in the call log: its instance word, return address and callee.
struct Copier {
    word: u64,
    ret: u64,
    name: String,
}

impl Copier {
    /// The definition it is, of a location described by `what`.
    fn def(self, what: String) -> CallDef {
        CallDef { what: format!("{what}, written by {}", self.name), word: self.word, ret: self.ret, name: self.name }
    }
}

/// A failure other than a crash (`--failure`).
enum Failure {
    /// The program exits with a non-zero status (that is not corrupt).
    ExitCode,
    /// Its standard error matches the expression (text so far).
    Stderr(regex::Regex, String),
    /// Its standard output differs from the file's contents.
    Output(ExpectedOutput),
}

/// Whether `--failure`'s value is one the runs accept (the search checks it once, up front).
pub fn check_failure(spec: &str) -> Result<(), String> {
    Failure::parse(spec).map(|_| ())
}

impl Failure {
    fn parse(spec: &str) -> Result<Failure, String> {
        if spec == "exit-code" {
            Ok(Failure::ExitCode)
        } else if let Some(re) = spec.strip_prefix("stderr:") {
            regex::Regex::new(re).map(|r| Failure::Stderr(r, String::new())).map_err(|e| format!("--failure=stderr: bad expression: {e}"))
        } else if let Some(f) = spec.strip_prefix("output:") {
            std::fs::read(f).map(|b| Failure::Output(ExpectedOutput::new(b, 0))).map_err(|e| format!("--failure=output: cannot read '{f}': {e}"))
        } else {
            Err(format!("unknown --failure '{spec}' (expected exit-code, stderr:REGEX or output:FILE)"))
        }
    }
}

const ARG_REGS: [usize; 6] = [7, 6, 2, 1, 8, 9]; // rdi rsi rdx rcx r8 r9
const SYSCALL_ARGS: [usize; 6] = [7, 6, 2, 10, 8, 9]; // rdi rsi rdx r10 r8 r9

impl SuppressRun {
    /// `program`: the main program's path (canonical), whose code counts as "the program".
    pub fn new(plan: Plan, program: String) -> Result<SuppressRun, String> {
        let failure = plan.failure.as_deref().map(Failure::parse).transpose()?;
        Self::with_failure(plan, program, failure).map_err(|e| format!("cannot reserve shadow memory: {e}"))
    }

    fn with_failure(plan: Plan, program: String, failure: Option<Failure>) -> std::io::Result<SuppressRun> {
        let shadow = Box::into_raw(Box::new(ShadowMemory::with_summary()?));
        let origins = if plan.trace { Some(Box::into_raw(Box::new(ShadowMemory::for_origins()?))) } else { None };
        let mut prop = Propagation::new(shadow, origins);
        prop.taint_on = false;
        // (See `relocatable_code`.)
        prop.relocatable = !plan.trace;
        // Points name block instances, traced or not.
        prop.count_blocks = true;
        let watches = plan.watch.iter().map(|&(addr, size)| Watched { addr, size, origin: 0 }).collect();
        let state = Box::new(State {
            shadow,
            ipdoms: HashMap::new(),
            functions: Vec::new(),
            suppressed: HashMap::new(),
            hits: Vec::new(),
            main: (0, 0),
            armed: false,
            arm_requested: false,
            syscall_writes_corrupt: false,
            origins: origins.unwrap_or(std::ptr::null_mut()),
            watches,
            watch_pending: None,
            rings: Vec::new(),
            continued: Default::default(),
            calls: plan.points.iter().filter(|p| p.call() || p.call_site().is_some()).copied().collect(),
        });
        let anchors = ordinals::Anchors::new(plan.points.iter().map(|p| p.pc));
        let redzones = plan.redzones.then(Redzones::default);
        Ok(SuppressRun {
            program,
            plan,
            prop,
            origins,
            state,
            guards: Vec::new(),
            checks: Vec::new(),
            watch_checks: Vec::new(),
            narrow: Vec::new(),
            threads: 0,
            crash: None,
            def_sites: Vec::new(),
            call_defs: Vec::new(),
            anchors,
            segments: ordinals::Segments::default(),
            every_call_counted: true,
            call_ordinals: HashMap::new(),
            syscall_suppressed: false,
            pipes: HashMap::new(),
            failure,
            crt: Vec::new(),
            lifetime: Default::default(),
            main_path: String::new(),
            callees: None,
            objects: None,
            entry: None,
            restarted: Box::default(),
            fast: fast::enabled(),
            block_use: Default::default(),
            skips_here: false,
            rewritten_here: false,
            fast_block: fast::FastBlock::new(0, 0, false, &Default::default()),
            redzones,
            heap_sites: Vec::new(),
        })
    }

    /// Gives guest memory `[start, end)` shadow of its own, corrupt bits and origins.
    fn cover(&mut self, start: u64, end: u64) {
        self.state.mem().cover(start, end);
        if let Some(o) = self.origin_mem() {
            o.cover(start, end);
        }
    }

    fn origin_mem(&mut self) -> Option<&mut ShadowMemory> {
        // SAFETY: as in `State::mem`.
        self.origins.map(|o| unsafe { &mut *o })
    }

    /// The origin of the 8 bytes at `addr` (0 in a run that does not trace).
    fn origin_at(&mut self, addr: u64) -> u64 {
        self.origin_mem().map_or(0, |o| o.get64(addr))
    }

    /// The origin of the `size` bytes at `addr`: a watched location's own (0 if no store
    /// wrote it), else its granule's, noted as `narrow` when the location is narrower than the
    /// granule and a narrow store defined the granule last (it may have been a neighbour's).
    fn location_origin(&mut self, addr: u64, size: u64) -> u64 {
        if self.plan.watch.contains(&(addr, size)) {
            return self.state.watched(addr, size).unwrap_or(0);
        }
        let o = self.origin_at(addr);
        let narrow_store = self.stores_of(o).iter().any(|m| m.memory_size().size() < 8 || !origin::in_main(o));
        if (size < 8 || addr % 8 + size > 8) && narrow_store && !self.narrow.contains(&(addr, size)) {
            self.narrow.push((addr, size));
        }
        o
    }

    /// The memory operands the instruction of origin `o`'s site writes (none where it is no
    /// store, or its site is unknown).
    fn stores_of(&self, o: u64) -> Vec<rtgrind_jit::iced_x86::UsedMemory> {
        let Some(i) = self.prop.sites.pc(origin::site(o)).and_then(decode) else { return Vec::new() };
        InstructionInfoFactory::new().info(&i).used_memory().iter().filter(|m| writes(m.access())).copied().collect()
    }

    fn traced(&self) -> bool {
        self.origins.is_some()
    }

    /// A branch of the program's own code (not the C runtime's), whose condition's origin a
    /// traced run remembers for the crash analysis.
    fn program_branch(&self, pc: u64) -> bool {
        self.prop.policy.is_some_and(|p| p.is_main(pc)) && !self.crt.iter().any(|f| (f.0..f.1).contains(&pc))
    }

    fn state_ptr(&mut self) -> *mut State {
        &mut *self.state as *mut State
    }

    fn restarted_ptr(&self) -> u64 {
        &*self.restarted as *const std::sync::atomic::AtomicBool as u64
    }

    /// How many times each kind of suppression acted: the call-outs' counts and the events
    /// the guards handled inline.
    fn suppressed_counts(&self) -> HashMap<&'static str, u64> {
        let mut counts = self.state.suppressed.clone();
        for g in &self.guards {
            let relaxed = std::sync::atomic::Ordering::Relaxed;
            let kinds = [(events::inline_event(g.kind, &g.ins, false), g.events.load(relaxed)), (Some(events::STORE), g.store_events.load(relaxed))];
            for (what, n) in kinds.into_iter().filter(|k| k.1 > 0) {
                *counts.entry(what.expect("counted inline")).or_default() += n;
            }
        }
        counts
    }

    /// `if any of the words at `slots`, or the shadow of the 8 bytes at `mem_value`, is
    /// non-zero: call the guard, and leave the block if it says so`; events the code handles
    /// inline (`events`) are tested first, each on its own slots.
    /// None in a fast version: every register there is clean, and so is every value it
    /// loaded (checked), so no guard could fire.
    fn guard(&mut self, b: &mut Inline, kind: GuardKind, ins: &Instruction, slots: &[usize], mem_value: Option<&rtgrind_jit::iced_x86::UsedMemory>) {
        if !self.state.armed || b.version() == Version::Fast {
            return;
        }
        let counter = b.flags_live().then(|| b.scratch_rcx()).flatten();
        if counter.is_none() {
            b.clobber_flags();
        }
        let (t, u, v) = (counter.unwrap_or_else(|| b.scratch()), b.scratch(), b.scratch());
        let spilled = b.spilled();
        let (code, n) = records::code_of(ins, self.rewritten_here);
        let arg = b.record(records::GUARD, records::guard(kind, spilled, (ins.ip(), ins.len() as u8, &code[..n])));
        let shadow = (self.prop.taint_table, self.prop.summary);
        let (inline, rest) = events::split(kind, ins, arg, slots, *super::guards::TRACE, shadow);
        self.skips_here |= !inline.is_empty();
        let a = b.asm();
        let (mut done, mut labels) = (a.create_label(), Vec::new());
        let calls_out = !rest.is_empty() || mem_value.is_some();
        if counter.is_some() {
            // (A flag-free test: rcx, the sum of the slots, zero or not.)
            let sum = |a: &mut rtgrind_jit::instrument::code_asm::CodeAssembler, slots: &[usize]| {
                a.mov(t, 0u64).unwrap();
                for &s in slots {
                    a.mov(u, qword_ptr(tool_area(s)).gs()).unwrap();
                    a.lea(t, qword_ptr(t + u)).unwrap();
                }
            };
            for (k, e) in inline.iter().enumerate() {
                let mut next = a.create_label();
                labels.push(a.create_label());
                sum(a, &e.slots);
                let last = k + 1 == inline.len() && !calls_out;
                rcx_branch(a, if last { done } else { next }, labels[k]);
                a.set_label(&mut next).unwrap();
                a.zero_bytes().unwrap();
            }
            if calls_out {
                sum(a, &rest);
                self.guard_flag_free(b, (t, u, v), arg, mem_value, done);
            }
        } else {
            for e in &inline {
                labels.push(a.create_label());
                a.xor(t, t).unwrap();
                for &s in &e.slots {
                    a.or(t, qword_ptr(tool_area(s)).gs()).unwrap();
                }
                a.test(t, t).unwrap();
                a.jnz(*labels.last().expect("just pushed")).unwrap();
            }
            if calls_out {
                self.guard_callout_if_set(b, (t, u, v), arg, &rest, mem_value, done);
            } else {
                a.jmp(done).unwrap();
            }
        }
        for (e, mut label) in inline.iter().zip(labels) {
            let a = b.asm();
            a.set_label(&mut label).unwrap();
            a.zero_bytes().unwrap();
            events::emit(b, e, (t, u, v));
        }
        let a = b.asm();
        a.set_label(&mut done).unwrap();
        a.zero_bytes().unwrap();
        b.release_scratch();
    }

    /// `if any of the words at `slots`, or the shadow of the 8 bytes at `mem_value`, is
    /// non-zero: call the guard, and leave the block if it says so`, then on at `done`
    /// (flags clobbered, `t`, `u`, `v` lent).
    fn guard_callout_if_set(
        &mut self,
        b: &mut Inline,
        (t, u, v): (AsmRegister64, AsmRegister64, AsmRegister64),
        arg: RecordRef,
        slots: &[usize],
        mem_value: Option<&rtgrind_jit::iced_x86::UsedMemory>,
        done: CodeLabel,
    ) {
        let a = b.asm();
        a.xor(t, t).unwrap();
        for &s in slots {
            a.or(t, qword_ptr(tool_area(s)).gs()).unwrap();
        }
        if let Some(m) = mem_value {
            // The corrupt bytes of the value in memory (8 shadow bytes at its address).
            crate::shadow::propagate::effective_address(b, u, m, v);
            crate::shadow::propagate::shadow_qword(b, u, v, t, self.prop.taint_table);
        }
        let a = b.asm();
        a.test(t, t).unwrap();
        a.jz(done).unwrap();
        b.callout_record(guard_callout, arg, t);
        let a = b.asm();
        a.cmp(qword_ptr(tool_area(area::REDIRECT)).gs(), 0).unwrap();
        a.je(done).unwrap();
        b.exit_to(tool_area(area::REDIRECT));
    }

    /// `guard_callout_if_set` where the guest's flags are live (before every conditional
    /// branch and return), with the slots' sum in rcx (`c`): the shadows are summed with `lea`
    /// (they are small non-negative masks, so the sum is zero only if all are) and tested with
    /// `jrcxz`, and the slow path tests the redirect word the same way, so the flags need no
    /// save.
    fn guard_flag_free(
        &mut self,
        b: &mut Inline,
        (c, u, v): (AsmRegister64, AsmRegister64, AsmRegister64),
        arg: RecordRef,
        mem_value: Option<&rtgrind_jit::iced_x86::UsedMemory>,
        done: CodeLabel,
    ) {
        if let Some(m) = mem_value {
            crate::shadow::propagate::effective_address(b, u, m, v);
            crate::shadow::propagate::shadow_qword(b, u, v, v, self.prop.taint_table);
            b.asm().lea(c, qword_ptr(c + v)).unwrap();
        }
        let a = b.asm();
        let (mut slow, mut leave) = (a.create_label(), a.create_label());
        rcx_branch(a, done, slow);
        a.set_label(&mut slow).unwrap();
        a.zero_bytes().unwrap();
        b.callout_record(guard_callout, arg, u);
        let a = b.asm();
        a.mov(c, qword_ptr(tool_area(area::REDIRECT)).gs()).unwrap();
        rcx_branch(a, done, leave);
        a.set_label(&mut leave).unwrap();
        a.zero_bytes().unwrap();
        b.exit_to(tool_area(area::REDIRECT));
    }

    /// Records the call in the return-address table and marks the arguments as crossing a
    /// call (see `Policy`).
    fn at_call(&mut self, ins: &Instruction, b: &mut Inline) {
        let traced = self.traced();
        if traced {
            b.clobber_flags();
        }
        let (s1, s2) = (b.scratch(), b.scratch());
        let spilled = b.spilled();
        let a = b.asm();
        let rsp = rtgrind_jit::instrument::code_asm::rsp;
        // Entry = table + 16 * ((rsp - 8) & 0xffff), flag-free (as in `at_return`).
        a.lea(s1, qword_ptr(rsp - 8)).unwrap();
        a.movzx(r32(s2), r16(s1)).unwrap();
        a.mov(s1, qword_ptr(tool_area(area::RET_TABLE)).gs()).unwrap();
        a.lea(s1, qword_ptr(s1 + s2 * 8)).unwrap();
        a.lea(s2, qword_ptr(s1 + s2 * 8)).unwrap();
        a.lea(s1, qword_ptr(rsp - 8)).unwrap();
        a.mov(qword_ptr(s2), s1).unwrap();
        a.mov(s1, ins.next_ip()).unwrap();
        a.mov(qword_ptr(s2 + 8), s1).unwrap();
        if traced {
            a.mov(s1, qword_ptr(tool_area(slot::ORIGIN_GPR + 8 * 7)).gs()).unwrap();
            a.mov(qword_ptr(s2 + 16), s1).unwrap();
        }
        // rdi, and the callee-saved registers for leaving a function early: guest values, from
        // their spill slots where a tool holds the register.
        let store_guest = |a: &mut rtgrind_jit::instrument::code_asm::CodeAssembler, r: usize, off: i32| {
            let at = qword_ptr(s2 + off);
            if spilled & (1 << r) != 0 {
                a.mov(s1, qword_ptr(rtgrind_jit::instrument::spill_slot(r) as u64).gs()).unwrap();
                a.mov(at, s1).unwrap();
            } else {
                a.mov(at, rtgrind_jit::instrument::code_asm::get_gpr64(Register::RAX + r as u32).unwrap()).unwrap();
            }
        };
        store_guest(a, 7, 72);
        for (k, &r) in CALLEE_SAVED.iter().enumerate() {
            store_guest(a, r, (24 + 8 * k) as i32);
        }
        if self.state.armed {
            // Their corrupt masks, for a function left early (`return_corrupt`).
            for (k, &r) in CALLEE_SAVED.iter().enumerate() {
                a.mov(s1, qword_ptr(tool_area(shadow::gpr_slot(r))).gs()).unwrap();
                a.mov(qword_ptr(s2 + (8 * (MASKS + k)) as i32), s1).unwrap();
            }
        }
        for r in ARG_REGS.into_iter().filter(|_| traced) {
            a.or(qword_ptr(tool_area(slot::ORIGIN_GPR + 8 * r)).gs(), origin::INCOMING as i32).unwrap();
        }
        if self.in_main(ins.ip()) {
            self.program_call(ins, b, (s1, s2));
        }
        b.release_scratch();
    }

    /// A call in the program (after its table entry, at `s2`): what a library does until the
    /// next one belongs to it, named by the call's site and its count there (`ordinals`); a
    /// traced run logs it.
    fn program_call(&mut self, ins: &Instruction, b: &mut Inline, (s1, s2): (AsmRegister64, AsmRegister64)) {
        let rsp = rtgrind_jit::instrument::code_asm::rsp;
        // (Every site where the count may be asked for: in a traced run (its call log) or
        // where a point may fire under any call; else the plan's own sites.)
        let ret = ins.next_ip();
        if self.every_call_counted || self.plan.points.iter().any(|p| p.site == ret) {
            match self.anchors.call(ret) {
                Some(id) => {
                    let (table, n) = (b.scratch(), b.scratch());
                    ordinals::count_call(b, ret, id, table, n);
                    b.asm().mov(qword_ptr(tool_area(area::CALL_ORD)).gs(), n).unwrap();
                }
                None => b.asm().mov(qword_ptr(tool_area(area::CALL_ORD)).gs(), 0).unwrap(),
            }
        }
        if self.traced() {
            // The call, its first argument and that argument's origin, in the thread's log
            // (a double free tells the same pointer freed twice from a copy freed after the
            // other). The argument is the table entry's (s2), copied first.
            let a = b.asm();
            a.mov(s1, qword_ptr(s2 + 72)).unwrap();
            a.mov(qword_ptr(tool_area(area::CALL_TMP)).gs(), s1).unwrap();
            a.mov(s1, qword_ptr(tool_area(area::CALL_LOG)).gs()).unwrap();
            b.counter_to(s2);
            let a = b.asm();
            a.mov(qword_ptr(s1), s2).unwrap();
            a.mov(s2, qword_ptr(tool_area(slot::ORIGIN_GPR + 8 * 7)).gs()).unwrap();
            a.mov(qword_ptr(s1 + 8), s2).unwrap();
            a.mov(s2, qword_ptr(tool_area(area::CALL_TMP)).gs()).unwrap();
            a.mov(qword_ptr(s1 + 16), s2).unwrap();
            store_constant(b, qword_ptr(s1 + 24), ret);
            let a = b.asm();
            a.mov(s2, qword_ptr(tool_area(area::CALL_ORD)).gs()).unwrap();
            a.mov(qword_ptr(s1 + 32), s2).unwrap();
            a.lea(s1, qword_ptr(s1 + CALL_LOG_ENTRY as i32)).unwrap();
            a.btr(s1, CALL_LOG_WRAP_BIT).unwrap();
            a.mov(qword_ptr(tool_area(area::CALL_LOG)).gs(), s1).unwrap();
        }
        // (After the log, which reads the table entry from s2.)
        b.counter_to(s1);
        let a = b.asm();
        a.mov(qword_ptr(tool_area(area::CALL_WORD)).gs(), s1).unwrap();
        store_constant(b, qword_ptr(tool_area(area::CALL_SITE)).gs(), ret);
        self.live_call(ret, b, s1);
        let a = b.asm();
        a.lea(s1, qword_ptr(rsp - 8)).unwrap();
        a.mov(qword_ptr(tool_area(area::CALL_FRAME)).gs(), s1).unwrap();
    }

    /// The guards of a transfer of control: a conditional branch on corrupt flags (a traced
    /// run notes the program's last branch and its flags' origin), a `ret` through a corrupt
    /// return address, an indirect call or jump through a corrupt target.
    fn control_guards(&mut self, site: &InsnSite, b: &mut Inline) {
        let ins = site.ins;
        let pc = ins.ip();
        match ins.flow_control() {
            FlowControl::ConditionalBranch if ins.condition_code() != ConditionCode::None => {
                self.guard(b, GuardKind::Branch, ins, &[slot::FLAGS], None);
                if self.traced() && self.program_branch(pc) {
                    store_constant(b, qword_ptr(tool_area(area::LAST_BRANCH)).gs(), pc);
                    let t = b.scratch();
                    let a = b.asm();
                    a.mov(t, qword_ptr(tool_area(slot::ORIGIN_FLAGS)).gs()).unwrap();
                    a.mov(qword_ptr(tool_area(area::LAST_BRANCH_ORIGIN)).gs(), t).unwrap();
                    b.release_scratch();
                }
            }
            FlowControl::Return => {
                self.last_indirect(pc, b);
                let m = rtgrind_jit::iced_x86::UsedMemory::new(
                    Register::None,
                    Register::RSP,
                    Register::None,
                    1,
                    0,
                    rtgrind_jit::iced_x86::MemorySize::UInt64,
                    OpAccess::Read,
                );
                self.guard(b, GuardKind::Ret, ins, &[], Some(&m));
                // After the guard, which reads the entry.
                self.at_return(b);
            }
            FlowControl::IndirectBranch | FlowControl::IndirectCall => {
                self.last_indirect(pc, b);
                if self.traced() {
                    self.record_indirect(site, b);
                }
                let mut slots: Vec<usize> = Vec::new();
                if ins.op0_kind() == OpKind::Register {
                    slots.extend(shadow::gpr_number(ins.op0_register()).map(shadow::gpr_slot));
                } else {
                    slots.extend([ins.memory_base(), ins.memory_index()].into_iter().filter_map(shadow::gpr_number).filter(|&n| n != 4).map(shadow::gpr_slot));
                }
                let kind = if ins.flow_control() == FlowControl::IndirectCall { GuardKind::IndirectCall } else { GuardKind::IndirectJump };
                let mem = site.info.used_memory().iter().find(|m| m.access() == OpAccess::Read && m.base() != Register::RIP).copied();
                self.guard(b, kind, ins, &slots, mem.as_ref());
            }
            _ => {}
        }
    }

    /// The guards of data: a string instruction's count and pointers, `leave`'s frame pointer,
    /// a division's operands, a memory access's address (and, for a store, its value).
    fn data_guards(&mut self, site: &InsnSite, b: &mut Inline) {
        let ins = site.ins;
        if ins.is_string_instruction() {
            // A count or pointer gone corrupt (a memcpy of a corrupt size) must not run.
            let mut slots = vec![shadow::gpr_slot(6), shadow::gpr_slot(7)];
            if ins.has_rep_prefix() || ins.has_repne_prefix() {
                slots.push(shadow::gpr_slot(1));
            }
            self.guard(b, GuardKind::Access, ins, &slots, None);
        }
        if ins.mnemonic() == Mnemonic::Leave {
            self.guard(b, GuardKind::FrameLost, ins, &[shadow::gpr_slot(5)], None);
        } else if matches!(ins.mnemonic(), Mnemonic::Div | Mnemonic::Idiv) {
            let mut slots = vec![shadow::gpr_slot(0), shadow::gpr_slot(2)];
            if ins.op0_kind() == OpKind::Register {
                slots.extend(shadow::gpr_number(ins.op0_register()).map(shadow::gpr_slot));
            }
            self.guard(b, GuardKind::Divide, ins, &slots, None);
        } else if ins.flow_control() == FlowControl::Next
            && !ins.is_string_instruction()
            && !matches!(ins.mnemonic(), Mnemonic::Push | Mnemonic::Pop | Mnemonic::Lea | Mnemonic::Nop | Mnemonic::Leave)
        {
            let slots = access_slots(ins, site.info);
            if !slots.is_empty() {
                self.guard(b, GuardKind::Access, ins, &slots, None);
            }
        }
    }

    /// Forgets the returning frame's table entry, so a stale one cannot pass for a live frame
    /// whose slot still holds the same bytes.
    fn at_return(&mut self, b: &mut Inline) {
        let (s1, s2) = (b.scratch(), b.scratch());
        let a = b.asm();
        a.movzx(r32(s1), r16(rtgrind_jit::instrument::code_asm::rsp)).unwrap();
        a.mov(s2, qword_ptr(tool_area(area::RET_TABLE)).gs()).unwrap();
        // Entry = table + 16 * (rsp & 0xffff), in two scaled steps (no flag-changing shift).
        a.lea(s2, qword_ptr(s2 + s1 * 8)).unwrap();
        a.mov(s1, qword_ptr(s2 + s1 * 8)).unwrap();
        a.mov(qword_ptr(tool_area(area::LAST_RET_KEY)).gs(), s1).unwrap();
        a.movzx(r32(s1), r16(rtgrind_jit::instrument::code_asm::rsp)).unwrap();
        if self.traced() {
            // Where the matching call would return, and where this `ret` goes (a return
            // address partly overwritten can still point at code: the crash comes later).
            a.mov(s1, qword_ptr(s2 + s1 * 8 + 8)).unwrap();
            a.mov(qword_ptr(tool_area(area::LAST_RET_EXPECTED)).gs(), s1).unwrap();
            a.mov(s1, qword_ptr(rtgrind_jit::instrument::code_asm::rsp)).unwrap();
            a.mov(qword_ptr(tool_area(area::LAST_RET_TARGET)).gs(), s1).unwrap();
            a.movzx(r32(s1), r16(rtgrind_jit::instrument::code_asm::rsp)).unwrap();
        }
        a.mov(qword_ptr(s2 + s1 * 8), 0).unwrap();
        b.release_scratch();
    }

    /// An indirect call or jump (in a run that traces): its pc, target, and where the target
    /// came from (a register's origin, or the memory it is read from), for a crash after it
    /// went astray.
    fn record_indirect(&mut self, site: &InsnSite, b: &mut Inline) {
        let ins = site.ins;
        let q = |s: usize| qword_ptr(tool_area(s)).gs();
        let t = b.scratch();
        b.asm().mov(t, ins.ip()).unwrap();
        b.asm().mov(q(area::LAST_ICALL), t).unwrap();
        if ins.op0_kind() == OpKind::Register {
            let Some(n) = shadow::gpr_number(ins.op0_register()) else { return b.release_scratch() };
            let a = b.asm();
            a.mov(t, q(slot::ORIGIN_GPR + 8 * n)).unwrap();
            a.mov(q(area::LAST_ICALL_ORIGIN), t).unwrap();
            a.mov(q(area::LAST_ICALL_TARGET), rtgrind_jit::instrument::code_asm::get_gpr64(ins.op0_register()).unwrap()).unwrap();
            a.mov(q(area::LAST_ICALL_SLOT), 0).unwrap();
        } else if let Some(m) = site.info.used_memory().iter().find(|m| m.access() == OpAccess::Read).copied() {
            let u = b.scratch();
            effective_address(b, t, &m, u);
            let a = b.asm();
            a.mov(q(area::LAST_ICALL_SLOT), t).unwrap();
            a.mov(t, qword_ptr(t)).unwrap();
            a.mov(q(area::LAST_ICALL_TARGET), t).unwrap();
            a.mov(q(area::LAST_ICALL_ORIGIN), 0).unwrap();
        }
        b.release_scratch();
    }

    fn last_indirect(&mut self, pc: u64, b: &mut Inline) {
        if !self.traced() {
            return;
        }
        store_constant(b, qword_ptr(tool_area(area::LAST_IND)).gs(), pc);
        b.release_scratch();
    }

    fn point_checks(&mut self, ins: &Instruction, b: &mut Inline) {
        let points: Vec<Point> = self.plan.points.iter().filter(|p| p.pc == ins.ip()).copied().collect();
        if points.is_empty() {
            return;
        }
        let anchor = self.anchors.pc(ins.ip()).filter(|_| self.in_main(ins.ip()));
        let (code, n) = records::code_of(ins, self.rewritten_here);
        for p in points {
            b.clobber_flags();
            let t = b.scratch();
            let spilled = b.spilled();
            let arg = b.record(records::POINT_CHECK, records::point_check(&p, anchor, spilled, (ins.ip(), ins.len() as u8, &code[..n])));
            let no = b.asm().create_label();
            // Instance 0: every instance of the site (the driver escalates to it); the
            // call-out checks the thread.
            if p.instance != 0 {
                let u = b.scratch();
                match (p.block_instance(), anchor) {
                    // The thread's instance word at that block instance; in a library, the
                    // program's call's (see `Policy`).
                    (Some(block), _) => {
                        if self.in_main(p.pc) {
                            b.counter_to(u);
                        } else {
                            b.asm().mov(u, qword_ptr(tool_area(area::CALL_WORD)).gs()).unwrap();
                        }
                        let a = b.asm();
                        a.mov(t, origin::thread_bits(p.thread) | block << origin::INSTANCE_SHIFT).unwrap();
                        a.cmp(u, t).unwrap();
                        a.jne(no).unwrap();
                    }
                    // Its execution count (counted at the instruction's start), in the thread.
                    (None, Some(id)) => {
                        let a = b.asm();
                        a.mov(u, qword_ptr(tool_area(area::ORDS)).gs()).unwrap();
                        a.mov(u, qword_ptr(u + 8 * id as i32)).unwrap();
                        a.mov(t, p.instance).unwrap();
                        a.cmp(u, t).unwrap();
                        a.jne(no).unwrap();
                        self.same_thread(b, p.thread, t, u, no);
                    }
                    // A library's: the program's call it runs under, by site and count.
                    (None, None) => self.in_call(b, &p, t, u, no),
                }
            }
            callout_then_leave_if_asked(b, point_callout, arg, t, no);
        }
    }

    /// Which of the plan's calls suppressed whole this call of the program (returning to
    /// `ret`, its counter word in `word`) is, into `area::CALL_LIVE` (0: none), for the
    /// library's stores (`call_checks`): one at this site and count, one by block instance,
    /// or every call at this site, of this thread.
    fn live_call(&self, ret: u64, b: &mut Inline, word: AsmRegister64) {
        if self.state.calls.is_empty() {
            return;
        }
        b.clobber_flags();
        let (t, u) = (b.scratch(), b.scratch());
        b.asm().mov(qword_ptr(tool_area(area::CALL_LIVE)).gs(), 0).unwrap();
        // (From the last: where two match, the first in the plan is the one left.)
        for (i, p) in self.state.calls.iter().enumerate().rev() {
            if p.call_site().is_some_and(|site| site != ret) || p.call_site().is_none() && p.block_instance().is_none() && p.site != ret {
                continue;
            }
            let mut no = b.asm().create_label();
            match (p.call_site(), p.block_instance()) {
                // (Its thread too: a point of another call here may be this thread's.)
                (Some(_), _) => self.same_thread(b, p.thread, t, u, no),
                (None, Some(block)) => {
                    let a = b.asm();
                    a.mov(t, origin::thread_bits(p.thread) | block << origin::INSTANCE_SHIFT).unwrap();
                    a.cmp(word, t).unwrap();
                    a.jne(no).unwrap();
                }
                (None, None) => self.in_call(b, p, t, u, no),
            }
            let a = b.asm();
            a.mov(qword_ptr(tool_area(area::CALL_LIVE)).gs(), i as i32 + 1).unwrap();
            a.set_label(&mut no).unwrap();
        }
    }

    /// Code that goes to `no` unless the thread is `thread`.
    fn same_thread(&self, b: &mut Inline, thread: u64, t: AsmRegister64, u: AsmRegister64, no: CodeLabel) {
        b.counter_to(u);
        let a = b.asm();
        a.mov(t, origin::thread_bits(0xff)).unwrap();
        a.and(u, t).unwrap();
        a.mov(t, origin::thread_bits(thread)).unwrap();
        a.cmp(u, t).unwrap();
        a.jne(no).unwrap();
    }

    /// Code that goes to `no` unless the thread runs under the program's call that point `p`
    /// names (its site and count there).
    fn in_call(&self, b: &mut Inline, p: &Point, t: AsmRegister64, u: AsmRegister64, no: CodeLabel) {
        let a = b.asm();
        a.mov(u, qword_ptr(tool_area(area::CALL_SITE)).gs()).unwrap();
        a.mov(t, p.site).unwrap();
        a.cmp(u, t).unwrap();
        a.jne(no).unwrap();
        a.mov(u, qword_ptr(tool_area(area::CALL_ORD)).gs()).unwrap();
        a.mov(t, p.instance).unwrap();
        a.cmp(u, t).unwrap();
        a.jne(no).unwrap();
        self.same_thread(b, p.thread, t, u, no);
    }

    /// The point of a call suppressed whole (or of its call site) that the thread's innermost
    /// program call is, if any: the point as it is recorded (at the call's instance).
    fn in_suppressed_call(&mut self, ctx: &mut ThreadContext) -> Option<Point> {
        let (word, site, ord) = (*shadow::word(ctx, area::CALL_WORD), *shadow::word(ctx, area::CALL_SITE), *shadow::word(ctx, area::CALL_ORD));
        let thread = origin::thread(ctx.counter) as u64;
        let this_call = |p: &Point| match p.block_instance() {
            Some(block) => block == origin::instance(word),
            None => (p.site, p.instance) == (site, ord),
        };
        let p = *self.plan.points.iter().find(|p| p.thread == thread && ((p.call() && this_call(p)) || p.call_site() == Some(site)))?;
        Some(if p.call() { p } else { super::guards::in_call(ctx, p) })
    }

    /// Bytes the program made (origin `o`, a site of the program) found in a heap header at
    /// `at`: a library's copy keeps their origin, so their writer is the copy -- a call to a
    /// copying function of the C library (named through the PLT) made after them with its
    /// destination in a chunk before (of `chunks`, the chunks before the header in address
    /// order: the nearest first, and one further back only while the headers between hold the
    /// program's bytes too, the overflow having run through them): its instance word, return
    /// address and name. None where the program stored them itself.
    fn copy_into(&mut self, ctx: &mut ThreadContext, mem: &GuestMemory, chunks: &[u64], at: u64, o: u64) -> Option<Copier> {
        if !program_bytes(o) {
            return None;
        }
        let mut header = at;
        for &c in chunks.iter().rev().take(8) {
            if header != at && !program_bytes(self.origin_at(header)) {
                break;
            }
            if let Some(found) = self.copier(ctx, mem, c + 16, at, o) {
                return Some(found);
            }
            header = c + 8;
        }
        None
    }

    /// Bytes the program made (origin `o`) found in a return-address slot at `at`: the program
    /// never stores there, so a library's copy put them there keeping their origin (strcpy of a
    /// string the program built): the copying call made after them with its destination below
    /// the slot (the nearest, then the first; within 1 MiB): its instance word, return address
    /// and name.
    fn copy_below(&mut self, ctx: &mut ThreadContext, mem: &GuestMemory, at: u64, o: u64) -> Option<Copier> {
        if !program_bytes(o) {
            return None;
        }
        self.copier(ctx, mem, at.saturating_sub(1 << 20), at, o)
    }

    /// A pointer `value` that points nowhere, defined in the program (origin `o`; through a
    /// library's varargs its origin may have mixed with others'), found in a data object of
    /// the program or a block of the heap as bytes the program made: a library's copy put them
    /// there (it keeps their origin) if it was made after them with its destination in the
    /// object just below (the copy overflowed that object into this one; a copy into the object
    /// itself, a whole struct read back, is faithful and not this): that call, and where the
    /// bytes are.
    fn copy_out_of_object_below(&mut self, ctx: &mut ThreadContext, mem: &GuestMemory, value: u64, o: u64) -> Option<(Copier, u64)> {
        if !origin::in_main(o) || mem.region_at(value).is_some() {
            return None;
        }
        // The first aligned word of `[s, e)` holding `value` as bytes the program made.
        let holding = |me: &mut Self, s: u64, e: u64| -> Option<(u64, u64)> {
            let bytes = guest_mem::read_vec(s, e.saturating_sub(s).min(1 << 26) as usize)?;
            let words = (0..bytes.len().saturating_sub(7)).step_by(8);
            words.map(|i| (s + i as u64, u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap()))).find_map(|(a, v)| {
                let made = me.origin_at(a);
                (v == value && program_bytes(made)).then_some((a, made))
            })
        };
        // The object holding them, and the one just below it, which the copy's destination
        // must be in (it ran out of that one into this one).
        let objects = self.objects(mem);
        let mut found = objects.iter().enumerate().find_map(|(i, &(s, e))| Some((i.checked_sub(1).map(|j| objects[j].0)?, s, holding(self, s, e)?)));
        if found.is_none() {
            // In the heap: the object is the chunk (the walk's last, where it went astray on a
            // header the copy overwrote, included); the one below, the chunk before.
            let (at, made) = holding(self, mem.brk_start, mem.brk_cur)?;
            let chunks = heap_walk(mem).0;
            let i = chunks.iter().rposition(|&c| c <= at)?;
            found = Some((chunks.get(i.checked_sub(1)?)? + 16, chunks[i], (at, made)));
        }
        let (below, start, (at, made)) = found?;
        Some((self.copier(ctx, mem, below, start, made)?, at))
    }

    /// The first of the program's logged calls to a copying function of the C library (named
    /// through the PLT) made after origin `o` with its destination in `[lo, hi)`, the
    /// destination nearest `hi` first (`calls_into`).
    fn copier(&mut self, ctx: &mut ThreadContext, mem: &GuestMemory, lo: u64, hi: u64, o: u64) -> Option<Copier> {
        self.callees(mem)?;
        self.known_copier(ctx, lo, hi, origin::instance_word(o))
    }

    /// `copier` where the program's PLT callees were read already (no memory at hand).
    fn known_copier(&mut self, ctx: &mut ThreadContext, lo: u64, hi: u64, after: u64) -> Option<Copier> {
        let callees = self.callees.clone()?;
        calls_into(ctx, lo, hi, after).into_iter().find_map(|(call, ret)| {
            let name = callees.name(ret)?;
            COPIES.contains(&name.as_str()).then(|| Copier { word: call, ret, name: format!("`{name}`") })
        })
    }

    /// The program's data objects (symbols with sizes), read from its file once.
    fn objects(&mut self, mem: &GuestMemory) -> std::rc::Rc<Vec<(u64, u64)>> {
        self.objects.get_or_insert_with(|| std::rc::Rc::new(crate::report::symbols::objects(&self.main_path, mem))).clone()
    }

    /// The program's PLT callees, read from its file once.
    fn callees(&mut self, mem: &GuestMemory) -> Option<std::rc::Rc<Callees>> {
        if self.callees.is_none() {
            self.callees = Callees::of(&self.main_path, mem).map(std::rc::Rc::new);
        }
        self.callees.clone()
    }

    /// The program's innermost call `e` (a return-address table entry) frees a pointer that an
    /// earlier call from the program freed already, had from the same definition made before
    /// that call, with no allocation by the program between (the block freed twice): that
    /// earlier call, whole, as the definition. (Otherwise the block may have been allocated
    /// again at the same address, or have two owners: not this.)
    fn freed_before(&mut self, ctx: &mut ThreadContext, mem: &GuestMemory, e: [u64; ENTRY_WORDS_USED]) -> Option<CallDef> {
        let (ret, arg_origin, p) = (e[1], e[2], e[9]);
        let frees = |name: &str| FREES.contains(&name);
        let callees = self.callees(mem)?;
        if p == 0 || arg_origin & !origin::INCOMING == 0 || !callees.name(ret).is_some_and(|n| frees(&n)) {
            return None;
        }
        let word = *shadow::word(ctx, area::CALL_WORD);
        let (call, first_origin, first_ret, name) = calls_with(ctx, p, word).into_iter().find_map(|(call, o, r)| {
            let name = callees.name(r).filter(|n| frees(n))?;
            Some((call, o, r, name))
        })?;
        // The pointer defined before that call, and no allocation by the program since (a
        // pointer malloc returns keeps the origin of the one freed there, which the allocator
        // stored in its lists): the same block, not a new one at the same address.
        let allocated_since = call_sites_between(ctx, call, word).into_iter().any(|r| callees.name(r).is_some_and(|n| ALLOCS.contains(&n.as_str())));
        let same =
            first_origin & !origin::INCOMING == arg_origin & !origin::INCOMING && origin::instance(arg_origin) < origin::instance(call) && !allocated_since;
        same.then(|| CallDef {
            what: format!("the block {p:#x} passed to the call returning to {ret:#x}, freed before by the call returning to {first_ret:#x}"),
            word: call,
            ret: first_ret,
            name: format!("`{name}`"),
        })
    }

    fn in_main(&self, pc: u64) -> bool {
        (self.state.main.0..self.state.main.1).contains(&pc)
    }

    /// Stores a library makes for a program's call that is suppressed whole (a point with pc
    /// 0, see `Point::call`): each is checked against the call, in a call-out, which lets it
    /// write the call's own frames and suppresses the rest. Whether the thread runs under such
    /// a call is the word the program's calls set (`live_call`), so the store's code is the
    /// same for every plan with such calls (`plan_digest`). (Its pc and spilled registers are
    /// handed over in the tool area: no record to make and revive for every store. A test in
    /// every run, to share library blocks with runs without such calls, cost unarmed runs 5-9%
    /// of their time: the exit each store's check needs.)
    fn call_checks(&mut self, site: &InsnSite, b: &mut Inline) {
        let ins = site.ins;
        let stores = ins.is_string_instruction() && string_store(ins)
            || (!ins.is_string_instruction()
                && !matches!(ins.mnemonic(), Mnemonic::Push | Mnemonic::Call)
                && site.info.used_memory().iter().any(|m| crate::shadow::propagate::writes(m.access())));
        if !stores || self.in_main(ins.ip()) || self.state.calls.is_empty() {
            return;
        }
        b.clobber_flags();
        let t = b.scratch();
        let spilled = b.spilled();
        let no = b.asm().create_label();
        let a = b.asm();
        a.cmp(qword_ptr(tool_area(area::CALL_LIVE)).gs(), 0).unwrap();
        a.je(no).unwrap();
        a.mov(t, ins.ip() | u64::from(spilled) << 48).unwrap();
        a.mov(qword_ptr(tool_area(area::CALL_STORE)).gs(), t).unwrap();
        b.callout_constant(call_store_callout, records::STATE, self.state_ptr() as u64, t);
        leave_if_asked(b, no);
    }

    /// In a run that watches locations (`watch`): each store is tested against them inline
    /// and a call-out records the origin a store that wrote one gave it. A string store
    /// notes its range before and records after, when its origins have moved.
    fn watch_stores(&mut self, site: &InsnSite, b: &mut Inline) {
        if self.state.watches.is_empty() || !self.traced() {
            return;
        }
        let ins = site.ins;
        // (A scatter's vector index has no one address: not watched.)
        let stores: Vec<UsedMemory> = site.info.used_memory().iter().filter(|m| writes(m.access()) && !m.index().is_vector_register()).copied().collect();
        let Some(&first) = stores.first() else { return };
        if b.version() == Version::Fast {
            // The fast block's cached registers may be lent below.
            self.fast_block.forget_stack();
        }
        b.release_scratch();
        let string = ins.is_string_instruction();
        for m in if string { vec![first] } else { stores } {
            let c = Box::new(WatchCheck { mem: m, ins: *ins, state: self.state_ptr(), spilled: b.spilled() });
            let arg = &*c as *const WatchCheck as u64;
            self.watch_checks.push(c);
            if string {
                let t = b.scratch();
                b.callout(watch::string_before, arg, t);
                break;
            }
            let (lo, span) = watch::window(&self.state.watches, m.memory_size().size().max(1) as u64);
            b.clobber_flags();
            let (t, u) = (b.scratch(), b.scratch());
            effective_address(b, t, &m, u);
            let a = b.asm();
            let mut no = a.create_label();
            a.mov(u, lo).unwrap();
            a.sub(t, u).unwrap();
            a.mov(u, span).unwrap();
            a.cmp(t, u).unwrap();
            a.jae(no).unwrap();
            b.callout(watch::store_callout, arg, t);
            let a = b.asm();
            a.set_label(&mut no).unwrap();
            a.zero_bytes().unwrap();
            b.release_scratch();
        }
        b.release_scratch();
    }

    /// The locations the instruction that failed used, with their origins.
    fn crash_locations(&mut self, ctx: &mut ThreadContext, sig: i32, addr: u64, mem: &GuestMemory) -> Vec<(String, u64)> {
        let pc = ctx.rip;
        let main = self.state.main;
        let innermost = frame_entries(ctx, ctx.gpr[4]).into_iter().find(|e| (main.0..main.1).contains(&e[1]));
        let in_library = !(main.0..main.1).contains(&pc) && decode(pc).is_some();
        if let (Some(e), true) = (innermost, in_library) {
            if let Some(locs) = self.copy_off_the_end(ctx, sig, addr, mem, e) {
                return locs;
            }
            if let Some(locs) = self.heap_block_locations(ctx, sig, mem, e) {
                return locs;
            }
        }
        if let Some(locs) = self.astray_return(ctx, sig, mem) {
            return locs;
        }
        let mut locs = match sig {
            libc::SIGSEGV | libc::SIGBUS | libc::SIGFPE | libc::SIGILL => self.fault_locations(ctx, sig, addr, mem),
            _ => match self.abort_locations(ctx, mem, innermost) {
                Ok(l) => l,
                Err(l) => return l,
            },
        };
        // A frame's set-up (`sub rsp`, `mov rbp, rsp`) defines no value a crash can blame (a
        // pointer into the initial stack, computed from the stack pointer by the loader).
        let sites = &self.prop.sites;
        locs.retain(|l| l.1 & !origin::INCOMING != 0 && sites.pc(origin::site(l.1)).and_then(decode).is_none_or(|i| !moves_frame(&i)));
        locs
    }

    /// A store of the program's innermost library call `e`, a copy, faulted past the end of
    /// the memory its destination lies in, all of it mapped from the destination up to the
    /// fault: the copy ran out of its object and on to where memory ends, writing whatever lay
    /// between (netcat's rservice: `memcpy` of an argument into a static buffer). Its first
    /// store past its object was the corruption, in this same call: the call, whole, is the
    /// definition (the pointers it was given point where they should; following them blamed
    /// the line that stepped the destination). Some: no other locations.
    fn copy_off_the_end(&mut self, ctx: &mut ThreadContext, sig: i32, addr: u64, mem: &GuestMemory, e: [u64; ENTRY_WORDS_USED]) -> Option<Vec<(String, u64)>> {
        let (ret, dst) = (e[1], e[9]);
        let off_the_end = matches!(sig, libc::SIGSEGV | libc::SIGBUS)
            && dst < addr
            && addr - dst < 1 << 32
            && mem.region_at(addr).is_none()
            && mem.gaps(dst, addr).is_empty();
        if !off_the_end {
            return None;
        }
        let ins = decode(ctx.rip)?;
        let info = InstructionInfoFactory::new().info(&ins).clone();
        let stores = info.used_memory().iter().any(|m| writes(m.access()));
        let name = self.callees(mem)?.name(ret).filter(|n| COPIES.contains(&n.as_str()))?;
        if !stores {
            return None;
        }
        let word = *shadow::word(ctx, area::CALL_WORD);
        let what = format!("the destination {dst:#x} of the call returning to {ret:#x}, written on up to {addr:#x}, where memory ends");
        self.call_defs.push(CallDef { what, word, ret, name: format!("`{name}`") });
        Some(Vec::new())
    }

    /// A store of the program faulted where memory ends, and the byte just below was written
    /// by the same store before: a loop of the program's writing on out of its object and on
    /// to the end of memory (its index and pointer step as they should). That byte's
    /// definition, this store's earlier execution, is what the crash used (the search then
    /// suppresses the store's every execution).
    fn store_off_the_end(
        &mut self,
        ctx: &mut ThreadContext,
        sig: i32,
        addr: u64,
        info: &rtgrind_jit::iced_x86::InstructionInfo,
        mem: &GuestMemory,
    ) -> Option<(String, u64)> {
        let pc = ctx.rip;
        let stores = info.used_memory().iter().any(|m| writes(m.access()));
        if !faulted_where_memory_ends(sig, addr, mem) || !self.in_main(pc) || !stores {
            return None;
        }
        let o = self.origin_at(addr - 1);
        (self.prop.sites.pc(origin::site(o)) == Some(pc))
            .then(|| (format!("the byte at {:#x}, below where memory ends, written by this store before", addr - 1), o))
    }

    /// A string copy or fill of the program (`rep movs`, `rep stos`; gcc inlines a `memcpy`
    /// of a bounded size so) faulted where memory ends, at its destination or its source, and
    /// its last element, just below, is what it copied or stored: its count took it out of its
    /// object and on to here (unace 1.2b's CVE-2015-2063: a header's length gone below zero,
    /// copied into a global by `rep movsq`). A copy keeps its source's origins, so no byte's
    /// origin names it, and its pointers were computed before it as they should: this
    /// execution of it is the definition.
    fn string_op_off_the_end(&mut self, ctx: &ThreadContext, sig: i32, addr: u64, ins: &Instruction, mem: &GuestMemory) -> Option<(String, u64)> {
        let copies = string_copy(ins);
        let k = ins.memory_size().size() as u64;
        let (rdi, rsi) = (ctx.gpr[7], ctx.gpr[6]);
        let at = |p: u64| p >= k && (p..p + k).contains(&addr);
        let forward = ctx.rflags & 0x400 == 0;
        if !faulted_where_memory_ends(sig, addr, mem)
            || !ins.has_rep_prefix()
            || !string_store(ins)
            || !forward
            || !self.in_main(ctx.rip)
            || !(at(rdi) || copies && at(rsi))
        {
            return None;
        }
        let (mut below, mut expected) = ([0u8; 8], ctx.gpr[0].to_le_bytes());
        let n = k as usize;
        let read = guest_mem::read(rdi - k, &mut below[..n]) && (!copies || guest_mem::read(rsi - k, &mut expected[..n]));
        if !read || below[..n] != expected[..n] {
            return None;
        }
        let (verb, name) = (if copies { "copied" } else { "stored" }, format!("{:?}", ins.mnemonic()).to_lowercase());
        let site = self.prop.sites.id(ctx.rip);
        Some((format!("the element below {addr:#x}, where memory ends, {verb} by this `rep {name}` before"), origin::here(site, ctx.counter)))
    }

    /// Inside a library call `e` from the program, on a heap block whose header (or, for an
    /// abort, the first 16 bytes, where a free block keeps its list links and glibc's
    /// double-free key) was rewritten after the pointer to it was defined: the allocator's
    /// metadata was overwritten (by an overflow) or the block was freed before (a double free:
    /// the earlier `free` wrote them), whatever glibc then did with it. Some: the locations
    /// (none where a whole call is the definition, in `call_defs`).
    fn heap_block_locations(&mut self, ctx: &mut ThreadContext, sig: i32, mem: &GuestMemory, e: [u64; ENTRY_WORDS_USED]) -> Option<Vec<(String, u64)>> {
        let mut locs = Vec::new();
        // A block the program freed before from the same definition, freed again: the
        // first free, whatever glibc did with the block (cached it, put it in a fast bin,
        // merged it, unmapped it) and checks now.
        if let Some(call_def) = self.freed_before(ctx, mem, e) {
            self.call_defs.push(call_def);
            return Some(locs);
        }
        let (ret, rdi_origin, p) = (e[1], e[2], e[9]);
        // Allocator memory: the brk heap or an anonymous mapping (glibc's arenas and large
        // blocks), never the stack, a global or a file.
        // (The brk heap starts right after the program's data, in its last page.)
        // (Not the crashing thread's own stack: a thread's stack is an anonymous mapping too,
        // and a buffer in its frames is no heap block, as the stack protector's abort in a
        // worker thread showed.)
        let stack = mem.region_at(ctx.gpr[4]).map(|(start, _)| start);
        let allocator_memory = (mem.brk_start..mem.brk_cur).contains(&p)
            || mem.region_at(p).is_some_and(|(start, r)| r.name.as_deref().is_none_or(|n| n == "[heap]") && Some(start) != stack);
        let heap_block = p >= 16 && p % 16 == 0 && guest_mem::read_u64(p - 8).is_some() && allocator_memory;
        // The size field whoever wrote it; the first words only as the allocator's own
        // (a block's contents are the program's business, even copied by memset).
        let library_site = |o: u64| !origin::in_main(o);
        let granules: &[(i64, &str)] = if sig == libc::SIGABRT { &[(-8, "size field"), (0, "first word"), (8, "second word")] } else { &[(-8, "size field")] };
        let newest = granules
            .iter()
            .filter(|_| heap_block)
            .map(|&(off, what)| (what, p.wrapping_add_signed(off), self.origin_at(p.wrapping_add_signed(off))))
            .filter(|&(_, at, o)| {
                o & !origin::INCOMING != 0 && origin::instance(o) > origin::instance(rdi_origin) && (at == p - 8 || (library_site(o) && o & origin::REAL != 0))
            })
            .fold(None, |best: Option<(&str, u64, u64)>, g| if best.is_none_or(|b| origin::instance(g.2) > origin::instance(b.2)) { Some(g) } else { best });
        // The allocator's own words, written by an earlier call given the same pointer
        // from another definition (two owners of one block, one a wrong copy): the
        // pointer is what was wrong (the dissertation's Fig. 5.1, line 15); the same
        // definition freed twice: the earlier call is.
        let copy_freed_before = newest.is_some_and(|(_, at, o)| {
            let call = logged_call(ctx, origin::instance_word(o));
            at != p - 8 && call.is_some_and(|(value, first, _)| value == p && first & !origin::INCOMING != rdi_origin & !origin::INCOMING)
        });
        if let Some((what, at, o)) = newest.filter(|_| !copy_freed_before) {
            let what = format!("{what} of the heap block {p:#x} (at {at:#x}) passed to the call returning to {ret:#x}");
            if at == p - 8 {
                let before: Vec<u64> = heap_walk(mem).0.into_iter().take_while(|&c| c < p - 16).collect();
                if let Some(copier) = self.copy_into(ctx, mem, &before, at, o) {
                    self.call_defs.push(copier.def(what));
                    return Some(locs);
                }
            }
            locs.push((what, o));
            return Some(locs);
        }
        None
    }

    /// The last `ret` matched a call but went elsewhere than that call's return address: its
    /// slot was overwritten (perhaps only a byte, leaving an address inside code). Some: the
    /// locations (none where a whole call is the definition).
    fn astray_return(&mut self, ctx: &mut ThreadContext, sig: i32, mem: &GuestMemory) -> Option<Vec<(String, u64)>> {
        let mut locs = Vec::new();
        let last = *shadow::word(ctx, area::LAST_IND);
        let (key, expected, target) =
            (*shadow::word(ctx, area::LAST_RET_KEY), *shadow::word(ctx, area::LAST_RET_EXPECTED), *shadow::word(ctx, area::LAST_RET_TARGET));
        if sig != libc::SIGABRT && key != 0 && expected != 0 && target != expected && decode(last).is_some_and(|i| i.flow_control() == FlowControl::Return) {
            let what = decode(last).map(|i| fmt(&i)).unwrap_or_default();
            let what = format!("return address at {key:#x} (used by `{what}` at {last:#x}, which went to {target:#x}, not {expected:#x})");
            let o = self.origin_at(key);
            if let Some(copier) = self.copy_below(ctx, mem, key, o) {
                self.call_defs.push(copier.def(what));
                return Some(locs);
            }
            locs.push((what, o));
            locs.retain(|l| l.1 & !origin::INCOMING != 0);
            if !locs.is_empty() {
                return Some(locs);
            }
        }
        None
    }

    /// A fault (SIGSEGV, SIGBUS, SIGFPE, SIGILL): a jump to no code blames the last indirect
    /// transfer's target; otherwise the address the instruction used (`address_slots`, else its
    /// registers) and a divisor.
    /// The fault came after the last transfer, an indirect call or jump of the program, went to
    /// no function's start but into the middle of one (a function pointer overwritten by a
    /// count: `say + 41`), and control ran on in that function from there: the target is the
    /// used location (the bytes there decode as anything, and fault on anything).
    fn astray_call(&mut self, ctx: &mut ThreadContext, pc: u64) -> Option<(String, u64)> {
        let (icall, target) = (*shadow::word(ctx, area::LAST_ICALL), *shadow::word(ctx, area::LAST_ICALL_TARGET));
        if icall == 0 || icall != *shadow::word(ctx, area::LAST_IND) || !self.in_main(target) {
            return None;
        }
        let f = self.state.functions.iter().find(|f| (f.0..f.1).contains(&target))?;
        if f.0 == target || !(target..f.1).contains(&pc) {
            return None;
        }
        Some(self.indirect_target(ctx, icall))
    }

    /// The target of the last indirect call or jump `icall` (a traced run records it): the
    /// register it came from, or the memory it was read from.
    fn indirect_target(&mut self, ctx: &mut ThreadContext, icall: u64) -> (String, u64) {
        let what = decode(icall).map(|i| fmt(&i)).unwrap_or_default();
        let target = *shadow::word(ctx, area::LAST_ICALL_TARGET);
        match *shadow::word(ctx, area::LAST_ICALL_SLOT) {
            0 => (format!("target of `{what}` at {icall:#x} ({target:#x})"), *shadow::word(ctx, area::LAST_ICALL_ORIGIN)),
            slot => (format!("target of `{what}` at {icall:#x} ({target:#x}, read at {slot:#x})"), self.origin_at(slot)),
        }
    }

    fn fault_locations(&mut self, ctx: &mut ThreadContext, sig: i32, addr: u64, mem: &GuestMemory) -> Vec<(String, u64)> {
        let pc = ctx.rip;
        let mut locs = Vec::new();
        if let Some(target) = self.astray_call(ctx, pc) {
            return vec![target];
        }
        let fetch = sig != libc::SIGFPE && (addr == pc || decode(pc).is_none());
        if fetch {
            // Control arrived at an address with no code: the last indirect transfer's
            // target is to blame.
            let last = *shadow::word(ctx, area::LAST_IND);
            if let Some(ins) = decode(last) {
                match ins.flow_control() {
                    FlowControl::Return => {
                        let a = ctx.gpr[4].wrapping_sub(8).wrapping_sub(if ins.op_count() == 1 { u64::from(ins.immediate16()) } else { 0 });
                        let icall = *shadow::word(ctx, area::LAST_ICALL);
                        if *shadow::word(ctx, area::LAST_RET_KEY) != a && icall != 0 {
                            // A return no call made: control had gone astray before,
                            // at the last indirect call or jump.
                            let (what, o) = self.indirect_target(ctx, icall);
                            locs.push((format!("{what} (control then reached `ret` at {last:#x}, which no call matched)"), o));
                        } else {
                            let what = format!("return address at {a:#x} (used by `{}` at {last:#x})", fmt(&ins));
                            let o = self.origin_at(a);
                            match self.copy_below(ctx, mem, a, o) {
                                Some(copier) => self.call_defs.push(copier.def(what)),
                                None => locs.push((what, o)),
                            }
                        }
                    }
                    _ if ins.op0_kind() == OpKind::Register => locs.extend(reg_loc(ctx, &self.prop.sites, ins.op0_register(), "indirect target")),
                    _ => {
                        for r in [ins.memory_base(), ins.memory_index()] {
                            locs.extend(reg_loc(ctx, &self.prop.sites, r, "address of the indirect target"));
                        }
                    }
                }
            }
        } else if let Some(ins) = decode(pc) {
            if sig == libc::SIGFPE && ins.op0_kind() == OpKind::Register {
                locs.extend(reg_loc(ctx, &self.prop.sites, ins.op0_register(), "divisor"));
            }
            let info = InstructionInfoFactory::new().info(&ins).clone();
            if let Some(loc) = self.string_op_off_the_end(ctx, sig, addr, &ins, mem).or_else(|| self.store_off_the_end(ctx, sig, addr, &info, mem)) {
                return vec![loc];
            }
            let sliced = self.address_slots(ctx, &ins, &info, mem);
            if !sliced.is_empty() {
                locs.extend(sliced);
            } else {
                for m in info.used_memory() {
                    if m.access() == OpAccess::NoMemAccess {
                        continue;
                    }
                    // Base and index both in registers: a base that points nowhere is
                    // what went wrong, else the index that took it out of bounds.
                    let value = |r: Register| shadow::gpr_number(r).map(|n| ctx.gpr[n]);
                    let regs = match (value(m.base()), value(m.index())) {
                        (Some(b), Some(_)) if mem.region_at(b).is_some() => vec![m.index()],
                        (Some(_), Some(_)) => vec![m.base()],
                        _ => vec![m.base(), m.index()],
                    };
                    for r in regs {
                        let Some(loc) = reg_loc(ctx, &self.prop.sites, r, "address") else { continue };
                        let value = shadow::gpr_number(r).map_or(0, |n| ctx.gpr[n]);
                        match self.copy_out_of_object_below(ctx, mem, value, loc.1) {
                            Some((copier, at)) => self.call_defs.push(copier.def(format!("{}, the pointer at {at:#x}", loc.0))),
                            None => locs.push(loc),
                        }
                    }
                }
            }
        }
        locs
    }

    /// An abort (glibc's heap checks, failed assertions): a heap header a walk goes astray at,
    /// the pointer passed to the program's innermost library call, or what the program last
    /// decided on. Err: the locations, final (no filter after).
    fn abort_locations(&mut self, ctx: &mut ThreadContext, mem: &GuestMemory, innermost: Option<[u64; ENTRY_WORDS_USED]>) -> Result<Locations, Locations> {
        let mut locs = Vec::new();
        // A call the program's last branch jumps over is that branch's failure path
        // (`assert`, the stack protector's `__stack_chk_fail`): what was decided on.
        let branch = *shadow::word(ctx, area::LAST_BRANCH);
        let decided = innermost.is_some_and(|e| {
            let call = e[1].saturating_sub(5);
            branch < call && call - branch <= 64 && decode(branch).is_some_and(|b| b.near_branch_target() >= e[1])
        });
        // glibc's checks abort on a chunk header an overflow rewrote: a walk of the brk
        // heap from its first chunk goes astray at it ("corrupted top size" when
        // printf's buffer is allocated past a block the program overflowed).
        if let Some((at, before)) = heap_walk_astray(mem) {
            let o = self.origin_at(at);
            if o & origin::REAL != 0 && !decided {
                let what = format!("size field of the heap chunk at {:#x} (where a walk of the heap goes astray)", at - 8);
                if let Some(copier) = self.copy_into(ctx, mem, &before, at, o) {
                    self.call_defs.push(copier.def(what));
                    return Err(locs);
                }
                locs.push((what, o));
                return Err(locs);
            }
        }
        match innermost {
            // A pointer handed to the library (to `free`): its definition.
            Some(e) if !decided && !origin::is_constant(e[2]) && e[2] & !origin::INCOMING != 0 => {
                locs.push((format!("first argument of the call returning to {:#x}", e[1]), e[2]))
            }
            // A constant (an assertion's text) or none: what the program last decided on.
            _ => locs.extend(last_branch(ctx)),
        }
        Ok(locs)
    }

    /// For a fault in the program: the frame slots its address was computed from (`slice`),
    /// as used locations, told apart by their values: a pointer that points nowhere is what
    /// went wrong; with none, the other parts (indexes) took a good pointer out of bounds.
    fn address_slots(
        &mut self,
        ctx: &mut ThreadContext,
        ins: &Instruction,
        info: &rtgrind_jit::iced_x86::InstructionInfo,
        mem: &GuestMemory,
    ) -> Vec<(String, u64)> {
        let pc = ins.ip();
        let Some(func) = self.state.functions.iter().find(|f| (f.0..f.1).contains(&pc)).copied() else { return Vec::new() };
        if !self.in_main(pc) {
            return Vec::new();
        }
        let wanted: Vec<Register> = info
            .used_memory()
            .iter()
            .filter(|m| m.access() != OpAccess::NoMemAccess)
            .flat_map(|m| [m.base(), m.index()])
            .filter(|r| *r != Register::None)
            .collect();
        let regs: [u64; 16] = std::array::from_fn(|r| ctx.gpr[r]);
        let loads = super::slice::loads_behind(pc, func, &regs, &wanted, &|a, n| guest_mem::read_vec(a, n));
        let nowhere = |v: u64| mem.region_at(v).is_none();
        let pointers: Vec<&super::slice::Load> = loads.iter().filter(|l| l.size == 8 && nowhere(l.value)).collect();
        let parts: Vec<&super::slice::Load> = if pointers.is_empty() { loads.iter().filter(|l| l.size != 8 || nowhere(l.value)).collect() } else { pointers };
        // The frame pointer is wrong when its value came from something other than a frame's
        // own set-up (a saved rbp a copy overran, restored by `leave`): then a frame slot read
        // through it is some other frame's (stale, or never written), and the frame pointer
        // is what the address went wrong by, whatever the slot holds.
        let rbp = *shadow::word(ctx, slot::ORIGIN_GPR + 8 * 5);
        let rbp_wrong = rbp & origin::REAL != 0 && !self.frame_setup(rbp);
        let mut used: Vec<(String, u64)> = Vec::new();
        for l in parts {
            let o = self.location_origin(l.addr, l.size as u64);
            if l.frame && rbp_wrong {
                if used.iter().all(|u| u.1 != rbp) {
                    let nothing = if o == 0 { " that nothing wrote" } else { "" };
                    used.push((format!("the frame pointer rbp ({:#x}), from which the slot at {:#x}{nothing} was read", ctx.gpr[5], l.addr), rbp));
                }
                continue;
            }
            if o == 0 && l.frame {
                // A frame slot nobody wrote, through a frame pointer set up as usual: nothing
                // to follow.
                continue;
            }
            used.push((format!("the {}-byte value {:#x} at {:#x}, which the address was computed from", l.size, l.value, l.addr), o));
        }
        used.retain(|l| l.1 & !origin::INCOMING != 0);
        used
    }

    /// Whether origin `o` is a frame's own set-up of rbp: a `push rbp` (the saved frame
    /// pointer popped back) or a `mov rbp, rsp`.
    fn frame_setup(&self, o: u64) -> bool {
        let Some(i) = self.prop.sites.pc(origin::site(o)).and_then(decode) else { return false };
        match i.mnemonic() {
            Mnemonic::Push => i.op0_register() == Register::RBP,
            Mnemonic::Mov => i.op0_register() == Register::RBP && i.op1_register() == Register::RSP,
            _ => false,
        }
    }

    /// A heap hook (`heap_hook`): the heap's blocks and their redzones kept, an allocation
    /// asked with room for its redzone, a freed block's checked.
    fn heap_hook(&mut self, ctx: &mut ThreadContext, hook: Hook, spilled: u16) {
        let regs = guest_regs(ctx, spilled);
        let t = origin::thread(ctx.counter);
        // A call the plan suppresses whole is not the library's to act on: a `free` there is
        // not kept in quarantine (it would not run; its point names the block it frees).
        let suppressed = |ret: u64| self.plan.points.iter().any(|p| p.site == ret || p.call_site().is_some_and(|s| s <= ret && ret - s <= 16));
        let quarantine = matches!(hook, Hook::Enter(Kind::Free)) && !suppressed(crate::kernel::guest_mem::read_u64(regs[4]).unwrap_or(0));
        let Some(zones) = self.redzones.as_mut() else { return };
        match hook {
            Hook::Enter(kind) => {
                let (overwritten, args) = zones.enter(t, kind, [regs[7], regs[6], regs[2]], regs[4], quarantine);
                for (r, v) in [7, 6, 2].into_iter().zip(args) {
                    ctx.set_guest_gpr(spilled, r, v);
                }
                if let Some(o) = overwritten {
                    self.redzone_failure(ctx, o);
                }
            }
            Hook::Return => zones.returned(t, regs[4], regs[0], false),
            Hook::JumpOut => zones.returned(t, regs[4], regs[7], true),
        }
    }

    /// A redzone found overwritten is the run's failure (the first failure only): it used the
    /// first byte that changed, defined by the store that wrote it.
    fn redzone_failure(&mut self, ctx: &mut ThreadContext, o: Overwritten) {
        if self.crash.is_some() {
            return;
        }
        let (location, what) = if o.after_free {
            (
                format!("byte {} of the heap block of {} bytes at {:#x}, freed", o.byte - o.block, o.size, o.block),
                format!("heap block of {} bytes written after its free (found {}; freed blocks were kept from reuse)", o.size, o.when),
            )
        } else {
            (
                format!("byte {} of the redzone after the heap block of {} bytes at {:#x}", o.byte - o.block - o.size, o.size, o.block),
                format!("heap block of {} bytes overrun: its redzone was overwritten (found {})", o.size, o.when),
            )
        };
        let origin = self.location_origin(o.byte, 1);
        // A library's copy keeps the origin of the bytes it copies (the input's, or the
        // program's store that made them): where the origin is no store of memory, the
        // redzone's writer is the program's copying call into the block.
        let stored = origin & origin::REAL != 0 && !self.stores_of(origin).is_empty();
        let after = if origin & origin::REAL != 0 { origin::instance_word(origin) } else { origin::thread_bits(origin::thread(ctx.counter) as u64) };
        let copier = if stored { None } else { self.known_copier(ctx, o.block, o.byte + 1, after) };
        let mut used = Vec::new();
        match copier {
            Some(c) => self.call_defs.push(c.def(location)),
            None => used.push((location, origin)),
        }
        used.retain(|l| l.1 & !origin::INCOMING != 0);
        self.fail(ctx, REDZONE_FAILURE, ctx.rip, used, what);
    }

    /// The run's failure, with the locations it `used`: what the driver needs of the failing
    /// thread's calls (the library calls' sites and ordinals, the program's call stack) noted
    /// now, while they are there.
    fn fail(&mut self, ctx: &mut ThreadContext, signal: i32, pc: u64, used: Locations, what: String) {
        self.def_sites = call_sites(ctx, &used);
        self.call_ordinals = logged_ordinals(ctx);
        let calls = frame_entries(ctx, ctx.gpr[4]).into_iter().map(|e| e[1]).collect();
        self.crash = Some(Failed { signal, pc, instance: origin::instance(ctx.counter), used, what, calls });
    }

    /// Checks a syscall against `--failure`; the first match is the run's failure, with the
    /// used locations: what the output or the status came from, and what the program last
    /// branched on. A write about to be `suppressed` (a corrupt argument or buffer) writes
    /// nothing the program meant: it fails nothing, and the output it stands for is skipped.
    fn named_failure(&mut self, ctx: &mut ThreadContext, nr: i64, args: &[u64; 6], ends: bool, suppressed: bool) {
        let nothing_suppressed = ends && self.suppressed_counts().is_empty();
        let Some(failure) = self.failure.as_mut() else { return };
        if suppressed {
            if let Failure::Output(out) = failure {
                out.skip(nr as u64, args);
            }
            return;
        }
        let pc = ctx.rip.wrapping_sub(2);
        let write = nr == libc::SYS_write && args[2] > 0;
        let mut locs = Vec::new();
        let what = match failure {
            Failure::ExitCode if ends => {
                let status = args[0] & 0xff;
                if status == 0 || *shadow::gpr(ctx, 7) != 0 {
                    return;
                }
                locs.push(("the exit status".to_string(), *shadow::word(ctx, slot::ORIGIN_GPR + 8 * 7)));
                format!("exit status {status}")
            }
            Failure::Stderr(re, text) if write && args[0] == 2 => {
                if self.state.mem().any(args[1], args[2]) {
                    return;
                }
                text.push_str(&String::from_utf8_lossy(&guest_mem::read_vec(args[1], args[2].min(1 << 20) as usize).unwrap_or_default()));
                if !re.is_match(text) {
                    return;
                }
                format!("standard error matched /{}/", re.as_str())
            }
            // Output missing at the end is a failure only if nothing was suppressed (suppressed
            // code produces no output).
            Failure::Output(out) if ends && out.short() && nothing_suppressed => {
                format!("output ended at byte {} of the expected {}", out.pos(), out.expected_len())
            }
            Failure::Output(out) => {
                let Some(m) = out.check(nr as u64, args) else { return };
                let o = self.location_origin(args[1] + m.index as u64, 1);
                locs.push((format!("output byte {} ({:?})", m.offset, m.byte as char), o));
                format!("output differs from the expected at byte {}", m.offset)
            }
            _ => return,
        };
        locs.extend(last_branch(ctx));
        locs.retain(|l| l.1 & !origin::INCOMING != 0);
        // A location with a real instance first; constants only if nothing else.
        if locs.iter().any(|l| !origin::is_constant(l.1)) {
            locs.retain(|l| !origin::is_constant(l.1));
        }
        locs.truncate(1);
        self.fail(ctx, -1, pc, locs, what);
    }

    /// A thread's tables: return addresses, executions, and in a run that traces its calls
    /// and segment entries.
    fn init_thread(&mut self, ctx: &mut ThreadContext) {
        init_table(ctx);
        init_call_word(ctx);
        ordinals::init_counts(ctx);
        if self.traced() {
            init_call_log(ctx);
            match ordinals::init_rings(ctx) {
                Ok(table) => self.state.rings.push((origin::thread(ctx.counter) as u64, table)),
                Err(e) => {
                    eprintln!("rtgrind: suppress: cannot reserve a thread's table of block entries: {e}");
                    std::process::exit(1);
                }
            }
        }
    }

    /// The point that made origin `o`, named by ordinal where the run can tell it (`ordinals`),
    /// else by block instance.
    fn point_of(&self, o: u64) -> Option<Point> {
        let pc = self.prop.sites.pc(origin::site(o))?;
        let (thread, block) = (origin::thread(o) as u64, origin::instance(o));
        let by_block = Point { pc, thread, instance: block | plan::BY_BLOCK, site: 0 };
        if !origin::in_main(o) {
            // A library's: the program's call it belongs to, by site and count.
            return Some(match self.call_ordinals.get(&origin::instance_word(o)) {
                Some(&(site, k)) if k != 0 => Point { instance: k, site, ..by_block },
                _ => by_block,
            });
        }
        Some(self.ordinal(thread, pc, block).map_or(by_block, |k| Point { instance: k, ..by_block }))
    }

    /// The ordinal of `thread`'s execution of `pc` at block instance `block` (`ordinals`).
    fn ordinal(&self, thread: u64, pc: u64, block: u64) -> Option<u64> {
        let &(_, table) = self.state.rings.iter().find(|r| r.0 == thread)?;
        ordinals::ordinal(&self.segments, |id, k| ordinals::table_word(table, id, k), pc, block, |start| self.state.continued.get(&(thread, start)))
    }

    /// A whole call's point, from its instance word and return address: by its count at its
    /// site where the call log holds it.
    fn call_point(&self, word: u64, ret: u64) -> Point {
        let thread = origin::thread(word) as u64;
        match self.call_ordinals.get(&origin::instance_word(word)) {
            Some(&(site, k)) if k != 0 && site == ret => Point { pc: 0, thread, instance: k, site },
            _ => Point { pc: 0, thread, instance: origin::instance(word) | plan::BY_BLOCK, site: 0 },
        }
    }
}

/// The brk heap's chunks from the first, in glibc's layout (each chunk's size at its second
/// word, the next chunk that many bytes on, the last one, the top, ending at the break), as far
/// as their sizes lead; and whether the walk went astray at the last one (a size too small,
/// misaligned, or running past the break).
/// The shadow slots a memory access's guard tests: its address registers (not rsp), and for a
/// store the registers it stores (explicit operands: general and the low 16 vector ones).
fn access_slots(ins: &Instruction, info: &rtgrind_jit::iced_x86::InstructionInfo) -> Vec<usize> {
    let mems: Vec<_> = info.used_memory().iter().filter(|m| m.access() != OpAccess::NoMemAccess).copied().collect();
    let mut slots: Vec<usize> = Vec::new();
    for m in &mems {
        slots.extend([m.base(), m.index()].into_iter().filter_map(shadow::gpr_number).filter(|&n| n != 4).map(shadow::gpr_slot));
    }
    let writes = mems.iter().any(|m| matches!(m.access(), OpAccess::Write | OpAccess::ReadWrite | OpAccess::CondWrite | OpAccess::ReadCondWrite));
    if writes {
        // The value stored: explicit register operands read.
        for i in 0..ins.op_count() {
            if ins.op_kind(i) != OpKind::Register {
                continue;
            }
            let r = ins.op_register(i);
            if let Some(n) = shadow::gpr_number(r) {
                slots.push(shadow::gpr_slot(n));
            } else if r.is_xmm() || r.is_ymm() {
                let n = r.number() - if r.is_xmm() { Register::XMM0.number() } else { Register::YMM0.number() };
                if n < 16 {
                    slots.push(slot::VEC + 8 * n);
                }
            }
        }
    }
    slots.sort();
    slots.dedup();
    slots
}

fn heap_walk(mem: &GuestMemory) -> (Vec<u64>, bool) {
    let (start, end) = ((mem.brk_start + 15) & !15, mem.brk_cur);
    let mut chunks = Vec::new();
    let mut p = start;
    while p + 16 <= end && chunks.len() < (1 << 20) {
        chunks.push(p);
        let Some(size) = guest_mem::read_u64(p + 8).map(|s| s & !7) else { break };
        if p + size == end {
            break;
        }
        if size < 32 || size % 16 != 0 || p + size > end {
            return (chunks, true);
        }
        p += size;
    }
    (chunks, false)
}

/// The size field where the walk of the heap goes astray, with the chunks before (one of whose
/// blocks the overflow ran out of).
fn heap_walk_astray(mem: &GuestMemory) -> Option<(u64, Vec<u64>)> {
    let (mut chunks, astray) = heap_walk(mem);
    let last = chunks.pop()?;
    astray.then(|| (last + 8, chunks))
}

/// The program's call sites (return addresses) of the library definitions among `locs`.
fn call_sites(ctx: &mut ThreadContext, locs: &[(String, u64)]) -> Vec<(u64, u64)> {
    locs.iter().filter(|l| !origin::in_main(l.1)).filter_map(|l| Some((l.1, logged_call(ctx, origin::instance_word(l.1))?.2))).collect()
}

/// How many blocks a thread's instance count jumps to when the program's own code starts
/// (more than the dynamic loader runs before it).
const ENTRY_INSTANCE: u64 = 1 << 24;

/// At the program's entry point, once: the main thread's block count jumps to
/// `ENTRY_INSTANCE`. What the dynamic loader and the C library's start-up do before depends on
/// the environment (one more variable, more blocks scanning it); from here on, instances do not,
/// so a search names the same instances whatever the environment holds. Still increasing, so
/// "most recent" comparisons hold across the jump.
extern "C" fn restart_count(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::SuppressRestartCount);
    // SAFETY: rtg_callout passes this thread's context; `arg` is the tool's boxed flag, which
    // lives as long as translations exist.
    let (ctx, done) = unsafe { (&mut *ctx, &*(arg as *const std::sync::atomic::AtomicBool)) };
    if done.swap(true, std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    if origin::instance(ctx.counter) < ENTRY_INSTANCE {
        ctx.counter = origin::thread_part(ctx.counter) | (ctx.counter & (origin::BLOCK_STEP - 1)) | ENTRY_INSTANCE << origin::INSTANCE_SHIFT;
    }
}

/// The C library's functions that copy into their first argument.
const COPIES: [&str; 16] = [
    "strcpy",
    "strcat",
    "strncpy",
    "strncat",
    "stpcpy",
    "memcpy",
    "memmove",
    "mempcpy",
    "sprintf",
    "vsprintf",
    "snprintf",
    "vsnprintf",
    "gets",
    "fgets",
    "read",
    "fread",
];

/// The C library's and C++ runtime's functions that free the block their first argument
/// points to.
const FREES: [&str; 6] = ["free", "realloc", "_ZdlPv", "_ZdlPvm", "_ZdaPv", "_ZdaPvm"];

/// Bytes the program made, as a definition: a real one at a site of the program.
fn program_bytes(o: u64) -> bool {
    origin::in_main(o) && o & origin::REAL != 0
}

/// Functions that return a block of the heap.
const ALLOCS: [&str; 13] =
    ["malloc", "calloc", "realloc", "reallocarray", "strdup", "strndup", "aligned_alloc", "memalign", "posix_memalign", "valloc", "_Znwm", "_Znam", "asprintf"];

/// Before the thread's first call in the program, a library's definitions are instance 1 of
/// the thread (never 0, which names every instance).
fn init_call_word(ctx: &mut ThreadContext) {
    *shadow::word(ctx, area::CALL_WORD) = origin::thread_part(ctx.counter) | origin::BLOCK_STEP;
    *shadow::word(ctx, area::CALL_LIVE) = 0;
}

/// Register `r` as a used location, with its origin. The stack and frame pointers are
/// computed by the calling convention (`sub rsp`, `mov rbp, rsp`): the frame pointer is a used
/// location only where its value came from memory (a `pop rbp` or `leave` of a smashed slot:
/// its origin is then the store that wrote the slot), the stack pointer never.
fn reg_loc(ctx: &mut ThreadContext, sites: &shadow::Sites, r: Register, what: &str) -> Option<(String, u64)> {
    let n = shadow::gpr_number(r)?;
    let o = *shadow::word(ctx, slot::ORIGIN_GPR + 8 * n);
    let frame = r == Register::RSP || (r == Register::RBP && sites.pc(origin::site(o)).and_then(decode).is_none_or(|i| moves_frame(&i)));
    (!frame).then(|| (format!("{} ({what})", format!("{r:?}").to_lowercase()), o))
}

/// Whether the instruction computes the stack or frame pointer (rather than storing a value
/// that a `pop rbp` later loaded).
fn moves_frame(ins: &Instruction) -> bool {
    let info = InstructionInfoFactory::new().info(ins).clone();
    let stores = info.used_memory().iter().any(|m| matches!(m.access(), OpAccess::Write | OpAccess::ReadWrite | OpAccess::CondWrite | OpAccess::ReadCondWrite));
    !stores
        && info
            .used_registers()
            .iter()
            .any(|u| matches!(u.register().full_register(), Register::RSP | Register::RBP) && matches!(u.access(), OpAccess::Write | OpAccess::ReadWrite))
}

/// The condition of the last conditional branch in the program, as a used location.
fn last_branch(ctx: &mut ThreadContext) -> Option<(String, u64)> {
    let pc = *shadow::word(ctx, area::LAST_BRANCH);
    (pc != 0).then(|| (format!("the condition of the branch at {pc:#x}"), *shadow::word(ctx, area::LAST_BRANCH_ORIGIN)))
}

/// rcx zero: on to `zero`; else to `other`, both far (`jrcxz` reaches 127 bytes). Flag-free.
fn rcx_branch(a: &mut rtgrind_jit::instrument::code_asm::CodeAssembler, zero: CodeLabel, other: CodeLabel) {
    let mut near = a.create_label();
    a.jrcxz(near).unwrap();
    a.jmp(other).unwrap();
    a.set_label(&mut near).unwrap();
    a.jmp(zero).unwrap();
}

/// Calls `f(arg)` out (clobbering `t`), then leaves the block for the tool-area `REDIRECT`
/// pc if the call-out set one; `done` is bound after, where the code goes on.
fn callout_then_leave_if_asked(b: &mut Inline, f: rtgrind_jit::instrument::Callout, arg: RecordRef, t: AsmRegister64, done: CodeLabel) {
    b.callout_record(f, arg, t);
    leave_if_asked(b, done);
}

/// After a call-out: leaves the block for where it asked (`area::REDIRECT`), else goes on at
/// `done`.
fn leave_if_asked(b: &mut Inline, mut done: CodeLabel) {
    let a = b.asm();
    a.cmp(qword_ptr(tool_area(area::REDIRECT)).gs(), 0).unwrap();
    a.je(done).unwrap();
    b.exit_to(tool_area(area::REDIRECT));
    let a = b.asm();
    a.set_label(&mut done).unwrap();
    a.zero_bytes().unwrap();
    b.release_scratch();
}

pub(super) fn fmt(ins: &Instruction) -> String {
    rtgrind_jit::translate::format_insn(ins)
}

impl SuppressRun {
    /// The code before an instruction (`Tool::before_insn`).
    /// A traced run's code outside fast versions keeps values across points only in registers
    /// it `keep`s (the propagation's instance and granules): the engine may give it other
    /// lent registers than the ones it names (`Inline::may_rename`), fewer to spill and reload.
    fn may_rename(&self, b: &mut Inline) {
        if self.traced() && b.version() != Version::Fast {
            b.may_rename();
        }
    }

    fn instrument_before(&mut self, site: &InsnSite, b: &mut Inline) {
        let ins = site.ins;
        let pc = ins.ip();
        self.segments.insn(pc);
        if let Some(hook) = self.redzones.as_ref().and_then(|z| z.heap.hook_at(ins)) {
            if b.version() == Version::Fast {
                // (The call-out borrows a register: perhaps the fast block's cached one.)
                self.fast_block.forget_stack();
            }
            let r = b.scratch();
            let spilled = b.spilled();
            let arg = b.record(records::HEAP_SITE, records::heap_site(hook, spilled));
            b.callout_record(heap_hook, arg, r);
            b.release_scratch();
        }
        let fast = b.version() == Version::Fast;
        if !fast {
            // An instruction a point names counts its executions first (`ordinals`): the
            // count is its own whatever the code below does with it.
            if let Some(id) = self.anchors.pc(pc).filter(|_| self.in_main(pc)) {
                let (table, n) = (b.scratch(), b.scratch());
                ordinals::count(b, id, table, n);
                b.release_scratch();
            }
        }
        if fast {
            // A suppression point makes what its instruction defines corrupt: the full
            // version runs it.
            if self.plan.points.iter().any(|p| p.pc == pc || ((p.call() || p.call_site().is_some()) && !self.in_main(pc))) {
                return b.full_version_if(When::Always);
            }
            if !self.fast_block.before(site, b) {
                return;
            }
            b.release_scratch();
            if ins.flow_control() != FlowControl::Next {
                // The bookkeeping below borrows registers: the fast block's cached one too.
                self.fast_block.forget_stack();
            }
        }
        self.control_guards(site, b);
        if self.state.armed {
            // (Before the first point fires there are no guards: nothing to work out.)
            self.data_guards(site, b);
        }
        if matches!(ins.flow_control(), FlowControl::Call | FlowControl::IndirectCall) {
            self.at_call(ins, b);
        }
        if self.traced() && ins.rflags_modified() != 0 {
            let unread = super::flags::flags_origin_unread(site, &|j| self.program_branch(j.ip()));
            self.prop.flags_origin_unread = unread;
        }
        if fast {
            // Clean data, checked; origins propagate as in the full version.
            if self.traced() {
                b.release_scratch();
                self.prop.before_origins_only(site, b);
                self.watch_stores(site, b);
            }
            return;
        }
        // A store a point skips is left before its origin code, so the location keeps its
        // last definition's origin (as it keeps its old value: the next run's analysis finds
        // the store before). Other points mark what their instruction wrote corrupt after
        // its propagation, which would clear the marks.
        let skips = plain_store_of(ins, site.info);
        if skips {
            self.point_checks(ins, b);
        }
        self.call_checks(site, b);
        b.release_scratch();
        self.prop.before(site, b);
        b.release_scratch();
        if !skips {
            self.point_checks(ins, b);
        }
        self.watch_stores(site, b);
    }
}

impl Tool for SuppressRun {
    /// An untraced run's code (unarmed and armed, fast versions too) holds its records,
    /// constants and call sites' ids through relocations (`records`); a traced run's holds
    /// watch checks and segment ids as they are.
    fn relocatable_code(&self) -> bool {
        !self.traced() && self.prop.at_fixed_places()
    }

    fn revive(&mut self, kind: u32, bytes: &[u8]) -> Option<u64> {
        let state = self.state_ptr();
        Some(match kind {
            records::GUARD => {
                let (kind, spilled, ins) = records::read_guard(bytes)?;
                let g = Box::new(Guard { kind, ins, state, spilled, events: Default::default(), store_events: Default::default() });
                let at = &*g as *const Guard as u64;
                self.guards.push(g);
                at
            }
            records::POINT_CHECK => {
                let (point, anchor, spilled, ins) = records::read_point_check(bytes)?;
                let c = Box::new(PointCheck { point, anchor, ins, state, spilled });
                let at = &*c as *const PointCheck as u64;
                self.checks.push(c);
                at
            }
            records::HEAP_SITE => {
                let (hook, spilled) = records::read_heap_site(bytes)?;
                let s = Box::new(HeapSite { hook, run: self as *mut SuppressRun, spilled });
                let at = &*s as *const HeapSite as u64;
                self.heap_sites.push(s);
                at
            }
            _ => return None,
        })
    }

    fn constant(&mut self, k: u32) -> Option<u64> {
        match k {
            records::RESTARTED => Some(self.restarted_ptr()),
            records::STATE => Some(self.state_ptr() as u64),
            k => self.prop.constant(k),
        }
    }

    fn id(&mut self, kind: u32, pc: u64) -> Option<u64> {
        match kind {
            records::CALL_SITE => self.anchors.call(pc).map(|id| 8 * id as u64),
            _ => None,
        }
    }

    /// What an untraced run's code depends on besides the guest bytes and the plan: armed or
    /// not (guards, two versions) and fast versions. (What the plan and the redzones change
    /// is some blocks' code only: `plan_digest`.)
    fn code_key(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (self.state.armed, self.fast).hash(&mut h);
        h.finish()
    }

    /// What a block with instructions at `pcs` is translated for, of the plan and the run's
    /// modes: a point at an instruction of it (its check, its count and that count's anchor
    /// id, the fast version left); one under a call it makes (the call counted, and which
    /// point it makes live, `live_call`, also for a point named by block instance, at any
    /// call of the program); whether the plan suppresses calls whole (a library's stores test
    /// the live one, `call_checks`), and whether the program counts every call; an allocator's
    /// redzone hooks.
    fn plan_digest(&mut self, pcs: &[u64]) -> u64 {
        use std::hash::{Hash, Hasher};
        let (Some(&lo), Some(&hi)) = (pcs.iter().min(), pcs.iter().max()) else { return 0 };
        let program = pcs.iter().any(|&pc| self.in_main(pc));
        let library = pcs.iter().any(|&pc| !self.in_main(pc));
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let calls_here = |at: u64| (lo..=hi + 16).contains(&at);
        for p in &self.plan.points {
            let by_block = p.call() && p.block_instance().is_some();
            if pcs.contains(&p.pc) || calls_here(p.site) || p.call_site().is_some_and(calls_here) || program && by_block {
                // (A call's number in `State::calls` is what `live_call` stores.)
                (p, self.anchors.pc(p.pc), self.state.calls.iter().position(|c| c == p)).hash(&mut h);
            }
        }
        let calls = !self.state.calls.is_empty();
        (library && calls, program && calls, program && self.every_call_counted).hash(&mut h);
        let hooked = self.redzones.as_ref().is_some_and(|z| pcs.iter().any(|&pc| z.heap.watches(pc)));
        hooked.hash(&mut h);
        h.finish()
    }

    fn two_versions(&mut self, _pc: u64, code: &BlockCode) -> bool {
        // Before the first point fires nothing is corrupt and there are no guards.
        let two = self.fast && self.state.armed;
        if two {
            self.block_use = fast::block_use(code);
        }
        two
    }

    fn block_start(&mut self, pc: u64, b: &mut Inline) {
        self.may_rename(b);
        // A traced run's basic blocks of the program keep their entries (`ordinals`).
        let segment = if self.traced() && self.in_main(pc) { self.segments.start(pc) } else { None };
        if segment.is_none() {
            self.segments.close();
        }
        fast::block_start(b, &mut self.prop, &self.block_use, &mut self.fast_block, &mut |b| {
            if let Some(id) = segment {
                ordinals::record(b, id);
            }
        });
        if Some(pc) == self.entry {
            // The program's entry: its instances start at a fixed count (see `restart_count`).
            let t = b.scratch();
            b.callout_constant(restart_count, records::RESTARTED, self.restarted_ptr(), t);
            b.release_scratch();
        }
    }

    fn fall_through(&mut self, pc: u64, b: &mut Inline) {
        self.may_rename(b);
        if let Some(id) = (self.traced() && self.in_main(pc)).then(|| self.segments.start(pc)).flatten() {
            // Its registers may be those the block's caches are kept in.
            self.prop.forget_registers();
            self.fast_block.forget_stack();
            ordinals::record(b, id);
        }
    }

    fn full_entry(&mut self, b: &mut Inline) {
        fast::mark_dirty(b);
    }

    fn before_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        self.may_rename(b);
        let known = self.prop.known();
        self.skips_here = false;
        self.rewritten_here = site.rewritten;
        self.instrument_before(site, b);
        if std::mem::take(&mut self.skips_here) {
            // The code after the guard does not run where it skips the instruction.
            self.prop.skippable(known);
        }
    }

    fn after_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        // (Traced, the fast version's `movs`/`stos` move origins in a call-out.)
        if b.version() != Version::Fast || self.traced() {
            self.prop.after(site, b);
        }
        if site.ins.is_string_instruction() && !self.state.watches.is_empty() && self.traced() && site.info.used_memory().iter().any(|m| writes(m.access())) {
            let c = Box::new(WatchCheck { mem: site.info.used_memory()[0], ins: *site.ins, state: self.state_ptr(), spilled: b.spilled() });
            let arg = &*c as *const WatchCheck as u64;
            self.watch_checks.push(c);
            let t = b.scratch();
            b.callout(watch::string_after, arg, t);
            b.release_scratch();
        }
    }
}

impl ToolRun for SuppressRun {
    fn retranslate_requested(&mut self) -> Option<(u64, u64)> {
        if !std::mem::take(&mut self.state.arm_requested) {
            return None;
        }
        self.state.armed = true;
        self.prop.taint_on = true;
        Some((0, u64::MAX))
    }

    fn start(&mut self, ctx: &mut ThreadContext, mem: &GuestMemory) {
        for (s, e) in shadow::initial_ranges(ctx.gpr[4], mem) {
            self.cover(s, e);
        }
        shadow::init_thread(ctx);
        self.init_thread(ctx);
        let (path, main) = super::super::main_module(mem, &self.program);
        self.state.main = main;
        self.prop.sites.main = Some(main);
        let (entry, functions) = crate::report::symbols::entry_and_functions(&path, mem);
        self.entry = entry;
        self.main_path = path.clone();
        // (A redzone found overwritten asks for the program's copying calls where no memory
        // is at hand: read them now.)
        if self.redzones.is_some() {
            self.callees(mem);
        }
        let startup = self.entry.and_then(|e| functions.iter().find(|f| (f.0..f.1).contains(&e))).map_or((0, 0), |f| (f.0, f.1));
        self.prop.policy = Some(Policy { main, call_word: Some(area::CALL_WORD), first_instance: ENTRY_INSTANCE, startup });
        self.state.functions = functions.iter().map(|f| (f.0, f.1)).collect();
        // The C runtime's code in the program (start-up, destructors) decides nothing the
        // program's author wrote.
        const CRT: [&str; 8] =
            ["_start", "_init", "_fini", "__do_global_dtors_aux", "frame_dummy", "register_tm_clones", "deregister_tm_clones", "__libc_csu_init"];
        self.crt = functions.iter().filter(|f| CRT.contains(&f.2.as_str())).map(|f| (f.0, f.1)).collect();
        // A point of every instance in a library, or of every call at a site, records the
        // call it fired under; a traced run logs every call's count.
        self.every_call_counted =
            self.traced() || self.plan.points.iter().any(|p| p.call_site().is_some() || (p.instance == 0 && !p.call() && !(main.0..main.1).contains(&p.pc)));
        for f in self.plan.at_functions.clone() {
            match crate::report::symbols::function_address(&path, mem, &f) {
                Some(pc) => {
                    self.plan.points.push(Point { pc, thread: 0, instance: 0, site: 0 });
                    self.anchors = ordinals::Anchors::new(self.plan.points.iter().map(|p| p.pc));
                }
                None => eprintln!("rtgrind: suppress: no function `{f}` in {path}"),
            }
        }
    }

    fn thread_start(&mut self, child: &mut ThreadContext) {
        self.threads += 1;
        self.lifetime.started();
        shadow::start_thread(child, self.threads);
        self.init_thread(child);
    }

    fn syscall_pre(&mut self, ctx: &mut ThreadContext, nr: u64, args: &[u64; 6]) -> Option<i64> {
        crate::tools::note_exec(nr, args);
        let ends = self.lifetime.ends_process(nr);
        if ends && self.crash.is_none() {
            if let Some(o) = self.redzones.as_mut().and_then(Redzones::at_exit) {
                self.redzone_failure(ctx, o);
            }
        }
        let nr = nr as i64;
        let n = super::super::taint::arg_count(nr);
        let corrupt_arg = SYSCALL_ARGS.iter().take(n).any(|&r| *shadow::gpr(ctx, r) != 0);
        // Corrupt bytes written to a pipe travel with their marks (see `pipes`).
        let corrupt_buf = match nr {
            libc::SYS_write | libc::SYS_pwrite64 | libc::SYS_sendto => pipe_inode(args[0]).is_none() && self.state.mem().any(args[1], args[2].min(1 << 24)),
            _ => false,
        };
        let exiting = matches!(nr, libc::SYS_exit | libc::SYS_exit_group | libc::SYS_rt_sigreturn);
        if self.crash.is_none() {
            self.named_failure(ctx, nr, args, ends, (corrupt_arg || corrupt_buf) && !exiting);
        }
        if exiting {
            return None;
        }
        // A call suppressed whole unmaps nothing (free of an mmapped block): its stores are
        // not made, and neither is what would destroy memory the program goes on to use.
        if matches!(nr, libc::SYS_munmap | libc::SYS_madvise) {
            if let Some(p) = self.in_suppressed_call(ctx) {
                if !self.state.hits.iter().any(|h| h.0 == p) {
                    hit(ctx, &mut self.state, p, ctx.rip, ctx.gpr[4]);
                }
                self.state.count("syscalls of a suppressed call");
                return Some(0);
            }
        }
        if corrupt_arg || corrupt_buf {
            self.state.count("syscalls with a corrupt argument");
            self.syscall_suppressed = true;
            *shadow::gpr(ctx, 0) = 0xff;
            // A register is corrupt now: blocks run their full versions (see `shadow::fast`).
            *shadow::word(ctx, slot::DIRTY) = 1;
            // Pretend success of the size asked for writes; otherwise a failure.
            return Some(if matches!(nr, libc::SYS_write | libc::SYS_pwrite64 | libc::SYS_sendto) { args[2] as i64 } else { -(libc::EIO as i64) });
        }
        None
    }

    fn syscall_post(&mut self, ctx: &mut ThreadContext, nr: u64, a: &[u64; 6], ret: i64, mem: &GuestMemory) {
        for r in [1, 11] {
            *shadow::gpr(ctx, r) = 0;
        }
        let pc = ctx.rip.wrapping_sub(2);
        let site = self.prop.sites.id(pc);
        let defined = origin::here(site, ctx.counter);
        // A suppressed syscall leaves rax corrupt (set in syscall_pre); a real one defines it.
        let suppressed = std::mem::take(&mut self.syscall_suppressed);
        if !suppressed {
            *shadow::gpr(ctx, 0) = 0;
        }
        *shadow::word(ctx, slot::ORIGIN_GPR) = defined;
        let nr = nr as i64;
        if ret < 0 {
            return;
        }
        if let Some((start, end)) = shadow::mapped_by(nr, a, ret, mem) {
            self.cover(start, end);
        }
        if nr == libc::SYS_mmap && a[2] as i32 & libc::PROT_EXEC != 0 {
            if let Some(z) = self.redzones.as_mut() {
                z.heap.note_mapping(mem, ret as u64, ret as u64 + a[1]);
            }
        }
        if let Some(z) = self.redzones.as_mut() {
            match nr {
                libc::SYS_munmap | libc::SYS_mremap | libc::SYS_mprotect => z.unmapped(a[0], a[0].saturating_add(a[1])),
                // (The break may have come down: what was above it is gone.)
                libc::SYS_brk => z.unmapped(ret as u64, u64::MAX),
                _ => {}
            }
        }
        // A syscall a point names, or one a call suppressed whole makes: what the kernel
        // wrote is corrupt and keeps its last definition (a `read` past a buffer's end).
        let by_point = std::mem::take(&mut self.state.syscall_writes_corrupt);
        let by_call = self.in_suppressed_call(ctx);
        let written = super::super::taint::written_buffer(nr, a, ret);
        if let (Some((buf, len)), true) = (written, by_point || by_call.is_some()) {
            // (A call suppressed whole may make no store before: the guards come now.)
            if !self.state.armed {
                self.state.arm_requested = true;
            }
            self.state.mem().set_range(buf, len, 1);
            self.state.count("syscall results suppressed");
            if let Some(p) = by_call.filter(|p| !self.state.hits.iter().any(|h| h.0 == *p)) {
                hit(ctx, &mut self.state, p, ctx.rip, ctx.gpr[4]);
            }
            return;
        }
        if let Some((buf, len)) = written {
            if !suppressed {
                self.state.mem().set_range(buf, len, 0);
                if let Some(o) = self.origin_mem() {
                    o.set64_range(buf, len, defined);
                }
                self.state.watch_store(buf, len);
            }
        }
        if suppressed {
            return;
        }
        let n = (ret as u64).min(1 << 24);
        match (nr, pipe_inode(a[0])) {
            (libc::SYS_write, Some(ino)) => {
                let bytes: Vec<(u64, u8)> = (0..n).map(|i| (self.origin_at(a[1] + i), self.state.mem().get(a[1] + i))).collect();
                self.pipes.entry(ino).or_default().extend(bytes);
            }
            (libc::SYS_read, Some(ino)) => {
                let Some(q) = self.pipes.get_mut(&ino) else { return };
                let taken: Vec<(u64, u8)> = (0..n).map_while(|_| q.pop_front()).collect();
                for (i, (o, c)) in taken.into_iter().enumerate() {
                    if let Some(m) = self.origin_mem() {
                        m.set64(a[1] + i as u64, o);
                    }
                    self.state.mem().set(a[1] + i as u64, c);
                }
            }
            _ => {}
        }
    }

    fn fatal_signal(&mut self, ctx: &mut ThreadContext, sig: i32, _code: i32, addr: u64, mem: &GuestMemory) {
        // A run that does not trace names the crash only (the driver traces it again).
        let locs = if self.traced() { self.crash_locations(ctx, sig, addr, mem) } else { Vec::new() };
        if self.crash.is_none() {
            self.fail(ctx, sig, ctx.rip, locs, String::new());
        }
    }

    fn fini(&mut self, _report: &mut Reporter, mem: &GuestMemory) {
        // (The segment translated last, the failure's perhaps, is closed at the next block's
        // translation: none came.)
        self.segments.close();
        // Source places are named by the search, which loads each module's DWARF once for all
        // its runs (`Outcome::name_places`): a run writes addresses and the modules they are in.
        let mut out = Outcome::default();
        if let Some(Failed { signal, pc, instance, used, what, calls }) = self.crash.take() {
            let stack: Vec<u64> = calls.iter().copied().filter(|&r| self.in_main(r)).collect();
            let frames = match calls.split_first() {
                Some((ret, callers)) if signal == REDZONE_FAILURE => [&[ret - 1][..], callers].concat(),
                _ => [&[pc][..], &calls].concat(),
            };
            out.crash = Some(plan::Crash { signal, pc, instance, place: if signal < 0 { what } else { String::new() }, stack, frames });
            for (what, o) in used {
                let Some(p) = self.point_of(o) else { continue };
                if let Some(&(_, ret)) = self.def_sites.iter().find(|d| d.0 == o) {
                    out.def_sites.push((p, ret));
                }
                let ins = decode(p.pc);
                // A constant: computed from nothing, or an immediate stored (`mov [m], imm`).
                let stored_immediate = ins.is_some_and(|i| {
                    i.mnemonic() == Mnemonic::Mov
                        && i.op0_kind() == OpKind::Memory
                        && matches!(i.op1_kind(), OpKind::Immediate8 | OpKind::Immediate16 | OpKind::Immediate32 | OpKind::Immediate32to64)
                });
                let instruction = ins.map(|i| fmt(&i)).unwrap_or_default();
                out.defs.push(plan::Def { point: p, location: what, place: String::new(), instruction, constant: origin::is_constant(o) || stored_immediate });
            }
        }
        for CallDef { what, word, ret, name } in std::mem::take(&mut self.call_defs) {
            let p = self.call_point(word, ret);
            out.def_sites.push((p, ret));
            out.defs.push(plan::Def { point: p, location: what, place: name, instruction: "call".into(), constant: false });
        }
        for (p, pc, calls) in std::mem::take(&mut self.state.hits) {
            if !out.hits.iter().any(|h| h.point == p && h.pc == pc) {
                out.hits.push(plan::Hit { point: p, pc, call: String::new(), frames: [&[pc][..], &calls].concat() });
            }
        }
        out.main = self.state.main;
        let pcs = out.crash.iter().flat_map(|c| c.frames.iter()).chain(out.hits.iter().flat_map(|h| h.frames.iter()));
        let defs = out.defs.iter().filter(|d| !d.point.call()).map(|d| d.point.pc);
        out.modules = crate::report::symbols::ModuleMap::of(pcs.copied().chain(defs), mem);
        out.narrow = std::mem::take(&mut self.narrow);
        let mut s: Vec<(String, u64)> = self.suppressed_counts().iter().map(|(k, v)| (k.to_string(), *v)).collect();
        s.sort();
        out.suppressed = s;
        if let Some(path) = &self.plan.out {
            let _ = std::fs::write(path, out.to_text());
        }
    }
}

/// The inode of the pipe open as guest descriptor `fd`, if it is one.
fn pipe_inode(fd: u64) -> Option<u64> {
    crate::kernel::raw::fstat(fd as i32).filter(|st| st.st_mode & libc::S_IFMT == libc::S_IFIFO).map(|st| st.st_ino)
}

/// `m` = `value`: one store of a sign-extended imm32 where it fits (the pcs of a program that
/// is not PIE), else through a register lent for it (flag-free either way).
/// A segmentation fault or bus error at `addr`, where nothing is mapped, just above memory that
/// is: an access that ran on to where memory ends.
fn faulted_where_memory_ends(sig: i32, addr: u64, mem: &GuestMemory) -> bool {
    matches!(sig, libc::SIGSEGV | libc::SIGBUS) && mem.region_at(addr).is_none() && mem.region_at(addr.wrapping_sub(1)).is_some()
}

fn store_constant(b: &mut Inline, m: AsmMemoryOperand, value: u64) {
    match i32::try_from(value as i64) {
        Ok(v) => b.asm().mov(m, v).unwrap(),
        Err(_) => {
            let t = b.scratch();
            let a = b.asm();
            a.mov(t, value).unwrap();
            a.mov(m, t).unwrap();
        }
    }
}
