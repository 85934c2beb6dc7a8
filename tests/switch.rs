//! `--tool=switch` searches on programs with known faulty predicates (`guest-programs/switch/`):
//! each asserts the reported line and instance of the critical predicate.

use crate::common::{compile_snippet, repo_root, run_rtgrind, Cmd};

fn program(name: &str) -> std::path::PathBuf {
    let source = std::fs::read_to_string(repo_root().join("guest-programs/switch").join(format!("{name}.c"))).unwrap();
    compile_snippet(name, "c", &source, &["-g", "-O0"])
}

/// `NAME.c:LINE (FUNC)` of the line marked `faulty`.
fn faulty(name: &str, func: &str) -> String {
    let text = std::fs::read_to_string(repo_root().join("guest-programs/switch").join(format!("{name}.c"))).unwrap();
    let line = text.lines().position(|l| l.contains("/* faulty")).unwrap_or_else(|| panic!("no faulty marker in {name}.c")) + 1;
    format!("{name}.c:{line} ({func})")
}

/// Runs the search with the expected output `expected` and extra options; returns stderr.
fn search(name: &str, args: &[&str], expected: &str, opts: &[&str]) -> (Option<i32>, String) {
    // Each search has its expected output in a file of its own: tests running in parallel
    // search the same program with different expectations.
    static SEARCHES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SEARCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let exe = program(name);
    let dir = crate::common::scratch_dir(&format!("switch-{name}-{n}"));
    let file = dir.join("expected");
    std::fs::write(&file, expected).unwrap();
    let mut o = vec!["--tool=switch".to_string(), format!("--expected-output={}", file.display())];
    o.extend(opts.iter().map(|s| s.to_string()));
    let out = run_rtgrind(&o, &Cmd::new(&exe).args(args));
    (out.status.code(), out.stderr_str())
}

/// Every order, each by the fork search and by plain re-execution: the same answer.
fn check(name: &str, func: &str, args: &[&str], expected: &str, instance: u64, from_failure: u64) -> String {
    check_orders(name, &faulty(name, func), args, expected, instance, from_failure, &["--order=lefs", "--order=last-instance-first", "--order=prior"])
}

/// `orders`, each by the fork search and by plain re-execution, find the critical predicate at
/// `place` (`FILE:LINE (FUNC)`), instance `instance` of its site.
fn check_orders(name: &str, place: &str, args: &[&str], expected: &str, instance: u64, from_failure: u64, orders: &[&str]) -> String {
    let mut last = String::new();
    for order in orders {
        let mut outcomes = Vec::new();
        for fork in ["--fork=yes", "--fork=no"] {
            let (code, err) = search(name, args, expected, &[order, fork]);
            assert_eq!(code, Some(1), "{order} {fork}:\n{err}");
            assert!(err.contains(&format!("switch: critical predicate: {place}, the branch at")), "{order} {fork}:\n{err}");
            assert!(err.contains(&format!("instance {instance} of its site ({from_failure} from the failure), which was ")), "{order} {fork}:\n{err}");
            let how = if fork == "--fork=yes" { "forked from forward runs" } else { "re-executed" };
            assert!(err.contains(how), "{order} {fork}:\n{err}");
            // Both searches name the branch's own outcome, the same one.
            outcomes.push(err.split(", which was ").nth(1).and_then(|t| t.split(';').next()).unwrap_or_default().to_string());
            last = err;
        }
        assert_eq!(outcomes[0], outcomes[1], "{order}: the fork search and re-execution disagree on the outcome");
    }
    last
}

#[test]
fn decision_table_with_ge_for_gt() {
    let err = check("decision", "advise", &["5", "7"], "no advisory\nclimb\n", 1, 2);
    // gcc -O0 tests `separation >= threshold` with a `jl` over the `return 1`: with 5 and 5 it
    // was not taken.
    assert!(err.contains("(2 from the failure), which was not taken;"), "{err}");
}

