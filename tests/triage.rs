//! `rtgrind triage` (issue 25) on `guest-programs/corpus/`: inputs grouped by root cause, not
//! by crash site (two bugs crashing at the same sites are two groups, one bug crashing at three
//! sites is one); flaky, hanging, non-crashing and unreadable inputs listed as such; stable
//! fingerprints; bad usage refused with one line before any work.

use crate::common::{compile_snippet, repo_root, rtgrind_raw, scratch_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    repo_root().join("guest-programs/corpus")
}

/// `guest-programs/corpus/NAME.c` built as the corpus's README says.
fn program(name: &str) -> PathBuf {
    let source = std::fs::read_to_string(corpus().join(format!("{name}.c"))).unwrap();
    compile_snippet(name, "c", &source, &["-g", "-O0", "-fno-stack-protector"])
}

/// `NAME.c:LINE` of the line marked `/* MARK */`.
fn marked(name: &str, mark: &str) -> String {
    marks(name, mark).into_iter().next().unwrap_or_else(|| panic!("no {mark} in {name}.c"))
}

/// `NAME.c:LINE` of every line marked `/* MARK */`.
fn marks(name: &str, mark: &str) -> Vec<String> {
    let text = std::fs::read_to_string(corpus().join(format!("{name}.c"))).unwrap();
    text.lines().enumerate().filter(|(_, l)| l.contains(&format!("/* {mark} */"))).map(|(i, _)| format!("{name}.c:{}", i + 1)).collect()
}

/// Runs `rtgrind triage OPTS -- PROG @@` with the results in a new directory: its output and
/// what it wrote (triage.json).
fn triage(opts: &[&str], prog: &Path) -> (crate::common::Output, Value) {
    let (run, t, _) = triage_in(opts, prog);
    (run, t)
}

/// `triage`, with the results' directory too.
fn triage_in(opts: &[&str], prog: &Path) -> (crate::common::Output, Value, PathBuf) {
    let out = scratch_dir("triage").join("out");
    let mut args: Vec<String> = vec!["triage".into(), "-o".into(), out.display().to_string(), "-j".into(), "2".into()];
    args.extend(opts.iter().map(|s| s.to_string()));
    args.extend(["--".into(), prog.display().to_string(), "@@".into()]);
    let run = rtgrind_raw(&args);
    let json = std::fs::read_to_string(out.join("triage.json")).unwrap_or_else(|e| panic!("no triage.json ({e}): {}", run.describe()));
    (run, serde_json::from_str(&json).unwrap(), out)
}

/// The members of each group (file names), in order, with the group's place and crash sites.
fn groups(t: &Value) -> Vec<(Vec<String>, String, Vec<String>, String)> {
    t["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let names = g["members"].as_array().unwrap().iter().map(|m| file_name(m.as_str().unwrap())).collect();
            let sites = g["crash_sites"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect();
            (names, g["place"].as_str().unwrap().to_string(), sites, g["fingerprint"].as_str().unwrap().to_string())
        })
        .collect()
}

fn file_name(p: &str) -> String {
    Path::new(p).file_name().unwrap().to_string_lossy().into_owned()
}

/// Each input's status, by file name.
fn statuses(t: &Value) -> Vec<(String, String)> {
    t["inputs"].as_array().unwrap().iter().map(|i| (file_name(i["path"].as_str().unwrap()), i["status"].as_str().unwrap().to_string())).collect()
}

