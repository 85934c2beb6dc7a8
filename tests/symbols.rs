//! Reports and symbols (issue 26): source lines read in-process (no binutils needed at run
//! time; `objcopy`, where there, inflates a compressed debug file once into a cache;
//! inlined functions said with the function they were inlined into, C++ names demangled, DWARF
//! in a separate debug file found through `.gnu_debuglink` or (glibc's, from `libc6-dbg`) by
//! build ID, a corrupt line table costing its lines only, DWARF 4 and 5 and compressed debug
//! sections alike), and the JSON outputs' schemas.

use crate::common::{compile_snippet, rtgrind_raw, run_compiler, run_rtgrind, scratch_dir, Cmd};
use std::path::{Path, PathBuf};

/// A function inlined at -O2 reads through a NULL its caller left.
const INLINED: &str = r#"#include <stdlib.h>
struct table { int *cells; int n; };
static inline int total(const struct table *t) {
    int s = 0;
    for (int i = 0; i < t->n; i++)
        s += t->cells[i] * (i + 1); /* crash */
    return s;
}
int main(int argc, char **argv) {
    struct table t = { NULL, argc + 3 };
    if (argc > 1)
        t.cells = calloc(16, sizeof(int));
    return total(&t); /* call */
}
"#;

/// A template's method, out of line, reads through a NULL.
const TEMPLATE: &str = r#"#include <cstdio>
template <typename T> struct Box {
    T *p;
    __attribute__((noinline)) T get() const { return *p; } /* crash */
};
int main(int argc, char **) {
    Box<int> b{nullptr};
    if (argc > 2) { static int x; b.p = &x; }
    std::printf("%d\n", b.get());
}
"#;

/// The line of `source` marked `/* MARK */`.
fn line(source: &str, mark: &str) -> usize {
    source.lines().position(|l| l.contains(&format!("/* {mark} */"))).unwrap() + 1
}

/// Runs `PROG` under `--tool=suppress` with no binutils to be found (`PATH` empty of them):
/// the original run's crash line.
fn crash_line(exe: &Path) -> String {
    let out = run_rtgrind(["--tool=suppress"], &Cmd::new(exe).env("PATH", "/nonexistent"));
    let err = out.stderr_str();
    err.lines().find(|l| l.contains("1. original run: SIGSEGV at 0x")).unwrap_or_else(|| panic!("{}", out.describe())).to_string()
}

#[test]
fn an_inlined_function_is_said_with_its_caller_and_a_template_demangled_without_binutils() {
    let exe = compile_snippet("inlined_total", "c", INLINED, &["-g", "-O2"]);
    let crash = crash_line(&exe);
    let expected = format!("inlined_total.c:{} (total), inlined into main at inlined_total.c:{}", line(INLINED, "crash"), line(INLINED, "call"));
    assert!(crash.ends_with(&expected), "{crash}");
    let exe = compile_snippet("template_box", "cpp", TEMPLATE, &["-g", "-O0"]);
    let crash = crash_line(&exe);
    assert!(crash.ends_with(&format!("template_box.cpp:{} (Box<int>::get() const)", line(TEMPLATE, "crash"))), "{crash}");
}

/// glibc's lines come from `libc6-dbg`'s file under `/usr/lib/debug/.build-id/`, found by the
/// build ID of the mapped libc: sprintf's store is said at its own line inside glibc.
#[test]
fn glibc_frames_have_lines_from_the_build_id_debug_file() {
    let source = std::fs::read_to_string(crate::common::repo_root().join("guest-programs/bugs/frame_smash.c")).unwrap();
    let exe = compile_snippet("frame_smash_no_binutils", "c", &source, &["-g", "-O0", "-fno-stack-protector"]);
    let out = run_rtgrind(["--tool=suppress"], &Cmd::new(&exe).arg("-2147483648").env("PATH", "/nonexistent"));
    let err = out.stderr_str();
    let head = err.lines().find(|l| l.contains("first point of memory corruption:")).unwrap_or_else(|| panic!("{}", out.describe()));
    assert!(head.ends_with(&format!("frame_smash_no_binutils.c:{} (emboss), inside iovsprintf.c:98 (__vsprintf_internal)", line(&source, "root"))), "{head}");
}

