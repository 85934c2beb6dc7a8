//! Inline shadow propagation, driven by iced-x86's `InstructionInfo`: before each guest
//! instruction runs, code computes the shadows of what it will write from the shadows of
//! what it reads.
//!
//! Classes (the rule for each, then the special cases):
//! - **compute** (the default): every written location (register, memory, flags) becomes
//!   tainted in all its bytes if any read location has a tainted byte. A conditionally
//!   written destination (`cmov`) counts as read too; an instruction that writes only some
//!   status flags (`inc`) reads the others.
//! - **copy** (`mov`, `movzx`, `push`, `pop`, vector moves, `movd`/`movq`): the destination
//!   gets the source's mask byte for byte; a narrower source leaves the upper bytes clean.
//! - **zeroing idioms** (`xor r,r`, `sub r,r`, `pxor x,x`, …): destination and flags clean.
//! - **`xchg`** of two registers swaps their masks.
//! - **string instructions** (`movs`, `stos`, `lods`, `cmps`, `scas`, with or without `rep`):
//!   after the instruction, a call-out replays its element range on the shadow (how many
//!   elements ran is known only then).
//! - `syscall` is left to the syscall hooks; `vzeroupper` and control transfers without data
//!   are skipped (`call` stores a clean return address).
//!
//! Register widths follow the hardware: 8- and 16-bit writes keep the other bytes' shadow,
//! 32-bit writes clear the upper four, VEX-encoded xmm writes clear the upper 16 bytes of the
//! ymm shadow, legacy SSE writes keep them. Address registers are not data: the shadow of a
//! loaded value is the shadow of the memory, not of the pointer (tools that care about
//! tainted addresses check them separately, see `address_taint`).

use super::memory::{ShadowMemory, GUARD};
use super::{gpr_slot, origin, slot, Sites};
use rtgrind_jit::context::counts_in_registers;
use rtgrind_jit::iced_x86::{Code, EncodingKind, Instruction, InstructionInfo, MemoryOperand, Mnemonic, OpAccess, OpKind, Register, UsedMemory};
use rtgrind_jit::instrument::code_asm::*;
use rtgrind_jit::instrument::{tool_area, Inline, InsnSite, Version};
use rtgrind_jit::ThreadContext;
use smallvec::SmallVec;
use std::collections::{HashMap, HashSet};

/// A `gs`-relative qword of the tool area.
fn ta(off: usize) -> AsmMemoryOperand {
    qword_ptr(tool_area(off)).gs()
}

fn vec_slot(n: usize) -> usize {
    slot::VEC + 8 * n
}

fn num(r: AsmRegister64) -> u32 {
    Register::from(r) as u32 - Register::RAX as u32
}
/// The 32-, 16- and 8-bit parts of a 64-bit register (for tools' inline code too).
pub fn r32(r: AsmRegister64) -> AsmRegister32 {
    get_gpr32(Register::EAX + num(r)).unwrap()
}
pub fn r16(r: AsmRegister64) -> AsmRegister16 {
    get_gpr16(Register::AX + num(r)).unwrap()
}
pub fn r8(r: AsmRegister64) -> AsmRegister8 {
    let n = num(r);
    // Byte registers: al, cl, dl, bl, spl, bpl, sil, dil, r8b…
    let reg = if n < 4 { Register::AL + n } else { Register::SPL + (n - 4) };
    get_gpr8(reg).unwrap()
}

/// Which part of a register an operand names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Low8,
    High8,
    W16,
    W32,
    W64,
    /// A vector register: 16 (xmm) or 32 (ymm) bytes; `vex`: a VEX write clears the upper half.
    Vec {
        bytes: u32,
        vex: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Reg {
    n: usize,
    part: Part,
}

impl Reg {
    fn of(r: Register, vex: bool) -> Option<Reg> {
        if r.is_gpr() {
            let n = r.full_register().number() - Register::RAX.number();
            let part = match r.size() {
                1 if matches!(r, Register::AH | Register::CH | Register::DH | Register::BH) => Part::High8,
                1 => Part::Low8,
                2 => Part::W16,
                4 => Part::W32,
                _ => Part::W64,
            };
            return Some(Reg { n, part });
        }
        if r.is_xmm() {
            return Some(Reg { n: r.number() - Register::XMM0.number(), part: Part::Vec { bytes: 16, vex } }).filter(|r| r.n < 16);
        }
        if r.is_ymm() {
            return Some(Reg { n: r.number() - Register::YMM0.number(), part: Part::Vec { bytes: 32, vex } }).filter(|r| r.n < 16);
        }
        None
    }

    /// Mask bits this part covers, counted from bit 0 of the operand.
    fn full(self) -> u64 {
        match self.part {
            Part::Low8 | Part::High8 => 1,
            Part::W16 => 3,
            Part::W32 => 0xf,
            Part::W64 => 0xff,
            Part::Vec { bytes, .. } => (1u64 << bytes) - 1,
        }
    }
}

/// What an instruction reads and writes, as far as data goes.
#[derive(Default, Debug, Clone)]
struct Operands {
    // (Inline: made for every instruction translated, where heap lists cost a tenth of a
    // traced run's instrumentation.)
    src_regs: SmallVec<[Reg; 4]>,
    dst_regs: SmallVec<[Reg; 4]>,
    src_mem: SmallVec<[UsedMemory; 1]>,
    dst_mem: SmallVec<[UsedMemory; 1]>,
    reads_flags: bool,
    writes_flags: bool,
    /// Writes some status flags but not all (the rest keep their shadow).
    partial_flags: bool,
}

const STATUS_FLAGS: u32 = 0x3f; // iced RflagsBits OF SF ZF AF CF PF

fn reads(a: OpAccess) -> bool {
    matches!(a, OpAccess::Read | OpAccess::ReadWrite | OpAccess::CondRead | OpAccess::ReadCondWrite | OpAccess::CondWrite)
}
pub(crate) fn writes(a: OpAccess) -> bool {
    matches!(a, OpAccess::Write | OpAccess::ReadWrite | OpAccess::CondWrite | OpAccess::ReadCondWrite)
}

/// Memory accesses with a real address (not `lea`, not VSIB gathers, known size).
fn real_memory(info: &InstructionInfo) -> impl Iterator<Item = &UsedMemory> {
    info.used_memory()
        .iter()
        .filter(|m| m.access() != OpAccess::NoMemAccess && !m.index().is_xmm() && !m.index().is_ymm() && !m.index().is_zmm() && m.memory_size().size() > 0)
}

fn operands(ins: &Instruction, info: &InstructionInfo) -> Operands {
    let vex = ins.encoding() == EncodingKind::VEX;
    let mut address_regs: SmallVec<[Register; 4]> = SmallVec::new();
    for m in real_memory(info) {
        address_regs.extend([m.base().full_register(), m.index().full_register()]);
    }
    let mut o = Operands::default();
    for u in info.used_registers() {
        let full = u.register().full_register();
        // iced names the whole register a write reaches (rax for a write to eax, zmm for a
        // VEX write to xmm); the operand says which part the instruction means.
        let named = (0..ins.op_count()).filter(|&i| ins.op_kind(i) == OpKind::Register).map(|i| ins.op_register(i)).find(|e| e.full_register() == full);
        let is_explicit = named.is_some();
        let r = match named {
            Some(e) => e,
            None if u.register().is_zmm() => Register::YMM0 + (u.register().number() as u32),
            None => u.register(),
        };
        // The stack pointer of push/pop/call/ret/leave moves by a constant: not data.
        if full == Register::RSP && !is_explicit {
            continue;
        }
        let Some(reg) = Reg::of(r, vex) else { continue };
        if reads(u.access()) && (is_explicit || !address_regs.contains(&full)) {
            o.src_regs.push(reg);
        }
        if writes(u.access()) {
            o.dst_regs.push(reg);
        }
    }
    for m in real_memory(info) {
        if reads(m.access()) {
            o.src_mem.push(*m);
        }
        if writes(m.access()) {
            o.dst_mem.push(*m);
        }
    }
    o.reads_flags = ins.rflags_read() & STATUS_FLAGS != 0;
    let written = ins.rflags_modified() & STATUS_FLAGS;
    o.writes_flags = written != 0;
    o.partial_flags = o.writes_flags && written != STATUS_FLAGS;
    o
}

fn is_copy(ins: &Instruction) -> bool {
    use Mnemonic::*;
    match ins.mnemonic() {
        Mov | Movzx | Push | Pop | Movd | Movq | Movdqa | Movdqu | Movaps | Movups | Movapd | Movupd | Lddqu | Movnti | Movntdq | Movntps | Movntpd | Vmovd
        | Vmovq | Vmovdqa | Vmovdqu | Vmovaps | Vmovups | Vmovapd | Vmovupd | Vlddqu | Vmovntdq | Vmovntps | Vmovntpd | Movbe => true,
        // Only the memory forms zero the rest of the register; reg-reg forms merge.
        Movss | Movsd | Vmovss | Vmovsd => ins.op_kind(0) == OpKind::Memory || ins.op_kind(1) == OpKind::Memory,
        _ => false,
    }
}

fn is_zeroing(ins: &Instruction) -> bool {
    use Mnemonic::*;
    let zeroing = matches!(
        ins.mnemonic(),
        Xor | Sub
            | Sbb
            | Pxor
            | Xorps
            | Xorpd
            | Vpxor
            | Vxorps
            | Vxorpd
            | Psubb
            | Psubw
            | Psubd
            | Psubq
            | Vpsubb
            | Vpsubw
            | Vpsubd
            | Vpsubq
            | Pcmpeqb
            | Pcmpeqw
            | Pcmpeqd
            | Vpcmpeqb
            | Vpcmpeqw
            | Vpcmpeqd
    ) && ins.mnemonic() != Sbb;
    if !zeroing || ins.op_count() < 2 {
        return false;
    }
    let first_src = ins.op_count() as usize - 2;
    (first_src..ins.op_count() as usize).all(|i| ins.op_kind(i as u32) == OpKind::Register)
        && ins.op_register(first_src as u32) == ins.op_register(first_src as u32 + 1)
}

fn is_string(ins: &Instruction) -> bool {
    ins.is_string_instruction()
        && !matches!(ins.mnemonic(), Mnemonic::Insb | Mnemonic::Insw | Mnemonic::Insd | Mnemonic::Outsb | Mnemonic::Outsw | Mnemonic::Outsd)
}

/// Skipped by propagation: no data moves, or a hook handles it.
fn is_skipped(ins: &Instruction) -> bool {
    use Mnemonic::*;
    matches!(
        ins.mnemonic(),
        Syscall
            | Nop
            | Endbr64
            | Pause
            | Lfence
            | Sfence
            | Mfence
            | Prefetchnta
            | Prefetcht0
            | Prefetcht1
            | Prefetcht2
            | Prefetchw
            | Vzeroupper
            | Jmp
            | Ret
            | Ud2
            | Int3
    ) || ins.is_jcc_short_or_near()
        || ins.is_loop()
        || ins.is_loopcc()
        || ins.is_jcx_short()
}

/// What a load from memory nobody defined takes its origin from, under a policy (see
/// `Propagation::undefined_takes_address`).
#[derive(PartialEq, Eq)]
enum AddressSource {
    /// The register that chose the address: the index, else the base (not the stack or frame
    /// pointer).
    Register(Register),
    /// Nothing: a global's address (RIP-relative or absolute), so the load defines it.
    Defined,
    /// Nothing, and nothing is defined: an address through the stack or frame pointer only.
    Nothing,
}

fn address_source(m: &UsedMemory) -> AddressSource {
    let usable = |x: Register| x.is_gpr64() && !matches!(x, Register::RSP | Register::RBP);
    if usable(m.index()) {
        AddressSource::Register(m.index())
    } else if usable(m.base()) {
        AddressSource::Register(m.base())
    } else if m.base() == Register::RIP || (m.base() == Register::None && m.index() == Register::None) {
        AddressSource::Defined
    } else {
        AddressSource::Nothing
    }
}

/// Scratch registers of one propagation sequence.
#[derive(Clone, Copy)]
struct Regs {
    /// The effective address of the access being shadowed.
    a: AsmRegister64,
    t: AsmRegister64,
    u: AsmRegister64,
    /// A shadow mask loaded from memory or a register.
    m: AsmRegister64,
    v: AsmRegister64,
    /// The merged shadow of all sources.
    acc: AsmRegister64,
}

impl Regs {
    /// Borrows the registers a sequence needs: six with memory accesses, four without (then
    /// `a` and `v`, used only by memory paths, alias `t`).
    fn lend(b: &mut Inline, memory: bool) -> Regs {
        // The accumulator first: it is the one most code names, and the first register lent
        // is the same at every instruction (one spilled already), so fewer registers of a
        // block need a spill and a reload.
        let (acc, m, t, u) = (b.scratch(), b.scratch(), b.scratch(), b.scratch());
        let (a, v) = if memory { (b.scratch(), b.scratch()) } else { (t, t) };
        Regs { a, t, u, m, v, acc }
    }
}

/// Whether a copy's or call's taint can be propagated without touching the flags: memory
/// accesses of at most 8 bytes (the wider ones merge masks with `or`), and register
/// destinations written whole (the partial writes merge with `and`/`or`).
fn flag_free_operands(o: &Operands) -> bool {
    o.src_mem.iter().chain(&o.dst_mem).all(|m| matches!(m.memory_size().size(), 1 | 2 | 4 | 8))
        && o.dst_regs.iter().all(|d| matches!(d.part, Part::W64 | Part::W32 | Part::Vec { vex: true, .. } | Part::Vec { bytes: 32, .. }))
        && !o.writes_flags
}

/// `dst` = the or of the shadows of registers `regs` (whole registers), with ZF set if all are
/// clean.
fn any_tainted(a: &mut CodeAssembler, dst: AsmRegister64, regs: &[Reg]) {
    a.xor(r32(dst), r32(dst)).unwrap();
    for &d in regs {
        let slot = match d.part {
            Part::Vec { .. } => vec_slot(d.n),
            _ => gpr_slot(d.n),
        };
        a.or(dst, ta(slot)).unwrap();
    }
    a.test(dst, dst).unwrap();
}

/// Sizes the inline paths handle; others go out of line.
fn inline_size(n: usize) -> bool {
    matches!(n, 1 | 2 | 4 | 8 | 16 | 32)
}

/// Calls `f` for the access at the address in `r.a` of `size` bytes, with `val` (a mask or an
/// origin to store) in the tool area's TMP slots, and the propagation's constant `k` as its
/// argument; a result comes back in TMP_MASK.
fn out_of_line(p: &Propagation, b: &mut Inline, r: Regs, size: usize, val: Option<AsmRegister64>, f: rtgrind_jit::instrument::Callout, k: u32) {
    let a = b.asm();
    a.mov(ta(slot::TMP_EA), r.a).unwrap();
    a.mov(ta(slot::TMP_SIZE), size as i32).unwrap();
    if let Some(v) = val {
        a.mov(ta(slot::TMP_MASK), v).unwrap();
    }
    p.callout(b, f, k, r.v);
}

/// The propagation's per-run constants (`Propagation::constant`): its shadow memories and its
/// call-outs' argument. A tool's own constants are numbered from `CONSTANTS` up.
pub const SHADOW: u32 = 0;
pub const ORIGINS: u32 = 1;
pub const CALLOUT_ARG: u32 = 2;
pub const CONSTANTS: u32 = 3;

/// `r.t` = the shadow address of the guest address in `r.a` (see `shadow_address_of`;
/// clobbers `r.u`).
fn shadow_address(b: &mut Inline, r: Regs, table: u32) {
    shadow_address_of(b, r.a, r.t, r.u, table);
}

/// `dst` = what to add to the guest address in `addr` to reach its shadow, through the delta
/// table at `table` (below 2 GiB; see `memory.rs`): `[addr + dst]` is the shadow. Flag-free
/// (BMI2 `pext`), so a copy's shadow needs no save of the guest's live flags.
pub(crate) fn shadow_delta_of(b: &mut Inline, addr: AsmRegister64, dst: AsmRegister64, table: u32) {
    let a = b.asm();
    a.pext(dst, addr, ta(slot::SLICE_SEL)).unwrap();
    a.mov(dst, qword_ptr(dst * 8 + table as i32)).unwrap();
}

/// The four summary bytes (`memory.rs`) from the chunk before that of the address in `addr`,
/// through `dst` (which gets the chunk's index): every byte an access within 64 KiB of the
/// address can reach lies in those chunks. Flag-free.
pub(crate) fn summary_bytes_of(a: &mut CodeAssembler, addr: AsmRegister64, dst: AsmRegister64, summary: u32) -> AsmMemoryOperand {
    a.pext(dst, addr, ta(slot::SUMMARY_SEL)).unwrap();
    dword_ptr(dst + (summary as i32 - 1))
}

/// `dst` = a granule number of `addr`, flag-free, for addressing as `[dst*8 + ...]`: scaled by
/// 8 it is `addr & !7`. It is `addr` rotated right by 3 (the low three bits go to the top,
/// where the scaling shifts them out): a `rorx`, 6 bytes, where a `pext` of the bits above the
/// low three took 11 and a load of its mask (issue 29).
fn granule_number(a: &mut CodeAssembler, dst: AsmRegister64, addr: AsmRegister64) {
    a.rorx(dst, addr, 3).unwrap();
}

/// `dst` = the origin-shadow address of the granule (8 aligned bytes) holding the guest
/// address in `addr`, `delta` = the address's delta (see `shadow_delta_of`). Flag-free.
fn granule_of(b: &mut Inline, addr: AsmRegister64, dst: AsmRegister64, delta: AsmRegister64, table: u32) {
    shadow_delta_of(b, addr, delta, table);
    let a = b.asm();
    granule_number(a, dst, addr);
    a.lea(dst, qword_ptr(dst * 8 + delta)).unwrap();
}

/// `dst` = the shadow address of the guest address in `addr` (see `shadow_delta_of`);
/// clobbers `tmp`.
pub(crate) fn shadow_address_of(b: &mut Inline, addr: AsmRegister64, dst: AsmRegister64, tmp: AsmRegister64, table: u32) {
    shadow_delta_of(b, addr, tmp, table);
    b.asm().lea(dst, qword_ptr(addr + tmp)).unwrap();
}

/// Tool-area slot of the `pext` mask that takes a register part's shadow bits to bit 0.
fn part_mask(part: Part) -> Option<usize> {
    match part {
        Part::Low8 => Some(slot::PART_LOW8),
        Part::High8 => Some(slot::PART_HIGH8),
        Part::W16 => Some(slot::PART_W16),
        Part::W32 => Some(slot::PART_W32),
        _ => None,
    }
}

/// `dst = effective address of m` (guest registers are intact in tool code).
pub fn effective_address(b: &mut Inline, dst: AsmRegister64, m: &UsedMemory, scratch: AsmRegister64) {
    let a = b.asm();
    let (base, index) = (m.base(), m.index());
    if base == Register::RIP || base == Register::EIP || (base == Register::None && index == Register::None) {
        a.mov(dst, m.displacement()).unwrap();
    } else if index.size() == 1 {
        // xlat: [rbx + al]
        a.movzx(r32(scratch), get_gpr8(index).unwrap()).unwrap();
        let op = MemoryOperand::new(base, Register::from(scratch), 1, m.displacement() as i64, 8, false, Register::None);
        a.add_instruction(Instruction::with2(Code::Lea_r64_m, Register::from(dst), op).unwrap()).unwrap();
    } else {
        let disp = m.displacement() as i64;
        let disp = if base.size() == 4 || index.size() == 4 { disp as i32 as i64 } else { disp };
        if i32::try_from(disp).is_ok() {
            let displ_size = if base.size() == 4 || index.size() == 4 { 4 } else { 8 };
            let op = MemoryOperand::new(base, index, m.scale(), disp, displ_size, false, Register::None);
            a.add_instruction(Instruction::with2(Code::Lea_r64_m, Register::from(dst), op).unwrap()).unwrap();
        } else {
            let op = MemoryOperand::new(base, index, m.scale(), 0, 0, false, Register::None);
            a.add_instruction(Instruction::with2(Code::Lea_r64_m, Register::from(dst), op).unwrap()).unwrap();
            a.mov(scratch, disp as u64).unwrap();
            a.lea(dst, qword_ptr(dst + scratch)).unwrap();
        }
    }
    if m.segment() == Register::FS {
        a.rdfsbase(scratch).unwrap();
        a.lea(dst, qword_ptr(dst + scratch)).unwrap();
    }
}

/// A register holding the address access `m` goes to: its base register itself for `[base]`,
/// else `dst` (the effective address computed with `scratch`).
fn address_in(b: &mut Inline, m: &UsedMemory, dst: AsmRegister64, scratch: AsmRegister64) -> AsmRegister64 {
    match get_gpr64(m.base()) {
        Some(x) if through_plain_base(m) && m.displacement() == 0 => x,
        _ => {
            effective_address(b, dst, m, scratch);
            dst
        }
    }
}

/// `dst` = the 8 shadow bytes of the guest address in `addr` (non-zero if any of the 8 guest
/// bytes there is tainted); clobbers `t`.
pub fn shadow_qword(b: &mut Inline, addr: AsmRegister64, t: AsmRegister64, dst: AsmRegister64, table: u32) {
    shadow_address_of(b, addr, dst, t, table);
    b.asm().mov(dst, qword_ptr(dst)).unwrap();
}

/// Whether tool code may use AVX-512 temporaries (ymm20-31, and mask registers k2-k7): they
/// exist only with AVX-512, which the guest's cpuid hides, so no guest value lives there
/// (xmm16-19 and k1 are the engine's: the quantum of threaded programs and the tool's
/// counter, see `rtgrind_jit::context::counts_in_registers`). Origin code uses ymm20 within
/// one instruction's code only (nothing is kept across guest instructions, so a guest `xrstor`
/// cannot undo it). `RTGRIND_AVX512=0` turns it off (the general-register code is the same
/// shadow state, for comparisons and tests).
pub(crate) fn wide_temporaries() -> bool {
    static WIDE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WIDE.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::env::var("RTGRIND_AVX512").map_or(true, |v| v != "0")
    })
}

