//! The guards of a suppression run: what a call-out does when an instruction is about to use a
//! corrupt value (suppress it, skip a conditional region, return early, restore a return
//! address), and what a suppression point does when it fires.

use super::area;
use super::cfg;
use super::events;
use super::frames::{frames, return_corrupt, ENTRY_BYTES};
use super::plan::Point;
use super::run::fmt;
use crate::kernel::guest_mem;
use crate::shadow::memory::ShadowMemory;
use crate::shadow::propagate::writes;
use crate::shadow::{self, origin, slot};
use rtgrind_jit::iced_x86::{FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpAccess, OpKind, Register};
use rtgrind_jit::ThreadContext;
use std::collections::HashMap;

/// What a guard protects.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum GuardKind {
    Access,
    Branch,
    Ret,
    IndirectCall,
    IndirectJump,
    Divide,
    /// `leave` with a corrupt frame pointer: the frame is lost.
    FrameLost,
}

pub(super) struct Guard {
    pub(super) kind: GuardKind,
    pub(super) ins: Instruction,
    pub(super) state: *mut State,
    /// Registers whose guest values wait in their spill slots at the call-out (`guest_regs`).
    pub(super) spilled: u16,
    /// Events the translated code handled without the call-out (`events`), counted there:
    /// accesses through a corrupt address or divisions, and stores of a corrupt value.
    pub(super) events: std::sync::atomic::AtomicU64,
    pub(super) store_events: std::sync::atomic::AtomicU64,
}

pub(super) struct PointCheck {
    pub(super) point: Point,
    /// For an instruction of the program: what counts its executions (`ordinals::Anchors`).
    pub(super) anchor: Option<u32>,
    pub(super) ins: Instruction,
    pub(super) state: *mut State,
    pub(super) spilled: u16,
}

/// What call-outs share with the tool (boxed: its address is baked into translations).
pub(super) struct State {
    pub(super) shadow: *mut ShadowMemory,
    /// Meeting points and conditional regions of suppressed branches, by branch pc.
    pub(super) ipdoms: HashMap<u64, (Option<u64>, Vec<Instruction>)>,
    /// Function ranges from symbols, for the CFG (filled at start).
    pub(super) functions: Vec<(u64, u64)>,
    /// Times each kind of suppression acted.
    pub(super) suppressed: HashMap<&'static str, u64>,
    /// Points reached: (point, the instruction that reached it, the return addresses of the
    /// calls it was under, innermost first). A call suppressed whole has one per instruction
    /// of the call that stored: its root cause is one of them.
    pub(super) hits: Vec<(Point, u64, Vec<u64>)>,
    pub(super) main: (u64, u64),
    /// Guards and corrupt bits are in the translations: set once the first suppression point
    /// fires (until then nothing can be corrupt, and a trace run never pays for them).
    pub(super) armed: bool,
    /// A point fired before `armed`: the runtime is to drop every translation.
    pub(super) arm_requested: bool,
    /// A point fired at a `syscall`: what the kernel writes for it is corrupt (it is made;
    /// the guards then treat what it wrote as a suppressed store's).
    pub(super) syscall_writes_corrupt: bool,
    /// The origin map in a run that traces (null otherwise), for the watch.
    pub(super) origins: *mut ShadowMemory,
    /// Locations watched at a finer grain than origins keep (`watch`), and the range the
    /// string store about to run writes.
    pub(super) watches: Vec<super::watch::Watched>,
    pub(super) watch_pending: Option<(u64, u64)>,
    /// Each thread's table of segment entries, in a run that traces (`ordinals`).
    pub(super) rings: Vec<(u64, u64)>,
    /// Blocks entered to go on with an execution (after an instruction skipped, or to run one
    /// again in a new translation), not executions of their own, by (thread, start): how many,
    /// and the block instances (the same as the execution's) of the last of them
    /// (`ordinals::Continued`).
    pub(super) continued: std::collections::HashMap<(u64, u64), super::ordinals::Continued>,
    /// The plan's calls suppressed whole (`Point::call`, `Point::call_site`), in plan order:
    /// `area::CALL_LIVE` names the one the thread's innermost program call may be.
    pub(super) calls: Vec<Point>,
}

