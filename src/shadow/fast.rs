//! The fast version of a taint block (LIFT's fast path): while every register shadow is
//! clean, a block's full propagation would only write clean shadows over clean ones. The fast
//! version checks that instead of propagating:
//! - at block start, that no register may be tainted: only the full version taints registers,
//!   and every way into it sets `slot::DIRTY` (one compare); the full version's start looks
//!   at the registers its block uses and comes back when they are clean;
//! - before each load, that the loaded bytes' shadow is clean, else the thread goes on in the
//!   full version before the same instruction;
//! - stores through the stack pointer clear the shadow of the bytes they write (their value
//!   is clean); other stores check it clean like loads (the full version clears it where
//!   not), so shadow pages of clean data are never written and stay the zero page;
//!   `movs`/`stos` run first on the shadow itself;
//! - an instruction the checks do not handle (other string instructions, whose element count
//!   is known only after they ran; gathers; `xsave` areas and other odd sizes) sends the
//!   thread to the full version.
//!
//! So the fast version keeps exactly the shadow state the full one would, and taint that
//! enters memory (a `read` of input) sends the code that touches it to the full version.
//! With origins, the taint tool propagates them in the fast version too, after the checks.

use super::memory::GUARD;
use super::propagate::{effective_address, r32, shadow_delta_of, summary_bytes_of, through_plain_base, vector_number, wide_temporaries, writes, Propagation};
use super::slot;
use rtgrind_jit::iced_x86::{Instruction, InstructionInfo, Mnemonic, OpAccess, OpKind, Register, UsedMemory};
use rtgrind_jit::instrument::code_asm::*;
use rtgrind_jit::instrument::{tool_area, BlockCode, Inline, InsnSite, Version, When};
use std::collections::HashMap;

/// Whether blocks get a fast version (`RTGRIND_FAST_PATH=0` turns it off, for comparisons).
pub fn enabled() -> bool {
    std::env::var("RTGRIND_FAST_PATH").map_or(true, |v| v != "0")
}

/// The registers a block reads or writes, whose shadows its fast version needs clean.
#[derive(Clone, Debug, Default)]
pub struct BlockUse {
    /// General registers (bit = number, rax = 0).
    gprs: u16,
    /// Vector registers xmm/ymm 0-15.
    vecs: u16,
    /// The status flags.
    flags: bool,
    /// Base registers other than the stack pointer that more than one memory access goes
    /// through (bit = number): worth keeping per-block values for (`Propagation::block_bases`).
    pub bases: u16,
    /// Memory is accessed through the stack pointer (pushes, pops, calls, returns too).
    stack: bool,
    /// Loads checked together with others (`plan_checks`), by (instruction address, index
    /// among its loads); the others are checked by their instruction.
    checks: HashMap<(u64, usize), Check>,
}

/// How the fast version checks a load that does not go with its instruction's other loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Check {
    /// The bytes `[lo, hi)` from its base register here, which later loads of the block
    /// through that register read within: checked at once for all of them.
    Span(i32, i32),
    /// Within an earlier load's `Span`.
    Covered,
}

/// Longest span one check covers (four 32-byte shadow loads).
const MAX_SPAN: i64 = 128;

/// The accesses of `info` the fast version checks clean, in order: reads, conditional writes,
/// and stores other than through the stack pointer (see `FastBlock::before`).
fn checked_of(info: &InstructionInfo) -> impl Iterator<Item = &UsedMemory> {
    info.used_memory().iter().filter(|m| accesses_memory(m) && !clears(m))
}

/// Whether the fast version clears the shadow of access `m` (a store through the stack
/// pointer) rather than checking it.
fn clears(m: &UsedMemory) -> bool {
    m.access() == OpAccess::Write && m.base() == Register::RSP
}

