//! The public tools on the instrumentation API: `--tool=count` (against exact counts of a
//! hand-written loop and against Valgrind's lackey) and `--tool=taint`.

use crate::common::{assert_no_panic, compile_snippet, run_command, run_rtgrind, Cmd, Input};
use std::os::unix::process::ExitStatusExt;
use std::process::Command;

/// The value of the `count: NAME: N` line of a count report.
fn count_of(stderr: &str, name: &str) -> u64 {
    let prefix = format!("count: {name}:");
    let line = stderr
        .lines()
        .find_map(|l| l.split_once("== ").map(|x| x.1).filter(|l| l.starts_with(&prefix)))
        .unwrap_or_else(|| panic!("no '{prefix}' in:\n{stderr}"));
    line[prefix.len()..].split_whitespace().next().unwrap().parse().unwrap()
}

const LOOP_ASM: &str = r#"
    .globl _start
_start:
    mov $1000, %ecx
    xor %eax, %eax
1:  mov %rcx, -8(%rsp)
    add -8(%rsp), %rax
    dec %ecx
    jnz 1b
    mov $60, %eax
    xor %edi, %edi
    syscall
"#;

#[test]
fn count_is_exact_on_a_known_loop() {
    let exe = compile_snippet("count_loop", "S", LOOP_ASM, &["-nostdlib", "-static"]);
    let out = run_rtgrind(["--tool=count"], &Cmd::new(&exe));
    assert_no_panic(&out);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    // 2 before the loop, 4 per iteration, 3 after it.
    assert_eq!(count_of(&err, "instructions"), 2 + 4 * 1000 + 3, "{err}");
    assert_eq!(count_of(&err, "loads"), 1000, "{err}");
    assert_eq!(count_of(&err, "stores"), 1000, "{err}");
    assert_eq!(count_of(&err, "conditional branches"), 1000, "{err}");
    assert_eq!(count_of(&err, "  taken"), 999, "{err}");
    assert_eq!(count_of(&err, "  not taken"), 1, "{err}");
}

const CALLS_ASM: &str = r#"
    .globl _start
_start:
    mov $100, %ecx
1:  call 3f
    lea 2f(%rip), %rdx
    jmp *%rdx
2:  dec %ecx
    jnz 1b
    mov $60, %eax
    xor %edi, %edi
    syscall
3:  ret
"#;

