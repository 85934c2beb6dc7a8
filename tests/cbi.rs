//! `--tool=cbi` on `guest-programs/suite/cbi_pred`: the predicate the subject was made for
//! (P1, `len > width` at line 69) ranks first by Importance with the value `answers.json`
//! computed independently, and the redundant one (P2, line 73) ranks second and is eliminated;
//! `--sample=1/1` counts as no sampling and `--sample=1/N` fewer; on `quota` built `-O2`, the
//! scalar pair of two variables in registers at the fault line ranks first; a suite too small for
//! the 95% Increase test says so and `--confidence=0` ranks it; a return's sign is
//! counted as the DWARF of the function called says (none for a void function, no `< 0` for an
//! unsigned one); the branch predicates' counts of a run are `--tool=count`'s executed and taken
//! counts of the same run (at `-O0` and `-O2`); a suite that cannot be ranked says why.

use crate::common::{run_rtgrind, run_rtgrind_within, Cmd};
use crate::spectra::{report, subject, subject_built, suite_file};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// `rtgrind --tool=cbi --json -j 2 --suite=DIR/suite.jsonl OPTIONS exe`.
fn cbi(options: &[&str], exe: &Path, dir: &Path) -> crate::common::Output {
    let mut opts = vec!["--tool=cbi".to_string(), "--json".into(), "-j".into(), "2".into(), format!("--suite={}", dir.join("suite.jsonl").display())];
    opts.extend(options.iter().map(|o| o.to_string()));
    run_rtgrind_within(&opts, &Cmd::new(exe), Duration::from_secs(900))
}

fn of_kind<'a>(r: &'a Value, kind: &str) -> Vec<&'a Value> {
    r["findings"].as_array().unwrap().iter().filter(|f| f["kind"] == kind).collect()
}

fn at_line(f: &Value, line: u32) -> bool {
    at(f, "cbi_pred.c", line)
}

fn at(f: &Value, file: &str, line: u32) -> bool {
    f["place"].as_str().unwrap().starts_with(&format!("{file}:{line} "))
}

/// The finding's scores and counts against answers.json's for the predicate.
fn same_as_answer(f: &Value, want: &Value) -> bool {
    let close = |a: &Value, b: &Value| (a.as_f64().unwrap() - b.as_f64().unwrap()).abs() < 1e-6;
    ["importance", "increase", "failure", "context"].iter().all(|k| close(&f["scores"][k], &want[k]))
        && f["failed_tests"] == want["F"]
        && f["passed_tests"] == want["S"]
        && f["observed_failed"] == want["F_observed"]
        && f["observed_passed"] == want["S_observed"]
}