/// Groups the checked accesses (`checked_of`) of a block that go through one base register
/// which stays put or moves by constants between them (the unrolled vector loads and stores of
/// a string routine, the pops of an epilogue) so the fast version checks their shadow at the
/// first of them: with one wide load per 32 bytes (AVX-512 temporaries; without them only the
/// stack's are grouped), or for the stack one qword compare per 8 bytes (its shadow was mostly
/// just written by qword stores, which a wider load cannot take from the store buffer: it
/// would wait for them to retire). An epilogue's pops are then checked where the flags are
/// free, before the arithmetic that makes them live up to the `ret`.
/// Sound because the fast version writes shadow memory only to clear it (its stores store
/// clean values): bytes clean at the first access are clean at the later ones, and a tainted
/// byte only sends the thread to the full version earlier. `movs`/`stos` copy shadow, so no
/// group spans one.
fn plan_checks(code: &BlockCode) -> HashMap<(u64, usize), Check> {
    struct Group {
        base: Register,
        /// How far the base moved since the first load.
        drift: i64,
        lo: i64,
        hi: i64,
        first: (u64, usize),
        rest: Vec<(u64, usize)>,
    }
    fn close(g: Group, plan: &mut HashMap<(u64, usize), Check>) {
        if !g.rest.is_empty() {
            plan.insert(g.first, Check::Span(g.lo as i32, g.hi as i32));
            plan.extend(g.rest.into_iter().map(|k| (k, Check::Covered)));
        }
    }
    let mut plan = HashMap::new();
    let wide = wide_temporaries();
    let mut open: Vec<Group> = Vec::new();
    for (ins, info) in code.analysed() {
        if is_block_move(ins) || !handled(ins, info) {
            open.drain(..).for_each(|g| close(g, &mut plan));
            continue;
        }
        for (k, m) in checked_of(info).enumerate() {
            let disp = m.displacement() as i64;
            let plain = through_plain_base(m) && (wide || m.base() == Register::RSP);
            if !plain || disp.unsigned_abs() >= GUARD / 4 {
                continue;
            }
            let size = m.memory_size().size() as i64;
            let key = (ins.ip(), k);
            if let Some(i) = open.iter().position(|g| g.base == m.base()) {
                let g = &mut open[i];
                let (lo, hi) = (g.lo.min(g.drift + disp), g.hi.max(g.drift + disp + size));
                if hi - lo <= MAX_SPAN {
                    (g.lo, g.hi) = (lo, hi);
                    g.rest.push(key);
                    continue;
                }
                close(open.swap_remove(i), &mut plan);
            }
            open.push(Group { base: m.base(), drift: 0, lo: disp, hi: disp + size, first: key, rest: Vec::new() });
        }
        // (After the loads: an instruction reads memory through its base's old value.)
        let mut i = 0;
        while i < open.len() {
            match base_step(open[i].base, ins, info) {
                Some(s) if (open[i].drift + s).unsigned_abs() < GUARD / 4 => {
                    open[i].drift += s;
                    i += 1;
                }
                _ => close(open.swap_remove(i), &mut plan),
            }
        }
    }
    open.drain(..).for_each(|g| close(g, &mut plan));
    plan
}

const STATUS_FLAGS: u32 = 0x3f; // iced RflagsBits OF SF ZF AF CF PF

/// Sizes the fast checks handle.
fn fast_size(n: usize) -> bool {
    matches!(n, 1 | 2 | 4 | 8 | 16 | 32)
}

fn accesses_memory(m: &UsedMemory) -> bool {
    m.access() != OpAccess::NoMemAccess
}

/// Whether the fast version handles `ins`: memory accesses of the sizes the checks handle at
/// one address each, no string instruction.
fn handled(ins: &Instruction, info: &InstructionInfo) -> bool {
    !(ins.is_string_instruction() || ins.has_rep_prefix() || ins.has_repne_prefix() || ins.mnemonic() == Mnemonic::Enter)
        && info
            .used_memory()
            .iter()
            .filter(|m| accesses_memory(m))
            .all(|m| fast_size(m.memory_size().size()) && !(m.index().is_xmm() || m.index().is_ymm() || m.index().is_zmm()))
}

/// `movs`/`stos` with flat 64-bit addressing, which the fast version replays on the shadow.
fn is_block_move(ins: &Instruction) -> bool {
    use Mnemonic::*;
    matches!(ins.mnemonic(), Movsb | Movsw | Movsd | Movsq | Stosb | Stosw | Stosd | Stosq)
        && ins.is_string_instruction()
        && ins.segment_prefix() == Register::None
        && !ins.has_repne_prefix()
        && !matches!(ins.op0_kind(), OpKind::MemoryESDI | OpKind::MemorySegSI | OpKind::MemorySegESI | OpKind::MemoryESEDI)
        && !matches!(ins.op1_kind(), OpKind::MemorySegESI | OpKind::MemorySegSI)
}

/// The bytes of `ins` (a string instruction: no operand depends on where it is).
fn encode(ins: &Instruction) -> Vec<u8> {
    let mut e = rtgrind_jit::iced_x86::Encoder::new(64);
    e.encode(ins, 0).expect("a string instruction encodes");
    e.take_buffer()
}

