//! Vector classes: SSE up to SSE4.2 (legacy encoding keeps the upper ymm halves) and AVX/AVX2/FMA
//! (VEX-128 zeroes them; ymm forms, gathers, masked moves, vzeroupper).

use super::gen::*;
use super::int::alu_one;

/// Legacy SSE `op xmm/m128, xmm` (memory operands 16-aligned).
#[rustfmt::skip]
const SSE_BIN: &[&str] = &[
    "paddb", "paddw", "paddd", "paddq", "psubb", "psubw", "psubd", "psubq", "paddusb", "paddsw",
    "psubusw", "pmullw", "pmulhw", "pmulhuw", "pmuludq", "pmaddwd", "pand", "pandn", "por", "pxor",
    "pcmpeqb", "pcmpeqw", "pcmpeqd", "pcmpgtb", "pcmpgtd", "pminub", "pmaxub", "pminsw", "pmaxsw",
    "pavgb", "psadbw", "punpcklbw", "punpckhbw", "punpckldq", "punpckhqdq", "punpcklqdq",
    "packsswb", "packuswb", "packssdw", "pshufb", "pabsd", "phaddd", "pmaddubsw", "pmulhrsw",
    "psignb", "pminsd", "pmaxud", "pmulld", "packusdw", "pcmpeqq", "pcmpgtq", "psllw", "psrld",
    "psraw", "addps", "subps", "mulps", "divps", "minps", "maxps", "sqrtps", "andps", "andnps",
    "orps", "xorps", "addpd", "mulpd", "subpd", "unpcklps", "unpckhpd", "cvtps2pd", "cvtdq2ps",
    "cvtps2dq", "cvttps2dq", "cvtdq2pd", "haddps", "addsubpd", "movdqa", "movaps", "movapd",
    "lddqu", "movdqu", "movups", "movshdup",
];
/// Legacy SSE with a smaller memory operand: (op, bytes).
#[rustfmt::skip]
const SSE_SCALAR: &[(&str, usize)] = &[
    ("addsd", 8), ("subsd", 8), ("mulsd", 8), ("divsd", 8), ("minsd", 8), ("maxsd", 8),
    ("sqrtsd", 8), ("addss", 4), ("mulss", 4), ("subss", 4), ("divss", 4), ("sqrtss", 4),
    ("cvtss2sd", 4), ("cvtsd2ss", 8), ("pmovzxbw", 8), ("pmovsxwd", 8), ("pmovzxbd", 4),
    ("pmovsxbq", 2), ("pmovzxdq", 8), ("movddup", 8), ("movsd", 8), ("movss", 4), ("movq", 8),
];
/// Legacy SSE `op $imm, xmm/m, xmm`: (op, imm bound, memory bytes).
#[rustfmt::skip]
const SSE_IMM: &[(&str, u64, usize)] = &[
    ("pshufd", 256, 16), ("pshuflw", 256, 16), ("pshufhw", 256, 16), ("shufps", 256, 16),
    ("shufpd", 4, 16), ("palignr", 32, 16), ("pblendw", 256, 16), ("blendps", 16, 16),
    ("blendpd", 4, 16), ("roundps", 16, 16), ("roundpd", 16, 16), ("cmpps", 8, 16),
    ("cmppd", 8, 16), ("dpps", 256, 16), ("mpsadbw", 8, 16), ("pclmulqdq", 256, 16),
    ("insertps", 256, 4), ("roundsd", 16, 8), ("roundss", 16, 4), ("cmpsd", 8, 8), ("cmpss", 8, 4),
];
/// Flag-writing compares: (op, memory bytes).
#[rustfmt::skip]
const SSE_FLAGS: &[(&str, usize)] = &[
    ("ptest", 16), ("comisd", 8), ("ucomisd", 8), ("comiss", 4), ("ucomiss", 4),
];

