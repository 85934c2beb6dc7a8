//! Bad input: each case must give one clear line on stderr, `rtgrind: error: ...`, and the
//! documented exit status (127 missing file; 126 cannot execute: directory, no permission, not
//! ELF, 32-bit, not x86-64, missing interpreter; 2 usage errors; 125 an instruction rtgrind cannot
//! translate, named with its guest address), never a panic.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::common::{self, assert_no_panic, Output};

const PREFIX: &str = "rtgrind: error: ";

/// Checks an error run: status `code`, no panic, and exactly one line starting with `PREFIX` that
/// contains every phrase (case-insensitive). With `quiet`, that line must be all of stderr and
/// stdout must be empty.
fn check_error(o: &Output, quiet: bool, code: i32, phrases: &[&str]) {
    assert_no_panic(o);
    assert!(!o.timed_out && o.status.code() == Some(code), "expected exit {code}:\n{}", o.describe());
    let err = o.stderr_str();
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with(PREFIX)).collect();
    assert!(lines.len() == 1, "expected exactly one `{PREFIX}...` line on stderr:\n{}", o.describe());
    if quiet {
        assert!(err.lines().count() == 1 && err.ends_with('\n'), "with -q, stderr must be that one line:\n{}", o.describe());
        assert!(o.stdout.is_empty(), "unexpected stdout:\n{}", o.describe());
    }
    let line = lines[0].to_lowercase();
    for p in phrases {
        assert!(line.contains(&p.to_lowercase()), "the error line does not mention {p:?}:\n{}", o.describe());
    }
}

/// `rtgrind -q PROG` and `rtgrind PROG` both fail the same clear way.
fn expect_error(prog: impl Into<OsString>, code: i32, phrases: &[&str]) {
    let prog = prog.into();
    check_error(&common::rtgrind_raw([OsString::from("-q"), prog.clone()]), true, code, phrases);
    check_error(&common::rtgrind_raw([prog, OsString::from("arg")]), false, code, phrases);
}

