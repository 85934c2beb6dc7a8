//! Bad input: each case must give one clear line on stderr, `rtgrind: error: ...`, and the
//! documented exit status (127 missing file; 126 cannot execute: directory, no permission, not
//! ELF, 32-bit, not x86-64, missing interpreter; 2 usage errors; 125 an instruction rtgrind cannot
//! translate, named with its guest address), never a panic.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

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

/// A static `-nostdlib` program that prints `BEFORE` and then executes `insn` at the global
/// label `bad_insn`. Returns the executable and the label's address.
fn unsupported_program(name: &str, insn: &str) -> (PathBuf, u64) {
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

/// (`int $0x80` is no longer one: it makes the i386 system call, `fidelity::int_0x80_...`.)
#[test]
fn unsupported_far_pointer_load() {
    let (exe, addr) = unsupported_program("lfs", "lfs (%rsp), %eax");
    expect_unsupported(&exe, addr, &["lfs"]);
}

#[test]
fn unsupported_gs_relative_load() {
    let (exe, addr) = unsupported_program("gs-load", "mov %gs:0, %rax");
    expect_unsupported(&exe, addr, &["gs"]);
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
