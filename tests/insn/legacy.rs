//! Classes outside SSE/AVX: x87 (the exact 80-bit state), MMX (which shares the x87 registers)
//! and the crypto and random-number extensions (AES, VAES, SHA, CRC32, RDRAND/RDSEED).
//!
//! The x87 and MMX state is not part of the common dump, so each program ends by storing it into
//! the data buffer, which is compared byte for byte: the status and control words and the eight
//! registers as 80-bit values (`fstpt`, popping the whole stack), or the eight MMX registers.

use super::gen::*;
use super::int::alu_one;

/// Where the x87 or MMX state is stored at the end: the start of the data buffer.
fn state_at(k: usize) -> String {
    format!("out+{}(%rip)", BUF + k)
}

fn st(i: u64) -> String {
    format!("%st({i})")
}

/// Control words with every exception masked (a program must not trap), each precision and
/// each rounding mode.
const CONTROL_WORDS: &[u16] = &[0x037f, 0x027f, 0x007f, 0x077f, 0x0b7f, 0x0f7f, 0x0e7f, 0x013f];

pub fn x87(g: &mut Gen, n: usize) {
    g.op("fninit", Fx::NONE);
    for _ in 0..n {
        let i = g.rng.below(8);
        match g.rng.below(24) {
            0 | 1 => {
                let op = g.rng.pick(&["fld1", "fldz", "fldpi", "fldl2e", "fldln2", "fldl2t", "fldlg2"]);
                g.op(op, Fx::NONE);
            }
            2..=4 => {
                let (op, bytes) = g.rng.pick(&[("flds", 4), ("fldl", 8), ("fldt", 10), ("filds", 2), ("fildl", 4), ("fildll", 8)]);
                let m = g.mem(bytes, 1, false);
                op!(g, "{op} {m}"; Fx::NONE);
            }
            5 => {
                let op = g.rng.pick(&["fld", "fxch"]);
                op!(g, "{op} {}", st(i); Fx::NONE);
            }
            6..=8 => {
                let op = g.rng.pick(&["fadd", "fsub", "fsubr", "fmul", "fdiv", "fdivr"]);
                let text = match g.rng.below(3) {
                    0 => format!("{op} {}, %st", st(i)),
                    1 => format!("{op} %st, {}", st(i)),
                    _ => format!("{op}p %st, {}", st(i.max(1))),
                };
                g.op(&text, Fx::NONE);
            }
            9 | 10 => {
                let (op, bytes) = g.rng.pick(&[
                    ("fadds", 4),
                    ("faddl", 8),
                    ("fmuls", 4),
                    ("fsubl", 8),
                    ("fsubrs", 4),
                    ("fdivl", 8),
                    ("fdivrs", 4),
                    ("fiadds", 2),
                    ("fimull", 4),
                    ("fisubs", 2),
                    ("fidivl", 4),
                    ("fcoms", 4),
                    ("fcompl", 8),
                    ("ficoms", 2),
                ]);
                let m = g.mem(bytes, 1, false);
                op!(g, "{op} {m}"; Fx::NONE);
            }
            11..=13 => {
                let op = g.rng.pick(&[
                    "fchs", "fabs", "fsqrt", "frndint", "fscale", "fprem", "fprem1", "fxtract", "ftst", "fxam", "f2xm1", "fyl2x", "fyl2xp1", "fptan", "fpatan",
                    "fsin", "fcos", "fsincos",
                ]);
                g.op(op, Fx::NONE);
            }
            14 | 15 => {
                let (op, bytes) = g.rng.pick(&[
                    ("fsts", 4),
                    ("fstl", 8),
                    ("fstps", 4),
                    ("fstpl", 8),
                    ("fstpt", 10),
                    ("fists", 2),
                    ("fistl", 4),
                    ("fistpll", 8),
                    ("fisttps", 2),
                    ("fisttpl", 4),
                    ("fisttpll", 8),
                ]);
                let m = g.mem(bytes, 1, false);
                op!(g, "{op} {m}"; Fx::NONE);
            }
            16 => {
                let op = g.rng.pick(&["fcomi", "fucomi", "fcomip", "fucomip"]);
                op!(g, "{op} {}, %st", st(i); Fx::writes(ARITH, 0));
            }
            17 => {
                // The status word's condition codes into the flags.
                let op = g.rng.pick(&["fcom", "fcomp", "fucom", "fucomp"]);
                op!(g, "{op} {}", st(i); Fx::NONE);
                g.reserve(RAX);
                g.op("fnstsw %ax", Fx::NONE);
                g.op("sahf", Fx::writes(ARITH & !OF, 0));
                g.release(RAX);
            }
            18 => {
                let op = g.rng.pick(&["fcmovb", "fcmove", "fcmovbe", "fcmovu", "fcmovnb", "fcmovne", "fcmovnbe", "fcmovnu"]);
                op!(g, "{op} {}, %st", st(i); Fx::reads(CF | ZF | PF));
            }
            19 => {
                let cw = g.rng.pick(CONTROL_WORDS);
                let m = g.mem(2, 2, false);
                op!(g, "movw ${cw:#x}, {m}"; Fx::NONE);
                op!(g, "fldcw {m}"; Fx::NONE);
            }
            20 => {
                let text = match g.rng.below(6) {
                    0 => "fincstp".to_string(),
                    1 => "fdecstp".to_string(),
                    2 => format!("ffree {}", st(i)),
                    3 => "fnclex".to_string(),
                    4 => "fnop".to_string(),
                    _ => {
                        let m = g.mem(2, 1, false);
                        format!("{} {m}", g.rng.pick(&["fnstsw", "fnstcw"]))
                    }
                };
                g.op(&text, Fx::NONE);
            }
            _ => alu_one(g),
        }
    }
    // The state: status and control words, then every register from st(0) down, popped.
    g.op("fnclex", Fx::NONE);
    op!(g, "fnstsw {}", state_at(0); Fx::NONE);
    op!(g, "fnstcw {}", state_at(2); Fx::NONE);
    for k in 0..8 {
        op!(g, "fstpt {}", state_at(16 + 10 * k); Fx::NONE);
    }
}