/// The thread goes on at `pc` in the same execution of its block (an instruction skipped, or
/// to be run again in a new translation): the block entered there is counted back, so
/// instances stay those of a run without the skip, and noted as no execution of its own.
pub(super) fn go_on_at(ctx: &mut ThreadContext, st: &mut State, pc: u64) {
    *shadow::word(ctx, area::REDIRECT) = pc;
    st.continued.entry((origin::thread(ctx.counter) as u64, pc)).or_default().note(origin::instance(ctx.counter));
    ctx.counter -= origin::BLOCK_STEP;
}

impl State {
    pub(super) fn mem(&mut self) -> &mut ShadowMemory {
        // SAFETY: the shadow lives as long as the tool; call-outs and hooks run one at a time
        // (on the thread holding the baton).
        unsafe { &mut *self.shadow }
    }
    pub(super) fn count(&mut self, what: &'static str) {
        *self.suppressed.entry(what).or_default() += 1;
    }
}

/// The guest's general registers at a call-out whose code had the registers `spilled` lent
/// (a region's stores addressed from a lent rbp were marked corrupt at the tool's address, so
/// which register the tool's code happened to borrow changed what a suppression run did).
pub(super) fn guest_regs(ctx: &ThreadContext, spilled: u16) -> [u64; 16] {
    ctx.guest_gprs(spilled)
}

/// The effective address of `ins`'s memory operand from the guest's registers `regs`.
pub(super) fn address(ctx: &ThreadContext, regs: &[u64; 16], ins: &Instruction) -> Option<u64> {
    (0..ins.op_count()).find(|&i| ins.op_kind(i) == OpKind::Memory)?;
    let scale = u64::from(ins.memory_index_scale());
    Some(effective_address(ctx, regs, [ins.memory_base(), ins.memory_index()], scale, ins.memory_displacement64(), ins.segment_prefix()))
}

/// base + index * scale + displacement from the guest's registers `regs`, plus the fs base
/// for an `fs:` access. A RIP-relative displacement is iced's absolute target already.
pub(super) fn effective_address(ctx: &ThreadContext, regs: &[u64; 16], [base, index]: [Register; 2], scale: u64, displacement: u64, segment: Register) -> u64 {
    let val = |r: Register| -> u64 {
        match r {
            Register::None | Register::RIP | Register::EIP => 0,
            r => {
                let v = regs[r.full_register().number() - Register::RAX.number()];
                if r.size() == 4 {
                    v & 0xffff_ffff
                } else {
                    v
                }
            }
        }
    };
    let ea = val(base).wrapping_add(val(index).wrapping_mul(scale)).wrapping_add(displacement);
    if segment == Register::FS {
        ea.wrapping_add(ctx.callout_fs)
    } else {
        ea
    }
}

/// Marks everything `ins` writes corrupt: registers, flags and (if `memory`) its memory
/// destination.
pub(super) fn corrupt_destinations(ctx: &mut ThreadContext, st: &mut State, ins: &Instruction, memory: bool, regs: &[u64; 16]) {
    let marks = events::marks(ins);
    for &s in &marks.gprs {
        *shadow::word(ctx, s) = events::GPR_CORRUPT;
    }
    for &s in &marks.vecs {
        *shadow::word(ctx, s) = events::VEC_CORRUPT;
    }
    if marks.flags {
        *shadow::word(ctx, slot::FLAGS) = 1;
    }
    if memory {
        let info = InstructionInfoFactory::new().info(ins).clone();
        for m in info.used_memory() {
            if matches!(m.access(), OpAccess::Write | OpAccess::ReadWrite | OpAccess::CondWrite | OpAccess::ReadCondWrite) {
                if let Some(ea) = address(ctx, regs, ins) {
                    let size = m.memory_size().size().max(1) as u64;
                    st.mem().set_range(ea, size, 1);
                }
            }
        }
    }
}

/// Marks what an instruction of a skipped conditional region would define: the registers it
/// writes (not rsp) and, for a store to a stack slot (rsp or rbp plus a displacement), the slot.
pub(super) fn corrupt_region_insn(ctx: &mut ThreadContext, st: &mut State, ins: &Instruction, regs: &[u64; 16]) {
    if matches!(ins.flow_control(), FlowControl::Call | FlowControl::IndirectCall) {
        // The call's result; what the callee writes is not known here.
        *shadow::gpr(ctx, 0) = 0xff;
        return;
    }
    let stack_store = matches!(ins.memory_base(), Register::RSP | Register::RBP) && ins.memory_index() == Register::None;
    corrupt_destinations(ctx, st, ins, stack_store && !matches!(ins.mnemonic(), Mnemonic::Push | Mnemonic::Pop | Mnemonic::Leave), regs);
}

