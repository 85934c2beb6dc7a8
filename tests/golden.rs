//! Golden tests of each tool's JSON: `--tool=suppress`, `switch`, `race` and `reorder` with
//! `--json`, and `rtgrind triage --json`, each on one shipped guest program, parsed and
//! compared structurally with `tests/golden/<tool>.json`. A change to what a tool reports (a
//! place, a result, a finding's kind, the chain of runs, a count) fails its test with the JSON
//! paths that differ.
//!
//! Only what legitimately differs between runs and machines is normalized: elapsed times (the
//! `seconds` fields, and "1.07 s" inside summaries) become "…"; guest addresses (hex numbers of
//! 8 digits or more: under rtgrind a program's, its libraries' and its stack's addresses all
//! have 12, and where they are depends on the machine's address space) become "0x…", while
//! shorter hex numbers (values a race read, offsets into a module or a function) are kept; an
//! absolute path (the scratch directory, the compiled program, the corpus's inputs) becomes
//! its file name.
//!
//! `RTGRIND_BLESS=1 cargo test --release --test tests -- golden::` rewrites the golden files
//! from this machine's runs instead of comparing (read the diff before committing it). They
//! hold glibc's lines as Debian 12's `libc6-dbg` gives them, as the other tests do.

use crate::common::{repo_root, rtgrind_raw, run_compiler, run_rtgrind, scratch_dir, Cmd, Output};
use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// `guest-programs/SOURCE` compiled with `flags` under its own name in a fresh directory of its
/// own (the places reported say `copy_paste.c`, as the README's, and no other test's build of
/// the same program can replace it mid-run).
fn build(source: &str, flags: &[&str]) -> PathBuf {
    let src = repo_root().join("guest-programs").join(source);
    let name = src.file_stem().unwrap().to_str().unwrap().to_string();
    let dir = scratch_dir(&format!("golden-{name}"));
    let copy = dir.join(src.file_name().unwrap());
    std::fs::copy(&src, &copy).unwrap();
    let exe = dir.join(&name);
    let mut args: Vec<OsString> = flags.iter().map(OsString::from).collect();
    args.extend(["-o".into(), exe.clone().into_os_string(), copy.into_os_string()]);
    run_compiler("gcc", &args).unwrap_or_else(|e| panic!("cannot build {source}: {e}"));
    exe
}

/// The report of a search's `--json`: the last line of standard output (the program's own
/// output comes before it).
fn report(out: &Output) -> Value {
    let stdout = out.stdout_str();
    let last = stdout.lines().last().unwrap_or_else(|| panic!("no JSON on standard output:\n{}", out.describe()));
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {last}\n{}", out.describe()))
}

/// Elapsed times, guest addresses and absolute paths made machine-independent (see the module's
/// comment); everything else as it was.
fn normalize(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (key, field) in map.iter_mut() {
                if key == "seconds" && field.is_number() {
                    *field = Value::String("…".into());
                } else {
                    normalize(field);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize),
        Value::String(s) => *s = normalize_text(s),
        _ => {}
    }
}