fn write_file(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

#[test]
fn missing_file() {
    let p = "/nonexistent/rtgrind-test/prog";
    expect_error(p, 127, &["no such file", p]);
    let dir = common::scratch_dir("missing");
    expect_error(dir.join("not-there"), 127, &["no such file"]);
}

#[test]
fn directory() {
    let dir = common::scratch_dir("a-directory");
    expect_error(&dir, 126, &["directory", dir.to_str().unwrap()]);
}

#[test]
fn fifo_or_device_is_not_run() {
    // Opening a FIFO to read it waits for a writer: refused before that, as the kernel does.
    let dir = common::scratch_dir("fifo");
    let fifo = dir.join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    std::fs::set_permissions(&fifo, std::fs::Permissions::from_mode(0o755)).unwrap();
    expect_error(&fifo, 126, &["not a regular file", fifo.to_str().unwrap()]);
    expect_error("/dev/null", 126, &["not a regular file"]);
}

#[test]
fn no_execute_permission() {
    let dir = common::scratch_dir("no-exec");
    let elf = std::fs::read("/usr/bin/true").unwrap();
    let p = write_file(&dir, "true-not-executable", &elf, 0o644);
    expect_error(&p, 126, &["permission", p.to_str().unwrap()]);
}

#[test]
fn text_file_is_not_elf() {
    let dir = common::scratch_dir("not-elf");
    let p = write_file(&dir, "notes.txt", b"just some text, no #! line\n", 0o755);
    expect_error(&p, 126, &["not an ELF", p.to_str().unwrap()]);
    let empty = write_file(&dir, "empty", b"", 0o755);
    expect_error(&empty, 126, &["not an ELF"]);
}

#[test]
fn truncated_elf_header() {
    let dir = common::scratch_dir("truncated");
    let p = write_file(&dir, "truncated", &elf64_aarch64()[..24], 0o755);
    let mut truncated = elf64_x86_64();
    truncated.truncate(40);
    let q = write_file(&dir, "truncated-x86-64", &truncated, 0o755);
    expect_error(&p, 126, &[]);
    expect_error(&q, 126, &[]);
}

#[test]
fn elf32_i386_is_rejected() {
    let dir = common::scratch_dir("elf32");
    let p = write_file(&dir, "i386", &elf32_i386(), 0o755);
    expect_error(&p, 126, &["32-bit"]);
}

#[test]
fn elf64_aarch64_is_not_x86_64() {
    let dir = common::scratch_dir("aarch64");
    let p = write_file(&dir, "aarch64", &elf64_aarch64(), 0o755);
    expect_error(&p, 126, &["x86-64"]);
}

#[test]
fn missing_interpreter() {
    let exe = common::compile_snippet("bad-interp", "c", "int main(void) { return 0; }\n", &["-O2", "-Wl,--dynamic-linker=/nonexistent/ld.so"]);
    expect_error(&exe, 126, &["interpreter", "/nonexistent/ld.so"]);
}

#[test]
fn unknown_option() {
    let o = common::rtgrind_raw(["--bogus", "/usr/bin/true"]);
    assert_no_panic(&o);
    assert!(o.status.code() == Some(2), "expected exit 2 (usage error):\n{}", o.describe());
    assert!(o.stderr_str().contains("--bogus"), "the message does not name the option:\n{}", o.describe());
    assert!(o.stdout.is_empty(), "{}", o.describe());
}

#[test]
fn no_program() {
    for args in [&[][..], &["-q"][..], &["--tool=none"][..]] {
        let o = common::rtgrind_raw(args);
        assert_no_panic(&o);
        assert!(matches!(o.status.code(), Some(1 | 2)), "expected exit 2 (or 1) with usage:\n{}", o.describe());
        assert!(o.stderr_str().to_lowercase().contains("usage"), "no usage message:\n{}", o.describe());
    }
}

#[test]
fn unknown_tool() {
    let o = common::rtgrind_raw(["--tool=no-such-tool", "/usr/bin/true"]);
    assert_no_panic(&o);
    assert!(matches!(o.status.code(), Some(1 | 2)), "expected a usage error:\n{}", o.describe());
    assert!(o.stderr_str().contains("no-such-tool"), "the message does not name the tool:\n{}", o.describe());
}

/// Each tool's options are refused with another tool (issue 22): one line naming the option and
/// the tools that take it, exit 2, the program not run.
#[test]
fn a_tools_options_are_refused_with_another_tool() {
    let cases: [(&str, &str, &str); 10] = [
        ("count", "--per-function", "--tool=count"),
        ("none", "--json", "--tool=race"),
        ("race", "--max-runs=5", "--tool=suppress"),
        ("none", "--per-function", "--tool=count"),
        ("suppress", "--taint-input=argv", "--tool=taint"),
        ("count", "--track-origins=yes", "--tool=taint"),
        ("taint", "--switch-at=0x401000:1", "--tool=switch"),
        ("suppress", "--order=prior", "--tool=switch"),
        ("switch", "--max-runs=5", "--tool=suppress"),
        ("taint", "--json", "--tool=suppress"),
    ];
    for (tool, option, owner) in cases {
        if format!("--tool={tool}") == owner {
            continue;
        }
        let o = common::rtgrind_raw([&format!("--tool={tool}"), option, "/bin/echo", "ran"]);
        check_error(&o, false, 2, &[option.split('=').next().unwrap(), owner, &format!("not of --tool={tool}")]);
        assert!(o.stdout.is_empty(), "the program ran:\n{}", o.describe());
    }
    // Its own tool takes it.
    let o = common::rtgrind_raw(["--tool=count", "--per-function", "/bin/echo", "ran"]);
    assert_eq!(o.status.code(), Some(0), "{}", o.describe());
}

// ---------------------------------------------------------------------------------------------
// Instructions rtgrind cannot translate

const BEFORE: &str = "before the unsupported instruction\n";

/// A static `-nostdlib` program that prints `BEFORE`, runs `prelude` and then executes `insn` at
/// the global label `bad_insn`. Returns the executable and the label's address.
fn unsupported_program(name: &str, prelude: &str, insn: &str) -> (PathBuf, u64) {
    let src = format!(
        r#"
    .globl _start
    .text
_start:
    mov $1, %eax
    mov $1, %edi
    lea msg(%rip), %rsi
    mov $msg_len, %edx
    syscall
    {prelude}
    .globl bad_insn
bad_insn:
    {insn}
    mov $60, %eax
    xor %edi, %edi
    syscall
    .section .rodata
msg:
    .ascii "{}"
    .set msg_len, . - msg
"#,
        BEFORE.replace('\n', "\\n")
    );
    let exe = common::compile_snippet(name, "S", &src, &["-nostdlib", "-static", "-g"]);
    let nm = common::run_native(&common::Cmd::new("nm").args(["-P"]).arg(&exe));
    common::assert_exit(&nm, 0);
    let addr = nm
        .stdout_str()
        .lines()
        .find_map(|l| {
            let mut f = l.split_whitespace();
            (f.next() == Some("bad_insn")).then(|| f.nth(1)).flatten().and_then(|v| u64::from_str_radix(v, 16).ok())
        })
        .unwrap_or_else(|| panic!("no bad_insn symbol in {}:\n{}", exe.display(), nm.stdout_str()));
    (exe, addr)
}

/// The guest runs up to the instruction (its output is there), then rtgrind stops with 125 and
/// one line naming the instruction and its address.
fn expect_unsupported(exe: &Path, addr: u64, insn_words: &[&str]) {
    let addr = format!("{addr:#x}");
    let mut phrases = vec![addr.as_str()];
    phrases.extend_from_slice(insn_words);
    let quiet = common::rtgrind_raw([OsString::from("-q"), exe.into()]);
    assert_eq!(quiet.stdout_str(), BEFORE, "the guest's output before the instruction is missing:\n{}", quiet.describe());
    let mut rest = quiet;
    rest.stdout.clear();
    check_error(&rest, true, 125, &phrases);
    let loud = common::rtgrind_raw([exe]);
    check_error(&loud, false, 125, &phrases);
}

/// (`int $0x80` is no longer one: it makes the i386 system call, `fidelity::int_0x80_...`; nor
/// far transfers, `lfs`, `gs`-relative operands and string sources (`lods %gs:(%rsi)`), `sysenter`
/// on AMD: `fidelity::far_transfers_...`.)
/// A far return to the 32-bit code segment would switch to compatibility mode, which rtgrind
/// does not run (nor does Valgrind).
#[test]
fn unsupported_switch_to_compatibility_mode() {
    let (exe, addr) = unsupported_program("compat", "pushq $0x23; lea 1f(%rip), %rax; push %rax", "lretq; 1:");
    expect_unsupported(&exe, addr, &["unsupported", "compatibility mode", "0x23"]);
}

// ---------------------------------------------------------------------------------------------
// Hand-made ELF files (no cross compilers needed)

/// A minimal i386 ELF32 executable: one PT_LOAD, code `mov eax,1; xor ebx,ebx; int 0x80`.
fn elf32_i386() -> Vec<u8> {
    let code: &[u8] = &[0xb8, 1, 0, 0, 0, 0x31, 0xdb, 0xcd, 0x80];
    let size = (52 + 32 + code.len()) as u32;
    let mut b = vec![0x7f, b'E', b'L', b'F', 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    b.extend(2u16.to_le_bytes()); // ET_EXEC
    b.extend(3u16.to_le_bytes()); // EM_386
    b.extend(1u32.to_le_bytes());
    b.extend(0x0804_8054u32.to_le_bytes()); // entry
    b.extend(52u32.to_le_bytes()); // phoff
    b.extend(0u32.to_le_bytes()); // shoff
    b.extend(0u32.to_le_bytes()); // flags
    for h in [52u16, 32, 1, 40, 0, 0] {
        b.extend(h.to_le_bytes()); // ehsize, phentsize, phnum, shentsize, shnum, shstrndx
    }
    for w in [1u32, 0, 0x0804_8000, 0x0804_8000, size, size, 5, 0x1000] {
        b.extend(w.to_le_bytes()); // PT_LOAD offset vaddr paddr filesz memsz R+X align
    }
    b.extend_from_slice(code);
    assert_eq!(b.len() as u32, size);
    b
}

fn elf64_header(machine: u16, entry: u64) -> Vec<u8> {
    let mut b = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    b.extend(2u16.to_le_bytes()); // ET_EXEC
    b.extend(machine.to_le_bytes());
    b.extend(1u32.to_le_bytes());
    b.extend(entry.to_le_bytes());
    b.extend(64u64.to_le_bytes()); // phoff
    b.extend(0u64.to_le_bytes()); // shoff
    b.extend(0u32.to_le_bytes()); // flags
    for h in [64u16, 56, 1, 64, 0, 0] {
        b.extend(h.to_le_bytes());
    }
    b
}

fn elf64_with_code(machine: u16, code: &[u8]) -> Vec<u8> {
    let size = (64 + 56 + code.len()) as u64;
    let mut b = elf64_header(machine, 0x40_0000 + 120);
    b.extend(1u32.to_le_bytes()); // PT_LOAD
    b.extend(5u32.to_le_bytes()); // R+X
    for w in [0u64, 0x40_0000, 0x40_0000, size, size, 0x1_0000] {
        b.extend(w.to_le_bytes()); // offset vaddr paddr filesz memsz align
    }
    b.extend_from_slice(code);
    assert_eq!(b.len() as u64, size);
    b
}

/// A minimal AArch64 ELF64 executable (`e_machine` 183): `mov x8,#93; mov x0,#0; svc #0`.
fn elf64_aarch64() -> Vec<u8> {
    elf64_with_code(183, &[0xa8, 0x0b, 0x80, 0xd2, 0x00, 0x00, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4])
}

/// A minimal x86-64 ELF64 executable: `write(1, "ok\n", 3); exit(7)`.
fn elf64_x86_64() -> Vec<u8> {
    #[rustfmt::skip]
    let code = [
        0xb8, 1, 0, 0, 0,                   // mov eax, 1 (write)
        0xbf, 1, 0, 0, 0,                   // mov edi, 1
        0x48, 0x8d, 0x35, 19, 0, 0, 0,      // lea rsi, [rip + 19] (msg)
        0xba, 3, 0, 0, 0,                   // mov edx, 3
        0x0f, 0x05,                         // syscall
        0xb8, 60, 0, 0, 0,                  // mov eax, 60 (exit)
        0xbf, 7, 0, 0, 0,                   // mov edi, 7
        0x0f, 0x05,                         // syscall
        b'o', b'k', b'\n',                  // msg
    ];
    elf64_with_code(62, &code)
}

/// The hand-made x86-64 ELF is valid: natively and under rtgrind it prints `ok` and exits 7.
/// This keeps the crafted headers above honest (the aarch64 one differs in `e_machine` and code).
#[test]
fn handmade_x86_64_elf_runs() {
    let dir = common::scratch_dir("handmade");
    let p = write_file(&dir, "ok-exit7", &elf64_x86_64(), 0o755);
    let native = common::run_native(&common::Cmd::new(&p));
    common::assert_exit(&native, 7);
    assert_eq!(native.stdout, b"ok\n");
    let rt = common::run_rtgrind(["-q"], &common::Cmd::new(&p));
    common::assert_same(&native, &rt);
}

// ---------------------------------------------------------------------------------------------
// What the kernel refuses to execute (issue 27)

/// Runs `argv[1]` with `execv` (no shell fallback for a file the kernel refuses, which
/// `execvp` has): `execve: ERROR` and exit 126 when the kernel refuses it.
const EXEC: &str = r#"#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    (void)argc;
    execv(argv[1], argv + 1);
    printf("execve: %s\n", strerror(errno));
    return 126;
}
"#;

/// How a run ended, in the terms both runs share.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Refused,
    Exit(i32),
    Signal(i32),
}