#[test]
fn count_counts_returns_and_indirect_jumps() {
    let exe = compile_snippet("count_calls", "S", CALLS_ASM, &["-nostdlib", "-static"]);
    let out = run_rtgrind(["--tool=count"], &Cmd::new(&exe));
    assert_no_panic(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(count_of(&err, "returns"), 100, "{err}");
    assert_eq!(count_of(&err, "indirect jumps, calls"), 100, "{err}");
}

const BRANCHY_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
static int collatz(long n) { int steps = 0; while (n != 1) { n = (n & 1) ? 3 * n + 1 : n / 2; steps++; } return steps; }
int main(int argc, char **argv) {
    long total = 0;
    for (long i = 1; i < 30000; i++) total += collatz(i);
    printf("%ld\n", total);
    return 0;
}
"#;

/// lackey's `NAME: N` figure (commas removed).
fn lackey_of(stderr: &str, name: &str) -> u64 {
    let line = stderr.lines().find(|l| l.contains(&format!("{name}:"))).unwrap_or_else(|| panic!("no {name} in lackey output:\n{stderr}"));
    let v = line.split_once(&format!("{name}:")).unwrap().1.split_whitespace().next().unwrap();
    v.replace(',', "").parse().unwrap()
}

fn assert_close(what: &str, ours: u64, theirs: u64, tolerance: f64) {
    let diff = (ours as f64 - theirs as f64).abs() / theirs as f64;
    assert!(diff <= tolerance, "{what}: rtgrind {ours} vs lackey {theirs} ({:.2}% apart, tolerance {:.1}%)", diff * 100.0, tolerance * 100.0);
}

#[test]
fn count_agrees_with_lackey() {
    let exe = compile_snippet("count_branchy", "c", BRANCHY_C, &["-O1", "-g"]);
    let ours = run_rtgrind(["--tool=count"], &Cmd::new(&exe));
    assert_no_panic(&ours);
    assert_eq!(ours.status.code(), Some(0));
    let ours = String::from_utf8_lossy(&ours.stderr).into_owned();
    let mut v = Command::new("valgrind");
    v.args(["--tool=lackey"]).arg(&exe);
    let lackey = run_command(v, Input::Null);
    assert_eq!(lackey.status.code(), Some(0), "valgrind --tool=lackey failed");
    let lackey = String::from_utf8_lossy(&lackey.stderr).into_owned();
    // Both count the same program; they differ only in start-up paths (ld.so, ifunc
    // choices) and in how `rep` instructions count, a small fraction of this run.
    assert_close("instructions", count_of(&ours, "instructions"), lackey_of(&lackey, "guest instrs"), 0.01);
    assert_close("conditional branches", count_of(&ours, "conditional branches"), lackey_of(&lackey, "total"), 0.01);
    assert_close("taken", count_of(&ours, "  taken"), lackey_of(&lackey, "taken"), 0.01);
}

#[test]
fn count_per_function_names_the_hot_function() {
    let exe = compile_snippet("count_branchy_fn", "c", BRANCHY_C, &["-O1", "-g", "-fno-inline"]);
    let out = run_rtgrind(["--tool=count", "--per-function"], &Cmd::new(&exe));
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    let total = count_of(&err, "instructions");
    // The first row is the hottest function: collatz, with nearly all instructions.
    let first = err.lines().skip_while(|l| !l.contains("function")).nth(1).unwrap_or_else(|| panic!("no rows:\n{err}"));
    assert!(first.contains("collatz ("), "hottest function is not collatz: {first}");
    let n: u64 = first.split("== count:").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    assert!(n * 10 > total * 9, "collatz has {n} of {total} instructions");
}

/// `guest-programs/taint/NAME.c` built with `-O0 -g` (so each source line keeps its branch),
/// once per test process: tests running in parallel share the binary.
fn taint_guest(name: &str) -> std::path::PathBuf {
    static BUILT: std::sync::Mutex<Vec<(String, std::path::PathBuf)>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, exe)) = built.iter().find(|(n, _)| n == name) {
        return exe.clone();
    }
    let path = crate::common::repo_root().join("guest-programs/taint").join(format!("{name}.c"));
    let source = std::fs::read_to_string(&path).unwrap();
    let exe = compile_snippet(name, "c", &source, &["-O0", "-g", "-I", crate::common::repo_root().join("guest-programs/include").to_str().unwrap()]);
    built.push((name.to_string(), exe.clone()));
    exe
}

/// The line of `guest-programs/taint/NAME.c` carrying `/* marker */`.
fn marked_line(name: &str, marker: &str) -> usize {
    let path = crate::common::repo_root().join("guest-programs/taint").join(format!("{name}.c"));
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().position(|l| l.contains(&format!("/* {marker} */"))).unwrap_or_else(|| panic!("no {marker} marker")) + 1
}

/// The taint report's conditional-branch lines.
fn tainted_branches(stderr: &str) -> Vec<String> {
    stderr.lines().filter(|l| l.contains("taint: conditional branch")).map(str::to_owned).collect()
}

fn check_input_branch(opts: &[&str], cmd: Cmd) {
    let dep = format!("input_branch.c:{} (main)", marked_line("input_branch", "dependent"));
    let indep = format!("input_branch.c:{} (main)", marked_line("input_branch", "independent"));
    let mut all = vec!["--tool=taint"];
    all.extend_from_slice(opts);
    // RTGRIND_FAST_PATH in both runs: the guest's environment, hence where its argument strings
    // lie, must not differ (strrchr of argv[0] reads past its end into argv[1] at some
    // alignments only).
    let out = run_rtgrind(&all, &cmd.clone().env("RTGRIND_FAST_PATH", "1"));
    assert_no_panic(&out);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout_str(), "got x\n18\n");
    let err = String::from_utf8_lossy(&out.stderr);
    let branches = tainted_branches(&err);
    assert!(branches.iter().any(|l| l.contains(&dep)), "the input-dependent branch ({dep}) is not reported:\n{err}");
    assert!(!branches.iter().any(|l| l.contains(&indep)), "the input-independent branch ({indep}) is reported:\n{err}");
    // The fast path (blocks checked clean) reports exactly what the full propagation does.
    let full = run_rtgrind(&all, &cmd.env("RTGRIND_FAST_PATH", "0"));
    assert_eq!(report_lines(&out.stderr), report_lines(&full.stderr), "fast path and full propagation disagree");
}

