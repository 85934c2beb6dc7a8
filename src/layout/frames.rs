//! Which functions' locals a layout may re-lay: those whose code names each local only by an
//! operand from the frame's base, so that rewriting those operands moves the local. With a
//! frame pointer (`-O0`) the base is rbp; without one (`-Og`, `-O2`) it is the CFA, which rsp
//! locates at each pc by the call frame information. Either way, every access below what the
//! function saves in its frame must be inside a local DWARF describes (else an unnamed slot, a
//! spill or a temporary, could be overlapped by a moved local).

use super::cfa::{Cfi, StackFrame};
use super::objects::{DwarfBase, Frame, FrameBase, Kind, Var};
use goblin::elf::Elf;
use rtgrind_jit::iced_x86::{Code, Decoder, DecoderOptions, EncodingKind, Instruction, Mnemonic, OpKind, Register};

/// `f` (its locals by offset from DWARF's frame base `base`) made ready to re-lay: offsets from
/// the base its code uses, the top its locals may reach, alignments its slots keep; or why it
/// cannot be.
pub fn checked(elf: &Elf, file: &[u8], cfi: &Cfi, mut f: Frame, base: DwarfBase) -> Result<Frame, String> {
    let code = elf
        .program_headers
        .iter()
        .find(|p| p.p_type == goblin::elf::program_header::PT_LOAD && p.p_vaddr <= f.low && f.high <= p.p_vaddr + p.p_filesz)
        .and_then(|p| file.get((f.low - p.p_vaddr + p.p_offset) as usize..(f.high - p.p_vaddr + p.p_offset) as usize))
        .ok_or("its code is not in the file")?;
    let endbr = if code.starts_with(&[0xf3, 0x0f, 0x1e, 0xfa]) { 4 } else { 0 };
    if code[endbr..].starts_with(&[0x55, 0x48, 0x89, 0xe5]) {
        // `push rbp; mov rbp, rsp`: the CFA is rbp+16 from then on.
        let shift = match base {
            DwarfBase::Cfa => 16,
            DwarfBase::Rbp(k) => k,
        };
        f.locals.iter_mut().for_each(|l| l.at += shift);
        f.top = rbp_frame(&code[endbr..], f.low + endbr as u64, &f)?;
        keep_alignments(&code[endbr..], f.low + endbr as u64, &mut f, |ins| (ins.memory_base() == Register::RBP).then_some(0))?;
    } else {
        if base != DwarfBase::Cfa {
            return Err("its frame base is rbp, which its code does not set up".into());
        }
        let frame = cfi.stack_frame(f.low, f.high)?;
        f.top = frame.saved;
        let glue = rsp_frame(code, f.low, &f, &frame)?;
        f.locals = glued(std::mem::take(&mut f.locals), &glue);
        keep_alignments(code, f.low, &mut f, |ins| if ins.memory_base() == Register::RSP { frame.offset_at(ins.ip()) } else { None })?;
        f.base = FrameBase::Cfa(frame);
    }
    if !f.locals.iter().all(|l| l.at + l.size as i64 <= f.top) {
        return Err("a local overlaps the registers the prologue saves".into());
    }
    for l in &mut f.locals {
        // (The base is 16-aligned: a slot keeps the alignment its offset has, up to 16.)
        l.align = l.align.min(1 << (l.at.trailing_zeros().min(4)));
    }
    Ok(f)
}