fn native_verdict(o: &Output) -> Verdict {
    use std::os::unix::process::ExitStatusExt;
    match (o.status.code(), o.status.signal()) {
        (Some(126), _) if o.stdout_str().starts_with("execve: ") => Verdict::Refused,
        (Some(c), _) => Verdict::Exit(c),
        (_, s) => Verdict::Signal(s.unwrap_or(0)),
    }
}

/// rtgrind's verdict; a panic, a crash of rtgrind itself or a line that is not its one error
/// line fails the test at once.
fn rtgrind_verdict(o: &Output, what: &str) -> Verdict {
    use std::os::unix::process::ExitStatusExt;
    assert_no_panic(o);
    let err = o.stderr_str();
    assert!(!o.timed_out && !err.contains("internal error"), "{what}: {}", o.describe());
    if err.starts_with(PREFIX) {
        assert!(err.lines().count() == 1 && o.status.code().is_some_and(|c| c != 0), "{what}: {}", o.describe());
        return Verdict::Refused;
    }
    match (o.status.code(), o.status.signal()) {
        (Some(c), _) => Verdict::Exit(c),
        (_, s) => Verdict::Signal(s.unwrap_or(0)),
    }
}

/// The 64-bit little-endian fields of an ELF file: (name, offset, size).
fn elf_fields(elf: &[u8]) -> Vec<(String, usize, usize)> {
    const EHDR: [(&str, usize, usize); 18] = [
        ("ei_class", 4, 1),
        ("ei_data", 5, 1),
        ("ei_version", 6, 1),
        ("ei_osabi", 7, 1),
        ("ei_abiversion", 8, 1),
        ("e_type", 16, 2),
        ("e_machine", 18, 2),
        ("e_version", 20, 4),
        ("e_entry", 24, 8),
        ("e_phoff", 32, 8),
        ("e_shoff", 40, 8),
        ("e_flags", 48, 4),
        ("e_ehsize", 52, 2),
        ("e_phentsize", 54, 2),
        ("e_phnum", 56, 2),
        ("e_shentsize", 58, 2),
        ("e_shnum", 60, 2),
        ("e_shstrndx", 62, 2),
    ];
    const PHDR: [(&str, usize, usize); 8] = [
        ("p_type", 0, 4),
        ("p_flags", 4, 4),
        ("p_offset", 8, 8),
        ("p_vaddr", 16, 8),
        ("p_paddr", 24, 8),
        ("p_filesz", 32, 8),
        ("p_memsz", 40, 8),
        ("p_align", 48, 8),
    ];
    let phoff = u64::from_le_bytes(elf[32..40].try_into().unwrap()) as usize;
    let phnum = u16::from_le_bytes([elf[56], elf[57]]) as usize;
    let mut v: Vec<(String, usize, usize)> = EHDR.iter().map(|&(n, o, s)| (n.to_string(), o, s)).collect();
    for i in 0..phnum {
        v.extend(PHDR.iter().map(|&(n, o, s)| (format!("phdr[{i}].{n}"), phoff + 56 * i + o, s)));
    }
    v
}