fn normalize_text(s: &str) -> String {
    use std::sync::OnceLock;
    static RULES: OnceLock<[(regex::Regex, &str); 3]> = OnceLock::new();
    let rules = RULES.get_or_init(|| {
        [
            (regex::Regex::new(r"0x[0-9a-fA-F]{8,}").unwrap(), "0x…"),
            (regex::Regex::new(r"\b[0-9]+\.[0-9]+ s\b").unwrap(), "… s"),
            // A path's directories, up to its last '/': a path starts a string or follows a
            // space, '=' or '(' (`--layout=/tmp/.../layout.json`).
            (regex::Regex::new(r#"(^|[\s=(])/[^\s;,()'"]*/"#).unwrap(), "$1"),
        ]
    });
    let mut s = s.to_string();
    for (re, with) in rules {
        s = re.replace_all(&s, *with).into_owned();
    }
    s
}

/// The JSON paths at which `golden` and `actual` differ, with both values.
fn differences(path: &str, golden: &Value, actual: &Value, out: &mut Vec<String>) {
    match (golden, actual) {
        (Value::Object(g), Value::Object(a)) => {
            let keys: std::collections::BTreeSet<&String> = g.keys().chain(a.keys()).collect();
            for k in keys {
                match (g.get(k), a.get(k)) {
                    (Some(gv), Some(av)) => differences(&format!("{path}.{k}"), gv, av, out),
                    (Some(gv), None) => out.push(format!("{path}.{k}: missing (golden: {gv})")),
                    (None, Some(av)) => out.push(format!("{path}.{k}: new: {av}")),
                    (None, None) => unreachable!(),
                }
            }
        }
        (Value::Array(g), Value::Array(a)) => {
            for (i, (gv, av)) in g.iter().zip(a).enumerate() {
                differences(&format!("{path}[{i}]"), gv, av, out);
            }
            for (i, gv) in g.iter().enumerate().skip(a.len()) {
                out.push(format!("{path}[{i}]: missing (golden: {gv})"));
            }
            for (i, av) in a.iter().enumerate().skip(g.len()) {
                out.push(format!("{path}[{i}]: new: {av}"));
            }
        }
        (g, a) if g != a => out.push(format!("{path}:\n    golden: {g}\n    actual: {a}")),
        _ => {}
    }
}

/// Compares `actual` (normalized here) with `tests/golden/<tool>.json`, or writes that file
/// with `RTGRIND_BLESS=1`.
fn check_golden(tool: &str, mut actual: Value) {
    normalize(&mut actual);
    let file = repo_root().join("tests/golden").join(format!("{tool}.json"));
    let pretty = serde_json::to_string_pretty(&actual).unwrap() + "\n";
    if std::env::var_os("RTGRIND_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, &pretty).unwrap();
        eprintln!("golden: wrote {}", file.display());
        return;
    }
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e} (RTGRIND_BLESS=1 writes it)", file.display()));
    let golden: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    if golden != actual {
        let mut diffs = Vec::new();
        differences("$", &golden, &actual, &mut diffs);
        panic!(
            "{tool}'s JSON differs from {} at {} places (RTGRIND_BLESS=1 rewrites the file if the change is meant):\n{}\n\nactual (normalized):\n{pretty}",
            file.display(),
            diffs.len(),
            diffs.join("\n")
        );
    }
}

/// The copy-paste pointer bug (README): three crashes in turn, then the alias's line; the chain
/// of four runs with what each used and suppressed, the failure, and the redzone and layout
/// runs that did not fail.
#[test]
fn suppress_json_is_the_golden_file() {
    let exe = build("bugs/copy_paste.c", &["-g", "-O0", "-fno-stack-protector"]);
    let out = run_rtgrind(["--tool=suppress", "--json"], &Cmd::new(&exe).stdin("1 2 3 100000000\n"));
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    check_golden("suppress", report(&out));
}

/// The decision table's `>=` for `>`: the critical predicate with its instance, outcome and
/// replay command, and the search's counts.
#[test]
fn switch_json_is_the_golden_file() {
    let exe = build("switch/decision.c", &["-g", "-O0"]);
    let expected = exe.with_file_name("expected");
    std::fs::write(&expected, "no advisory\nclimb\n").unwrap();
    let out =
        run_rtgrind(["--tool=switch".to_string(), "--json".into(), format!("--expected-output={}", expected.display())], &Cmd::new(&exe).args(["5", "7"]));
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    check_golden("switch", report(&out));
}

/// A result read without a join: two races, one harmful and one undecided, each with its
/// object, its threads' last synchronizations and both accesses' callers.
#[test]
fn race_json_is_the_golden_file() {
    let exe = build("races/unjoined_result.c", &["-g", "-O0", "-pthread"]);
    let out = run_rtgrind(["--tool=race", "--json"], &Cmd::new(&exe));
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    check_golden("race", report(&out));
}

/// A stack overflow onto two ints that crashes nothing natively: the first layout tried exposes
/// it; what it moved, what it could not, and the command that searches under it.
#[test]
fn reorder_json_is_the_golden_file() {
    let exe = build("reorder/stack_two_ints.c", &["-g", "-O0", "-fno-stack-protector"]);
    let layout = exe.with_file_name("layout.json");
    let out = run_rtgrind(["--tool=reorder".to_string(), "--json".into(), format!("--layout-out={}", layout.display())], &Cmd::new(&exe).arg("a".repeat(31)));
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    check_golden("reorder", report(&out));
}

/// Two inputs of the tokens corpus: one crashing (its record with suppress's whole report, its
/// group), one that does not crash; every record of `--json`, in order.
#[test]
fn triage_json_is_the_golden_file() {
    let exe = build("corpus/tokens.c", &["-g", "-O0", "-fno-stack-protector"]);
    let corpus = repo_root().join("guest-programs/corpus/tokens");
    let arg = |p: &Path| p.display().to_string();
    let out = rtgrind_raw(["triage", "--json", "-i", &arg(&corpus.join("t1")), &arg(&corpus.join("ok1")), "--", &arg(&exe), "@@"]);
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    let records: Vec<Value> = out.stdout_str().lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{}", out.describe()))).collect();
    check_golden("triage", Value::Array(records));
}

#[test]
fn normalization_keeps_values_and_offsets_and_drops_addresses_times_and_directories() {
    assert_eq!(normalize_text("SIGSEGV at 0x5655555552da copy_paste.c:24 (main)"), "SIGSEGV at 0x… copy_paste.c:24 (main)");
    assert_eq!(normalize_text("0x7FFFF32A71F4: start_thread (pthread_create.c:442)"), "0x…: start_thread (pthread_create.c:442)");
    assert_eq!(normalize_text("reads 0x3e8 in the run's order, 0x0 in the other"), "reads 0x3e8 in the run's order, 0x0 in the other");
    assert_eq!(normalize_text("_start+0x20 in prog; offset 0x1231"), "_start+0x20 in prog; offset 0x1231");
    assert_eq!(normalize_text("4 runs of the program, 1.07 s"), "4 runs of the program, … s");
    assert_eq!(normalize_text("/tmp/a/b/prog"), "prog");
    assert_eq!(
        normalize_text("saved as /t/x/layout.json; to find it: rtgrind --layout=/t/x/layout.json /t/x/prog aaa"),
        "saved as layout.json; to find it: rtgrind --layout=layout.json prog aaa"
    );
    assert_eq!(normalize_text("tokens.c:44 (main), inside memmove.S:279 (memcpy); 1/2"), "tokens.c:44 (main), inside memmove.S:279 (memcpy); 1/2");
    let mut v = serde_json::json!({"seconds": 1.5, "inputs": [{"seconds": 0.2, "runs": 5}], "pc": "0x565555555231"});
    normalize(&mut v);
    assert_eq!(v, serde_json::json!({"seconds": "…", "inputs": [{"seconds": "…", "runs": 5}], "pc": "0x…"}));
}
