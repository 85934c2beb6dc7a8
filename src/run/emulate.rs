//! The instructions the runtime emulates (`translate::emulated`): far transfers, which load a
//! code segment selector, what loads or reads the guest's `gs` selector (the engine's real
//! `gs` is its own), and the string instructions that read through the guest's `gs`. Each does what the CPU does under Linux for a 64-bit process: a selector
//! the CPU refuses raises #GP with the selector as error code (SIGSEGV, SI_KERNEL, rip at the
//! instruction); a switch to the 32-bit code segment stops the run (`unsupported`).

use super::{Runtime, Source};
use crate::kernel::guest_mem;
use crate::kernel::signals::SigInfo;
use rtgrind_jit::context::reg;
use rtgrind_jit::iced_x86::{Code, Decoder, DecoderOptions, Instruction, Mnemonic, OpKind, Register};
use rtgrind_jit::translate::StringOp;
use rtgrind_jit::CodeSource;

/// Linux's GDT selectors (RPL 3) of the 64-bit and the 32-bit user code segments and of the
/// user data segment.
const USER_CS: u16 = 0x33;
const USER32_CS: u16 = 0x23;
const USER_DS: u16 = 0x2b;

/// Flags `iretq` may change at CPL 3 with IOPL 0 (CF, PF, AF, ZF, SF, DF, OF, NT, AC, ID; TF
/// is left out: the engine does not single-step).
const IRET_FLAGS: u64 = 0x1 | 0x4 | 0x10 | 0x40 | 0x80 | 0x400 | 0x800 | 0x4000 | 0x40000 | 0x200000;

/// Why an emulated instruction did not complete.
enum Stop {
    /// #GP with this error code.
    Gp(u16),
    /// A page fault reading or writing the guest's memory at this address.
    Fault(u64, bool),
    /// Something the engine does not run (said, and the run stops).
    Unsupported(String),
}

/// What a data segment selector loaded into `gs` gives as base: None where the CPU raises
/// #GP. The null selector clears the base (as this kernel's CPUs do in a guest; on AMD CPUs
/// without NULL_SEL_CLR_BASE it would keep it); Linux's flat GDT entries (user code, 32-bit
/// user code, user data, the per-CPU entry) have base 0; the TLS entries are empty in a 64-bit
/// process and the LDT is empty.
fn gs_load(sel: u16) -> Option<u64> {
    if sel & !3 == 0 {
        return Some(0);
    }
    matches!(sel >> 3, 4 | 5 | 6 | 15).then_some(0)
}

impl Runtime {
    /// Emulates the instruction at `pc` (the context's rip is already past it).
    pub(super) fn emulate(&mut self, pc: u64) {
        let mut code = [0u8; 15];
        let n = Source(&self.p().mem).read_code(pc, &mut code);
        let ins = Decoder::with_ip(64, &code[..n], pc, DecoderOptions::NONE).decode();
        match self.emulate_insn(&ins) {
            Ok(()) => {}
            Err(Stop::Gp(err)) => {
                self.ctx.rip = pc;
                let info = SigInfo { trap: Some((13, err as u64)), ..SigInfo::new(libc::SIGSEGV, libc::SI_KERNEL, 0) };
                self.handle_fault(info);
            }
            Err(Stop::Fault(addr, write)) => {
                self.ctx.rip = pc;
                // (A user-mode read or write: error code 4 or 6.)
                let info = SigInfo { trap: Some((14, if write { 6 } else { 4 })), ..SigInfo::new(libc::SIGSEGV, 1 /* SEGV_MAPERR */, addr) };
                self.handle_fault(info);
            }
            Err(Stop::Unsupported(what)) => {
                let p = self.p();
                let place = p.report.describe_pc(pc, &p.mem);
                p.report.error(&format!("unsupported: {what} at {pc:#x}{place}"));
                self.finish_and_exit(crate::EXIT_UNSUPPORTED);
            }
        }
    }