/// MMX `op mm/m64, mm`.
#[rustfmt::skip]
const MMX_BIN: &[&str] = &[
    "paddb", "paddw", "paddd", "paddq", "psubb", "psubw", "psubd", "psubq", "paddsb", "paddsw",
    "paddusb", "paddusw", "psubsb", "psubsw", "psubusb", "psubusw", "pmullw", "pmulhw", "pmulhuw",
    "pmuludq", "pmaddwd", "pand", "pandn", "por", "pxor", "pcmpeqb", "pcmpeqw", "pcmpeqd",
    "pcmpgtb", "pcmpgtw", "pcmpgtd", "packsswb", "packssdw", "packuswb", "punpcklbw", "punpcklwd",
    "punpckldq", "punpckhbw", "punpckhwd", "punpckhdq", "psllw", "pslld", "psllq", "psrlw",
    "psrld", "psrlq", "psraw", "psrad", "pavgb", "pavgw", "pminub", "pmaxub", "pminsw", "pmaxsw",
    "psadbw", "pshufb", "phaddw", "phaddd", "phaddsw", "phsubw", "phsubd", "phsubsw", "pmaddubsw",
    "pmulhrsw", "psignb", "psignw", "psignd", "pabsb", "pabsw", "pabsd", "movq",
];

fn mm(i: u64) -> String {
    format!("%mm{i}")
}