/// What the block whose reachable code is `insns` uses.
pub fn block_use(code: &BlockCode) -> BlockUse {
    let mut u = BlockUse::default();
    let mut seen_base = 0u16;
    for (ins, info) in code.analysed() {
        u.stack |= info.used_memory().iter().any(|m| accesses_memory(m) && m.base() == Register::RSP);
        for m in info.used_memory().iter().filter(|m| accesses_memory(m) && m.base().is_gpr64() && m.base() != Register::RSP) {
            let bit = base_bit(m.base());
            u.bases |= seen_base & bit;
            seen_base |= bit;
        }
        let mut mark = |r: Register| {
            if r.is_gpr() {
                u.gprs |= 1 << (r.full_register().number() - Register::RAX.number());
            } else if let Some(n) = vector_number(r) {
                u.vecs |= 1 << n;
            }
        };
        for i in 0..ins.op_count() {
            if ins.op_kind(i) == OpKind::Register {
                mark(ins.op_register(i));
            }
        }
        for r in info.used_registers() {
            mark(r.register());
        }
        if (ins.rflags_read() | ins.rflags_modified()) & STATUS_FLAGS != 0 {
            u.flags = true;
        }
    }
    u.checks = plan_checks(code);
    u
}

/// Tool-area slots of every register shadow.
fn all_shadow_slots() -> impl Iterator<Item = usize> {
    (0..16).map(super::gpr_slot).chain((0..16).map(|n| slot::VEC + 8 * n)).chain([slot::FLAGS])
}

/// The fast version's block-start code: the full version if a register's shadow may be
/// tainted. Only the full version taints registers, and every way into it marks
/// `slot::DIRTY`, so the test is one compare (`full_start` looks closer). With
/// `aligned_stack`, also if the stack pointer is not a multiple of 8 (see
/// `Propagation::stack_aligned`).
pub fn select(b: &mut Inline, aligned_stack: bool) {
    let dirty = qword_ptr(tool_area(slot::DIRTY)).gs();
    if b.flags_live() {
        let acc = b.scratch_rcx().expect("nothing is in use at a block start");
        b.asm().mov(acc, dirty).unwrap();
        b.full_version_if(When::RcxNonZero);
        if aligned_stack {
            // Flag-free: rcx = rsp << 61 is zero only if rsp's low three bits are.
            let a = b.asm();
            a.mov(ecx, 61).unwrap();
            a.shlx(rcx, rsp, rcx).unwrap();
            b.full_version_if(When::RcxNonZero);
        }
        return;
    }
    b.asm().cmp(dirty, 0).unwrap();
    b.full_version_if(When::NotZero);
    if aligned_stack {
        b.asm().test(spl, 7).unwrap();
        b.full_version_if(When::NotZero);
    }
}

/// The full version's block-start code (reached only while `slot::DIRTY` is set): back to the
/// fast version if the registers this block uses are clean, clearing the mark if all are.
/// Where the guest's flags are live the block stays in its full version.
pub fn full_start(b: &mut Inline, u: &BlockUse, aligned_stack: bool) {
    if b.flags_live() {
        return;
    }
    let q = |s: usize| qword_ptr(tool_area(s)).gs();
    let mut block = Vec::new();
    block.extend((0..16).filter(|n| u.gprs & (1 << n) != 0).map(super::gpr_slot));
    block.extend((0..16).filter(|n| u.vecs & (1 << n) != 0).map(|n| slot::VEC + 8 * n));
    if u.flags {
        block.push(slot::FLAGS);
    }
    let acc = b.scratch();
    let other = b.scratch();
    let a = b.asm();
    let (mut done, mut others) = (a.create_label(), a.create_label());
    // Every path to `done` leaves ZF set if and only if the fast version may run.
    if aligned_stack {
        a.test(spl, 7).unwrap();
        a.jnz(done).unwrap();
    }
    // The block's slots or-ed into two registers by turns, then together: half the chain of
    // dependent `or`s (in a tainted loop this runs at every entry into the block).
    a.xor(acc, acc).unwrap();
    a.xor(other, other).unwrap();
    for (i, &s) in block.iter().enumerate() {
        a.or(if i % 2 == 0 { acc } else { other }, q(s)).unwrap();
    }
    a.or(acc, other).unwrap();
    a.jnz(done).unwrap();
    for s in all_shadow_slots() {
        a.or(acc, q(s)).unwrap();
    }
    a.jnz(others).unwrap();
    a.mov(q(slot::DIRTY), 0).unwrap();
    a.set_label(&mut others).unwrap();
    a.xor(acc, acc).unwrap();
    a.set_label(&mut done).unwrap();
    a.zero_bytes().unwrap();
    b.fast_version_if(When::Zero);
}