/// Raises the alignment of the locals that instructions needing an aligned operand access
/// (`movaps`, an SSE operation's 16 bytes), so that they keep it wherever they go.
/// `base_offset` says, for an access from the frame's base register, what to subtract from
/// its displacement for an offset from the base (None for other accesses). One that needs
/// alignment through another register (a pointer the code made to a local) may be to any
/// array: the arrays of 16 bytes and more then keep the 16 the ABI gives them.
fn keep_alignments(code: &[u8], at: u64, f: &mut Frame, base_offset: impl Fn(&Instruction) -> Option<i64>) -> Result<(), String> {
    for ins in Decoder::with_ip(64, code, at, DecoderOptions::NONE) {
        let need = needed_alignment(&ins);
        if need == 1 {
            continue;
        }
        let Some(off) = base_offset(&ins) else {
            if !matches!(ins.memory_base(), Register::RIP | Register::RSP | Register::RBP) {
                for l in f.locals.iter_mut().filter(|l| l.size >= 16 && l.at.trailing_zeros() >= 4) {
                    l.align = l.align.max(16);
                }
            }
            continue;
        };
        let c = ins.memory_displacement64() as i64 - off;
        if let Some(l) = f.locals.iter_mut().find(|l| l.at <= c && c < l.at + l.size as i64) {
            if need > 16 || l.at.trailing_zeros() < need.trailing_zeros() {
                return Err(format!("an access at {:#x} needs an alignment its local '{}' cannot keep", ins.ip(), l.name));
            }
            l.align = l.align.max(need);
        }
    }
    Ok(())
}

/// The alignment an instruction's memory operand must have: 16 for a legacy SSE operation's
/// 16 bytes (all but the unaligned moves), the size for the aligned moves of AVX; else 1.
fn needed_alignment(ins: &Instruction) -> u64 {
    use Mnemonic::*;
    let size = ins.memory_size().size() as u64;
    if size < 16 || ins.memory_base() == Register::None && ins.memory_index() == Register::None {
        return 1;
    }
    let aligned_move = matches!(
        ins.mnemonic(),
        Movaps
            | Movapd
            | Movdqa
            | Movntps
            | Movntpd
            | Movntdq
            | Movntdqa
            | Vmovaps
            | Vmovapd
            | Vmovdqa
            | Vmovdqa32
            | Vmovdqa64
            | Vmovntps
            | Vmovntpd
            | Vmovntdq
            | Vmovntdqa
    );
    let legacy = ins.encoding() == EncodingKind::Legacy && !matches!(ins.mnemonic(), Movups | Movupd | Movdqu | Lddqu);
    match (aligned_move, legacy) {
        (true, _) => size,
        (false, true) => 16,
        _ => 1,
    }
}

/// Checks the code of a function that sets up rbp (`push rbp; mov rbp, rsp`, at `code`, file
/// address `at`): every access below rbp is inside a local. The top of its locals: below the
/// registers pushed right after (`push rbx`: a local moved over its slot would be restored
/// into the caller's rbx).
fn rbp_frame(code: &[u8], at: u64, f: &Frame) -> Result<i64, String> {
    let pushed = Decoder::with_ip(64, &code[4..], 0, DecoderOptions::NONE).into_iter().take_while(|i| i.mnemonic() == Mnemonic::Push).count();
    for ins in Decoder::with_ip(64, code, at, DecoderOptions::NONE) {
        // rbp as a value (`add rax, rbp; sub rax, 0x68`: -O0's address of an array element)
        // makes a local's address no operand names: the frame cannot move.
        let frame_moves = matches!(ins.mnemonic(), Mnemonic::Push | Mnemonic::Pop)
            || (ins.mnemonic() == Mnemonic::Mov && [ins.op0_register(), ins.op1_register()].contains(&Register::RSP));
        if register_operand(&ins, Register::RBP) && !frame_moves {
            return Err(format!("rbp is used as a value at {:#x} (a local's address computed apart from its access)", ins.ip()));
        }
        if ins.memory_base() != Register::RBP || (ins.memory_displacement64() as i64) >= 0 {
            continue;
        }
        let d = ins.memory_displacement64() as i64;
        // (The registers pushed after rbp are restored from their slots: `mov rbx, [rbp-8]`.)
        let saved = d >= -8 * pushed as i64;
        if !saved && !f.locals.iter().any(|l| l.at <= d && d < l.at + l.size as i64) {
            return Err(format!("a frame slot at rbp{d} is no local DWARF describes"));
        }
    }
    Ok(-8 * pushed as i64)
}

