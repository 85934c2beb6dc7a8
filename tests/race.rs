//! `--tool=race` (issue 23): the races of `guest-programs/races/`, each at the exact lines of
//! its two accesses with its harm test's verdict, and race-free programs that report none.

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

/// The harm verdicts, in the order the races are reported ("harmful: ...").
fn verdicts(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| l.split_once("race:    ").map(|(_, v)| v))
        .filter(|v| ["harmful:", "benign:", "undecided:"].iter().any(|k| v.starts_with(k)))
        .map(str::to_string)
        .collect()
}

/// The races reported: (later access's line, earlier access's line), in order.
fn races(stderr: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = stderr.lines().collect();
    // (A place in an inlined function goes on with the function it was inlined into: left out.)
    let own = |s: &str| s.split(", inlined into ").next().unwrap().to_string();
    lines
        .windows(2)
        .filter(|w| w[0].contains("race: data race at ") && w[1].contains("race:    and an earlier "))
        .map(|w| (own(w[0]).split(" at ").last().unwrap().to_string(), own(w[1].split(" at ").nth(1).unwrap().split(", with").next().unwrap())))
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
        // The later access's call stack as Valgrind prints one, its callers from a scan of its
        // thread's stack: the thread's start in the C library, entered from `clone`.
        let file_line = line.split(' ').next().unwrap();
        assert!(err.lines().any(|l| l.contains("race:    at 0x") && l.ends_with(&format!(": work ({file_line})"))), "{err}");
        assert!(err.lines().any(|l| l.contains("race:    by 0x") && l.contains(": clone (")), "{err}");
        // Reversed, the other thread reads `hits` before the first one's increments. At -O0
        // (load, add, store) that loses the first one's update: another output. At -O2 (one
        // `add` of 1000 to memory) both orders end at 2000, but each reads another value.
        let v = verdicts(&err);
        assert_eq!(v.len(), found.len(), "{err}");
        assert!(
            v[0].starts_with("harmful: thread ") && v[0].contains("thread 2's read") && v[0].contains(" reads 0x3e8 in the run's order, 0x0 in the other"),
            "{opt}: {err}"
        );
        let tail = if opt == "-O0" { "the program's output changed too" } else { "the program's output and exit status were the same" };
        assert!(v[0].ends_with(tail), "{opt}: {err}");
        assert!(err.contains("race: 1 data races (3 threads): 1 harmful, 0 benign"), "{err}");
    }
}

/// Races that cannot change a value: both writes store the same value, or a write stores the
/// value already there while another thread reads it. Each is benign; the exit status is the
/// program's.
#[test]
fn races_that_change_no_value_are_benign() {
    for opt in ["-O0", "-O2"] {
        let out = format!("benign_same_value{opt}").replace('-', "_");
        let exe = program("benign_same_value", "c", &out, &[opt]);
        let o = run_rtgrind(["--tool=race"], &Cmd::new(&exe));
        assert_eq!(o.status.code(), Some(0), "{}", o.describe());
        assert_eq!(o.stdout_str(), "verbose\n7\n");
        let err = o.stderr_str();
        let at = |m: &str, f: &str| place("benign_same_value", &out, m, f);
        let (value, write, read) = (at("race same value", "work"), at("race same write", "work"), at("race read", "main"));
        let mut found = races(&err);
        found.sort();
        let mut want = vec![(value.clone(), read), (value.clone(), value), (write.clone(), write)];
        want.sort();
        assert_eq!(found, want, "{opt}: {err}");
        let v = verdicts(&err);
        assert_eq!(v.len(), 3, "{err}");
        assert_eq!(v.iter().filter(|v| v.starts_with("benign: both orders leave the same value: the two writes store the same value")).count(), 2, "{err}");
        assert_eq!(
            v.iter().filter(|v| v.starts_with("benign: both orders read and leave the same values: the write stores the value already there")).count(),
            1,
            "{err}"
        );
        assert!(err.contains("race: 3 data races (3 threads): 0 harmful, 3 benign"), "{err}");
    }
}

/// Without the harm test (`--harm=no`): one run, the races only, exit status 1 when found.
#[test]
fn without_the_harm_test_races_are_reported_in_one_run() {
    let exe = program("racy_counter", "c", "racy_counter_noharm", &["-O0"]);
    let o = run_rtgrind(["--tool=race", "--harm=no"], &Cmd::new(&exe));
    assert_eq!(o.status.code(), Some(1), "{}", o.describe());
    assert!(verdicts(&o.stderr_str()).is_empty() && !races(&o.stderr_str()).is_empty(), "{}", o.describe());
    assert!(o.stderr_str().contains("race: 1 data races (3 threads)\n") || o.stderr_str().contains("race: 1 data races (3 threads)"), "{}", o.describe());
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
    // The flag's race is harmful (the main thread reads 0, then 1); the result's cannot be
    // reversed: the main thread spins on the flag until the worker, held back before it
    // stores the result, goes on.
    let v = verdicts(&o.stderr_str());
    assert_eq!(v.len(), 2, "{}", o.stderr_str());
    assert!(v[0].starts_with("harmful: thread 0's read at ") && v[0].contains("reads 0x0 in the run's order, 0x1 in the other"), "{v:?}");
    assert!(
        v[1].starts_with(&format!(
            "undecided: the other order could not be made: thread 0's read at {} did not come while thread 1's write at {} waited",
            want[0].0, want[0].1
        )) || v[1].starts_with(&format!(
            "undecided: the other order could not be made: thread 0's read at {} did not come while thread 1's write at {} waited",
            want[1].0, want[1].1
        )),
        "{v:?}"
    );
    // Each race says where its threads last synchronized: the main thread when it created the
    // worker (clone), the worker in its start-up.
    let err = o.stderr_str();
    let syncs: Vec<&str> = err.lines().filter_map(|l| l.split_once("race:    last synchronization: ").map(|x| x.1)).collect();
    assert_eq!(syncs.len(), 2, "{err}");
    assert!(syncs.iter().all(|s| s.contains("thread 0 at ") && s.contains("thread 1 at ") && s.contains("clone")), "{syncs:?}");
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
    assert_eq!((report.tool.as_str(), report.result.as_str(), report.findings.len()), ("race", "harmful", 2));
    let judged: Vec<&str> = report.findings.iter().map(|f| f.verdict.as_deref().unwrap_or_default()).collect();
    assert_eq!(judged, ["harmful", "undecided"], "harmful first");
    let places: Vec<(&str, &str)> = report.findings.iter().map(|f| (f.place.as_str(), f.earlier_place.as_deref().unwrap_or_default())).collect();
    for (later, earlier) in &want {
        assert!(places.contains(&(later.as_str(), earlier.as_str())), "{places:?}");
    }
}

