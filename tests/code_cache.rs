//! The translation cache across runs (`--code-cache=DIR`, issue 29 steps 4 and 5): a second
//! run of a program installs its blocks from the images the first wrote, runs the same, and
//! takes nothing from the cache that no longer holds (changed code, damaged files).

use crate::common::{self, run_native, run_rtgrind, split_report_lines, Cmd, Output};
use std::path::Path;

/// A run under `--tool=none` with the cache in `dir` (no ASLR, as a search's runs: rtgrind's
/// own text and the libraries are where they were).
fn cached_run(cmd: &Cmd, dir: &Path) -> Output {
    let cache = format!("--code-cache={}", dir.display());
    let rt = run_rtgrind(["--tool=none", "--stats", "--repeatable=yes", &cache], cmd);
    common::assert_no_panic(&rt);
    rt
}

/// The figure just before `what` in the run's `--stats` lines.
fn stat(o: &Output, what: &str) -> u64 {
    let text = o.stderr_str();
    let line = text.lines().find(|l| l.contains("stats:") && l.contains(what)).unwrap_or_else(|| panic!("no `{what}` in:\n{}", o.describe()));
    let before = line[..line.find(what).unwrap()].trim_end();
    before.rsplit([' ', '(', ',']).next().unwrap().parse().unwrap()
}

/// The guest's own output: stdout, its stderr (rtgrind's lines left out) and the status.
fn guest_output(o: &Output) -> (Vec<u8>, Vec<u8>, String) {
    (o.stdout.clone(), split_report_lines(&o.stderr).1, o.status_text())
}

/// Two runs of `cmd` with one cache: the second installs at least 90% of the blocks the
/// first translated (the first installs none) and ends the same.
fn second_run_from_the_cache(name: &str, cmd: &Cmd) {
    let dir = common::scratch_dir(&format!("code-cache-{name}"));
    let first = cached_run(cmd, &dir);
    let second = cached_run(cmd, &dir);
    let translated = stat(&first, "blocks translated");
    assert_eq!(stat(&first, "blocks installed from the cache"), 0, "{}", first.describe());
    assert!(translated > 100, "{}", first.describe());
    let installed = stat(&second, "blocks installed from the cache");
    assert!(installed * 10 >= translated * 9, "{name}: {installed} of the {translated} blocks from the cache:\n{}", second.describe());
    assert!(stat(&second, "blocks translated") * 10 <= translated, "{name}:\n{}", second.describe());
    assert_eq!(guest_output(&first), guest_output(&second), "{name}: the run from the cache differs:\n{}\n{}", first.describe(), second.describe());
}

/// A guest program that exits, one that dies of SIGSEGV and one of SIGABRT (the cache is
/// written on each way out), python3 and perl.
#[test]
fn a_second_run_installs_its_blocks_from_the_cache() {
    for name in ["hello", "crash_segv", "crash_abort"] {
        let g = common::guest(name).unwrap();
        let cmd = g.cmd(&g.builds[0].1);
        let native = run_native(&cmd);
        second_run_from_the_cache(name, &cmd);
        // (And as natively: the status of a crash too.)
        let rt = cached_run(&cmd, &common::scratch_dir("code-cache-native"));
        assert_eq!(native.status_text(), rt.status_text(), "{name}");
    }
    let python = Cmd::new("/usr/bin/python3").args(["-c", "import json; print(json.dumps({'a': [1, 2]}))"]).env("PYTHONDONTWRITEBYTECODE", "1");
    second_run_from_the_cache("python3", &python);
    second_run_from_the_cache(
        "perl",
        &Cmd::new("/usr/bin/perl").args(["-e", "my %h = map { $_ => $_ * 2 } 1 .. 9; print join(',', map { $h{$_} } sort keys %h), \"\\n\""]),
    );
}

