//! `--tool=race` (issue 23, detection): the races of `guest-programs/races/`, each at the
//! exact lines of its two accesses, and race-free programs that report none.

use crate::common::{compile_snippet, repo_root, run_rtgrind, Cmd};

/// `guest-programs/races/NAME` built with `flags`.
fn program(name: &str, ext: &str, out: &str, flags: &[&str]) -> std::path::PathBuf {
    let source = std::fs::read_to_string(repo_root().join("guest-programs/races").join(format!("{name}.{ext}"))).unwrap();
    compile_snippet(out, ext, &source, &[&["-g", "-pthread"], flags].concat())
}

/// `FILE:LINE (FUNC)` of the line marked `/* marker */` in `name.c` (built as `out.c`).
fn place(name: &str, out: &str, marker: &str, func: &str) -> String {
    let text = std::fs::read_to_string(repo_root().join("guest-programs/races").join(format!("{name}.c"))).unwrap();
    let line = text.lines().position(|l| l.contains(&format!("/* {marker} */"))).unwrap_or_else(|| panic!("no {marker} in {name}.c")) + 1;
    format!("{out}.c:{line} ({func})")
}

/// The races reported: (later access's line, earlier access's line), in order.
fn races(stderr: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = stderr.lines().collect();
    lines
        .windows(2)
        .filter(|w| w[0].contains("race: data race at ") && w[1].contains("race:    and an earlier "))
        .map(|w| (w[0].split(" at ").last().unwrap().to_string(), w[1].split(" at ").nth(1).unwrap().split(", with").next().unwrap().to_string()))
        .collect()
}

#[test]
fn unsynchronized_increments_race_at_their_line() {
    for opt in ["-O0", "-O2"] {
        let out = format!("racy_counter{opt}").replace('-', "_");
        let exe = program("racy_counter", "c", &out, &[opt]);
        let o = run_rtgrind(["--tool=race"], &Cmd::new(&exe));
        assert_eq!(o.status.code(), Some(1), "races found: the searches' error exit status:\n{}", o.describe());
        assert_eq!(o.stdout_str(), "2000\n");
        let err = o.stderr_str();
        let line = place("racy_counter", &out, "race", "work");
        let found = races(&err);
        assert!(!found.is_empty() && found.iter().all(|(a, b)| a == &line && b == &line), "{opt}: expected races at {line}:\n{err}");
        assert!(err.contains("by thread 2") && err.contains("earlier write of 8 bytes by thread 1"), "{err}");
        assert!(err.contains("race:    the address is in `hits`, a global of 8 bytes"), "{err}");
    }
}

#[test]
fn a_result_read_without_a_join_races_with_its_write() {
    let exe = program("unjoined_result", "c", "unjoined_result", &["-O0"]);
    let o = run_rtgrind(["--tool=race", "--error-exitcode=3", "--json", "--sarif"], &Cmd::new(&exe));
    assert_eq!(o.status.code(), Some(3), "races found: --error-exitcode:\n{}", o.describe());
    let at = |m: &str, f: &str| place("unjoined_result", "unjoined_result", m, f);
    let mut found = races(&o.stderr_str());
    found.sort();
    let mut want = vec![(at("race flag", "work"), at("race flag read", "main")), (at("race result read", "main"), at("race result", "work"))];
    want.sort();
    assert_eq!(found, want, "{}", o.stderr_str());
    for object in ["`done`, a global of 4 bytes", "`result`, a global of 8 bytes"] {
        assert!(o.stderr_str().contains(&format!("the address is in {object}")), "{}", o.stderr_str());
    }
    // After the program's output: SARIF (each race's two accesses a code flow), then the JSON
    // of the one report model, which reads back as it was written.
    let stdout = o.stdout_str();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!((lines.len(), lines[0]), (3, "42"), "{stdout}");
    crate::common::assert_valid_sarif(lines[1]);
    assert_eq!(lines[1].matches("\"threadFlows\"").count(), 2, "{}", lines[1]);
    let report: crate::model::Report = serde_json::from_str(lines[2]).unwrap_or_else(|e| panic!("{e}: {}", lines[2]));
    assert_eq!(report.to_json(), lines[2]);
    assert_eq!((report.tool.as_str(), report.result.as_str(), report.findings.len()), ("race", "found", 2));
    let places: Vec<(&str, &str)> = report.findings.iter().map(|f| (f.place.as_str(), f.earlier_place.as_deref().unwrap_or_default())).collect();
    for (later, earlier) in &want {
        assert!(places.contains(&(later.as_str(), earlier.as_str())), "{places:?}");
    }
}

/// Mutexes, C11 atomic read-modify-writes read back with `atomic_load`, a condition variable,
/// a barrier, a semaphore, results read after `pthread_join`, the same in C++ (std::thread,
/// std::mutex, std::atomic), and OpenMP (a parallel for with a reduction, a critical section,
/// an atomic update): no race, at -O0 and -O2; the exit status stays the program's.
#[test]
fn race_free_programs_report_no_race() {
    for (name, ext, extra) in [("race_free", "c", ""), ("cxx_threads", "cpp", ""), ("omp_reduction", "c", "-fopenmp")] {
        for opt in ["-O0", "-O2"] {
            let out = format!("{name}{opt}").replace('-', "_");
            let flags: Vec<&str> = [opt, extra].into_iter().filter(|f| !f.is_empty()).collect();
            let exe = program(name, ext, &out, &flags);
            let o = run_rtgrind(["--tool=race", "--error-exitcode=3"], &Cmd::new(&exe));
            assert_eq!(o.status.code(), Some(0), "{out}: {}", o.describe());
            assert!(o.stderr_str().contains("race: 0 data races ("), "{out}: {}", o.describe());
            assert!(!o.stdout_str().is_empty(), "{out}");
        }
    }
}

/// A library that is not the C or C++ runtime is checked as the program is: the race in
/// `libcounter.so` is found at its line (it was trusted, unchecked, before).
#[test]
fn a_race_inside_a_library_of_the_program_is_found() {
    let source = std::fs::read_to_string(repo_root().join("guest-programs/races/libcounter.c")).unwrap();
    let lib = compile_snippet("libcounter.so", "c", &source, &["-g", "-O0", "-shared", "-fPIC"]);
    let dir = lib.parent().unwrap().display().to_string();
    let exe = program("uses_library", "c", "uses_library", &["-O0", "-Wl,--no-as-needed", &format!("-L{dir}"), "-lcounter", &format!("-Wl,-rpath,{dir}")]);
    let o = run_rtgrind(["--tool=race"], &Cmd::new(&exe));
    assert_eq!(o.status.code(), Some(1), "{}", o.describe());
    let text = std::fs::read_to_string(repo_root().join("guest-programs/races/libcounter.c")).unwrap();
    let line = text.lines().position(|l| l.contains("/* race */")).unwrap() + 1;
    let want = format!("libcounter.so.c:{line} (bump)");
    let found = races(&o.stderr_str());
    assert!(!found.is_empty() && found.iter().all(|(a, b)| a == &want && b == &want), "expected races at {want}:\n{}", o.stderr_str());
}

/// A program that never creates a thread is run and said to be single-threaded (issue 23's bad
/// input), with the program's own exit status.
#[test]
fn a_single_threaded_program_is_said_to_be_one() {
    let o = run_rtgrind(["--tool=race"], &Cmd::new("/bin/sh").args(["-c", "exit 3"]));
    assert_eq!(o.status.code(), Some(3), "{}", o.describe());
    assert!(o.stderr_str().contains("race: 0 data races: the program ran one thread only"), "{}", o.describe());
}
