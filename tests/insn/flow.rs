//! Classes about addresses and control: string instructions with rep and both directions,
//! RIP-relative operands, the stack (push/pop/pushf/popf/enter/leave), and control flow
//! (direct and indirect calls and jumps, jump tables, loops, returns used as jumps).

use super::gen::*;
use super::int::{alu_one, CONDS};

pub fn string_ops(g: &mut Gen, n: usize) {
    let mut emitted = 0;
    while emitted < n {
        emitted += string_one(g);
        if g.rng.chance(30) {
            alu_one(g);
            emitted += 1;
        }
    }
}

fn string_one(g: &mut Gen) -> usize {
    let op = g.rng.pick(&["movs", "stos", "lods", "cmps", "scas"]);
    let w = g.rng.pick(&Sz::ALL);
    let e = w.bytes();
    let down = g.rng.chance(40);
    let prefix = match op {
        "movs" | "stos" => g.rng.pick(&["", "rep "]),
        "lods" => g.rng.pick(&["", "", "rep "]),
        _ => g.rng.pick(&["", "repe ", "repne ", "repz ", "repnz "]),
    };
    let count = if prefix.is_empty() {
        1
    } else if g.rng.chance(15) {
        g.rng.below((BUF_LEN / 2 / e) as u64) as usize // long: the fast-string microcode path
    } else {
        g.rng.below(40) as usize
    };
    let len = count.max(1) * e;
    // regions [start, start + len) for the source and the destination
    let mut start = || g.rng.below((BUF_LEN - len + 1) as u64) as usize;
    let (src, dst) = (start(), start());
    let mut ops = 0;
    if op == "cmps" && g.rng.chance(60) {
        // make the two regions mostly equal, so repe runs a while
        g.op("cld", Fx::writes(DF, 0));
        op!(g, "leaq out+{}(%rip), %rsi", BUF + src; Fx::NONE);
        op!(g, "leaq out+{}(%rip), %rdi", BUF + dst; Fx::NONE);
        op!(g, "movl ${len}, %ecx"; Fx::NONE);
        g.op("rep movsb", Fx::NONE);
        let k = g.rng.below(len as u64 + 8) as usize;
        if dst + k < BUF_LEN {
            op!(g, "notb out+{}(%rip)", BUF + dst + k; Fx::NONE);
        }
        ops += 6;
    }
    if matches!(op, "scas" | "stos") && g.rng.chance(50) {
        // an accumulator value that occurs in the scanned region
        let at = dst + g.rng.below(len as u64) as usize / e * e;
        op!(g, "mov out+{}(%rip), {}", BUF + at, reg(RAX, w); Fx::NONE);
        ops += 1;
    }
    // with DF=1 the pointers start at the last element
    let first = |start: usize| if down { start + len - e } else { start };
    g.op(if down { "std" } else { "cld" }, Fx::writes(DF, 0));
    op!(g, "leaq out+{}(%rip), %rsi", BUF + first(src); Fx::NONE);
    op!(g, "leaq out+{}(%rip), %rdi", BUF + first(dst); Fx::NONE);
    if !prefix.is_empty() {
        let ecx = if g.rng.chance(50) { "movl" } else { "movq" };
        op!(g, "{ecx} ${count}, %{}", if ecx == "movl" { "ecx" } else { "rcx" }; Fx::NONE);
    }
    let fx = match op {
        "cmps" | "scas" if !(prefix.is_empty() || count > 0) => Fx::NONE,
        "cmps" | "scas" => Fx::ARITH,
        _ => Fx::NONE,
    };
    op!(g, "{prefix}{op}{}", w.suffix(); fx);
    ops + 4
}