    fn emulate_insn(&mut self, ins: &Instruction) -> Result<(), Stop> {
        use Code::*;
        // AMD CPUs ignore REX.W on far pointers: `jmp`/`call`/`lgs` through m16:64 read m16:32.
        let amd = rtgrind_jit::cpuid::host_is_amd();
        match ins.code() {
            Iretq | Iretd | Iretw => {
                let w = ins.code().op_size_width();
                let rsp = self.ctx.gpr[reg::RSP as usize];
                let [rip, cs, flags, sp, ss] = [0, 1, 2, 3, 4].map(|i| self.read(rsp + i * w, w));
                let (rip, cs, flags, sp, ss) = (rip?, cs? as u16, flags?, sp?, ss? as u16);
                check_return_cs(cs, "iret")?;
                if ss & !3 == 0 {
                    return Err(Stop::Gp(0));
                }
                if ss != USER_DS {
                    return Err(Stop::Gp(ss & 0xfffc));
                }
                self.ctx.rflags = (self.ctx.rflags & !IRET_FLAGS) | (flags & IRET_FLAGS);
                self.ctx.gpr[reg::RSP as usize] = sp;
                self.ctx.rip = rip;
            }
            Retfq | Retfd | Retfw | Retfq_imm16 | Retfd_imm16 | Retfw_imm16 => {
                let w = ins.code().op_size_width();
                let rsp = self.ctx.gpr[reg::RSP as usize];
                let rip = self.read(rsp, w)?;
                let cs = self.read(rsp + w, w)? as u16;
                check_return_cs(cs, "far return")?;
                let pop = if ins.op_count() > 0 { ins.immediate16() as u64 } else { 0 };
                self.ctx.gpr[reg::RSP as usize] = rsp + 2 * w + pop;
                self.ctx.rip = rip;
            }
            Jmp_m1664 | Jmp_m1632 | Jmp_m1616 | Call_m1664 | Call_m1632 | Call_m1616 => {
                let w = if amd && matches!(ins.code(), Jmp_m1664 | Call_m1664) { 4 } else { ins.code().op_size_width() };
                let at = self.address(ins)?;
                let target = self.read(at, w)?;
                let cs = self.read(at + w, 2)? as u16;
                match cs >> 3 {
                    _ if cs & !3 == 0 => return Err(Stop::Gp(0)),
                    // (RPL 0-2 is allowed for a jump or call to the non-conforming CPL-3 segment.)
                    6 if cs & 4 == 0 => {}
                    4 if cs & 4 == 0 => return Err(Stop::Unsupported(format!("far transfer to the 32-bit code segment {cs:#x} (compatibility mode)"))),
                    _ => return Err(Stop::Gp(cs & 0xfffc)),
                }
                if ins.mnemonic() == Mnemonic::Call {
                    // (The far call pushes cs, then the return address, each `w` bytes.)
                    let rsp = self.ctx.gpr[reg::RSP as usize];
                    self.write(rsp.wrapping_sub(w), w, USER_CS as u64)?;
                    self.write(rsp.wrapping_sub(2 * w), w, ins.next_ip())?;
                    self.ctx.gpr[reg::RSP as usize] = rsp - 2 * w;
                }
                self.ctx.rip = target;
            }
            Lgs_r16_m1616 | Lgs_r32_m1632 | Lgs_r64_m1664 => {
                let w = if amd && ins.code() == Lgs_r64_m1664 { 4 } else { ins.code().op_size_width() };
                let at = self.address(ins)?;
                let off = self.read(at, w)?;
                let sel = self.read(at + w, 2)? as u16;
                self.load_gs(sel)?;
                self.set_gpr(ins.op0_register(), off);
            }
            Popw_GS | Popq_GS => {
                let w = ins.code().op_size_width();
                let rsp = self.ctx.gpr[reg::RSP as usize];
                let sel = self.read(rsp, w)? as u16;
                self.load_gs(sel)?;
                self.ctx.gpr[reg::RSP as usize] = rsp + w;
            }
            Mov_Sreg_r32m16 | Mov_Sreg_r64m16 | Mov_Sreg_rm16 => {
                let sel = match ins.op1_kind() {
                    OpKind::Register => self.gpr(ins.op1_register()) as u16,
                    _ => self.read(self.address(ins)?, 2)? as u16,
                };
                self.load_gs(sel)?;
            }
            Mov_r32m16_Sreg | Mov_r64m16_Sreg | Mov_rm16_Sreg => {
                let sel = self.ctx.gs_selector as u64;
                match ins.op0_kind() {
                    // (A register gets the selector zero-extended; memory its 16 bits.)
                    OpKind::Register => self.set_gpr(ins.op0_register(), sel),
                    _ => self.write(self.address(ins)?, 2, sel)?,
                }
            }
            Pushw_GS | Pushq_GS => {
                let w = ins.code().op_size_width();
                let rsp = self.ctx.gpr[reg::RSP as usize];
                // (A 64-bit push of a segment register writes 2 bytes on some CPUs, 8 on
                // others: the 8 of the zero-extended selector, what both leave in a zeroed slot.)
                self.write(rsp.wrapping_sub(w), w, self.ctx.gs_selector as u64)?;
                self.ctx.gpr[reg::RSP as usize] = rsp - w;
            }
            _ if rtgrind_jit::translate::gs_string(ins) => self.gs_string(ins, rtgrind_jit::translate::string_op(ins))?,
            _ if matches!(ins.mnemonic(), Mnemonic::Jmp | Mnemonic::Call) => {
                // An indirect jump or call through a gs-relative operand.
                let w = ins.memory_size().size() as u64;
                let target = self.read(self.address(ins)?, w)?;
                if ins.mnemonic() == Mnemonic::Call {
                    let rsp = self.ctx.gpr[reg::RSP as usize];
                    self.write(rsp.wrapping_sub(8), 8, ins.next_ip())?;
                    self.ctx.gpr[reg::RSP as usize] = rsp - 8;
                }
                self.ctx.rip = target;
            }
            _ => return Err(Stop::Unsupported(format!("instruction `{ins}`"))),
        }
        Ok(())
    }