/// A tool's block-start code when blocks have two versions (see `Tool::two_versions`): the
/// version test and the block count. The fast version counts the block once it stays there;
/// the full one counts it before it may go back to the fast one's body, past that count.
/// Translating the fast version starts a new `fast_block`. `counted`: the tool's code right
/// after the count, which runs once per block entered whichever version counts it.
pub fn block_start(b: &mut Inline, prop: &mut Propagation, block_use: &BlockUse, fast_block: &mut FastBlock, counted: &mut dyn FnMut(&mut Inline)) {
    // Origins assume an 8-aligned stack pointer in the fast version (checked here).
    let aligned_stack = prop.origins.is_some() && block_use.stack;
    match b.version() {
        Version::Fast => {
            *fast_block = FastBlock::new(prop.taint_table, prop.summary, prop.origins.is_some(), block_use);
            select(b, aligned_stack);
            b.release_scratch();
            prop.block_start(b);
            counted(b);
            prop.block_bases = block_use.bases;
            prop.stack_aligned = aligned_stack;
        }
        Version::Full => {
            prop.block_start(b);
            counted(b);
            b.release_scratch();
            full_start(b, block_use, aligned_stack);
        }
        Version::Only => {
            prop.block_start(b);
            counted(b);
        }
    }
}

/// Code on every way into a full version: registers may get tainted there.
pub fn mark_dirty(b: &mut Inline) {
    b.asm().mov(qword_ptr(tool_area(slot::DIRTY)).gs(), 1).unwrap();
}

/// The fast version's code for one block's instructions, in order.
pub struct FastBlock {
    /// The taint shadow's delta table.
    table: u32,
    /// Its summary (`memory.rs`), or 0: checks off the stack test the summary first.
    summary: u32,
    /// Emitting checks that run only where the summary is marked: no delta may be cached.
    guarded: bool,
    /// Base registers whose slice's delta a register holds, with how far the base moved
    /// since (by constants: pushes and pops, `add`/`sub`/`lea`/`inc`/`dec`); kept from the
    /// tool's other code (`Inline::keep`). The delta stays right while the drift and the
    /// displacement stay within the shadow slices' guards.
    bases: Vec<(Register, AsmRegister64, i64)>,
    /// Base registers other than the stack pointer that more than one access of the block
    /// goes through (`BlockUse::bases`): only theirs are worth a kept register.
    shared_bases: u16,
    /// Origins propagate too, after the checks: `movs`/`stos` are left to the propagation's
    /// call-out after they ran (it moves origins, and taint with them), other string
    /// instructions go to the full version.
    origins: bool,
    /// Loads checked with others (`BlockUse::checks`).
    checks: HashMap<(u64, usize), Check>,
}

impl FastBlock {
    pub fn new(table: u32, summary: u32, origins: bool, u: &BlockUse) -> FastBlock {
        FastBlock { table, summary, guarded: false, bases: Vec::new(), shared_bases: u.bases, origins, checks: u.checks.clone() }
    }

    /// Forgets the cached deltas (code after `before` borrowed their registers).
    pub fn forget_stack(&mut self) {
        self.bases.clear();
    }