pub fn rip_relative(g: &mut Gen, n: usize) {
    for _ in 0..n {
        let w = g.rng.pick(&Sz::ALL);
        let s = w.suffix();
        let m = g.mem_rip(w.bytes(), 1);
        match g.rng.below(16) {
            0 => {
                let r = g.reg(w);
                op!(g, "mov{s} {m}, {r}"; Fx::NONE);
            }
            1 => {
                let r = g.reg(w);
                op!(g, "mov{s} {r}, {m}"; Fx::NONE);
            }
            2 => {
                // the immediate comes after the displacement in the encoding
                let imm = g.rng.imm(w);
                op!(g, "mov{s} {imm}, {m}"; Fx::NONE);
            }
            3 | 4 => {
                let (op, fx) =
                    g.rng.pick(&[("add", Fx::ARITH), ("sub", Fx::ARITH), ("and", Fx::LOGIC), ("cmp", Fx::ARITH), ("adc", Fx::CARRY), ("test", Fx::LOGIC)]);
                let imm = g.rng.imm(w);
                op!(g, "{op}{s} {imm}, {m}"; fx);
            }
            5 => {
                let r = g.reg(w);
                let (op, fx) = g.rng.pick(&[("add", Fx::ARITH), ("xor", Fx::LOGIC), ("sbb", Fx::CARRY)]);
                let text = if g.rng.chance(50) { format!("{op}{s} {r}, {m}") } else { format!("{op}{s} {m}, {r}") };
                g.op(&text, fx);
            }
            6 => {
                let target = g.rng.pick(&["out", "_start", "text_data", "init_ymm"]);
                let r = g.reg(Sz::Q);
                op!(g, "leaq {target}+{}(%rip), {r}", g.rng.below(4096); Fx::NONE);
            }
            7 => {
                // a negative displacement: constants in .text before the code
                let r = g.reg(Sz::Q);
                op!(g, "movq text_data+{}(%rip), {r}", 8 * g.rng.below(8); Fx::NONE);
            }
            8 => {
                let (op, fx) = g.rng.pick(&[
                    ("inc", Fx::INC),
                    ("neg", Fx::ARITH),
                    ("not", Fx::NONE),
                    ("shl", Fx::writes(ARITH, AF | OF | CF)),
                    ("rol", Fx::writes(CF | OF, OF)),
                ]);
                let text = if op.ends_with('l') { format!("{op}{s} ${}, {m}", g.rng.range(2, 7)) } else { format!("{op}{s} {m}") };
                g.op(&text, fx);
            }
            9 => {
                let w = g.rng.pick(&Sz::WIDE);
                let m = g.mem_rip(w.bytes(), 1);
                let r = g.reg(w);
                op!(g, "imul{} {}, {m}, {r}", w.suffix(), g.rng.imm(w); Fx::MUL);
            }
            10 => {
                let w = g.rng.pick(&Sz::WIDE);
                let m = g.mem_rip(w.bytes(), 1);
                op!(g, "bt{} ${}, {m}", w.suffix(), g.rng.below(64); Fx::BT);
            }
            11 => {
                let r = g.reg(Sz::L);
                let op = g.rng.pick(&["movzbl", "movsbl", "movzwl", "movswl"]);
                op!(g, "{op} {m}, {r}"; Fx::NONE);
            }
            12 => {
                let m = g.mem_rip(16, 16);
                let x = g.rng.below(16);
                let text = match g.rng.below(5) {
                    0 => format!("movdqa {m}, %xmm{x}"),
                    1 => format!("movdqu %xmm{x}, {m}"),
                    2 => format!("pshufd ${}, {m}, %xmm{x}", g.rng.below(256)),
                    3 => format!("paddd {m}, %xmm{x}"),
                    _ => format!("pinsrd ${}, {}, %xmm{x}", g.rng.below(4), g.mem_rip(4, 1)),
                };
                g.op(&text, Fx::NONE);
            }
            13 => {
                let m = g.mem_rip(32, 1);
                let (a, b) = (g.rng.below(16), g.rng.below(16));
                let text = match g.rng.below(3) {
                    0 => format!("vpaddd {m}, %ymm{a}, %ymm{b}"),
                    1 => format!("vpermq ${}, {m}, %ymm{b}", g.rng.below(256)),
                    _ => format!("vmovdqu %ymm{a}, {m}"),
                };
                g.op(&text, Fx::NONE);
            }
            14 => {
                let r = g.free_reg();
                let text = match g.rng.below(3) {
                    0 => format!("pushq {}", g.mem_rip(8, 1)),
                    1 => format!("cvtsi2sdq {}, %xmm{}", g.mem_rip(8, 1), g.rng.below(16)),
                    // 32-bit address size: (%eip) instead of (%rip)
                    _ => format!("movl out+{}(%eip), {}", BUF + g.offset(4, 1), reg(r, Sz::L)),
                };
                g.op(&text, Fx::NONE);
                if text.starts_with("push") {
                    op!(g, "popq {}", g.mem_rip(8, 1); Fx::NONE);
                }
            }
            _ => {
                // xchg with memory is locked: keep it aligned (no split lock)
                let r = g.regs(w, 1);
                let m = g.mem_rip(w.bytes(), w.bytes());
                let text = if g.rng.chance(50) { format!("xchg{s} {}, {m}", r.names[0]) } else { format!("cmpxchg{s} {}, {m}", r.names[0]) };
                g.op(&text, if text.starts_with("cmpxchg") { Fx::ARITH } else { Fx::NONE });
            }
        }
    }
}

