//! Where `predicates` counts scalar pairs: the instructions that assign an integer variable
//! of the main program, what each assignment is compared with, and the code that reads those
//! integers where the guest keeps them.

use super::locations::{Base, Place, Program, Variable};
use crate::layout::objects::{Frame, Var};
use rtgrind_jit::iced_x86::{Instruction, InstructionInfo, OpAccess, OpKind, Register};
use rtgrind_jit::instrument::code_asm::*;
use rtgrind_jit::instrument::spill_slot;

/// Scalar pairs at most at one assignment (the other variables compared, the first ones).
const MAX_PAIRS: usize = 8;

/// An integer the instrumentation reads: where, its size and whether it is signed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Value {
    at: At,
    size: u8,
    signed: bool,
}

/// A guest register (numbered from rax as iced does), or memory at a guest register plus a
/// displacement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    Reg(u8),
    Mem(u8, i64),
}

/// An assignment to an integer variable, and the other variables it is compared with.
pub struct PairSite {
    pub stored: Value,
    pub others: Vec<Value>,
    pub names: Vec<String>,
}

/// What finding assignments needs of the main program: its rbp-framed functions' integer
/// locals, its DWARF's variables, its file (for lines) and its load bias.
pub struct Finder<'a> {
    pub frames: &'a [Frame],
    pub dwarf: &'a Program,
    pub path: &'a str,
    pub bias: u64,
}

impl Finder<'_> {
    /// The instruction `ins` assigns an integer variable: which, and the others it is compared
    /// with. In an rbp-framed function, a store to a local's slot; elsewhere, a write to the
    /// register or slot DWARF puts a variable in after the instruction.
    pub fn site(&self, ins: &Instruction, info: &InstructionInfo) -> Option<PairSite> {
        let file = ins.ip() - self.bias;
        let i = self.frames.partition_point(|f| f.low <= file).checked_sub(1);
        match i.and_then(|i| self.frames.get(i)).filter(|f| file < f.high) {
            Some(f) => self.rbp_pair_site(f, ins, info),
            None => self.dwarf_pair_site(ins, info),
        }
    }

    /// A store to an integer local of the rbp-framed function `f` (`-O0`).
    fn rbp_pair_site(&self, f: &Frame, ins: &Instruction, info: &InstructionInfo) -> Option<PairSite> {
        if ins.memory_base() != Register::RBP || ins.memory_index() != Register::None || ins.op0_kind() != OpKind::Memory {
            return None;
        }
        if !info.used_memory().iter().any(|m| matches!(m.access(), OpAccess::Write | OpAccess::ReadWrite)) {
            return None;
        }
        let file = ins.ip() - self.bias;
        let at = ins.memory_displacement64() as i64;
        let size = ins.memory_size().size() as u64;
        let stored = f.locals.iter().find(|l| l.at == at && l.size == size)?;
        // The prologue's stores (a parameter to its slot, on the function's first line) would
        // compare it with locals not yet given a value.
        if file < crate::report::debuginfo::prologue_end(self.path, f.low, f.high) {
            return None;
        }
        let others: Vec<&Var> = f.locals.iter().filter(|l| l.at != at).take(MAX_PAIRS).collect();
        let local = |v: &Var| Value { at: At::Mem(5, v.at), size: v.size as u8, signed: true };
        (!others.is_empty()).then(|| PairSite {
            stored: local(stored),
            others: others.iter().map(|o| local(o)).collect(),
            names: others.iter().map(|o| format!("{} {}", stored.name, o.name)).collect(),
        })
    }

    /// An instruction of optimized code that writes the register or the frame slot DWARF
    /// puts an integer variable in just after it; compared with the other variables of the
    /// same scope that have a place there (a register or a slot of their own).
    fn dwarf_pair_site(&self, ins: &Instruction, info: &InstructionInfo) -> Option<PairSite> {
        let (pc, next) = (ins.ip() - self.bias, ins.next_ip() - self.bias);
        let f = self.dwarf.function(pc).filter(|f| next < f.high)?;
        let writes = |a: OpAccess| matches!(a, OpAccess::Write | OpAccess::ReadWrite | OpAccess::CondWrite | OpAccess::ReadCondWrite);
        let written: u16 = info
            .used_registers()
            .iter()
            .filter(|u| writes(u.access()) && u.register().full_register().is_gpr64())
            .fold(0, |m, u| m | 1 << (u.register().full_register().number() - Register::RAX.number()));
        let gpr = |r: Register| (r.is_gpr64()).then(|| (r.number() - Register::RAX.number()) as u8);
        let store = info
            .used_memory()
            .iter()
            .find(|m| writes(m.access()) && m.index() == Register::None && matches!(m.base(), Register::RSP | Register::RBP))
            .and_then(|m| Some((At::Mem(gpr(m.base())?, m.displacement() as i64), m.memory_size().size() as u8)));
        // Where the instrumentation finds a place before the instruction at `at`.
        let find = |p: Place, at: u64| match p {
            Place::Reg(4) => None,
            Place::Reg(r) => Some(At::Reg(r)),
            Place::Slot(Base::Rsp, k) => Some(At::Mem(4, k)),
            Place::Slot(Base::Rbp, k) => Some(At::Mem(5, k)),
            Place::Slot(Base::Cfa, k) => Some(At::Mem(4, k + self.dwarf.cfa_offset(f, at)?)),
        };
        let assigned = |v: &&Variable| {
            let place = v.at(next)?;
            let hit = match place {
                Place::Reg(r) => written & (1 << r) != 0,
                // (The store's address is the instruction's: rsp as it is before it.)
                Place::Slot(..) => store.is_some_and(|(m, size)| size == v.ty.size && find(place, pc) == Some(m)),
            };
            hit.then_some(place)
        };
        let (stored, place) = f.vars.iter().find_map(|v| Some((v, assigned(&v)?)))?;
        let value = |v: &Variable, p: Place| Some(Value { at: find(p, next)?, size: v.ty.size, signed: v.ty.signed });
        let others: Vec<(&Variable, Value)> = f
            .vars
            .iter()
            .filter(|w| w.scope == stored.scope && !std::ptr::eq(*w, stored))
            .filter_map(|w| w.at(next).filter(|&p| p != place).and_then(|p| Some((w, value(w, p)?))))
            .take(MAX_PAIRS)
            .collect();
        (!others.is_empty()).then_some(PairSite {
            stored: value(stored, place)?,
            names: others.iter().map(|(w, _)| format!("{} {}", stored.name, w.name)).collect(),
            others: others.into_iter().map(|(_, v)| v).collect(),
        })
    }
}