/// Counts each tainted site's events in the code cache and calls out only at its first (issue
/// 30): the counts stay exact. A byte loop over 1,000 input bytes: its branch on the byte
/// (checked with the flags live) and its table access indexed by it (flags free) are each
/// tainted exactly 1,000 times; the loop's own branch never.
#[test]
fn taint_counts_every_tainted_event_of_a_site() {
    let source = r#"
#include <stdio.h>
#include <unistd.h>
static int table[256];
int main(void) {
    unsigned char buf[1000];
    ssize_t n = read(0, buf, sizeof buf);
    int big = 0;
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] > 'm') /* branch */
            big++;
        table[buf[i]]++; /* index */
    }
    printf("%d %zd\n", big, n);
    return 0;
}
"#;
    let exe = compile_snippet("taint_counts", "c", source, &["-O0", "-g"]);
    let input: Vec<u8> = (0..1000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let out = run_rtgrind(["--tool=taint", "--taint-input=stdin"], &Cmd::new(&exe).stdin(input));
    assert_eq!(out.stdout_str(), "494 1000\n", "{}", out.describe());
    let err = out.stderr_str();
    let line = |marker: &str| source.lines().position(|l| l.contains(marker)).unwrap() + 1;
    let at = |kind: &str, l: usize| times_at(&err, kind, &format!("taint_counts.c:{l}"));
    assert_eq!(at("conditional branch", line("/* branch */")), ["1000 times"], "{err}");
    assert!(at("memory address", line("/* index */")).iter().all(|n| n == "1000 times") && !at("memory address", line("/* index */")).is_empty(), "{err}");
    assert!(at("conditional branch", line("for (ssize_t")).is_empty(), "{err}");
}

