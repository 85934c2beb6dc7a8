//! The guard events a suppression run handles in the code cache (issue 30): an access through
//! a corrupt address, a division by a corrupt value and a plain store of a corrupt value only
//! mark what their instruction writes corrupt (the store's bytes too) and skip it, so a
//! corrupt value driving a hot loop costs a few stores per event instead of a call-out and a
//! way out of the block. Each guard counts its events in its own words (`Guard::events`,
//! `Guard::store_events`); the outcome adds them to the call-outs' counts.

use super::guards::{Guard, GuardKind};
use crate::shadow::{self, slot};
use rtgrind_jit::iced_x86::{CpuidFeature, Instruction, InstructionInfoFactory, OpAccess, Register, UsedMemory};
use rtgrind_jit::instrument::code_asm::{byte_ptr, dword_ptr, qword_ptr, word_ptr, AsmRegister64};
use rtgrind_jit::instrument::{tool_area, Inline, RecordRef};

/// What an instruction writes, as a guard marks it corrupt: tool-area words of general
/// registers (not rsp) and of the low 16 vector registers, and whether it writes the flags.
pub(super) struct Marks {
    pub(super) gprs: Vec<usize>,
    pub(super) vecs: Vec<usize>,
    pub(super) flags: bool,
}

/// The corrupt marks of everything `ins` writes but memory.
pub(super) fn marks(ins: &Instruction) -> Marks {
    let info = InstructionInfoFactory::new().info(ins).clone();
    let mut m = Marks { gprs: Vec::new(), vecs: Vec::new(), flags: ins.rflags_modified() != 0 };
    for u in info.used_registers() {
        if !matches!(u.access(), OpAccess::Write | OpAccess::ReadWrite | OpAccess::CondWrite | OpAccess::ReadCondWrite) {
            continue;
        }
        let r = u.register();
        if r.is_gpr() && r.full_register() != Register::RSP {
            m.gprs.push(shadow::gpr_slot(r.full_register().number() - Register::RAX.number()));
        } else if r.is_xmm() || r.is_ymm() || r.is_zmm() {
            let first = if r.is_xmm() {
                Register::XMM0
            } else if r.is_ymm() {
                Register::YMM0
            } else {
                Register::ZMM0
            };
            let n = r.number() - first.number();
            if n < 16 {
                m.vecs.push(slot::VEC + 8 * n);
            }
        }
    }
    m
}

/// The value a general register's corrupt mark gets, and a vector register's.
pub(super) const GPR_CORRUPT: u64 = 0xff;
pub(super) const VEC_CORRUPT: u64 = 0xffff_ffff;

/// What the suppression counts a guard's inline event as, where the guard's event at `ins`
/// is handled inline: an access through a corrupt address (not a string instruction's, whose
/// registers move on, nor an x87 one's, whose last-instruction pointer the engine tracks
/// through the block) and a division. None: the guard calls out for it (also when
/// `RTGRIND_SUPPRESS_TRACE` asks for every event to be printed).
pub(super) fn inline_event(kind: GuardKind, ins: &Instruction, trace: bool) -> Option<&'static str> {
    if trace || ins.is_string_instruction() || ins.cpuid_features().contains(&CpuidFeature::FPU) {
        return None;
    }
    match kind {
        GuardKind::Access => Some(ACCESS),
        GuardKind::Divide => Some(DIVIDE),
        _ => None,
    }
}

pub(super) const ACCESS: &str = "accesses through a corrupt address";
pub(super) const DIVIDE: &str = "divisions by a corrupt value";
pub(super) const STORE: &str = "stores of a corrupt value";

/// The memory a store of a corrupt value at `ins` marks corrupt, where the event is handled
/// inline: its one memory destination, addressed by general registers (no vector index),
/// of a size the shadow takes in one run (1 to 32 bytes, a power of two).
pub(super) fn inline_store(ins: &Instruction) -> Option<UsedMemory> {
    let info = InstructionInfoFactory::new().info(ins).clone();
    let mut stores =
        info.used_memory().iter().filter(|m| matches!(m.access(), OpAccess::Write | OpAccess::ReadWrite | OpAccess::CondWrite | OpAccess::ReadCondWrite));
    let m = *stores.next()?;
    let plain = |r: Register| r == Register::None || r == Register::RIP || r.is_gpr64();
    let one_run = matches!(m.memory_size().size(), 1 | 2 | 4 | 8 | 16 | 32);
    let segment = matches!(m.segment(), Register::None | Register::DS | Register::SS | Register::ES | Register::FS);
    (stores.next().is_none() && plain(m.base()) && plain(m.index()) && one_run && segment).then_some(m)
}

/// The slots whose corruption makes `ins`'s event an access through a corrupt address: its
/// address registers (not rsp); all of `slots` for a division.
pub(super) fn event_slots(kind: GuardKind, ins: &Instruction, slots: &[usize]) -> Vec<usize> {
    if kind == GuardKind::Divide {
        return slots.to_vec();
    }
    [ins.memory_base(), ins.memory_index()].into_iter().filter_map(shadow::gpr_number).filter(|&n| n != 4).map(shadow::gpr_slot).collect()
}