/// The program's own output reaches rtgrind's standard output once (the original run's, as
/// natively), except where the report takes standard output (`--json`).
#[test]
fn the_programs_output_is_shown_once() {
    let cmd = Cmd::new(program("decision")).args(["5", "7"]);
    let native = crate::common::run_native(&cmd).stdout_str();
    let dir = crate::common::scratch_dir("switch-output");
    let file = dir.join("expected");
    std::fs::write(&file, "no advisory\nclimb\n").unwrap();
    let expected = format!("--expected-output={}", file.display());
    let out = run_rtgrind(["--tool=switch", &expected], &cmd);
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    assert!(!native.is_empty() && native != "no advisory\nclimb\n", "{native}");
    assert_eq!(out.stdout_str(), native);
    let json = run_rtgrind(["--tool=switch", "--json", &expected], &cmd).stdout_str();
    assert!(json.lines().count() == 1 && json.starts_with("{\"tool\":\"switch\""), "{json}");
}

#[test]
fn tokenizer_loop_test_off_by_one() {
    check("tokenizer", "main", &["to be a"], "3\n", 7, 1);
}

#[test]
fn word_match_gives_up_early() {
    check("word_match", "whole_word", &["cat", "concatenate the cat"], "match\n", 1, 1);
}

#[test]
fn critical_instance_is_not_the_last_of_its_site() {
    let place = faulty("middle_instance", "main");
    check_orders("middle_instance", &place, &[], "0\n", 2, 4, &["--order=lefs", "--order=last-instance-first"]);
    // The dependence order reaches another critical predicate first: the loop test's second
    // instance (5 from the failure), whose inversion ends the loop before the wrongly counted
    // reading. The count's 8-byte origin granule is shared with the loop index, so the loop
    // tests come out nearer than the faulty test.
    let line: usize = place.split(':').nth(1).and_then(|l| l.split(' ').next()).and_then(|l| l.parse().ok()).unwrap();
    let loop_test = format!("middle_instance.c:{} (main)", line - 1);
    let err = check_orders("middle_instance", &loop_test, &[], "0\n", 2, 5, &["--order=prior"]);
    assert!(err.contains("switch: 6 of them are in the failure's dynamic dependences"), "{err}");
}

#[test]
fn crash_avoided_by_switching_a_bounds_check() {
    let exe = program("bounds_crash");
    // No oracle: success is a run that does not crash.
    let out = run_rtgrind(["--tool=switch"], &Cmd::new(&exe).arg("4"));
    let err = out.stderr_str();
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    assert!(err.contains("fails (signal 11"), "{err}");
    assert!(
        err.contains(&format!("switch: critical predicate: {}, the branch at", faulty("bounds_crash", "main")))
            && err.contains("instance 5 of its site (1 from the failure)"),
        "{err}"
    );
    // The same program with an index in range does not fail: nothing to search for.
    let out = run_rtgrind(["--tool=switch"], &Cmd::new(&exe).arg("3"));
    assert_eq!(out.status.code(), Some(2), "{}", out.describe());
    assert!(out.stderr_str().contains("did not crash"), "{}", out.describe());
}

#[test]
fn no_single_switch_fixes_two_faults() {
    for fork in ["--fork=yes", "--fork=no"] {
        let (code, err) = search("no_single_fix", &[], "3 4\n", &[fork]);
        assert_eq!(code, Some(2), "{fork}: {err}");
        assert!(err.contains("no single switch makes the run pass: search exhausted after 16 switched runs"), "{fork}: {err}");
    }
}

#[test]
fn a_switch_that_loops_forever_ends_by_its_budget() {
    for fork in ["--fork=yes", "--fork=no"] {
        let (code, err) = search("loops", &[], "large 3\n", &[fork]);
        assert_eq!(code, Some(1), "{fork}: {err}");
        assert!(err.contains(&format!("critical predicate: {}", faulty("loops", "main"))), "{fork}: {err}");
        assert!(err.contains("1 stopped by their budget"), "{fork}: {err}");
    }
}