/// A register operand starts with `%`; anything else `Gen::mem` returned is memory.
fn is_mem(operand: &str) -> bool {
    !operand.starts_with('%')
}

fn x(i: u64) -> String {
    format!("%xmm{i}")
}
fn y(i: u64) -> String {
    format!("%ymm{i}")
}

pub fn sse(g: &mut Gen, n: usize) {
    g.vector_checkpoints = true;
    for _ in 0..n {
        let (a, b) = (g.rng.below(16), g.rng.below(16));
        let src = |g: &mut Gen, bytes: usize, align: usize| {
            if g.rng.chance(35) {
                g.mem(bytes, align, false)
            } else {
                x(g.rng.below(16))
            }
        };
        match g.rng.below(20) {
            0..=5 => {
                let op = g.rng.pick(SSE_BIN);
                let s = src(g, 16, if op.ends_with('u') { 1 } else { 16 });
                let s = if op == "lddqu" && !is_mem(&s) { g.mem(16, 1, false) } else { s }; // memory only
                op!(g, "{op} {s}, {}", x(b); Fx::NONE);
            }
            6 | 7 => {
                let (op, bytes) = g.rng.pick(SSE_SCALAR);
                let s = src(g, bytes, 1);
                op!(g, "{op} {s}, {}", x(b); Fx::NONE);
            }
            8 | 9 => {
                let (op, bound, bytes) = g.rng.pick(SSE_IMM);
                let s = src(g, bytes, bytes);
                op!(g, "{op} ${}, {s}, {}", g.rng.below(bound), x(b); Fx::NONE);
            }
            10 => {
                let (op, bytes) = g.rng.pick(SSE_FLAGS);
                let s = src(g, bytes, bytes);
                op!(g, "{op} {s}, {}", x(b); Fx::ARITH);
            }
            11 => {
                // shifts by an immediate, and whole-register byte shifts
                let op = g.rng.pick(&["psllw", "pslld", "psllq", "psrlw", "psrld", "psrlq", "psraw", "psrad", "pslldq", "psrldq"]);
                op!(g, "{op} ${}, {}", g.rng.below(70), x(b); Fx::NONE);
            }
            12 | 13 => {
                // GPR <-> xmm
                let (r32, r64) = (g.reg(Sz::L), g.reg(Sz::Q));
                let text = match g.rng.below(16) {
                    0 => format!("movd {r32}, {}", x(b)),
                    1 => format!("movq {r64}, {}", x(b)),
                    2 => format!("movd {}, {r32}", x(a)),
                    3 => format!("movq {}, {r64}", x(a)),
                    4 => format!("pmovmskb {}, {r32}", x(a)),
                    5 => format!("movmskps {}, {r32}", x(a)),
                    6 => format!("pextrb ${}, {}, {r32}", g.rng.below(16), x(a)),
                    7 => format!("pextrw ${}, {}, {r32}", g.rng.below(8), x(a)),
                    8 => format!("pextrd ${}, {}, {}", g.rng.below(4), x(a), if g.rng.chance(50) { r32 } else { g.mem(4, 1, false) }),
                    9 => format!("pextrq ${}, {}, {}", g.rng.below(2), x(a), if g.rng.chance(50) { r64 } else { g.mem(8, 1, false) }),
                    10 => format!("pinsrb ${}, {r32}, {}", g.rng.below(16), x(b)),
                    11 => format!("pinsrw ${}, {}, {}", g.rng.below(8), if g.rng.chance(50) { r32 } else { g.mem(2, 1, false) }, x(b)),
                    12 => format!("pinsrq ${}, {}, {}", g.rng.below(2), if g.rng.chance(50) { r64 } else { g.mem(8, 1, false) }, x(b)),
                    13 => format!("cvtsi2sd{} {}, {}", g.rng.pick(&["l", "q"]), g.mem(8, 1, false), x(b)),
                    14 => format!("cvtsi2ss {r64}, {}", x(b)),
                    _ => format!("{} {}, {r64}", g.rng.pick(&["cvttsd2si", "cvtsd2si", "cvttss2si"]), x(a)),
                };
                g.op(&text, Fx::NONE);
            }
            14 => {
                // stores
                let text = match g.rng.below(8) {
                    0 => format!("movdqa {}, {}", x(a), g.mem(16, 16, false)),
                    6 => format!("movaps {}, {}", x(a), g.mem(16, 16, false)),
                    7 => format!("movss {}, {}", x(a), g.mem(4, 1, false)),
                    1 => format!("movups {}, {}", x(a), g.mem(16, 1, false)),
                    2 => format!("movsd {}, {}", x(a), g.mem(8, 1, false)),
                    3 => format!("movhps {}, {}", x(a), g.mem(8, 1, false)),
                    4 => format!("movntdq {}, {}", x(a), g.mem(16, 16, false)),
                    _ => format!("movlpd {}, {}", x(a), g.mem(8, 1, false)),
                };
                g.op(&text, Fx::NONE);
            }
            15 => {
                let op = g.rng.pick(&["movhlps", "movlhps", "movsd", "movss", "movq", "unpcklps"]);
                op!(g, "{op} {}, {}", x(a), x(b); Fx::NONE);
            }
            16 => {
                // SSE4.2 string compare: writes %ecx (or %xmm0) and the flags
                let (op, imm) = (g.rng.pick(&["pcmpistri", "pcmpestri", "pcmpistrm", "pcmpestrm"]), g.rng.below(128));
                let s = src(g, 16, 16);
                op!(g, "{op} ${imm}, {s}, {}", x(b); Fx::ARITH);
            }
            17 => {
                // maskmovdqu stores through %rdi
                let o = g.offset(16, 1);
                op!(g, "leaq out+{}(%rip), %rdi", BUF + o; Fx::NONE);
                op!(g, "maskmovdqu {}, {}", x(a), x(b); Fx::NONE);
            }
            _ => alu_one(g),
        }
    }
}

