//! Integer instruction classes: ALU, shifts and rotates, multiply and divide, cmov/setcc, bit
//! manipulation (BMI1/BMI2/ABM/ADX) and the rest (xchg, cmpxchg, xadd, lock, sign extension,
//! lahf/sahf, movsx/movzx, every lea form, %fs-relative accesses).

use super::gen::*;

/// Condition codes (with every alias) and the flags each reads.
#[rustfmt::skip]
pub const CONDS: [(&str, u64); 30] = [
    ("o", OF), ("no", OF), ("b", CF), ("c", CF), ("nae", CF), ("ae", CF), ("nb", CF), ("nc", CF),
    ("e", ZF), ("z", ZF), ("ne", ZF), ("nz", ZF), ("be", CF | ZF), ("na", CF | ZF), ("a", CF | ZF),
    ("nbe", CF | ZF), ("s", SF), ("ns", SF), ("p", PF), ("pe", PF), ("np", PF), ("po", PF),
    ("l", SF | OF), ("nge", SF | OF), ("ge", SF | OF), ("nl", SF | OF), ("le", ZF | SF | OF),
    ("ng", ZF | SF | OF), ("g", ZF | SF | OF), ("nle", ZF | SF | OF),
];

/// `flags` if `cond`, else none.
fn when(cond: bool, flags: u64) -> u64 {
    if cond {
        flags
    } else {
        0
    }
}

fn binop_fx(op: &str) -> Fx {
    match op {
        "adc" | "sbb" => Fx::CARRY,
        "and" | "or" | "xor" | "test" => Fx::LOGIC,
        _ => Fx::ARITH,
    }
}

/// One random ALU instruction: add adc sub sbb and or xor cmp test inc dec neg not at any width,
/// with register, immediate and memory operands. Also the filler of the control-flow class.
pub fn alu_one(g: &mut Gen) {
    const BIN: [&str; 9] = ["add", "adc", "sub", "sbb", "and", "or", "xor", "cmp", "test"];
    let w = g.rng.pick(&Sz::ALL);
    let s = w.suffix();
    if g.rng.chance(75) {
        let op = g.rng.pick(&BIN);
        let r = g.regs(w, 2);
        let (src, dst) = match g.rng.below(7) {
            0 | 1 => (r.names[0].clone(), r.names[1].clone()),
            // The accumulator's own encodings (`and $imm32, %eax` is opcode 25, not 81).
            6 if g.is_free(RAX) => (g.rng.imm(w), reg(RAX, w)),
            2 => (g.rng.imm(w), r.names[1].clone()),
            3 if op != "test" => (g.mem(w.bytes(), 1, r.legacy), r.names[1].clone()),
            4 => (r.names[0].clone(), g.mem(w.bytes(), 1, r.legacy)),
            _ => (g.rng.imm(w), g.mem(w.bytes(), 1, r.legacy)),
        };
        op!(g, "{op}{s} {src}, {dst}"; binop_fx(op));
    } else {
        let (op, fx) = g.rng.pick(&[("inc", Fx::INC), ("dec", Fx::INC), ("neg", Fx::ARITH), ("not", Fx::NONE)]);
        let dst = g.rm(w, false);
        op!(g, "{op}{s} {dst}"; fx);
    }
}

pub fn alu(g: &mut Gen, n: usize) {
    for _ in 0..n {
        alu_one(g);
    }
}

pub fn shifts(g: &mut Gen, n: usize) {
    for _ in 0..n {
        match g.rng.below(10) {
            0..=5 => shift_one(g),
            6 | 7 => double_shift(g),
            _ => bit_test(g),
        }
    }
}

/// Load the shift count: `$n` or `%cl` (then %rcx must have been reserved while the other
/// operands were picked, so that no address depends on it).
fn count(g: &mut Gen, raw: u32, cl: bool) -> String {
    if cl {
        g.release(RCX);
        op!(g, "movb ${raw}, %cl"; Fx::NONE);
        "%cl".into()
    } else {
        format!("${raw}")
    }
}