pub fn mmx(g: &mut Gen, n: usize) {
    g.vector_checkpoints = true;
    for i in 0..8 {
        let m = g.mem(8, 1, false);
        op!(g, "movq {m}, {}", mm(i); Fx::NONE);
    }
    for _ in 0..n {
        let (a, b) = (g.rng.below(8), g.rng.below(8));
        let src = |g: &mut Gen| if g.rng.chance(35) { g.mem(8, 1, false) } else { mm(g.rng.below(8)) };
        match g.rng.below(16) {
            0..=6 => {
                let op = g.rng.pick(MMX_BIN);
                let s = src(g);
                op!(g, "{op} {s}, {}", mm(b); Fx::NONE);
            }
            7 => {
                let op = g.rng.pick(&["psllw", "pslld", "psllq", "psrlw", "psrld", "psrlq", "psraw", "psrad"]);
                op!(g, "{op} ${}, {}", g.rng.below(70), mm(b); Fx::NONE);
            }
            8 => {
                let s = src(g);
                let text = match g.rng.below(2) {
                    0 => format!("pshufw ${}, {s}, {}", g.rng.below(256), mm(b)),
                    _ => format!("palignr ${}, {s}, {}", g.rng.below(20), mm(b)),
                };
                g.op(&text, Fx::NONE);
            }
            9 | 10 => {
                let (r32, r64) = (g.reg(Sz::L), g.reg(Sz::Q));
                let text = match g.rng.below(9) {
                    0 => format!("movd {r32}, {}", mm(b)),
                    1 => format!("movq {r64}, {}", mm(b)),
                    2 => format!("movd {}, {r32}", mm(a)),
                    3 => format!("movq {}, {r64}", mm(a)),
                    4 => format!("pmovmskb {}, {r32}", mm(a)),
                    5 => format!("pextrw ${}, {}, {r32}", g.rng.below(4), mm(a)),
                    6 => format!("pinsrw ${}, {r32}, {}", g.rng.below(4), mm(b)),
                    7 => format!("movd {}, {}", g.mem(4, 1, false), mm(b)),
                    _ => format!("movd {}, {}", mm(a), g.mem(4, 1, false)),
                };
                g.op(&text, Fx::NONE);
            }
            11 => {
                let text = match g.rng.below(3) {
                    0 => format!("movq {}, {}", mm(a), g.mem(8, 1, false)),
                    1 => format!("movntq {}, {}", mm(a), g.mem(8, 8, false)),
                    _ => {
                        let o = g.offset(8, 1);
                        op!(g, "leaq out+{}(%rip), %rdi", BUF + o; Fx::NONE);
                        format!("maskmovq {}, {}", mm(a), mm(b))
                    }
                };
                g.op(&text, Fx::NONE);
            }
            12 | 13 => {
                // Between MMX and SSE registers.
                let (xa, xb) = (format!("%xmm{}", g.rng.below(16)), format!("%xmm{}", g.rng.below(16)));
                let text = match g.rng.below(8) {
                    0 => format!("movq2dq {}, {xb}", mm(a)),
                    1 => format!("movdq2q {xa}, {}", mm(b)),
                    2 => format!("cvtpi2ps {}, {xb}", src(g)),
                    3 => format!("cvtpi2pd {}, {xb}", src(g)),
                    4 => format!("cvtps2pi {xa}, {}", mm(b)),
                    5 => format!("cvttps2pi {xa}, {}", mm(b)),
                    6 => format!("cvtpd2pi {xa}, {}", mm(b)),
                    _ => format!("cvttpd2pi {xa}, {}", mm(b)),
                };
                g.op(&text, Fx::NONE);
            }
            _ => alu_one(g),
        }
    }
    for i in 0..8 {
        op!(g, "movq {}, {}", mm(i), state_at(8 * i as usize); Fx::NONE);
    }
    g.op("emms", Fx::NONE);
}

fn xmm(i: u64) -> String {
    format!("%xmm{i}")
}