/// Branches after flags written in every way the propagation knows, each on its own line of
/// a hand-written loop over 1,000 input bytes: the flags' taint a `jcc` reads is that of the
/// last instruction writing them, whether it was kept in a register for the branch right
/// after (a computation then the `jcc`), read from its slot (a move between, a second branch on
/// the same flags, a block entered at the branch), merged by a partial write (`inc` keeps
/// CF's taint, and taints the register it increments) or cleared by a zeroing idiom; and a tainted write that a later one overwrites
/// before any read (not stored at all) never shows. With and without origins (whose branches
/// call out the first time) and without fast versions, the same counts.
#[test]
fn taint_branch_counts_follow_the_last_flags_write() {
    let source = r#"
    .globl _start
    .text
_start:
    xor %edi, %edi
    lea buf(%rip), %rsi
    mov $1000, %edx
    xor %eax, %eax
    syscall
    mov %rax, %r12
    xor %ebx, %ebx
loop:
    movzbl buf(%rbx), %ecx
    mov $7, %edx
    cmp $'m', %ecx
    cmp $3, %edx
    jne 1f                      # CLEAN-AFTER-TAINTED
1:  cmp $'m', %ecx
    jbe 2f                      # KEPT-TAINTED
2:  ja 3f                       # SAME-FLAGS-AGAIN
3:  test %edx, %edx
    mov %ecx, %eax
    jne 4f                      # CLEAN-THROUGH-MOVE
4:  cmp $'m', %ecx
    inc %edx
    jb 5f                       # AFTER-PARTIAL
5:  mov $7, %edx
    cmp $'m', %ecx
    mov %ecx, %eax
    jne 6f                      # TAINTED-THROUGH-MOVE
6:  cmp $'m', %ecx
    xor %eax, %eax
    je 7f                       # AFTER-ZEROING
7:  test $1, %ebx
    jne 8f
    cmp $3, %edx
    jmp 9f
8:  cmp $'m', %ecx
9:  jne 10f                     # HALF
10: add $1, %rbx
    cmp %r12, %rbx
    jb loop                     # LOOP
    mov $60, %eax
    xor %edi, %edi
    syscall
    .bss
buf: .space 1000
"#;
    let exe = compile_snippet("taint_flags", "S", source, &["-nostdlib", "-static", "-g"]);
    let input: Vec<u8> = (0..1000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let line = |marker: &str| source.lines().position(|l| l.contains(marker)).unwrap() + 1;
    for (opts, env) in [
        (&["--tool=taint", "--taint-input=stdin"][..], "1"),
        (&["--tool=taint", "--taint-input=stdin", "--track-origins=yes"], "1"),
        (&["--tool=taint", "--taint-input=stdin"], "0"),
    ] {
        let out = run_rtgrind(opts, &Cmd::new(&exe).stdin(input.clone()).env("RTGRIND_FAST_PATH", env));
        assert_eq!(out.status.code(), Some(0), "{}", out.describe());
        let err = out.stderr_str();
        let at = |marker: &str| times_at(&err, "conditional branch", &format!("taint_flags.S:{}", line(marker)));
        for tainted in ["KEPT-TAINTED", "SAME-FLAGS-AGAIN", "AFTER-PARTIAL", "TAINTED-THROUGH-MOVE"] {
            assert_eq!(at(tainted), ["1000 times"], "{tainted} ({opts:?}, fast path {env}):\n{err}");
        }
        assert_eq!(at("HALF"), ["500 times"], "({opts:?}, fast path {env}):\n{err}");
        for clean in ["CLEAN-AFTER-TAINTED", "CLEAN-THROUGH-MOVE", "AFTER-ZEROING", "LOOP"] {
            assert!(at(clean).is_empty(), "{clean} ({opts:?}, fast path {env}):\n{err}");
        }
    }
}

/// The "N times" of each taint report line of `kind` at `place` (FILE:LINE).
fn times_at(err: &str, kind: &str, place: &str) -> Vec<String> {
    let place = format!("{place} ");
    err.lines().filter(|r| r.contains(kind) && r.contains(&place)).map(|r| r.rsplit(": ").next().unwrap().to_string()).collect()
}

/// A block's full version is built only when a thread first needs it (issue 29): a function
/// that ran 128,000 loop iterations on clean bytes (its blocks only ever had their fast
/// versions) then gets input, once in a second thread and once in the main one. Its branch on
/// the byte and its table accesses indexed by it are each tainted exactly 40 times, at their
/// lines; the loop's own branch never; the same report as with both versions built at once.
#[test]
fn taint_after_many_clean_runs_builds_the_full_version_late() {
    let source = r#"
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static int table[256];
static int big;
static void classify(const unsigned char *p, int n) {
    for (int i = 0; i < n; i++) { /* loop */
        if (p[i] > 'm') /* branch */
            big++;
        table[p[i]]++; /* index */
    }
}
static unsigned char input[64];
static ssize_t got;
static void *worker(void *arg) {
    (void)arg;
    classify(input, (int)got);
    return 0;
}
int main(void) {
    unsigned char clean[64];
    for (int i = 0; i < 64; i++)
        clean[i] = 'a' + i % 26;
    for (int k = 0; k < 2000; k++)
        classify(clean, 64);
    got = read(0, input, sizeof input);
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    pthread_join(t, 0);
    classify(input, (int)got);
    printf("%d %zd\n", big, got);
    return 0;
}
"#;
    let exe = compile_snippet("taint_late", "c", source, &["-O0", "-g", "-pthread"]);
    let line = |marker: &str| source.lines().position(|l| l.contains(marker)).unwrap() + 1;
    let mut reports = Vec::new();
    for eager in ["0", "1"] {
        let cmd = Cmd::new(&exe).stdin("abcdefghijklmnopqrst").env("RTGRIND_EAGER_FULL", eager);
        let out = run_rtgrind(["--tool=taint", "--taint-input=stdin"], &cmd);
        // 2000 clean calls of 26 bytes past 'm' each, two of 7.
        assert_eq!(out.stdout_str(), "52014 20\n", "{}", out.describe());
        let err = out.stderr_str();
        let at = |kind: &str, l: usize| times_at(&err, kind, &format!("taint_late.c:{l}"));
        assert_eq!(at("conditional branch", line("/* branch */")), ["40 times"], "RTGRIND_EAGER_FULL={eager}:\n{err}");
        let index = at("memory address", line("/* index */"));
        assert!(!index.is_empty() && index.iter().all(|n| n == "40 times"), "RTGRIND_EAGER_FULL={eager}:\n{err}");
        assert!(at("conditional branch", line("/* loop */")).is_empty(), "{err}");
        reports.push(report_lines(&out.stderr));
    }
    assert_eq!(reports[0], reports[1], "lazy and eager full versions disagree");
}

#[test]
fn taint_reports_the_branch_on_stdin() {
    check_input_branch(&["--taint-input=stdin"], Cmd::new(taint_guest("input_branch")).stdin("xyz\n"));
}

#[test]
fn taint_reports_the_branch_on_argv() {
    check_input_branch(&["--taint-input=argv"], Cmd::new(taint_guest("input_branch")).arg("xyz"));
}

#[test]
fn taint_reports_the_branch_on_a_file() {
    let dir = crate::common::scratch_dir("taint_file");
    let input = dir.join("input.txt");
    std::fs::write(&input, "xyz\n").unwrap();
    let opt = format!("--taint-input={}", input.display());
    check_input_branch(&[&opt], Cmd::new(taint_guest("input_branch")).arg("-").arg(&input));
}

#[test]
fn taint_without_input_reports_nothing() {
    // The same program with its input from a file the tool was not told about.
    let dir = crate::common::scratch_dir("taint_none");
    let input = dir.join("input.txt");
    std::fs::write(&input, "xyz\n").unwrap();
    let out = run_rtgrind(["--tool=taint", "--taint-input=stdin"], &Cmd::new(taint_guest("input_branch")).arg("-").arg(&input));
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("taint: input from stdin; 0 input-dependent sites"), "{err}");
}