/// The line of `source` that has `text`.
fn line_with(source: &str, text: &str) -> usize {
    source.lines().position(|l| l.contains(text)).unwrap_or_else(|| panic!("no {text}")) + 1
}

/// The frames of a Valgrind-style stack in `lines` after the first line holding `after`:
/// each `at`/`by` line's "function (file:line)", the address checked and left out.
fn stack_after(lines: &[&str], after: &str) -> Vec<String> {
    let from = lines.iter().position(|l| l.contains(after)).unwrap_or_else(|| panic!("no {after}"));
    let frames = lines[from + 1..].iter().map(|l| l.split_once("suppress: ").map_or(*l, |(_, r)| r).trim_start());
    frames
        .take_while(|l| l.starts_with("at 0x") || l.starts_with("by 0x"))
        .map(|l| {
            let (address, frame) = l[3..].split_once(": ").unwrap();
            assert!(address.len() > 2 && address[2..].chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase()), "{l}");
            frame.to_string()
        })
        .collect()
}

/// The crash site and the root cause each come with their call stack as Valgrind prints one:
/// glibc's frames with their lines (libc6-dbg), the program's up to `main`; `--num-callers`
/// cuts both, in the text and the JSON alike; out of its range it is refused in one line.
#[test]
fn the_crash_site_and_the_root_cause_have_valgrind_style_stacks() {
    let source = std::fs::read_to_string(crate::common::repo_root().join("guest-programs/bugs/frame_smash.c")).unwrap();
    let exe = compile_snippet("frame_smash_stacks", "c", &source, &["-g", "-O0", "-fno-stack-protector"]);
    let at = |function: &str, text: &str| format!("{function} (frame_smash_stacks.c:{})", line_with(&source, text));
    let out = run_rtgrind(["--tool=suppress", "--json"], &Cmd::new(&exe).arg("-2147483648"));
    let err = out.stderr_str();
    let lines: Vec<&str> = err.lines().collect();
    let root = [
        "__vsprintf_internal (iovsprintf.c:98)".to_string(),
        "__sprintf (sprintf.c:30)".into(),
        at("emboss", "/* root */"),
        at("print_word", "emboss(param);"),
        at("main", "print_word(&opts"),
    ];
    assert_eq!(stack_after(&lines, "instruction `"), root, "{err}");
    let crash = [at("print_word", "if (o->debug)"), at("main", "print_word(&opts")];
    assert_eq!(stack_after(&lines, "1. original run: SIGSEGV"), crash, "{err}");
    let report: crate::model::Report = serde_json::from_str(out.stdout_str().trim()).unwrap();
    let without_address = |frames: &[String]| frames.iter().map(|f| f.split_once(": ").unwrap().1.to_string()).collect::<Vec<_>>();
    assert_eq!(without_address(&report.findings[0].frames), root);
    assert_eq!(without_address(&report.failure.as_ref().unwrap().frames), crash);

    let out = run_rtgrind(["--tool=suppress", "--json", "--num-callers=2"], &Cmd::new(&exe).arg("-2147483648"));
    let err = out.stderr_str();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(stack_after(&lines, "instruction `"), root[..2], "{err}");
    let report: crate::model::Report = serde_json::from_str(out.stdout_str().trim()).unwrap();
    assert_eq!(without_address(&report.findings[0].frames), root[..2]);
    for bad in ["--num-callers=0", "--num-callers=501", "--num-callers=x"] {
        let out = run_rtgrind(["--tool=suppress", bad], &Cmd::new(&exe));
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", out.describe());
        assert!(out.stderr_str().lines().count() == 1 && out.stderr_str().contains("--num-callers"), "{bad}: {}", out.describe());
    }
}

/// An inlined function is a frame of its own at its caller's address, as Valgrind says it.
#[test]
fn an_inlined_function_is_a_frame_of_its_own_in_a_stack() {
    let exe = compile_snippet("inlined_stack", "c", INLINED, &["-g", "-O2"]);
    let out = run_rtgrind(["--tool=suppress"], &Cmd::new(&exe));
    let err = out.stderr_str();
    let lines: Vec<&str> = err.lines().collect();
    let expected = [format!("total (inlined_stack.c:{})", line(INLINED, "crash")), format!("main (inlined_stack.c:{})", line(INLINED, "call"))];
    assert_eq!(stack_after(&lines, "1. original run: SIGSEGV"), expected, "{err}");
    let addresses: Vec<&str> = lines
        .iter()
        .filter(|l| l.contains("suppress:        at 0x") || l.contains("suppress:        by 0x"))
        .map(|l| l.split(" 0x").nth(1).unwrap().split(':').next().unwrap())
        .collect();
    assert!(addresses.len() == 2 && addresses[0] == addresses[1], "{err}");
}