#[test]
fn output_already_correct_and_bad_order() {
    let (code, err) = search("decision", &["3", "7"], "no advisory\nclimb\n", &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("already passes the oracle"), "{err}");
    let (code, err) = search("decision", &["5"], "climb\n", &["--order=random"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("invalid --order"), "{err}");
}

#[test]
fn json_and_sarif_reports() {
    let (code, _) = search("decision", &["5", "7"], "no advisory\nclimb\n", &[]);
    assert_eq!(code, Some(1));
    let exe = program("decision");
    let file = crate::common::scratch_dir("switch-decision-json").join("expected");
    std::fs::write(&file, "no advisory\nclimb\n").unwrap();
    let out = run_rtgrind(["--tool=switch", "--json", "--sarif", &format!("--expected-output={}", file.display())], &Cmd::new(&exe).args(["5", "7"]));
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    let stdout = out.stdout_str();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    let place = faulty("decision", "advise");
    let line = place.split(':').nth(1).unwrap().split(' ').next().unwrap();
    assert!(
        lines[0].contains("\"uri\":\"decision.c\"")
            && lines[0].contains(&format!("\"startLine\":{line}"))
            && lines[0].contains("\"ruleId\":\"critical-predicate\""),
        "{}",
        lines[0]
    );
    crate::common::assert_valid_sarif(lines[0]);
    // The one report model, as suppress's: parsed and written again, the same line.
    let report: crate::model::Report = serde_json::from_str(lines[1]).unwrap_or_else(|e| panic!("{e}: {}", lines[1]));
    assert_eq!(report.to_json(), lines[1]);
    assert_eq!((report.tool.as_str(), report.findings[0].place.as_str(), report.findings[0].instance), ("switch", place.as_str(), 1));
    assert!(
        lines[1].starts_with("{\"tool\":\"switch\",\"result\":\"found\"")
            && lines[1].contains(&format!("\"place\":\"{place}\""))
            && lines[1].contains("\"instance\":1"),
        "{}",
        lines[1]
    );
}

/// A search on a threaded program of `guest-programs/switch/` (built with -pthread) that must
/// find a critical predicate; its report.
fn threaded_search(name: &str, arg: &str, expected: &str) -> String {
    let source = std::fs::read_to_string(repo_root().join("guest-programs/switch").join(format!("{name}.c"))).unwrap();
    let exe = compile_snippet(name, "c", &source, &["-g", "-O0", "-pthread"]);
    let file = crate::common::scratch_dir(&format!("switch-{name}")).join("expected");
    std::fs::write(&file, expected).unwrap();
    let out = run_rtgrind(["--tool=switch", &format!("--expected-output={}", file.display())], &Cmd::new(&exe).arg(arg));
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    out.stderr_str()
}

#[test]
fn a_predicate_in_a_worker_thread_found_by_re_execution() {
    let err = threaded_search("threaded", "50", "normal\n");
    assert!(err.contains(&format!("switch: critical predicate: {}, the branch at", faulty("threaded", "classify"))), "{err}");
    assert!(err.contains("re-executed: the program has threads"), "{err}");
}

/// The number of switched runs a search reports.
fn switched_runs(err: &str) -> u64 {
    let line = err.lines().find(|l| l.contains("switched runs of")).unwrap_or_else(|| panic!("no summary:\n{err}"));
    line.split("switch: ").nth(1).and_then(|t| t.split_whitespace().next()).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{line}"))
}

#[test]
fn prior_order_starts_with_the_dependences_of_the_wrong_output() {
    let (name, args, expected) = ("dependent", &["100"][..], "price 1000\ncheck 6506\n");
    let mut runs = Vec::new();
    for order in ["--order=prior", "--order=lefs"] {
        let (code, err) = search(name, args, expected, &[order]);
        assert_eq!(code, Some(1), "{order}:\n{err}");
        assert!(err.contains(&format!("switch: critical predicate: {}, the branch at", faulty(name, "discounted"))), "{order}:\n{err}");
        if order == "--order=prior" {
            // Only the faulty instance is among the wrong price's dependences (the checksum
            // loop's 400 instances are not), and the report says through how many.
            assert!(err.contains("switch: 1 of them are in the failure's dynamic dependences"), "{err}");
            assert!(err.contains("the failure depends on it through") && err.contains("dynamic dependences"), "{err}");
        }
        runs.push(switched_runs(&err));
    }
    assert_eq!(runs[0], 1, "prior");
    assert!(runs[1] > 400, "lefs switches the checksum loop's 400 instances first: {}", runs[1]);
}

#[test]
fn forked_children_read_their_input_from_their_own_offset() {
    let dir = crate::common::scratch_dir("switch-file-input");
    let input = dir.join("digits");
    std::fs::write(&input, "1234").unwrap();
    check("file_input", "main", &[input.to_str().unwrap()], "small\n", 1, 1);
}

#[test]
fn a_search_over_a_real_program_switches_every_candidate() {
    // sort cannot be made to print its lines backwards by one switch: the search must try
    // every candidate instance (forked children reading the input file from their own
    // offsets; children that crash or loop are results) and say it is exhausted.
    let dir = crate::common::scratch_dir("switch-sort");
    let (input, expected) = (dir.join("lines"), dir.join("expected"));
    std::fs::write(&input, "b\na\nc\n").unwrap();
    std::fs::write(&expected, "c\nb\na\n").unwrap();
    let out = run_rtgrind(["--tool=switch", &format!("--expected-output={}", expected.display())], &Cmd::new("/usr/bin/sort").arg(&input));
    let err = out.stderr_str();
    assert_eq!(out.status.code(), Some(2), "{}", out.describe());
    let candidates: u64 = err
        .split(" branch instances before the failure")
        .next()
        .and_then(|h| h.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!(candidates > 100, "{err}");
    assert!(err.contains(&format!("no single switch makes the run pass: search exhausted after {candidates} switched runs")), "{err}");
}

#[test]
fn a_thread_exiting_is_not_the_end_of_the_program() {
    let err = threaded_search("after_join", "8", "low\n");
    assert!(err.contains("standard output differs from the expected at byte 0"), "{err}");
    assert!(err.contains(&format!("switch: critical predicate: {}, the branch at", faulty("after_join", "main"))), "{err}");
}

#[test]
fn a_search_killed_by_a_signal_takes_its_runs_with_it() {
    // Each run is in a process group of its own (so that a time limit kills all of it), which
    // a terminal's Ctrl-C does not reach: the search must kill the run under way itself.
    let exe = program("many_branches");
    let file = crate::common::scratch_dir("switch-killed").join("expected");
    std::fs::write(&file, "on 4165833\n").unwrap();
    let mut search = std::process::Command::new(crate::common::rtgrind_bin())
        .args(["--tool=switch", &format!("--expected-output={}", file.display())])
        .arg(&exe)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let tag = format!("rtgrind-switch-{}", search.id());
    let runs = |what: &str| -> usize {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
            .filter(|c| String::from_utf8_lossy(c).contains(&format!("{tag}/{what}")))
            .count()
    };
    // Wait for a long forward run (from the third batch on: 512 forks and more, seconds of
    // work; run 5 or later, after the trace run, its repeat and two forward runs). A loaded CI
    // machine took over a minute to get to the fourth: any of them will do.
    let long = || (5..=9).map(|n| runs(&format!("forward-{n}"))).sum::<usize>();
    let t0 = std::time::Instant::now();
    while long() == 0 && t0.elapsed() < std::time::Duration::from_secs(300) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(long() > 0, "no forward run from the third on started in 300 s");
    // SAFETY: kill(2) of the child we spawned.
    unsafe { libc::kill(search.id() as i32, libc::SIGTERM) };
    let status = search.wait().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGTERM));
    let t1 = std::time::Instant::now();
    // (The run's forks take a moment to die, longer on a loaded machine.)
    while runs("") > 0 && t1.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(runs(""), 0, "runs of the search outlived it");
}