/// `n` mutants of `elf`, each with one field changed (to 0, 1, all ones, one more or less,
/// one bit flipped, a random value, or about the file's size), from a fixed seed.
fn mutants(elf: &[u8], n: usize, seed: u64) -> Vec<(String, Vec<u8>)> {
    let fields = elf_fields(elf);
    let mut rng = common::Rng::new(seed);
    (0..n)
        .map(|_| {
            let (name, at, size) = &fields[(rng.next() % fields.len() as u64) as usize];
            let mask = if *size == 8 { u64::MAX } else { (1u64 << (8 * size)) - 1 };
            let mut old = [0u8; 8];
            old[..*size].copy_from_slice(&elf[*at..at + size]);
            let old = u64::from_le_bytes(old);
            let mut value = match rng.next() % 8 {
                0 => 0,
                1 => 1,
                2 => mask,
                3 => old.wrapping_add(1),
                4 => old.wrapping_sub(1),
                5 => old ^ (1 << (rng.next() % (8 * *size as u64))),
                6 => rng.next(),
                _ => elf.len() as u64 + rng.next() % 4096,
            } & mask;
            if value == old {
                value = old.wrapping_add(1) & mask;
            }
            let mut m = elf.to_vec();
            m[*at..at + size].copy_from_slice(&value.to_le_bytes()[..*size]);
            (format!("{name}={value:#x}"), m)
        })
        .collect()
}