/// `rtgrind symbolize` on a binary whose DWARF was moved to a separate file named by
/// `.gnu_debuglink` (beside it, then in its `.debug/` directory) says what it says of the
/// binary that kept its DWARF; with the line table corrupt it says `??` and goes on.
#[test]
fn a_separate_debug_file_is_found_through_its_debuglink() {
    let exe = compile_snippet("debuglink_table", "c", INLINED, &["-g", "-O2"]);
    let dir = scratch_dir("symbols-debuglink");
    let main = symbol_address(&exe, "main");
    let addrs: Vec<String> = (0..24).map(|k| format!("{:#x}", main + k)).collect();
    let symbolize = |module: &Path| {
        let out = rtgrind_raw(["symbolize".to_string(), "-e".into(), module.display().to_string()].into_iter().chain(addrs.iter().cloned()));
        assert_eq!(out.status.code(), Some(0), "{}", out.describe());
        out.stdout_str()
    };
    let whole = symbolize(&exe);
    assert!(whole.lines().count() == 24 && whole.lines().all(|l| l.starts_with("debuglink_table.c:")), "{whole}");
    let prog = dir.join("prog");
    std::fs::copy(&exe, &prog).unwrap();
    let tool = |args: &[&str]| {
        let out = std::process::Command::new(args[0]).args(&args[1..]).current_dir(&dir).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    tool(&["objcopy", "--only-keep-debug", "prog", "prog.debug"]);
    tool(&["objcopy", "--strip-debug", "--add-gnu-debuglink=prog.debug", "prog"]);
    assert_eq!(symbolize(&prog), whole, "debug file beside the program");
    std::fs::create_dir_all(dir.join(".debug")).unwrap();
    std::fs::rename(dir.join("prog.debug"), dir.join(".debug/prog.debug")).unwrap();
    assert_eq!(symbolize(&prog), whole, "debug file in .debug/");
    std::fs::remove_file(dir.join(".debug/prog.debug")).unwrap();
    assert!(symbolize(&prog).lines().all(|l| l == "??"), "no debug file: no lines");
    // A line table of garbage: no lines, no failure.
    std::fs::write(dir.join("garbage"), vec![0xffu8; 64]).unwrap();
    std::fs::copy(&exe, dir.join("bad")).unwrap();
    tool(&["objcopy", "--update-section", ".debug_line=garbage", "bad"]);
    let bad = symbolize(&dir.join("bad"));
    assert_eq!(bad.lines().count(), 24, "{bad}");
    assert!(bad.lines().all(|l| !l.contains("debuglink_table.c:")), "{bad}");
}

/// How a build's DWARF is stored, checked with `readelf`.
enum Form {
    /// Every compilation unit of this DWARF version.
    Version(u32),
    /// `.debug_info` and `.debug_line` compressed (SHF_COMPRESSED, flag C) with this type.
    Compressed(&'static str),
    /// The older GNU form: `.zdebug_info` and `.zdebug_line`, no `.debug_info`.
    Zdebug,
}

/// `readelf ARGS path`'s standard output.
fn readelf(args: &[&str], path: &Path) -> String {
    let out = std::process::Command::new("readelf").args(args).arg(path).output().unwrap();
    assert!(out.status.success(), "readelf {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts the DWARF of `exe` is stored as `form` says.
fn assert_form(exe: &Path, form: &Form) {
    let sections = readelf(&["-S", "-W"], exe);
    // A section's row: "[29] .debug_info PROGBITS ADDR OFF SIZE ES FLAGS LK INF AL".
    let flags = |name: &str| {
        let row = sections.lines().find(|l| l.split_whitespace().nth(1) == Some(name) || l.split_whitespace().nth(2) == Some(name));
        row.map(|r| r.split_whitespace().rev().nth(3).unwrap_or_default().to_string())
    };
    match form {
        Form::Version(v) => {
            let dump = readelf(&["--debug-dump=info"], exe);
            let versions: Vec<&str> = dump.lines().filter_map(|l| l.trim().strip_prefix("Version:")).map(str::trim).collect();
            assert!(!versions.is_empty() && versions.iter().all(|x| *x == v.to_string()), "{}: DWARF versions {versions:?}, not {v}", exe.display());
        }
        Form::Compressed(kind) => {
            let headers = readelf(&["-t"], exe);
            for name in [".debug_info", ".debug_line"] {
                assert_eq!(flags(name).as_deref(), Some("C"), "{name} of {} not compressed:\n{sections}", exe.display());
                // `readelf -t` says the compression type a few lines under the section's name.
                let at = headers.lines().position(|l| l.trim_end().ends_with(&format!("] {name}"))).unwrap();
                assert!(
                    headers.lines().skip(at + 1).take(4).any(|l| l.trim().starts_with(&format!("{kind},"))),
                    "{name} of {} is not {kind}:\n{headers}",
                    exe.display()
                );
            }
        }
        Form::Zdebug => {
            assert!(flags(".zdebug_info").is_some() && flags(".zdebug_line").is_some() && flags(".debug_info").is_none(), "{}:\n{sections}", exe.display());
        }
    }
}

/// The DWARF versions gcc writes and compressed debug sections (zlib and zstd, and the older
/// `.zdebug_` sections of zlib-gnu) give the same lines, inlined functions with their caller,
/// as the plain `-g` build. (gcc 12's `-gz` knows only zlib: the linker compresses with zstd.)
#[test]
fn dwarf_4_and_5_and_compressed_debug_sections_give_the_same_lines() {
    let dir = scratch_dir("symbols-dwarf-forms");
    // One source name for every build: their lines are compared as text.
    let source = dir.join("dwarf_forms.c");
    std::fs::write(&source, INLINED).unwrap();
    let build = |out: &str, flags: &[&str]| -> PathBuf {
        let exe = dir.join(out);
        let mut args: Vec<std::ffi::OsString> = ["-O2"].iter().chain(flags).map(Into::into).collect();
        args.extend(["-o".into(), exe.clone().into_os_string(), source.clone().into_os_string()]);
        run_compiler("gcc", &args).unwrap_or_else(|e| panic!("{flags:?}: {e}"));
        exe
    };
    let symbolize = |exe: &Path| {
        let main = symbol_address(exe, "main");
        let args = ["symbolize".to_string(), "-e".into(), exe.display().to_string()].into_iter().chain((0..24).map(|k| format!("{:#x}", main + k)));
        let out = rtgrind_raw(args);
        assert_eq!(out.status.code(), Some(0), "{}", out.describe());
        out.stdout_str()
    };
    let plain = symbolize(&build("plain", &["-g"]));
    assert!(plain.lines().count() == 24 && plain.lines().all(|l| l.starts_with("dwarf_forms.c:")), "{plain}");
    assert!(plain.contains(&format!("(total), inlined into main at dwarf_forms.c:{}", line(INLINED, "call"))), "{plain}");
    for (out, flags, form) in [
        ("dwarf4", &["-gdwarf-4"][..], Form::Version(4)),
        ("dwarf5", &["-gdwarf-5"], Form::Version(5)),
        ("zlib", &["-g", "-gz=zlib"], Form::Compressed("ZLIB")),
        ("zlib_dwarf4", &["-gdwarf-4", "-gz=zlib"], Form::Compressed("ZLIB")),
        ("zlib_gnu", &["-g", "-gz=zlib-gnu"], Form::Zdebug),
        ("zstd", &["-g", "-Wl,--compress-debug-sections=zstd"], Form::Compressed("ZSTD")),
    ] {
        let exe = build(out, flags);
        assert_form(&exe, &form);
        assert_eq!(symbolize(&exe), plain, "{flags:?}");
    }
}

/// The file address of `name` in the ELF at `path` (its symbol table, read with `nm`).
fn symbol_address(path: &Path, name: &str) -> u64 {
    let out = std::process::Command::new("nm").arg("-P").arg(path).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let l = text.lines().find(|l| l.starts_with(&format!("{name} T "))).unwrap_or_else(|| panic!("no {name} in {text}"));
    u64::from_str_radix(l.split_whitespace().nth(2).unwrap(), 16).unwrap()
}

#[test]
fn symbolize_refuses_bad_input_in_one_line() {
    for (args, says) in [
        (vec!["symbolize", "-e", "/nonexistent/prog", "0x10"], "cannot read '/nonexistent/prog'"),
        (vec!["symbolize", "-e", "/bin/true", "zz"], "'zz' is no hex address"),
        (vec!["symbolize", "0x10"], "symbolize: "),
    ] {
        let out = rtgrind_raw(&args);
        let err = out.stderr_str();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", out.describe());
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("rtgrind: error: symbolize: ") && err.contains(says), "{args:?}: {err}");
    }
}

/// Asserts `document` (JSON text) is valid against the JSON Schema `schema`.
fn assert_valid(schema: &serde_json::Value, document: &str) {
    let validator = jsonschema::validator_for(schema).expect("the schema compiles");
    let value: serde_json::Value = serde_json::from_str(document).unwrap_or_else(|e| panic!("{e}: {document}"));
    let errors: Vec<String> = validator.iter_errors(&value).map(|e| format!("{e} at {}", e.instance_path)).collect();
    assert!(errors.is_empty(), "not valid:\n{}\n{document}", errors.join("\n"));
}

/// `docs/schemas/{report,triage}.schema.json` are what `rtgrind schema` makes from the models'
/// types and doc comments (the documentation of every field stays true), and real outputs
/// validate against them: a suppress search's and a race search's `--json`, a triage's
/// `triage.json`.
#[test]
fn the_documented_json_schemas_are_the_models_and_the_outputs_follow_them() {
    let root = crate::common::repo_root();
    let mut schemas = Vec::new();
    for which in ["report", "triage"] {
        let out = rtgrind_raw(["schema", which]);
        assert_eq!(out.status.code(), Some(0), "{}", out.describe());
        let file = root.join(format!("docs/schemas/{which}.schema.json"));
        let committed = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert_eq!(out.stdout_str().trim(), committed.trim(), "{} is not the model's: `rtgrind schema {which} > {}`", file.display(), file.display());
        let schema: serde_json::Value = serde_json::from_str(&committed).unwrap();
        schemas.push(schema);
        // docs/REPORTS.md has each field in a table, with what it is.
        let tables = rtgrind_raw(["schema", which, "--markdown"]).stdout_str();
        let doc = std::fs::read_to_string(root.join("docs/REPORTS.md")).unwrap();
        let marker = format!("<!-- rtgrind schema {which} --markdown -->\n\n");
        let documented = doc.split_once(&marker).and_then(|(_, rest)| rest.split_once("<!-- end -->")).map(|(t, _)| t).unwrap_or_default();
        assert_eq!(documented, tables, "docs/REPORTS.md's {which} tables are not `rtgrind schema {which} --markdown`");
        let undocumented: Vec<&str> = tables.lines().filter(|l| l.starts_with("| `") && l.ends_with("|  |")).collect();
        assert!(tables.contains("| `schema` | integer | yes |") && undocumented.is_empty(), "fields without a description: {undocumented:?}");
    }
    let source = std::fs::read_to_string(root.join("guest-programs/bugs/frame_smash.c")).unwrap();
    let exe = compile_snippet("frame_smash_json", "c", &source, &["-g", "-O0", "-fno-stack-protector"]);
    let out = run_rtgrind(["--tool=suppress", "--json"], &Cmd::new(&exe).arg("-2147483648"));
    assert_valid(&schemas[0], out.stdout_str().lines().last().unwrap_or_default());
    let racy = std::fs::read_to_string(root.join("guest-programs/races/racy_counter.c")).unwrap();
    let exe = compile_snippet("racy_counter_json", "c", &racy, &["-g", "-O0", "-pthread"]);
    let out = run_rtgrind(["--tool=race", "--json"], &Cmd::new(&exe));
    assert_valid(&schemas[0], out.stdout_str().lines().last().unwrap_or_default());
    let records = std::fs::read_to_string(root.join("guest-programs/corpus/records.c")).unwrap();
    let exe = compile_snippet("records_json", "c", &records, &["-g", "-O0", "-fno-stack-protector"]);
    let dir = scratch_dir("schema-triage").join("out");
    let input = root.join("guest-programs/corpus/records/a1");
    let out = rtgrind_raw([
        "triage".to_string(),
        "-o".into(),
        dir.display().to_string(),
        "-i".into(),
        input.display().to_string(),
        "--".into(),
        exe.display().to_string(),
        "@@".into(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    assert_valid(&schemas[1], &std::fs::read_to_string(dir.join("triage.json")).unwrap());
    let bad = rtgrind_raw(["schema", "other"]);
    assert_eq!(bad.status.code(), Some(2), "{}", bad.describe());
    assert!(bad.stderr_str().starts_with("rtgrind: error: schema: "), "{}", bad.describe());
}

/// `rtgrind completions SHELL` and `rtgrind manpage` are made from the options' definition:
/// the bash script is valid bash and completes the options `--help` names, the man page is roff
/// that `man` renders with them; a shell it does not know, or arguments to `manpage`, are one
/// line of error.
#[test]
fn completions_and_the_man_page_are_made_from_the_options() {
    let help = rtgrind_raw(["--help"]).stdout_str();
    let bash = rtgrind_raw(["completions", "bash"]);
    assert_eq!(bash.status.code(), Some(0), "{}", bash.describe());
    let script = bash.stdout_str();
    for option in ["--tool", "--log-file", "--sched", "--repeatable"] {
        assert!(help.contains(option) && script.contains(option), "{option}: {script}");
    }
    let dir = scratch_dir("completions");
    std::fs::write(dir.join("rtgrind.bash"), &script).unwrap();
    let check = std::process::Command::new("bash").arg("-n").arg(dir.join("rtgrind.bash")).output().unwrap();
    assert!(check.status.success(), "not valid bash: {}", String::from_utf8_lossy(&check.stderr));
    let zsh = rtgrind_raw(["completions", "zsh"]);
    assert!(zsh.stdout_str().starts_with("#compdef rtgrind"), "{}", zsh.describe());
    let page = rtgrind_raw(["manpage"]);
    assert_eq!(page.status.code(), Some(0), "{}", page.describe());
    let roff = page.stdout_str();
    assert!(roff.contains(".TH rtgrind 1") && roff.contains("\\-\\-log\\-file"), "{roff}");
    for (args, says) in
        [(vec!["completions", "tcsh"], "say which shell"), (vec!["completions"], "say which shell"), (vec!["manpage", "x"], "takes no arguments")]
    {
        let out = rtgrind_raw(&args);
        let err = out.stderr_str();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", out.describe());
        assert!(err.lines().count() == 1 && err.contains(says), "{args:?}: {err}");
    }
}

/// A search's progress line: by default on a terminal only (a pseudo-terminal from
/// util-linux's `script`) and not with `-q`; with `--progress=always` into a pipe too, with
/// `--progress=never` nowhere; the report the same in every case.
#[test]
fn a_search_shows_its_progress_on_a_terminal_unless_told_otherwise() {
    let source = std::fs::read_to_string(crate::common::repo_root().join("guest-programs/bugs/frame_smash.c")).unwrap();
    let exe = compile_snippet("frame_smash_progress", "c", &source, &["-g", "-O0", "-fno-stack-protector"]);
    let shows = |text: &str| text.contains("suppress: run 2: ");
    let reports = |text: &str| text.contains("first point of memory corruption: frame_smash_progress.c:");
    let piped = |extra: &[&str]| {
        let out = run_rtgrind(["--tool=suppress"].iter().chain(extra), &Cmd::new(&exe).arg("-2147483648"));
        assert!(reports(&out.stderr_str()), "{}", out.describe());
        out.stderr_str()
    };
    assert!(!shows(&piped(&[])), "no terminal, no progress");
    assert!(shows(&piped(&["--progress=always"])), "--progress=always");
    // On a terminal: what `script` saw of the pseudo-terminal it gave rtgrind.
    let on_terminal = |extra: &str| {
        let command = format!("{} --tool=suppress {extra} {} -2147483648", crate::common::rtgrind_bin().display(), exe.display());
        let out = std::process::Command::new("script").args(["-qec", &command, "/dev/null"]).output().expect("util-linux's script");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(reports(&text), "{extra}: {text}");
        text
    };
    assert!(shows(&on_terminal("")), "a terminal: progress");
    assert!(!shows(&on_terminal("-q")), "-q: no progress");
    assert!(!shows(&on_terminal("--progress=never")), "--progress=never");
    let bad = run_rtgrind(["--tool=suppress", "--progress=sometimes"], &Cmd::new(&exe));
    assert_eq!(bad.status.code(), Some(2), "{}", bad.describe());
    assert!(bad.stderr_str().lines().count() == 1 && bad.stderr_str().contains("--progress"), "{}", bad.describe());
}

/// A Rust function is named as Rust names it (its v0 or legacy mangled symbol demangled, the
/// hash left out), with its line.
#[test]
fn a_rust_function_is_demangled() {
    let dir = scratch_dir("symbols-rust");
    let source = dir.join("rust_names.rs");
    std::fs::write(
        &source,
        "#[inline(never)]\nfn boom(p: *const u32) -> u32 {\n    unsafe { std::ptr::read_volatile(p) }\n}\nfn main() {\n    println!(\"{}\", boom(&7));\n}\n",
    )
    .unwrap();
    let exe = dir.join("rust_names");
    let built = std::process::Command::new("rustc").args(["-g", "-C", "opt-level=0", "-o"]).arg(&exe).arg(&source).output().expect("rustc");
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let nm = std::process::Command::new("nm").arg(&exe).output().unwrap();
    let symbols = String::from_utf8_lossy(&nm.stdout).into_owned();
    let boom = symbols.lines().find(|l| l.contains("4boom")).unwrap_or_else(|| panic!("no boom in {symbols}"));
    let (address, mangled) = (boom.split_whitespace().next().unwrap(), boom.split_whitespace().last().unwrap());
    assert!(mangled.starts_with("_ZN") || mangled.starts_with("_R"), "{mangled}");
    let out = rtgrind_raw(["symbolize", "-e", &exe.display().to_string(), &format!("0x{address}")]);
    assert_eq!(out.stdout_str().trim(), "rust_names.rs:2 (rust_names::boom)", "{}", out.describe());
}

/// glibc's DWARF (`libc6-dbg`) is compressed: it is inflated once, with binutils' `objcopy`,
/// into rtgrind's cache directory (`$XDG_CACHE_HOME/rtgrind/dwarf`) and read from there by
/// every later process; the lines are the same made, read from the cache, and without
/// `objcopy` (nothing cached: the sections are inflated in-process, as before).
#[test]
fn a_compressed_debug_file_is_inflated_once_into_a_cache() {
    let libc = std::fs::canonicalize("/lib/x86_64-linux-gnu/libc.so.6").unwrap();
    let out = std::process::Command::new("nm").args(["-D", "-P"]).arg(&libc).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let qsort = text.lines().find(|l| l.starts_with("qsort@@")).unwrap_or_else(|| panic!("no qsort in {text}"));
    let addr = format!("0x{}", qsort.split_whitespace().nth(2).unwrap());
    let symbolize = |cache: &Path, path: &str| {
        let mut c = std::process::Command::new(crate::common::rtgrind_bin());
        c.args(["symbolize", "-e"]).arg(&libc).arg(&addr).env("XDG_CACHE_HOME", cache).env("PATH", path);
        let out = c.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let cached = |cache: &Path| std::fs::read_dir(cache.join("rtgrind/dwarf")).map_or(Vec::new(), |d| d.flatten().map(|e| e.path()).collect::<Vec<_>>());
    let cache = scratch_dir("symbols-dwarf-cache");
    let made = symbolize(&cache, &std::env::var("PATH").unwrap());
    assert!(made.starts_with("msort.c:") && made.contains("qsort"), "{made}");
    let copies = cached(&cache);
    assert_eq!(copies.len(), 1, "{copies:?}");
    let sections = readelf(&["-S", "-W"], &copies[0]);
    let info = sections.lines().find(|l| l.contains(" .debug_info ")).unwrap_or_else(|| panic!("{sections}"));
    assert!(!info.split_whitespace().any(|flag| flag == "C"), "still compressed: {info}");
    assert_eq!(symbolize(&cache, "/nonexistent"), made, "read from the cache");
    let none = scratch_dir("symbols-dwarf-no-cache");
    assert_eq!(symbolize(&none, "/nonexistent"), made, "without objcopy");
    assert!(cached(&none).is_empty(), "{:?}", cached(&none));
}
