//! Builder for the generated instruction-test programs: a fixed-seed PRNG, operand pickers that
//! keep every memory access inside the data buffer, tracking of which flags are architecturally
//! defined, and the fixed prologue/epilogue that loads the initial state and writes the final
//! state to stdout.
//!
//! A program is static, non-PIE and `-nostdlib`. Its whole observable state lives in one `.data`
//! area, `out`, which the epilogue writes to stdout with `write(2)`:
//!
//! ```text
//! GPRS    16 x u64   rax rcx rdx rbx rsp rbp rsi rdi r8..r15 (rsp is deterministic: own stack)
//! RFLAGS  u64        masked to CF PF AF ZF SF DF OF
//! MXCSR   u32
//! YMM     16 x 32 B  ymm0..ymm15
//! BUF     4 KiB      the data buffer; %rbp points at its middle for the whole run
//! STACK   2 KiB      the program's stack (%rsp starts at its top)
//! LOG     n x u64    flags after each flag-writing instruction; every 8 instructions a
//!                    checkpoint of the GPRs (and of the ymm registers in vector classes)
//! ```
//!
//! Flags an instruction leaves undefined (e.g. AF after `and`, SF/ZF after `mul`) are tracked, so
//! a comparison masks them and a flag reader (`adc`, `jcc`, `pushf`) never sees an undefined flag:
//! a `cmp` that defines them all is inserted first. That keeps the programs valid for any correct
//! x86-64 implementation, not only for the CPU they were written on.

use std::fmt::Write as _;

/// `op!(g, "fmt", args...; fx)` is `g.op(&format!("fmt", args...), fx)`, with arguments that may
/// themselves use `g` (its rng, `g.mem(..)`).
macro_rules! op {
    ($g:ident, $fmt:literal $(, $arg:expr)* ; $fx:expr) => {{
        let text = format!($fmt $(, $arg)*);
        $g.op(&text, $fx)
    }};
}
pub(crate) use op;

pub const CF: u64 = 0x001;
pub const PF: u64 = 0x004;
pub const AF: u64 = 0x010;
pub const ZF: u64 = 0x040;
pub const SF: u64 = 0x080;
pub const DF: u64 = 0x400;
pub const OF: u64 = 0x800;
/// The six arithmetic flags.
pub const ARITH: u64 = CF | PF | AF | ZF | SF | OF;
/// Every flag the tests compare.
pub const OBSERVED: u64 = ARITH | DF;
pub const FLAG_NAMES: [(u64, &str); 7] = [(CF, "CF"), (PF, "PF"), (AF, "AF"), (ZF, "ZF"), (SF, "SF"), (DF, "DF"), (OF, "OF")];

pub const GPRS: usize = 0;
pub const RFLAGS: usize = 128;
pub const MXCSR: usize = 136;
pub const YMM: usize = 192;
pub const BUF: usize = 1024;
pub const BUF_LEN: usize = 4096;
pub const STACK: usize = BUF + BUF_LEN;
pub const STACK_LEN: usize = 2048;
pub const LOG: usize = STACK + STACK_LEN;

pub const RAX: u8 = 0;
pub const RCX: u8 = 1;
pub const RDX: u8 = 2;
pub const RBX: u8 = 3;
pub const RSP: u8 = 4;
pub const RBP: u8 = 5;
pub const RSI: u8 = 6;
pub const RDI: u8 = 7;

const NAMES: [[&str; 4]; 16] = [
    ["al", "ax", "eax", "rax"],
    ["cl", "cx", "ecx", "rcx"],
    ["dl", "dx", "edx", "rdx"],
    ["bl", "bx", "ebx", "rbx"],
    ["spl", "sp", "esp", "rsp"],
    ["bpl", "bp", "ebp", "rbp"],
    ["sil", "si", "esi", "rsi"],
    ["dil", "di", "edi", "rdi"],
    ["r8b", "r8w", "r8d", "r8"],
    ["r9b", "r9w", "r9d", "r9"],
    ["r10b", "r10w", "r10d", "r10"],
    ["r11b", "r11w", "r11d", "r11"],
    ["r12b", "r12w", "r12d", "r12"],
    ["r13b", "r13w", "r13d", "r13"],
    ["r14b", "r14w", "r14d", "r14"],
    ["r15b", "r15w", "r15d", "r15"],
];
const HIGH8: [&str; 4] = ["ah", "ch", "dh", "bh"];

pub fn gpr_name(r: usize) -> &'static str {
    NAMES[r][3]
}

/// Operand size, named by its AT&T suffix.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Sz {
    B,
    W,
    L,
    Q,
}