    /// The code before an instruction: loads checked clean (else the full version), then
    /// stores' shadow cleared. False if the instruction always runs in the full version.
    pub fn before(&mut self, site: &InsnSite, b: &mut Inline) -> bool {
        // The cached deltas' registers are kept from other uses here, if they still hold
        // them (and the instruction leaves registers enough for the code around it).
        if b.free_registers() < 8 + self.bases.len() as u32 {
            self.bases.clear();
        }
        self.bases.retain(|&(_, r, _)| b.reuse(r));
        for &(_, r, _) in &self.bases {
            b.keep(r);
        }
        if is_block_move(site.ins) {
            if self.origins {
                // The propagation's call-out after the instruction moves origins and taint
                // (memory to memory: no register gets tainted); it may borrow any register.
                self.bases.clear();
            } else if self.summary != 0 {
                self.block_move_summarized(site.ins, b);
            } else {
                self.block_move(site.ins, b);
            }
            return true;
        }
        if !handled(site.ins, site.info) {
            b.full_version_if(When::Always);
            self.bases.clear();
            return false;
        }
        // A store leaves its bytes' shadow clean. Off the stack, checking it clean (the full
        // version clears it where not) beats clearing it: shadow never written stays the
        // kernel's zero page, so clean data's shadow costs no memory and no cache, where
        // clearing it would double the footprint of data the guest streams through. The
        // stack's shadow is hot anyway, and a store there is cheaper than a check.
        let (mut loads, mut spans) = (Vec::new(), Vec::new());
        for (k, m) in checked_of(site.info).enumerate() {
            match self.checks.get(&(site.ins.ip(), k)) {
                None => loads.push(*m),
                Some(&Check::Span(lo, hi)) => spans.push((*m, lo, hi)),
                Some(Check::Covered) => {}
            }
        }
        let all: Vec<UsedMemory> = loads.iter().copied().chain(spans.iter().map(|s| s.0)).collect();
        let counter = (!all.is_empty() && b.flags_live()).then(|| b.scratch_rcx()).flatten();
        // Off the stack, the summary first: the checks below run only where it is marked.
        let clean = (self.summary != 0 && !all.is_empty() && all.iter().all(|m| m.base() != Register::RSP)).then(|| self.summary_test(b, &all, counter));
        self.guarded = clean.is_some();
        for (m, lo, hi) in &spans {
            self.check_span(b, m, *lo, *hi, counter);
        }
        if !loads.is_empty() {
            self.check_loads(b, &loads, counter);
        }
        self.guarded = false;
        if let Some(mut clean) = clean {
            let a = b.asm();
            a.set_label(&mut clean).unwrap();
            a.zero_bytes().unwrap();
        }
        let stack_stores: Vec<UsedMemory> = site.info.used_memory().iter().filter(|m| accesses_memory(m) && clears(m)).copied().collect();
        for m in &stack_stores {
            let (x, d, disp) = self.shadow_of(b, m);
            let a = b.asm();
            match m.memory_size().size() {
                1 => a.mov(byte_ptr(x + d + disp), 0).unwrap(),
                2 => a.mov(word_ptr(x + d + disp), 0).unwrap(),
                4 => a.mov(dword_ptr(x + d + disp), 0).unwrap(),
                n @ (16 | 32) if wide_temporaries() => {
                    a.vpxord(xmm20, xmm20, xmm20).unwrap();
                    if n == 32 {
                        a.vmovdqu64(ymmword_ptr(x + d + disp), ymm20).unwrap();
                    } else {
                        a.vmovdqu64(xmmword_ptr(x + d + disp), xmm20).unwrap();
                    }
                }
                n => {
                    for k in 0..n as i32 / 8 {
                        a.mov(qword_ptr(x + d + (disp + 8 * k)), 0).unwrap();
                    }
                }
            }
        }
        self.track_bases(site.ins, site.info);
        true
    }

    /// `movs`/`stos` (with or without `rep`): the same instruction, run first on the shadow
    /// with rsi and rdi moved to their shadows, copies the source's shadow (data moves from
    /// memory to memory, so no register gets tainted) or clears the destination's (the stored
    /// register is clean here), element by element in the guest's direction. Flag-free.
    fn block_move(&mut self, ins: &Instruction, b: &mut Inline) {
        let t = b.scratch();
        let q = |s: usize| qword_ptr(tool_area(s)).gs();
        let movs = matches!(ins.mnemonic(), Mnemonic::Movsb | Mnemonic::Movsw | Mnemonic::Movsd | Mnemonic::Movsq);
        let table = self.table;
        let a = b.asm();
        a.mov(q(slot::STR_RCX), rcx).unwrap();
        a.mov(q(slot::STR_RDI), rdi).unwrap();
        let (saved, other) = if movs { (slot::STR_RSI, rsi) } else { (slot::TMP_EA, rax) };
        a.mov(q(saved), other).unwrap();
        let to_shadow = |b: &mut Inline, r: AsmRegister64| {
            shadow_delta_of(b, r, t, table);
            b.asm().lea(r, qword_ptr(r + t)).unwrap();
        };
        to_shadow(b, rdi);
        if movs {
            to_shadow(b, rsi);
        } else {
            b.asm().mov(eax, 0).unwrap();
        }
        // The guest's own encoding: same element size, same `rep`.
        b.asm().db(&encode(ins)).unwrap();
        let a = b.asm();
        a.mov(rcx, q(slot::STR_RCX)).unwrap();
        a.mov(rdi, q(slot::STR_RDI)).unwrap();
        a.mov(other, q(saved)).unwrap();
    }