/// Expected shadow of each case of `guest-programs/taint/shadow_cases.c`, one digit per byte.
const SHADOW_CASES: &[(&str, &str)] = &[
    ("mov_load_store", "00100100"),
    ("mov32_zero_extends", "00000000"),
    ("mov8_keeps_rest", "01111111"),
    ("mov16_keeps_rest", "00111111"),
    ("mov_high_byte", "01000000"),
    ("add_merges", "11111111"),
    ("add32_zero_extends", "11110000"),
    ("xor_zeroing", "000000000"),
    ("cmp_taints_flags", "1"),
    ("cmp_clean_flags", "0"),
    ("add_from_memory_spreads", "11111111"),
    ("vpaddb_from_memory_spreads", "11111111111111111111111111111111"),
    ("copies_with_live_flags", "001000000"),
    ("clean_copy_with_live_flags", "000000001"),
    ("lea_merges_base", "11111111"),
    ("tainted_pointer_clean_data", "00000000"),
    ("push_pop", "00100100"),
    ("base_moved_to_another_slice", "0100000000000000"),
    ("xchg_swaps", "0000000000100100"),
    ("cmov_merges", "11111111"),
    ("movzx_copies_low", "10000000"),
    ("rep_movsb_copies", "0010010000000000"),
    ("rep_stosb_fills", "11111111"),
    ("movdqu_copies", "0010010000001000"),
    ("vpaddb_spreads", "11111111111111111111111111111111"),
    ("vex128_clears_upper", "00000000000000000000000000000000"),
    ("sse_keeps_upper", "00000000000000001111111111111111"),
    ("pxor_zeroing", "0000000000000000"),
    ("call_pushes_clean", "00000000"),
    ("memcpy_copies", "001001000000000000000000000000000000000011100000"),
    ("across_chunks", "00010000"),
    ("later_load_of_a_span", "00000000001000000000000000000000"),
    ("vector_loads_of_a_span", "11111111111111111111111111111111"),
    ("clean_stores_over_taint", "00000000101111110000000000000000"),
    ("pops_checked_at_the_first", "0000000000100100"),
    ("movs_to_a_far_chunk", "0010010000000000"),
    ("stos_clears_taint", "0000000000001111"),
];

/// The taint report's lines without the `==PID==` prefix and the guest pcs (libraries are
/// loaded at random addresses; the source lines name the sites).
fn report_lines(stderr: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stderr);
    let lines = text.lines().filter(|l| l.contains("taint:")).map(|l| l.split_once("== ").map_or(l, |x| x.1));
    lines.map(|l| l.split_whitespace().filter(|w| !w.starts_with("0x")).collect::<Vec<_>>().join(" ")).collect()
}

#[test]
fn shadow_propagation_per_instruction_class() {
    // With the fast path (the default; taint enters blocks running their fast version, which
    // must hand over to the full one exactly) and with the full propagation alone.
    let mut reports = Vec::new();
    // And with origins too, whose fast version moves `movs`/`stos` itself.
    for (fast, origins) in [("1", "no"), ("0", "no"), ("1", "yes")] {
        let out = run_rtgrind(["--tool=taint", &format!("--track-origins={origins}")], &Cmd::new(taint_guest("shadow_cases")).env("RTGRIND_FAST_PATH", fast));
        assert_no_panic(&out);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let stdout = out.stdout_str();
        let got: Vec<(&str, &str)> = stdout.lines().filter_map(|l| l.split_once(": ")).collect();
        let mut wrong = Vec::new();
        for (name, want) in SHADOW_CASES {
            match got.iter().find(|(n, _)| n == name) {
                Some((_, have)) if have == want => {}
                Some((_, have)) => wrong.push(format!("{name}: expected {want}, got {have}")),
                None => wrong.push(format!("{name}: missing from the output")),
            }
        }
        assert_eq!(got.len(), SHADOW_CASES.len(), "cases printed:\n{stdout}");
        assert!(wrong.is_empty(), "RTGRIND_FAST_PATH={fast} --track-origins={origins}:\n{}", wrong.join("\n"));
        reports.push(report_lines(&out.stderr));
    }
    // Only the case that loads through a tainted pointer uses a tainted address.
    assert_eq!(reports[0], reports[1], "fast path and full propagation disagree");
    assert_eq!(reports[0], reports[2], "the fast path with and without origins disagree");
    assert_eq!(reports[1].len(), 2, "{:?}", reports[1]);
    assert!(reports[1][1].contains("memory address") && reports[1][1].contains("shadow_cases.c:"), "{:?}", reports[1]);
}