/// records.c: two bugs overwrite the same pointer, which both crash through at the same two
/// sites. Grouping by crash site would make two groups of the wrong kind (by site); by root
/// cause, the strcpy's inputs are one group and the off-by-one store's another, each with both
/// crash sites.
#[test]
fn two_bugs_crashing_at_the_same_sites_are_two_groups() {
    let exe = program("records");
    let (run, t) = triage(&[&format!("-i={}", corpus().join("records").display())], &exe);
    assert_eq!(run.status.code(), Some(0), "{}", run.describe());
    let g = groups(&t);
    assert_eq!(g.len(), 2, "{g:?}");
    let crashes = marks("records", "crash");
    let (call, show) = (&crashes[0], &crashes[1]);
    assert_eq!((g[0].0.clone(), g[1].0.clone()), (vec!["a1".to_string(), "a2".into()], vec!["b1".to_string(), "b2".into()]), "{g:?}");
    assert!(g[0].1.starts_with(&format!("{} (main)", marked("records", "root: A"))), "{g:?}");
    assert!(g[1].1.starts_with(&format!("{} (main)", marked("records", "root: B"))), "{g:?}");
    for (_, _, sites, _) in &g {
        assert_eq!(sites.len(), 2, "{g:?}");
        assert!(sites.iter().any(|s| s.starts_with(&format!("SIGSEGV at {call} (call)"))), "{g:?}");
        assert!(sites.iter().any(|s| s.starts_with(&format!("SIGSEGV at {show} (show)"))), "{g:?}");
    }
    assert_eq!(statuses(&t).iter().filter(|(_, s)| s == "no-crash").map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["ok1", "ok2"]);
    let err = run.stderr_str();
    assert!(err.contains("triage: 6 inputs in ") && err.contains(": 4 root cause found, 2 no crash; 2 root causes"), "{err}");
    // Checked groups: every member re-run with its group's root cause suppressed from the
    // start did not fail.
    assert_eq!(t["groups"].as_array().unwrap().iter().map(|g| g["confirmed"].as_u64().unwrap()).collect::<Vec<_>>(), [2, 2]);
    assert!(err.contains("2 inputs, 2 crash sites (2 of 2 confirmed)"), "{err}");
}

/// Asserts `path` is valid against the JUnit XML schema beside the project
/// (`../shared/schemas/junit.xsd`, read there), with `xmllint` (Debian's libxml2-utils).
fn assert_valid_junit(path: &Path) {
    let schema = repo_root().join("../shared/schemas/junit.xsd");
    let out = std::process::Command::new("xmllint").arg("--noout").arg("--schema").arg(&schema).arg(path).output().expect("xmllint runs (libxml2-utils)");
    assert!(out.status.success(), "not valid JUnit XML: {}", String::from_utf8_lossy(&out.stderr));
}

/// Regression mode: against a baseline, a new root cause makes the exit status 1; a fixed or
/// unchanged one does not.
#[test]
fn a_new_root_cause_against_a_baseline_fails_the_run() {
    let exe = program("records");
    let input = |n: &str| corpus().join("records").join(n).display().to_string();
    let (first, _, only_a) = triage_in(&["-i", &input("a1")], &exe);
    assert_eq!(first.status.code(), Some(0), "{}", first.describe());
    let base = format!("--baseline={}", only_a.join("triage.json").display());
    let junit = scratch_dir("triage-junit").join("junit.xml");
    let junit_opt = format!("--junit={}", junit.display());
    let (both, t, both_dir) = triage_in(&["-i", &input("a1"), &input("b1"), &base, &junit_opt, "--sarif"], &exe);
    assert_eq!(both.status.code(), Some(1), "{}", both.describe());
    // The JUnit report: valid against the schema, b1's test case failing (its root cause is
    // new), a1's not; the SARIF document: valid, one result per root cause.
    assert_valid_junit(&junit);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("tests=\"2\" failures=\"1\""), "{xml}");
    let b1 = xml.split("<testcase ").find(|c| c.contains("records/b1\"")).unwrap();
    assert!(b1.contains("<failure message=\"new root cause: records.c:52 (main)\" type=\"new-root-cause\">"), "{xml}");
    assert!(!xml.split("<testcase ").find(|c| c.contains("records/a1\"")).unwrap().contains("<failure"), "{xml}");
    let sarif = both.stdout_str();
    crate::common::assert_valid_sarif(&sarif);
    let doc: Value = serde_json::from_str(&sarif).unwrap();
    let results = doc["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[1]["partialFingerprints"]["rtgrindRootCause/v1"], t["groups"][1]["fingerprint"]);
    assert_eq!(results[1]["locations"][0]["physicalLocation"]["region"]["startLine"].as_u64(), Some(52));
    let c = &t["comparison"];
    assert_eq!((c["new"].as_array().unwrap().len(), c["fixed"].as_array().unwrap().len(), c["unchanged"].as_array().unwrap().len()), (1, 0, 1), "{c}");
    assert!(both.stderr_str().contains(": 1 new, 0 fixed, 1 unchanged") && both.stderr_str().contains("] NEW records.c:52"), "{}", both.describe());
    let base = format!("--baseline={}", both_dir.display());
    let (fixed, _) = triage(&["-i", &input("b1"), &base], &exe);
    assert_eq!(fixed.status.code(), Some(0), "{}", fixed.describe());
    assert!(fixed.stderr_str().contains(": 0 new, 1 fixed, 1 unchanged"), "{}", fixed.describe());
    let (same, _) = triage(&["-i", &input("a1"), &input("b1"), &base], &exe);
    assert_eq!(same.status.code(), Some(0), "{}", same.describe());
    assert!(same.stderr_str().contains(": 0 new, 0 fixed, 2 unchanged"), "{}", same.describe());
}

