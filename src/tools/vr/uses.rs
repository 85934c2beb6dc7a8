//! What value replacement replaces at the binary level: a *use* is a data operand an
//! instruction of the main program reads, a general register (8 to 64 bits, not rsp, rbp or
//! rip, not ah..dh) or an integer memory operand (1, 2, 4 or 8 bytes; not fs/gs-relative).
//! Registers that only form an address are not uses, nor are the flags; instructions that
//! transfer control, push, pop or compute an address (`lea`) have none. Values are compared
//! as signed integers of the operand's width.

use rtgrind_jit::iced_x86::{FlowControl, Instruction, InstructionInfo, Mnemonic, OpAccess, OpKind, Register};
use rtgrind_jit::ThreadContext;

/// An instruction's uses are at most this many (the rest are ignored): a checkpoint number
/// holds the use and the alternate in 4 bits (`super::fork`).
pub const MAX_USES: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The register's number (rax = 0 .. r15 = 15).
    Reg(usize),
    Mem,
}

/// One use of an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Use {
    /// The operand's index in the instruction.
    pub op: u32,
    pub place: Place,
    /// Its width in bytes.
    pub bytes: u32,
    /// The instruction writes the location itself: a replaced value is not put back after it.
    pub written: bool,
}

fn gpr_number(r: Register) -> Option<usize> {
    if matches!(r, Register::AH | Register::BH | Register::CH | Register::DH) {
        return None;
    }
    let full = r.full_register();
    (full.is_gpr64() && !matches!(full, Register::RSP | Register::RBP)).then(|| (full as u32 - Register::RAX as u32) as usize)
}

/// The uses of `ins` (`info` its operand accesses), at most `MAX_USES`.
pub fn uses(ins: &Instruction, info: &InstructionInfo) -> Vec<Use> {
    let plain = ins.flow_control() == FlowControl::Next;
    if !plain || matches!(ins.mnemonic(), Mnemonic::Lea | Mnemonic::Push | Mnemonic::Pop | Mnemonic::Nop | Mnemonic::Leave | Mnemonic::Endbr64) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for op in 0..ins.op_count() {
        let access = info.op_access(op);
        if !matches!(access, OpAccess::Read | OpAccess::ReadWrite | OpAccess::ReadCondWrite) {
            continue;
        }
        let written = matches!(access, OpAccess::ReadWrite | OpAccess::ReadCondWrite);
        let u = match ins.op_kind(op) {
            OpKind::Register => {
                let r = ins.op_register(op);
                let Some(n) = gpr_number(r) else { continue };
                // A register the instruction writes in another operand (xchg) counts as written.
                let also_written = (0..ins.op_count()).any(|o| {
                    o != op
                        && ins.op_kind(o) == OpKind::Register
                        && ins.op_register(o).full_register() == r.full_register()
                        && info.op_access(o) != OpAccess::Read
                });
                Use { op, place: Place::Reg(n), bytes: r.size() as u32, written: written || also_written }
            }
            OpKind::Memory => {
                let bytes = ins.memory_size().size() as u32;
                let segment_based = matches!(ins.memory_segment(), Register::FS | Register::GS);
                if !matches!(bytes, 1 | 2 | 4 | 8) || segment_based || ins.memory_size().is_packed() {
                    continue;
                }
                Use { op, place: Place::Mem, bytes, written }
            }
            _ => continue,
        };
        out.push(u);
        if out.len() == MAX_USES {
            break;
        }
    }
    out
}

/// The mask of a value `bytes` wide.
fn mask(bytes: u32) -> u64 {
    if bytes >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * bytes)) - 1
    }
}

/// `v`'s low `bytes` as a signed number.
pub fn signed(v: u64, bytes: u32) -> i64 {
    let shift = 64 - 8 * bytes.min(8);
    ((v << shift) as i64) >> shift
}

/// The address of `ins`'s memory operand, from the guest registers `regs`.
pub fn address(ins: &Instruction, regs: &[u64; 16]) -> u64 {
    if ins.is_ip_rel_memory_operand() {
        return ins.ip_rel_memory_address();
    }
    let reg = |r: Register| gpr_number_any(r).map_or(0, |n| regs[n]);
    let index = reg(ins.memory_index()).wrapping_mul(ins.memory_index_scale() as u64);
    reg(ins.memory_base()).wrapping_add(index).wrapping_add(ins.memory_displacement64())
}