#[test]
fn the_best_predicate_ranks_first_and_the_redundant_one_is_eliminated() {
    let (exe, dir, _) = subject("cbi_pred");
    let answers: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("answers.json")).unwrap()).unwrap();
    let (p1, p2) = (&answers["cbi_predicates"]["P1"], &answers["cbi_predicates"]["P2"]);
    let out = cbi(&["--top=20", "--sarif"], &exe, &dir);
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    let r = report(&out);
    // SARIF (the line before the JSON): a result per predicate, none for the baseline's lines.
    let sarif: Value = serde_json::from_str(out.stdout_str().lines().next().unwrap()).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let predicates = r["findings"].as_array().unwrap().iter().filter(|f| f["kind"] != "suspicious line").count();
    assert!(results.len() == predicates && results[0]["ruleId"] == "failure-predicting-predicate", "{sarif:#}");
    let ranked = of_kind(&r, "ranked predicate");
    assert!(at_line(ranked[0], 69) && ranked[0]["rank"] == 1 && same_as_answer(ranked[0], p1), "{:#}", ranked[0]);
    assert!(ranked[0]["message"].as_str().unwrap().ends_with("(on to line 70)"), "{}", ranked[0]["message"]);
    let second = ranked.iter().find(|f| at_line(f, 73)).expect("P2 in the ranking");
    assert!(second["rank"] == 2 && same_as_answer(second, p2), "{second:#}");
    // The elimination: P1 explains every failing test, so P2 is never selected.
    let selected = of_kind(&r, "selected predicate");
    assert_eq!(selected.len(), answers["cbi_elimination"].as_array().unwrap().len(), "{}", out.describe());
    assert!(at_line(selected[0], 69) && selected[0]["explains"].as_array().unwrap().len() == 9, "{:#}", selected[0]);
    assert!(!selected.iter().any(|f| at_line(f, 73)));
    // The text gives the line's source; the baseline is spectra's ranking of the fault.
    let text = out.stderr_str();
    assert!(text.contains("cbi:    1. cbi_pred.c:69 (main): the branch is not taken") && text.contains("if (len > width) /* P1 */"), "{text}");
    let baseline = of_kind(&r, "suspicious line");
    let fault = baseline.iter().find(|f| f["place"] == "cbi_pred.c:43").expect("the fault in the baseline");
    assert_eq!(fault["rank"].as_u64(), answers["ochiai_rank"]["43"].as_u64());
    // A scalar pair of the line before: len against main's other integer locals.
    assert!(ranked.iter().any(|f| at_line(f, 67) && f["message"].as_str().unwrap().contains("len == nlong (as len is stored)")), "{}", out.describe());
}

#[test]
fn sampling_one_in_one_counts_all_and_one_in_n_fewer() {
    let (exe, dir, _) = subject("cbi_pred");
    let all = report(&cbi(&[], &exe, &dir));
    let one = report(&cbi(&["--sample=1/1"], &exe, &dir));
    assert_eq!(all["findings"], one["findings"]);
    // One run's counts (t5's input 50 times): with 1/50, far fewer executions counted.
    let scratch = crate::common::scratch_dir("cbi_sample");
    let input = std::fs::read(dir.join("inputs/t5.in")).unwrap().repeat(50);
    let total = |sample: &str| -> u64 {
        let out_file = scratch.join(format!("counts{}", sample.replace('/', "-")));
        let mut opts = vec!["--tool=cbi".to_string(), format!("--cbi-out={}", out_file.display())];
        opts.extend((!sample.is_empty()).then(|| format!("--sample={sample}")));
        let out = run_rtgrind(&opts, &Cmd::new(&exe).arg("4").stdin(input.clone()));
        assert_eq!(out.status.code(), Some(0), "{}", out.describe());
        let text = std::fs::read_to_string(&out_file).unwrap();
        text.lines().map(|l| l.split('\t').nth(3).unwrap().parse::<u64>().unwrap()).sum()
    };
    let (n, sampled) = (total(""), total("1/50"));
    assert!(n > 2000 && sampled > 0 && sampled * 10 < n, "{sampled} of {n} executions counted");
}

#[test]
fn a_scalar_pair_of_registers_ranks_first_in_optimized_code() {
    // quota's fault: `charged = used + reserved` without the clamp to `limit`. Built -O2,
    // `charged` is in r12 and `limit` in rcx where it is assigned (DWARF location lists).
    let (exe, dir, faults) = subject_built("quota", "quota_o2", &["-g", "-O2"]);
    let out = cbi(&["--top=5"], &exe, &dir);
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    let r = report(&out);
    let ranked = of_kind(&r, "ranked predicate");
    let first = ranked[0];
    assert!(at(first, "quota_o2.c", faults[0]) && first["rank"] == 1, "{}", out.describe());
    assert!(first["message"].as_str().unwrap().ends_with("charged > limit (as charged is stored)"), "{first:#}");
    assert!(first["failed_tests"] == 8 && first["passed_tests"] == 0, "{first:#}");
    assert!(ranked[1..].iter().all(|f| f["rank"].as_u64() > Some(1)), "{}", out.describe());
    let selected = of_kind(&r, "selected predicate");
    assert!(at(selected[0], "quota_o2.c", faults[0]) && selected[0]["explains"].as_array().unwrap().len() == 8, "{:#}", selected[0]);
}