/// A mutation fuzz of the loader against the kernel: one field of the ELF header or of a
/// program header of a dynamic and of a static program changed at a time, 300 mutants from
/// fixed seeds. Natively `execve` refuses a mutant, or the program starts (and exits or dies
/// of a signal, maybe at once); under `rtgrind --tool=none -q` it must be refused (one
/// `rtgrind: error:` line) exactly when the kernel refuses it, end the same way when it
/// starts, and never panic, crash or hang. Exceptions where agreement is impossible: none
/// among these mutants (a real 32-bit program, which the kernel runs and rtgrind refuses,
/// cannot come from one changed field).
#[test]
fn a_mutated_elf_is_refused_exactly_when_the_kernel_refuses_it() {
    let exec = common::compile_snippet("exec-direct", "c", EXEC, &["-O2"]);
    let src = "int main(void) { return 7; }\n";
    let programs =
        [("dynamic", common::compile_snippet("seven", "c", src, &["-O2"])), ("static", common::compile_snippet("seven-static", "c", src, &["-O2", "-static"]))];
    let dir = common::scratch_dir("mutants");
    // Every file is written before anything runs: a file still open for writing when another
    // thread forks would make execve fail with ETXTBSY.
    let mut cases = Vec::new();
    for (i, (kind, exe)) in programs.iter().enumerate() {
        let elf = std::fs::read(exe).unwrap();
        for (k, (what, bytes)) in mutants(&elf, 150, 27 + i as u64).into_iter().enumerate() {
            cases.push((format!("{kind} {what}"), write_file(&dir, &format!("{kind}-{k}"), &bytes, 0o755)));
        }
    }
    let disagree = Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                while let Some((what, path)) = cases.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                    let native = native_verdict(&common::run_native(&common::Cmd::new(&exec).arg(path)));
                    let o = common::run_rtgrind_within(["--tool=none", "-q"], &common::Cmd::new(path), std::time::Duration::from_secs(30));
                    let under = rtgrind_verdict(&o, what);
                    if native != under {
                        disagree.lock().unwrap().push(format!("{what}: natively {native:?}, under rtgrind {under:?}: {}", o.stderr_str().trim_end()));
                    }
                }
            });
        }
    });
    let disagree = disagree.into_inner().unwrap();
    assert!(disagree.is_empty(), "{} of {} mutants end otherwise than natively:\n{}", disagree.len(), cases.len(), disagree.join("\n"));
}