pub(super) fn address_corrupt(ctx: &mut ThreadContext, ins: &Instruction) -> bool {
    [ins.memory_base(), ins.memory_index()].into_iter().filter_map(shadow::gpr_number).filter(|&n| n != 4).any(|n| *shadow::gpr(ctx, n) != 0)
}

/// `RTGRIND_SUPPRESS_TRACE` set: each guard's event is printed (debugging). Read once (a
/// getenv per event was a tenth of a hot loop's suppression run).
pub(super) static TRACE: std::sync::LazyLock<bool> = std::sync::LazyLock::new(|| std::env::var_os("RTGRIND_SUPPRESS_TRACE").is_some());

pub(super) extern "C" fn guard_callout(ctx: *mut ThreadContext, arg: u64) {
    // SAFETY: rtg_callout passes this thread's context; `arg` is a boxed Guard the tool keeps
    // for as long as translations exist, and its state outlives it.
    let (ctx, g) = unsafe { (&mut *ctx, &*(arg as *const Guard)) };
    // SAFETY: as above.
    let st = unsafe { &mut *g.state };
    let ins = &g.ins;
    let regs = guest_regs(ctx, g.spilled);
    *shadow::word(ctx, area::REDIRECT) = 0;
    use crate::tools::callouts::{note, Kind};
    note(match g.kind {
        GuardKind::Access => Kind::SuppressGuardAccess,
        GuardKind::Branch => Kind::SuppressGuardBranch,
        GuardKind::Ret => Kind::SuppressGuardRet,
        GuardKind::IndirectCall => Kind::SuppressGuardIndirectCall,
        GuardKind::IndirectJump => Kind::SuppressGuardIndirectJump,
        GuardKind::Divide => Kind::SuppressGuardDivide,
        GuardKind::FrameLost => Kind::SuppressGuardFrameLost,
    });
    if *TRACE {
        eprintln!("suppress-trace: {:?} at {:#x} `{}` rsp={:#x}", g.kind, ins.ip(), fmt(ins), ctx.callout_regs[4]);
    }
    match g.kind {
        GuardKind::Access => {
            let bad_address = address_corrupt(ctx, ins);
            corrupt_destinations(ctx, st, ins, !bad_address, &regs);
            st.count(if bad_address { "accesses through a corrupt address" } else { "stores of a corrupt value" });
            go_on_at(ctx, st, ins.next_ip());
        }
        GuardKind::Divide => {
            corrupt_destinations(ctx, st, ins, false, &regs);
            st.count("divisions by a corrupt value");
            go_on_at(ctx, st, ins.next_ip());
        }
        GuardKind::IndirectCall => {
            *shadow::gpr(ctx, 0) = 0xff;
            st.count("calls through a corrupt target");
            *shadow::word(ctx, area::REDIRECT) = ins.next_ip();
        }
        GuardKind::Ret => {
            let rsp = ctx.callout_regs[4];
            let table = *shadow::word(ctx, area::RET_TABLE);
            let e = table + (rsp & 0xffff) * (ENTRY_BYTES as u64 / 8);
            // SAFETY: `e` is inside this thread's table (index < 2^16 / 8 entries of 32 bytes).
            let (key, ret) = unsafe { (*(e as *const u64), *((e + 8) as *const u64)) };
            if key == rsp && guest_mem::write_u64(rsp, ret) {
                st.mem().set_range(rsp, 8, 0);
                st.count("returns through a corrupt return address");
            } else if return_corrupt(ctx) {
                // The stack pointer itself went wrong (a corrupt saved frame pointer): back to
                // the innermost frame known.
                st.count("functions left with a corrupt result");
            }
        }
        GuardKind::FrameLost => {
            if return_corrupt(ctx) {
                st.count("functions left with a corrupt result");
            }
        }
        GuardKind::Branch | GuardKind::IndirectJump => {
            let pc = ins.ip();
            let target = if g.kind == GuardKind::Branch {
                let functions = &st.functions;
                let func = functions.iter().find(|f| (f.0..f.1).contains(&pc)).copied();
                let (target, region) = st.ipdoms.entry(pc).or_insert_with(|| cfg::region(pc, &guest_mem::read_some, func)).clone();
                if target.is_some() {
                    // What either path would have defined is corrupt: registers, and stack
                    // slots (addressed from rsp or rbp, whose values are known here).
                    for r in &region {
                        corrupt_region_insn(ctx, st, r, &regs);
                    }
                }
                target
            } else {
                None
            };
            match target {
                Some(t) => {
                    *shadow::word(ctx, area::REDIRECT) = t;
                    st.count("conditional regions skipped");
                }
                None => {
                    if return_corrupt(ctx) {
                        st.count("functions left with a corrupt result");
                    }
                }
            }
        }
    }
}