    /// `movs`/`stos` with a summary. Where the summary shows the chunks around rdi (and rsi)
    /// clean and the move is under 64 KiB (within a chunk of them), the shadow of both ranges
    /// is zero, and stays so: nothing to do. Elsewhere a `stos` clears the destination's
    /// shadow as `block_move` does, and a `movs` goes to the full version, whose call-out
    /// copies the shadow and marks the summary (a copy here could carry taint unmarked).
    fn block_move_summarized(&mut self, ins: &Instruction, b: &mut Inline) {
        let movs = matches!(ins.mnemonic(), Mnemonic::Movsb | Mnemonic::Movsw | Mnemonic::Movsd | Mnemonic::Movsq);
        let (t, u) = (b.scratch(), b.scratch());
        let a = b.asm();
        if ins.has_rep_prefix() {
            // Non-zero from 8192 elements (64 KiB of qwords) on.
            a.mov(t, !0x1fffu64).unwrap();
            a.pext(t, rcx, t).unwrap();
        } else {
            a.xor(r32(t), r32(t)).unwrap();
        }
        let ends: &[AsmRegister64] = if movs { &[rdi, rsi] } else { &[rdi] };
        for &r in ends {
            let bytes = summary_bytes_of(a, r, u, self.summary);
            a.mov(r32(u), bytes).unwrap();
            a.add(t, u).unwrap();
        }
        b.clobber_flags();
        if movs {
            b.full_version_if(When::NotZero);
            return;
        }
        let mut clean = b.asm().create_label();
        b.asm().je(clean).unwrap();
        b.release_scratch();
        self.block_move(ins, b);
        let a = b.asm();
        a.set_label(&mut clean).unwrap();
        a.zero_bytes().unwrap();
    }

    /// How the instruction moves the cached bases: by a constant, or anyhow (forget).
    fn track_bases(&mut self, ins: &Instruction, info: &InstructionInfo) {
        self.bases.retain_mut(|(base, _, drift)| base_step(*base, ins, info).map(|s| *drift += s).is_some() && drift.unsigned_abs() < GUARD / 2);
    }

    /// `(x, d, disp)` such that `[x + d + disp]` is the shadow of access `m`, in registers
    /// borrowed here: with a plain base register and a displacement under the shadow slices'
    /// guards, the base register itself (no `lea`); the stack pointer's delta is computed once
    /// per block while the stack pointer moves by constants; otherwise the effective address
    /// goes into a register.
    fn shadow_of(&mut self, b: &mut Inline, m: &UsedMemory) -> (AsmRegister64, AsmRegister64, i32) {
        let disp = m.displacement() as i64;
        let plain = through_plain_base(m);
        if plain && disp.unsigned_abs() < GUARD / 2 {
            let x = get_gpr64(m.base()).expect("a 64-bit register");
            // (`before` kept the cached registers for this instruction.)
            if let Some(&(_, d, _)) = self.bases.iter().find(|e| e.0 == m.base()) {
                return (x, d, disp as i32);
            }
            let shared = m.base() == Register::RSP || self.shared_bases & base_bit(m.base()) != 0;
            let kept = shared && self.bases.len() < MAX_BASES && !self.guarded;
            let d = if kept { b.scratch() } else { b.scratch_short() };
            shadow_delta_of(b, x, d, self.table);
            if kept {
                b.keep(d);
                self.bases.push((m.base(), d, 0));
            }
            return (x, d, disp as i32);
        }
        let (e, d) = (b.scratch_short(), b.scratch_short());
        effective_address(b, e, m, d);
        shadow_delta_of(b, e, d, self.table);
        (e, d, 0)
    }

