//! The public tools on the instrumentation API: `--tool=count` (against exact counts of a
//! hand-written loop and against Valgrind's lackey) and `--tool=taint`.

use crate::common::{assert_no_panic, compile_snippet, run_command, run_rtgrind, Cmd, Input};
use std::process::Command;

/// The value of the `count: NAME: N` line of a count report.
fn count_of(stderr: &str, name: &str) -> u64 {
    let prefix = format!("count: {name}:");
    let line = stderr.lines().find_map(|l| l.split_once("== ").map(|x| x.1).filter(|l| l.starts_with(&prefix))).unwrap_or_else(|| panic!("no '{prefix}' in:\n{stderr}"));
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