/// The 32 bytes of tool-area slots from `off` (a vector register's four lane origins).
fn ta_lanes(off: usize) -> AsmMemoryOperand {
    ymmword_ptr(tool_area(off)).gs()
}

/// The propagation of one tool: taint bits (`shadow`), origins (`origins`, with the sites
/// they name), or both, generated by one pass over each instruction's operands.
pub struct Propagation {
    pub shadow: *mut ShadowMemory,
    pub origins: Option<*mut ShadowMemory>,
    pub sites: Sites,
    /// How origins define (None: every computation defines, as for `--tool=taint`).
    pub policy: Option<Policy>,
    /// Propagate the taint bits (a tool may leave them off while nothing can be tainted).
    pub taint_on: bool,
    /// Count blocks in `slot::BLOCKS` even without origins (instances name suppression points).
    pub count_blocks: bool,
    /// The tool's word, for the next instruction only: nothing reads the origin of the status
    /// flags it writes (the tool looked ahead), so that origin is not written; an instruction
    /// that writes only flags then needs no origin code at all.
    pub flags_origin_unread: bool,
    /// Register origin slots (bit = (slot - `ORIGIN_GPR`) / 8) that hold a non-zero origin at
    /// this point of the block being translated: a computation reading one cannot come out
    /// undefined, so it needs no fallback to a constant.
    known: u64,
    /// Slots the instruction being translated makes non-zero.
    known_new: u64,
    /// Per instruction of the block being translated (by address): registers whose origin
    /// it would write for nothing (`dead_origins`; set by a tool that looked ahead, empty
    /// otherwise).
    pub dead_origins: HashMap<u64, u32>,
    /// Those of the instruction being translated.
    dead_here: u32,
    /// Origin granules of base registers, in registers kept for the block (see
    /// `cached_granule`), and the instruction their bases' moves were last tracked past.
    granules: Vec<CachedGranule>,
    granules_next_pc: Option<u64>,
    /// The instruction being instrumented ends the block (a call, a jump, a return): nothing
    /// later in it reads a register cached now.
    ends_block: bool,
    /// Base registers other than the stack pointer that more than one access of the block
    /// goes through (bit = number; see `fast::BlockUse`): their granules are worth a register.
    pub block_bases: u16,
    /// The stack pointer is a multiple of 8 here (a fast version checked it at its start, and
    /// it has moved by multiples of 8 since): all its granules are one register's, and an
    /// aligned 8-byte access (a push, a pop) has one granule, not two.
    pub stack_aligned: bool,
    /// The block's instance, in a register kept for the block (see `instance_register`).
    instance: Option<AsmRegister64>,
    /// The instruction being instrumented is a library's under a policy with a call word:
    /// its definitions take their instance from that word (see `Policy`).
    library_call: Option<usize>,
    /// Log the dynamic dependence graph (origins without a policy only; see [`DepLog`]).
    pub log: Option<DepLog>,
    callout: Box<CalloutArg>,
    /// Its call-outs' arguments are relocated (`Inline::callout_constant`): a tool whose code
    /// may run in another process (`Tool::relocatable_code`) says so.
    pub relocatable: bool,
    /// The shadow memories' delta tables (below 2 GiB).
    pub taint_table: u32,
    origin_table: u32,
    /// The taint shadow's summary (`memory.rs`), or 0.
    pub summary: u32,
    /// Instructions of the block being translated (by address) whose write of the flags'
    /// taint is dead (`dead_flags`; set by a tool that looked ahead, empty otherwise).
    pub dead_flags: HashSet<u64>,
    /// Instructions (by address) right before a conditional branch that reads the flags they
    /// write: their flags' taint (0 or 1) stays in a register for the branch's code to take
    /// (`flags_register`; set by a tool that counts tainted branches, empty otherwise).
    pub flags_for_branch: HashSet<u64>,
    /// That register, and the address of the instruction it is kept for.
    flags_reg: Option<(AsmRegister64, u64)>,
}

/// Where a propagation logs dependences: every computation (and every copy in the main
/// program, and every constant written) is a node, named by the origin it defines, and
/// appends a record `[header, node, source origins…]` (header: [`dep::COMPUTE`] | count << 8)
/// to a buffer. Nodes are instruction instances, so a dependence distance counts instructions.
#[derive(Clone, Copy, Debug)]
pub struct DepLog {
    /// Address of the u64 holding the next record's address.
    pub cursor: u64,
    /// Records are not written at or past this address (the log is full).
    pub limit: u64,
    /// The main program's code range.
    pub main: (u64, u64),
}

/// Record kinds of a dependence log (the low byte of a record's header).
pub mod dep {
    pub const COMPUTE: u64 = 1;
    /// Source count in the header.
    pub const COUNT_SHIFT: u32 = 8;
    /// Sources a compute record holds at most (the rest are dropped).
    pub const MAX_SOURCES: usize = 6;
}

/// Origins as the suppression tool needs them: the definition of a value is where a
/// programmer would say it was defined.
/// - A store in the main program defines the location it writes (`q2 = x` defines q2),
///   unless it is into the frame (through the stack or frame pointer) and the value crossed
///   a call as an argument (bit `origin::INCOMING`, set by the tool on the argument registers
///   at a call): spilling a parameter keeps the caller's definition. Storing a call's result
///   (`v = f()`) is an assignment and defines.
/// - A store in a library keeps the origin of a value the program defined (memcpy moves the
///   program's corruption, it does not make it) and defines the rest: strcpy of input bytes,
///   or of data a library wrote (an overflowing strcpy of a strncpy'd copy is the corruption);
///   `rep movs` and `rep stos` alike. A library's store through the stack pointer keeps any
///   origin: saving registers in its own frame (callee-saved registers, the varargs
///   register-save area, lazy binding's trampoline) moves a value, it defines nothing (pushes
///   and pops are copies everywhere).
/// - A computation in registers takes its most recent source's origin (the address of
///   `a[c]` comes from `c`, assigned just before, rather than from `a`, set up long ago).
///   Constants (an immediate moved to a register, a computation with no defined source) get
///   an origin without the real-definition bit (`origin::REAL`): below any real definition,
///   so a mask or a base address never outranks the data it is combined with.
/// - A pointer-sized load in the program from memory nobody defined takes its address's
///   origin (a NULL read from a never-written slot is blamed on how the slot was chosen).
/// - A library's definitions are named by the program's call they belong to (`call_word`):
///   their instance is that of the program's innermost call into the library, so the stores
///   of one `strcpy` are one instance of each of its instructions, and a `sscanf` in `parse`
///   is not one in `main`.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    /// The main program's code range.
    pub main: (u64, u64),
    /// Tool-area word holding the instance word of the program's innermost call (the tool
    /// sets it at each call in the program), for the instance of a library's definitions.
    pub call_word: Option<usize>,
    /// The instance the program's own code starts at (a power of two): origins below it are
    /// the loader's (see `undefined_takes_address`).
    pub first_instance: u64,
    /// The C runtime's start-up code in the program (the entry point's function): its copy of
    /// the stack pointer passes the loader's argv on, it makes no local's address.
    pub startup: (u64, u64),
}

impl Policy {
    pub fn is_main(&self, pc: u64) -> bool {
        (self.main.0..self.main.1).contains(&pc)
    }
}

/// Bit of an origin saying its site is in the main program (`Sites` numbers those apart).
const MAIN_SITE_BIT: u32 = origin::SITE_SHIFT + 19;