    /// Jumps to the returned label (to bind after the checks of `ms`) if the summary shows
    /// every chunk the accesses `ms` can reach clean: the four summary bytes from the chunk
    /// before the address's (of its base register: displacements and spans stay within one
    /// chunk of it). Flag-free through `counter` (rcx) if given: summary bytes are 0 or 1,
    /// so a sum of a few dwords is zero only if all are.
    fn summary_test(&mut self, b: &mut Inline, ms: &[UsedMemory], counter: Option<AsmRegister64>) -> CodeLabel {
        let mut seen: Vec<(Register, Register, i32, u32)> = Vec::new();
        let mut acc: Option<AsmRegister64> = None;
        for m in ms {
            let key = (m.base(), m.index(), m.displacement() as i32, m.scale());
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            // The summary bytes: at a fixed address for a RIP-relative or absolute access, else from the
            // `pext` of its base register or of its address computed into a register of its own.
            let fixed = (matches!(m.base(), Register::RIP | Register::None) && m.index() == Register::None).then(|| {
                let addr = m.displacement();
                self.summary as u64 - 1 + ((addr & super::memory::ADDR_MASK) >> super::memory::SUMMARY_BITS)
            });
            let (bytes, held) = match fixed {
                Some(at) => (dword_ptr(at), None),
                None => {
                    let (x, own) = if through_plain_base(m) && (m.displacement() as i64).unsigned_abs() < GUARD / 2 {
                        (get_gpr64(m.base()).expect("a 64-bit register"), None)
                    } else {
                        let (e, t) = (b.scratch_short(), b.scratch_short());
                        effective_address(b, e, m, t);
                        b.give_back(t);
                        (e, Some(e))
                    };
                    // Into rcx if it is the first counter, else a register given back below.
                    let t = match (acc, counter) {
                        (None, Some(c)) => c,
                        _ => own.unwrap_or_else(|| b.scratch_short()),
                    };
                    let bytes = summary_bytes_of(b.asm(), x, t, self.summary);
                    if let Some(e) = own.filter(|&e| e != t) {
                        b.give_back(e);
                    }
                    (bytes, Some(t))
                }
            };
            let give_back = |b: &mut Inline, r: Option<AsmRegister64>| {
                if let Some(r) = r.filter(|&r| Some(r) != counter) {
                    b.give_back(r);
                }
            };
            match (acc, counter) {
                (None, Some(c)) => {
                    b.asm().mov(r32(c), bytes).unwrap();
                    acc = Some(c);
                }
                (None, None) if ms.len() == 1 => {
                    b.asm().cmp(bytes, 0).unwrap();
                    give_back(b, held);
                }
                (None, None) => {
                    let t = held.unwrap_or_else(|| b.scratch_short());
                    b.asm().mov(r32(t), bytes).unwrap();
                    acc = Some(t);
                }
                (Some(s), _) => {
                    let t = held.unwrap_or_else(|| b.scratch_short());
                    let a = b.asm();
                    a.mov(r32(t), bytes).unwrap();
                    a.lea(s, qword_ptr(s + t)).unwrap();
                    b.give_back(t);
                }
            }
        }
        let a = b.asm();
        let clean = a.create_label();
        match (acc, counter) {
            (_, Some(_)) => a.jrcxz(clean).unwrap(),
            (Some(s), None) => {
                a.test(s, s).unwrap();
                a.je(clean).unwrap();
                b.give_back(s);
            }
            (None, None) => a.je(clean).unwrap(),
        }
        if counter.is_none() {
            b.clobber_flags();
        }
        clean
    }

    /// Goes on in the full version if any byte of `[lo, hi)` from the base register of `m`
    /// is tainted (a `Check::Span`): one shadow load per 32 bytes, `or`ed together, or for
    /// the stack one qword compare per 8 bytes.
    fn check_span(&mut self, b: &mut Inline, m: &UsedMemory, lo: i32, hi: i32, counter: Option<AsmRegister64>) {
        let (x, d, _) = self.shadow_of(b, m);
        if m.base() != Register::RSP {
            return Self::check_bytes(b, counter, x, d, lo, hi);
        }
        for k in (lo..hi).step_by(8) {
            Self::check_bytes(b, counter, x, d, k, k + 8);
        }
    }

    /// Goes on in the full version if any of the shadow bytes `[x + d + lo, x + d + hi)` is
    /// not zero (qword granular: it may look up to 7 bytes further); flag-free through
    /// `counter` (rcx) if the flags are live.
    fn check_bytes(b: &mut Inline, counter: Option<AsmRegister64>, x: AsmRegister64, d: AsmRegister64, lo: i32, hi: i32) {
        let a = b.asm();
        if hi - lo <= 8 {
            match counter {
                Some(c) => a.mov(c, qword_ptr(x + d + lo)).unwrap(),
                None => a.cmp(qword_ptr(x + d + lo), 0).unwrap(),
            }
        } else {
            if hi - lo <= 16 {
                a.vmovdqu64(xmm20, xmmword_ptr(x + d + lo)).unwrap();
            } else {
                a.vmovdqu64(ymm20, ymmword_ptr(x + d + lo)).unwrap();
                for k in (lo + 32..hi).step_by(32) {
                    a.vpord(ymm20, ymm20, ymmword_ptr(x + d + k)).unwrap();
                }
            }
            a.vptestmq(k2, ymm20, ymm20).unwrap();
            match counter {
                Some(c) => a.kmovw(r32(c), k2).unwrap(),
                None => a.kortestw(k2, k2).unwrap(),
            }
        }
        b.full_version_if(if counter.is_some() { When::RcxNonZero } else { When::NotZero });
    }