impl Sz {
    pub const ALL: [Sz; 4] = [Sz::B, Sz::W, Sz::L, Sz::Q];
    pub const WIDE: [Sz; 3] = [Sz::W, Sz::L, Sz::Q];
    pub const LQ: [Sz; 2] = [Sz::L, Sz::Q];

    pub fn bytes(self) -> usize {
        1 << self as usize
    }
    pub fn bits(self) -> u32 {
        8 << self as u32
    }
    pub fn suffix(self) -> &'static str {
        ["b", "w", "l", "q"][self as usize]
    }
}

/// The `%name` of GPR `r` at width `w`.
pub fn reg(r: u8, w: Sz) -> String {
    format!("%{}", NAMES[r as usize][w as usize])
}

/// splitmix64: small, fast and the same everywhere, so a seed names a program forever.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
    /// A register or memory value; edge cases (0, -1, sign bits, small numbers) half the time.
    pub fn value(&mut self) -> u64 {
        const EDGES: [u64; 16] = [
            0,
            1,
            u64::MAX,
            1 << 63,
            (1 << 63) - 1,
            0x8000_0000,
            0x7fff_ffff,
            0xffff_ffff,
            0x1_0000_0000,
            0x80,
            0x7f,
            0xff,
            0x8000,
            0x7fff,
            0xffff,
            0xffff_ffff_ffff_ff00,
        ];
        match self.below(8) {
            0 => self.pick(&EDGES),
            1 => self.range(-300, 300) as u64,
            2 => self.next() & 0xffff_ffff,
            3 => self.pick(&EDGES) ^ (1 << self.below(64)),
            _ => self.next(),
        }
    }
    /// An immediate operand valid at width `w` (`$` included); `imm8` forms half the time.
    pub fn imm(&mut self, w: Sz) -> String {
        let v = if self.chance(50) {
            self.range(-128, 127)
        } else {
            match w {
                Sz::B => self.range(-128, 255),
                Sz::W => self.range(-32768, 65535),
                Sz::L => self.range(i32::MIN as i64, u32::MAX as i64),
                Sz::Q => self.range(i32::MIN as i64, i32::MAX as i64),
            }
        };
        format!("${v}")
    }
}

/// What an instruction does to the arithmetic flags and DF.
#[derive(Clone, Copy)]
pub struct Fx {
    pub reads: u64,
    /// Flags written, including those left undefined.
    pub writes: u64,
    pub undef: u64,
}

impl Fx {
    pub const NONE: Fx = Fx { reads: 0, writes: 0, undef: 0 };
    /// add, sub, cmp, neg, xadd, cmpxchg, cmps, scas.
    pub const ARITH: Fx = Fx { reads: 0, writes: ARITH, undef: 0 };
    /// and, or, xor, test: AF undefined.
    pub const LOGIC: Fx = Fx { reads: 0, writes: ARITH, undef: AF };
    /// adc, sbb.
    pub const CARRY: Fx = Fx { reads: CF, writes: ARITH, undef: 0 };
    /// inc, dec: CF unaffected.
    pub const INC: Fx = Fx { reads: 0, writes: ARITH & !CF, undef: 0 };
    /// mul, imul: only CF and OF defined.
    pub const MUL: Fx = Fx { reads: 0, writes: ARITH, undef: SF | ZF | AF | PF };
    /// div, idiv: all undefined.
    pub const DIV: Fx = Fx { reads: 0, writes: ARITH, undef: ARITH };
    /// bt, bts, btr, btc: CF defined, ZF unaffected.
    pub const BT: Fx = Fx { reads: 0, writes: ARITH & !ZF, undef: OF | SF | AF | PF };
    /// Reads the flags it names, writes none (jcc, cmovcc, setcc).
    pub fn reads(flags: u64) -> Fx {
        Fx { reads: flags, writes: 0, undef: 0 }
    }
    pub fn writes(flags: u64, undef: u64) -> Fx {
        Fx { reads: 0, writes: flags, undef }
    }
}

/// Registers valid together in one instruction (`%ah`..`%bh` exclude any REX prefix).
pub struct Regs {
    pub names: Vec<String>,
    /// A high-byte register was picked: memory operands must not need REX either.
    pub legacy: bool,
}

/// One 8-byte (flags) or 128-byte (registers) record of the execution log.
pub struct Slot {
    pub off: usize,
    pub kind: SlotKind,
    /// Index of the instruction just before the record (into `Program::texts`).
    pub insn: usize,
}

pub enum SlotKind {
    Flags { mask: u64 },
    Gprs,
    Ymm,
}

