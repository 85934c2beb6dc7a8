//! Byte templates for the instruction forms tools' code is mostly made of (issue 29): the
//! opcode bytes of each form are fixed, and the registers, the memory operand and the immediate
//! are patched into them. iced-x86's encoder took about 80 ns an instruction (half of taint's
//! translation time); a template takes a few. Forms not listed here (and any operand a template
//! does not take: byte registers, RIP-relative memory, vector registers) go to iced's encoder.
//! The `tests` check every template against iced's encoding, field by field.

use iced_x86::{Code, Instruction, OpKind, Register};

/// How a form's operands go into its bytes.
#[derive(Clone, Copy)]
enum Shape {
    /// `op reg, r/m` or `op r/m, reg` (which operand is the ModRM `reg` field: `reg_op`).
    RegRm { reg_op: u32 },
    /// `op r/m, imm` with ModRM's `reg` field `ext`, an immediate of `imm` bytes.
    RmImm { ext: u8, imm: u8 },
    /// `op reg, imm` with the register in the opcode's low three bits.
    OpReg { imm: u8 },
    /// VEX, map 0F38, W1, L0 (BMI: `pext`, `pdep`, `andn`, `shlx`, ...): ModRM `reg` is
    /// operand 0, `vvvv` operand `v`, r/m the other; `pp` the implied prefix (0 none, 1 66,
    /// 2 F3, 3 F2).
    Vex38W1 { pp: u8, v: u32 },
    /// EVEX.128, map 0F, W1, no mask (the block count's `vmovq` from its vector register):
    /// ModRM `reg` is the vector register (operand 1), r/m a general register or memory
    /// (operand 0, a disp8 scaled by 8); `pp` the implied prefix.
    Evex0FW1 { pp: u8 },
}

/// A form: its opcode bytes (after any REX), whether it is 64-bit (REX.W), whether it takes
/// the operand-size prefix (16-bit), and its shape.
struct Form {
    op: &'static [u8],
    w: bool,
    o16: bool,
    shape: Shape,
}

const fn rm(op: &'static [u8], w: bool, reg_op: u32) -> Form {
    Form { op, w, o16: false, shape: Shape::RegRm { reg_op } }
}
const fn imm(op: &'static [u8], w: bool, o16: bool, ext: u8, imm: u8) -> Form {
    Form { op, w, o16, shape: Shape::RmImm { ext, imm } }
}

const fn vex(op: &'static [u8], pp: u8, v: u32) -> Form {
    Form { op, w: true, o16: false, shape: Shape::Vex38W1 { pp, v } }
}

