//! `--tool=vr` (value replacement) on the seeded-fault subjects of `guest-programs/suite/`: the
//! fault line's rank where the technique finds it (README's "Which technique should find each
//! fault"), its IVMPs named, the iterative technique finding a second fault, and a suite that
//! cannot be ranked.

use crate::common::{run_rtgrind, run_rtgrind_within, Cmd};
use crate::spectra::{findings_at, report, subject_as, suite_file};
use std::path::PathBuf;
use std::time::Duration;

/// A subject built for this tool's tests, its directory and its fault lines.
fn subject(name: &str) -> (PathBuf, PathBuf, Vec<u32>) {
    subject_as(name, &format!("vr_{name}"))
}

/// `rtgrind --tool=vr --json OPTIONS exe` on the subject's suite.
fn vr(dir: &std::path::Path, exe: &std::path::Path, options: &[&str]) -> crate::common::Output {
    let mut opts = vec!["--tool=vr".to_string(), "--json".into(), format!("--suite={}", dir.join("suite.jsonl").display())];
    opts.extend(options.iter().map(|o| o.to_string()));
    run_rtgrind_within(&opts, &Cmd::new(exe), Duration::from_secs(1200))
}

/// The fault line's rank and its IVMPs' count, checked against the expected.
fn ranks(name: &str, rank: u64, ivmps: usize) -> serde_json::Value {
    let (exe, dir, faults) = subject(name);
    let out = vr(&dir, &exe, &[]);
    assert_eq!(out.status.code(), Some(1), "{name}: {}", out.describe());
    let r = report(&out);
    let f = findings_at(&r, faults[0]);
    assert_eq!(f.len(), 1, "{name}: {}", out.describe());
    assert_eq!((f[0]["rank"].as_u64(), f[0]["ivmps"].as_array().map_or(0, Vec::len)), (Some(rank), ivmps), "{name}: {}", out.describe());
    // Every replacement the search would make from the start is accounted for.
    assert!(r["tried"].as_u64().unwrap() + r["runs_avoided"].as_u64().unwrap() == r["candidates"].as_u64().unwrap(), "{r}");
    r
}

#[test]
fn relop_the_fault_ties_with_the_lines_carrying_the_weight() {
    // Line 23 has an IVMP in all 6 failing tests; so has the call `tier = tier_of(grams)`,
    // with the same coverage: rank 2. The function's `{` line (its prologue storing the
    // argument) is no statement: it has none.
    let r = ranks("relop", 2, 6);
    let brace = findings_at(&r, 20);
    assert!(brace.iter().all(|f| f["ivmps"].as_array().is_none_or(Vec::is_empty)), "{brace:?}");
    let f = &findings_at(&r, 23)[0];
    let tests: Vec<&str> = f["ivmps"].as_array().unwrap().iter().map(|i| i["test"].as_str().unwrap()).collect();
    assert_eq!(tests, ["t3", "t6", "t8", "t10", "t17", "t26"]);
    assert!(f["ivmps"].as_array().unwrap().iter().all(|i| i["from"] != i["to"] && i["instance"].as_u64() >= Some(1)), "{f}");
    // The IVMP found in a forked child makes the test pass when replayed from the start.
    let (exe, dir, _) = subject("relop");
    let t3 = &f["ivmps"][0];
    let spec = format!("--vr-replace={}:{}:{}:{}", t3["pc"].as_str().unwrap(), t3["instance"], t3["use_index"], t3["to"]);
    let input = format!("--stdin-file={}", dir.join("inputs/t3.in").display());
    let out = run_rtgrind(["--tool=vr", "--repeatable=yes", &input, &spec], &Cmd::new(&exe).arg("1"));
    assert_eq!(out.stdout, std::fs::read(dir.join("expected/t3.out")).unwrap(), "{}", out.describe());
    assert!(out.stderr_str().contains(&format!("instance {} of `{}`", t3["instance"], t3["instruction"].as_str().unwrap())), "{}", out.describe());
    let out = run_rtgrind(["--tool=none", "--repeatable=yes", &input], &Cmd::new(&exe).arg("1"));
    assert_ne!(out.stdout, std::fs::read(dir.join("expected/t3.out")).unwrap(), "{}", out.describe());
}

#[test]
fn offbyone_the_fault_ranks_first() {
    ranks("offbyone", 1, 5);
}