/// `--log-file` takes the search's report (issue 21, item 9); the program's output stays on
/// standard output.
#[test]
fn the_report_goes_to_the_log_file() {
    let cmd = Cmd::new(program("decision")).args(["5", "7"]);
    let dir = crate::common::scratch_dir("switch-log");
    let file = dir.join("expected");
    std::fs::write(&file, "no advisory\nclimb\n").unwrap();
    let log = dir.join("log");
    let out = run_rtgrind(["--tool=switch", &format!("--expected-output={}", file.display()), &format!("--log-file={}", log.display())], &cmd);
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    assert!(!out.stderr_str().contains("switch:"), "the report went to stderr:\n{}", out.stderr_str());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("critical predicate"), "{text}");
    assert!(!out.stdout_str().is_empty());
}

/// Two reads of standard input with branches between them (issue 21, items 8 and 10): every
/// forked child reads the second four bytes as the original run did, so no switch looks
/// critical; the fork search and re-execution agree, every time and from any directory (a child sharing its parent's
/// offset read other bytes, and the answer depended on which process read first).
#[test]
fn forked_children_read_standard_input_from_the_offset_at_the_fork() {
    let dir = crate::common::scratch_dir("switch-two-reads");
    let file = dir.join("expected");
    std::fs::write(&file, "2\n").unwrap();
    let exe = program("two_reads");
    // From two directories (their paths' lengths move the stack natively).
    let other = crate::common::scratch_dir("switch-two-reads-from-a-directory-with-a-much-longer-name");
    let mut reports = Vec::new();
    for (i, fork) in ["--fork=yes", "--fork=no", "--fork=yes", "--fork=yes", "--fork=yes", "--fork=yes"].into_iter().enumerate() {
        let cmd = Cmd::new(&exe).stdin("xaxb!zzz").cwd(if i % 2 == 0 { &dir } else { &other });
        let out = run_rtgrind(["--tool=switch", &format!("--expected-output={}", file.display()), fork], &cmd);
        let err = out.stderr_str();
        assert_eq!(out.status.code(), Some(2), "{fork}: {}", out.describe());
        let verdict = err.lines().find(|l| l.contains("switch: no single switch")).unwrap_or_else(|| panic!("{fork}:\n{err}"));
        reports.push(verdict.split("switch: ").nth(1).unwrap().split(';').next().unwrap().to_string());
    }
    assert!(reports.iter().all(|r| r == &reports[0]), "{reports:#?}");
}