#[test]
fn a_suite_too_small_for_the_confidence_asked_says_so() {
    // missing_clause's best predicate (the fault line's branch) has an Increase of 0.085 from
    // 16 tests where it is true: not above 0 at 95% confidence; --confidence=0 keeps it.
    let (exe, dir, fault) = subject("missing_clause");
    let out = cbi(&[], &exe, &dir);
    let r = report(&out);
    assert!(out.status.code() == Some(0) && r["result"] == "inconclusive", "{}", out.describe());
    assert!(r["reason"].as_str().unwrap().contains("no predicate has an Increase above 0 at 95% confidence"), "{}", out.describe());
    let out = cbi(&["--confidence=0"], &exe, &dir);
    let selected = report(&out);
    let selected = of_kind(&selected, "selected predicate");
    assert!(out.status.code() == Some(1) && at(selected[0], "missing_clause.c", fault), "{}", out.describe());
    assert_eq!(selected[0]["explains"].as_array().unwrap().len(), 5, "{:#}", selected[0]);
}

#[test]
fn a_return_is_counted_as_the_callees_dwarf_types_it() {
    // `bump` returns nothing, though the instruction after its call reads rax; `biggest`
    // returns an unsigned value that is negative as a signed one; atoi has no DWARF here.
    let exe = crate::common::compile_snippet(
        "cbi_returns",
        "c",
        r#"#include <stdlib.h>
__attribute__((noinline)) unsigned biggest(int x) { return x > 0 ? 0xfffffff0u + (unsigned)x % 3 : 0u; }
__attribute__((noinline)) void bump(int *p) { *p += 1; }
int main(int argc, char **argv)
{
    int n = atoi(argv[1]);
    unsigned u = biggest(n);
    bump(&n);
    __asm__ volatile("mov %%rax, %%rdx" ::: "rdx");
    return u > 5 && n > 0 ? 0 : 1;
}
"#,
        &["-g", "-O0"],
    );
    let counts = crate::common::scratch_dir("cbi_returns").join("predicates");
    let out = run_rtgrind(["--tool=cbi".to_string(), format!("--cbi-out={}", counts.display())], &Cmd::new(&exe).arg("1"));
    assert!(out.status.success(), "{}", out.describe());
    let text = std::fs::read_to_string(&counts).unwrap();
    let of = |callee: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.ends_with(&format!("\t{callee}")))
            .map(|l| l.split('\t').filter(|f| !f.is_empty()).skip(3).collect::<Vec<_>>().join(" "))
            .collect()
    };
    let kind = |callee: &str| text.lines().find(|l| l.ends_with(&format!("\t{callee}"))).map(|l| l.split('\t').next().unwrap().to_string());
    // (executions, < 0, == 0, > 0, callee)
    assert_eq!((kind("biggest"), of("biggest")), (Some("return-unsigned".into()), vec!["1 0 0 1 biggest".to_string()]), "{text}");
    assert_eq!((kind("atoi"), of("atoi")), (Some("return".into()), vec!["1 0 0 1 atoi".to_string()]), "{text}");
    assert_eq!(kind("bump"), None, "{text}");
}

#[test]
fn branch_predicates_count_what_count_counts() {
    let (exe, dir, _) = subject("cbi_pred");
    branch_counts_agree(&exe, Cmd::new(&exe).arg("4").stdin(std::fs::read(dir.join("inputs/t5.in")).unwrap()), "cbi_differential");
    let (exe, dir, _) = subject_built("quota", "quota_o2_differential", &["-g", "-O2"]);
    branch_counts_agree(&exe, Cmd::new(&exe).arg("300").stdin(std::fs::read(dir.join("inputs/t28.in")).unwrap()), "cbi_differential_o2");
}