/// `mov r, rsp` into a general register other than the frame pointer.
fn copies_stack_pointer(ins: &Instruction) -> bool {
    ins.mnemonic() == Mnemonic::Mov
        && ins.op0_kind() == OpKind::Register
        && ins.op0_register().is_gpr64()
        && !matches!(ins.op0_register(), Register::RSP | Register::RBP)
        && ins.op1_kind() == OpKind::Register
        && ins.op1_register() == Register::RSP
}

/// A store into the frame of the code running (through the stack pointer): with a
/// [`Policy`], a library's such store is a save or spill that moves a value without defining it.
fn frame_store(o: &Operands) -> bool {
    o.dst_mem.first().is_some_and(|m| m.base() == Register::RSP)
}

/// A store of the program into its frame (through the stack or frame pointer), where a
/// compiler spills an argument.
fn spill(o: &Operands) -> bool {
    o.dst_mem.first().is_some_and(|m| matches!(m.base(), Register::RSP | Register::RBP))
}

/// What the out-of-line call-outs of a propagation need.
#[repr(C)]
pub struct CalloutArg {
    pub shadow: *mut ShadowMemory,
    pub origins: *mut ShadowMemory,
}

impl Propagation {
    pub fn new(shadow: *mut ShadowMemory, origins: Option<*mut ShadowMemory>) -> Propagation {
        let callout = Box::new(CalloutArg { shadow, origins: origins.unwrap_or(std::ptr::null_mut()) });
        // SAFETY: the shadow memories outlive the propagation (their tool owns both).
        let table = |m: *mut ShadowMemory| unsafe { (*m).delta_table_addr() };
        let (taint_table, origin_table) = (table(shadow), origins.map_or(0, table));
        // SAFETY: as above.
        let summary = unsafe { (*shadow).summary_addr() }.unwrap_or(0);
        Propagation {
            shadow,
            origins,
            sites: Sites::default(),
            policy: None,
            taint_on: true,
            count_blocks: false,
            flags_origin_unread: false,
            known: 0,
            known_new: 0,
            dead_origins: HashMap::new(),
            dead_here: 0,
            granules: Vec::new(),
            granules_next_pc: None,
            ends_block: false,
            block_bases: 0,
            stack_aligned: false,
            instance: None,
            library_call: None,
            log: None,
            callout,
            relocatable: false,
            taint_table,
            origin_table,
            summary,
            dead_flags: HashSet::new(),
            flags_for_branch: HashSet::new(),
            flags_reg: None,
        }
    }

    /// The value of constant `k` (`SHADOW`, `ORIGINS`, `CALLOUT_ARG`) in this run.
    pub fn constant(&self, k: u32) -> Option<u64> {
        match k {
            SHADOW => Some(self.shadow as u64),
            ORIGINS => Some(self.origins.map_or(0, |o| o as u64)),
            CALLOUT_ARG => Some(&*self.callout as *const CalloutArg as u64),
            _ => None,
        }
    }

    /// Calls `f` out with constant `k` as its argument: relocated where the tool's code must
    /// be (`relocatable`), else as it is.
    fn callout(&self, b: &mut Inline, f: rtgrind_jit::instrument::Callout, k: u32, scratch: AsmRegister64) {
        let value = self.constant(k).expect("one of the propagation's constants");
        match self.relocatable {
            true => b.callout_constant(f, k, value, scratch),
            false => b.callout(f, value, scratch),
        }
    }

    /// Whether the addresses its code holds of the shadow memories are at their fixed places
    /// (`ShadowMemory::at_fixed_places`), so that code made in another run may use them.
    pub fn at_fixed_places(&self) -> bool {
        // SAFETY: the shadow memories outlive the propagation (their tool owns both).
        let fixed = |m: *mut ShadowMemory| unsafe { (*m).at_fixed_places() };
        fixed(self.shadow) && self.origins.is_none_or(fixed)
    }

    /// `r.m = mask of the size bytes at the access m` (bit i = byte i tainted).
    fn load_mask(&self, b: &mut Inline, r: Regs, m: &UsedMemory) {
        let size = m.memory_size().size();
        if !inline_size(size) {
            effective_address(b, r.a, m, r.t);
            out_of_line(self, b, r, size, None, load_slow, SHADOW);
            b.asm().mov(r.m, ta(slot::TMP_MASK)).unwrap();
            return;
        }
        // The shadow at the address plus its delta.
        let addr = address_in(b, m, r.a, r.t);
        shadow_delta_of(b, addr, r.t, self.taint_table);
        let at = |k: usize| addr + r.t + (8 * k) as i32;
        let a = b.asm();
        match size {
            1 => a.movzx(r32(r.m), byte_ptr(at(0))).unwrap(),
            2 => {
                a.movzx(r32(r.m), word_ptr(at(0))).unwrap();
                a.pext(r32(r.m), r32(r.m), dword_ptr(tool_area(slot::K01)).gs()).unwrap();
            }
            4 => {
                a.mov(r32(r.m), dword_ptr(at(0))).unwrap();
                a.pext(r32(r.m), r32(r.m), dword_ptr(tool_area(slot::K01)).gs()).unwrap();
            }
            _ => {
                a.mov(r.m, qword_ptr(at(0))).unwrap();
                a.pext(r.m, r.m, ta(slot::K01)).unwrap();
                for k in 1..size / 8 {
                    a.mov(r.v, qword_ptr(at(k))).unwrap();
                    a.pext(r.v, r.v, ta(slot::K01)).unwrap();
                    a.shl(r.v, (8 * k) as u32).unwrap();
                    a.or(r.m, r.v).unwrap();
                }
            }
        }
    }

    /// `r.acc |= ` something non-zero if any byte of the access m is tainted: what a
    /// computation needs, since it spreads any taint to all it writes. The shadow bytes
    /// themselves, or-ed a qword at a time (no `pext` into a mask).
    fn or_any_tainted(&self, b: &mut Inline, r: Regs, m: &UsedMemory) {
        let size = m.memory_size().size();
        if !inline_size(size) {
            self.load_mask(b, r, m);
            b.asm().or(r.acc, r.m).unwrap();
            return;
        }
        // The shadow at the address plus its delta (no `lea` of the shadow address), or-ed into
        // the accumulator a qword at a time.
        let addr = address_in(b, m, r.a, r.t);
        shadow_delta_of(b, addr, r.u, self.taint_table);
        let a = b.asm();
        match size {
            1 => a.movzx(r32(r.m), byte_ptr(addr + r.u)).unwrap(),
            2 => a.movzx(r32(r.m), word_ptr(addr + r.u)).unwrap(),
            4 => a.mov(r32(r.m), dword_ptr(addr + r.u)).unwrap(),
            _ => {
                for k in 0..size / 8 {
                    a.or(r.acc, qword_ptr(addr + r.u + (8 * k) as i32)).unwrap();
                }
                return;
            }
        }
        a.or(r.acc, r.m).unwrap();
    }

    /// Stores mask `val` as the shadow of the access m.
    fn store_mask(&self, b: &mut Inline, r: Regs, m: &UsedMemory, val: AsmRegister64) {
        let size = m.memory_size().size();
        if !inline_size(size) {
            effective_address(b, r.a, m, r.t);
            out_of_line(self, b, r, size, Some(val), store_slow, SHADOW);
            return;
        }
        // The shadow at the address plus its delta.
        let addr = address_in(b, m, r.a, r.t);
        shadow_delta_of(b, addr, r.t, self.taint_table);
        let at = |k: usize| addr + r.t + (8 * k) as i32;
        if self.summary != 0 {
            // The chunk of the first byte and the next one (the last byte's), whatever the
            // mask: marking costs less than testing it.
            let a = b.asm();
            a.pext(r.u, addr, ta(slot::SUMMARY_SEL)).unwrap();
            a.mov(word_ptr(r.u + self.summary as i32), 0x0101).unwrap();
        }
        let a = b.asm();
        match size {
            1 => {
                a.pdep(r.v, val, ta(slot::K01)).unwrap();
                a.mov(byte_ptr(at(0)), r8(r.v)).unwrap();
            }
            2 => {
                a.pdep(r.v, val, ta(slot::K01)).unwrap();
                a.mov(word_ptr(at(0)), r16(r.v)).unwrap();
            }
            4 => {
                a.pdep(r.v, val, ta(slot::K01)).unwrap();
                a.mov(dword_ptr(at(0)), r32(r.v)).unwrap();
            }
            _ => {
                for k in 0..size / 8 {
                    a.mov(r.v, val).unwrap();
                    if k > 0 {
                        a.shr(r.v, (8 * k) as u32).unwrap();
                    }
                    a.pdep(r.v, r.v, ta(slot::K01)).unwrap();
                    a.mov(qword_ptr(at(k)), r.v).unwrap();
                }
            }
        }
    }

    /// `dst = mask of register reg`, from bit 0 of the operand.
    fn load_reg(b: &mut Inline, reg: Reg, dst: AsmRegister64) {
        let a = b.asm();
        match reg.part {
            Part::Vec { bytes, .. } => {
                a.mov(dst, ta(vec_slot(reg.n))).unwrap();
                if bytes == 16 {
                    a.movzx(r32(dst), r16(dst)).unwrap();
                } else {
                    a.mov(r32(dst), r32(dst)).unwrap();
                }
            }
            part => {
                a.mov(dst, ta(gpr_slot(reg.n))).unwrap();
                if let Some(mask) = part_mask(part) {
                    a.pext(dst, dst, ta(mask)).unwrap();
                }
            }
        }
    }

    /// Writes mask `val` (from bit 0, at most `reg.full()` bits set) as register reg's shadow,
    /// with the hardware's partial-write rules. Clobbers t and u.
    fn store_reg(b: &mut Inline, r: Regs, reg: Reg, val: AsmRegister64) {
        let a = b.asm();
        match reg.part {
            Part::W64 | Part::W32 => a.mov(ta(gpr_slot(reg.n)), val).unwrap(),
            Part::W16 | Part::Low8 | Part::High8 => {
                let (keep, shift) = match reg.part {
                    Part::W16 => (!3i32, 0),
                    Part::Low8 => (!1, 0),
                    _ => (!2, 1),
                };
                a.mov(r.t, ta(gpr_slot(reg.n))).unwrap();
                a.and(r.t, keep).unwrap();
                a.mov(r.u, val).unwrap();
                if shift == 1 {
                    a.shl(r.u, 1).unwrap();
                }
                a.or(r.t, r.u).unwrap();
                a.mov(ta(gpr_slot(reg.n)), r.t).unwrap();
            }
            Part::Vec { bytes: 16, vex: false } => {
                a.mov(r.t, ta(vec_slot(reg.n))).unwrap();
                a.and(r.t, -65536).unwrap();
                a.or(r.t, val).unwrap();
                a.mov(ta(vec_slot(reg.n)), r.t).unwrap();
            }
            Part::Vec { .. } => a.mov(ta(vec_slot(reg.n)), val).unwrap(),
        }
    }

    /// `dst = full if acc != 0 else 0` (clobbers t).
    fn spread(b: &mut Inline, r: Regs, full: u64, dst: AsmRegister64) {
        let a = b.asm();
        a.xor(r32(dst), r32(dst)).unwrap();
        a.mov(r.t, full).unwrap();
        a.test(r.acc, r.acc).unwrap();
        a.cmovnz(dst, r.t).unwrap();
    }

    /// `before` for a fast version, where every value is clean: origins only.
    pub fn before_origins_only(&mut self, site: &InsnSite, b: &mut Inline) {
        self.taint_on = false;
        self.before(site, b);
        self.taint_on = true;
    }

    /// Code before a guest instruction: the shadows of what it writes.
    pub fn before(&mut self, site: &InsnSite, b: &mut Inline) {
        let flags_origin_unread = std::mem::take(&mut self.flags_origin_unread);
        // What is known of the origins after the instruction: what it does not write, and
        // what its origin code makes non-zero (`origin` sets `known_new`).
        self.known_new = 0;
        // A flags register kept for this instruction was taken before (`flags_register`).
        self.flags_reg = None;
        self.reclaim(site, b);
        use rtgrind_jit::iced_x86::FlowControl::*;
        self.ends_block = matches!(site.ins.flow_control(), UnconditionalBranch | IndirectBranch | Call | IndirectCall | Return);
        self.before_insn(site, b, flags_origin_unread);
        self.dead_here = 0;
        self.bases_moved(site);
        self.forget_written(site);
        self.known |= self.known_new;
    }

    fn before_insn(&mut self, site: &InsnSite, b: &mut Inline, flags_origin_unread: bool) {
        let ins = site.ins;
        self.library_call = self.policy.and_then(|p| p.call_word.filter(|_| !p.is_main(ins.ip())));
        if is_string(ins) {
            // Remember where the string instruction starts; `after` replays it.
            let a = b.asm();
            a.mov(ta(slot::STR_RCX), rcx).unwrap();
            a.mov(ta(slot::STR_RSI), rsi).unwrap();
            a.mov(ta(slot::STR_RDI), rdi).unwrap();
            return;
        }
        if is_skipped(ins) {
            return;
        }
        let mut o = operands(ins, site.info);
        if o.dst_regs.is_empty() && o.dst_mem.is_empty() && !o.writes_flags {
            return;
        }
        let taint_on = !self.shadow.is_null() && self.taint_on;
        // The origin code's operands are these, but for the flags where nobody reads their
        // origin (set in `o` once the taint code is made: no copy of the lists).
        let origin_writes_flags = o.writes_flags && !flags_origin_unread;
        // (Dead only where copies alone read origins: see `dead_origins`.)
        let copies_alone_read = self.policy.is_none() && self.log.is_none();
        let dead = if copies_alone_read { self.dead_origins.get(&ins.ip()).copied().unwrap_or(0) } else { 0 };
        self.dead_here = dead;
        let all_dead = !o.dst_regs.is_empty() && o.dst_mem.is_empty() && !origin_writes_flags && o.dst_regs.iter().all(|&d| dead & origin_bit(d) != 0);
        // A general register copied into itself (`movzx eax, al`, `mov eax, eax`) keeps its one
        // origin slot as it is.
        let self_copy = copies_alone_read
            && !origin_writes_flags
            && o.src_mem.is_empty()
            && o.dst_mem.is_empty()
            && matches!((o.src_regs.as_slice(), o.dst_regs.as_slice()), ([s], [d]) if s.n == d.n && !matches!(s.part, Part::Vec { .. }) && !matches!(d.part, Part::Vec { .. }))
            && is_copy(ins);
        let writes_origin = !o.dst_regs.is_empty() || !o.dst_mem.is_empty() || origin_writes_flags;
        let origin_on = self.origins.is_some() && writes_origin && !all_dead && !self_copy;
        if !taint_on && !origin_on {
            return;
        }
        let r = Regs::lend(b, !o.src_mem.is_empty() || !o.dst_mem.is_empty());
        let class = class_of(ins, &o);
        // Where the guest's flags are live, a copy's or a call's taint is propagated without
        // touching them (no save and restore around it).
        let taint_flag_free = !taint_on || (matches!(class, Class::Copy | Class::Call) && flag_free_operands(&o));
        // Origins without a policy or a log only move and define (`lea`, `pext`, `mov`); with a
        // policy, so do copies into registers (see `policy_copy_flag_free`).
        let origin_flag_free = !origin_on || (self.log.is_none() && (self.policy.is_none() || self.policy_copy_flag_free(class, &o, ins)));
        let flag_free = b.flags_live() && taint_flag_free && origin_flag_free;
        if !flag_free {
            b.clobber_flags();
        }
        if taint_on {
            self.taint(site, &o, class, r, b, flag_free);
        }
        if origin_on {
            o.writes_flags = origin_writes_flags;
            self.origin(site, &o, class, r, b);
        }
    }