fn form(code: Code) -> Option<Form> {
    use Code::*;
    Some(match code {
        Mov_r64_rm64 => rm(&[0x8b], true, 0),
        Mov_rm64_r64 => rm(&[0x89], true, 1),
        Mov_r32_rm32 => rm(&[0x8b], false, 0),
        Mov_rm32_r32 => rm(&[0x89], false, 1),
        Or_r64_rm64 => rm(&[0x0b], true, 0),
        Or_rm64_r64 => rm(&[0x09], true, 1),
        And_r64_rm64 => rm(&[0x23], true, 0),
        And_rm64_r64 => rm(&[0x21], true, 1),
        Xor_r64_rm64 => rm(&[0x33], true, 0),
        Xor_rm64_r64 => rm(&[0x31], true, 1),
        Xor_r32_rm32 => rm(&[0x33], false, 0),
        Xor_rm32_r32 => rm(&[0x31], false, 1),
        Add_r64_rm64 => rm(&[0x03], true, 0),
        Add_rm64_r64 => rm(&[0x01], true, 1),
        Sub_r64_rm64 => rm(&[0x2b], true, 0),
        Sub_rm64_r64 => rm(&[0x29], true, 1),
        Cmp_r64_rm64 => rm(&[0x3b], true, 0),
        Cmp_rm64_r64 => rm(&[0x39], true, 1),
        Test_rm64_r64 => rm(&[0x85], true, 1),
        Test_rm32_r32 => rm(&[0x85], false, 1),
        Lea_r64_m => rm(&[0x8d], true, 0),
        Movzx_r32_rm8 => rm(&[0x0f, 0xb6], false, 0),
        Movzx_r32_rm16 => rm(&[0x0f, 0xb7], false, 0),
        Movzx_r64_rm8 => rm(&[0x0f, 0xb6], true, 0),
        Cmovne_r64_rm64 => rm(&[0x0f, 0x45], true, 0),
        Cmove_r64_rm64 => rm(&[0x0f, 0x44], true, 0),
        Cmovb_r64_rm64 => rm(&[0x0f, 0x42], true, 0),
        Cmovae_r64_rm64 => rm(&[0x0f, 0x43], true, 0),
        Cmova_r64_rm64 => rm(&[0x0f, 0x47], true, 0),
        Bt_rm64_r64 => rm(&[0x0f, 0xa3], true, 1),
        Bt_rm64_imm8 => imm(&[0x0f, 0xba], true, false, 4, 1),
        Bts_rm64_imm8 => imm(&[0x0f, 0xba], true, false, 5, 1),
        Btr_rm64_imm8 => imm(&[0x0f, 0xba], true, false, 6, 1),
        Test_rm64_imm32 => imm(&[0xf7], true, false, 0, 4),
        Cmp_rm8_imm8 => imm(&[0x80], false, false, 7, 1),
        Cmp_rm16_imm8 => imm(&[0x83], false, true, 7, 1),
        Cmp_rm32_imm8 => imm(&[0x83], false, false, 7, 1),
        Cmp_rm64_imm8 => imm(&[0x83], true, false, 7, 1),
        Cmp_rm32_imm32 => imm(&[0x81], false, false, 7, 4),
        Cmp_rm64_imm32 => imm(&[0x81], true, false, 7, 4),
        Add_rm64_imm8 => imm(&[0x83], true, false, 0, 1),
        Or_rm64_imm8 => imm(&[0x83], true, false, 1, 1),
        And_rm64_imm8 => imm(&[0x83], true, false, 4, 1),
        Sub_rm64_imm8 => imm(&[0x83], true, false, 5, 1),
        Add_rm64_imm32 => imm(&[0x81], true, false, 0, 4),
        Or_rm64_imm32 => imm(&[0x81], true, false, 1, 4),
        And_rm64_imm32 => imm(&[0x81], true, false, 4, 4),
        Sub_rm64_imm32 => imm(&[0x81], true, false, 5, 4),
        Shl_rm64_imm8 => imm(&[0xc1], true, false, 4, 1),
        Shr_rm64_imm8 => imm(&[0xc1], true, false, 5, 1),
        Mov_rm8_imm8 => imm(&[0xc6], false, false, 0, 1),
        Test_rm8_imm8 => imm(&[0xf6], false, false, 0, 1),
        Mov_rm64_imm32 => imm(&[0xc7], true, false, 0, 4),
        Mov_rm32_imm32 => imm(&[0xc7], false, false, 0, 4),
        Mov_r64_imm64 => Form { op: &[0xb8], w: true, o16: false, shape: Shape::OpReg { imm: 8 } },
        Mov_r32_imm32 => Form { op: &[0xb8], w: false, o16: false, shape: Shape::OpReg { imm: 4 } },
        VEX_Pext_r64_r64_rm64 => vex(&[0xf5], 2, 1),
        VEX_Pdep_r64_r64_rm64 => vex(&[0xf5], 3, 1),
        VEX_Andn_r64_r64_rm64 => vex(&[0xf2], 0, 1),
        VEX_Shlx_r64_rm64_r64 => vex(&[0xf7], 1, 2),
        VEX_Shrx_r64_rm64_r64 => vex(&[0xf7], 3, 2),
        EVEX_Vmovq_rm64_xmm => Form { op: &[0x7e], w: true, o16: false, shape: Shape::Evex0FW1 { pp: 1 } },
        EVEX_Vmovq_xmmm64_xmm => Form { op: &[0xd6], w: true, o16: false, shape: Shape::Evex0FW1 { pp: 1 } },
        _ => return None,
    })
}