/// A generated program and what is needed to decode its dump.
pub struct Program {
    pub source: String,
    pub slots: Vec<Slot>,
    pub texts: Vec<String>,
    pub out_len: usize,
    /// Flags undefined at the end (masked out of the final RFLAGS comparison).
    pub final_undef: u64,
}

pub struct Gen {
    pub rng: Rng,
    /// Where `op` appends: the main sequence, or a function being generated.
    text: String,
    funcs: String,
    /// Extra `.data` (call and jump tables).
    pub data: String,
    slots: Vec<Slot>,
    texts: Vec<String>,
    log_len: usize,
    undef: u64,
    reserved: u16,
    labels: usize,
    /// Set %fs base to the buffer in the prologue (arch_prctl).
    pub uses_fs: bool,
    /// Checkpoints include the ymm registers.
    pub vector_checkpoints: bool,
}

impl Gen {
    pub fn new(seed: u64) -> Gen {
        Gen {
            rng: Rng::new(seed),
            text: String::new(),
            funcs: String::new(),
            data: String::new(),
            slots: Vec::new(),
            texts: Vec::new(),
            log_len: 0,
            undef: 0,
            reserved: 1 << RSP | 1 << RBP,
            labels: 0,
            uses_fs: false,
            vector_checkpoints: false,
        }
    }

    /// Emit one instruction of the sequence: first a flag definer if it reads an undefined
    /// flag, then the instruction, then a flags record if it writes flags, and a register
    /// checkpoint every 8 instructions.
    pub fn op(&mut self, text: &str, fx: Fx) {
        if fx.reads & self.undef != 0 {
            self.define_flags();
        }
        let n = self.texts.len();
        writeln!(self.text, "\t{text}\t/* #{n} */").unwrap();
        self.texts.push(text.to_string());
        self.undef = (self.undef & !fx.writes) | fx.undef;
        if fx.writes != 0 {
            let off = self.alloc_log(8);
            writeln!(self.text, "\tpushfq\n\tpopq out+{off}(%rip)\n\tmovq $0, -8(%rsp)").unwrap();
            let mask = OBSERVED & !self.undef;
            self.slots.push(Slot { off, kind: SlotKind::Flags { mask }, insn: n });
        }
        if self.texts.len().is_multiple_of(8) {
            self.checkpoint();
        }
    }

    /// Record all 16 GPRs (and ymm registers) in the log.
    pub fn checkpoint(&mut self) {
        let insn = self.texts.len().saturating_sub(1);
        let off = self.alloc_log(128);
        for r in 0..16u8 {
            writeln!(self.text, "\tmovq {}, out+{}(%rip)", reg(r, Sz::Q), off + 8 * r as usize).unwrap();
        }
        self.slots.push(Slot { off, kind: SlotKind::Gprs, insn });
        if self.vector_checkpoints {
            let off = self.alloc_log(512);
            for i in 0..16 {
                writeln!(self.text, "\tvmovdqu %ymm{i}, out+{}(%rip)", off + 32 * i).unwrap();
            }
            self.slots.push(Slot { off, kind: SlotKind::Ymm, insn });
        }
    }

    fn alloc_log(&mut self, len: usize) -> usize {
        let off = LOG + self.log_len;
        self.log_len += len;
        off
    }

    /// A `cmp` of two random registers: defines all six arithmetic flags.
    pub fn define_flags(&mut self) {
        let w = self.rng.pick(&Sz::ALL);
        let r = self.regs(w, 2);
        self.op(&format!("cmp{} {}, {}", w.suffix(), r.names[0], r.names[1]), Fx::ARITH);
    }

    /// Flags currently undefined.
    pub fn undef(&self) -> u64 {
        self.undef
    }
    /// Declare flags undefined (at a join of paths, or at a function entry).
    pub fn set_undef(&mut self, flags: u64) {
        self.undef = flags;
    }

    /// Emit a label or directive line as is.
    pub fn raw(&mut self, line: &str) {
        writeln!(self.text, "{line}").unwrap();
    }

    /// A fresh local label.
    pub fn label(&mut self, stem: &str) -> String {
        self.labels += 1;
        format!(".L{stem}{}", self.labels)
    }

    /// Generate a function: `body` appends to the function area instead of the main sequence.
    /// Its flags are assumed undefined on entry, since it may be called from anywhere.
    /// Returns the flags undefined at its end (for the caller to `set_undef` after a call).
    pub fn function(&mut self, name: &str, body: impl FnOnce(&mut Gen)) -> u64 {
        let saved = std::mem::take(&mut self.text);
        let saved_undef = self.undef;
        self.undef = ARITH;
        writeln!(self.text, "{name}:").unwrap();
        body(self);
        let f = std::mem::replace(&mut self.text, saved);
        self.funcs.push_str(&f);
        std::mem::replace(&mut self.undef, saved_undef)
    }

