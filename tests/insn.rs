//! Instruction-level differential tests: generated x86-64 instruction sequences run natively and
//! under `rtgrind -q` (with `--tool=none`, `--tool=taint` and taint with origins, with and
//! without its fast path); the final registers, flags, MXCSR, ymm registers, data buffer and stack,
//! and a log (the flags after every flag-writing instruction, the registers every 8
//! instructions) must be identical. Flags an instruction leaves undefined are masked, and so is
//! the stack below the red zone; everything else is compared bit for bit.
//!
//! Each class (ALU, shifts, mul/div, strings, cmov/setcc, RIP-relative, stack, control flow, SSE,
//! AVX, bit manipulation, x87, MMX, AES/SHA/CRC32/RDRAND, XSAVE family, misc) is one test that builds a few static `-nostdlib` programs from a
//! fixed seed (`insn/gen.rs` has the program layout), assembles them with gcc into
//! `$CARGO_TARGET_TMPDIR/insn/CLASS-N.S`, and compares the two dumps. A mismatch names the first
//! diverging instruction and every differing register, flag and byte.
//!
//! `RTGRIND_BIN=path` runs another binary in place of rtgrind (called as `path -q prog`); a
//! script that runs valgrind or qemu-x86_64 checks the tests themselves.

mod flow;
mod gen;
mod int;
mod legacy;
mod vector;

use gen::*;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Each program runs in milliseconds natively; a run past this is killed and fails.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Mismatch lines shown per program.
const MAX_LINES: usize = 40;

#[test]
fn alu() {
    run_class("alu", 3, 120, int::alu);
}

#[test]
fn shifts_rotates_bit_tests() {
    run_class("shifts", 3, 110, int::shifts);
}

#[test]
fn mul_div() {
    run_class("muldiv", 3, 90, int::muldiv);
}

#[test]
fn string_ops() {
    run_class("string", 3, 80, flow::string_ops);
}

#[test]
fn cmov_setcc() {
    run_class("cmov", 2, 120, int::cmov_setcc);
}

#[test]
fn rip_relative() {
    run_class("riprel", 2, 120, flow::rip_relative);
}

#[test]
fn push_pop() {
    run_class("pushpop", 2, 120, flow::push_pop);
}

#[test]
fn control_flow() {
    run_class("control", 3, 70, flow::control_flow);
}

#[test]
fn sse() {
    if require(&["sse4.2", "pclmulqdq"]) {
        run_class("sse", 3, 110, vector::sse);
    }
}

#[test]
fn avx_avx2_fma() {
    if require(&["avx2", "fma", "f16c", "pclmulqdq"]) {
        run_class("avx", 3, 110, vector::avx);
    }
}

#[test]
fn bit_ops() {
    if require(&["bmi1", "bmi2", "lzcnt", "popcnt", "adx", "movbe", "sse4.2"]) {
        run_class("bitops", 3, 100, int::bitops);
    }
}

#[test]
fn x87() {
    run_class("x87", 3, 120, legacy::x87);
}

#[test]
fn mmx() {
    if require(&["ssse3"]) {
        run_class("mmx", 3, 110, legacy::mmx);
    }
}

#[test]
fn aes_sha_crc32_rdrand() {
    if require(&["aes", "vaes", "sha", "sse4.2", "rdrand", "rdseed"]) {
        run_class("crypto", 3, 110, legacy::crypto);
    }
}

#[test]
fn xsave_family() {
    if require(&["xsave", "xsaveopt", "xsavec", "avx2", "sse4.1"]) {
        run_class("xsave", 3, 110, legacy::xsave);
    }
}

#[test]
fn misc() {
    run_class("misc", 3, 120, int::misc);
}

/// Whether this CPU has the features a class needs (else the test is skipped, with a note).
fn require(features: &[&str]) -> bool {
    let missing: Vec<&&str> = features.iter().filter(|f| !has_feature(f)).collect();
    if !missing.is_empty() {
        eprintln!("skipped: this CPU lacks {missing:?}");
    }
    missing.is_empty()
}

fn has_feature(f: &str) -> bool {
    match f {
        "sse4.2" => std::is_x86_feature_detected!("sse4.2"),
        "pclmulqdq" => std::is_x86_feature_detected!("pclmulqdq"),
        "avx2" => std::is_x86_feature_detected!("avx2"),
        "fma" => std::is_x86_feature_detected!("fma"),
        "f16c" => std::is_x86_feature_detected!("f16c"),
        "bmi1" => std::is_x86_feature_detected!("bmi1"),
        "bmi2" => std::is_x86_feature_detected!("bmi2"),
        "lzcnt" => std::is_x86_feature_detected!("lzcnt"),
        "popcnt" => std::is_x86_feature_detected!("popcnt"),
        "adx" => std::is_x86_feature_detected!("adx"),
        "movbe" => std::is_x86_feature_detected!("movbe"),
        "ssse3" => std::is_x86_feature_detected!("ssse3"),
        "aes" => std::is_x86_feature_detected!("aes"),
        "vaes" => std::is_x86_feature_detected!("vaes"),
        "sha" => std::is_x86_feature_detected!("sha"),
        "rdrand" => std::is_x86_feature_detected!("rdrand"),
        "rdseed" => std::is_x86_feature_detected!("rdseed"),
        "xsave" => std::is_x86_feature_detected!("xsave"),
        "xsaveopt" => std::is_x86_feature_detected!("xsaveopt"),
        "xsavec" => std::is_x86_feature_detected!("xsavec"),
        "sse4.1" => std::is_x86_feature_detected!("sse4.1"),
        _ => panic!("unknown feature {f}"),
    }
}