/// Number (0-15) of a 64- or 32-bit general register. (By the enum's order, in which each
/// size's sixteen are consecutive: `Register::number` reads a table of register infos, a
/// cache line apart, for every operand of every instruction of tool code.)
fn gpr(r: Register) -> Option<u8> {
    gpr64(r).or_else(|| (r as u32).wrapping_sub(Register::EAX as u32).try_into().ok().filter(|&n: &u8| n < 16))
}

/// Number (0-15) of a 64-bit general register.
fn gpr64(r: Register) -> Option<u8> {
    (r as u32).wrapping_sub(Register::RAX as u32).try_into().ok().filter(|&n: &u8| n < 16)
}

/// One instruction's bytes as a template writes them (x86 instructions are at most 15 bytes),
/// in place at the end of the code. Every copy has a size known when compiling (a few moves):
/// a copy of a slice whose length is a variable is a call of `memmove`, and the templates'
/// copies of one to four bytes (opcodes, displacements, immediates) went through it. (Not in
/// a buffer on the stack copied over at once: loading 16 bytes just stored one by one waits
/// for the stores, and that wait was a third of a template's time.)
struct Bytes<'a> {
    /// `ROOM` bytes at the code's end, `n` of them written.
    b: &'a mut [u8],
    n: usize,
}

/// Room for an instruction's bytes, and for `put`'s whole word after 15 of them.
const ROOM: usize = 20;

impl Bytes<'_> {
    fn push(&mut self, v: u8) {
        self.b[self.n] = v;
        self.n += 1;
    }

    fn extend_from_slice<const N: usize>(&mut self, v: &[u8; N]) {
        self.b[self.n..self.n + N].copy_from_slice(v);
        self.n += N;
    }

    /// The first `len` (at most 4) bytes of `v`, little-endian.
    fn put(&mut self, v: u32, len: usize) {
        self.b[self.n..self.n + 4].copy_from_slice(&v.to_le_bytes());
        self.n += len.min(4);
    }

    /// A form's opcode bytes (one or two).
    fn opcode(&mut self, op: &[u8]) {
        let v = op.iter().rev().fold(0u32, |v, &b| v << 8 | b as u32);
        self.put(v, op.len());
    }
}

/// The ModRM operand: a register (mod 11) or memory.
enum RmOperand {
    Reg(u8),
    Mem { base: Option<u8>, index: Option<u8>, scale: u8, disp: i32 },
}

impl RmOperand {
    fn of(ins: &Instruction, op: u32) -> Option<RmOperand> {
        match ins.op_kind(op) {
            // (`movzx r32, r16`: the 16-bit register is numbered as the others.)
            OpKind::Register if matches!(ins.code(), Code::Movzx_r32_rm16) && ins.op_register(op).is_gpr16() => {
                Some(RmOperand::Reg((ins.op_register(op) as u32 - Register::AX as u32) as u8))
            }
            OpKind::Register => gpr(ins.op_register(op)).map(RmOperand::Reg),
            OpKind::Memory => {
                let base = match ins.memory_base() {
                    Register::None => None,
                    r => Some(gpr64(r)?),
                };
                let index = match ins.memory_index() {
                    Register::None => None,
                    r => Some(gpr64(r).filter(|&n| n != 4)?),
                };
                let disp = i32::try_from(ins.memory_displacement64() as i64).ok()?;
                Some(RmOperand::Mem { base, index, scale: ins.memory_index_scale() as u8, disp })
            }
            _ => None,
        }
    }

    /// (REX.X, REX.B) bits.
    fn rex_xb(&self) -> (u8, u8) {
        match *self {
            RmOperand::Reg(r) => (0, r >> 3),
            RmOperand::Mem { base, index, .. } => (index.map_or(0, |i| i >> 3), base.map_or(0, |b| b >> 3)),
        }
    }