fn shift_one(g: &mut Gen) {
    let op = g.rng.pick(&["shl", "sal", "shr", "sar", "rol", "ror", "rcl", "rcr"]);
    let w = g.rng.pick(&Sz::ALL);
    let bits = w.bits();
    let raw = match g.rng.below(4) {
        0 => 1,
        1 => g.rng.below(bits as u64) as u32,
        2 => g.rng.below(256) as u32,
        _ => g.rng.below(bits as u64 + 2) as u32,
    };
    let m = raw & if w == Sz::Q { 63 } else { 31 };
    let cl = g.is_free(RCX) && g.rng.chance(40);
    if cl {
        g.reserve(RCX);
    }
    let dst = g.rm(w, false);
    let fx = if m == 0 {
        Fx::NONE
    } else if op.starts_with("rc") {
        // 8/16-bit rcl/rcr rotate by m mod (bits + 1): a full turn leaves CF as it was
        let wraps = bits < 32 && m % (bits + 1) == 0;
        Fx { reads: CF, writes: CF | OF, undef: when(m != 1, OF) | when(wraps, CF) }
    } else if op.starts_with("ro") {
        Fx::writes(CF | OF, when(m != 1, OF))
    } else {
        Fx::writes(ARITH, AF | when(m != 1, OF) | when(m >= bits, CF))
    };
    let s = w.suffix();
    if raw == 1 && !cl && g.rng.chance(50) {
        op!(g, "{op}{s} {dst}"; fx);
    } else {
        let c = count(g, raw, cl);
        op!(g, "{op}{s} {c}, {dst}"; fx);
    }
}

fn double_shift(g: &mut Gen) {
    let op = g.rng.pick(&["shld", "shrd"]);
    let w = g.rng.pick(&Sz::WIDE);
    let m = g.rng.below(if w == Sz::W { 16 } else { w.bits() as u64 }) as u32;
    // the count is masked to 5 bits (6 for 64-bit): an out-of-range immediate is fine
    let raw = if w != Sz::Q && g.rng.chance(20) { m + 32 } else { m };
    let cl = g.is_free(RCX) && g.rng.chance(50);
    if cl {
        g.reserve(RCX);
    }
    let src = g.reg(w);
    let dst = g.rm(w, false);
    let fx = if m == 0 { Fx::NONE } else { Fx::writes(ARITH, AF | when(m != 1, OF)) };
    let c = count(g, raw, cl);
    op!(g, "{op}{} {c}, {src}, {dst}", w.suffix(); fx);
}

fn bit_test(g: &mut Gen) {
    let op = g.rng.pick(&["bt", "bts", "btr", "btc"]);
    let w = g.rng.pick(&Sz::WIDE);
    let s = w.suffix();
    match g.rng.below(4) {
        0 => {
            let (k, dst) = (g.rng.below(256), g.rm(w, false));
            op!(g, "{op}{s} ${k}, {dst}"; Fx::BT);
        }
        1 => {
            let r = g.regs(w, 2);
            op!(g, "{op}{s} {}, {}", r.names[0], r.names[1]; Fx::BT);
        }
        _ => {
            // a register bit offset addresses memory beyond the operand: keep it small
            let r = g.free_reg();
            let k = g.rng.range(-512, 511);
            let disp = g.rng.range(-2048 / 8 + 8, 2047 / 8 - 9) * w.bytes() as i64;
            op!(g, "movq ${k}, {}", reg(r, Sz::Q); Fx::NONE);
            let lock = if op != "bt" && g.rng.chance(30) { "lock " } else { "" };
            op!(g, "{lock}{op}{s} {}, {disp}(%rbp)", reg(r, w); Fx::BT);
        }
    }
}

pub fn muldiv(g: &mut Gen, n: usize) {
    for _ in 0..n {
        match g.rng.below(8) {
            0 | 1 => {
                let w = g.rng.pick(&Sz::ALL);
                let op = g.rng.pick(&["mul", "imul"]);
                let src = g.rm(w, false);
                op!(g, "{op}{} {src}", w.suffix(); Fx::MUL);
            }
            2 => {
                let w = g.rng.pick(&Sz::WIDE);
                let (src, dst) = (g.rm(w, false), g.reg(w));
                op!(g, "imul{} {src}, {dst}", w.suffix(); Fx::MUL);
            }
            3 => {
                let w = g.rng.pick(&Sz::WIDE);
                let (imm, src, dst) = (g.rng.imm(w), g.rm(w, false), g.reg(w));
                op!(g, "imul{} {imm}, {src}, {dst}", w.suffix(); Fx::MUL);
            }
            4 => alu_one(g),
            _ => divide(g),
        }
    }
}