    pub fn reserve(&mut self, r: u8) {
        self.reserved |= 1 << r;
    }
    pub fn release(&mut self, r: u8) {
        if r != RSP && r != RBP {
            self.reserved &= !(1 << r);
        }
    }
    pub fn is_free(&self, r: u8) -> bool {
        self.reserved & (1 << r) == 0
    }

    /// A random GPR the sequence may write (never %rsp, %rbp or a reserved one).
    pub fn free_reg(&mut self) -> u8 {
        let free: Vec<u8> = (0..16).filter(|&r| self.is_free(r)).collect();
        self.rng.pick(&free)
    }

    /// `n` registers of width `w` (repeats allowed: `xor %eax, %eax` is worth testing).
    pub fn regs(&mut self, w: Sz, n: usize) -> Regs {
        let mut pool: Vec<String> = Vec::new();
        let legacy_pool = w == Sz::B && self.rng.chance(40);
        for r in 0..16u8 {
            if self.is_free(r) && (!legacy_pool || r < 4) {
                pool.push(reg(r, w));
                if legacy_pool {
                    pool.push(format!("%{}", HIGH8[r as usize]));
                }
            }
        }
        let names: Vec<String> = (0..n).map(|_| pool[self.rng.below(pool.len() as u64) as usize].clone()).collect();
        let legacy = names.iter().any(|n| n.ends_with('h'));
        Regs { names, legacy }
    }

    /// One register of width `w`.
    pub fn reg(&mut self, w: Sz) -> String {
        let r = self.free_reg();
        reg(r, w)
    }

    /// An offset into the buffer for an access of `bytes` aligned to `align`; half the time in
    /// the first 256 bytes, so loads often see what earlier stores wrote.
    pub fn offset(&mut self, bytes: usize, align: usize) -> usize {
        let limit = if self.rng.chance(50) { 256 } else { BUF_LEN };
        let slots = (limit - bytes) / align + 1;
        self.rng.below(slots as u64) as usize * align
    }

    fn index_reg(&mut self, legacy: bool) -> Option<u8> {
        let free: Vec<u8> = (0..16).filter(|&r| self.is_free(r) && (!legacy || r < 8)).collect();
        (!free.is_empty()).then(|| self.rng.pick(&free))
    }

    /// A memory operand of `bytes` inside the buffer, aligned to `align`, in one of the
    /// addressing forms (base+disp, base+index*scale+disp, RIP-relative, absolute disp32,
    /// index*scale+disp, a fresh base register). May emit setup instructions (index or base
    /// register loads, which do not touch flags): call it before loading implicit operands.
    pub fn mem(&mut self, bytes: usize, align: usize, legacy: bool) -> String {
        let o = self.offset(bytes, align) as i64;
        let kind = self.rng.below(12);
        let scale = self.rng.pick(&[1i64, 2, 4, 8]);
        let k = self.rng.range(0, 63);
        match (kind, self.index_reg(legacy)) {
            (6 | 7, Some(i)) => {
                self.op(&format!("movl ${k}, {}", reg(i, Sz::L)), Fx::NONE);
                format!("{}(%rbp,{},{scale})", o - 2048 - k * scale, reg(i, Sz::Q))
            }
            (8, _) => format!("out+{}(%rip)", BUF as i64 + o),
            (9, _) => format!("out+{}", BUF as i64 + o),
            (10, Some(b)) => {
                let d = self.rng.range(-128, 127);
                self.op(&format!("leaq out+{}(%rip), {}", BUF as i64 + o - d, reg(b, Sz::Q)), Fx::NONE);
                format!("{d}({})", reg(b, Sz::Q))
            }
            (11, Some(i)) => {
                self.op(&format!("movl ${k}, {}", reg(i, Sz::L)), Fx::NONE);
                format!("out+{}(,{},{scale})", BUF as i64 + o - k * scale, reg(i, Sz::Q))
            }
            _ => format!("{}(%rbp)", o - 2048),
        }
    }

    /// A RIP-relative operand into the buffer.
    pub fn mem_rip(&mut self, bytes: usize, align: usize) -> String {
        format!("out+{}(%rip)", BUF + self.offset(bytes, align))
    }