fn rtgrind() -> PathBuf {
    std::env::var_os("RTGRIND_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_rtgrind")), PathBuf::from)
}

/// Generate `programs` programs of about `ops` instructions each, run each natively (twice: the
/// program must be deterministic) and under rtgrind, and compare.
fn run_class(class: &str, programs: u64, ops: usize, generate: fn(&mut Gen, usize)) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("insn");
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    for n in 0..programs {
        let seed = class.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3)) + n;
        let mut g = Gen::new(seed);
        generate(&mut g, ops);
        let program = g.finish();
        let source = dir.join(format!("{class}-{n}.S"));
        let exe = dir.join(format!("{class}-{n}"));
        std::fs::write(&source, &program.source).unwrap();
        assemble(&source, &exe);

        let native = run(&mut Command::new(&exe)).unwrap_or_else(|e| panic!("{} natively: {e}", exe.display()));
        assert_eq!(native.len(), program.out_len, "{}: native dump has the wrong size", exe.display());
        let again = run(&mut Command::new(&exe)).unwrap();
        let drift = describe(&program, &native, &again);
        assert!(drift.is_empty(), "{} is not deterministic natively (a generator bug):\n{}", source.display(), drift.join("\n"));

        // Plain translation, and with taint propagation inline around every instruction
        // (which must not change a register, flag or byte the program sees): its fast version
        // (the default; nothing is tainted here) and its full propagation; and one run of the
        // suppression tool traced (origins with its policy) and suppressing from the
        // program's entry (guards, corrupt bits, the return-address table).
        let full = "RTGRIND_FAST_PATH=0 --tool=taint --track-origins=yes";
        let (trace_plan, entry_plan) = (dir.join(format!("{class}-{n}.trace")), dir.join(format!("{class}-{n}.entry")));
        std::fs::write(&trace_plan, "trace\n").unwrap();
        // A point at the ELF entry (e_entry), every instance.
        let elf = std::fs::read(&exe).unwrap();
        let entry = u64::from_le_bytes(elf[24..32].try_into().unwrap());
        std::fs::write(&entry_plan, format!("point\t{entry:#x}\t0\t0\n")).unwrap();
        let trace = format!("--tool=suppress --suppress-plan={}", trace_plan.display());
        let suppressing = format!("--tool=suppress --suppress-plan={}", entry_plan.display());
        for tool in ["--tool=none", "--tool=taint", "--tool=taint --track-origins=yes", full, &trace, &suppressing] {
            let mut cmd = Command::new(rtgrind());
            let opts = match tool.strip_prefix("RTGRIND_FAST_PATH=0 ") {
                Some(rest) => {
                    cmd.env("RTGRIND_FAST_PATH", "0");
                    rest
                }
                None => tool,
            };
            cmd.arg("-q").args(opts.split(' ')).arg(&exe);
            let problem = match run(&mut cmd) {
                Err(e) => vec![format!("rtgrind run failed: {e}")],
                Ok(out) if out.len() != native.len() => {
                    vec![format!("rtgrind wrote {} bytes, native {}", out.len(), native.len())]
                }
                Ok(out) => describe(&program, &native, &out),
            };
            if !problem.is_empty() {
                failures.push(format!("{class} program {n} ({}) {tool}:\n  {}", source.display(), problem.join("\n  ")));
            }
        }
    }
    assert!(failures.is_empty(), "native and rtgrind differ:\n{}", failures.join("\n"));
}

fn assemble(source: &Path, exe: &Path) {
    let out = Command::new("gcc").args(["-nostdlib", "-static", "-no-pie", "-o"]).arg(exe).arg(source).output().expect("failed to run gcc");
    assert!(out.status.success(), "gcc failed on {} (a generator bug):\n{}", source.display(), String::from_utf8_lossy(&out.stderr));
}