    /// Goes on in the full version if any byte the instruction reads (or may write, for
    /// conditional writes, which keep the old shadow where they do not write) or stores off
    /// the stack is tainted.
    fn check_loads(&mut self, b: &mut Inline, loads: &[UsedMemory], counter: Option<AsmRegister64>) {
        if let [m] = loads {
            let size = m.memory_size().size() as i32;
            if size > 8 && wide_temporaries() {
                let (x, d, disp) = self.shadow_of(b, m);
                return Self::check_bytes(b, counter, x, d, disp, disp + size);
            }
        }
        let single = loads.len() == 1 && loads[0].memory_size().size() <= 8;
        // Flag-free where the flags are live and rcx is free: shadow bytes are 0 or 1, so the
        // sum of a few shadow qwords is zero only if all are. Elsewhere a single small load is
        // compared in place.
        let flag_free = counter.is_some();
        let acc = counter.or_else(|| (!single).then(|| b.scratch_short()));
        // Where flags may be clobbered, qwords after the first are `or`ed in from memory
        // (whose ZF then says whether all are clean); narrower ones go through `t`.
        let narrow_after_first = loads.iter().skip(1).any(|m| m.memory_size().size() < 8);
        let t = (!single && (flag_free || narrow_after_first)).then(|| b.scratch_short());
        let mut first = true;
        for m in loads {
            let (x, d, disp) = self.shadow_of(b, m);
            let a = b.asm();
            let size = m.memory_size().size();
            if single && !flag_free {
                match size {
                    1 => a.cmp(byte_ptr(x + d + disp), 0).unwrap(),
                    2 => a.cmp(word_ptr(x + d + disp), 0).unwrap(),
                    4 => a.cmp(dword_ptr(x + d + disp), 0).unwrap(),
                    _ => a.cmp(qword_ptr(x + d + disp), 0).unwrap(),
                }
                return b.full_version_if(When::NotZero);
            }
            let acc = acc.expect("an accumulator");
            for k in 0..size.div_ceil(8) as i32 {
                if !first && !flag_free && size >= 8 {
                    a.or(acc, qword_ptr(x + d + (disp + 8 * k))).unwrap();
                    continue;
                }
                let dst = if first { acc } else { t.expect("a second register") };
                match size {
                    1 => a.movzx(r32(dst), byte_ptr(x + d + disp)).unwrap(),
                    2 => a.movzx(r32(dst), word_ptr(x + d + disp)).unwrap(),
                    4 => a.mov(r32(dst), dword_ptr(x + d + disp)).unwrap(),
                    _ => a.mov(dst, qword_ptr(x + d + (disp + 8 * k))).unwrap(),
                }
                match (first, flag_free) {
                    (true, _) => {}
                    (false, true) => a.lea(acc, qword_ptr(acc + dst)).unwrap(),
                    (false, false) => a.or(acc, dst).unwrap(),
                }
                first = false;
            }
        }
        if flag_free {
            b.full_version_if(When::RcxNonZero);
        } else {
            // (More than one qword or load: the last instruction was a 64-bit `or` into acc.)
            b.full_version_if(When::NotZero);
        }
    }
}

/// Base registers whose deltas a fast block keeps at once.
const MAX_BASES: usize = 3;

/// The bit of base register `r` in `BlockUse::bases`.
pub(crate) fn base_bit(r: Register) -> u16 {
    1 << (r.full_register().number() - Register::RAX.number())
}

/// How `ins` moves the 64-bit register `base`: by a constant (a push or pop of the stack
/// pointer, by its operand size: `push ax` moves it by 2; `add`/`sub` of an immediate, `lea
/// base, [base + disp]`, `inc`, `dec` of all 64 bits; 0 if it does not write it), or None
/// (anyhow).
pub(crate) fn base_step(base: Register, ins: &Instruction, info: &InstructionInfo) -> Option<i64> {
    if !info.used_registers().iter().any(|u| u.register().full_register() == base && writes(u.access())) {
        return Some(0);
    }
    let pops_itself = ins.mnemonic() == Mnemonic::Pop && ins.op0_kind() == OpKind::Register && ins.op0_register() == Register::RSP;
    if base == Register::RSP && matches!(ins.mnemonic(), Mnemonic::Push | Mnemonic::Pushfq | Mnemonic::Pop | Mnemonic::Popfq) && !pops_itself {
        return Some(ins.stack_pointer_increment() as i64);
    }
    if ins.op0_kind() != OpKind::Register || ins.op0_register() != base {
        return None;
    }
    match ins.mnemonic() {
        Mnemonic::Add | Mnemonic::Sub if matches!(ins.op1_kind(), OpKind::Immediate8to64 | OpKind::Immediate32to64) => {
            let imm = ins.immediate(1) as i64;
            Some(if ins.mnemonic() == Mnemonic::Add { imm } else { -imm })
        }
        Mnemonic::Lea if ins.memory_base() == base && ins.memory_index() == Register::None => Some(ins.memory_displacement64() as i64),
        Mnemonic::Inc => Some(1),
        Mnemonic::Dec => Some(-1),
        _ => None,
    }
}