    /// ModRM (with `reg`), SIB and displacement, as iced encodes them: no displacement where
    /// the base allows it, else 8 bits where the value fits, else 32.
    fn encode(&self, reg: u8, out: &mut Bytes) {
        self.encode_scaled(reg, 0, out)
    }

    /// As `encode`, with EVEX's compressed disp8: the displacement in units of `1 << shift`
    /// bytes where it is a multiple of that which fits. (A shift, not a divisor: this runs for
    /// every memory operand of tool code, and a division by a variable is a `idiv`.)
    fn encode_scaled(&self, reg: u8, shift: u32, out: &mut Bytes) {
        let reg = (reg & 7) << 3;
        let (base, index, scale, disp) = match *self {
            RmOperand::Reg(r) => return out.push(0xc0 | reg | (r & 7)),
            RmOperand::Mem { base, index, scale, disp } => (base, index, scale, disp),
        };
        let ss = match scale {
            2 => 1 << 6,
            4 => 2 << 6,
            8 => 3 << 6,
            _ => 0,
        };
        let Some(base) = base else {
            // [index*s + disp32] or [disp32]: SIB with no base (mod 00, base 101).
            out.extend_from_slice(&[reg | 4, ss | (index.map_or(4, |i| i & 7) << 3) | 5]);
            return out.extend_from_slice(&disp.to_le_bytes());
        };
        let disp8 = (disp & ((1 << shift) - 1) == 0).then(|| i8::try_from(disp >> shift).ok()).flatten();
        let md = if disp == 0 && base & 7 != 5 {
            0
        } else if disp8.is_some() {
            0x40
        } else {
            0x80
        };
        if index.is_some() || base & 7 == 4 {
            out.extend_from_slice(&[md | reg | 4, ss | (index.map_or(4, |i| i & 7) << 3) | (base & 7)]);
        } else {
            out.push(md | reg | (base & 7));
        }
        match md {
            0x40 => out.push(disp8.unwrap_or_default() as u8),
            0x80 => out.extend_from_slice(&disp.to_le_bytes()),
            _ => {}
        }
    }
}

/// Appends `ins`'s encoding if a template has its form and operands (true); else leaves `out`
/// as it was (false).
pub(crate) fn encode(ins: &Instruction, out: &mut Vec<u8>) -> bool {
    let len = out.len();
    out.extend_from_slice(&[0; ROOM]);
    let mut bytes = Bytes { b: &mut out[len..], n: 0 };
    let ok = encode_into(ins, &mut bytes);
    let n = if ok { bytes.n } else { 0 };
    out.truncate(len + n);
    ok
}