    /// Whether the policy's origin code for a copy leaves the flags alone: a copy into
    /// registers only (a store defines or marks, with `btr`/`bt`/`and`) of a register or
    /// memory (an immediate is a constant made with `or`), other than a load that may take its
    /// address's origin (`undefined_takes_address` tests).
    fn policy_copy_flag_free(&self, class: Class, o: &Operands, ins: &Instruction) -> bool {
        let takes_address = o.src_mem.first().is_some_and(|m| self.may_take_address(ins, o, m));
        class == Class::Copy && o.dst_mem.is_empty() && !(o.src_regs.is_empty() && o.src_mem.is_empty()) && !takes_address
    }

    /// Whether a load from `m` nobody defined takes its address's origin (under a policy): a
    /// pointer-sized load in the program, and a library's lookup in a table (an index
    /// register): a table nobody wrote (digits, case and class tables) passes on what chose the
    /// entry, so the digit `printf` looks up for `n % 10` is `n`'s, not the library's.
    /// (Never one through the stack or frame pointer alone, which takes nothing: no code, so
    /// a `pop` where the flags are live needs no flag save.)
    fn may_take_address(&self, ins: &Instruction, o: &Operands, m: &UsedMemory) -> bool {
        let Some(p) = self.policy else { return false };
        if address_source(m) == AddressSource::Nothing {
            return false;
        }
        if p.is_main(ins.ip()) {
            o.dst_regs.iter().any(|d| d.part == Part::W64)
        } else {
            m.index().is_gpr64() && !o.dst_regs.is_empty()
        }
    }

    /// Taint bits of what the instruction writes (`flag_free`: without touching the flags,
    /// see `flag_free_operands`).
    fn taint(&mut self, site: &InsnSite, o: &Operands, class: Class, r: Regs, b: &mut Inline, flag_free: bool) {
        let ins = site.ins;
        let flags_written = o.writes_flags && !self.dead_flags.contains(&ins.ip());
        match class {
            // A call's return address is a constant.
            Class::Zero | Class::Call => {
                let a = b.asm();
                a.mov(r32(r.m), 0).unwrap();
                for &d in &o.dst_regs {
                    Self::store_reg(b, r, d, r.m);
                }
                for m in &o.dst_mem {
                    self.store_mask(b, r, m, r.m);
                }
                if flags_written {
                    b.asm().mov(ta(slot::FLAGS), r.m).unwrap();
                }
            }
            Class::Swap => {
                let (Some(x), Some(y)) = (Reg::of(ins.op0_register(), false), Reg::of(ins.op1_register(), false)) else { return };
                Self::load_reg(b, x, r.m);
                Self::load_reg(b, y, r.acc);
                Self::store_reg(b, r, x, r.acc);
                Self::store_reg(b, r, y, r.m);
            }
            Class::Copy => {
                // The one source's mask, byte for byte (0 for an immediate).
                if let Some(&s) = o.src_regs.first() {
                    Self::load_reg(b, s, r.acc);
                } else if let Some(m) = o.src_mem.first() {
                    self.load_mask(b, r, m);
                    b.asm().mov(r.acc, r.m).unwrap();
                } else {
                    b.asm().mov(r32(r.acc), 0).unwrap();
                }
                let done = if flag_free { None } else { Self::skip_if_clean(b, r, o) };
                for &d in &o.dst_regs {
                    let a = b.asm();
                    a.mov(r.m, r.acc).unwrap();
                    match d.part {
                        // Flag-free forms of the `and` below, for the parts `flag_free_operands` admits.
                        _ if !flag_free => {
                            if d.full() < (1 << 32) {
                                a.and(r.m, d.full() as i32).unwrap();
                            }
                        }
                        Part::W64 => a.movzx(r32(r.m), r8(r.m)).unwrap(),
                        Part::W32 => a.pext(r.m, r.m, ta(slot::PART_W32)).unwrap(),
                        Part::Vec { bytes: 16, .. } => a.movzx(r32(r.m), r16(r.m)).unwrap(),
                        Part::Vec { .. } => a.mov(r32(r.m), r32(r.m)).unwrap(),
                        _ => unreachable!("flag_free_operands admits no partial destination"),
                    }
                    Self::store_reg(b, r, d, r.m);
                }
                for m in &o.dst_mem {
                    self.store_mask(b, r, m, r.acc);
                }
                Self::bind(b, done);
            }
            Class::Compute => {
                // Everything written depends on everything read.
                match compute_sources(site, o).split_first() {
                    Some((&first, rest)) => {
                        Self::load_reg(b, first, r.acc);
                        for &s in rest {
                            Self::load_reg(b, s, r.m);
                            b.asm().or(r.acc, r.m).unwrap();
                        }
                    }
                    None => b.asm().xor(r32(r.acc), r32(r.acc)).unwrap(),
                }
                for m in &o.src_mem {
                    self.or_any_tainted(b, r, m);
                }
                if o.reads_flags || o.partial_flags {
                    b.asm().or(r.acc, ta(slot::FLAGS)).unwrap();
                }
                if flags_written {
                    self.write_flags(ins, b, r);
                }
                if o.dst_mem.is_empty() {
                    return Self::spread_to_registers(b, r, &o.dst_regs);
                }
                for &d in &o.dst_regs {
                    Self::spread(b, r, d.full(), r.m);
                    Self::store_reg(b, r, d, r.m);
                }
                for m in &o.dst_mem {
                    let size = m.memory_size().size();
                    let full = if size >= 64 { u64::MAX } else { (1u64 << size) - 1 };
                    Self::spread(b, r, full, r.m);
                    self.store_mask(b, r, m, r.m);
                }
            }
        }
    }

    /// The registers `dsts` a computation writes get its taint (`r.acc`) in all their bytes if
    /// it is tainted (a constant stored at once), else clean, stored only where they are not
    /// clean already (see `skip_if_clean`).
    fn spread_to_registers(b: &mut Inline, r: Regs, dsts: &[Reg]) {
        if dsts.is_empty() {
            return;
        }
        let a = b.asm();
        let (mut clean, done) = (a.create_label(), a.create_label());
        a.test(r.acc, r.acc).unwrap();
        a.jz(clean).unwrap();
        for &d in dsts {
            b.asm().mov(r32(r.m), d.full() as u32).unwrap();
            Self::store_reg(b, r, d, r.m);
        }
        let a = b.asm();
        a.jmp(done).unwrap();
        a.set_label(&mut clean).unwrap();
        any_tainted(a, r.m, dsts);
        a.jz(done).unwrap();
        a.xor(r32(r.m), r32(r.m)).unwrap();
        for &d in dsts {
            Self::store_reg(b, r, d, r.m);
        }
        Self::bind(b, Some(done));
    }

    /// A computation's flags' taint from `r.acc`: 1 if it is non-zero, else 0 (every writer of
    /// `slot::FLAGS` keeps it 0 or 1, so a branch's count can add it as it is). Written
    /// whatever the old value was: a flags-only instruction (`cmp`, `test`) needs no test of
    /// it, and no branch. Before a conditional branch that reads it (`flags_for_branch`), the
    /// value stays in a register kept for the branch's code (`flags_register`).
    fn write_flags(&mut self, ins: &Instruction, b: &mut Inline, r: Regs) {
        let keep = self.flags_for_branch.contains(&ins.ip()) && b.version() != Version::Fast && b.free_registers() >= 1;
        let x = if keep { b.scratch() } else { r.m };
        let a = b.asm();
        a.xor(r32(x), r32(x)).unwrap();
        a.test(r.acc, r.acc).unwrap();
        a.setne(r8(x)).unwrap();
        a.mov(ta(slot::FLAGS), x).unwrap();
        if keep {
            b.keep(x);
            self.flags_reg = Some((x, ins.next_ip()));
        }
    }

    /// The register holding the flags' taint (0 or 1) for the instruction at `pc`, lent again
    /// to the code before it, if the instruction just before kept it there (`write_flags`).
    /// Only before the propagation's own code for `pc` (`before`), which forgets it.
    pub fn flags_register(&mut self, b: &mut Inline, pc: u64) -> Option<AsmRegister64> {
        let (x, at) = self.flags_reg.take()?;
        (at == pc && b.reuse(x)).then_some(x)
    }

    /// For an instruction without memory destinations: jumps past the shadow stores (to the
    /// returned label, bound with `bind`) when the new shadow in `acc` is clean and so is every
    /// register it would overwrite (the flags' taint is written before, whatever it was) — the common case, in which no shadow is stored at
    /// all. Storing clean over clean would change nothing, but it would chain each
    /// instruction's shadow loads to the previous one's stores through store-to-load
    /// forwarding, a few cycles per instruction on the guest's critical path.
    fn skip_if_clean(b: &mut Inline, r: Regs, o: &Operands) -> Option<CodeLabel> {
        if !o.dst_mem.is_empty() {
            return None;
        }
        let a = b.asm();
        let (mut work, done) = (a.create_label(), a.create_label());
        a.test(r.acc, r.acc).unwrap();
        a.jnz(work).unwrap();
        any_tainted(a, r.m, &o.dst_regs);
        a.jz(done).unwrap();
        a.set_label(&mut work).unwrap();
        a.zero_bytes().unwrap();
        Some(done)
    }

    fn bind(b: &mut Inline, label: Option<CodeLabel>) {
        if let Some(mut l) = label {
            let a = b.asm();
            a.set_label(&mut l).unwrap();
            a.zero_bytes().unwrap();
        }
    }

    /// Origins of what the instruction writes: copies keep the source's, computations (and
    /// calls, for the return address) are defined here, zeroing idioms define nothing. With a
    /// [`Policy`] (the suppression tool's), definitions are what a programmer calls them.
    fn origin(&mut self, site: &InsnSite, o: &Operands, class: Class, r: Regs, b: &mut Inline) {
        if self.origin_code(site, o, class, r, b) {
            let bits = o.dst_regs.iter().filter(|&&d| self.dead_here & origin_bit(d) == 0).map(|&d| Self::known_bit(origin_slot(d))).fold(0, |x, y| x | y);
            self.known_new = bits | if o.writes_flags { Self::known_bit(slot::ORIGIN_FLAGS) } else { 0 };
        }
    }

    /// The bit of a register's origin slot in `known`: general registers and the flags from
    /// bit 0, vector registers (their lane 0) from bit 17.
    fn known_bit(slot: usize) -> u64 {
        if slot >= slot::ORIGIN_LANES {
            return 1 << (17 + (slot - slot::ORIGIN_LANES) / 32);
        }
        1 << ((slot - slot::ORIGIN_GPR) / 8)
    }

    fn forget(&mut self, slot: usize) {
        self.known &= !Self::known_bit(slot);
    }

    /// Forgets what is known of the origins of everything `site` writes (whatever code, if
    /// any, writes them).
    fn forget_written(&mut self, site: &InsnSite) {
        if site.ins.rflags_modified() != 0 {
            self.forget(slot::ORIGIN_FLAGS);
        }
        for u in site.info.used_registers() {
            if !writes(u.access()) {
                continue;
            }
            let r = u.register();
            if r.is_gpr() {
                self.forget(slot::ORIGIN_GPR + 8 * (r.full_register().number() - Register::RAX.number()));
            } else if let Some(n) = vector_number(r) {
                self.forget(lane_slot(n, 0));
            }
        }
    }

    /// `r.t` = the origin "defined here, now": the thread's instance word (its block instance
    /// and thread) and the site (`here`, shifted) are disjoint bit fields, so `lea` adds
    /// them without touching the flags.
    fn define_here(&mut self, b: &mut Inline, r: Regs, here: u64) {
        match self.instance_register(b) {
            Some(inst) => b.asm().lea(r.t, qword_ptr(inst + here as i32)).unwrap(),
            None => {
                self.instance_to(b, r.t);
                b.asm().lea(r.t, qword_ptr(r.t + here as i32)).unwrap();
            }
        }
    }

    /// `dst` = the instance word of a definition here: the thread's block instance, or in a
    /// library under a call word, the program's call's (see `Policy`).
    fn instance_to(&self, b: &mut Inline, dst: AsmRegister64) {
        match self.library_call {
            Some(w) => b.asm().mov(dst, ta(w)).unwrap(),
            None => b.counter_to(dst),
        }
    }

    /// `r.t` = a constant's origin here: this site and instance without the real-definition
    /// bit, so that any source with a real definition outranks it (clobbers the flags).
    fn constant_here(&mut self, b: &mut Inline, r: Regs, here: u64) {
        self.define_here(b, r, here);
        b.asm().btr(r.t, 63).unwrap();
    }

    /// A register holding the thread's instance word for the rest of the block (`define_here`
    /// adds the site), copied at its first use; None where the word is in a register already
    /// (`counts_in_registers`: one instruction copies it, and no register is held), in a full
    /// version (see `cached_granule`) or where registers are short.
    fn instance_register(&mut self, b: &mut Inline) -> Option<AsmRegister64> {
        if self.instance.is_none() && !counts_in_registers() && b.version() != Version::Full && b.free_registers() >= 1 {
            let inst = b.scratch();
            self.instance_to(b, inst);
            b.keep(inst);
            self.instance = Some(inst);
        }
        self.instance
    }