/// VEX three-operand `op src2(ymm/m), src1, dst`; ymm allowed (128-bit form otherwise).
#[rustfmt::skip]
const AVX_BIN: &[&str] = &[
    "vpaddb", "vpaddw", "vpaddd", "vpaddq", "vpsubb", "vpsubd", "vpsubq", "vpaddusb", "vpsubsw",
    "vpmullw", "vpmulld", "vpmulhw", "vpmuludq", "vpmuldq", "vpmaddwd", "vpmaddubsw", "vpand",
    "vpandn", "vpor", "vpxor", "vpcmpeqb", "vpcmpeqw", "vpcmpeqd", "vpcmpeqq", "vpcmpgtb",
    "vpcmpgtd", "vpcmpgtq", "vpminub", "vpminsd", "vpmaxub", "vpmaxsw", "vpavgb", "vpsadbw",
    "vpunpcklbw", "vpunpckhwd", "vpunpckldq", "vpunpckhqdq", "vpacksswb", "vpackuswb", "vpackusdw",
    "vpshufb", "vpsignw", "vphaddd", "vphsubw", "vpsllvd", "vpsrlvd", "vpsravd", "vpsllvq",
    "vpsrlvq", "vaddps", "vaddpd", "vsubps", "vmulps", "vmulpd", "vdivps", "vminps", "vmaxpd",
    "vandps", "vxorps", "vorpd", "vandnps", "vunpcklps", "vunpckhpd", "vhaddps", "vaddsubps",
    "vfmadd231ps", "vfmadd132pd", "vfmadd213ps", "vfmsub231pd", "vfnmadd231ps", "vfmaddsub231ps",
    "vfnmsub132pd", "vpermilps",
];
/// VEX scalar three-operand, xmm only: (op, memory bytes).
#[rustfmt::skip]
const AVX_SCALAR: &[(&str, usize)] = &[
    ("vaddsd", 8), ("vmulss", 4), ("vfmadd231sd", 8), ("vfmadd132ss", 4), ("vsqrtsd", 8),
    ("vminsd", 8), ("vcvtss2sd", 4), ("vcvtsd2ss", 8), ("vfnmsub213sd", 8), ("vdivss", 4),
];
/// VEX two-operand `op src, dst`: (op, ymm destination, source is xmm-sized, memory bytes).
#[rustfmt::skip]
const AVX_UN: &[(&str, bool, bool, usize)] = &[
    ("vpabsb", true, false, 32), ("vpabsd", true, false, 32), ("vsqrtps", true, false, 32),
    ("vcvtdq2ps", true, false, 32), ("vcvtps2dq", true, false, 32), ("vcvttps2dq", true, false, 32),
    ("vmovshdup", true, false, 32), ("vmovsldup", true, false, 32), ("vmovddup", true, false, 32),
    ("vpmovzxbw", true, true, 16), ("vpmovsxbd", true, true, 8), ("vpmovzxwq", true, true, 8),
    ("vcvtps2pd", true, true, 16), ("vcvtdq2pd", true, true, 16), ("vbroadcastss", true, true, 4),
    ("vbroadcastss", false, true, 4), ("vbroadcastsd", true, true, 8),
    ("vpbroadcastb", true, true, 1), ("vpbroadcastw", false, true, 2),
    ("vpbroadcastd", true, true, 4), ("vpbroadcastq", true, true, 8), ("vmovdqu", true, false, 32),
    ("vmovups", false, false, 16), ("vcvtph2ps", true, true, 16), ("vmovdqa", false, false, 16),
];
/// VEX with an immediate: (op, imm bound, ymm allowed, memory source allowed).
#[rustfmt::skip]
const AVX_IMM: &[(&str, u64, bool, bool)] = &[
    ("vpermq", 256, true, true), ("vpermpd", 256, true, true), ("vpshufd", 256, true, true),
    ("vpshuflw", 256, true, true), ("vpshufhw", 256, true, true), ("vpslld", 40, true, false),
    ("vpsrlq", 70, true, false), ("vpsraw", 20, true, false), ("vpslldq", 20, true, false),
    ("vpsrldq", 20, true, false), ("vroundps", 16, true, true), ("vpermilpd", 16, true, true),
];
/// VEX three-operand with an immediate: (op, imm bound, ymm allowed).
const AVX_IMM3: &[(&str, u64, bool)] = &[
    ("vpalignr", 32, true),
    ("vpblendd", 256, true),
    ("vpblendw", 256, true),
    ("vblendps", 256, true),
    ("vperm2i128", 256, true),
    ("vperm2f128", 256, true),
    ("vshufps", 256, true),
    ("vdpps", 256, true),
    ("vmpsadbw", 8, true),
    ("vcmpps", 32, true),
    ("vcmppd", 32, true),
    ("vpclmulqdq", 256, false),
];