/// `dst` = the guest's integer `v`, sign- or zero-extended to 64 bits; `spilled` the guest
/// registers whose values wait in their spill slots.
pub fn load(a: &mut CodeAssembler, dst: AsmRegister64, v: Value, spilled: u16) {
    let n = |r: AsmRegister64| Register::from(r).number() - Register::RAX.number();
    let guest = |a: &mut CodeAssembler, r: u8| {
        if spilled & (1 << r) != 0 {
            a.mov(dst, qword_ptr(spill_slot(r as usize) as u64).gs()).unwrap();
        } else if n(dst) != r as usize {
            a.mov(dst, get_gpr64(Register::RAX + r as u32).unwrap()).unwrap();
        }
    };
    let (d32, d16, d8) = (get_gpr32(Register::EAX + n(dst) as u32).unwrap(), get_gpr16(Register::AX + n(dst) as u32).unwrap(), gpr8(n(dst)));
    match v.at {
        At::Reg(r) => {
            guest(a, r);
            match (v.size, v.signed) {
                (8, _) => Ok(()),
                (4, true) => a.movsxd(dst, d32),
                (4, false) => a.mov(d32, d32),
                (2, true) => a.movsx(dst, d16),
                (2, false) => a.movzx(dst, d16),
                (_, true) => a.movsx(dst, d8),
                (_, false) => a.movzx(dst, d8),
            }
        }
        At::Mem(base, disp) => {
            let m = if spilled & (1 << base) != 0 {
                guest(a, base);
                dst + disp as i32
            } else {
                get_gpr64(Register::RAX + base as u32).unwrap() + disp as i32
            };
            match (v.size, v.signed) {
                (8, _) => a.mov(dst, qword_ptr(m)),
                (4, true) => a.movsxd(dst, dword_ptr(m)),
                (4, false) => a.mov(d32, dword_ptr(m)),
                (2, true) => a.movsx(dst, word_ptr(m)),
                (2, false) => a.movzx(dst, word_ptr(m)),
                (_, true) => a.movsx(dst, byte_ptr(m)),
                (_, false) => a.movzx(dst, byte_ptr(m)),
            }
        }
    }
    .unwrap();
}

/// The low byte of register `n` (numbered from rax): al, cl, dl, bl, spl, bpl, sil, dil, r8b...
fn gpr8(n: usize) -> AsmRegister8 {
    let r = match n {
        0..=3 => Register::AL + n as u32,
        4..=7 => Register::SPL + (n - 4) as u32,
        _ => Register::R8L + (n - 8) as u32,
    };
    get_gpr8(r).unwrap()
}