/// `elf` with the `size`-byte little-endian field at `at` set to `value`.
fn patched(elf: &[u8], at: usize, size: usize, value: u64) -> Vec<u8> {
    let mut m = elf.to_vec();
    m[at..at + size].copy_from_slice(&value.to_le_bytes()[..size]);
    m
}

/// The offset of the first program header of type `p_type`.
fn phdr_of_type(elf: &[u8], p_type: u32) -> usize {
    let phoff = u64::from_le_bytes(elf[32..40].try_into().unwrap()) as usize;
    (0..u16::from_le_bytes([elf[56], elf[57]]) as usize)
        .map(|i| phoff + 56 * i)
        .find(|&at| u32::from_le_bytes(elf[at..at + 4].try_into().unwrap()) == p_type)
        .unwrap()
}

/// What the kernel refuses, rtgrind refuses with its one line: a PT_INTERP past the end of
/// the file or not NUL-terminated (rtgrind ran such a program without its loader), program
/// header entries of another size than 56 (rtgrind ran it), an ELF class that is neither 32-
/// nor 64-bit for another machine (the message says so). Each is checked to be refused
/// natively too.
#[test]
fn malformed_headers_are_refused_as_the_kernel_refuses_them() {
    let exec = common::compile_snippet("exec-direct-refused", "c", EXEC, &["-O2"]);
    let elf = std::fs::read(common::compile_snippet("seven-refused", "c", "int main(void) { return 7; }\n", &["-O2"])).unwrap();
    let interp = phdr_of_type(&elf, 3);
    let filesz = u64::from_le_bytes(elf[interp + 32..interp + 40].try_into().unwrap());
    let cases: [(&str, Vec<u8>, &[&str]); 5] = [
        ("interp-past-eof", patched(&elf, interp + 8, 8, elf.len() as u64 - 4), &["PT_INTERP", "past the end"]),
        ("interp-unterminated", patched(&elf, interp + 32, 8, filesz - 1), &["PT_INTERP", "not NUL-terminated"]),
        ("interp-too-long", patched(&elf, interp + 32, 8, 4097), &["PT_INTERP"]),
        ("phentsize-64", patched(&elf, 54, 2, 64), &["program header entries of 64 bytes, not 56"]),
        ("class-3-aarch64", patched(&patched(&elf, 18, 2, 183), 4, 1, 3), &["class 3", "neither 32- nor 64-bit", "aarch64"]),
    ];
    let dir = common::scratch_dir("refused-headers");
    let files: Vec<_> = cases.iter().map(|(name, bytes, _)| write_file(&dir, name, bytes, 0o755)).collect();
    for ((name, _, phrases), path) in cases.iter().zip(&files) {
        let native = common::run_native(&common::Cmd::new(&exec).arg(path));
        assert_eq!(native_verdict(&native), Verdict::Refused, "{name}: {}", native.describe());
        expect_error(path, 126, phrases);
    }
}