    /// The origin code proper; whether the origin it gives the destination registers is
    /// surely non-zero (a definition, a constant, or a copy of a register known so).
    fn origin_code(&mut self, site: &InsnSite, o: &Operands, class: Class, r: Regs, b: &mut Inline) -> bool {
        let ins = site.ins;
        let here = u64::from(self.sites.id(ins.ip())) << origin::SITE_SHIFT;
        let policy = self.policy;
        let is_store = !o.dst_mem.is_empty() && !matches!(ins.mnemonic(), Mnemonic::Push | Mnemonic::Call);
        if let Some(log) = self.log.filter(|_| policy.is_none()) {
            if self.log_node(site, o, class, r, b, log, here) {
                self.write_origin(o, r, b, here);
                return false;
            }
        }
        let known_bits = self.known;
        let known = |s: usize| known_bits & Self::known_bit(s) != 0;
        let stack_address = policy.is_some_and(|p| p.is_main(ins.ip()) && !(p.startup.0..p.startup.1).contains(&ins.ip())) && copies_stack_pointer(ins);
        if policy.is_some() && class == Class::Compute && self.keeps_own_origin(site, o) {
            // Its most recent source is its own origin, known defined: the slot stays, and
            // only the flags (if read) take it.
            if o.writes_flags {
                let a = b.asm();
                a.mov(r.acc, ta(origin_slot(o.dst_regs[0]))).unwrap();
                a.mov(ta(slot::ORIGIN_FLAGS), r.acc).unwrap();
            }
            return true;
        }
        let nonzero = match class {
            _ if stack_address => true,
            Class::Swap => false,
            Class::Zero => policy.is_some(),
            Class::Copy => (o.src_regs.is_empty() && o.src_mem.is_empty() && policy.is_some()) || o.src_regs.first().is_some_and(|&s| known(origin_slot(s))),
            Class::Call | Class::Compute => true,
        };
        match class {
            // The stack pointer copied into another register by the program is the address of
            // a local made here (`name = small`, kept in a register at -O2), as storing it would
            // define the location; the stack pointer's own origin, the frame's set-up, names
            // nothing a crash can blame.
            Class::Copy if stack_address => {
                self.define_here(b, r, here);
                b.asm().mov(r.acc, r.t).unwrap();
            }
            Class::Swap => {
                let (Some(x), Some(y)) = (Reg::of(ins.op0_register(), false), Reg::of(ins.op1_register(), false)) else { return false };
                let a = b.asm();
                a.mov(r.m, ta(origin_slot(x))).unwrap();
                a.mov(r.acc, ta(origin_slot(y))).unwrap();
                a.mov(ta(origin_slot(x)), r.acc).unwrap();
                a.mov(ta(origin_slot(y)), r.m).unwrap();
                return false;
            }
            Class::Zero if policy.is_some() => {
                // `xor eax, eax` is the constant 0 (a NULL returned), defined here.
                self.constant_here(b, r, here);
                b.asm().mov(r.acc, r.t).unwrap();
            }
            Class::Zero => {
                b.asm().mov(r32(r.acc), 0).unwrap();
            }
            Class::Copy if self.lane_copy(ins.ip(), o, r, b) => return false,
            Class::Copy => self.copy_origin(ins, o, r, b, here, is_store),
            Class::Compute if policy.is_some() && !(is_store && policy.is_some_and(|p| p.is_main(ins.ip()))) => self.compute_origin(site, o, r, b, here),
            Class::Call | Class::Compute => self.define_here(b, Regs { t: r.acc, ..r }, here),
        }
        if !o.dst_mem.is_empty() && policy.is_some() {
            // Memory keeps no call-boundary mark (registers do: it is stored in `r.acc`
            // after them). Only a register's origin carries one: a push's, or a computation's
            // most recent source's; a store's origin code (`copy_origin`), a definition and
            // a constant leave bit 0 clear.
            let may_carry_mark = match class {
                _ if stack_address => false,
                Class::Copy => !is_store,
                Class::Compute => !(is_store && policy.is_some_and(|p| p.is_main(ins.ip()))),
                Class::Zero | Class::Call | Class::Swap => false,
            };
            self.write_origin_regs(o, r, b);
            if may_carry_mark {
                b.asm().and(r.acc, -2).unwrap();
            }
            self.write_origin_rest(o, r, b, here);
            return nonzero;
        }
        self.write_origin(o, r, b, here);
        nonzero
    }

    /// Whether a computation's only source is the one general register it writes (`add r, 1`,
    /// `and r, imm`, a shift by an immediate), whose origin is known non-zero here: under a
    /// policy its origin is then the register's own (see `compute_origin`).
    fn keeps_own_origin(&self, site: &InsnSite, o: &Operands) -> bool {
        let [d] = o.dst_regs.as_slice() else { return false };
        let own = origin_slot(*d);
        let alone = || {
            let sources = compute_sources(site, o);
            !sources.is_empty() && sources.iter().all(|s| origin_slot(*s) == own)
        };
        !matches!(d.part, Part::Vec { .. })
            && o.src_mem.is_empty()
            && o.dst_mem.is_empty()
            && !o.reads_flags
            && !o.partial_flags
            && self.known & Self::known_bit(own) != 0
            && alone()
    }

    /// A copy's origin into `r.acc`: its source's; under a policy, an immediate is defined here
    /// (a store of one defines the location, a register gets a constant), and a store defines
    /// or moves what it stores by the rule of its kind (ARCHITECTURE, the suppression tool).
    fn copy_origin(&mut self, ins: &Instruction, o: &Operands, r: Regs, b: &mut Inline, here: u64, is_store: bool) {
        let policy = self.policy;
        // (A policy gives an immediate its own origin below.)
        if o.src_regs.is_empty() && o.src_mem.is_empty() && policy.is_none() {
            b.asm().mov(r32(r.acc), 0).unwrap();
        }
        // (A store in the program outside its frame defines the location whatever it stores.)
        let assigns = is_store && policy.is_some_and(|p| p.is_main(ins.ip()) && !spill(o));
        if let Some(&s) = o.src_regs.first().filter(|_| !assigns) {
            b.asm().mov(r.acc, ta(origin_slot(s))).unwrap();
        } else if let Some(m) = o.src_mem.first() {
            // (Loaded into the accumulator itself: `r.m` is only a name here.)
            let r = Regs { m: r.acc, ..r };
            self.load_origin(b, r, m);
            if self.may_take_address(ins, o, m) {
                self.undefined_takes_address(b, r, m, here);
            }
        }
        let Some(p) = policy else { return };
        if o.src_regs.is_empty() && o.src_mem.is_empty() {
            // An immediate is defined where it is written: a store of one defines the
            // location now, a register gets a constant.
            if is_store {
                self.define_here(b, r, here);
            } else {
                self.constant_here(b, r, here);
            }
            b.asm().mov(r.acc, r.t).unwrap();
        } else if is_store {
            self.define_here(b, r, here);
            let a = b.asm();
            if p.is_main(ins.ip()) && !spill(o) {
                // A store in the program elsewhere than its frame assigns: it defines the
                // location whatever the value went through (`current = argc > 1 ? &db :
                // NULL` stores a value computed from an argument).
                a.mov(r.acc, r.t).unwrap();
            } else if p.is_main(ins.ip()) {
                // A store in the program's frame defines the location, unless it only spills
                // a value that crossed a call (an argument, a result).
                a.mov(r.u, r.acc).unwrap();
                a.btr(r.u, 0).unwrap();
                a.cmovnc(r.u, r.t).unwrap();
                a.mov(r.acc, r.u).unwrap();
            } else if frame_store(o) {
                // A library saving a register in its own frame (callee-saved registers, the
                // varargs register-save area, lazy binding's trampoline) moves a value, it
                // does not define one: the origin goes with it (defined here only if it had
                // none).
                a.and(r.acc, -2).unwrap();
                a.test(r.acc, r.acc).unwrap();
                a.cmovz(r.acc, r.t).unwrap();
            } else {
                // Other library copies (memcpy) keep what the program defined and define the
                // rest: strcpy of input, or of a library's data. What they write is a real
                // definition even where it keeps a constant's origin (memset's fill byte: the
                // program's `mov esi, 'x'`), or a load of it would rank below its address.
                a.and(r.acc, -2).unwrap();
                a.bt(r.acc, MAIN_SITE_BIT).unwrap();
                a.cmovnc(r.acc, r.t).unwrap();
                a.bts(r.acc, 63).unwrap();
            }
        }
    }

    /// A computation's origin into `r.acc` (under a policy): the most recent definition among
    /// its sources (the origin's instance is on top); defined here only if nothing read had
    /// one.
    fn compute_origin(&mut self, site: &InsnSite, o: &Operands, r: Regs, b: &mut Inline, here: u64) {
        let known_bits = self.known;
        let known = |s: usize| known_bits & Self::known_bit(s) != 0;
        let mut slots: SmallVec<[usize; 4]> = SmallVec::new();
        // (A register read twice, `test eax, eax`, is one source: no compare with itself.)
        for s in compute_sources(site, o).into_iter().map(origin_slot) {
            if !slots.contains(&s) {
                slots.push(s);
            }
        }
        if o.reads_flags || o.partial_flags {
            slots.push(slot::ORIGIN_FLAGS);
        }
        // The first source as it is, each other one if it is more recent.
        let a = b.asm();
        match slots.split_first() {
            Some((&first, rest)) => {
                a.mov(r.acc, ta(first)).unwrap();
                for &s in rest {
                    a.cmp(r.acc, ta(s)).unwrap();
                    a.cmovb(r.acc, ta(s)).unwrap();
                }
            }
            None => a.xor(r32(r.acc), r32(r.acc)).unwrap(),
        }
        // A source known defined: the result cannot be undefined.
        let defined = slots.iter().any(|&s| known(s));
        for m in &o.src_mem {
            self.load_origin(b, r, m);
            let a = b.asm();
            a.cmp(r.m, r.acc).unwrap();
            a.cmova(r.acc, r.m).unwrap();
        }
        if !defined {
            self.constant_here(b, r, here);
            let a = b.asm();
            a.test(r.acc, r.acc).unwrap();
            a.cmovz(r.acc, r.t).unwrap();
        }
    }

    /// Every location the instruction writes gets the origin in `r.acc`.
    fn write_origin(&mut self, o: &Operands, r: Regs, b: &mut Inline, here: u64) {
        self.write_origin_regs(o, r, b);
        self.write_origin_rest(o, r, b, here);
    }

    /// With a [`DepLog`], a store narrower than a granule: the granules it touches get a new
    /// node (this site's origin with bit 0 set, apart from the instruction's own node) that
    /// depends on the value stored (`r.acc`) and on what the granules held, so the other
    /// bytes of a granule (a digit beside a newline) keep their dependences.
    fn store_origin_merging(&self, b: &mut Inline, r: Regs, m: &UsedMemory, log: DepLog, here: u64) {
        let size = m.memory_size().size();
        effective_address(b, r.a, m, r.t);
        shadow_address(b, r, self.origin_table);
        let p = b.scratch();
        let a = b.asm();
        let mut full = a.create_label();
        a.and(r.t, -8).unwrap();
        // r.u = the last granule's offset from the first (0 or 8).
        a.mov(r.u, r.a).unwrap();
        a.and(r.u, 7).unwrap();
        a.add(r.u, (size - 1) as i32).unwrap();
        a.and(r.u, -8).unwrap();
        a.add(r.u, r.t).unwrap();
        b.counter_to(r.m);
        let a = b.asm();
        a.or(r.m, (here | 1) as i32).unwrap();
        a.mov(p, log.cursor).unwrap();
        a.mov(p, qword_ptr(p)).unwrap();
        a.mov(r.a, log.limit).unwrap();
        a.cmp(p, r.a).unwrap();
        a.jae(full).unwrap();
        a.mov(qword_ptr(p), (dep::COMPUTE | 3 << dep::COUNT_SHIFT) as i32).unwrap();
        a.mov(qword_ptr(p + 8), r.m).unwrap();
        a.mov(qword_ptr(p + 16), r.acc).unwrap();
        a.mov(r.a, qword_ptr(r.t)).unwrap();
        a.mov(qword_ptr(p + 24), r.a).unwrap();
        a.mov(r.a, qword_ptr(r.u)).unwrap();
        a.mov(qword_ptr(p + 32), r.a).unwrap();
        a.lea(r.a, qword_ptr(p + 40)).unwrap();
        a.mov(p, log.cursor).unwrap();
        a.mov(qword_ptr(p), r.a).unwrap();
        a.set_label(&mut full).unwrap();
        a.mov(qword_ptr(r.t), r.m).unwrap();
        a.mov(qword_ptr(r.u), r.m).unwrap();
    }

    fn write_origin_regs(&self, o: &Operands, r: Regs, b: &mut Inline) {
        for &d in o.dst_regs.iter().filter(|&&d| self.dead_here & origin_bit(d) == 0) {
            let a = b.asm();
            match d.part {
                Part::Vec { .. } if wide_temporaries() => {
                    a.vpbroadcastq(ymm20, r.acc).unwrap();
                    a.vmovdqu64(ta_lanes(lane_slot(d.n, 0)), ymm20).unwrap();
                }
                Part::Vec { .. } => {
                    for k in 0..4 {
                        a.mov(ta(lane_slot(d.n, k)), r.acc).unwrap();
                    }
                }
                _ => a.mov(ta(origin_slot(d)), r.acc).unwrap(),
            }
        }
    }

    fn write_origin_rest(&mut self, o: &Operands, r: Regs, b: &mut Inline, here: u64) {
        for m in &o.dst_mem {
            match self.log {
                Some(log) if self.policy.is_none() && m.memory_size().size() < 8 => self.store_origin_merging(b, r, m, log, here),
                _ => self.store_origin(b, r, m, r.acc),
            }
        }
        if o.writes_flags {
            b.asm().mov(ta(slot::ORIGIN_FLAGS), r.acc).unwrap();
        }
    }