pub fn avx(g: &mut Gen, n: usize) {
    g.vector_checkpoints = true;
    for _ in 0..n {
        let (a, b, c) = (g.rng.below(16), g.rng.below(16), g.rng.below(16));
        let wide = g.rng.chance(65);
        let v = |i: u64| if wide { y(i) } else { x(i) };
        let vbytes = if wide { 32 } else { 16 };
        let src = |g: &mut Gen, bytes: usize, reg: String| {
            if g.rng.chance(35) {
                g.mem(bytes, 1, false)
            } else {
                reg
            }
        };
        let src_aligned = |g: &mut Gen, bytes: usize, reg: String| {
            if g.rng.chance(35) {
                g.mem(bytes, bytes, false)
            } else {
                reg
            }
        };
        match g.rng.below(22) {
            0..=5 => {
                let op = g.rng.pick(AVX_BIN);
                let s = src(g, vbytes, v(a));
                op!(g, "{op} {s}, {}, {}", v(b), v(c); Fx::NONE);
            }
            6 => {
                let (op, bytes) = g.rng.pick(AVX_SCALAR);
                let s = src(g, bytes, x(a));
                op!(g, "{op} {s}, {}, {}", x(b), x(c); Fx::NONE);
            }
            7 | 8 => {
                let (op, ymm, narrow, bytes) = g.rng.pick(AVX_UN);
                let dst = if ymm { y(c) } else { x(c) };
                let reg = if narrow || !ymm { x(a) } else { y(a) };
                let s = if op == "vmovdqa" { src_aligned(g, bytes, reg) } else { src(g, bytes, reg) };
                op!(g, "{op} {s}, {dst}"; Fx::NONE);
            }
            9 | 10 => {
                let (op, bound, ymm, mem) = g.rng.pick(AVX_IMM);
                // vpermq/vpermpd exist only for ymm
                let ymm = (ymm && wide) || op.starts_with("vperm") && !op.starts_with("vpermil");
                let v = |i| if ymm { y(i) } else { x(i) };
                let s = if mem { src(g, if ymm { 32 } else { 16 }, v(a)) } else { v(a) };
                op!(g, "{op} ${}, {s}, {}", g.rng.below(bound), v(c); Fx::NONE);
            }
            11 | 12 => {
                let (op, bound, ymm) = g.rng.pick(AVX_IMM3);
                let ymm = ymm && (wide || op.starts_with("vperm2"));
                let v = |i| if ymm { y(i) } else { x(i) };
                let s = src(g, if ymm { 32 } else { 16 }, v(a));
                op!(g, "{op} ${}, {s}, {}, {}", g.rng.below(bound), v(b), v(c); Fx::NONE);
            }
            13 => {
                // lane moves and 4-operand blends
                let text = match g.rng.below(5) {
                    0 => format!("vinserti128 ${}, {}, {}, {}", g.rng.below(2), src(g, 16, x(a)), y(b), y(c)),
                    1 => format!("vextracti128 ${}, {}, {}", g.rng.below(2), y(a), if g.rng.chance(50) { x(c) } else { g.mem(16, 1, false) }),
                    2 => format!("vpblendvb {}, {}, {}, {}", v(g.rng.below(16)), src(g, vbytes, v(a)), v(b), v(c)),
                    3 => format!("vblendvps {}, {}, {}, {}", v(g.rng.below(16)), src(g, vbytes, v(a)), v(b), v(c)),
                    _ => format!("vpermd {}, {}, {}", src(g, 32, y(a)), y(b), y(c)),
                };
                g.op(&text, Fx::NONE);
            }
            14 => {
                // to GPRs, and the flag-writing tests
                let r32 = g.reg(Sz::L);
                let r64 = g.reg(Sz::Q);
                match g.rng.below(7) {
                    0 => op!(g, "vpmovmskb {}, {r32}", v(a); Fx::NONE),
                    1 => op!(g, "vmovmskps {}, {r32}", v(a); Fx::NONE),
                    2 => op!(g, "vpextrd ${}, {}, {r32}", g.rng.below(4), x(a); Fx::NONE),
                    3 => op!(g, "vpinsrq ${}, {r64}, {}, {}", g.rng.below(2), x(a), x(b); Fx::NONE),
                    4 => op!(g, "vcvtsi2sd {r64}, {}, {}", x(a), x(b); Fx::NONE),
                    5 => op!(g, "vptest {}, {}", src(g, vbytes, v(a)), v(b); Fx::ARITH),
                    _ => op!(g, "vtestps {}, {}", src(g, vbytes, v(a)), v(b); Fx::ARITH),
                }
            }
            15 => {
                // stores
                let text = match g.rng.below(4) {
                    0 => format!("vmovdqu {}, {}", v(a), g.mem(vbytes, 1, false)),
                    1 => format!("vmovdqa {}, {}", v(a), g.mem(vbytes, vbytes, false)), // aligned
                    2 => format!("vmovq {}, {}", x(a), g.mem(8, 1, false)),
                    _ => format!("vextractf128 $1, {}, {}", y(a), g.mem(16, 1, false)),
                };
                g.op(&text, Fx::NONE);
            }
            16 => {
                // masked loads and stores: masked-out elements are not accessed
                let op = g.rng.pick(&["vmaskmovps", "vpmaskmovd", "vpmaskmovq", "vmaskmovpd"]);
                let m = g.mem(vbytes, 1, false);
                let text = if g.rng.chance(50) { format!("{op} {m}, {}, {}", v(a), v(c)) } else { format!("{op} {}, {}, {m}", v(c), v(a)) };
                g.op(&text, Fx::NONE);
            }
            17 => gather(g, wide),
            18 if g.rng.chance(30) => {
                let t = if g.rng.chance(80) { "vzeroupper" } else { "vzeroall" };
                g.op(t, Fx::NONE)
            }
            19 => {
                // VEX-128 zeroes the upper half, legacy SSE keeps it
                let op = g.rng.pick(&["vpaddd", "vpxor", "vaddps", "vmovaps"]);
                let text = if op == "vmovaps" { format!("{op} {}, {}", x(a), x(c)) } else { format!("{op} {}, {}, {}", x(a), x(b), x(c)) };
                g.op(&text, Fx::NONE);
                op!(g, "paddd {}, {}", x(a), x(b); Fx::NONE);
            }
            20 => {
                let op = g.rng.pick(&["vcvtps2ph", "vcvtpd2psy", "vcvttpd2dqy"]);
                let s = if op == "vcvtps2ph" { format!("${}, ", g.rng.below(8)) } else { String::new() };
                let d = if g.rng.chance(50) || op != "vcvtps2ph" { x(c) } else { g.mem(16, 1, false) };
                op!(g, "{op} {s}{}, {d}", y(a); Fx::NONE);
            }
            _ => alu_one(g),
        }
    }
}