/// The kernel never reads section headers: garbage there (offset past the file, a count,
/// entry size and string table index that make no sense) changes nothing, and rtgrind, which
/// refused such a program (goblin parsed them), runs it; its report of the program's crash,
/// which reads the program's symbols, degrades to addresses instead of failing.
#[test]
fn section_headers_are_ignored_as_by_the_kernel() {
    let src = "#include <stdio.h>\nint main(int argc, char **argv) { puts(\"started\"); fflush(stdout); if (argc > 1) *(volatile int *)0 = 1; return 7; }\n";
    let dir = common::scratch_dir("section-headers");
    for (kind, flags) in [("dynamic", &["-O2"][..]), ("static", &["-O2", "-static"][..])] {
        let elf = std::fs::read(common::compile_snippet(&format!("shdrs-{kind}"), "c", src, flags)).unwrap();
        let garbage = [(40, 8, u64::MAX - 7), (58, 2, 1), (60, 2, 0xffff), (62, 2, 0xfffe)];
        let mut mangled = elf.clone();
        for (k, &(at, size, value)) in garbage.iter().enumerate() {
            mangled = patched(&mangled, at, size, value);
            let p = write_file(&dir, &format!("{kind}-{k}"), &patched(&elf, at, size, value), 0o755);
            for args in [&[][..], &["crash"][..]] {
                let native = common::run_native(&common::Cmd::new(&p).args(args));
                let o = common::run_rtgrind(["-q", "--tool=none"], &common::Cmd::new(&p).args(args));
                assert_no_panic(&o);
                assert!(
                    native_verdict(&native) == rtgrind_verdict(&o, kind) && o.stdout == native.stdout,
                    "{kind} field {at}: native {}\n{}",
                    native.describe(),
                    o.describe()
                );
            }
        }
        let p = write_file(&dir, &format!("{kind}-all"), &mangled, 0o755);
        let o = common::run_rtgrind(["--tool=count"], &common::Cmd::new(&p).arg("crash"));
        assert_no_panic(&o);
        assert!(o.stdout_str() == "started\n" && o.stderr_str().contains("(SIGSEGV)"), "{kind}: {}", o.describe());
    }
}