pub(super) extern "C" fn point_callout(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::SuppressPoint);
    // SAFETY: as in `guard_callout` (`arg` is a boxed PointCheck).
    let (ctx, c) = unsafe { (&mut *ctx, &*(arg as *const PointCheck)) };
    // SAFETY: as above.
    let st = unsafe { &mut *c.state };
    *shadow::word(ctx, area::REDIRECT) = 0;
    let thread = origin::thread(ctx.counter) as u64;
    if thread != c.point.thread {
        return;
    }
    if !arm(ctx, st, &c.ins) {
        // Run again from its start: counted again there.
        if let Some(id) = c.anchor {
            super::ordinals::uncount(ctx, id);
        }
        return;
    }
    let ins = &c.ins;
    let bad_address = address_corrupt(ctx, ins);
    let regs = guest_regs(ctx, c.spilled);
    if !string_store(ins) {
        corrupt_destinations(ctx, st, ins, !bad_address, &regs);
    }
    // A point of every instance is recorded at the instances it fired at (a few per site):
    // a library's is named by the program's call, and the report names that call, not the
    // first one that reached the instruction.
    let point = match (c.point.instance, c.anchor) {
        (0, Some(id)) => Point { instance: super::ordinals::executions(ctx, id), ..c.point },
        (0, None) => in_call(ctx, c.point),
        _ => c.point,
    };
    if !st.hits.iter().any(|h| h.0 == point) && st.hits.iter().filter(|h| h.0.pc == point.pc).count() < 64 {
        hit(ctx, st, point, ins.ip(), ctx.callout_regs[4]);
    }
    if ins.mnemonic() == Mnemonic::Syscall {
        st.syscall_writes_corrupt = true;
    }
    // A plain store is not performed, nor a string store (an inlined copy: all of it);
    // other definitions run and their results are corrupt.
    if string_store(ins) {
        skip_string_store(ctx, st, ins, &regs);
    } else if plain_store(ins) {
        go_on_at(ctx, st, ins.next_ip());
    }
}

/// A store that writes memory only (no register but rsp, no control flow, not a push or a
/// string instruction): a point there skips it.
pub(super) fn plain_store(ins: &Instruction) -> bool {
    plain_store_of(ins, &InstructionInfoFactory::new().info(ins).clone())
}

pub(super) fn plain_store_of(ins: &Instruction, info: &rtgrind_jit::iced_x86::InstructionInfo) -> bool {
    let writes_regs = info.used_registers().iter().any(|u| u.register().full_register() != Register::RSP && writes(u.access()));
    let stores = info.used_memory().iter().any(|m| writes(m.access()));
    let sequential = ins.flow_control() == FlowControl::Next;
    stores && !writes_regs && sequential && !matches!(ins.mnemonic(), Mnemonic::Push) && !ins.is_string_instruction()
}

/// A point fires: before the first, has every block retranslated with guards and corrupt
/// bits and comes back to this instruction in the new translation (its block entry is counted
/// again, so the count goes back one: instances stay those of the unarmed run); false then.
fn arm(ctx: &mut ThreadContext, st: &mut State, ins: &Instruction) -> bool {
    if st.armed {
        return true;
    }
    st.arm_requested = true;
    ctx.ibl_clear();
    go_on_at(ctx, st, ins.ip());
    false
}

/// Point `p` of a library (or of every call at a site) at the program's call the thread runs
/// under: its count at its site (`ordinals`).
pub(super) fn in_call(ctx: &mut ThreadContext, p: Point) -> Point {
    Point { instance: *shadow::word(ctx, area::CALL_ORD), site: *shadow::word(ctx, area::CALL_SITE), ..p }
}

/// Records that `point` was reached, with the calls that led there (the return addresses of
/// the frames above `rsp`, innermost first).
pub(super) fn hit(ctx: &mut ThreadContext, st: &mut State, point: Point, pc: u64, rsp: u64) {
    let calls: Vec<u64> = frames(ctx, rsp).iter().map(|f| f.1).collect();
    st.hits.push((point, pc, calls));
}