/// vpgatherdd/vgatherdps/vpgatherqq with indices in range and a mask from the data.
fn gather(g: &mut Gen, wide: bool) {
    let (op, scale, qidx) = g.rng.pick(&[("vpgatherdd", 4, false), ("vgatherdps", 4, false), ("vpgatherqq", 8, true), ("vgatherdpd", 8, false)]);
    // three distinct registers: index, mask, destination
    let mut regs = [0u64; 3];
    for i in 0..3 {
        regs[i] = loop {
            let r = g.rng.below(16);
            if !regs[..i].contains(&r) {
                break r;
            }
        };
    }
    let [idx, mask, dst] = regs;
    // indices 0..127 (dwords or qwords), from the initial constants, times the scale
    let (v, vx) = (if wide { y } else { x }, x);
    let index = if op == "vgatherdpd" { vx(idx) } else { v(idx) };
    op!(g, "vmovdqu gidx{}(%rip), {}", if qidx { "q" } else { "d" }, v(idx); Fx::NONE);
    if g.rng.chance(50) {
        op!(g, "vpcmpeqd {}, {}, {}", v(mask), v(mask), v(mask); Fx::NONE);
    }
    let disp = g.rng.range(-2048, 2048 - 128 * 8 - 8);
    op!(g, "{op} {}, {disp}(%rbp,{index},{scale}), {}", v(mask), v(dst); Fx::NONE);
    if !g.data.contains("gidxd:") {
        g.data.push_str("\t.balign 32\ngidxd:\n");
        for _ in 0..8 {
            g.data.push_str(&format!("\t.long {}\n", g.rng.below(128)));
        }
        g.data.push_str("gidxq:\n");
        for _ in 0..4 {
            g.data.push_str(&format!("\t.quad {}\n", g.rng.below(128)));
        }
    }
}