    /// With a [`DepLog`]: if the instruction is a node of the dependence graph (a computation
    /// with sources, a constant written, a copy in the main program), `r.acc` = its origin
    /// (`here`: its site, shifted) and code appends its record; false for the others (library
    /// copies keep their source's origin, as without a log).
    #[allow(clippy::too_many_arguments)]
    fn log_node(&mut self, site: &InsnSite, o: &Operands, class: Class, r: Regs, b: &mut Inline, log: DepLog, here: u64) -> bool {
        let pc = site.ins.ip();
        let main = (log.main.0..log.main.1).contains(&pc);
        // Registers an address is computed from (not the stack and frame pointers).
        let address = |m: &UsedMemory| -> Vec<usize> {
            let usable = |x: Register| x.is_gpr64() && !matches!(x, Register::RSP | Register::RBP);
            [m.base(), m.index()].into_iter().filter(|&x| usable(x)).filter_map(|x| Reg::of(x, false)).map(origin_slot).collect()
        };
        let mut regs: Vec<usize> = Vec::new();
        let mut mems: Vec<&UsedMemory> = Vec::new();
        match class {
            Class::Swap | Class::Call => return false,
            Class::Zero => {}
            Class::Copy => {
                // A library's load depends on its address (`digits[n % 10]`, the bytes of a
                // string chosen by a pointer); its other copies move values as they are.
                let addressed = o.src_mem.first().is_some_and(|m| !address(m).is_empty());
                if (!o.src_regs.is_empty() || !o.src_mem.is_empty()) && (self.is_vector_copy(o) || !(main || addressed)) {
                    return false;
                }
                regs.extend(o.src_regs.first().map(|&s| origin_slot(s)));
                if o.src_regs.is_empty() {
                    mems.extend(o.src_mem.first());
                }
            }
            Class::Compute => {
                regs.extend(compute_sources(site, o).into_iter().map(origin_slot));
                if o.reads_flags || o.partial_flags {
                    regs.push(slot::ORIGIN_FLAGS);
                }
                mems.extend(o.src_mem.iter());
            }
        }
        // Every load's address is a use, and in the program every store's.
        for m in o.src_mem.iter().chain(if main { &o.dst_mem[..] } else { &[] }) {
            regs.extend(address(m));
        }
        regs.dedup();
        regs.truncate(dep::MAX_SOURCES);
        mems.truncate(dep::MAX_SOURCES - regs.len());
        let count = regs.len() + mems.len();
        let p = b.scratch();
        let mut full = b.asm().create_label();
        // The node: this site at this block instance.
        b.counter_to(r.acc);
        let a = b.asm();
        a.or(r.acc, here as i32).unwrap();
        a.mov(p, log.cursor).unwrap();
        a.mov(p, qword_ptr(p)).unwrap();
        a.mov(r.u, log.limit).unwrap();
        a.cmp(p, r.u).unwrap();
        a.jae(full).unwrap();
        let mut k = 2;
        for s in regs {
            let a = b.asm();
            a.mov(r.m, ta(s)).unwrap();
            a.mov(qword_ptr(p + 8 * k), r.m).unwrap();
            k += 1;
        }
        for m in mems {
            self.load_origin(b, r, m);
            b.asm().mov(qword_ptr(p + 8 * k), r.m).unwrap();
            k += 1;
        }
        let a = b.asm();
        a.mov(qword_ptr(p + 8), r.acc).unwrap();
        a.mov(qword_ptr(p), (dep::COMPUTE | (count as u64) << dep::COUNT_SHIFT) as i32).unwrap();
        a.lea(r.u, qword_ptr(p + 8 * k)).unwrap();
        a.mov(p, log.cursor).unwrap();
        a.mov(qword_ptr(p), r.u).unwrap();
        a.set_label(&mut full).unwrap();
        a.zero_bytes().unwrap();
        true
    }

    /// A copy into or out of a vector register (its lanes' origins move as they are).
    fn is_vector_copy(&self, o: &Operands) -> bool {
        o.src_regs.iter().chain(&o.dst_regs).any(|r| matches!(r.part, Part::Vec { .. }))
    }

    /// `[g + off]` = the origin shadow of the granule holding the first byte of access `m`;
    /// lane k of the access is the granule at `[g + off + 8k]` (`g` is a cached granule's
    /// register, or `r.t`; clobbers `r.a`, `r.t`, `r.u`).
    fn first_granule(&mut self, b: &mut Inline, r: Regs, m: &UsedMemory) -> (AsmRegister64, i32) {
        if let Some(cached) = self.cached_granule(b, r, m, 0) {
            return cached;
        }
        effective_address(b, r.a, m, r.t);
        granule_of(b, r.a, r.t, r.u, self.origin_table);
        (r.t, 0)
    }

    /// A whole-vector copy (load, store or register move of 16 or 32 bytes) moves the origin
    /// of each 8-byte lane: memcpy's vector copies keep every granule's origin. False if the
    /// instruction is not one.
    fn lane_copy(&mut self, pc: u64, o: &Operands, r: Regs, b: &mut Inline) -> bool {
        let vec = |x: &Reg| match x.part {
            Part::Vec { bytes, .. } => Some(bytes as usize),
            _ => None,
        };
        let lanes = |n: usize| n / 8;
        match (o.src_regs.as_slice(), o.src_mem.as_slice(), o.dst_regs.as_slice(), o.dst_mem.as_slice()) {
            ([], [m], [d], []) if vec(d).is_some() && m.memory_size().size() >= 16 => {
                let n = lanes(m.memory_size().size().min(32));
                let (g, off) = self.first_granule(b, r, m);
                let a = b.asm();
                if wide_temporaries() {
                    if n == 4 {
                        a.vmovdqu64(ymm20, ymmword_ptr(g + off)).unwrap();
                    } else {
                        // Lanes 2 and 3 repeat the last granule read, as below.
                        a.vmovdqu64(xmm20, xmmword_ptr(g + off)).unwrap();
                        a.evex().vpermq(ymm20, ymm20, 0b01_01_01_00).unwrap();
                    }
                    a.vmovdqu64(ta_lanes(lane_slot(d.n, 0)), ymm20).unwrap();
                    return true;
                }
                for k in 0..4 {
                    let from = if k < n { k } else { n - 1 };
                    if k < n {
                        a.mov(r.m, qword_ptr(g + (off + (8 * from) as i32))).unwrap();
                    }
                    a.mov(ta(lane_slot(d.n, k)), r.m).unwrap();
                }
                true
            }
            ([s], [], [], [m]) if vec(s).is_some() && m.memory_size().size() >= 16 => {
                let n = lanes(m.memory_size().size().min(32));
                let (g, off) = self.first_granule(b, r, m);
                if self.policy.is_some() {
                    // As for other stores (see `Policy`): the program's define, a library's
                    // keep what the program defined (any origin, in its own frame) and define
                    // the rest.
                    self.instance_to(b, r.acc);
                    let a = b.asm();
                    a.or(r.acc, (u64::from(self.sites.id(pc)) << origin::SITE_SHIFT) as i32).unwrap();
                    let (main, frame) = (self.policy.is_some_and(|p| p.is_main(pc)), frame_store(o));
                    // Granule `k` takes lane `lane`'s origin.
                    let store_lane = |a: &mut CodeAssembler, k: usize, lane: usize| {
                        if main {
                            a.mov(qword_ptr(g + (off + (8 * k) as i32)), r.acc).unwrap();
                        } else {
                            a.mov(r.m, ta(lane_slot(s.n, lane))).unwrap();
                            a.and(r.m, -2).unwrap();
                            if frame {
                                a.test(r.m, r.m).unwrap();
                                a.cmovz(r.m, r.acc).unwrap();
                            } else {
                                a.bt(r.m, MAIN_SITE_BIT).unwrap();
                                a.cmovnc(r.m, r.acc).unwrap();
                                a.bts(r.m, 63).unwrap();
                            }
                            a.mov(qword_ptr(g + (off + (8 * k) as i32)), r.m).unwrap();
                        }
                    };
                    for k in 0..n {
                        store_lane(a, k, k);
                    }
                    // A store not 8-aligned also writes the start of the granule after its
                    // last lane's: that granule's last writer is this store too (C library
                    // copies end with an unaligned store; a length beside the name a strcpy
                    // overran kept the origin of the store before the overrun).
                    effective_address(b, r.u, m, r.m);
                    let a = b.asm();
                    let mut aligned = a.create_label();
                    a.test(r.u, 7).unwrap();
                    a.jz(aligned).unwrap();
                    store_lane(a, n, n - 1);
                    a.set_label(&mut aligned).unwrap();
                    a.zero_bytes().unwrap();
                    return true;
                }
                let a = b.asm();
                if wide_temporaries() {
                    if n == 4 {
                        a.vmovdqu64(ymm20, ta_lanes(lane_slot(s.n, 0))).unwrap();
                        a.vmovdqu64(ymmword_ptr(g + off), ymm20).unwrap();
                    } else {
                        a.vmovdqu64(xmm20, xmmword_ptr(tool_area(lane_slot(s.n, 0))).gs()).unwrap();
                        a.vmovdqu64(xmmword_ptr(g + off), xmm20).unwrap();
                    }
                    return true;
                }
                for k in 0..n {
                    a.mov(r.m, ta(lane_slot(s.n, k))).unwrap();
                    a.mov(qword_ptr(g + (off + (8 * k) as i32)), r.m).unwrap();
                }
                true
            }
            ([s], [], [d], []) if vec(s).is_some() && vec(d).is_some() => {
                let a = b.asm();
                if wide_temporaries() {
                    a.vmovdqu64(ymm20, ta_lanes(lane_slot(s.n, 0))).unwrap();
                    a.vmovdqu64(ta_lanes(lane_slot(d.n, 0)), ymm20).unwrap();
                } else {
                    for k in 0..4 {
                        a.mov(r.m, ta(lane_slot(s.n, k))).unwrap();
                        a.mov(ta(lane_slot(d.n, k)), r.m).unwrap();
                    }
                }
                true
            }
            _ => false,
        }
    }

    /// With a policy: a load from memory nobody defined takes the origin of its address (the
    /// index register's, else the base's; not the stack or frame pointer's), or is defined
    /// here if the address is a global's (RIP-relative) or the loader's too (made by the main
    /// thread before the program's first instance, `Policy::first_instance`: argv stepped past
    /// its end in a register, where `-O0` would have stored the step; a worker's instances
    /// start low, and are the program's). Only for pointer-sized loads into general registers in the
    /// program: library copies (memcpy's vector loads of input bytes) must keep "no
    /// definition". Flag-free after the test (`lea`s and moves).
    fn undefined_takes_address(&mut self, b: &mut Inline, r: Regs, m: &UsedMemory, here: u64) {
        let Some(policy) = self.policy else { return };
        let from = match address_source(m) {
            AddressSource::Register(from) => from,
            AddressSource::Defined => {
                // A global nobody wrote (a pointer left zero on this path): no register names
                // how it was chosen, so the load defines it, as -O0's `add rax, 16` on it would.
                self.define_here(b, r, here);
                let a = b.asm();
                a.test(r.m, r.m).unwrap();
                a.cmovz(r.m, r.t).unwrap();
                return;
            }
            AddressSource::Nothing => return,
        };
        let n = from.number() - Register::RAX.number();
        let a = b.asm();
        a.mov(r.u, ta(slot::ORIGIN_GPR + 8 * n)).unwrap();
        a.mov(r.t, origin::not_loaders_mask(policy.first_instance) as i64).unwrap();
        a.and(r.t, r.u).unwrap();
        self.define_here(b, r, here);
        let a = b.asm();
        a.cmovz(r.u, r.t).unwrap();
        a.test(r.m, r.m).unwrap();
        a.cmovz(r.m, r.u).unwrap();
    }

    /// The origin granule of byte `extra` of access `m` through a plain base register the
    /// block caches (the stack pointer, or one more accesses of the block go through): a
    /// register and an offset, `[reg + off]`. The register holds `floor8(base + residue) +
    /// delta` for the base's value when the block computed it, where the residue is the
    /// displacement's remainder mod 8: since the base has moved by a multiple of 8 since
    /// (`drift`), `floor8(base + drift + disp) = floor8(base + residue) + drift + disp -
    /// residue`. Computed at the block's first access with that residue (clobbers `r.u`) and
    /// kept while the base moves by multiples of 8 (see `bases_moved`). None for other accesses,
    /// in a full version (entered before any instruction from the fast one, without the code
    /// that filled the registers) and where registers are short.
    fn cached_granule(&mut self, b: &mut Inline, r: Regs, m: &UsedMemory, extra: i64) -> Option<(AsmRegister64, i32)> {
        let base = m.base();
        let plain = through_plain_base(m);
        let cacheable = base == Register::RSP || self.block_bases & super::fast::base_bit(base) != 0;
        if !plain || !cacheable || b.version() == Version::Full || self.ends_block {
            return None;
        }
        let disp = m.displacement() as i64 + extra;
        let rem = disp.rem_euclid(8);
        // (From an 8-aligned base every residue's granule is the same.)
        let residue = if base == Register::RSP && self.stack_aligned { 0 } else { rem };
        let drift = self.granules.iter().find(|g| g.base == base).map_or(0, |g| g.drift);
        if (drift + disp).unsigned_abs() >= GUARD / 2 {
            return None;
        }
        if let Some(g) = self.granules.iter().find(|g| g.base == base && g.residue == residue) {
            return Some((g.reg, (drift + disp - rem) as i32));
        }
        if self.granules.len() >= MAX_GRANULES || b.free_registers() < 2 {
            return None;
        }
        let reg = b.scratch();
        let x = get_gpr64(base).expect("a 64-bit register");
        if base == Register::RSP && self.stack_aligned {
            // An 8-aligned address is its granule's: no rounding down (the slice is that of
            // the stack pointer now, within the guards of its value at drift 0).
            shadow_delta_of(b, x, reg, self.origin_table);
            b.asm().lea(reg, qword_ptr(x + reg - drift as i32)).unwrap();
        } else {
            // The base's value when the drift was 0, plus the residue.
            b.asm().lea(r.u, qword_ptr(x + (residue - drift) as i32)).unwrap();
            shadow_delta_of(b, r.u, reg, self.origin_table);
            let a = b.asm();
            granule_number(a, r.u, r.u);
            a.lea(reg, qword_ptr(r.u * 8 + reg)).unwrap();
        }
        b.keep(reg);
        self.granules.push(CachedGranule { base, residue, reg, drift });
        Some((reg, (drift + disp - rem) as i32))
    }

    /// Before an instruction's code: the registers of the cached granules and the instance
    /// are the tool's again if they still hold what the block computed (the guest did not
    /// need them since, and for the granules, the instruction is the one their drift was last
    /// tracked for), else they are forgotten.
    fn reclaim(&mut self, site: &InsnSite, b: &mut Inline) {
        // An instruction that uses many registers leaves too few for its code with these.
        if b.free_registers() < 8 + self.granules.len() as u32 + u32::from(self.instance.is_some())
            || self.granules_next_pc.is_some_and(|pc| pc != site.ins.ip())
        {
            self.granules.clear();
        }
        if b.free_registers() < 9 {
            self.instance = None;
        }
        self.granules.retain(|g| b.reuse(g.reg));
        for g in &self.granules {
            b.keep(g.reg);
        }
        self.instance = self.instance.filter(|&r| b.reuse(r));
        if let Some(r) = self.instance {
            b.keep(r);
        }
    }

    /// Forgets the registers kept for the block: a tool calls it before adding code of its own
    /// between two instructions (`Tool::fall_through`), which may be lent them.
    pub fn forget_registers(&mut self) {
        self.flags_reg = None;
        self.granules.clear();
        self.granules_next_pc = None;
        self.instance = None;
    }

    /// The origin slots known non-zero here (see `skippable`).
    pub fn known(&self) -> u64 {
        self.known
    }

    /// The instruction just instrumented may be skipped by a tool's code before this code
    /// (`Inline::skip_insn`), where `known` were the slots known non-zero: what the block keeps
    /// in registers may not have been set, and what its definitions made known may not be.
    pub fn skippable(&mut self, known: u64) {
        self.forget_registers();
        self.known &= known;
    }