pub fn push_pop(g: &mut Gen, n: usize) {
    let mut depth = 0usize; // bytes pushed
    for _ in 0..n {
        let push = depth < 8 || (depth < 1024 && g.rng.chance(55));
        if push {
            match g.rng.below(10) {
                0 | 1 => {
                    let r = g.rng.below(16) as u8; // any register, %rsp and %rbp included
                    op!(g, "pushq {}", reg(r, Sz::Q); Fx::NONE);
                }
                2 => op!(g, "pushq ${}", g.rng.range(-128, 127); Fx::NONE),
                3 => op!(g, "pushq ${}", g.rng.range(i32::MIN as i64, i32::MAX as i64); Fx::NONE),
                4 => {
                    let m = g.mem(8, 1, false);
                    op!(g, "pushq {m}"; Fx::NONE);
                }
                5 if depth >= 16 => {
                    op!(g, "pushq {}(%rsp)", 8 * g.rng.below(depth as u64 / 8); Fx::NONE)
                }
                6 => g.op("pushfq", Fx::reads(ARITH)),
                7 => {
                    // 16-bit push, popped right away: the stack stays 8-aligned between
                    let (a, b) = (g.reg(Sz::W), g.reg(Sz::W));
                    op!(g, "pushw {a}"; Fx::NONE);
                    op!(g, "popw {b}"; Fx::NONE);
                    continue;
                }
                _ => {
                    let r = g.reg(Sz::Q);
                    op!(g, "movq {r}, -8(%rsp)"; Fx::NONE);
                    g.op("subq $8, %rsp", Fx::ARITH);
                }
            }
            depth += 8;
        } else {
            match g.rng.below(10) {
                0..=3 => {
                    let r = g.reg(Sz::Q);
                    op!(g, "popq {r}"; Fx::NONE);
                }
                4 => {
                    let m = g.mem(8, 1, false);
                    op!(g, "popq {m}"; Fx::NONE);
                }
                // the address of a pop to memory is computed after %rsp moved
                5 if depth >= 16 => {
                    op!(g, "popq {}(%rsp)", 8 * g.rng.below(depth as u64 / 8 - 1); Fx::NONE)
                }
                6 => {
                    // popfq of a known-safe value (no TF/AC)
                    g.op("popq %rax", Fx::NONE);
                    op!(g, "pushq ${:#x}", 0x202 | (g.rng.next() & OBSERVED); Fx::NONE);
                    g.op("popfq", Fx::writes(OBSERVED, 0));
                    g.op("cld", Fx::writes(DF, 0));
                }
                7 => {
                    g.op("pushfq", Fx::reads(ARITH));
                    op!(g, "xorq ${:#x}, (%rsp)", g.rng.next() & ARITH; Fx::LOGIC);
                    g.op("popfq", Fx::writes(OBSERVED, 0));
                    g.op("popq %rdx", Fx::NONE);
                }
                8 => {
                    let r = g.reg(Sz::Q);
                    op!(g, "movq {}(%rsp), {r}", 8 * g.rng.below(depth as u64 / 8); Fx::NONE);
                    g.op("addq $8, %rsp", Fx::ARITH);
                }
                _ => {
                    op!(g, "leaq {}(%rsp), %rsp", 8 * (depth / 8).min(3); Fx::NONE);
                    depth -= 8 * (depth / 8).min(3) - 8;
                }
            }
            depth -= 8;
        }
        match g.rng.below(12) {
            0 => {
                g.op("pushq %rsp", Fx::NONE);
                g.op("popq %rsp", Fx::NONE);
            }
            1 => {
                // enter/leave borrow %rbp: nothing in between may use it as the buffer base
                op!(g, "enter ${}, $0", 8 * g.rng.below(8); Fx::NONE);
                let r = g.reg(Sz::Q);
                op!(g, "movq %rbp, {r}"; Fx::NONE);
                g.op("leave", Fx::NONE);
            }
            2 | 3 => alu_one(g),
            _ => {}
        }
    }
    while depth > 0 {
        let r = g.reg(Sz::Q);
        op!(g, "popq {r}"; Fx::NONE);
        depth -= 8;
    }
}