/// div/idiv with operands fixed up so that the quotient fits: never #DE.
fn divide(g: &mut Gen) {
    let signed = g.rng.chance(50);
    let w = g.rng.pick(&Sz::ALL);
    let s = w.suffix();
    g.reserve(RAX);
    g.reserve(RDX);
    let divisor = if g.rng.chance(60) { g.regs(w, 1).names.remove(0) } else { g.mem(w.bytes(), w.bytes(), false) };
    g.release(RAX);
    g.release(RDX);
    let high = ["%ah", "%dx", "%edx", "%rdx"][w as usize];
    if signed {
        // divisor not 0 nor -1, dividend sign-extended: |quotient| <= |dividend| / 2
        op!(g, "or{s} $2, {divisor}"; Fx::LOGIC);
        op!(g, "and{s} $-2, {divisor}"; Fx::LOGIC);
        g.op(["cbtw", "cwtd", "cltd", "cqto"][w as usize], Fx::NONE);
    } else if g.rng.chance(50) {
        // divisor not 0, high half of the dividend 0
        op!(g, "or{s} $1, {divisor}"; Fx::LOGIC);
        op!(g, "xor{s} {high}, {high}"; Fx::LOGIC);
    } else {
        // divisor >= 2^(n-1) > high half of the dividend
        let top = ["$0x80", "$0x8000", "$0x80000000", "$-0x80000000"][w as usize];
        op!(g, "or{s} {top}, {divisor}"; Fx::LOGIC);
        let clear = ["andb $0x7f, %ah", "andw $0x7fff, %dx", "andl $0x7fffffff, %edx", "btrq $63, %rdx"];
        g.op(clear[w as usize], if w == Sz::Q { Fx::BT } else { Fx::LOGIC });
    }
    let op = if signed { "idiv" } else { "div" };
    op!(g, "{op}{s} {divisor}"; Fx::DIV);
}

pub fn cmov_setcc(g: &mut Gen, n: usize) {
    for i in 0..n {
        match g.rng.below(10) {
            0..=2 => alu_one(g),
            3 if i % 3 == 0 => {
                let t = g.rng.pick(&["stc", "clc", "cmc"]);
                g.op(t, Fx::writes(CF, 0))
            }
            3 => {
                op!(g, "movb ${}, %ah", g.rng.below(256); Fx::NONE);
                g.op("sahf", Fx::writes(ARITH & !OF, 0));
            }
            4..=6 => {
                let (cc, flags) = g.rng.pick(&CONDS);
                let w = g.rng.pick(&Sz::WIDE);
                let (src, dst) = (g.rm(w, false), g.reg(w));
                op!(g, "cmov{cc} {src}, {dst}"; Fx::reads(flags));
            }
            _ => {
                let (cc, flags) = g.rng.pick(&CONDS);
                let dst = if g.rng.chance(60) { g.regs(Sz::B, 1).names.remove(0) } else { g.mem(1, 1, false) };
                op!(g, "set{cc} {dst}"; Fx::reads(flags));
            }
        }
    }
}