#[test]
fn wrong_var_the_fault_ranks_first() {
    ranks("wrong_var", 1, 5);
}

#[test]
fn missing_clause_the_fault_ranks_about_third() {
    ranks("missing_clause", 3, 5);
}

#[test]
fn the_text_names_each_top_lines_ivmps() {
    let (exe, dir, _) = subject("offbyone");
    let out = run_rtgrind_within(
        ["--tool=vr", "--top=2", &format!("--suite={}", dir.join("tests").display()).replace("--suite=", "--suite-dir=")],
        &Cmd::new(&exe),
        Duration::from_secs(1200),
    );
    let text = out.stderr_str();
    let first = text.lines().position(|l| l.contains("vr:    1. vr_offbyone.c:")).unwrap_or_else(|| panic!("{}", out.describe()));
    assert!(text.lines().nth(first + 1).is_some_and(|l| l.contains("/* FAULT */")), "{text}");
    let ivmp = text.lines().nth(first + 2).unwrap_or_default();
    assert!(ivmp.contains("instance") && ivmp.contains(" in test t") && ivmp.contains(" -> ") && ivmp.contains("makes it pass"), "{text}");
    assert!(text.contains("replacements run, each forked at its instance"), "{text}");
}

#[test]
fn two_faults_b_ranks_first_then_a_once_bs_failures_are_explained() {
    let (exe, dir, faults) = subject("two_faults");
    assert_eq!(faults, [46, 55]);
    let out = vr(&dir, &exe, &["--faults=2"]);
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    let r = report(&out);
    let rank_in = |line: u32, fault: u64| findings_at(&r, line).iter().find(|f| f["fault"].as_u64() == Some(fault)).and_then(|f| f["rank"].as_u64());
    // B (n for n - 1) has IVMPs in 5 of its 6 failing tests: first in the first ranking.
    assert_eq!(rank_in(55, 1), Some(1), "{}", out.describe());
    // A has none (no integer makes the division give its .5): with B's failures explained, it
    // ranks after the lines with an IVMP in t19 (51 and 54 always; sum_of's 37, where 20 -> 10
    // makes the variance come out right by chance, in this session's runs but not in the last
    // session's CI: see issue 28's note), tied by Tarantula with two lines of its loop.
    let second: Vec<&serde_json::Value> = r["findings"].as_array().unwrap().iter().filter(|f| f["fault"].as_u64() == Some(2)).collect();
    let ivmps_in = |line: u32| {
        findings_at(&r, line)
            .iter()
            .filter(|f| f["fault"].as_u64() == Some(2))
            .flat_map(|f| f["ivmps"].as_array().cloned().unwrap_or_default())
            .collect::<Vec<_>>()
    };
    for line in [51, 54] {
        assert!(ivmps_in(line).iter().any(|i| i["test"] == "t19"), "line {line}: {}", out.describe());
    }
    let with_ivmp = second.iter().filter(|f| f["scores"]["ivmp"].as_f64() > Some(0.0)).count() as u64;
    assert!(with_ivmp == 2 || with_ivmp == 3, "{}", out.describe());
    assert_eq!(rank_in(46, 2), Some(with_ivmp + 3), "{}", out.describe());
}

#[test]
fn a_suite_without_failures_says_so() {
    let (exe, _, _) = subject("offbyone");
    let scratch = crate::common::scratch_dir("vr_bad_suites");
    let passing = suite_file(&scratch, "passing.jsonl", 3, |i| format!("{{\"name\":\"p{i}\",\"expected_exit\":0}}"));
    let out = run_rtgrind(["-q", "--tool=vr", &format!("--suite={}", passing.display())], &Cmd::new(&exe));
    assert!(out.status.code() == Some(2) && out.stderr_str().contains("all 3 tests pass: there is no failure to localize"), "{}", out.describe());
    let out = run_rtgrind(["--tool=vr"], &Cmd::new(&exe));
    assert!(out.status.code() == Some(2) && out.stderr_str().contains("needs a test suite"), "{}", out.describe());
    let out = run_rtgrind(["--tool=vr", "--vr-replace=zz"], &Cmd::new(&exe));
    assert!(out.status.code() == Some(2) && out.stderr_str().contains("invalid --vr-replace value 'zz'"), "{}", out.describe());
}