/// A few ALU instructions, the body of a path, loop or function.
fn body(g: &mut Gen, max: u64) {
    for _ in 0..g.rng.range(1, max as i64) {
        alu_one(g);
    }
}

/// A function of 1..=max ALU instructions; returns its name. The caller sets the flags it
/// leaves undefined.
fn function(g: &mut Gen, max: u64) -> (String, u64) {
    let name = g.label("f").replace(".L", "func");
    let undef = g.function(&name, |g| {
        body(g, max);
        g.op("ret", Fx::NONE);
    });
    (name, undef)
}

pub fn control_flow(g: &mut Gen, n: usize) {
    let mut tables = 0;
    for i in 0..n {
        match g.rng.below(18) {
            0..=2 => {
                // a forward conditional branch, taken or not depending on the data
                alu_one(g);
                let (cc, flags) = g.rng.pick(&CONDS);
                let target = g.label("fwd");
                op!(g, "j{cc} {target}"; Fx::reads(flags));
                let before = g.undef();
                if g.rng.chance(45) {
                    let pad = g.rng.range(130, 400);
                    g.raw(&format!("\t.skip {pad}, 0x90")); // a rel32 jcc
                }
                body(g, 3);
                g.raw(&format!("{target}:"));
                g.set_undef(before | g.undef());
            }
            3 => {
                // a backward loop on a counter register
                let r = g.free_reg();
                g.reserve(r);
                op!(g, "movl ${}, {}", g.rng.range(1, 9), reg(r, Sz::L); Fx::NONE);
                let top = g.label("loop");
                g.raw(&format!("{top}:"));
                g.set_undef(ARITH);
                body(g, 3);
                op!(g, "decl {}", reg(r, Sz::L); Fx::INC);
                op!(g, "jnz {top}"; Fx::reads(ZF));
                g.release(r);
            }
            4 if g.is_free(RCX) => {
                // loop / loope / loopne, and jrcxz / jecxz
                g.reserve(RCX);
                // these only have rel8 forms: the logging makes bodies too long, so they
                // branch to a near `jmp`
                let (near, done) = (g.label("near"), g.label("done"));
                if g.rng.chance(60) {
                    let op = g.rng.pick(&["loop", "loope", "loopne"]);
                    op!(g, "movl ${}, %ecx", g.rng.range(1, 9); Fx::NONE);
                    let top = g.label("loop");
                    g.raw(&format!("{top}:"));
                    g.set_undef(ARITH);
                    body(g, 3);
                    op!(g, "{op} {near}"; Fx::reads(if op == "loop" { 0 } else { ZF }));
                    op!(g, "jmp {done}"; Fx::NONE);
                    g.raw(&format!("{near}:"));
                    op!(g, "jmp {top}"; Fx::NONE);
                } else {
                    let op = g.rng.pick(&["jrcxz", "jecxz"]);
                    op!(g, "movabsq ${}, %rcx", g.rng.pick(&[0u64, 0, 1, 1 << 32]); Fx::NONE);
                    let taken = g.label("jcxz");
                    op!(g, "{op} {near}"; Fx::NONE);
                    op!(g, "jmp {taken}"; Fx::NONE);
                    g.raw(&format!("{near}:"));
                    op!(g, "jmp {done}"; Fx::NONE);
                    g.raw(&format!("{taken}:"));
                    let before = g.undef();
                    body(g, 2);
                    g.set_undef(before | g.undef());
                }
                g.raw(&format!("{done}:"));
                g.release(RCX);
            }
            5 | 6 => {
                let (f, undef) = function(g, 4);
                op!(g, "call {f}"; Fx::NONE);
                g.set_undef(undef);
            }
            7 => {
                // indirect call through a register
                let (f, undef) = function(g, 4);
                let r = reg(g.free_reg(), Sz::Q);
                let load = if g.rng.chance(50) { format!("leaq {f}(%rip), {r}") } else { format!("movq ${f}, {r}") };
                g.op(&load, Fx::NONE);
                op!(g, "call *{r}"; Fx::NONE);
                g.set_undef(undef);
            }
            8 | 9 => {
                // indirect call through memory: a table of functions
                let fs: Vec<(String, u64)> = (0..4).map(|_| function(g, 3)).collect();
                tables += 1;
                let t = format!("ftab{tables}");
                g.data.push_str(&format!("\t.balign 8\n{t}:\n"));
                for (f, _) in &fs {
                    g.data.push_str(&format!("\t.quad {f}\n"));
                }
                let k = g.rng.below(4);
                let (ri, rb) = (g.free_reg(), g.free_reg());
                match g.rng.below(3) {
                    0 => op!(g, "call *{t}+{}(%rip)", 8 * k; Fx::NONE),
                    1 => {
                        op!(g, "movl ${k}, {}", reg(ri, Sz::L); Fx::NONE);
                        op!(g, "call *{t}(,{},8)", reg(ri, Sz::Q); Fx::NONE);
                    }
                    _ => {
                        op!(g, "leaq {t}(%rip), {}", reg(rb, Sz::Q); Fx::NONE);
                        op!(g, "call *{}({})", 8 * k, reg(rb, Sz::Q); Fx::NONE);
                    }
                }
                g.set_undef(fs.iter().fold(0, |u, f| u | f.1));
            }
            10 | 11 => jump_table(g, &mut tables),
            12 => {
                // call to the next instruction, popped: the pushed address must be the guest's
                let next = g.label("next");
                op!(g, "call {next}"; Fx::NONE);
                g.raw(&format!("{next}:"));
                op!(g, "popq {}", g.reg(Sz::Q); Fx::NONE);
            }
            13 => {
                // ret as an indirect jump, and dead code after it
                let target = g.label("ret");
                if g.rng.chance(50) {
                    op!(g, "pushq ${target}"; Fx::NONE);
                } else {
                    let r = g.reg(Sz::Q);
                    op!(g, "leaq {target}(%rip), {r}"; Fx::NONE);
                    op!(g, "pushq {r}"; Fx::NONE);
                }
                g.op("ret", Fx::NONE);
                g.raw("\tud2");
                g.raw(&format!("{target}:"));
            }
            14 => {
                // jmp over dead code, direct or through a register
                let target = g.label("jmp");
                if g.rng.chance(50) {
                    op!(g, "jmp {target}"; Fx::NONE);
                } else {
                    let r = g.reg(Sz::Q);
                    op!(g, "leaq {target}(%rip), {r}"; Fx::NONE);
                    op!(g, "jmp *{r}"; Fx::NONE);
                }
                g.raw("\tud2");
                g.raw(&format!("{target}:"));
            }
            15 => {
                // recursion: depth counted down in a reserved register
                let r = g.free_reg();
                g.reserve(r);
                let name = g.label("rec").replace(".L", "func");
                let depth = g.rng.range(1, 12);
                let undef = g.function(&name, |g| {
                    body(g, 2);
                    let out = g.label("out");
                    op!(g, "decq {}", reg(r, Sz::Q); Fx::INC);
                    op!(g, "jz {out}"; Fx::reads(ZF));
                    op!(g, "call {name}"; Fx::NONE);
                    g.set_undef(ARITH);
                    body(g, 2);
                    g.raw(&format!("{out}:"));
                    g.set_undef(ARITH);
                    g.op("ret", Fx::NONE);
                });
                op!(g, "movq ${depth}, {}", reg(r, Sz::Q); Fx::NONE);
                op!(g, "call {name}"; Fx::NONE);
                g.set_undef(undef);
                g.release(r);
            }
            16 => {
                // ret $imm pops arguments
                let name = g.label("retn").replace(".L", "func");
                let undef = g.function(&name, |g| {
                    body(g, 2);
                    g.op("ret $16", Fx::NONE);
                });
                op!(g, "pushq ${}", g.rng.range(-100, 100); Fx::NONE);
                op!(g, "pushq {}", g.reg(Sz::Q); Fx::NONE);
                op!(g, "call {name}"; Fx::NONE);
                g.set_undef(undef);
            }
            _ => alu_one(g),
        }
        if i % 16 == 15 {
            // the next block starts with a flags-defined state again
            g.define_flags();
        }
    }
}