/// Run with stdin closed; stdout if the process exits 0 with an empty stderr (taint summary
/// lines aside) within `TIMEOUT`.
fn run(cmd: &mut Command) -> Result<Vec<u8>, String> {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        stdout.read_to_end(&mut v).map(|_| v)
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        stderr.read_to_end(&mut v).map(|_| v)
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("timed out after {} s (killed)", TIMEOUT.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let out = out.join().unwrap().map_err(|e| e.to_string())?;
    let err = err.join().unwrap().map_err(|e| e.to_string())?;
    let err = String::from_utf8_lossy(&err);
    // The taint tool's summary is not a problem; anything else on stderr is.
    let err: String = err.lines().filter(|l| !l.contains("== taint: ")).map(|l| format!("{l}\n")).collect();
    if !status.success() || !err.is_empty() {
        return Err(format!("{status}, stderr:\n{}", err.trim_end()));
    }
    Ok(out)
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

fn flag_names(v: u64, mask: u64) -> String {
    let set: Vec<&str> = FLAG_NAMES.iter().filter(|(f, _)| f & mask & v != 0).map(|(_, n)| *n).collect();
    format!("[{}]", set.join(" "))
}

/// Everything that differs between two dumps of `p`, in order: the first diverging log record
/// (with the instruction before it), then the final registers, flags, MXCSR, vectors, memory.
fn describe(p: &Program, a: &[u8], b: &[u8]) -> Vec<String> {
    let mut lines = Vec::new();
    let insn = |i: usize| format!("#{i} `{}`", p.texts.get(i).map_or("", |s| s.as_str()));
    let mut diverging = p.slots.iter().filter(|s| match s.kind {
        SlotKind::Flags { mask } => (u64_at(a, s.off) ^ u64_at(b, s.off)) & mask != 0,
        SlotKind::Gprs => a[s.off..s.off + 128] != b[s.off..s.off + 128],
        SlotKind::Ymm => a[s.off..s.off + 512] != b[s.off..s.off + 512],
    });
    if let Some(first) = diverging.next() {
        match first.kind {
            SlotKind::Flags { mask } => {
                let (x, y) = (u64_at(a, first.off), u64_at(b, first.off));
                lines.push(format!(
                    "first divergence: flags after {}: native {} rtgrind {} (differ: {})",
                    insn(first.insn),
                    flag_names(x, mask),
                    flag_names(y, mask),
                    flag_names(x ^ y, mask)
                ));
            }
            SlotKind::Gprs => {
                lines.push(format!("first divergence: registers at the checkpoint after {}:", insn(first.insn)));
                lines.extend(gpr_diffs(a, b, first.off));
            }
            SlotKind::Ymm => {
                lines.push(format!("first divergence: ymm registers at the checkpoint after {}:", insn(first.insn)));
                lines.extend(ymm_diffs(a, b, first.off));
            }
        }
        match diverging.count() {
            0 => {}
            more => lines.push(format!("({more} more diverging log records after it)")),
        }
    }
    lines.extend(gpr_diffs(a, b, GPRS).into_iter().map(|l| format!("final {l}")));
    let mask = OBSERVED & !p.final_undef;
    let (x, y) = (u64_at(a, RFLAGS), u64_at(b, RFLAGS));
    if (x ^ y) & mask != 0 {
        lines.push(format!("final rflags: native {} rtgrind {}", flag_names(x, mask), flag_names(y, mask)));
    }
    let (x, y) = (&a[MXCSR..MXCSR + 4], &b[MXCSR..MXCSR + 4]);
    if x != y {
        lines.push(format!("final mxcsr: native {:#x} rtgrind {:#x}", u32::from_le_bytes(x.try_into().unwrap()), u32::from_le_bytes(y.try_into().unwrap())));
    }
    lines.extend(ymm_diffs(a, b, YMM).into_iter().map(|l| format!("final {l}")));
    // The stack below the red zone is dead: a translator may use it (valgrind does, for `bt`).
    // %rbp points into the middle of the buffer at the end: that locates `out`.
    let out_addr = u64_at(a, GPRS + 8 * 5).wrapping_sub(BUF as u64 + 2048);
    let red_zone = u64_at(a, GPRS + 8 * 4).wrapping_sub(128).wrapping_sub(out_addr + STACK as u64);
    let live = STACK + (red_zone.min(STACK_LEN as u64) as usize & !7);
    for (name, base, start, end) in [("buf", BUF, BUF, BUF + BUF_LEN), ("stack", STACK, live, STACK + STACK_LEN)] {
        for q in (start..end).step_by(8) {
            let (x, y) = (u64_at(a, q), u64_at(b, q));
            if x != y {
                lines.push(format!("{name}+{:#x} (qword): native {x:#018x} rtgrind {y:#018x}", q - base));
            }
        }
    }
    if lines.len() > MAX_LINES {
        let more = lines.len() - MAX_LINES;
        lines.truncate(MAX_LINES);
        lines.push(format!("... and {more} more differences"));
    }
    lines
}

fn ymm_diffs(a: &[u8], b: &[u8], off: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for i in 0..16 {
        for lane in 0..4 {
            let (x, y) = (u64_at(a, off + 32 * i + 8 * lane), u64_at(b, off + 32 * i + 8 * lane));
            if x != y {
                lines.push(format!("ymm{i} bits {}..{}: native {x:#018x} rtgrind {y:#018x}", 64 * lane, 64 * lane + 63));
            }
        }
    }
    lines
}

fn gpr_diffs(a: &[u8], b: &[u8], off: usize) -> Vec<String> {
    (0..16)
        .filter_map(|r| {
            let (x, y) = (u64_at(a, off + 8 * r), u64_at(b, off + 8 * r));
            (x != y).then(|| format!("{}: native {x:#018x} rtgrind {y:#018x}", gpr_name(r)))
        })
        .collect()
}