pub fn bitops(g: &mut Gen, n: usize) {
    for _ in 0..n {
        let w = g.rng.pick(&Sz::LQ);
        match g.rng.below(14) {
            0 => {
                let (op, fx) =
                    g.rng.pick(&[("popcnt", Fx::ARITH), ("lzcnt", Fx::writes(ARITH, OF | SF | PF | AF)), ("tzcnt", Fx::writes(ARITH, OF | SF | PF | AF))]);
                let w = g.rng.pick(&Sz::WIDE);
                let (src, dst) = (g.rm(w, false), g.reg(w));
                op!(g, "{op} {src}, {dst}"; fx);
            }
            1 => {
                // bsf/bsr leave the destination unchanged for a zero source: force one bit
                let w = g.rng.pick(&Sz::WIDE);
                let (src, dst) = (g.rm(w, false), g.reg(w));
                op!(g, "bts{} ${}, {src}", w.suffix(), g.rng.below(w.bits() as u64); Fx::BT);
                let op = g.rng.pick(&["bsf", "bsr"]);
                op!(g, "{op} {src}, {dst}"; Fx::writes(ARITH, ARITH & !ZF));
            }
            2 => {
                let r = g.reg(w);
                op!(g, "bswap {r}"; Fx::NONE);
            }
            3 => {
                let (src2, src1, dst) = (g.rm(w, false), g.reg(w), g.reg(w));
                op!(g, "andn {src2}, {src1}, {dst}"; Fx::writes(ARITH, AF | PF));
            }
            4 => {
                let (op, fx) =
                    g.rng.pick(&[("blsi", Fx::writes(ARITH, AF | PF)), ("blsr", Fx::writes(ARITH, AF | PF)), ("blsmsk", Fx::writes(ARITH, AF | PF))]);
                let (src, dst) = (g.rm(w, false), g.reg(w));
                op!(g, "{op} {src}, {dst}"; fx);
            }
            5 => {
                let (op, fx) = g.rng.pick(&[
                    ("bextr", Fx::writes(ARITH, AF | SF | PF)),
                    ("bzhi", Fx::writes(ARITH, AF | PF)),
                    ("shlx", Fx::NONE),
                    ("shrx", Fx::NONE),
                    ("sarx", Fx::NONE),
                ]);
                let ctl = g.free_reg();
                if g.rng.chance(50) {
                    // small control values too, not only random bits
                    op!(g, "movl ${}, {}", g.rng.below(0x4000), reg(ctl, Sz::L); Fx::NONE);
                }
                let (src, dst) = (g.rm(w, false), g.reg(w));
                op!(g, "{op} {}, {src}, {dst}", reg(ctl, w); fx);
            }
            6 => {
                let op = g.rng.pick(&["pdep", "pext"]);
                let (mask, src, dst) = (g.rm(w, false), g.reg(w), g.reg(w));
                op!(g, "{op} {mask}, {src}, {dst}"; Fx::NONE);
            }
            7 => {
                let (src, dst) = (g.rm(w, false), g.reg(w));
                op!(g, "rorx ${}, {src}, {dst}", g.rng.below(w.bits() as u64); Fx::NONE);
            }
            8 => {
                // mulx: rdx * src -> hi:lo (hi == lo gives hi)
                g.reserve(RDX);
                let (src, lo, hi) = (g.rm(w, false), g.reg(w), g.reg(w));
                g.release(RDX);
                op!(g, "mulx {src}, {lo}, {hi}"; Fx::NONE);
            }
            9 => {
                let (op, flag) = g.rng.pick(&[("adcx", CF), ("adox", OF)]);
                let (src, dst) = (g.rm(w, false), g.reg(w));
                op!(g, "{op} {src}, {dst}"; Fx { reads: flag, writes: flag, undef: 0 });
            }
            10 => {
                let sw = g.rng.pick(&Sz::ALL);
                let src = g.rm(sw, false);
                let dst = if sw == Sz::Q { g.reg(Sz::Q) } else { g.reg(Sz::L) };
                op!(g, "crc32{} {src}, {dst}", sw.suffix(); Fx::NONE);
            }
            11 => {
                let w = g.rng.pick(&Sz::WIDE);
                let (r, m) = (g.reg(w), g.mem(w.bytes(), 1, false));
                let text = if g.rng.chance(50) { format!("movbe {m}, {r}") } else { format!("movbe {r}, {m}") };
                g.op(&text, Fx::NONE);
            }
            _ => alu_one(g),
        }
    }
}