/// A library's store for a program's call that is suppressed whole (`Point::call`): a store
/// into the call's own frames (its locals, its saved registers: below the call's return
/// address, down to the red zone) runs; any other (the caller's frames, the heap, globals) is
/// not made and what it would have written is corrupt, as for a suppressed store. A string
/// store is skipped whole, its registers moved on as if it had run. The call is the one
/// `area::CALL_LIVE` names (the check's own point is a placeholder: the store's code is the
/// same whatever the plan).
pub(super) extern "C" fn call_store_callout(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::SuppressCallStore);
    // SAFETY: the context is the calling thread's; `arg` is the run's boxed State (the
    // constant `records::STATE`), alive for the run.
    let (ctx, st) = unsafe { (&mut *ctx, &mut *(arg as *mut State)) };
    *shadow::word(ctx, area::REDIRECT) = 0;
    let live = *shadow::word(ctx, area::CALL_LIVE) as usize;
    let Some(&call) = live.checked_sub(1).and_then(|i| st.calls.get(i)) else { return };
    if origin::thread(ctx.counter) as u64 != call.thread {
        return;
    }
    // The store (a library's: its code is the guest's, unchanged since its translation).
    let store = *shadow::word(ctx, area::CALL_STORE);
    let Some(ins) = crate::tools::decode_code(store & 0xffff_ffff_ffff) else { return };
    let ins = &ins;
    let regs = guest_regs(ctx, (store >> 48) as u16);
    let frame = *shadow::word(ctx, area::CALL_FRAME);
    let rsp = regs[4];
    if rsp > frame {
        // The call is over (left by a longjmp): its word is stale.
        return;
    }
    let mut slot = [0u8; 8];
    if !crate::kernel::guest_mem::read(frame, &mut slot) || u64::from_le_bytes(slot) != *shadow::word(ctx, area::CALL_SITE) {
        // The call returned and its frame has been used again since (the exit path after the
        // program's `main` returned, below it): the return address it pushed is gone. What
        // runs now is not the call's.
        return;
    }
    let string = ins.is_string_instruction();
    let (ea, len) = if string {
        let size = u64::from(ins.memory_size().size().max(1) as u32);
        let n = if ins.has_rep_prefix() { regs[1] } else { 1 };
        (regs[7], n.saturating_mul(size))
    } else {
        match address(ctx, &regs, ins) {
            Some(ea) => (ea, info_store_size(ins)),
            None => return,
        }
    };
    if ea >= rsp.saturating_sub(128) && ea.saturating_add(len) <= frame {
        return;
    }
    if !arm(ctx, st, ins) {
        return;
    }
    // (A point of every call at a site: at the call it fired in, as for every instance.)
    let point = match call.call_site() {
        Some(_) => in_call(ctx, call),
        None => call,
    };
    if !st.hits.iter().any(|h| h.0 == point && h.1 == ins.ip()) && st.hits.len() < 4096 {
        hit(ctx, st, point, ins.ip(), ctx.callout_regs[4]);
    }
    st.count("stores of a suppressed call");
    if string {
        skip_string_store(ctx, st, ins, &regs);
    } else {
        corrupt_destinations(ctx, st, ins, true, &regs);
        go_on_at(ctx, st, ins.next_ip());
    }
}

/// A `movs` or `stos` (`rep` or not) is not made: what it would have written, `[rdi, rdi +
/// len)`, is corrupt and keeps its last definition, and its registers move on as if it had
/// run (forward: the C library's and the compilers' copies clear the direction flag).
fn skip_string_store(ctx: &mut ThreadContext, st: &mut State, ins: &Instruction, regs: &[u64; 16]) {
    let size = u64::from(ins.memory_size().size().max(1) as u32);
    let len = if ins.has_rep_prefix() { regs[1] } else { 1 }.saturating_mul(size);
    // (A count gone below zero, unace's, would have written up to where memory ends and
    // faulted there: only that much is corrupt, not a gigabyte of shadow made.)
    st.mem().set_range(regs[7], mapped_prefix(regs[7], len.min(1 << 30)), 1);
    ctx.callout_regs[7] = regs[7].wrapping_add(len);
    if string_copy(ins) {
        ctx.callout_regs[6] = regs[6].wrapping_add(len);
    }
    if ins.has_rep_prefix() {
        ctx.callout_regs[1] = 0;
    }
    go_on_at(ctx, st, ins.next_ip());
}