fn encode_into(ins: &Instruction, out: &mut Bytes) -> bool {
    match ins.code() {
        // The tools' own bytes (`db`: jumps whose rel32 the engine patches), and labels.
        Code::DeclareByte => {
            (0..ins.declare_data_len()).for_each(|k| out.push(ins.get_declare_byte_value(k)));
            return true;
        }
        Code::Zero_bytes => return true,
        // `rorx r64, r64, imm8` (VEX.LZ.F2.0F3A.W1 F0 /r ib): origins' granule numbers.
        Code::VEX_Rorx_r64_rm64_imm8 if ins.op1_kind() == OpKind::Register => {
            let (Some(d), Some(r)) = (gpr(ins.op0_register()), gpr(ins.op1_register())) else { return false };
            let rxb = (!d >> 3 & 1) << 7 | 1 << 6 | (!r >> 3 & 1) << 5;
            out.extend_from_slice(&[0xc4, rxb | 0x03, 0xfb, 0xf0, 0xc0 | (d & 7) << 3 | (r & 7), ins.immediate8()]);
            return true;
        }
        // `kortestw k, k` (VEX.L0.0F.W0 98 /r), the wide shadow checks' test.
        Code::VEX_Kortestw_kr_kr => {
            let (k, m) = (ins.op0_register(), ins.op1_register());
            let n = |r: Register| (r as u32 - Register::K0 as u32) as u8;
            out.extend_from_slice(&[0xc5, 0xf8, 0x98, 0xc0 | n(k) << 3 | n(m)]);
            return true;
        }
        _ => {}
    }
    let Some(f) = form(ins.code()) else { return false };
    if ins.has_rep_prefix() || ins.has_repne_prefix() || ins.has_lock_prefix() || ins.has_xacquire_prefix() || ins.has_xrelease_prefix() {
        return false;
    }
    let seg = match ins.segment_prefix() {
        Register::None => None,
        Register::GS => Some(0x65),
        Register::FS => Some(0x64),
        _ => return false,
    };
    let start = out.n;
    let ok = match f.shape {
        Shape::RegRm { reg_op } => {
            let (Some(reg), Some(m)) = (gpr(ins.op_register(reg_op)).filter(|_| ins.op_kind(reg_op) == OpKind::Register), RmOperand::of(ins, 1 - reg_op))
            else {
                return false;
            };
            prefixes(out, seg, &f, reg >> 3, m.rex_xb());
            out.opcode(f.op);
            m.encode(reg, out);
            true
        }
        Shape::RmImm { ext, imm } => {
            let Some(m) = RmOperand::of(ins, 0) else { return false };
            prefixes(out, seg, &f, 0, m.rex_xb());
            out.opcode(f.op);
            m.encode(ext, out);
            // (The operand's low bytes, whatever its kind: `immediate(1)` matches on it.)
            out.put(ins.immediate32(), imm as usize);
            true
        }
        Shape::OpReg { imm } => {
            let Some(r) = gpr(ins.op0_register()).filter(|_| ins.op0_kind() == OpKind::Register) else { return false };
            // A constant that fits in 32 bits unsigned is `mov r32, imm32` (zero-extended): 4
            // or 5 bytes shorter (code addresses of a program that is not PIE, sites' pcs).
            let (f, imm) = match imm == 8 && ins.immediate64() <= u64::from(u32::MAX) {
                true => (Form { w: false, ..f }, 4),
                false => (f, imm),
            };
            prefixes(out, seg, &f, 0, (0, r >> 3));
            out.push(f.op[0] | (r & 7));
            match imm {
                8 => out.extend_from_slice(&ins.immediate64().to_le_bytes()),
                _ => out.put(ins.immediate32(), imm as usize),
            }
            true
        }
        Shape::Vex38W1 { pp, v } => {
            let ops = (gpr(ins.op0_register()), gpr(ins.op_register(v)), RmOperand::of(ins, 3 - v));
            let (Some(reg), Some(v), Some(m)) = ops else { return false };
            if let Some(s) = seg {
                out.push(s);
            }
            let (x, b) = m.rex_xb();
            let r = reg >> 3;
            out.extend_from_slice(&[0xc4, (r ^ 1) << 7 | (x ^ 1) << 6 | (b ^ 1) << 5 | 0b00010, 0x80 | (!v & 15) << 3 | pp]);
            out.opcode(f.op);
            m.encode(reg, out);
            true
        }
        Shape::Evex0FW1 { pp } => {
            let x = ins.op1_register();
            let (true, Some(m)) = (ins.op1_kind() == OpKind::Register && x.is_xmm(), RmOperand::of(ins, 0)) else { return false };
            if matches!(m, RmOperand::Mem { base: None, .. }) {
                // (iced scales a disp32 with no base register as if it were a disp8: left to
                // it, as before.)
                return false;
            }
            if let Some(s) = seg {
                out.push(s);
            }
            let reg = (x as u32 - Register::XMM0 as u32) as u8;
            let (xb, b) = m.rex_xb();
            let (r, r2) = (reg >> 3 & 1, reg >> 4);
            // P0: R X B R' (inverted), map 0F; P1: W, vvvv unused (1111), pp; P2: 128 bits,
            // V' unused (1), no mask.
            out.extend_from_slice(&[0x62, (r ^ 1) << 7 | (xb ^ 1) << 6 | (b ^ 1) << 5 | (r2 ^ 1) << 4 | 1, 0xfc | pp, 0x08]);
            out.opcode(f.op);
            m.encode_scaled(reg, 3, out);
            true
        }
    };
    debug_assert!(ok && out.n > start);
    ok
}