    /// A register or (40%) memory operand of width `w`, valid with `legacy` registers.
    pub fn rm(&mut self, w: Sz, legacy: bool) -> String {
        if self.rng.chance(40) {
            self.mem(w.bytes(), 1, legacy)
        } else if legacy {
            self.regs(Sz::B, 1).names.remove(0)
        } else {
            self.reg(w)
        }
    }

    /// Wrap the sequence in the prologue and epilogue.
    pub fn finish(mut self) -> Program {
        let mut s = String::new();
        let rng = &mut self.rng;
        s.push_str("/* generated by rtgrind's tests/insn: do not edit */\n\t.text\ntext_data:\n");
        for _ in 0..8 {
            writeln!(s, "\t.quad {:#x}", rng.value()).unwrap();
        }
        s.push_str("\t.globl _start\n_start:\n");
        writeln!(s, "\tleaq out+{}(%rip), %rsp", STACK + STACK_LEN).unwrap();
        if self.uses_fs {
            // arch_prctl(ARCH_SET_FS, buf)
            writeln!(s, "\tmovl $158, %eax\n\tmovl $0x1002, %edi\n\tleaq out+{BUF}(%rip), %rsi\n\tsyscall").unwrap();
        }
        writeln!(s, "\tpushq ${:#x}\n\tpopfq", 0x202 | (rng.next() & ARITH)).unwrap();
        for i in 0..16 {
            writeln!(s, "\tvmovdqu init_ymm+{}(%rip), %ymm{i}", 32 * i).unwrap();
        }
        for r in 0..16u8 {
            match r {
                RSP => {}
                RBP => writeln!(s, "\tleaq out+{}(%rip), %rbp", BUF + 2048).unwrap(),
                _ => writeln!(s, "\tmovabsq ${:#x}, {}", rng.value(), reg(r, Sz::Q)).unwrap(),
            }
        }
        s.push_str("/* generated sequence */\n");
        s.push_str(&self.text);
        s.push_str("/* epilogue: dump the state */\n");
        for r in 0..16u8 {
            writeln!(s, "\tmovq {}, out+{}(%rip)", reg(r, Sz::Q), GPRS + 8 * r as usize).unwrap();
        }
        writeln!(s, "\tpushfq\n\tpopq out+{RFLAGS}(%rip)\n\tmovq $0, -8(%rsp)").unwrap();
        writeln!(s, "\tandq ${OBSERVED:#x}, out+{RFLAGS}(%rip)").unwrap();
        writeln!(s, "\tstmxcsr out+{MXCSR}(%rip)\n\tcld").unwrap();
        for i in 0..16 {
            writeln!(s, "\tvmovdqu %ymm{i}, out+{}(%rip)", YMM + 32 * i).unwrap();
        }
        let out_len = LOG + self.log_len;
        writeln!(
            s,
            "\tleaq out(%rip), %rsi\n\tmovl ${out_len}, %edx\n\
             1:\tmovl $1, %eax\n\tmovl $1, %edi\n\tsyscall\n\
             \ttestq %rax, %rax\n\tjle 2f\n\taddq %rax, %rsi\n\tsubq %rax, %rdx\n\tjnz 1b\n\
             2:\tmovl $60, %eax\n\txorl %edi, %edi\n\tsyscall\n\tud2"
        )
        .unwrap();
        s.push_str("/* functions */\n");
        s.push_str(&self.funcs);
        s.push_str("\t.data\n\t.balign 64\nout:\n");
        writeln!(s, "\t.zero {BUF}").unwrap();
        for _ in 0..BUF_LEN / 8 {
            writeln!(s, "\t.quad {:#x}", rng.value()).unwrap();
        }
        writeln!(s, "\t.zero {}", STACK_LEN + self.log_len).unwrap();
        s.push_str("\t.balign 32\ninit_ymm:\n");
        for i in 0..16 {
            for _ in 0..4 {
                let v = match i % 4 {
                    // packed floats and doubles with small, exact values
                    1 => {
                        let f = |r: &mut Rng| (r.range(-64, 64) as f32 / 4.0).to_bits() as u64;
                        f(rng) | f(rng) << 32
                    }
                    2 => (rng.range(-1000, 1000) as f64 / 8.0).to_bits(),
                    // bytes from a small alphabet, so byte compares find equal bytes
                    3 => u64::from_le_bytes(std::array::from_fn(|_| b'a' + rng.below(4) as u8)),
                    _ => rng.value(),
                };
                writeln!(s, "\t.quad {v:#x}").unwrap();
            }
        }
        s.push_str(&self.data);
        s.push_str("\t.section .note.GNU-stack,\"\",@progbits\n");
        Program { source: s, slots: self.slots, texts: self.texts, out_len, final_undef: self.undef }
    }
}