    /// `lods`, `movs` or `cmps` whose source is `gs`-relative, with its `rep`, `repe` or `repne`
    /// prefix: element by element as the CPU does it, the registers (rsi, rdi, rcx, or their
    /// 32-bit halves under an address-size prefix) advanced by each element done, so that a
    /// fault leaves them where the CPU would.
    fn gs_string(&mut self, ins: &Instruction, op: Option<StringOp>) -> Result<(), Stop> {
        // (32-bit addressing: esi, edi and ecx.)
        let wide = !(0..ins.op_count()).any(|i| matches!(ins.op_kind(i), OpKind::MemorySegESI | OpKind::MemoryESEDI));
        let mask = if wide { u64::MAX } else { 0xffff_ffff };
        let w = ins.memory_size().size() as u64;
        let step = if self.ctx.rflags & 0x400 != 0 { w.wrapping_neg() } else { w };
        let rep = ins.has_rep_prefix() || ins.has_repe_prefix() || ins.has_repne_prefix();
        let (rsi, rdi, rcx) = (reg::RSI as usize, reg::RDI as usize, reg::RCX as usize);
        loop {
            if rep && self.ctx.gpr[rcx] & mask == 0 {
                return Ok(());
            }
            let si = self.ctx.gpr[rsi] & mask;
            let src = self.read(self.ctx.gs_base.wrapping_add(si), w)?;
            let di = self.ctx.gpr[rdi] & mask;
            let mut equal = true;
            match op {
                Some(StringOp::Lods) => {
                    let r = Register::AL.full_register();
                    let g = &mut self.ctx.gpr[r as usize - Register::RAX as usize];
                    *g = match w {
                        1 => (*g & !0xff) | src,
                        2 => (*g & !0xffff) | src,
                        _ => src,
                    };
                }
                Some(StringOp::Movs) => self.write(di, w, src)?,
                _ => {
                    let dst = self.read(di, w)?;
                    self.ctx.rflags = (self.ctx.rflags & !SUB_FLAGS) | sub_flags(src, dst, w);
                    equal = src == dst;
                }
            }
            self.ctx.gpr[rsi] = advanced(self.ctx.gpr[rsi], step, wide);
            if op != Some(StringOp::Lods) {
                self.ctx.gpr[rdi] = advanced(self.ctx.gpr[rdi], step, wide);
            }
            if !rep {
                return Ok(());
            }
            self.ctx.gpr[rcx] = advanced(self.ctx.gpr[rcx], u64::MAX, wide);
            let compares = op == Some(StringOp::Cmps);
            if compares && ((ins.has_repe_prefix() && !equal) || (ins.has_repne_prefix() && equal)) {
                return Ok(());
            }
        }
    }

    /// Loads `sel` into the guest's `gs` (its selector and base), or #GP.
    fn load_gs(&mut self, sel: u16) -> Result<(), Stop> {
        let base = gs_load(sel).ok_or(Stop::Gp(sel & 0xfffc))?;
        self.ctx.gs_selector = sel;
        self.ctx.gs_base = base;
        Ok(())
    }