    /// After an instruction's code: how it moves the cached granules' bases.
    fn bases_moved(&mut self, site: &InsnSite) {
        if super::fast::base_step(Register::RSP, site.ins, site.info).is_none_or(|s| s % 8 != 0) {
            self.stack_aligned = false;
        }
        self.granules.retain_mut(|g| match super::fast::base_step(g.base, site.ins, site.info) {
            Some(step) if step % 8 == 0 && (g.drift + step).unsigned_abs() < GUARD / 2 => {
                g.drift += step;
                true
            }
            _ => false,
        });
        self.granules_next_pc = Some(site.ins.next_ip());
    }

    /// `r.m` = the origin of the access m (its first granule's).
    fn load_origin(&mut self, b: &mut Inline, r: Regs, m: &UsedMemory) {
        if let Some((first, off)) = self.cached_granule(b, r, m, 0) {
            b.asm().mov(r.m, qword_ptr(first + off)).unwrap();
            return;
        }
        // In two registers (each one a block's loop spills and reloads): the address (a plain
        // base as it is), then the delta in `r.m` and the granule number in `r.u`.
        let x = address_in(b, m, r.u, r.m);
        shadow_delta_of(b, x, r.m, self.origin_table);
        let a = b.asm();
        granule_number(a, r.u, x);
        a.mov(r.m, qword_ptr(r.m + r.u * 8)).unwrap();
    }

    /// Stores origin `val` for every granule the access m covers.
    fn store_origin(&mut self, b: &mut Inline, r: Regs, m: &UsedMemory, val: AsmRegister64) {
        let size = m.memory_size().size();
        if size <= 32 {
            let first = self.cached_granule(b, r, m, 0);
            let last = first.and_then(|_| self.cached_granule(b, r, m, size as i64 - 1));
            if let (Some((first, off)), Some((last, last_off))) = (first, last) {
                // Granules 8 apart from the first byte's, and the last byte's.
                let a = b.asm();
                let n = (size / 8).max(1) as i32;
                for k in 0..n {
                    a.mov(qword_ptr(first + (off + 8 * k)), val).unwrap();
                }
                let written = last == first && (last_off - off) % 8 == 0 && (0..n).contains(&((last_off - off) / 8));
                if size > 1 && !written {
                    a.mov(qword_ptr(last + last_off), val).unwrap();
                }
                return;
            }
        }
        if size > 32 {
            effective_address(b, r.a, m, r.t);
            out_of_line(self, b, r, size, Some(val), origin_store_slow, ORIGINS);
            return;
        }
        // As in `load_origin`: the address (a plain base as it is), the delta in `r.u`, each
        // granule number in `r.t`.
        assert!(val != r.t && val != r.u, "the granules' addresses need r.t and r.u");
        let x = address_in(b, m, r.a, r.t);
        shadow_delta_of(b, x, r.u, self.origin_table);
        let a = b.asm();
        granule_number(a, r.t, x);
        for k in 0..(size / 8).max(1) {
            a.mov(qword_ptr(r.u + r.t * 8 + (8 * k) as i32), val).unwrap();
        }
        if size > 1 {
            // The granule of the last byte (the same delta: one slice).
            a.lea(r.t, qword_ptr(x + (size - 1) as i32)).unwrap();
            granule_number(a, r.t, r.t);
            a.mov(qword_ptr(r.u + r.t * 8), val).unwrap();
        }
    }

    /// Code at a block's start: count the block (the instance part of origins).
    pub fn block_start(&mut self, b: &mut Inline) {
        // Nothing is known of origins where a block starts.
        self.known = 0;
        self.forget_registers();
        self.block_bases = 0;
        self.stack_aligned = false;
        if self.origins.is_none() && !self.count_blocks {
            return;
        }
        b.count();
    }

    /// Code after a guest instruction (string instructions only).
    pub fn after(&mut self, site: &InsnSite, b: &mut Inline) {
        if is_string(site.ins) {
            // The call-out's scratch register may be one the block's caches are kept in.
            self.forget_registers();
            // A fast version's `movs`/`stos` goes inline where it can, else to the call-out.
            let mut kind = string_kind(site.ins);
            // With a policy, a `movs` or `stos` defines what it writes (see `Policy`: in a
            // library, unless the program defined it): the call-out takes this instance's
            // origin from `slot::TMP_MASK`.
            let defines = self.policy.is_some() && self.origins.is_some() && kind >> 8 & 0xff <= 1;
            if defines {
                let r = Regs::lend(b, false);
                let here = u64::from(self.sites.id(site.ins.ip())) << origin::SITE_SHIFT;
                self.define_here(b, r, here);
                b.asm().mov(ta(slot::TMP_MASK), r.t).unwrap();
                b.release_scratch();
                kind |= STRING_DEFINES;
                if self.policy.is_some_and(|p| p.is_main(site.ins.ip())) {
                    kind |= STRING_IN_PROGRAM;
                }
            }
            let inline = b.version() == Version::Fast && self.summary != 0 && self.origins.is_some() && !defines;
            let inline_done = match kind >> 8 & 0xff {
                0 if inline => Some(self.copy_origins(b)),
                1 if inline => Some(self.fill_origins(b)),
                _ => None,
            };
            let s = b.scratch();
            b.asm().mov(ta(slot::WHAT), kind as i32).unwrap();
            self.callout(b, string_after, CALLOUT_ARG, s);
            if let Some(mut done) = inline_done {
                let a = b.asm();
                a.set_label(&mut done).unwrap();
                a.zero_bytes().unwrap();
            }
        }
    }

    /// After a `movs` in a fast version: where it went up by at most 64 KiB, between chunks
    /// the summary shows clean (no taint to move) and not onto granules after its source's
    /// first (a forward copy of them would read what it wrote), the origins move as
    /// `ShadowMemory::copy64` moves them, with a `rep movsq` on the origin map; then a jump to
    /// the returned label. Elsewhere falls through to the call-out.
    fn copy_origins(&mut self, b: &mut Inline) -> CodeLabel {
        let (t, u, v, w) = (b.scratch(), b.scratch(), b.scratch(), b.scratch());
        b.clobber_flags();
        let (table, summary) = (self.origin_table, self.summary);
        let a = b.asm();
        let (slow, done, mut no_spill) = (a.create_label(), a.create_label(), a.create_label());
        // t = bytes moved, u = the source's first, w = the destination's.
        upward_extent(a, t, w, slow);
        a.mov(u, ta(slot::STR_RSI)).unwrap();
        for r in [u, w] {
            let bytes = summary_bytes_of(a, r, v, summary);
            a.cmp(bytes, 0).unwrap();
            a.jne(slow).unwrap();
        }
        // The granules' origins to move, n = (t + 7) / 8, go to rcx; the spill into one more
        // destination granule (its last byte's is granule n from its first) to ZF.
        a.mov(ta(slot::TMP_SIZE), rcx).unwrap();
        a.lea(rcx, qword_ptr(t + 7)).unwrap();
        a.shr(rcx, 3).unwrap();
        a.lea(t, qword_ptr(w + t - 1)).unwrap();
        a.shr(t, 3).unwrap();
        a.mov(v, w).unwrap();
        a.shr(v, 3).unwrap();
        a.sub(t, v).unwrap();
        a.cmp(t, rcx).unwrap();
        a.mov(ta(slot::TMP_EA), rdi).unwrap();
        a.mov(ta(slot::TMP_MASK), rsi).unwrap();
        a.setne(r8(t)).unwrap();
        granule_of(b, u, rsi, v, table);
        granule_of(b, w, rdi, v, table);
        let a = b.asm();
        // A destination after the source's first granule, within the granules: to the call-out.
        a.lea(u, qword_ptr(rsi + rcx * 8)).unwrap();
        a.cmp(rdi, rsi).unwrap();
        let mut forward = a.create_label();
        a.jbe(forward).unwrap();
        a.cmp(rdi, u).unwrap();
        a.jae(forward).unwrap();
        a.mov(rsi, ta(slot::TMP_MASK)).unwrap();
        a.mov(rdi, ta(slot::TMP_EA)).unwrap();
        a.mov(rcx, ta(slot::TMP_SIZE)).unwrap();
        a.jmp(slow).unwrap();
        a.set_label(&mut forward).unwrap();
        a.mov(u, qword_ptr(u - 8)).unwrap();
        a.rep().movsq().unwrap();
        a.test(r8(t), r8(t)).unwrap();
        a.jne(no_spill).unwrap();
        a.mov(qword_ptr(rdi), u).unwrap();
        a.set_label(&mut no_spill).unwrap();
        inline_string_end(b, rsi, slow, done, [t, u, v, w])
    }

    /// After a `stos` in a fast version (rax clean) that went up by at most 64 KiB: the
    /// origins of the granules it wrote become rax's, with a `rep stosq` on the origin map,
    /// and where the summary is marked, the taint shadow of what it wrote is cleared (a
    /// `rep stosb` of zeros; elsewhere it is zero already); then a jump to the returned label.
    /// Elsewhere (down, long, nothing written) falls through to the call-out.
    fn fill_origins(&mut self, b: &mut Inline) -> CodeLabel {
        let (t, u, v, w) = (b.scratch(), b.scratch(), b.scratch(), b.scratch());
        b.clobber_flags();
        let (table, taint_table, summary) = (self.origin_table, self.taint_table, self.summary);
        let a = b.asm();
        let (slow, done, mut clean) = (a.create_label(), a.create_label(), a.create_label());
        // w = bytes written, u = the first.
        upward_extent(a, w, u, slow);
        // Granules: from u's to the last byte's, t of them.
        a.lea(t, qword_ptr(u + w - 1)).unwrap();
        a.shr(t, 3).unwrap();
        a.mov(v, u).unwrap();
        a.shr(v, 3).unwrap();
        a.sub(t, v).unwrap();
        a.add(t, 1).unwrap();
        a.mov(ta(slot::TMP_EA), rdi).unwrap();
        a.mov(ta(slot::TMP_SIZE), rcx).unwrap();
        a.mov(ta(slot::TMP_MASK), rax).unwrap();
        granule_of(b, u, rdi, v, table);
        let a = b.asm();
        a.mov(rcx, t).unwrap();
        a.mov(rax, ta(slot::ORIGIN_GPR)).unwrap();
        a.rep().stosq().unwrap();
        let bytes = summary_bytes_of(a, u, v, summary);
        a.cmp(bytes, 0).unwrap();
        a.je(clean).unwrap();
        shadow_delta_of(b, u, v, taint_table);
        let a = b.asm();
        a.lea(rdi, qword_ptr(u + v)).unwrap();
        a.mov(rcx, w).unwrap();
        a.xor(eax, eax).unwrap();
        a.rep().stosb().unwrap();
        a.set_label(&mut clean).unwrap();
        a.zero_bytes().unwrap();
        inline_string_end(b, rax, slow, done, [t, u, v, w])
    }
}

/// `len` = how far rdi went up from its value before the string instruction (`first`), or
/// a jump to `slow` if it went down, stayed, or moved 64 KiB or more. Clobbers the flags.
fn upward_extent(a: &mut CodeAssembler, len: AsmRegister64, first: AsmRegister64, slow: CodeLabel) {
    a.mov(len, rdi).unwrap();
    a.mov(first, ta(slot::STR_RDI)).unwrap();
    a.sub(len, first).unwrap();
    a.jbe(slow).unwrap();
    a.cmp(len, 1 << 16).unwrap();
    a.ja(slow).unwrap();
}

/// The end of an inline string path (`fill_origins`, `copy_origins`): the guest's rdi, rcx and
/// `third` back from the TMP slots that path saved them in, a jump to the returned label, and
/// `slow` (the call-out's way) here; the path's registers are given back.
fn inline_string_end(b: &mut Inline, third: AsmRegister64, mut slow: CodeLabel, done: CodeLabel, regs: [AsmRegister64; 4]) -> CodeLabel {
    let a = b.asm();
    a.mov(rdi, ta(slot::TMP_EA)).unwrap();
    a.mov(rcx, ta(slot::TMP_SIZE)).unwrap();
    a.mov(third, ta(slot::TMP_MASK)).unwrap();
    a.jmp(done).unwrap();
    a.set_label(&mut slow).unwrap();
    a.zero_bytes().unwrap();
    for r in regs {
        b.give_back(r);
    }
    done
}

/// How the propagation treats `ins`.
fn class_of(ins: &Instruction, o: &Operands) -> Class {
    if is_zeroing(ins) {
        Class::Zero
    } else if ins.mnemonic() == Mnemonic::Call {
        Class::Call
    } else if ins.mnemonic() == Mnemonic::Xchg && o.src_mem.is_empty() && ins.op_count() == 2 {
        Class::Swap
    } else if is_copy(ins) && o.src_regs.len() + o.src_mem.len() <= 1 {
        Class::Copy
    } else {
        Class::Compute
    }
}

/// For each instruction of a block's straight-line code `insns` (by address), the registers
/// whose origin it writes for nothing (bit n: vector register n; bit 16 + n: general register
/// n): a later instruction writes the register's whole origin (a vector's four lanes, a
/// general register's one slot) before any reads it, and no exit, call-out or instruction that
/// touches every vector register (`xsave`, `vzeroupper`, …) comes between. Without a policy or
/// a dependence log only copies read an origin (a computation defines its result's afresh),
/// so a chain of computations into one register writes its origin once, and a load's origin
/// whose register is computed on at once is never copied. Address registers count as read (a
/// fault's report may name their origins). Only for propagations without either.
pub(crate) fn dead_origins(code: &rtgrind_jit::instrument::BlockCode) -> HashMap<u64, u32> {
    use rtgrind_jit::iced_x86::FlowControl;
    let mut dead = HashMap::new();
    // Registers whose origin the code after the current instruction overwrites first.
    let mut overwritten = 0u32;
    for (ins, info) in code.insns.iter().zip(code.infos).rev() {
        let barrier = ins.is_invalid() || ins.flow_control() != FlowControl::Next || is_string(ins) || is_skipped(ins) || {
            use Mnemonic::*;
            matches!(
                ins.mnemonic(),
                Xsave
                    | Xsave64
                    | Xsaveopt
                    | Xsaveopt64
                    | Xsavec
                    | Xsavec64
                    | Xsaves
                    | Xsaves64
                    | Xrstor
                    | Xrstor64
                    | Xrstors
                    | Xrstors64
                    | Fxsave
                    | Fxsave64
                    | Fxrstor
                    | Fxrstor64
                    | Vzeroall
            )
        };
        if barrier {
            overwritten = 0;
            continue;
        }
        let bit = |r: Register| match vector_number(r) {
            Some(n) => 1u32 << n,
            None if r.is_gpr() => 1 << (16 + r.full_register().number() - Register::RAX.number()),
            None => 0,
        };
        let o = operands(ins, info);
        let bits = |regs: &[Reg]| regs.iter().fold(0u32, |a, &d| a | origin_bit(d));
        // A general register's origin is whole only in a 32- or 64-bit write.
        let whole = |regs: &[Reg]| regs.iter().filter(|d| matches!(d.part, Part::Vec { .. } | Part::W32 | Part::W64)).fold(0u32, |a, &d| a | origin_bit(d));
        // (Origins read: a copy's or swap's sources, addresses, and any register the
        // operands do not show, to be safe.)
        let shown = bits(&o.src_regs) | bits(&o.dst_regs);
        let hidden = info.used_registers().iter().map(|u| bit(u.register())).fold(0, |a, b| a | b) & !shown;
        let addresses = real_memory(info).map(|m| bit(m.base()) | bit(m.index())).fold(0, |a, b| a | b);
        let read = hidden | addresses | if matches!(class_of(ins, &o), Class::Copy | Class::Swap) { bits(&o.src_regs) } else { 0 };
        let defined = whole(&o.dst_regs) & !read;
        if defined & overwritten != 0 {
            dead.insert(ins.ip(), defined & overwritten);
        }
        overwritten = (overwritten & !read) | defined;
    }
    dead
}