pub fn misc(g: &mut Gen, n: usize) {
    g.uses_fs = true;
    for _ in 0..n {
        let w = g.rng.pick(&Sz::ALL);
        let s = w.suffix();
        match g.rng.below(20) {
            0 => {
                let r = g.regs(w, 2);
                op!(g, "xchg{s} {}, {}", r.names[0], r.names[1]; Fx::NONE);
            }
            1 => {
                // implicitly locked: keep it naturally aligned (no split lock)
                let r = g.regs(w, 1);
                let m = g.mem(w.bytes(), w.bytes(), r.legacy);
                op!(g, "xchg{s} {}, {m}", r.names[0]; Fx::NONE);
            }
            2 | 3 => {
                let r = g.regs(w, 2);
                let dst = if g.rng.chance(60) {
                    let m = g.mem(w.bytes(), w.bytes(), r.legacy);
                    if g.rng.chance(50) {
                        op!(g, "mov{s} {}, {m}", reg(RAX, w); Fx::NONE); // the equal case
                    }
                    m
                } else {
                    r.names[1].clone()
                };
                let lock = if dst.contains('(') && g.rng.chance(50) { "lock " } else { "" };
                op!(g, "{lock}cmpxchg{s} {}, {dst}", r.names[0]; Fx::ARITH);
            }
            4 => {
                let (op, bytes) = g.rng.pick(&[("cmpxchg8b", 8), ("cmpxchg16b", 16)]);
                for r in [RAX, RDX, RCX, RBX] {
                    g.reserve(r);
                }
                let m = g.mem(bytes, bytes, false);
                for r in [RAX, RDX, RCX, RBX] {
                    g.release(r);
                }
                if g.rng.chance(50) {
                    let (lo, hi) = if bytes == 8 { ("%eax", "%edx") } else { ("%rax", "%rdx") };
                    op!(g, "mov {lo}, {m}"; Fx::NONE);
                    op!(g, "mov {hi}, {}", add_disp(&m, bytes / 2); Fx::NONE);
                }
                let lock = if g.rng.chance(50) { "lock " } else { "" };
                op!(g, "{lock}{op} {m}"; Fx::writes(ZF, 0));
            }
            5 => {
                let r = g.regs(w, 2);
                let dst = if g.rng.chance(50) { g.mem(w.bytes(), w.bytes(), r.legacy) } else { r.names[1].clone() };
                let lock = if dst.contains('(') && g.rng.chance(60) { "lock " } else { "" };
                op!(g, "{lock}xadd{s} {}, {dst}", r.names[0]; Fx::ARITH);
            }
            6 | 7 => {
                let ops =
                    [("add", Fx::ARITH), ("sub", Fx::ARITH), ("and", Fx::LOGIC), ("or", Fx::LOGIC), ("xor", Fx::LOGIC), ("adc", Fx::CARRY), ("sbb", Fx::CARRY)];
                let (op, fx) = g.rng.pick(&ops);
                let r = g.regs(w, 1);
                let m = g.mem(w.bytes(), w.bytes(), r.legacy);
                let src = if g.rng.chance(50) { g.rng.imm(w) } else { r.names[0].clone() };
                op!(g, "lock {op}{s} {src}, {m}"; fx);
                let (op, fx) = g.rng.pick(&[("inc", Fx::INC), ("dec", Fx::INC), ("neg", Fx::ARITH), ("not", Fx::NONE)]);
                let m = g.mem(w.bytes(), w.bytes(), false);
                op!(g, "lock {op}{s} {m}"; fx);
            }
            8 => {
                let t = g.rng.pick(&["cbtw", "cwtl", "cltq", "cwtd", "cltd", "cqto"]);
                g.op(t, Fx::NONE)
            }
            9 => {
                g.op("lahf", Fx::reads(ARITH & !OF));
                if g.rng.chance(50) {
                    op!(g, "xorb ${}, %ah", g.rng.below(256); Fx::LOGIC);
                }
                g.op("sahf", Fx::writes(ARITH & !OF, 0));
            }
            10 | 11 => {
                let forms = [
                    ("movsbw", Sz::B, Sz::W),
                    ("movsbl", Sz::B, Sz::L),
                    ("movsbq", Sz::B, Sz::Q),
                    ("movswl", Sz::W, Sz::L),
                    ("movswq", Sz::W, Sz::Q),
                    ("movslq", Sz::L, Sz::Q),
                    ("movzbw", Sz::B, Sz::W),
                    ("movzbl", Sz::B, Sz::L),
                    ("movzbq", Sz::B, Sz::Q),
                    ("movzwl", Sz::W, Sz::L),
                    ("movzwq", Sz::W, Sz::Q),
                ];
                let (op, from, to) = g.rng.pick(&forms);
                // a REX.W destination excludes %ah..%bh sources
                let r = if to == Sz::Q { Regs { names: vec![g.reg(from)], legacy: false } } else { g.regs(from, 1) };
                let legacy = r.legacy;
                let src = if g.rng.chance(40) { g.mem(from.bytes(), 1, legacy) } else { r.names[0].clone() };
                let dst = if legacy { reg(g.rng.pick(&[RAX, RCX, RDX, RBX, RSI, RDI]), to) } else { g.reg(to) };
                op!(g, "{op} {src}, {dst}"; Fx::NONE);
            }
            12 | 13 => lea(g),
            14 => {
                // moves: movabs immediate and moffs forms, partial-register merges
                let r = g.free_reg();
                match g.rng.below(4) {
                    0 => op!(g, "movabsq ${:#x}, {}", g.rng.value(), reg(r, Sz::Q); Fx::NONE),
                    1 if r == RAX => {
                        op!(g, "movabs out+{}, {}", BUF + g.offset(w.bytes(), 1), reg(RAX, w); Fx::NONE)
                    }
                    1 => {
                        op!(g, "movq ${}, {}", g.rng.range(-1 << 31, (1 << 31) - 1), reg(r, Sz::Q); Fx::NONE)
                    }
                    2 => {
                        let regs = g.regs(w, 2);
                        op!(g, "mov{s} {}, {}", regs.names[0], regs.names[1]; Fx::NONE);
                    }
                    _ => {
                        let imm = g.rng.imm(w);
                        let dst = g.rm(w, false);
                        op!(g, "mov{s} {imm}, {dst}"; Fx::NONE);
                    }
                }
            }
            15 => {
                // %fs-relative accesses: the prologue set the fs base to the buffer
                let o = g.rng.below((BUF_LEN - 264) as u64);
                let r = g.reg(w);
                match g.rng.below(3) {
                    0 => op!(g, "mov{s} %fs:{o}, {r}"; Fx::NONE),
                    1 => op!(g, "add{s} {r}, %fs:{o}"; Fx::ARITH),
                    _ => {
                        let i = g.free_reg();
                        let k = g.rng.range(0, 31);
                        op!(g, "movl ${k}, {}", reg(i, Sz::L); Fx::NONE);
                        op!(g, "mov{s} %fs:{o}(,{},8), {r}", reg(i, Sz::Q); Fx::NONE);
                    }
                }
            }
            16 => {
                // xlat: al = [rbx + al]
                g.reserve(RBX);
                op!(g, "leaq out+{}(%rip), %rbx", BUF + g.rng.below(BUF_LEN as u64 - 256) as usize; Fx::NONE);
                g.op("xlatb", Fx::NONE);
                g.release(RBX);
            }
            17 => {
                let nops = [
                    "nop",
                    "pause",
                    "endbr64",
                    "xchg %ax, %ax",
                    "nopw 0x0(%rax,%rax,1)",
                    "nopl 0x12345678(%rax)",
                    "mfence",
                    "lfence",
                    "sfence",
                    "prefetcht0 (%rbp)",
                    "xchgl %eax, %eax",
                    "xchgq %rax, %rax",
                ];
                let t = g.rng.pick(&nops);
                g.op(t, Fx::NONE);
            }
            _ => alu_one(g),
        }
    }
}