/// Checks the code of a function without a frame pointer: rsp only moves by constants (the
/// call frame information follows it), is copied only as the address of a local (`mov rbx,
/// rsp`, rewritten as an `lea`), and every access below what the function saves is wholly
/// inside one local. The addresses it takes where an array ends and another local starts: the
/// array's end (a loop's bound, which must follow the array) or the next local's start (which
/// must follow that one)? Not known, so those two must stay together.
fn rsp_frame(code: &[u8], at: u64, f: &Frame, frame: &StackFrame) -> Result<Vec<i64>, String> {
    let inside = |c: i64, size: i64| f.locals.iter().any(|l| l.at <= c && c + size <= l.at + l.size as i64);
    let mut glue = Vec::new();
    let mut address = |c: i64, ip: u64| {
        if !f.locals.iter().any(|l| l.kind == Kind::Buffer && l.at + l.size as i64 == c) {
            Ok(())
        } else if inside(c, 1) {
            glue.push(c);
            Ok(())
        } else {
            Err(format!("an address at CFA{c:+} is an array's end, which would not follow the array ({ip:#x})"))
        }
    };
    for ins in Decoder::with_ip(64, code, at, DecoderOptions::NONE) {
        if ins.is_invalid() {
            return Err(format!("its code does not decode at {:#x}", ins.ip()));
        }
        let Some(off) = frame.offset_at(ins.ip()) else { return Err(format!("no call frame information at {:#x}", ins.ip())) };
        if register_operand(&ins, Register::RSP) {
            let moves_by_constant = matches!(ins.mnemonic(), Mnemonic::Add | Mnemonic::Sub)
                && ins.op0_kind() == OpKind::Register
                && ins.op0_register() == Register::RSP
                && ins.op1_kind() != OpKind::Register;
            if copy_of_rsp(&ins).is_some() {
                if !inside(-off, 1) {
                    return Err(format!("rsp is copied at {:#x} where it points at no local", ins.ip()));
                }
                address(-off, ins.ip())?;
            } else if !moves_by_constant {
                return Err(format!("rsp is used as a value at {:#x}", ins.ip()));
            }
        }
        if ins.memory_base() == Register::RSP {
            let c = ins.memory_displacement64() as i64 - off;
            let size = ins.memory_size().size().max(1) as i64;
            if c < frame.saved && !inside(c, size) && ins.mnemonic() != Mnemonic::Lea {
                return Err(format!("a frame slot at CFA{c:+} is no local DWARF describes ({:#x})", ins.ip()));
            }
            if ins.mnemonic() == Mnemonic::Lea {
                if c < frame.saved && !inside(c, 1) && !f.locals.iter().any(|l| l.at + l.size as i64 == c) {
                    return Err(format!("an address at CFA{c:+} is in no local DWARF describes ({:#x})", ins.ip()));
                }
                address(c, ins.ip())?;
            }
        }
    }
    glue.sort_unstable();
    glue.dedup();
    Ok(glue)
}

/// The locals that meet at each of `glue` merged into one that moves as a whole ("a+b").
fn glued(locals: Vec<Var>, glue: &[i64]) -> Vec<Var> {
    let mut out: Vec<Var> = Vec::with_capacity(locals.len());
    for l in locals {
        match out.last_mut() {
            Some(m) if m.at + m.size as i64 == l.at && glue.contains(&l.at) => {
                m.size += l.size;
                m.align = m.align.max(l.align);
                m.kind = m.kind.min(l.kind);
                m.name = format!("{}+{}", m.name, l.name);
            }
            _ => out.push(l),
        }
    }
    out
}

/// The register a `mov r64, rsp` copies the stack pointer into.
pub fn copy_of_rsp(ins: &Instruction) -> Option<Register> {
    let copy = matches!(ins.code(), Code::Mov_r64_rm64 | Code::Mov_rm64_r64)
        && ins.op0_kind() == OpKind::Register
        && ins.op1_kind() == OpKind::Register
        && ins.op1_register() == Register::RSP;
    copy.then(|| ins.op0_register())
}

/// Whether `ins` has `full` (or a part of it) as a register operand.
fn register_operand(ins: &Instruction, full: Register) -> bool {
    (0..ins.op_count()).any(|i| ins.op_kind(i) == OpKind::Register && ins.op_register(i).full_register() == full)
}