pub fn crypto(g: &mut Gen, n: usize) {
    g.vector_checkpoints = true;
    for _ in 0..n {
        let (a, b, c) = (g.rng.below(16), g.rng.below(16), g.rng.below(16));
        let src = |g: &mut Gen| if g.rng.chance(35) { g.mem(16, 16, false) } else { xmm(g.rng.below(16)) };
        match g.rng.below(14) {
            0..=2 => {
                let op = g.rng.pick(&["aesenc", "aesenclast", "aesdec", "aesdeclast", "aesimc"]);
                let s = src(g);
                op!(g, "{op} {s}, {}", xmm(b); Fx::NONE);
            }
            3 => {
                let s = src(g);
                op!(g, "aeskeygenassist ${}, {s}, {}", g.rng.below(256), xmm(b); Fx::NONE);
            }
            4 => {
                // VEX forms, 128 and (VAES) 256 bits.
                let op = g.rng.pick(&["vaesenc", "vaesenclast", "vaesdec", "vaesdeclast"]);
                let r = if g.rng.chance(50) { "ymm" } else { "xmm" };
                op!(g, "{op} %{r}{a}, %{r}{c}, %{r}{b}"; Fx::NONE);
            }
            5..=7 => {
                let op = g.rng.pick(&["sha1nexte", "sha1msg1", "sha1msg2", "sha256msg1", "sha256msg2", "sha256rnds2"]);
                let s = src(g);
                op!(g, "{op} {s}, {}", xmm(b); Fx::NONE);
            }
            8 => {
                let s = src(g);
                op!(g, "sha1rnds4 ${}, {s}, {}", g.rng.below(4), xmm(b); Fx::NONE);
            }
            9 | 10 => {
                let w = g.rng.pick(&Sz::ALL);
                let s = g.rm(w, false);
                let dst = g.reg(if w == Sz::Q { Sz::Q } else { Sz::L });
                op!(g, "crc32{} {s}, {dst}", w.suffix(); Fx::NONE);
            }
            11 => {
                // The number differs per run natively: it only must not disturb anything else.
                let op = g.rng.pick(&["rdrand", "rdseed"]);
                let w = g.rng.pick(&Sz::WIDE);
                let r = g.reg(w);
                // One log entry for both: no checkpoint may fall between them.
                op!(g, "{op} {r}; xor {r}, {r}"; Fx::LOGIC);
            }
            _ => alu_one(g),
        }
    }
}

/// Bytes of an xsave area with x87, SSE and AVX (the components the guest is shown): the legacy
/// 512, the 64-byte header, AVX's 256 (standard and compacted formats alike).
const XSAVE_AREA: usize = 832;