/// `lea` in every addressing form: base, base+disp8/32, base+index*scale, no base, RIP-relative,
/// %rsp/%r12 bases (SIB), %rbp/%r13 bases (disp8 0), 32-bit address size, 16/32-bit results.
fn lea(g: &mut Gen) {
    let any = |g: &mut Gen| g.rng.below(16) as u8;
    let index = |g: &mut Gen| loop {
        let r = g.rng.below(16) as u8;
        if r != RSP {
            return r;
        }
    };
    let disp = match g.rng.below(4) {
        0 => String::new(),
        1 => g.rng.range(-128, 127).to_string(),
        2 => g.rng.range(i32::MIN as i64, i32::MAX as i64).to_string(),
        _ => "0".into(),
    };
    let scale = g.rng.pick(&[1, 2, 4, 8]);
    let aw = if g.rng.chance(20) { Sz::L } else { Sz::Q };
    let addr = match g.rng.below(7) {
        0 => format!("{disp}({})", reg(any(g), aw)),
        1 => format!("{disp}({},{},{scale})", reg(any(g), aw), reg(index(g), aw)),
        2 => format!("{}(,{},{scale})", if disp.is_empty() { "0" } else { &disp }, reg(index(g), aw)),
        3 => format!("{}({})", disp, g.rng.pick(&["%rsp", "%r12", "%rbp", "%r13"])),
        4 => format!("{}({},{},{scale})", disp, g.rng.pick(&["%rsp", "%r12", "%rbp", "%r13"]), reg(index(g), Sz::Q)),
        5 => format!("out+{}(%rip)", g.rng.below(BUF_LEN as u64)),
        _ => format!("_start+{}(%rip)", g.rng.below(64)),
    };
    let w = g.rng.pick(&Sz::WIDE);
    let dst = g.reg(w);
    op!(g, "lea{} {addr}, {dst}", w.suffix(); Fx::NONE);
}

/// `disp(...)` or `sym+disp(...)` plus `add` bytes.
fn add_disp(mem: &str, add: usize) -> String {
    match mem.find('(') {
        Some(0) => format!("{add}{mem}"),
        _ => format!("{add}+{mem}"),
    }
}