/// `jmp *table(,%idx,8)` with the index computed from data.
fn jump_table(g: &mut Gen, tables: &mut usize) {
    *tables += 1;
    let t = format!("jtab{}", *tables);
    let join = g.label("join");
    let targets: Vec<String> = (0..4).map(|_| g.label("case")).collect();
    g.data.push_str(&format!("\t.balign 8\n{t}:\n"));
    for l in &targets {
        g.data.push_str(&format!("\t.quad {l}\n"));
    }
    let ri = g.free_reg();
    g.reserve(ri);
    let rb = g.free_reg();
    g.release(ri);
    let src = g.reg(Sz::L);
    op!(g, "movl {src}, {}", reg(ri, Sz::L); Fx::NONE);
    op!(g, "andl $3, {}", reg(ri, Sz::L); Fx::LOGIC);
    match g.rng.below(3) {
        0 => op!(g, "jmp *{t}(,{},8)", reg(ri, Sz::Q); Fx::NONE),
        1 => {
            op!(g, "leaq {t}(%rip), {}", reg(rb, Sz::Q); Fx::NONE);
            op!(g, "jmp *({},{},8)", reg(rb, Sz::Q), reg(ri, Sz::Q); Fx::NONE);
        }
        _ => {
            op!(g, "movq {t}(,{},8), {}", reg(ri, Sz::Q), reg(rb, Sz::Q); Fx::NONE);
            op!(g, "jmp *{}", reg(rb, Sz::Q); Fx::NONE);
        }
    }
    let before = g.undef();
    let mut after = 0;
    for l in &targets {
        g.raw(&format!("{l}:"));
        g.set_undef(before);
        body(g, 3);
        after |= g.undef();
        op!(g, "jmp {join}"; Fx::NONE);
    }
    g.raw(&format!("{join}:"));
    g.set_undef(after);
}