/// The XSAVE family: `fxsave`/`fxrstor` (and their 64-bit forms), `xsave`, `xsaveopt`, `xsavec`
/// and `xrstor` with masks of x87, SSE and AVX, between x87, SSE, AVX and integer work (and
/// `vzeroupper`/`vzeroall`, which put AVX state back in its initial configuration); the areas
/// are in the data buffer, compared byte for byte but XSTATE_BV (see the end), XCOMP_BV
/// included. An area's header is zeroed before each save, as `xrstor` requires of what it
/// does not write.
pub fn xsave(g: &mut Gen, n: usize) {
    g.vector_checkpoints = true;
    g.op("fninit", Fx::NONE);
    // Two areas at fixed places, 64-byte aligned; an fxsave area after them.
    let areas = [0usize, XSAVE_AREA + 64];
    let fx_area = 2 * (XSAVE_AREA + 64);
    let at = |base: usize, k: usize| format!("out+{}(%rip)", BUF + base + k);
    for &a in &areas {
        for k in 0..8 {
            op!(g, "movq $0, {}", at(a, 512 + 8 * k); Fx::NONE);
        }
    }
    g.reserve(RAX);
    g.reserve(RDX);
    let mut written = [false; 2];
    for _ in 0..n {
        let (a, b, c) = (g.rng.below(16), g.rng.below(16), g.rng.below(16));
        match g.rng.below(16) {
            0 => {
                let op = g.rng.pick(&["fld1", "fldpi", "fldl2e", "fldz"]);
                g.op(op, Fx::NONE);
            }
            1 => {
                let op = g.rng.pick(&["faddp", "fmulp", "fsubp"]);
                op!(g, "{op} %st, %st(1)"; Fx::NONE);
            }
            2 => {
                let op = g.rng.pick(&["paddq", "pxor", "pmulld", "punpcklbw", "addps", "mulpd"]);
                op!(g, "{op} %xmm{a}, %xmm{b}"; Fx::NONE);
            }
            3 => {
                let op = g.rng.pick(&["vpaddd", "vxorps", "vmulps", "vpshufb", "vaddpd"]);
                op!(g, "{op} %ymm{a}, %ymm{c}, %ymm{b}"; Fx::NONE);
            }
            4 => {
                let m = g.mem_rip(32, 32);
                op!(g, "vmovdqu {m}, %ymm{b}"; Fx::NONE);
            }
            5 => {
                let op = g.rng.pick(&["vzeroupper", "vzeroupper", "vzeroall", "emms"]);
                g.op(op, Fx::NONE);
            }
            6 => {
                // A rounding mode and flush-to-zero, every exception masked.
                let mxcsr = g.rng.pick(&[0x1f80u32, 0x3f80, 0x5f80, 0x7f80, 0x9f80]);
                let m = g.mem_rip(4, 4);
                op!(g, "movl ${mxcsr:#x}, {m}"; Fx::NONE);
                op!(g, "ldmxcsr {m}"; Fx::NONE);
            }
            7..=10 => {
                let i = g.rng.below(2) as usize;
                let mask = g.rng.pick(&[7u32, 7, 1, 2, 3, 4, 5, 6]);
                op!(g, "movl ${mask}, %eax"; Fx::NONE);
                g.op("xorl %edx, %edx", Fx::NONE);
                let op = g.rng.pick(&["xsave", "xsave64", "xsaveopt", "xsaveopt64", "xsavec", "xsavec64"]);
                // (A standard save leaves XCOMP_BV as it was: a compacted save's would stay.)
                for k in 0..8 {
                    op!(g, "movq $0, {}", at(areas[i], 512 + 8 * k); Fx::NONE);
                }
                op!(g, "{op} {}", at(areas[i], 0); Fx::NONE);
                written[i] = true;
            }
            11 | 12 => {
                let i = g.rng.below(2) as usize;
                if written[i] {
                    let mask = g.rng.pick(&[7u32, 7, 1, 2, 4, 6]);
                    op!(g, "movl ${mask}, %eax"; Fx::NONE);
                    g.op("xorl %edx, %edx", Fx::NONE);
                    let op = g.rng.pick(&["xrstor", "xrstor64"]);
                    op!(g, "{op} {}", at(areas[i], 0); Fx::NONE);
                }
            }
            13 => {
                let op = g.rng.pick(&["fxsave", "fxsave64"]);
                op!(g, "{op} {}", at(fx_area, 0); Fx::NONE);
                if g.rng.chance(50) {
                    let op = g.rng.pick(&["fxrstor", "fxrstor64"]);
                    op!(g, "{op} {}", at(fx_area, 0); Fx::NONE);
                }
            }
            _ => alu_one(g),
        }
    }
    // The final state of every component, in the first area.
    g.op("movl $7, %eax", Fx::NONE);
    g.op("xorl %edx, %edx", Fx::NONE);
    for k in 0..8 {
        op!(g, "movq $0, {}", at(areas[0], 512 + 8 * k); Fx::NONE);
    }
    op!(g, "xsave {}", at(areas[0], 0); Fx::NONE);
    // XSTATE_BV is left out of the comparison (after every restore that used it): a component
    // in its initial configuration may be reported in use or not (XINUSE is the CPU's
    // tracking, and rtgrind's exits save and restore the state, after which an AMD CPU
    // reports registers that hold their initial values as not in use, where natively it still
    // says in use). What is saved and what a restore loads are compared.
    for &a in &areas {
        op!(g, "movq $0, {}", at(a, 512); Fx::NONE);
    }
    g.release(RDX);
    g.release(RAX);
    g.op("emms", Fx::NONE);
}