/// A program rebuilt at the same path with the same build ID (so every key is the same) and a
/// changed constant in one function: the blocks whose guest bytes changed are translated
/// anew, the others come from the cache, and the run prints the new program's result.
#[test]
fn blocks_of_changed_code_miss() {
    let source = |base: u32| {
        format!("#include <stdio.h>\n__attribute__((noinline)) int scale(int x) {{ return x * 7 + {base}; }}\nint main(int argc, char **argv) {{ printf(\"%d\\n\", scale(argc)); return 0; }}\n")
    };
    let flags = ["-O2", "-fPIE", "-pie", "-Wl,--build-id=0x0123456789abcdef0123456789abcdef01234567"];
    let dir = common::scratch_dir("code-cache-rebuilt");
    let exe = common::compile_snippet("code_cache_rebuilt", "c", &source(1234), &flags);
    let old = cached_run(&Cmd::new(&exe), &dir);
    assert_eq!(old.stdout_str(), "1241\n", "{}", old.describe());
    let exe = common::compile_snippet("code_cache_rebuilt", "c", &source(4321), &flags);
    let new = cached_run(&Cmd::new(&exe), &dir);
    assert_eq!(new.stdout_str(), "4328\n", "the old program's code ran:\n{}", new.describe());
    assert!(stat(&new, "blocks translated") > 0, "{}", new.describe());
    assert!(stat(&new, "blocks installed from the cache") * 10 >= stat(&old, "blocks translated") * 9, "{}", new.describe());
}

/// Damaged cache files (cut short, bytes changed, another format, not a cache file at all)
/// are not used: the run is right, its status the program's, and it says nothing of them.
#[test]
fn damaged_cache_files_are_not_used() {
    let g = common::guest("hello").unwrap();
    let cmd = g.cmd(&g.builds[0].1);
    let dir = common::scratch_dir("code-cache-damaged");
    let good = cached_run(&cmd, &dir);
    let file = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).find(|p| p.extension().is_some_and(|x| x == "rtgc")).expect("a cache file");
    let bytes = std::fs::read(&file).unwrap();
    let entries = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
    let payloads = 24 + 48 * entries;
    let mut flipped = bytes.clone();
    for b in &mut flipped[payloads..] {
        *b ^= 0x5a;
    }
    let mut foreign = bytes.clone();
    foreign[7] ^= 0x7f;
    let cases: [(&str, Vec<u8>); 6] = [
        ("cut in its index", bytes[..payloads / 2].to_vec()),
        ("cut in its images", bytes[..bytes.len() / 2].to_vec()),
        ("bytes changed", flipped),
        ("another format", foreign),
        ("not a cache file", b"not a cache file at all\n".to_vec()),
        ("empty", Vec::new()),
    ];
    for (what, damaged) in cases {
        common::reset_dir(&dir);
        std::fs::write(&file, &damaged).unwrap();
        let rt = cached_run(&cmd, &dir);
        assert_eq!(guest_output(&rt), guest_output(&good), "{what}:\n{}", rt.describe());
        let (report, _) = split_report_lines(&rt.stderr);
        // (The command line names the program's path, which may hold "cache".)
        let said: Vec<&String> =
            report.iter().filter(|l| !l.contains("stats:") && !l.contains("Command:") && (l.contains("cache") || l.to_lowercase().contains("panic"))).collect();
        assert!(said.is_empty(), "{what}: {said:?}");
        // (The whole images before the cut are good.)
        if what != "cut in its images" {
            assert!(
                stat(&rt, "blocks installed from the cache") * 10 < stat(&good, "blocks translated"),
                "{what}: damaged images were used:\n{}",
                rt.describe()
            );
        }
        match what {
            "bytes changed" => assert!(stat(&rt, "damaged entries skipped") > 0, "{}", rt.describe()),
            "cut in its images" => assert_eq!(stat(&rt, "files read"), 1, "{}", rt.describe()),
            _ => assert_eq!((stat(&rt, "files read"), stat(&rt, "skipped,")), (0, 1), "{what}:\n{}", rt.describe()),
        }
    }
}