/// One run's branch predicates under cbi count what `--tool=count` counts of the same run.
fn branch_counts_agree(exe: &Path, cmd: Cmd, scratch: &str) {
    let scratch = crate::common::scratch_dir(scratch);
    let (preds, blocks) = (scratch.join("predicates"), scratch.join("coverage"));
    let a = run_rtgrind(["--tool=cbi".to_string(), format!("--cbi-out={}", preds.display())], &cmd);
    let b = run_rtgrind(["--tool=count".to_string(), format!("--coverage-out={}", blocks.display())], &cmd);
    assert!(a.status.success() && b.status.success(), "{}\n{}", a.describe(), b.describe());
    // cbi: "branch <at> <k> <executions> <taken> ..."; count: "<module> <start> <end> <branch>
    // <runs> <taken>" per basic block (a branch in several blocks' ends summed).
    let mut ours: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for l in std::fs::read_to_string(&preds).unwrap().lines().filter(|l| l.starts_with("branch\t")) {
        let f: Vec<&str> = l.split('\t').collect();
        ours.insert(f[1].to_string(), (f[3].parse().unwrap(), f[4].parse().unwrap()));
    }
    let exe_name = std::fs::canonicalize(exe).unwrap();
    let mut theirs: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for l in std::fs::read_to_string(&blocks).unwrap().lines() {
        let f: Vec<&str> = l.split('\t').collect();
        if f[3] == "0" || std::fs::canonicalize(f[0]).ok() != Some(exe_name.clone()) {
            continue;
        }
        let c = theirs.entry(f[3].to_string()).or_default();
        c.0 += f[4].parse::<u64>().unwrap();
        c.1 += f[5].parse::<u64>().unwrap();
    }
    assert!(ours.len() > 10, "{ours:?}");
    assert_eq!(ours, theirs);
}

#[test]
fn a_suite_that_cannot_be_ranked_says_why() {
    let (exe, dir, _) = subject("cbi_pred");
    let scratch = crate::common::scratch_dir("cbi_bad_suites");
    let passing = suite_file(&scratch, "passing.jsonl", 3, |i| format!("{{\"name\":\"p{i}\",\"args\":[\"70\"],\"expected_exit\":0}}"));
    let out = run_rtgrind(["-q", "--tool=cbi", &format!("--suite={}", passing.display())], &Cmd::new(&exe));
    assert!(out.status.code() == Some(2) && out.stderr_str().contains("all 3 tests pass: there is no failure to isolate"), "{}", out.describe());
    let failing = suite_file(&scratch, "failing.jsonl", 2, |i| format!("{{\"name\":\"f{i}\",\"args\":[\"70\"],\"expected_exit\":3}}"));
    let out = run_rtgrind(["-q", "--tool=cbi", &format!("--suite={}", failing.display())], &Cmd::new(&exe));
    assert!(out.status.code() == Some(2) && out.stderr_str().contains("all 2 tests fail"), "{}", out.describe());
    let suite = format!("--suite={}", dir.join("suite.jsonl").display());
    for (args, says) in [
        (vec!["--tool=cbi".to_string()], "--tool=cbi needs a test suite"),
        (vec!["--tool=cbi".into(), suite.clone(), "--sample=1/0".into()], "'1/0' is not a sampling rate 1/N"),
        (vec!["--tool=cbi".into(), suite.clone(), "--sample=2".into()], "'2' is not a sampling rate 1/N"),
        (vec!["--tool=cbi".into(), suite.clone(), "--confidence=97".into()], "'97' is not a confidence --tool=cbi knows"),
        (vec!["--tool=count".into(), "--sample=1/2".into()], "--sample"),
    ] {
        let out = run_rtgrind(&args, &Cmd::new(&exe));
        let err = out.stderr_str();
        assert!(out.status.code() == Some(2) && err.lines().count() <= 3 && err.contains(says), "{args:?}: {}", out.describe());
    }
}