/// The instructions of a block's straight-line code `insns` (by address) whose write of the
/// flags' taint (`slot::FLAGS`) nothing reads: a later instruction of the block writes all of
/// it (a computation or zeroing idiom writing every status flag) before any reads it (an
/// instruction reading a status flag, or writing only some), and no exit, string instruction
/// or instruction the propagation skips comes between. (As the flags' origin: a fault between
/// goes on at the faulting instruction, whose code reads nothing of the old value either.)
pub(crate) fn dead_flags(insns: &[Instruction]) -> HashSet<u64> {
    use rtgrind_jit::iced_x86::{FlowControl, InstructionInfoFactory};
    let mut factory = InstructionInfoFactory::new();
    let mut dead = HashSet::new();
    // The code after the current instruction writes the whole flags' taint first.
    let mut overwritten = false;
    for ins in insns.iter().rev() {
        if ins.is_invalid() || ins.flow_control() != FlowControl::Next || is_string(ins) || is_skipped(ins) {
            overwritten = false;
            continue;
        }
        let o = operands(ins, factory.info(ins));
        if o.writes_flags && overwritten {
            dead.insert(ins.ip());
        }
        let writes_all = o.writes_flags && !o.partial_flags && matches!(class_of(ins, &o), Class::Compute | Class::Zero);
        if o.reads_flags || o.partial_flags || (o.writes_flags && !writes_all) {
            overwritten = false;
        } else if writes_all {
            overwritten = true;
        }
    }
    dead
}

/// The instructions of `insns` (by address) whose flags' taint a conditional branch right
/// after reads: a computation writing the flags, then a `jcc` (see `flags_register`).
pub(crate) fn flags_for_branch(insns: &[Instruction]) -> HashSet<u64> {
    insns
        .windows(2)
        .filter(|w| w[0].rflags_modified() & STATUS_FLAGS != 0 && w[0].next_ip() == w[1].ip() && w[1].is_jcc_short_or_near())
        .map(|w| w[0].ip())
        .collect()
}

/// A register's bit in `dead_origins`.
fn origin_bit(d: Reg) -> u32 {
    match d.part {
        Part::Vec { .. } => 1 << d.n,
        _ => 1 << (16 + d.n),
    }
}

/// The number of vector register `r` (xmm, ymm or zmm 0-15), if it is one.
pub(crate) fn vector_number(r: Register) -> Option<usize> {
    [(r.is_xmm(), Register::XMM0), (r.is_ymm(), Register::YMM0), (r.is_zmm(), Register::ZMM0)]
        .into_iter()
        .find_map(|(is, first)| is.then(|| r.number() - first.number()))
        .filter(|&n| n < 16)
}

/// Whether access `m` is `[base + disp]` with a 64-bit base register and no index or `fs`/`gs`
/// base: its shadow is at a constant offset from a per-block value of the base register.
pub(crate) fn through_plain_base(m: &UsedMemory) -> bool {
    m.base().is_gpr64() && m.index() == Register::None && !matches!(m.segment(), Register::FS | Register::GS)
}

/// See `Propagation::cached_granule`.
#[derive(Clone, Copy)]
struct CachedGranule {
    base: Register,
    /// The displacement's remainder mod 8.
    residue: i64,
    reg: AsmRegister64,
    /// How far the base moved since the register was computed (a multiple of 8).
    drift: i64,
}

/// Origin granules a block keeps in registers at once.
const MAX_GRANULES: usize = 4;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Zero,
    Call,
    Swap,
    Copy,
    Compute,
}

/// Registers a computation reads: its sources and any destination it may leave unchanged.
fn compute_sources(site: &InsnSite, o: &Operands) -> SmallVec<[Reg; 4]> {
    let mut srcs = o.src_regs.clone();
    let vex = site.ins.encoding() == EncodingKind::VEX;
    for d in &o.dst_regs {
        let cond = site.info.used_registers().iter().any(|u| Reg::of(u.register(), vex) == Some(*d) && u.access() == OpAccess::CondWrite);
        if cond && !srcs.contains(d) {
            srcs.push(*d);
        }
    }
    srcs
}

/// Tool-area offset of the origin of lane `k` (8 bytes) of vector register `n`.
fn lane_slot(n: usize, k: usize) -> usize {
    slot::ORIGIN_LANES + 32 * n + 8 * k
}

/// Tool-area offset of register `r`'s origin: a vector register's is its lane 0's (every write
/// but a lane copy gives all four lanes the same origin, and a lane copy's lane 0 is the one
/// the register's computations take).
fn origin_slot(r: Reg) -> usize {
    match r.part {
        Part::Vec { .. } => lane_slot(r.n, 0),
        _ => slot::ORIGIN_GPR + 8 * r.n,
    }
}

/// Bit of `string_kind`'s word: the `movs`/`stos` defines what it writes (origin in
/// `slot::TMP_MASK`) instead of moving its source's origins.
const STRING_DEFINES: u32 = 1 << 18;

/// ... and the instruction is in the program (it defines every byte it writes).
const STRING_IN_PROGRAM: u32 = 1 << 19;

/// With a policy, after a library's `movs` moved its source's origins to the `len` bytes at
/// `d`: the granules the program did not define are defined by the copy (`v`, see `Policy`).
fn define_unless_program(o: &mut ShadowMemory, d: u64, len: u64, v: u64) {
    let mut g = d & !7;
    while g < d.saturating_add(len) {
        if o.get64(g) & 1 << MAIN_SITE_BIT == 0 {
            o.set64(g, v);
        }
        g += 8;
    }
}

/// Element size (low byte), operation (bits 8-15: movs, stos, lods, cmps, scas), rep prefix
/// (bit 16) and whether it is repe/repne (bit 17) of a string instruction, for `string_after`.
fn string_kind(ins: &Instruction) -> u32 {
    use Mnemonic::*;
    let size = match ins.mnemonic() {
        Movsb | Stosb | Lodsb | Cmpsb | Scasb => 1,
        Movsw | Stosw | Lodsw | Cmpsw | Scasw => 2,
        Movsd | Stosd | Lodsd | Cmpsd | Scasd => 4,
        _ => 8,
    };
    let op = match ins.mnemonic() {
        Movsb | Movsw | Movsd | Movsq => 0,
        Stosb | Stosw | Stosd | Stosq => 1,
        Lodsb | Lodsw | Lodsd | Lodsq => 2,
        Cmpsb | Cmpsw | Cmpsd | Cmpsq => 3,
        _ => 4, // scas
    };
    let rep = ins.has_rep_prefix() || ins.has_repne_prefix();
    let cond = rep && op >= 3;
    size | op << 8 | (rep as u32) << 16 | (cond as u32) << 17
}

/// The shadow memory a call-out's argument names.
///
/// # Safety
/// `arg` must be the `ShadowMemory` pointer the propagation was built with; only the thread
/// holding the scheduler's baton runs call-outs, so no other reference is live.
unsafe fn shadow_of<'a>(arg: u64) -> &'a mut ShadowMemory {
    // SAFETY: per the contract.
    unsafe { &mut *(arg as *mut ShadowMemory) }
}

/// A call-out's thread context.
///
/// # Safety
/// `ctx` must be the pointer `rtg_callout` passes (the calling thread's context).
unsafe fn ctx_of<'a>(ctx: *mut ThreadContext) -> &'a mut ThreadContext {
    // SAFETY: per the contract.
    unsafe { &mut *ctx }
}

/// Out of line: a load whose shadow crosses a chunk or has an odd size.
extern "C" fn load_slow(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::ShadowLoadSlow);
    // SAFETY: called by rtg_callout with this thread's context and the propagation's argument.
    let (ctx, mem) = unsafe { (ctx_of(ctx), shadow_of(arg)) };
    let (ea, size) = (*super::word(ctx, slot::TMP_EA), *super::word(ctx, slot::TMP_SIZE));
    let mask = if size <= 64 { mem.mask(ea, size) } else { mem.any(ea, size) as u64 };
    *super::word(ctx, slot::TMP_MASK) = mask;
}

/// Out of line: a store that crosses a chunk, has an odd size or needs a new chunk.
extern "C" fn store_slow(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::ShadowStoreSlow);
    // SAFETY: as in `load_slow`.
    let (ctx, mem) = unsafe { (ctx_of(ctx), shadow_of(arg)) };
    let (ea, size, mask) = (*super::word(ctx, slot::TMP_EA), *super::word(ctx, slot::TMP_SIZE), *super::word(ctx, slot::TMP_MASK));
    if size <= 64 {
        mem.set_mask(ea, size, mask);
    } else {
        mem.set_range(ea, size, (mask != 0) as u8);
    }
}

/// Out of line: an origin store that crosses a chunk, is large, or needs a new chunk.
extern "C" fn origin_store_slow(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::ShadowOriginStoreSlow);
    // SAFETY: as in `load_slow` (`arg` is the origin memory).
    let (ctx, mem) = unsafe { (ctx_of(ctx), shadow_of(arg)) };
    let (ea, size, val) = (*super::word(ctx, slot::TMP_EA), *super::word(ctx, slot::TMP_SIZE), *super::word(ctx, slot::TMP_MASK));
    mem.set64_range(ea, size, val);
}

/// Out of line, after a string instruction: replays its element range on the shadow.
extern "C" fn string_after(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::ShadowStringAfter);
    // SAFETY: rtg_callout passes this thread's context; `arg` is the propagation's boxed
    // CalloutArg, whose memories only the thread holding the baton touches.
    let (ctx, args) = unsafe { (ctx_of(ctx), &*(arg as *const CalloutArg)) };
    // SAFETY: as above.
    let mem = unsafe { shadow_of(args.shadow as u64) };
    // SAFETY: as above; null when origins are off.
    let origins = (!args.origins.is_null()).then(|| unsafe { shadow_of(args.origins as u64) });
    let kind = *super::word(ctx, slot::WHAT);
    let (size, op, rep) = (kind & 0xff, (kind >> 8) & 0xff, kind & (1 << 16) != 0);
    let (rcx0, rsi0, rdi0) = (*super::word(ctx, slot::STR_RCX), *super::word(ctx, slot::STR_RSI), *super::word(ctx, slot::STR_RDI));
    let count = if rep { rcx0.wrapping_sub(ctx.callout_regs[1]) } else { 1 };
    if count == 0 {
        return;
    }
    let down = ctx.callout_flags & (1 << 10) != 0;
    // The byte range `count` elements starting at `start` cover.
    let range = |start: u64| -> (u64, u64) {
        let len = count.saturating_mul(size).min(1 << 32);
        if down {
            (start.wrapping_sub(len - size), len)
        } else {
            (start, len)
        }
    };
    let rax_mask = *super::gpr(ctx, 0) & ((1u64 << size) - 1);
    let rax_origin = *super::word(ctx, slot::ORIGIN_GPR);
    // With a policy (see `Policy`): this instance's origin, and whether the program ran it.
    let defined = (kind & u64::from(STRING_DEFINES) != 0).then(|| *super::word(ctx, slot::TMP_MASK));
    let in_program = kind & u64::from(STRING_IN_PROGRAM) != 0;
    match op {
        0 => {
            let ((s, len), (d, _)) = (range(rsi0), range(rdi0));
            mem.copy(d, s, len);
            if let Some(o) = origins {
                match defined {
                    Some(v) if in_program => o.set64_range(d, len, v),
                    Some(v) => {
                        o.copy64(d, s, len);
                        define_unless_program(o, d, len, v);
                    }
                    None => o.copy64(d, s, len),
                }
            }
        }
        1 => {
            let (d, len) = range(rdi0);
            mem.set_range(d, len, (rax_mask != 0) as u8);
            if let Some(o) = origins {
                // A library's fill keeps a value the program defined; the rest is defined here.
                let origin = match defined {
                    Some(v) if in_program || rax_origin & 1 << MAIN_SITE_BIT == 0 => v,
                    // (A real definition, as for other library stores.)
                    Some(_) => rax_origin | origin::REAL,
                    None => rax_origin,
                };
                o.set64_range(d, len, origin);
            }
        }
        2 => {
            let (s, len) = range(rsi0);
            let last = if down { s } else { s + len - size };
            let m = mem.mask(last, size);
            let r = super::gpr(ctx, 0);
            *r = if size >= 4 { m } else { (*r & !((1u64 << size) - 1)) | m };
            if let Some(o) = origins {
                *super::word(ctx, slot::ORIGIN_GPR) = o.get64(last);
            }
        }
        _ => {
            // Flags only: cmps reads both ranges, scas rdi's and rax.
            let (d, len) = range(rdi0);
            let mut t = mem.any(d, len);
            if op == 4 {
                t |= rax_mask != 0;
            } else {
                let (s, len) = range(rsi0);
                t |= mem.any(s, len);
            }
            *super::word(ctx, slot::FLAGS) = t as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtgrind_jit::iced_x86::{Decoder, DecoderOptions, InstructionInfoFactory};

    fn ops(bytes: &[u8]) -> Operands {
        let ins = Decoder::with_ip(64, bytes, 0x1000, DecoderOptions::NONE).decode();
        let mut f = InstructionInfoFactory::new();
        operands(&ins, f.info(&ins))
    }

    #[test]
    fn vex_load_operands() {
        let o = ops(&[0xc5, 0xfe, 0x6f, 0x05, 0x20, 0x2e, 0x00, 0x00]);
        eprintln!("{o:?}");
        assert_eq!(o.dst_regs.as_slice(), [Reg { n: 0, part: Part::Vec { bytes: 32, vex: true } }]);
        assert_eq!(o.src_mem.len(), 1);
    }
}