/// Mutexes, C11 atomic read-modify-writes read back with `atomic_load`, a condition variable,
/// a barrier, a semaphore, results read after `pthread_join`, the same in C++ (std::thread,
/// std::mutex, std::atomic), OpenMP (a parallel for with a reduction, a critical section,
/// an atomic update, barriers, tasks), rwlocks, and C11 release/acquire through plain `mov`s (a message behind a
/// flag, a single-producer single-consumer ring: atomic by their `_Atomic` type in the DWARF):
/// no race, at -O0 and -O2; the exit status stays the program's.
#[test]
fn race_free_programs_report_no_race() {
    for (name, ext, extra) in [
        ("race_free", "c", ""),
        ("cxx_threads", "cpp", ""),
        ("cxx_atomics", "cpp", ""),
        ("omp_reduction", "c", "-fopenmp"),
        ("omp_phases", "c", "-fopenmp"),
        ("omp_tasks", "c", "-fopenmp"),
        ("rwlock_readers", "c", ""),
        ("c11_acquire_release", "c", ""),
        ("lock_free_queue", "c", ""),
    ] {
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

/// libgomp's barriers order the phases they separate under any schedule: a futex word is an
/// atomic location from its first futex call, so the spinning thread's plain load of the
/// barrier's generation acquires what the last thread's plain store released (before, a thread
/// that saw the store while spinning, and so never slept in the futex, was unordered: false
/// races across `#pragma omp barrier`, `single`, `master` and a region's end). Tasks: a
/// task's completion orders it before `taskwait` and a `taskgroup`'s end, whose fast path
/// reads the children count plainly (libgomp's plain accesses are atomic; before, a false race
/// on the slots under `rr` at -O0 and `random:3` at -O2).
#[test]
fn openmp_barriers_and_tasks_order_under_other_schedules() {
    for (name, output) in [("omp_phases", "2 20288 170 2075\n"), ("omp_tasks", "20540 20580 144\n")] {
        for opt in ["-O0", "-O2"] {
            let out = format!("{name}_sched{opt}").replace('-', "_");
            let exe = program(name, "c", &out, &[opt, "-fopenmp"]);
            for sched in ["--sched=random:3", "--sched=rr", "--sched=random:5"] {
                let o = run_rtgrind(["--tool=race", "--harm=no", sched, "--quantum=100"], &Cmd::new(&exe));
                assert_eq!(o.status.code(), Some(0), "{out} {sched}: {}", o.describe());
                assert!(o.stderr_str().contains("race: 0 data races ("), "{out} {sched}: {}", o.describe());
                assert_eq!(o.stdout_str(), output, "{out} {sched}");
            }
        }
    }
}

/// OpenMP's `atomic write` and `atomic read` are plain `mov`s: the statements an `omp atomic`
/// directive precedes (read from the source the DWARF names) are atomic code, so the flag both
/// threads write and read is no race (a write-write race at its line before), and the one
/// race is the plain increment on the line after an atomic statement (-O0, -O2).
#[test]
fn openmp_atomics_do_not_race_and_the_plain_access_beside_them_does() {
    for opt in ["-O0", "-O2"] {
        let out = format!("omp_atomics{opt}").replace('-', "_");
        let exe = program("omp_atomics", "c", &out, &[opt, "-fopenmp"]);
        let o = run_rtgrind(["--tool=race", "--harm=no"], &Cmd::new(&exe));
        assert_eq!(o.stdout_str(), "4 2 2 1\n", "{out}");
        let line = place("omp_atomics", &out, "racing increment", "main._omp_fn.0");
        assert_eq!(races(&o.stderr_str()), vec![(line.clone(), line)], "{out}: {}", o.stderr_str());
    }
}

/// A freed heap block's atomic location is plain memory again: the allocator hands the
/// block of an atomic counter out again as a plain counter two threads increment, and that
/// race is found (before, the location stayed atomic, and two atomic accesses never race).
#[test]
fn a_freed_atomic_is_plain_memory_again() {
    // (The output says the block is the atomic's.)
    only_race("freed_atomic", "reused 2\n", ("racing increment", "worker"), ("other increment", "main"));
}

/// `guest-programs/races/NAME.c` at -O0 and -O2 under `--harm=no`: its output is `stdout`, and
/// its one race is between the accesses marked `later` and `earlier` (marker, function).
fn only_race(name: &str, stdout: &str, later: (&str, &str), earlier: (&str, &str)) {
    for opt in ["-O0", "-O2"] {
        let out = format!("{name}{opt}").replace('-', "_");
        let exe = program(name, "c", &out, &[opt]);
        let o = run_rtgrind(["--tool=race", "--harm=no"], &Cmd::new(&exe));
        assert_eq!(o.stdout_str(), stdout, "{out}");
        let want = (place(name, &out, later.0, later.1), place(name, &out, earlier.0, earlier.1));
        assert_eq!(races(&o.stderr_str()), vec![want], "{out}: {}", o.stderr_str());
    }
}

/// C11's atomics used with explicit orders on a heap block's flag (stdatomic.h's macros) and
/// on a flag in main's frame (GCC's builtins) order what they hand over: found by the calls'
/// lines and columns, their own load or store and not their arguments'. The one race is the
/// global the release store publishes as its value, read as the macro's argument (-O0, -O2;
/// before, the flags' accesses and the message's fields raced).
#[test]
fn c11_atomics_on_the_heap_and_stack_order_and_their_arguments_race() {
    only_race("c11_heap_atomics", "started 42\n7 hello\n", ("racing read", "producer"), ("racing write", "main"));
}

/// A signal one thread sends another orders the sender's past before the handler: the
/// message main fills before `pthread_kill` is no race with the handler's read of it; what
/// main writes after sending is (-O0, -O2; before, the message raced as well).
#[test]
fn a_signal_sent_to_a_thread_orders_what_came_before_it() {
    only_race("signal_handoff", "handed over 1\n", ("racing read", "on_usr1"), ("racing write", "main"));
}

/// C++'s `std::atomic` orders through its code (lines in libstdc++'s atomic headers), wherever
/// the atomic is: a heap atomic's release and acquire leave no race on the payload they hand
/// over, and the one real race beside it is found at its two lines (-O0 and -O2).
#[test]
fn a_race_beside_cxx_atomics_is_the_only_one() {
    let text = std::fs::read_to_string(repo_root().join("guest-programs/races/cxx_atomic_race.cpp")).unwrap();
    let line = |tag: &str| text.lines().position(|l| l.contains(tag)).unwrap() + 1;
    let (write, read) = (line("/* racing write */"), line("/* racing read */"));
    for opt in ["-O0", "-O2"] {
        let exe = program("cxx_atomic_race", "cpp", &format!("cxx_atomic_race{}", opt.replace('-', "_")), &[opt]);
        let o = run_rtgrind(["--tool=race", "--harm=no"], &Cmd::new(&exe));
        assert_eq!(o.status.code(), Some(1), "{opt}: {}", o.describe());
        let found = races(&o.stderr_str());
        // (`file:line`, the function after it left out: a lambda's is long. Either may be the
        // earlier access.)
        let line_of = |p: &String| p.split(" (").next().unwrap_or_default().to_string();
        let mut lines: Vec<Vec<String>> = found.iter().map(|(a, b)| vec![line_of(a), line_of(b)]).collect();
        lines.iter_mut().for_each(|l| l.sort());
        let name = format!("cxx_atomic_race{}.cpp", opt.replace('-', "_"));
        let want = vec![format!("{name}:{write}"), format!("{name}:{read}")];
        assert_eq!(lines, vec![want], "{opt}:\n{}", o.stderr_str());
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

/// The failure loop (Fig. 6.1 of the dissertation): a lost update trips an assertion; execution
/// suppression on the recorded schedule finds the definition the failing check used, the
/// store, which is one access of a harmful race (with the other thread's load): the root
/// cause, where the loop ends.
#[test]
fn a_lost_update_that_trips_an_assertion_is_traced_to_its_race() {
    for opt in ["-O0", "-O2"] {
        let out = format!("lost_update{opt}").replace('-', "_");
        let exe = program("lost_update", "c", &out, &[opt]);
        let dot = crate::common::scratch_dir("race-dot").join(format!("{out}.dot"));
        let _ = std::fs::remove_file(&dot);
        let dot_opt = format!("--dot={}", dot.display());
        let o = run_rtgrind(["--tool=race", &dot_opt], &Cmd::new(&exe));
        assert_eq!(o.status.code(), Some(1), "{opt}: {}", o.describe());
        let err = o.stderr_str();
        let root = err.lines().position(|l| l.contains("race: root cause of the failure: the harmful data race below (the run died of SIGABRT; it used "));
        let root = root.unwrap_or_else(|| panic!("{opt}: no root cause:\n{err}"));
        let first = races(&err.lines().skip(root).collect::<Vec<_>>().join("\n"));
        let (store, load) = (place("lost_update", &out, "race store", "work"), place("lost_update", &out, "race load", "work"));
        assert_eq!(first.first(), Some(&(store, load)), "{opt}: the root cause is the store's race with the load:\n{err}");
        assert!(err.contains("race:   1. original run: SIGABRT"), "{opt}: the chain is shown:\n{err}");
        assert!(!err.contains("race:   2. suppressing from "), "{opt}: the loop ends at the first harmful race:\n{err}");
        // The graph: the chain's run, its definition leading to the root race's store, the
        // race's two accesses drawn bold; an existing graph is not overwritten.
        let graph = std::fs::read_to_string(&dot).unwrap_or_else(|e| panic!("{opt}: no graph: {e}"));
        let (store, load) = (place("lost_update", &out, "race store", "work"), place("lost_update", &out, "race load", "work"));
        assert!(graph.starts_with("digraph races {") && graph.contains("run0 [label=\"run 1: SIGABRT"), "{opt}: {graph}");
        assert!(graph.contains(&format!("race0_a [label=\"read of 8 bytes by thread 2\\n{load}\", penwidth=2]")), "{opt}: {graph}");
        assert!(graph.contains(&format!("race0_b [label=\"write of 8 bytes by thread 1\\n{store}\", penwidth=2]")), "{opt}: {graph}");
        assert!(
            graph.contains("race0_a -> race0_b [label=\"root cause: harmful data race") && graph.contains("def0_0 -> race0_b [label=\"is\""),
            "{opt}: {graph}"
        );
        let again = run_rtgrind(["--tool=race", &dot_opt], &Cmd::new(&exe));
        assert_eq!(again.status.code(), Some(2), "{opt}: {}", again.describe());
        assert!(again.stderr_str().contains("not overwriting") && std::fs::read_to_string(&dot).unwrap() == graph, "{opt}: {}", again.describe());
    }
}

/// A wrong output (`--failure=output:`, the output of a correct run): two workers append to a
/// log through an unsynchronized index, so three entries are printed instead of six. The
/// first wrong byte is the count's digit, which stdio put in its buffer before copying the
/// rest of the line over the same 8 bytes (the byte's own definition is watched, not its
/// granule's); the digit is looked up in a table by `n % 10`, `n` a worker's; and the loop
/// ends there: the root cause is the index store's race, not the slot store's (-O0, -O2).
#[test]
fn a_wrong_output_is_traced_to_the_race_on_the_index() {
    let expected = repo_root().join("guest-programs/races/log_order.expected");
    for opt in ["-O0", "-O2"] {
        let out = format!("log_order{opt}").replace('-', "_");
        let exe = program("log_order", "c", &out, &[opt]);
        let o = run_rtgrind([format!("--failure=output:{}", expected.display()).as_str(), "--tool=race"], &Cmd::new(&exe));
        assert_eq!(o.status.code(), Some(1), "{opt}: {}", o.describe());
        let err = o.stderr_str();
        let root = err.lines().position(|l| l.contains("race: root cause of the failure: the harmful data race below (the run printed another output than "));
        let root = root.unwrap_or_else(|| panic!("{opt}: no root cause:\n{err}"));
        assert!(err.contains("it used output byte 0 ('3'), defined by this race's write (run 1 of the suppression chain)"), "{opt}: {err}");
        let first = races(&err.lines().skip(root).collect::<Vec<_>>().join("\n"));
        let (store, load) = (place("log_order", &out, "race index store", "append"), place("log_order", &out, "race index load", "append"));
        assert_eq!(first.first(), Some(&(store, load)), "{opt}: the root cause is the index store's race with the load:\n{err}");
        assert!(!err.contains("race:   2. suppressing from "), "{opt}: the loop ends at the first harmful race:\n{err}");
    }
}

/// An uninitialized read in a worker that is properly synchronized (the dissertation's
/// mysqld-3): the worker reads a database's name through the selection the main thread left
/// NULL before creating it. No race (the creation orders them); the root cause is the
/// definition of the NULL, at -O2 too, where the store is inlined into `main` and the value
/// is computed from `argc` (a store outside the frame assigns, whatever its value crossed).
#[test]
fn an_uninitialized_read_in_a_synchronized_worker_is_traced_to_its_definition() {
    for opt in ["-O0", "-O2"] {
        let out = format!("load_unselected{opt}").replace('-', "_");
        let exe = program("load_unselected", "c", &out, &[opt]);
        let o = run_rtgrind(["--tool=race"], &Cmd::new(&exe));
        assert_eq!(o.status.code(), Some(1), "{out}: {}", o.describe());
        let err = o.stderr_str();
        let line = place("load_unselected", &out, "defines the selection", "select_database");
        // (At -O2 select_database is inlined into main: said so after its line.)
        let head = err.lines().find(|l| l.contains("race: first point of memory corruption: ")).unwrap_or_else(|| panic!("{out}: {err}"));
        assert!(head.ends_with(&line) || head.contains(&format!("{line}, inlined into main at ")), "{out}: expected {line}:\n{err}");
        assert!(err.contains("race: 0 data races (2 threads)"), "{out}: {err}");
    }
}

/// A failure that does not repeat when its schedule is replayed (the program aborts unless a
/// file exists, and makes it first; the file is outside the directory it runs in, whose new
/// entries the runs put aside): said so, exit status 2, no root cause guessed.
#[test]
fn a_failure_that_does_not_repeat_is_said_to_be_one() {
    let exe = program("fails_once", "c", "fails_once", &["-O0"]);
    let dir = crate::common::scratch_dir("fails_once");
    let marker = dir.join("marker");
    let _ = std::fs::remove_file(&marker);
    let o = run_rtgrind(["--tool=race", "--json"], &Cmd::new(&exe).arg(&marker));
    assert_eq!(o.status.code(), Some(2), "{}", o.describe());
    let err = o.stderr_str();
    assert!(err.contains("race: the run died of SIGABRT; it did not fail again when its schedule was replayed"), "{err}");
    assert!(!err.contains("root cause of the failure") && !err.contains("first point of memory corruption"), "{err}");
    let report: crate::model::Report = serde_json::from_str(o.stdout_str().lines().last().unwrap_or_default()).unwrap();
    assert_eq!(report.result, "not-reproducible");
    assert!(marker.exists(), "the program ran and made its file");
}

/// A worker's overflow that the main thread's crash uses after joining it: no race is
/// involved (none is found), so the root cause is the first point of memory corruption.
#[test]
fn a_failure_no_race_explains_gets_the_first_point_of_memory_corruption() {
    for opt in ["-O0", "-O2"] {
        let out = format!("worker_overflow{opt}").replace('-', "_");
        let exe = program("worker_overflow", "c", &out, &[opt]);
        let o = run_rtgrind(["--tool=race", "--json"], &Cmd::new(&exe));
        assert_eq!(o.status.code(), Some(1), "{opt}: {}", o.describe());
        let err = o.stderr_str();
        let line = place("worker_overflow", &out, "overflow", "work");
        assert!(err.contains(&format!("race: first point of memory corruption: {line}\n")), "{opt}: expected {line}:\n{err}");
        assert!(err.contains("race: the run died of SIGSEGV; no harmful race defined what it used"), "{opt}: {err}");
        let report: crate::model::Report = serde_json::from_str(o.stdout_str().lines().last().unwrap_or_default()).unwrap();
        assert_eq!((report.result.as_str(), report.findings[0].place.as_str()), ("root-cause", line.as_str()));
    }
}

/// `--explore`: a check and its use with a call between, and another thread that clears the
/// pointer checked. The default schedule never fails (the race is reported, but no failure to
/// explain); exploring finds a schedule that crashes, saves it beside the program's files,
/// and traces the crash to the clearing write's race with the reader; the command it prints
/// replays the crash.
#[test]
fn explore_finds_a_failing_schedule_and_its_root_cause() {
    let exe = program("check_then_use", "c", "check_then_use", &["-O0"]);
    let o = run_rtgrind(["--tool=race"], &Cmd::new(&exe));
    assert_eq!(o.stdout_str(), "1\n", "the default schedule does not fail: {}", o.describe());
    assert!(!o.stderr_str().contains("root cause"), "{}", o.describe());
    let dir = crate::common::scratch_dir("race-explore");
    let o = run_rtgrind(["--tool=race", "--explore=20"], &Cmd::new(&exe).cwd(&dir));
    assert_eq!(o.status.code(), Some(1), "{}", o.describe());
    let err = o.stderr_str();
    let root = err
        .lines()
        .position(|l| l.contains("race: root cause of the failure: the harmful data race below (the run died of SIGSEGV; it used "))
        .unwrap_or_else(|| panic!("{err}"));
    let first = races(&err.lines().skip(root).collect::<Vec<_>>().join("\n"));
    let at = |m: &str, f: &str| place("check_then_use", "check_then_use", m, f);
    // The clearing write's race with the check (WAR, checked first at the definition, as in
    // Fig. 6.1) or with the use (RAW): either is the atomicity violation's.
    let (clear, check, used) = (at("race clear", "closer"), at("race check", "reader"), at("race use", "reader"));
    let root_race = first.first().cloned().unwrap_or_default();
    assert!(root_race == (clear.clone(), check) || root_race == (used, clear), "{root_race:?}:\n{err}");
    let line = err
        .lines()
        .find(|l| l.contains(" of 20 (") && l.contains(") failed: the run died of SIGSEGV; saved as rtgrind-schedule."))
        .unwrap_or_else(|| panic!("{err}"));
    let saved = line.split("saved as ").nth(1).and_then(|t| t.split(';').next()).unwrap();
    assert!(line.ends_with(&format!("to replay it: rtgrind --tool=race --sched=replay:{saved} {}", exe.display())), "{line}");
    // The command it prints, run: the saved schedule fails again under the race tool it was
    // found with. (Under `--tool=none`, whose blocks differ, the same decisions need not make
    // the same interleaving: two CI runs of this stop's clean clone replayed it to a clean
    // exit there.)
    let replay = run_rtgrind(["--tool=race", &format!("--sched=replay:{saved}")], &Cmd::new(&exe).cwd(&dir));
    assert!(replay.stderr_str().contains("(the run died of SIGSEGV"), "the saved schedule fails again: {}", replay.describe());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--suppressions=FILE`: a known race named by function (TSan's `race:` form), by `file:line`,
/// or in a helgrind block, is left out (the program's own exit status then); another file's
/// race is not; a file that cannot be read or parsed is one line of error, exit status 2.
#[test]
fn known_races_are_left_out_by_a_suppressions_file() {
    let exe = program("racy_counter", "c", "racy_counter_supp", &["-O0"]);
    let line = place("racy_counter", "racy_counter_supp", "race", "work");
    let file_line = line.split(' ').next().unwrap();
    let dir = crate::common::scratch_dir("race-suppressions");
    for (name, text, left_out) in [
        ("by-function", "# known\nrace:work\n".to_string(), true),
        ("by-line", format!("race:{file_line}\n"), true),
        ("helgrind", "{\n   counter\n   Helgrind:Race\n   fun:wor*\n}\n".to_string(), true),
        ("other", "race:other.c\n".to_string(), false),
    ] {
        let f = dir.join(name);
        std::fs::write(&f, text).unwrap();
        let o = run_rtgrind(["--tool=race".to_string(), format!("--suppressions={}", f.display())], &Cmd::new(&exe));
        let err = o.stderr_str();
        if left_out {
            assert_eq!(o.status.code(), Some(0), "{name}: {}", o.describe());
            assert!(races(&err).is_empty() && err.contains("race: 0 data races (3 threads; 1 more suppressed by --suppressions)"), "{name}: {err}");
        } else {
            assert_eq!(o.status.code(), Some(1), "{name}: {}", o.describe());
            assert!(!races(&err).is_empty(), "{name}: {err}");
        }
    }
    let bad = dir.join("bad");
    std::fs::write(&bad, "work\n").unwrap();
    for f in [bad, dir.join("missing")] {
        let o = run_rtgrind(["--tool=race".to_string(), format!("--suppressions={}", f.display())], &Cmd::new(&exe));
        assert_eq!(o.status.code(), Some(2), "{}", o.describe());
        let err = o.stderr_str();
        assert!(err.lines().count() == 1 && err.starts_with("rtgrind: error: ") && err.contains("suppressions"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The root causes of the other failing programs, at -O0 and -O2, each the race (both
/// of its lines) or the line the program's comments name:
/// - double-checked locking that publishes its flag before the field (the failure uses what
///   the other thread had not written yet: the race whose other order avoids the failure);
/// - a reader that loads a shared pointer another thread clears and reopens (at -O0 the
///   failure's definition is the local copy of what the racing load saw, on its line);
/// - the harmful race of §6.2.1 of the dissertation (its "line 2", racing with itself or with
///   "line 1");
/// - a worker's stack overflow, no race: the first point of memory corruption (with and
///   without the stack protector).
///
/// (double_checked's assertion fails in a worker: its abort kills the process from a thread
/// that is not the main one, which once left the run without its report.)
#[test]
fn multithreaded_failures_are_traced_to_their_root_causes() {
    let pair = |name: &str, out: &str, a: &str, b: &str| -> Vec<(String, String)> {
        let (a, b) = (place(name, out, a, "get"), place(name, out, b, "get"));
        vec![(a.clone(), b.clone()), (b, a)]
    };
    for opt in ["-O0", "-O2"] {
        let run = |name: &str, flags: &[&str]| {
            let out = format!("{name}{opt}").replace('-', "_");
            let exe = program(name, "c", &out, &[&[opt], flags].concat());
            let o = run_rtgrind(["--tool=race"], &Cmd::new(&exe));
            assert_eq!(o.status.code(), Some(1), "{out}: {}", o.describe());
            (out, o.stderr_str())
        };
        // The root-cause race: the first race after the root-cause line.
        let root = |err: &str| {
            let at = err.lines().position(|l| l.contains("race: root cause of the failure: the harmful data race below (")).unwrap_or_else(|| panic!("{err}"));
            races(&err.lines().skip(at).collect::<Vec<_>>().join("\n")).into_iter().next().unwrap()
        };
        let (out, err) = run("double_checked", &[]);
        assert!(pair("double_checked", &out, "race check", "race publish").contains(&root(&err)), "{out}: {err}");
        let (out, err) = run("reopen_reader", &[]);
        // The reader's load is its line's, or at -O2 the use's line it was scheduled into.
        let close = place("reopen_reader", &out, "race close", "reloader");
        let r = root(&err);
        let reader = if r.0 == close { &r.1 } else { &r.0 };
        assert!((r.0 == close || r.1 == close) && ["race load", "crash"].iter().any(|m| *reader == place("reopen_reader", &out, m, "reader")), "{out}: {err}");
        let (out, err) = run("paper_harmful_race", &[]);
        let (line1, line2) = (place("paper_harmful_race", &out, "line 1", "work"), place("paper_harmful_race", &out, "line 2", "work"));
        let r = root(&err);
        assert!(r.0 == line2 && (r.1 == line2 || r.1 == line1) || r.1 == line2 && r.0 == line1, "{out}: {r:?}\n{err}");
        // A fault at the smashed return, or the stack protector's abort in the worker (whose
        // buffer is in the worker's stack, an anonymous mapping, not a heap block).
        for protector in ["-fno-stack-protector", "-fstack-protector-all"] {
            let (out, err) = run("worker_stack_overflow", &[protector]);
            let overflow = place("worker_stack_overflow", &out, "overflow", "label");
            assert!(err.contains(&format!("race: first point of memory corruption: {overflow}")), "{out} {protector}: {err}");
        }
    }
}

/// Both accesses of a race come with their callers: the later's from the detection run, the
/// earlier's from the harm test's reference run, where the replayed schedule brings it again;
/// each thread's stack is scanned only up to where it started (no stale frames of `main`
/// above a worker's `clone`).
#[test]
fn both_accesses_of_a_race_have_their_callers() {
    let exe = program("log_order", "c", "log_order", &["-O0"]);
    let o = run_rtgrind(["--tool=race"], &Cmd::new(&exe));
    let err = o.stderr_str();
    let caller = place("log_order", "log_order", "call append", "worker");
    let lines: Vec<&str> = err.lines().map(|l| l.split_once("race: ").map_or(l, |(_, r)| r)).collect();
    // The race of the index store with the other worker's index load.
    let store = place("log_order", "log_order", "race index store", "append");
    let at = lines.iter().position(|l| l.starts_with("data race at ") && l.ends_with(&format!("at {store}"))).unwrap_or_else(|| panic!("{err}"));
    let end = at + 1 + lines[at + 1..].iter().position(|l| l.starts_with("data race at ")).unwrap_or(lines.len() - at - 1);
    let race = &lines[at..end];
    let earlier =
        race.iter().position(|l| l.starts_with("   the earlier access (seen again when the schedule was replayed):")).unwrap_or_else(|| panic!("{err}"));
    // Each stack's first caller (Valgrind's `by 0x...: worker (log_order.c:28)`).
    let (file_line, function) = caller.split_once(" (").unwrap();
    let caller = format!("{} ({file_line})", function.trim_end_matches(')'));
    let first_caller = |from: usize| race[from..].iter().find(|l| l.starts_with("   by 0x")).map(|l| l.split_once(": ").map_or("", |(_, p)| p).to_string());
    assert_eq!(first_caller(0).as_deref(), Some(caller.as_str()), "{err}");
    assert_eq!(first_caller(earlier).as_deref(), Some(caller.as_str()), "{err}");
    assert!(!race.iter().any(|l| l.starts_with("   by 0x") && l.contains(": main (")), "{err}");
}

/// A race in a heap block names the block (its size, the offset in it) and where it was
/// allocated (the allocator's caller, and its caller), even though the program frees it before
/// the end (the allocation functions are watched at entry and return, calloc's `memset` tail
/// too; -O0 and -O2).
#[test]
fn a_race_in_a_heap_block_says_where_it_was_allocated() {
    for opt in ["-O0", "-O2"] {
        let out = format!("heap_counter{opt}").replace('-', "_");
        let exe = program("heap_counter", "c", &out, &[opt]);
        let o = run_rtgrind(["--tool=race", "--harm=no"], &Cmd::new(&exe));
        let err = o.stderr_str();
        let (alloc, call) = (place("heap_counter", &out, "alloc", "make"), place("heap_counter", &out, "call make", "main"));
        let object = err.lines().find_map(|l| l.split_once("race:    the address is ").map(|(_, o)| o.to_string())).unwrap_or_else(|| panic!("{out}: {err}"));
        let head = "in a heap block of 4808 bytes at 0x";
        assert!(object.starts_with(head), "{out}: {object}");
        // (-O2's make() ends in a jump to calloc: main is the caller then.)
        let at = if opt == "-O0" { format!("{alloc}, called from {call}") } else { call };
        assert!(object.contains(&format!(", at offset 4800, allocated at {at}")), "{out}: {object}");
    }
}

/// A race through the C library's `memcpy` (trusted code, whose stores are never checked) is
/// found at the program's call, against the other thread's read, and the harm test reverses
/// the two (the read waits for the call to return: it sees the copy); `memset` under a lock is
/// not a race (-O0 and -O2: a size the compiler cannot see keeps the calls).
#[test]
fn a_race_through_memcpy_is_found_at_the_call() {
    for opt in ["-O0", "-O2"] {
        let out = format!("memcpy_race{opt}").replace('-', "_");
        let exe = program("memcpy_race", "c", &out, &[opt]);
        let o = run_rtgrind(["--tool=race"], &Cmd::new(&exe));
        assert_eq!(o.status.code(), Some(1), "{out}: {}", o.describe());
        let err = o.stderr_str();
        let (copy, read) = (place("memcpy_race", &out, "racing copy", "copier"), place("memcpy_race", &out, "racing read", "main"));
        let mut found = races(&err);
        found.iter_mut().for_each(|p| {
            if p.0 > p.1 {
                std::mem::swap(&mut p.0, &mut p.1)
            }
        });
        let mut want = (copy, read);
        if want.0 > want.1 {
            std::mem::swap(&mut want.0, &mut want.1);
        }
        assert_eq!(found, vec![want], "{out}: {err}");
        assert!(err.contains("write by `memcpy` by thread 1 at "), "{out}: {err}");
        let read = place("memcpy_race", &out, "racing read", "main");
        let harmful = format!("harmful: thread 0's read at {read} reads 0x0 in the run's order, 0x61 in the other; the program's output changed too");
        assert!(err.contains(&harmful), "{out}: {err}");
    }
}

/// A race through `strlen` (the library's reads are trusted: the program's call is checked up
/// to the string's NUL) is found against the other thread's write of a letter, and judged by
/// reversing them at the call; `strcpy` and `strcmp` under one mutex are not a race.
#[test]
fn a_race_through_strlen_is_found_at_the_call() {
    for opt in ["-O0", "-O2"] {
        let out = format!("strlen_race{opt}").replace('-', "_");
        let exe = program("strlen_race", "c", &out, &[opt]);
        let o = run_rtgrind(["--tool=race"], &Cmd::new(&exe));
        assert_eq!(o.status.code(), Some(1), "{out}: {}", o.describe());
        let err = o.stderr_str();
        let (write, call) = (place("strlen_race", &out, "racing write", "renamer"), place("strlen_race", &out, "racing strlen", "main"));
        assert!(err.contains(&format!("write of 1 bytes by thread 1 at {write}")), "{out}: {err}");
        assert!(err.contains(&format!("and an earlier read by `strlen` by thread 0 at {call}, with no synchronization between")), "{out}: {err}");
        assert!(err.contains(&format!("harmful: thread 0's read at {call} reads 0x6c in the run's order, 0x4c in the other")), "{out}: {err}");
        assert!(err.contains("race: 1 data races ("), "{out}: {err}");
    }
}

/// A string function's range is read in place from pages known readable, forgotten when the
/// guest unmaps one: `strlen` of an unmapped string is the guest's SIGSEGV, as natively, not a
/// fault in rtgrind (internal error, status 125, before the pages were forgotten).
#[test]
fn a_string_on_an_unmapped_page_is_the_guests_crash() {
    use std::os::unix::process::ExitStatusExt;
    let exe = program("string_after_munmap", "c", "string_after_munmap", &["-O0"]);
    let o = run_rtgrind(["--tool=race", "--harm=no"], &Cmd::new(&exe));
    assert_eq!(o.status.signal(), Some(libc::SIGSEGV), "{}", o.describe());
    assert_eq!(o.stdout_str(), "5\n", "{}", o.describe());
    assert!(o.stderr_str().contains("Process terminating with default action of signal 11 (SIGSEGV)"), "{}", o.describe());
}

/// A race whose earlier access is a `memset` call: the harm test holds that thread back at the
/// call until the other thread has read, which then reads 0 instead of the fill.
#[test]
fn a_race_after_a_memset_call_is_reversed_at_the_call() {
    for opt in ["-O0", "-O2"] {
        let out = format!("memset_first{opt}").replace('-', "_");
        let exe = program("memset_first", "c", &out, &[opt]);
        let o = run_rtgrind(["--tool=race"], &Cmd::new(&exe));
        assert_eq!(o.status.code(), Some(1), "{out}: {}", o.describe());
        let err = o.stderr_str();
        let (fill, read) = (place("memset_first", &out, "racing fill", "main"), place("memset_first", &out, "racing read", "reader"));
        assert!(err.contains(&format!("read of 1 bytes by thread 1 at {read}")), "{out}: {err}");
        assert!(err.contains(&format!("and an earlier write by `memset` by thread 0 at {fill}, with no synchronization between")), "{out}: {err}");
        let harmful = format!("harmful: thread 1's read at {read} reads 0x79 in the run's order, 0x0 in the other; the program's output changed too");
        assert!(err.contains(&harmful), "{out}: {err}");
    }
}

/// The dissertation's non-race error (§6.2.2, Fig. 6.5 and 6.6): the races on `z` and `*x` are
/// judged benign (every order stores the same value), and the loop goes on past the crashes to
/// the assertion they hid and its definition, the wrong constant stored at "line -1": suppressing
/// it, nothing fails. (Before, the search stopped at the assertion, a failure other than the
/// crash on a constant.)
#[test]
fn a_non_race_error_is_traced_past_its_benign_races() {
    for opt in ["-O0", "-O2"] {
        let out = format!("paper_non_race_error{opt}").replace('-', "_");
        let exe = program("paper_non_race_error", "c", &out, &[opt]);
        let o = run_rtgrind(["--tool=race"], &Cmd::new(&exe));
        assert_eq!(o.status.code(), Some(1), "{out}: {}", o.describe());
        let err = o.stderr_str();
        let wrong_z = place("paper_non_race_error", &out, "line -1", "work");
        assert!(err.contains(&format!("race: first point of memory corruption: {wrong_z}\n")), "{out}: {err}");
        // The race of the two threads' "line -1" stores, judged benign.
        let lines: Vec<&str> = err.lines().collect();
        let at = lines.iter().position(|l| l.contains("race: data race at ") && l.ends_with(&format!("at {wrong_z}")));
        let at = at.unwrap_or_else(|| panic!("{out}: no race at {wrong_z}:\n{err}"));
        let verdict = lines[at..].iter().find(|l| l.contains("race:    benign") || l.contains("race:    harmful") || l.contains("race:    undecided")).unwrap();
        assert!(verdict.contains("race:    benign: both orders leave the same value: the two writes store the same value"), "{out}: {err}");
    }
}

/// A deadlock (two threads lock two mutexes in opposite orders) is reported as the scheduler
/// finds it (each thread and its futex) with its exit status, 123, after the races.
#[test]
fn a_deadlock_is_reported_with_its_threads() {
    let source = std::fs::read_to_string(repo_root().join("guest-programs/threads/special/abba_deadlock.c")).unwrap();
    let exe = compile_snippet("abba_deadlock_race", "c", &source, &["-g", "-pthread"]);
    let o = crate::common::run_rtgrind_within(["--tool=race"], &Cmd::new(&exe), std::time::Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(123), "{}", o.describe());
    let err = o.stderr_str();
    let own = |l: &&str| crate::common::report_line_pid(l) == Some(o.pid);
    assert!(err.lines().filter(own).any(|l| l.contains("deadlock: all 3 live threads wait forever")), "{err}");
    assert_eq!(err.lines().filter(own).filter(|l| l.contains("deadlock:   thread ") && l.contains(" waits on futex 0x")).count(), 3, "{err}");
}

/// A race on a counter in the main thread's frame, which two workers increment through a
/// pointer: found at its line, and the address said to be on the main thread's stack.
#[test]
fn a_race_on_a_threads_stack_says_whose_stack() {
    let exe = program("stack_shared", "c", "stack_shared", &["-O0"]);
    let o = run_rtgrind(["--tool=race"], &Cmd::new(&exe));
    assert_eq!(o.status.code(), Some(1), "{}", o.describe());
    let err = o.stderr_str();
    let line = place("stack_shared", "stack_shared", "race", "work");
    let found = races(&err);
    assert!(!found.is_empty() && found.iter().all(|(a, b)| a == &line && b == &line), "{err}");
    assert!(err.contains("race:    the address is on thread 0's stack"), "{err}");
}

/// Issue 30: a thread's atomic read-modify-writes of a location it owns (it made the one before,
/// and has not synchronized since) are made inline, without a call-out each, and still release
/// what came before each and only that: main, having seen the count's end, reads the value
/// written before the last increment without a race and the one written after it with one
/// (-O0, -O2). With `--stats`, the 10,001 increments take a few dozen light call-outs, not one
/// each.
#[test]
fn atomic_increments_of_an_owned_location_stay_inline_and_order_as_before() {
    only_race("owned_counter", "1 10001 ok\n", ("racing read", "main"), ("racing write", "worker"));
    let (light, err) = callouts("owned_counter", "-O2", "race atomic (light)");
    assert!(light < 1000, "{light} light call-outs for 10,001 increments:\n{err}");
}

/// How many call-outs of `kind` (as `--stats` names it) the race tool makes on guest program
/// `name` built with `opt` (`--harm=no`), and its standard error.
fn callouts(name: &str, opt: &str, kind: &str) -> (u64, String) {
    let exe = program(name, "c", &format!("{name}_stats{}", opt.replace('-', "_")), &[opt]);
    let o = run_rtgrind(["--tool=race", "--harm=no", "--stats"], &Cmd::new(&exe));
    let err = o.stderr_str();
    let n = err.lines().find_map(|l| l.split("stats:").nth(1)?.trim().strip_suffix(&format!(" {kind}"))?.parse().ok()).unwrap_or(0);
    (n, err)
}

/// A worker's table written first in one epoch, then again in seven later ones (its own older
/// accesses there), is recorded from the code cache (issue 30) and orders as before: main,
/// having acquired the lock the worker published the table under, reads it without a race,
/// and the word the worker wrote after that unlock races with main's read at their lines
/// (-O0, -O2). With `--stats`, the worker's 32,768 writes take no light call-out, though their
/// code was first translated while main ran alone (main's own fill first, which takes 4,096:
/// the record starts with the second thread): the light call-outs are main's 4,096 and a few
/// thousand of main's reads of the worker's words, not one per granule and epoch (41,000
/// without the inline record).
#[test]
fn accesses_new_to_an_epoch_are_recorded_inline_and_order_as_before() {
    only_race("fresh_records", "67092480 ok\n", ("racing read", "main"), ("racing write", "worker"));
    let (light, err) = callouts("fresh_records", "-O0", "race access (light)");
    assert!(light < 12_000, "{light} light call-outs:\n{err}");
}

/// A granule whose write word is another thread's is recorded from the code cache where that
/// write is ordered before the access (issue 30): the thread keeps its clock's entries in its
/// tool area, and the inline code compares the word's epoch with its thread's entry. Main reads
/// the table a worker published under a lock without a race, and the word the worker wrote again
/// after the unlock (its next epoch, told through a pipe) races with main's read at their lines
/// (-O0, -O2). With `--stats`, a few dozen light call-outs, not one per granule of the table
/// (4,118 before).
#[test]
fn another_threads_write_ordered_before_is_recorded_inline_and_races_as_before() {
    only_race("handed_table", "8382472\n", ("racing read", "main"), ("racing write", "worker"));
    let (light, err) = callouts("handed_table", "-O0", "race access (light)");
    assert!(light < 1_000, "{light} light call-outs:\n{err}");
}

/// A memory function's range check records a read in place only where the granule's write is
/// ordered before it (issue 30): a worker compares the start of a buffer in two epochs (in
/// place), then, after a pipe (no synchronization), compares up to the byte main wrote meanwhile
/// in a granule the worker never read: the race of that memcmp with main's write, at their
/// lines (-O0, -O2). Recording the read in place there too would miss it.
#[test]
fn a_memory_functions_read_in_place_still_races_with_a_write_not_ordered_before_it() {
    only_race("compare_after_write", "ok\n", ("racing compare", "worker"), ("racing write", "main"));
}

/// A granule moves into a full cell, and back to the compact words, in the light call-outs
/// themselves (issue 30), as `sort`'s lines do when both its threads compare them: the worker,
/// then main, memcmp every line of a table (reads by two threads not ordered with each other),
/// and the worker's later write to a line races with main's memcmp read, which only the new cell
/// holds, at their lines (-O0, -O2). With `--stats`, a few dozen full memory-call call-outs, not
/// one per line (2,003 before).
#[test]
fn a_memory_functions_read_into_a_new_full_cell_is_light_and_races_as_before() {
    only_race("shared_lines", "ok\n", ("racing write", "worker"), ("racing compare", "compare_all"));
    let (full, err) = callouts("shared_lines", "-O0", "race memory call (full)");
    assert!(full < 200, "{full} full memory-call call-outs:\n{err}");
}

/// A granule whose full cell's list of one thread's reads grew onto the heap (five epochs' bytes,
/// as xz's window) goes back to the compact words in the light call-out once a read takes over
/// them all (issue 30): its lists emptied, not freed. The worker's whole read then held in the
/// words races with main's later write at their lines (-O0, -O2). With `--stats` (-O0), one full
/// access call-out per granule (its list's growth), not two (4,054 before).
#[test]
fn a_full_cell_whose_lists_grew_goes_back_to_the_words_light_and_races_as_before() {
    only_race("grown_reads", "ok\n", ("racing write", "main"), ("racing read", "worker"));
    let (full, err) = callouts("grown_reads", "-O0", "race access (full)");
    assert!(full < 3_000, "{full} full access call-outs:\n{err}");
}

/// Two threads taking turns with a spinlock (issue 30): the C library's plain store that
/// unlocks it (a release) and the plain load of the exit word by which `pthread_join` finds the
/// worker gone (an acquire) are made in light call-outs where no clock grows, and order as
/// before: the totals added under the lock do not race, the word the worker writes after its
/// last unlock races with main's read at their lines (-O0, -O2). With `--stats` (-O2), a few
/// dozen full access call-outs, not 4,066.
#[test]
fn the_runtimes_plain_synchronization_is_light_and_orders_as_before() {
    only_race("turns", "3998000 ok\n", ("racing read", "main"), ("racing write", "worker"));
    let (full, err) = callouts("turns", "-O2", "race access (full)");
    assert!(full < 1_000, "{full} full call-outs:\n{err}");
}