/// The segment and operand-size prefixes and the REX byte (if one is needed).
fn prefixes(out: &mut Bytes, seg: Option<u8>, f: &Form, r: u8, (x, b): (u8, u8)) {
    if let Some(s) = seg {
        out.push(s);
    }
    if f.o16 {
        out.push(0x66);
    }
    let rex = 0x40 | (f.w as u8) << 3 | r << 2 | x << 1 | b;
    if rex != 0x40 {
        out.push(rex);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iced_x86::code_asm::*;
    use iced_x86::Encoder;

    /// Every template against iced's encoder, over registers, memory operands and immediates.
    #[test]
    fn templates_encode_as_iced_does() {
        let regs: Vec<AsmRegister64> = (0..16).map(|n| get_gpr64(Register::RAX + n).unwrap()).collect();
        let r32s: Vec<AsmRegister32> = (0..16).map(|n| get_gpr32(Register::EAX + n).unwrap()).collect();
        let mut a = CodeAssembler::new(64).unwrap();
        let disps = [0i32, 1, -8, 127, 128, -129, 0x1234, -0x7fff_0000];
        for (k, &r) in regs.iter().enumerate() {
            let (b, x) = (regs[(k + 5) % 16], regs[(k + 11) % 16]);
            let x = if x == rsp { r9 } else { x };
            let r32 = r32s[k];
            for &d in &disps {
                let mems = [
                    qword_ptr(b + d),
                    qword_ptr(b + x * 8 + d),
                    qword_ptr(b + x + d),
                    qword_ptr(x * 4 + d),
                    qword_ptr(0x1234u64 + k as u64).gs(),
                    qword_ptr(b + d).gs(),
                ];
                for m in mems {
                    a.mov(r, m).unwrap();
                    a.mov(m, r).unwrap();
                    a.or(r, m).unwrap();
                    a.or(m, r).unwrap();
                    a.and(r, m).unwrap();
                    a.xor(r, m).unwrap();
                    a.add(r, m).unwrap();
                    a.sub(m, r).unwrap();
                    a.cmp(r, m).unwrap();
                    a.cmp(m, r).unwrap();
                    a.test(m, r).unwrap();
                    a.lea(r, m).unwrap();
                    a.mov(m, d).unwrap();
                    a.cmp(m, d).unwrap();
                    a.cmp(m, 0).unwrap();
                    a.add(m, 1).unwrap();
                    a.pext(r, b, m).unwrap();
                    a.shlx(r, m, b).unwrap();
                    a.andn(r, b, m).unwrap();
                    a.cmovne(r, m).unwrap();
                    a.shr(m, 5).unwrap();
                    a.and(m, 0x7fff_0000).unwrap();
                    a.mov(byte_ptr(b + x + d), 1).unwrap();
                    let (m8, m16, m32) = (byte_ptr(b + x + d), word_ptr(b + x + d), dword_ptr(b + x + d));
                    a.cmp(m8, 0).unwrap();
                    a.cmp(m16, 0).unwrap();
                    a.cmp(m32, 1).unwrap();
                    a.test(m8, 7).unwrap();
                    a.movzx(r32, m8).unwrap();
                    a.movzx(r32, m16).unwrap();
                    a.mov(r32, m32).unwrap();
                    a.mov(m32, r32).unwrap();
                    a.bt(m, 20).unwrap();
                    a.bts(m, 63).unwrap();
                    a.btr(m, 0).unwrap();
                    a.test(m, 0x7000_0001).unwrap();
                    a.cmovb(r, m).unwrap();
                    a.cmova(r, m).unwrap();
                    a.cmovae(r, m).unwrap();
                    a.set_prefer_vex(false);
                    for v in [xmm0, xmm9, xmm16, xmm18, xmm23, xmm24, xmm31] {
                        a.vmovq(m, v).unwrap();
                    }
                    a.set_prefer_vex(true);
                }
            }
            a.mov(r, b).unwrap();
            a.or(r, x).unwrap();
            a.xor(r32, r32).unwrap();
            a.test(r, r).unwrap();
            a.lea(r, qword_ptr(r + x)).unwrap();
            a.mov(r, 0x1234_5678_9abc_def0u64).unwrap();
            a.mov(r32, 0x8000_1234u32).unwrap();
            a.mov(r32, 61).unwrap();
            a.pext(r, x, b).unwrap();
            a.pdep(r, x, b).unwrap();
            a.andn(r, x, b).unwrap();
            a.shlx(r, b, x).unwrap();
            a.shrx(r, b, x).unwrap();
            a.shr(r, 3).unwrap();
            a.shl(r, 61).unwrap();
            a.rorx(r, x, 3).unwrap();
            a.rorx(r, b, 63).unwrap();
            a.and(r, 0xff).unwrap();
            a.and(r, -32).unwrap();
            a.or(r, 0x1_0000).unwrap();
            a.bt(r, x).unwrap();
            a.btr(r, 63).unwrap();
            a.bts(r, 1).unwrap();
            a.bt(r, 20).unwrap();
            a.test(r, 0x10).unwrap();
            a.cmovb(r, x).unwrap();
            a.cmova(r, b).unwrap();
            a.cmovae(r, x).unwrap();
            a.movzx(r32, get_gpr16(Register::AX + k as u32).unwrap()).unwrap();
            a.set_prefer_vex(false);
            for v in [xmm3, xmm8, xmm16, xmm18, xmm25, xmm31] {
                a.vmovq(r, v).unwrap();
            }
            a.set_prefer_vex(true);
            a.cmovne(r, x).unwrap();
            a.cmove(r, b).unwrap();
            a.db(&[0x0f, 0x85, 0, 0, k as u8, 0]).unwrap();
            a.kortestw(k2, k7).unwrap();
            a.kortestw(k0, k5).unwrap();
            let mut label = a.create_label();
            a.set_label(&mut label).unwrap();
            a.zero_bytes().unwrap();
        }
        let mut enc = Encoder::new(64);
        let mut templated = 0;
        for ins in a.instructions() {
            let mut mine = Vec::new();
            if !encode(ins, &mut mine) {
                continue;
            }
            templated += 1;
            enc.encode(ins, 0x10_0000).unwrap();
            assert_eq!(mine, enc.take_buffer(), "{}", crate::translate::format_insn(ins));
        }
        assert!(templated * 10 >= a.instructions().len() * 9, "{templated} of {} templated", a.instructions().len());
    }

    /// `mov r64, imm64` of a constant below 2^32 is iced's `mov r32, imm32`; a wider one keeps
    /// its 10 bytes.
    #[test]
    fn a_constant_of_32_bits_is_moved_in_5_or_6_bytes() {
        let mut enc = Encoder::new(64);
        for n in 0..16 {
            for k in [0u64, 0x62_7bcb, u32::MAX as u64, 1 << 32] {
                let ins = Instruction::with2(Code::Mov_r64_imm64, Register::RAX + n, k).unwrap();
                let mut mine = Vec::new();
                assert!(encode(&ins, &mut mine));
                let short = Instruction::with2(Code::Mov_r32_imm32, Register::EAX + n, k as u32).unwrap();
                enc.encode(if k >> 32 == 0 { &short } else { &ins }, 0).unwrap();
                assert_eq!(mine, enc.take_buffer(), "mov r{n}, {k:#x}");
                let want = match (k >> 32, n >= 8) {
                    (0, true) => 6,
                    (0, false) => 5,
                    _ => 10,
                };
                assert_eq!(mine.len(), want);
            }
        }
    }
}