/// Shards (`--shard=I/N`, by content hash) merged with `rtgrind triage merge` give what one
/// run over the whole corpus gives (but the time); a missing shard is refused.
#[test]
fn shards_merged_equal_one_run() {
    let exe = program("records");
    let dir = format!("-i={}", corpus().join("records").display());
    let (_, whole) = triage(&[&dir], &exe);
    let (_, s0, d0) = triage_in(&[&dir, "--shard=0/2"], &exe);
    let (_, s1, d1) = triage_in(&[&dir, "--shard=1/2"], &exe);
    let (n0, n1) = (s0["inputs"].as_array().unwrap().len(), s1["inputs"].as_array().unwrap().len());
    assert!(n0 > 0 && n1 > 0 && n0 + n1 == 6, "{n0} + {n1}");
    let merged_dir = scratch_dir("triage-merged").join("out");
    let merge = rtgrind_raw(["triage", "merge", "-o", &merged_dir.display().to_string(), &d0.display().to_string(), &d1.display().to_string()]);
    assert_eq!(merge.status.code(), Some(0), "{}", merge.describe());
    let merged: Value = serde_json::from_str(&std::fs::read_to_string(merged_dir.join("triage.json")).unwrap()).unwrap();
    // (What differs from run to run: the times.)
    let essence = |t: &Value| {
        let inputs: Vec<Value> = t["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| serde_json::json!([i["path"], i["index"], i["status"], i["group"], i["confirmed"], i["crash"], i["failed_runs"]]))
            .collect();
        (inputs, t["groups"].clone())
    };
    assert_eq!(essence(&merged), essence(&whole));
    let missing = rtgrind_raw(["triage", "merge", &d0.display().to_string()]);
    assert_eq!(missing.status.code(), Some(2), "{}", missing.describe());
    assert!(missing.stderr_str().contains("missing: 1/2"), "{}", missing.describe());
}

/// tokens.c: one heap overflow whose inputs crash at three sites (one inside the C library,
/// said at the program's call) is one group with three crash sites.
#[test]
fn one_bug_crashing_at_three_sites_is_one_group() {
    let exe = program("tokens");
    let (_, t) = triage(&[&format!("-i={}", corpus().join("tokens").display())], &exe);
    let g = groups(&t);
    assert_eq!(g.len(), 1, "{g:?}");
    assert_eq!(g[0].0, ["t1", "t2", "t3"]);
    assert!(g[0].1.starts_with(&format!("{} (main)", marked("tokens", "root: A"))), "{g:?}");
    assert_eq!(g[0].2.len(), 3, "{g:?}");
    let free = marks("tokens", "crash").pop().unwrap();
    assert!(g[0].2.iter().any(|s| s.starts_with(&format!("SIGABRT at {free} (main), inside "))), "{g:?}");
    assert!(statuses(&t).contains(&("ok1".to_string(), "no-crash".to_string())), "{t}");
}

/// dice.c: an input whose crash depends on the random bytes is flaky (2 of the 5 seeds fail;
/// its root cause found from one that did), one that loops is killed at -t and listed as a
/// timeout, one that crashes every time has a root cause of its own.
#[test]
fn flaky_and_hanging_inputs_are_listed_as_such() {
    let exe = program("dice");
    let (run, t) = triage(&[&format!("-i={}", corpus().join("dice").display()), "-t", "3"], &exe);
    let inputs = t["inputs"].as_array().unwrap();
    let by_name = |n: &str| inputs.iter().find(|i| file_name(i["path"].as_str().unwrap()) == n).unwrap();
    let flaky = by_name("flaky1");
    assert_eq!((flaky["status"].as_str(), flaky["failed_runs"].as_u64(), flaky["runs"].as_u64()), (Some("flaky"), Some(2), Some(5)), "{flaky}");
    assert_eq!(by_name("hang1")["status"], "timeout");
    assert_eq!(by_name("ok1")["status"], "no-crash");
    let g = groups(&t);
    assert_eq!(g.len(), 2, "{g:?}");
    assert!(g[0].0 == ["crash1"] && g[0].1.starts_with(&marked("dice", "root: B")), "{g:?}");
    assert!(g[1].0 == ["flaky1"] && g[1].1.starts_with(&marked("dice", "root: A")), "{g:?}");
    let err = run.stderr_str();
    assert!(err.contains("triage: flaky: ") && err.contains("flaky1 (failed in 2 of 5 runs)"), "{err}");
    assert!(err.contains("hang1 (its run with seed 0 did not end in 3 s: killed)"), "{err}");
}

/// jobs.c with `--tool=race`: a worker checks a shared pointer and uses it while another
/// thread clears it, for two pointers cleared by two threads. Each input fails only in some
/// schedules (the probes try random ones: flaky or failing in all); its root cause is the
/// clearing write's race, found by replaying a failing probe's schedule. The inputs of one
/// pointer are one group whichever field they crash reading (two sites), the two pointers'
/// groups crash at the same two sites; every member is confirmed by its check; the
/// fingerprints stay with inputs removed, and the SARIF is valid.
#[test]
fn races_are_grouped_by_their_write() {
    let exe = program("jobs");
    let dir = corpus().join("jobs");
    let (run, t) = triage(&["--tool=race", &format!("-i={}", dir.display()), "-t", "20", "--sarif"], &exe);
    assert_eq!(run.status.code(), Some(0), "{}", run.describe());
    crate::common::assert_valid_sarif(&run.stdout_str());
    let g = groups(&t);
    assert_eq!(g.iter().map(|g| g.0.clone()).collect::<Vec<_>>(), [["a1", "a2"], ["b1", "b2"]], "{g:?}");
    let sites = marks("jobs", "crash: verbose").into_iter().chain(marks("jobs", "crash: level")).map(|l| format!("SIGSEGV at {l} (show)")).collect::<Vec<_>>();
    for (k, (root, func)) in [("root: A", "closer"), ("root: B", "reloader")].into_iter().enumerate() {
        assert!(g[k].1.starts_with(&format!("data race of {} ({func}) and ", marked("jobs", root))), "{g:?}");
        let mut crashed = g[k].2.clone();
        crashed.sort();
        assert_eq!(crashed, sites, "{g:?}");
    }
    assert_eq!(t["groups"][0]["what"], format!("race write {} (closer)", marked("jobs", "root: A")));
    for (name, status) in statuses(&t) {
        let expected: &[&str] = if name == "ok1" { &["no-crash"] } else { &["flaky", "root-cause"] };
        assert!(expected.contains(&status.as_str()), "{name}: {status}: {t}");
    }
    let err = run.stderr_str();
    // Checked: each member's failing schedule replayed with the group's racing write
    // suppressed from the start does not fail (and without it fails again).
    assert_eq!(err.matches("2 inputs, 2 crash sites (2 of 2 confirmed)").count(), 2, "{err}");
    let (_, some) = triage(&["--tool=race", "-i", &dir.join("b2").display().to_string(), &dir.join("a1").display().to_string(), "-t", "20"], &exe);
    let prints = |g: &[(Vec<String>, String, Vec<String>, String)]| g.iter().map(|g| g.3.clone()).collect::<Vec<_>>();
    let mut again = prints(&groups(&some));
    again.reverse();
    assert_eq!(again, prints(&g));
}

/// `--expose`: tokens/quiet1's 20-character token overruns its 16-byte block into malloc's
/// slack, which crashes nothing: without `--expose` it is no crash; with it, heap redzones make
/// the overrun a failure at the block's free, whose writer is the memcpy (the bytes it copied
/// keep the input's origin): the same root cause, and group, as the input that crashes. It is
/// not checked (a plain run of it does not fail either way); ok1 stays no crash.
#[test]
fn expose_finds_a_corruption_that_crashes_nothing() {
    let exe = program("tokens");
    let dir = corpus().join("tokens");
    let [quiet, ok, crash] = ["quiet1", "ok1", "t1"].map(|n| dir.join(n).display().to_string());
    let (_, plain) = triage(&["-i", &quiet, &ok], &exe);
    assert_eq!(statuses(&plain), [("quiet1".to_string(), "no-crash".to_string()), ("ok1".into(), "no-crash".into())]);
    let (run, t) = triage(&["--expose", "-i", &quiet, &ok, &crash], &exe);
    assert_eq!(run.status.code(), Some(0), "{}", run.describe());
    let st = statuses(&t);
    assert_eq!(st, [("quiet1".to_string(), "root-cause".to_string()), ("ok1".into(), "no-crash".into()), ("t1".into(), "root-cause".into())], "{t}");
    assert!(t["inputs"][0]["reason"].as_str().unwrap().starts_with("it did not fail as it is: heap redzones"), "{t}");
    let g = groups(&t);
    assert_eq!(g.len(), 1, "{g:?}");
    assert_eq!(g[0].0, ["quiet1", "t1"]);
    assert!(g[0].1.starts_with(&format!("{} (main)", marked("tokens", "root: A"))), "{g:?}");
    let text = std::fs::read_to_string(corpus().join("tokens.c")).unwrap();
    let free = text.lines().position(|l| l.trim() == "free(token);").unwrap() + 1;
    assert!(g[0].2.contains(&format!("heap redzone overwritten at tokens.c:{free} (main)")), "{g:?}");
    let err = run.stderr_str();
    assert!(err.contains("2 inputs, 2 crash sites (1 of 2 confirmed, 1 not checked)"), "{err}");
    assert!(err.contains(&format!("   not checked: {quiet} (it failed only with heap redzones or a layout")), "{err}");
}

/// A group's fingerprint is the same with fewer inputs, given one by one, and in a build of
/// the program with a function added before the root cause's (on a blank line: the lines stay,
/// the root cause's offset in the module moves, its offset in its function does not).
#[test]
fn fingerprints_stay_with_inputs_removed_and_a_rebuild() {
    let exe = program("records");
    let dir = corpus().join("records");
    let (_, all) = triage(&[&format!("-i={}", dir.display())], &exe);
    let (_, some) = triage(&["-i", &dir.join("a2").display().to_string(), &dir.join("b1").display().to_string()], &exe);
    // (Built apart: a snippet of the same name is one file the other tests run.)
    let dir2 = scratch_dir("triage-rebuild");
    let source = std::fs::read_to_string(corpus().join("records.c")).unwrap();
    let blank = source.find("\n\nint main(").expect("a blank line before main") + 1;
    let source = format!("{}int added_before(int x) {{ return x * 3 + 1; }}{}", &source[..blank], &source[blank..]);
    std::fs::write(dir2.join("records.c"), source).unwrap();
    let rebuilt = dir2.join("records");
    let built = std::process::Command::new("gcc").args(["-g", "-O0", "-fno-stack-protector", "-o"]).arg(&rebuilt).arg(dir2.join("records.c")).status().unwrap();
    assert!(built.success());
    assert_ne!(std::fs::read(&rebuilt).unwrap(), std::fs::read(&exe).unwrap());
    let (_, again) = triage(&["-i", &dir.join("a1").display().to_string()], &rebuilt);
    let offset = |t: &Value| t["inputs"][0]["report"]["findings"][0]["offset"].as_str().unwrap().to_string();
    assert_ne!(offset(&all), offset(&again), "the root cause did not move in the module");
    let prints = |t: &Value| groups(t).into_iter().map(|g| g.3).collect::<Vec<_>>();
    let all = prints(&all);
    assert_eq!(all.len(), 2);
    assert_eq!(prints(&some), all);
    assert_eq!(prints(&again), all[..1]);
    assert_ne!(all[0], all[1]);
}

/// The command lines docs/TRIAGE.md gives for a CI matrix, a Slurm job array and a Kubernetes
/// Indexed Job, run as written (the platform's variables set for each of 4 shards; the corpus,
/// program and results paths replaced by the test's): each platform's merged result groups the
/// inputs as one run does.
#[test]
fn the_documented_sharding_commands_work() {
    let exe = program("tokens");
    let dir = corpus().join("tokens");
    let (_, whole, base) = triage_in(&[&format!("-i={}", dir.display())], &exe);
    let doc = std::fs::read_to_string(repo_root().join("docs/TRIAGE.md")).unwrap();
    let commands: Vec<&str> = doc
        .lines()
        .filter_map(|l| l.find("rtgrind triage").map(|k| l[k..].trim_end_matches(['"', ']', '\''])))
        .filter(|l| l.contains("--shard=$") || l.contains(" merge -o ") && l.contains("shard-"))
        .collect();
    for (platform, index) in [("CI matrix", "${{ matrix.shard }}"), ("Slurm", "${SLURM_ARRAY_TASK_ID}"), ("Kubernetes", "${JOB_COMPLETION_INDEX}")] {
        let shard = commands.iter().find(|c| c.contains(index)).unwrap_or_else(|| panic!("no {platform} command in docs/TRIAGE.md"));
        let nth = ["CI matrix", "Slurm", "Kubernetes"].iter().position(|p| *p == platform).unwrap();
        let merge = commands.iter().filter(|c| c.contains(" merge ")).nth(nth).unwrap_or_else(|| panic!("no {platform} merge in docs/TRIAGE.md"));
        let cwd = scratch_dir("triage-docs");
        std::fs::create_dir_all(cwd.join("baseline")).unwrap();
        std::fs::copy(base.join("triage.json"), cwd.join("baseline/triage.json")).unwrap();
        let concrete = |c: &str, i: usize| {
            c.replace(index, &i.to_string())
                .replace("${SLURM_ARRAY_TASK_COUNT}", "4")
                .replace("/results/", &format!("{}/", cwd.display()))
                .replace(" /corpus ", &format!(" {} ", dir.display()))
                .replace(" corpus ", &format!(" {} ", dir.display()))
                .replace(" /prog ", &format!(" {} ", exe.display()))
                .replace(" ./prog ", &format!(" {} ", exe.display()))
                .replace("shard-*", "shard-0 shard-1 shard-2 shard-3")
                .replacen("rtgrind ", &format!("{} ", crate::common::rtgrind_bin().display()), 1)
        };
        for i in 0..4 {
            let cmd = concrete(shard, i);
            let out = std::process::Command::new("sh").arg("-c").arg(&cmd).current_dir(&cwd).output().unwrap();
            assert!(out.status.success(), "{platform}: {cmd}: {}", String::from_utf8_lossy(&out.stderr));
        }
        let cmd = concrete(merge, 0);
        let out = std::process::Command::new("sh").arg("-c").arg(&cmd).current_dir(&cwd).output().unwrap();
        assert!(out.status.success(), "{platform}: {cmd}: {}", String::from_utf8_lossy(&out.stderr));
        let merged: Value = serde_json::from_str(&std::fs::read_to_string(cwd.join("all/triage.json")).unwrap()).unwrap();
        assert_eq!(groups(&merged), groups(&whole), "{platform}");
    }
}

/// `--html=FILE`: the page, loaded in a real headless browser (Chromium), shows each root
/// cause with its inputs, crash sites and the graph of its first member's runs.
#[test]
fn the_html_report_shows_the_groups_in_a_browser() {
    let exe = program("records");
    let page = scratch_dir("triage-html").join("report.html");
    let (run, _) = triage(&[&format!("-i={}", corpus().join("records").display()), &format!("--html={}", page.display())], &exe);
    assert_eq!(run.status.code(), Some(0), "{}", run.describe());
    let browser = std::process::Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs (Debian's chromium package; .ci/run installs it)");
    let dom = String::from_utf8_lossy(&browser.stdout);
    let sections: Vec<&str> = dom.split("<section class=\"group\"").skip(1).collect();
    assert_eq!(sections.len(), 2, "{dom}");
    assert!(sections[0].contains(&format!("Root cause 1: {} (main)", marked("records", "root: A"))), "{}", sections[0]);
    assert!(sections[1].contains(&format!("Root cause 2: {} (main)", marked("records", "root: B"))), "{}", sections[1]);
    for (s, inputs) in sections.iter().zip([["a1", "a2"], ["b1", "b2"]]) {
        assert!(inputs.iter().all(|i| s.contains(&format!("records/{i}</td>"))), "{s}");
        assert!(s.contains("<li>SIGSEGV at records.c:31 (call)</li>") && s.contains("2 of 2 confirmed"), "{s}");
        // The chain: the original run, the suppression run, the root cause.
        assert_eq!(s.matches("<rect ").count(), 3, "{s}");
    }
    assert!(dom.contains("ok1</td><td>no crash</td>"), "{dom}");
}

/// `--json`: the triage's record (its format's version, tool, command), then one per input and
/// per group, each a JSON object that names what it is.
#[test]
fn json_records_are_one_per_input_and_per_group() {
    let exe = program("tokens");
    let out = rtgrind_raw([
        "triage".to_string(),
        "--json".into(),
        "-i".into(),
        corpus().join("tokens/t1").display().to_string(),
        corpus().join("tokens/ok1").display().to_string(),
        "--".into(),
        exe.display().to_string(),
        "@@".into(),
    ]);
    let records: Vec<Value> = out.stdout_str().lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    let kinds: Vec<&str> = records.iter().map(|r| r["record"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["triage", "input", "input", "group"], "{}", out.describe());
    assert_eq!((records[0]["schema"].as_u64(), records[0]["tool"].as_str()), (Some(1), Some("suppress")));
    assert_eq!(records[1]["report"]["tool"], "suppress");
    assert_eq!(records[3]["members"].as_array().unwrap().len(), 1);
}

/// Bad usage gets one line and status 2 before any input runs; an unreadable input is listed
/// and the rest go on; the inputs are left as they were.
#[test]
fn bad_usage_is_refused_and_unreadable_inputs_are_listed() {
    let exe = program("records");
    let empty = scratch_dir("triage-empty");
    let exists = scratch_dir("triage-exists");
    let text = |p: &Path| p.display().to_string();
    let old_format = exists.join("old.json");
    std::fs::write(&old_format, r#"{"schema":0,"tool":"suppress","command":[],"inputs":[],"groups":[],"seconds":0}"#).unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["-i".into(), text(&corpus().join("records")), format!("--baseline={}", text(&old_format)), "--".into(), text(&exe), "@@".into()],
            "is a triage result of format 0; this rtgrind reads format 1",
        ),
        (vec!["-i".into(), text(&empty), "--".into(), text(&exe), "@@".into()], "no inputs in"),
        (vec!["-i".into(), text(&empty.join("nothing")), "--".into(), text(&exe), "@@".into()], "-i: cannot read"),
        (vec!["-i".into(), text(&corpus().join("records")), "--".into(), "/nonexistent/prog".into(), "@@".into()], "cannot run '/nonexistent/prog'"),
        (vec!["-i".into(), text(&corpus().join("records")), "--".into(), text(&corpus().join("records.c")), "@@".into()], "not an executable file"),
        (vec!["-i".into(), text(&corpus().join("records")), "-o".into(), text(&exists), "--".into(), text(&exe), "@@".into()], "exists; not writing into it"),
        (vec!["-i".into(), text(&corpus().join("records")), "-j".into(), "0".into(), "--".into(), text(&exe), "@@".into()], "triage: "),
        (vec!["-i".into(), text(&corpus().join("records"))], "triage: "),
    ];
    for (args, says) in cases {
        let out = rtgrind_raw(std::iter::once("triage".to_string()).chain(args.clone()));
        let err = out.stderr_str();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", out.describe());
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("rtgrind: error: triage: ") && err.contains(says), "{args:?}: {err}");
    }
    let dir = scratch_dir("triage-inputs");
    std::fs::copy(corpus().join("records/b1"), dir.join("b1")).unwrap();
    std::os::unix::fs::symlink("/nonexistent/input", dir.join("dangling")).unwrap();
    let before = std::fs::read(dir.join("b1")).unwrap();
    let (run, t) = triage(&["-i", &text(&dir)], &exe);
    assert_eq!(statuses(&t), [("b1".to_string(), "root-cause".to_string()), ("dangling".to_string(), "unreadable".to_string())], "{}", run.describe());
    assert_eq!(std::fs::read(dir.join("b1")).unwrap(), before);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
}

/// Without a terminal a triage says a line per input; `--progress=always` draws the live bar
/// anyway, `--progress=never` neither; the results are the same.
#[test]
fn progress_is_a_line_per_input_a_bar_or_nothing() {
    let exe = program("tokens");
    let input = corpus().join("tokens/t1").display().to_string();
    let run = |progress: &str| {
        let (run, t) = triage(&["-i", &input, progress], &exe);
        assert_eq!(statuses(&t), [("t1".to_string(), "root-cause".to_string())], "{}", run.describe());
        run.stderr_str()
    };
    let line = |err: &str| err.lines().any(|l| l.starts_with("triage: [1/1] ") && l.ends_with("t1: root cause found"));
    let bar = |err: &str| err.contains("1/1 inputs, 1 root cause so far");
    let auto = run("--progress=auto");
    assert!(line(&auto) && !bar(&auto), "{auto}");
    let always = run("--progress=always");
    assert!(bar(&always) && !line(&always), "{always}");
    let never = run("--progress=never");
    assert!(!bar(&never) && !line(&never) && never.contains("triage: 1 input"), "{never}");
}

/// A program that rewrites the file `@@` names before it crashes (rewrites_input.c: only the
/// file as it was crashes it). `@@` names a fresh copy of the input in every run, as AFL's
/// does: the user's corpus is never changed, and each probe finds the input as it is (before,
/// the first probe rewrote the corpus file and the other four did not crash: "flaky").
#[test]
fn an_input_the_program_rewrites_is_a_copy() {
    let source = std::fs::read_to_string(repo_root().join("guest-programs/bugs/rewrites_input.c")).unwrap();
    let exe = compile_snippet("rewrites_input", "c", &source, &["-g", "-O0", "-fno-stack-protector"]);
    let inputs = scratch_dir("triage-rewritten-inputs");
    crate::common::reset_dir(&inputs);
    let input = inputs.join("huge.gain");
    std::fs::write(&input, "gain 1e30\n").unwrap();
    let (run, t) = triage(&[&format!("-i={}", inputs.display())], &exe);
    assert_eq!(std::fs::read_to_string(&input).unwrap(), "gain 1e30\n", "the corpus file changed: {}", run.describe());
    let i = &t["inputs"][0];
    assert_eq!((i["status"].as_str(), i["failed_runs"].as_u64(), i["runs"].as_u64()), (Some("root-cause"), Some(5), Some(5)), "{i}");
    let root = source.lines().position(|l| l.contains("/* root */")).unwrap() + 1;
    assert!(i["report"]["findings"][0]["place"].as_str().unwrap().starts_with(&format!("rewrites_input.c:{root} (main)")), "{i}");
}