/// The replay command printed with an answer runs as printed (issue 21, item 8): it carries
/// the flags the address needs, and the switched run writes the expected output.
#[test]
fn the_printed_replay_command_switches_the_same_instance() {
    let (code, err) = search("decision", &["5", "7"], "no advisory\nclimb\n", &[]);
    assert_eq!(code, Some(1), "{err}");
    let line = err.lines().find(|l| l.contains("to replay it: ")).unwrap_or_else(|| panic!("no replay command:\n{err}"));
    let command = line.split("to replay it: ").nth(1).unwrap();
    let rest = command.strip_prefix("rtgrind ").unwrap_or_else(|| panic!("{command}"));
    let mut sh = std::process::Command::new("/bin/sh");
    sh.arg("-c").arg(format!("'{}' {rest}", crate::common::rtgrind_bin().display()));
    let out = crate::common::run_command(sh, crate::common::Input::Null);
    assert_eq!(out.stdout_str(), "no advisory\nclimb\n", "{command}\n{}", out.describe());
    assert!(out.stderr_str().contains("instance 1 of the branch at") && out.stderr_str().contains("switched to"), "{command}\n{}", out.describe());
}

/// A program that lists its directory and leaves a file there (issue 21, items 6 and 8): every
/// run finds the directory as the first did (the runs' files are moved away after each), the
/// search re-executes rather than forks (children would see their parent's file), it finds
/// the faulty test, and the directory is left as one native run leaves it.
#[test]
fn a_program_that_changes_files_is_searched_by_re_execution() {
    let dir = crate::common::scratch_dir("switch-counts-files");
    crate::common::reset_dir(&dir);
    let expected = crate::common::scratch_dir("switch-counts-files-expected").join("expected");
    std::fs::write(&expected, "big\n").unwrap();
    let out = run_rtgrind(["--tool=switch", &format!("--expected-output={}", expected.display())], &Cmd::new(program("counts_files")).cwd(&dir));
    let err = out.stderr_str();
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    assert!(err.contains(&format!("switch: critical predicate: {}, the branch at", faulty("counts_files", "main"))), "{err}");
    assert!(err.contains("re-executed: the program changes files"), "{err}");
    let left: Vec<String> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, vec!["made-by-run".to_string()]);
}
