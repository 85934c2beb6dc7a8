//! The guard events a suppression run handles in the code cache (issue 30): an access through
//! a corrupt address and a division by a corrupt value only mark what their instruction
//! writes corrupt and skip it, so a corrupt value driving a hot loop costs a few stores per
//! event instead of a call-out and a way out of the block. Each guard counts its events in
//! its own word (`Guard::events`); the outcome adds them to the call-outs' counts.

use super::guards::GuardKind;
use crate::shadow::{self, slot};
use rtgrind_jit::iced_x86::{CpuidFeature, Instruction, InstructionInfoFactory, OpAccess, Register};
use rtgrind_jit::instrument::code_asm::{qword_ptr, AsmRegister64};
use rtgrind_jit::instrument::{tool_area, Inline};

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

/// The slots whose corruption makes `ins`'s event an access through a corrupt address: its
/// address registers (not rsp); all of `slots` for a division.
pub(super) fn event_slots(kind: GuardKind, ins: &Instruction, slots: &[usize]) -> Vec<usize> {
    if kind == GuardKind::Divide {
        return slots.to_vec();
    }
    [ins.memory_base(), ins.memory_index()].into_iter().filter_map(shadow::gpr_number).filter(|&n| n != 4).map(shadow::gpr_slot).collect()
}

/// The event's code, flag-free: what the instruction writes is marked corrupt, the guard's
/// count at `events` goes up by one, and the instruction is skipped (the block goes on past
/// it). `t` and `n` are registers the builder lent.
pub(super) fn emit(b: &mut Inline, marks: &Marks, events: *const u64, (t, n): (AsmRegister64, AsmRegister64)) {
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
    a.mov(t, events as u64).unwrap();
    a.mov(n, qword_ptr(t)).unwrap();
    a.lea(n, qword_ptr(n + 1)).unwrap();
    a.mov(qword_ptr(t), n).unwrap();
    b.skip_insn();
}