/// How many of the `len` bytes from `addr` lie in memory mapped without a gap (a copy running
/// on past them faults at the first unmapped page): a binary search on `mincore`, which fails
/// for a range with an unmapped page.
fn mapped_prefix(addr: u64, len: u64) -> u64 {
    let first = addr & !4095;
    let pages = (addr.saturating_add(len) - first).div_ceil(4096);
    let mut residency = vec![0u8; pages as usize];
    let mut mapped = |n: u64| {
        // SAFETY: mincore only reads the page tables of the range and writes one byte per
        // page into `residency`, which holds `pages` >= `n` of them.
        n == 0 || unsafe { libc::mincore(first as *mut libc::c_void, (n * 4096) as usize, residency.as_mut_ptr()) } == 0
    };
    if mapped(pages) {
        return len;
    }
    let (mut lo, mut hi) = (0, pages);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if mapped(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (first + lo * 4096).saturating_sub(addr).min(len)
}

/// A string copy: `movs`.
pub(super) fn string_copy(ins: &Instruction) -> bool {
    matches!(ins.mnemonic(), Mnemonic::Movsb | Mnemonic::Movsw | Mnemonic::Movsd | Mnemonic::Movsq)
}

/// A string store: `movs` or `stos`.
pub(super) fn string_store(ins: &Instruction) -> bool {
    string_copy(ins) || matches!(ins.mnemonic(), Mnemonic::Stosb | Mnemonic::Stosw | Mnemonic::Stosd | Mnemonic::Stosq)
}

/// Bytes an instruction's memory destination covers.
fn info_store_size(ins: &Instruction) -> u64 {
    let info = InstructionInfoFactory::new().info(ins).clone();
    info.used_memory().iter().filter(|m| writes(m.access())).map(|m| m.memory_size().size().max(1) as u64).max().unwrap_or(8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtgrind_jit::iced_x86::{Decoder, DecoderOptions};

    #[test]
    fn addresses_come_from_the_guest_registers_where_the_tool_borrowed_some() {
        // `add dword [rbp-8], 1`, with rbp lent to the tool's code at the call-out: the
        // register holds the tool's value, the guest's waits in its spill slot.
        let ins = Decoder::with_ip(64, &[0x83, 0x45, 0xf8, 0x01], 0x1000, DecoderOptions::NONE).decode();
        let mut ctx = ThreadContext::new_boxed();
        ctx.callout_regs[5] = 0x4000;
        ctx.tool_spill[5] = 0x7fff_0000;
        assert_eq!(address(&ctx, &guest_regs(&ctx, 1 << 5), &ins), Some(0x7fff_0000 - 8));
        assert_eq!(address(&ctx, &guest_regs(&ctx, 0), &ins), Some(0x4000 - 8));
    }

    #[test]
    fn a_rip_relative_store_is_addressed_once() {
        // `mov dword [rip+100h], 1` at 0x1000 (10 bytes): the global at 0x110a, as the
        // suppressed store's bytes to mark corrupt (the next pc was added twice before).
        let ins = Decoder::with_ip(64, &[0xc7, 0x05, 0x00, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00], 0x1000, DecoderOptions::NONE).decode();
        let ctx = ThreadContext::new_boxed();
        assert_eq!(address(&ctx, &guest_regs(&ctx, 0), &ins), Some(0x110a));
    }

    #[test]
    fn a_skipped_copy_is_corrupt_only_up_to_where_memory_ends() {
        // Three pages, the third unmapped: a copy of a gigabyte from the middle of the first
        // would have faulted at the third.
        // SAFETY: a fresh private mapping of our own, partly unmapped again, freed at the end.
        let base =
            unsafe { libc::mmap(std::ptr::null_mut(), 3 * 4096, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) } as u64;
        assert_ne!(base, libc::MAP_FAILED as u64);
        // SAFETY: the third page of the mapping just made.
        assert_eq!(unsafe { libc::munmap((base + 2 * 4096) as *mut libc::c_void, 4096) }, 0);
        assert_eq!(mapped_prefix(base + 100, 1 << 30), 2 * 4096 - 100);
        assert_eq!(mapped_prefix(base + 100, 5000), 5000);
        assert_eq!(mapped_prefix(base + 2 * 4096, 10), 0);
        // SAFETY: the two pages left of the mapping.
        unsafe { libc::munmap(base as *mut libc::c_void, 2 * 4096) };
    }
}