    /// The address of `ins`'s memory operand, in the guest's segments.
    fn address(&self, ins: &Instruction) -> Result<u64, Stop> {
        let op = (0..ins.op_count()).find(|&i| ins.op_kind(i) == OpKind::Memory).unwrap_or(0);
        let (gpr, fs, gs) = (self.ctx.gpr, self.ctx.fs_base, self.ctx.gs_base);
        let value = |r: Register, _: usize, _: usize| match r {
            Register::ES | Register::CS | Register::SS | Register::DS => Some(0),
            Register::FS => Some(fs),
            Register::GS => Some(gs),
            _ if r.is_gpr() => Some(gpr[r.full_register() as usize - Register::RAX as usize] & (u64::MAX >> (64 - 8 * r.size()))),
            _ => None,
        };
        ins.virtual_address(op, 0, value).ok_or_else(|| Stop::Unsupported(format!("operand of `{ins}`")))
    }

    fn gpr(&self, r: Register) -> u64 {
        self.ctx.gpr[r.full_register() as usize - Register::RAX as usize]
    }

    /// A general register written as the CPU writes it: 32 bits zero-extend, 16 merge.
    fn set_gpr(&mut self, r: Register, v: u64) {
        let g = &mut self.ctx.gpr[r.full_register() as usize - Register::RAX as usize];
        *g = match r.size() {
            2 => (*g & !0xffff) | (v & 0xffff),
            4 => v & 0xffff_ffff,
            _ => v,
        };
    }

    fn read(&self, addr: u64, width: u64) -> Result<u64, Stop> {
        let mut b = [0u8; 8];
        if !guest_mem::read(addr, &mut b[..width as usize]) {
            return Err(Stop::Fault(addr, false));
        }
        Ok(u64::from_le_bytes(b))
    }

    fn write(&self, addr: u64, width: u64, v: u64) -> Result<(), Stop> {
        if !guest_mem::write(addr, &v.to_le_bytes()[..width as usize]) {
            return Err(Stop::Fault(addr, true));
        }
        Ok(())
    }
}

/// CF, PF, AF, ZF, SF and OF: the flags `cmp` sets.
const SUB_FLAGS: u64 = 0x1 | 0x4 | 0x10 | 0x40 | 0x80 | 0x800;

/// The flags `cmp` of `a` with `b`, both `w` bytes wide, sets.
fn sub_flags(a: u64, b: u64, w: u64) -> u64 {
    let bits = 8 * w as u32;
    let mask = u64::MAX >> (64 - bits);
    let r = a.wrapping_sub(b) & mask;
    let sign = 1u64 << (bits - 1);
    let mut f = 0;
    f |= u64::from(a & mask < b & mask);
    f |= u64::from((r as u8).count_ones().is_multiple_of(2)) << 2;
    f |= (a ^ b ^ r) & 0x10;
    f |= u64::from(r == 0) << 6;
    f |= u64::from(r & sign != 0) << 7;
    f |= u64::from((a ^ b) & (a ^ r) & sign != 0) << 11;
    f
}

/// A string register advanced by `step`: all 64 bits, or (address-size prefix) its lower 32,
/// which the CPU writes as a 32-bit register (the upper half cleared).
fn advanced(v: u64, step: u64, wide: bool) -> u64 {
    if wide {
        v.wrapping_add(step)
    } else {
        (v as u32).wrapping_add(step as u32) as u64
    }
}

/// The code segment a far return or `iret` (at CPL 3) may go back to: the 64-bit user code
/// segment; the 32-bit one is compatibility mode, which rtgrind does not run (nor does
/// Valgrind); a null one is #GP(0), any other #GP(selector) (an RPL below 3 would be a return
/// to a more privileged level).
fn check_return_cs(cs: u16, what: &str) -> Result<(), Stop> {
    match cs {
        USER_CS => Ok(()),
        USER32_CS => Err(Stop::Unsupported(format!("{what} to the 32-bit code segment {cs:#x} (compatibility mode)"))),
        _ if cs & !3 == 0 => Err(Stop::Gp(0)),
        _ => Err(Stop::Gp(cs & 0xfffc)),
    }
}

/// The operand size of a far transfer or stack operation, in bytes.
trait OpSize {
    fn op_size_width(self) -> u64;
}

impl OpSize for Code {
    fn op_size_width(self) -> u64 {
        use Code::*;
        match self {
            Iretw | Retfw | Retfw_imm16 | Jmp_m1616 | Call_m1616 | Lgs_r16_m1616 | Popw_GS | Pushw_GS => 2,
            Iretd | Retfd | Retfd_imm16 | Jmp_m1632 | Call_m1632 | Lgs_r32_m1632 => 4,
            _ => 8,
        }
    }
}