/// The memory a store event marks: the destination `m`, and the taint shadow's delta table and
/// summary (`Propagation::taint_table`, `summary`).
pub(super) struct StoreMark {
    pub(super) m: UsedMemory,
    pub(super) table: u32,
    pub(super) summary: u32,
}

/// An event of a guard handled inline: it happens when a word at `slots` is non-zero; it
/// marks `marks` (and `store`) corrupt and counts in the word at `count`: a field of the
/// guard's record (the record, the field's offset).
pub(super) struct Event {
    pub(super) slots: Vec<usize>,
    marks: Marks,
    store: Option<StoreMark>,
    count: (RecordRef, u32),
}

/// The events of a guard of `kind` at `ins` (its record `g`, testing `slots`) its code
/// handles inline, in the order to test them (the access through a corrupt address first, as
/// the call-out tells them), and the slots left to the call-out. `shadow`: the taint
/// shadow's delta table and summary.
pub(super) fn split(kind: GuardKind, ins: &Instruction, g: RecordRef, slots: &[usize], trace: bool, (table, summary): (u32, u32)) -> (Vec<Event>, Vec<usize>) {
    if inline_event(kind, ins, trace).is_none() {
        return (Vec::new(), slots.to_vec());
    }
    let first = event_slots(kind, ins, slots);
    let mut rest: Vec<usize> = slots.iter().copied().filter(|s| !first.contains(s)).collect();
    let mut events = Vec::new();
    if !first.is_empty() {
        events.push(Event { slots: first, marks: marks(ins), store: None, count: (g, std::mem::offset_of!(Guard, events) as u32) });
    }
    let store = (kind == GuardKind::Access).then(|| inline_store(ins)).flatten();
    if let Some(m) = store.filter(|_| !rest.is_empty()) {
        let store = Some(StoreMark { m, table, summary });
        let count = (g, std::mem::offset_of!(Guard, store_events) as u32);
        events.push(Event { slots: std::mem::take(&mut rest), marks: marks(ins), store, count });
    }
    (events, rest)
}

/// The event's code, flag-free: what the instruction writes is marked corrupt (for a store,
/// its bytes' shadow), the guard's count goes up by one, and the instruction is skipped (the
/// block goes on past it). `t`, `n` and `a` are registers the builder lent.
pub(super) fn emit(b: &mut Inline, e: &Event, (t, n, a): (AsmRegister64, AsmRegister64, AsmRegister64)) {
    let (marks, (record, field)) = (&e.marks, e.count);
    if let Some(s) = &e.store {
        mark_store(b, s, (a, t, n));
    }
    let a = b.asm();
    for &s in &marks.gprs {
        a.mov(qword_ptr(tool_area(s)).gs(), GPR_CORRUPT as i32).unwrap();
    }
    if !marks.vecs.is_empty() {
        a.mov(t, VEC_CORRUPT).unwrap();
        for &s in &marks.vecs {
            a.mov(qword_ptr(tool_area(s)).gs(), t).unwrap();
        }
    }
    if marks.flags {
        a.mov(qword_ptr(tool_area(slot::FLAGS)).gs(), 1).unwrap();
    }
    // (One thread runs guest code at a time: a plain increment.)
    b.mov_record(t, record, field);
    let a = b.asm();
    a.mov(n, qword_ptr(t)).unwrap();
    a.lea(n, qword_ptr(n + 1)).unwrap();
    a.mov(qword_ptr(t), n).unwrap();
    b.skip_insn();
}

/// Marks the shadow bytes of the store `s` corrupt (1 each, as `ShadowMemory::set_range`) and
/// its chunks in the summary, flag-free: the address in `a`, its shadow in `t`.
fn mark_store(b: &mut Inline, s: &StoreMark, (a, t, u): (AsmRegister64, AsmRegister64, AsmRegister64)) {
    crate::shadow::propagate::effective_address(b, a, &s.m, t);
    crate::shadow::propagate::shadow_address_of(b, a, t, u, s.table);
    let asm = b.asm();
    if s.summary != 0 {
        // The chunk of the first byte and the next one (the last byte's), as stores do.
        asm.pext(u, a, qword_ptr(tool_area(slot::SUMMARY_SEL)).gs()).unwrap();
        asm.mov(word_ptr(u + s.summary as i32), 0x0101).unwrap();
    }
    match s.m.memory_size().size() {
        1 => asm.mov(byte_ptr(t), 1).unwrap(),
        2 => asm.mov(word_ptr(t), 0x0101).unwrap(),
        4 => asm.mov(dword_ptr(t), 0x0101_0101).unwrap(),
        size => {
            asm.mov(u, 0x0101_0101_0101_0101u64).unwrap();
            for k in 0..size / 8 {
                asm.mov(qword_ptr(t + (8 * k) as i32), u).unwrap();
            }
        }
    }
}