#[test]
fn taint_input_file_must_exist() {
    let out = crate::common::rtgrind_raw(["--tool=taint", "--taint-input=/no/such/file", "/bin/true"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("rtgrind: error: --taint-input: no such file") && err.lines().count() == 1, "{err}");
}

#[test]
fn origins_per_rule() {
    // Origins propagate in the fast version (nothing is tainted here) and in the full one,
    // the same without the AVX-512 temporaries that copy vector lanes' origins, and with the
    // block count (the instance of a definition) in memory instead of a register.
    for (fast, avx512, counts) in [("1", "1", ""), ("0", "1", ""), ("1", "0", "--count-in-memory")] {
        let cmd = Cmd::new(taint_guest("origin_cases")).env("RTGRIND_FAST_PATH", fast).env("RTGRIND_AVX512", avx512);
        let opts = ["-q", "--tool=taint", "--track-origins=yes", counts];
        let out = run_rtgrind(opts.into_iter().filter(|o| !o.is_empty()), &cmd);
        assert_no_panic(&out);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let stdout = out.stdout_str();
        let cases: Vec<&str> = stdout.lines().collect();
        assert_eq!(cases.len(), 25, "cases printed:\n{stdout}");
        let wrong: Vec<&&str> = cases.iter().filter(|l| !l.ends_with(": ok")).collect();
        assert!(wrong.is_empty(), "RTGRIND_FAST_PATH={fast} RTGRIND_AVX512={avx512} {counts}: {wrong:#?}");
    }
}

#[test]
fn taint_names_where_a_branch_flags_were_defined() {
    let line = marked_line("input_branch", "dependent");
    // The variable in both runs, so the guest's environment (and its block count) is the same.
    let cmd = Cmd::new(taint_guest("input_branch")).stdin("xyz\n");
    let out = run_rtgrind(["--tool=taint", "--track-origins=yes"], &cmd.clone().env("RTGRIND_FAST_PATH", "1"));
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    let at =
        lines.iter().position(|l| l.contains("conditional branch") && l.contains(&format!("input_branch.c:{line} (main)"))).unwrap_or_else(|| panic!("{err}"));
    // The `cmp` right before the `je` on the same line defined the flags.
    assert!(lines[at + 1].contains("its flags were defined at") && lines[at + 1].contains(&format!("input_branch.c:{line} (main)")), "{}", lines[at + 1]);
    // With origins too, the fast path reports what the full propagation does (the block
    // instances in the origins included).
    let full = run_rtgrind(["--tool=taint", "--track-origins=yes"], &cmd.env("RTGRIND_FAST_PATH", "0"));
    assert_eq!(report_lines(&out.stderr), report_lines(&full.stderr), "fast path and full propagation disagree");
}

/// Address of the first conditional jump on the line of `path` marked `/* marker */`, from
/// `objdump -dl` of `exe` (built -O0 -g -no-pie, so it is the line's own branch).
fn branch_on_marked_line(exe: &std::path::Path, path: &std::path::Path, marker: &str) -> (u64, usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let line = text.lines().position(|l| l.contains(&format!("/* {marker} */"))).unwrap() + 1;
    let name = path.file_name().unwrap().to_str().unwrap();
    let out = std::process::Command::new("objdump").args(["-dl", "--no-show-raw-insn"]).arg(exe).output().unwrap();
    let dis = String::from_utf8_lossy(&out.stdout);
    let mut in_line = false;
    for l in dis.lines() {
        if l.starts_with('/') {
            in_line = l.ends_with(&format!("{name}:{line}"));
            continue;
        }
        let Some((addr, insn)) = l.trim().split_once(":\t") else { continue };
        if in_line && insn.starts_with('j') && !insn.starts_with("jmp") {
            return (u64::from_str_radix(addr, 16).unwrap(), line);
        }
    }
    panic!("no conditional jump on {name}:{line} in:\n{dis}");
}

#[test]
fn switch_inverts_exactly_one_branch_instance() {
    let src = crate::common::repo_root().join("guest-programs/switch/flip.c");
    let exe = compile_snippet("flip", "c", &std::fs::read_to_string(&src).unwrap(), &["-O0", "-g", "-no-pie"]);
    let (addr, line) = branch_on_marked_line(&exe, &src, "flipped");
    let native = crate::common::run_native(&Cmd::new(&exe));
    assert_eq!(native.stdout_str(), "done\n");
    for n in 1..=5 {
        let out = run_rtgrind(["--tool=switch", &format!("--switch-at={addr:#x}:{n}")], &Cmd::new(&exe));
        assert_no_panic(&out);
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(out.stdout_str(), format!("body ran at i={}\ndone\n", n - 1), "switching instance {n}");
        let err = out.stderr_str();
        assert!(err.contains(&format!("switch: instance {n} of the branch at {addr:#x} flip.c:{line} (main) switched to")), "{err}");
    }
    // An instance that never comes changes nothing and says so.
    let out = run_rtgrind(["--tool=switch", &format!("--switch-at={addr:#x}:6")], &Cmd::new(&exe));
    assert_eq!(out.stdout_str(), "done\n");
    assert!(out.stderr_str().contains("ran 5 times; instance 6 never came"), "{}", out.stderr_str());
}

#[test]
fn switch_needs_a_valid_instance() {
    for bad in [
        vec!["--tool=switch", "/bin/true"],
        vec!["--tool=switch", "--switch-at=zz:1", "/bin/true"],
        vec!["--tool=switch", "--switch-at=0x401000:0", "/bin/true"],
    ] {
        let out = crate::common::rtgrind_raw(&bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert_eq!(out.stderr_str().lines().count(), 1, "{bad:?}: {}", out.stderr_str());
    }
}

#[test]
fn non_canonical_addresses_fault_as_natively_under_the_tools() {
    // The tools' shadow accesses come first and fault on a non-canonical address; the guest
    // must still get its own instruction's signal: SIGBUS for an rbp- or rsp-based address
    // (a stack-segment fault), SIGSEGV for any other base, whichever register the tool used.
    let src = r#"
int main(int argc, char **argv) {
    unsigned long p = 0x4141414141414141ul;
    long v = 0;
    if (argc > 1 && argv[1][0] == 'b')
        __asm__ volatile("mov %1, %%rbp\n\tmov 8(%%rbp), %0" : "=r"(v) : "r"(p) : "rbp");
    else
        __asm__ volatile("mov 8(%1), %0" : "=r"(v) : "r"(p));
    return (int)v;
}
"#;
    let exe = compile_snippet("non_canonical", "c", src, &["-O2", "-fomit-frame-pointer"]);
    let dir = std::env::temp_dir().join(format!("rtgrind-non-canonical-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("trace");
    std::fs::write(&trace, "trace\n").unwrap();
    let trace_opt = format!("--suppress-plan={}", trace.display());
    for (arg, want) in [("base", libc::SIGBUS), ("other", libc::SIGSEGV)] {
        let native = crate::common::run_native(&Cmd::new(&exe).arg(arg));
        assert_eq!(native.status.signal(), Some(want), "natively, {arg}");
        for (fast, tool) in [
            ("1", vec!["--tool=none"]),
            ("1", vec!["--tool=taint", "--track-origins=yes"]),
            ("0", vec!["--tool=taint", "--track-origins=yes"]),
            ("1", vec!["--tool=suppress", trace_opt.as_str()]),
        ] {
            let out = run_rtgrind(&tool, &Cmd::new(&exe).arg(arg).env("RTGRIND_FAST_PATH", fast));
            assert_no_panic(&out);
            assert_eq!(out.status.signal(), Some(want), "{arg} under {tool:?} (RTGRIND_FAST_PATH={fast}): {}", out.stderr_str());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--trace-children=yes` passes each tool's options on to the programs the guest starts
/// (issue 22; they were rebuilt by hand and tools' options lost): count's per-function table in
/// every process, taint's input and origins in the child.
#[test]
fn traced_children_get_the_tools_options() {
    let out = run_rtgrind(["--tool=count", "--per-function", "--trace-children=yes"], &Cmd::new("/bin/sh").args(["-c", "/bin/echo hi; /bin/true"]));
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    let err = String::from_utf8_lossy(&out.stderr);
    let tables = err.lines().filter(|l| l.contains("count:") && l.contains("instructions") && l.ends_with("function")).count();
    assert_eq!(tables, 3, "a per-function table for sh, echo and true:\n{err}");

    let line = marked_line("input_branch", "dependent");
    let guest = taint_guest("input_branch");
    let cmd = Cmd::new("/bin/sh").args(["-c", &format!("exec {} xyz", guest.display())]);
    let out = run_rtgrind(["--tool=taint", "--taint-input=argv", "--track-origins=yes", "--trace-children=yes"], &cmd);
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("conditional branch") && l.contains(&format!("input_branch.c:{line} (main)")))
        .unwrap_or_else(|| panic!("the child's argv is not its input:\n{err}"));
    assert!(lines[at + 1].contains("its flags were defined at"), "the child tracks no origins:\n{err}");
}

/// Issue 30: a full call-out saves only what its callee can clobber (xmm0-15 and their upper
/// halves, MXCSR) by plain moves instead of `xsaveopt`/`xrstor`. A program keeping ymm
/// registers with their upper halves in use, SSE registers with them in their initial state,
/// a rounding mode in MXCSR and x87 registers across many blocks prints what it prints
/// natively with a call-out at every block start, full and light.
#[test]
fn vector_and_x87_state_survive_a_call_out_at_every_block() {
    let source = std::fs::read_to_string(crate::common::repo_root().join("guest-programs/load/vecstate.c")).unwrap();
    let exe = compile_snippet("vecstate", "c", &source, &["-O2", "-mavx2"]);
    let native = run_command(Command::new(&exe), Input::Null);
    assert_eq!(native.status.code(), Some(0));
    for kind in ["full", "light"] {
        let out = run_rtgrind(["--tool=count", &format!("--callout-bench={kind}")], &Cmd::new(&exe));
        assert_no_panic(&out);
        assert_eq!(out.status.code(), Some(0), "{kind}: {}", out.describe());
        assert_eq!(String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&native.stdout), "{kind}");
    }
}

/// Where `--stats` says a run's delta tables are (its `delta tables at A, B` line).
fn delta_tables(opts: &[&str], guest: &str) -> Vec<u64> {
    let g = crate::common::guest(guest).unwrap_or_else(|e| panic!("{e}"));
    let mut all = vec!["--stats"];
    all.extend_from_slice(opts);
    let out = run_rtgrind(&all, &g.cmd(&g.builds[0].1));
    let err = out.stderr_str();
    let line = err.lines().find_map(|l| l.split_once("stats: delta tables at ")).unwrap_or_else(|| panic!("no delta tables in:\n{err}")).1;
    line.split(", ").map(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).unwrap()).collect()
}

/// Issue 29 (the translation cache's step 3): translated code holds the shadow's (and the race
/// records') delta tables as displacements, so code re-used from another run needs them at the
/// same addresses: they take fixed slots in the order they are made, whatever the program,
/// the tool, or what the run mapped before. (With the kernel's `MAP_32BIT` placement, the
/// tables' before, ASLR moved them from run to run: these runs' first table was at 0x416c1000
/// and 0x40aa9000.) Each is below 1 GiB, outside that window.
#[test]
fn delta_tables_are_at_the_same_addresses_in_every_run() {
    let taint = delta_tables(&["--tool=taint"], "hello");
    assert_eq!(taint.len(), 1);
    assert_eq!(delta_tables(&["--tool=taint"], "strings"), taint);
    let origins = delta_tables(&["--tool=taint", "--track-origins=yes"], "strings");
    assert_eq!((origins.len(), origins[0]), (2, taint[0]));
    // A suppression run (a search's child) with a plan.
    let plans = crate::common::scratch_dir("delta-tables-plan");
    std::fs::write(plans.join("plan"), "redzones\n").unwrap();
    let plan = format!("--suppress-plan={}", plans.join("plan").display());
    let outcome = format!("--suppress-out={}", plans.join("outcome").display());
    assert_eq!(delta_tables(&["--tool=suppress", &plan, &outcome], "strings"), taint);
    assert!(origins.iter().all(|&t| t < 1 << 30), "{origins:x?}");
}