/// Any 64-bit general register's number (rsp and rbp included: they form addresses).
fn gpr_number_any(r: Register) -> Option<usize> {
    let full = r.full_register();
    full.is_gpr64().then(|| (full as u32 - Register::RAX as u32) as usize)
}

/// The whole location of a use, as it is before the instruction: the full register, or the
/// operand's bytes (None if the memory cannot be read).
#[derive(Clone, Copy, Debug)]
pub struct Saved {
    pub raw: u64,
    pub addr: u64,
}

/// Reads use `u` of `ins` in a call-out whose code had `spilled` registers lent.
pub fn read(ctx: &ThreadContext, spilled: u16, ins: &Instruction, u: &Use) -> Option<Saved> {
    let regs = ctx.guest_gprs(spilled);
    match u.place {
        Place::Reg(n) => Some(Saved { raw: regs[n], addr: 0 }),
        Place::Mem => {
            let addr = address(ins, &regs);
            let mut b = [0u8; 8];
            crate::kernel::guest_mem::read(addr, &mut b[..u.bytes as usize]).then(|| Saved { raw: u64::from_le_bytes(b), addr })
        }
    }
}

/// The value the instruction sees of a location read as `saved`.
pub fn value(saved: &Saved, u: &Use) -> i64 {
    signed(saved.raw, u.bytes)
}

/// Makes the instruction see `v` at use `u` (saved as `saved`): the register's low bytes, or
/// the memory operand's bytes.
pub fn write(ctx: &mut ThreadContext, spilled: u16, u: &Use, saved: &Saved, v: i64) {
    let m = mask(u.bytes);
    match u.place {
        Place::Reg(n) => ctx.set_guest_gpr(spilled, n, (saved.raw & !m) | (v as u64 & m)),
        Place::Mem => {
            let _ = crate::kernel::guest_mem::write(saved.addr, &(v as u64).to_le_bytes()[..u.bytes as usize]);
        }
    }
}

/// Puts the location back as it was (`saved`).
pub fn restore(ctx: &mut ThreadContext, spilled: u16, u: &Use, saved: &Saved) {
    match u.place {
        Place::Reg(n) => ctx.set_guest_gpr(spilled, n, saved.raw),
        Place::Mem => {
            let _ = crate::kernel::guest_mem::write(saved.addr, &saved.raw.to_le_bytes()[..u.bytes as usize]);
        }
    }
}

/// How a report names a use: the operand as disassembled ("dword ptr [rbp-14h]", "eax").
pub fn describe(ins: &Instruction, u: &Use) -> String {
    use rtgrind_jit::iced_x86::{Formatter, NasmFormatter};
    let mut f = NasmFormatter::new();
    let mut s = String::new();
    let _ = f.format_operand(ins, &mut s, u.op);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtgrind_jit::iced_x86::{Decoder, DecoderOptions, InstructionInfoFactory};

    fn uses_of(bytes: &[u8]) -> Vec<Use> {
        let ins = Decoder::with_ip(64, bytes, 0x1000, DecoderOptions::NONE).decode();
        uses(&ins, InstructionInfoFactory::new().info(&ins))
    }

    #[test]
    fn uses_are_data_operands_read() {
        // mov eax, [rbp-14h]: the memory read; rbp only forms the address.
        assert_eq!(uses_of(&[0x8b, 0x45, 0xec]), [Use { op: 1, place: Place::Mem, bytes: 4, written: false }]);
        // add eax, edx: both read, eax written.
        assert_eq!(
            uses_of(&[0x01, 0xd0]),
            [Use { op: 0, place: Place::Reg(0), bytes: 4, written: true }, Use { op: 1, place: Place::Reg(2), bytes: 4, written: false }]
        );
        // lea, push rbp, ret: none.
        assert!(uses_of(&[0x48, 0x8d, 0x45, 0xec]).is_empty() && uses_of(&[0x55]).is_empty() && uses_of(&[0xc3]).is_empty());
        assert_eq!(signed(0xffff_ffff, 4), -1);
        assert_eq!(signed(0x1f4, 4), 500);
    }
}
