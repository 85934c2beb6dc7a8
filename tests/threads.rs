//! Threads under rtgrind's deterministic scheduler, and repeatable runs (issue 3).
//!
//! * Differential: every program in `guest-programs/threads/` (not `special/`), in each of its
//!   build variants, runs natively and under `rtgrind -q --tool=none`; exit status, stdout and
//!   stderr must be identical. The first variant also runs under a seeded random schedule with a
//!   small quantum, which must not change the output of a correctly synchronized program. Also
//!   python3 with `threading`.
//! * Determinism: `special/racy_counter` (unsynchronized increments; its output depends on the
//!   interleaving) gives the same output and the same recorded schedule every time with the same
//!   seed, different outputs over different seeds, and `--sched=replay:FILE` reproduces a
//!   recorded run. `special/racy_env` prints the same line in every `--repeatable=yes` run.
//! * Deadlock: `special/abba_deadlock` is reported (`==PID== deadlock...`, exit status 123)
//!   within 30 seconds instead of hanging.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use crate::common::{self, assert_no_panic, compare, run_native, run_rtgrind, run_rtgrind_within, Cmd, GuestProgram, Output};

// ---------------------------------------------------------------------------------------------
// Differential tests

/// One `#[test]` per program in `guest-programs/threads/` (running all of its variants), plus
/// `THREAD_TESTS`, which `every_thread_program_has_a_test` checks the directory against.
macro_rules! thread_tests {
    ($($name:ident),* $(,)?) => {
        const THREAD_TESTS: &[&str] = &[$(stringify!($name)),*];
        $(
            #[test]
            fn $name() {
                check_thread_guest(stringify!($name));
            }
        )*
    };
}

thread_tests! {
    mutex_counter,
    condvar_pc,
    barrier,
    rwlock,
    semaphore,
    detached,
    many_threads,
    exit_while_running,
    cancel,
    tls,
    cxx_thread,
    openmp,
    tgkill,
    exit_group_from_thread,
    pipe_block,
    affinity,
    robust,
}

/// The programs of `guest-programs/threads/special/`, each used by a test below.
const SPECIAL_PROGRAMS: &[&str] = &["racy_counter", "abba_deadlock", "racy_env", "spin_wide_store", "racy_file_io", "spin_flag", "spin_pause"];

/// `--sched=random:SEED` for a program: a seed derived from its name (FNV-1a), so each program
/// sees a different but fixed schedule.
fn random_sched_for(name: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    format!("--sched=random:{}", h % 1000 + 1)
}

/// Runs every variant of threads program `name` natively and under rtgrind (the first variant
/// also under a random schedule with a small quantum) and reports all mismatches together.
fn check_thread_guest(name: &str) {
    let guest = common::guest_in(&common::threads_dir(), name).unwrap_or_else(|e| panic!("{e}"));
    let dir = common::scratch_dir(name);
    let sched = random_sched_for(name);
    let mut failed = Vec::new();
    let mut reports = Vec::new();
    'variants: for (i, (variant, exe)) in guest.builds.iter().enumerate() {
        let cmd = guest.cmd(exe).cwd(&dir);
        common::reset_dir(&dir);
        let native = run_native(&cmd);
        if let Err(e) = guest.spec.expect.check(&native) {
            failed.push(variant.to_string());
            reports.push(format!(
                "[{variant}] the native run does not match the program's directives ({e}); \
                 fix the test program:\n{}",
                native.describe()
            ));
            continue;
        }
        let mut runs: Vec<(String, Vec<&str>)> = vec![(variant.to_string(), vec!["-q", "--tool=none"])];
        if i == 0 {
            runs.push((format!("{variant} {sched} --quantum=997"), vec!["-q", "--tool=none", &sched, "--quantum=997"]));
        }
        for (label, opts) in runs {
            common::reset_dir(&dir);
            let rt = run_rtgrind(&opts, &cmd);
            if let Err(e) = compare(&native, &rt) {
                failed.push(label.clone());
                reports.push(format!("[{label}] {e}"));
            }
            if rt.timed_out {
                // One hang is enough to see; more would only multiply the wait.
                reports.push("(after a timeout the remaining runs are skipped)".to_owned());
                break 'variants;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    if !failed.is_empty() {
        let all: Vec<&str> = guest.builds.iter().map(|(v, _)| *v).collect();
        panic!(
            "threads program {name} ({}) failed in [{}] of variants {}:\n\n{}",
            guest.source.display(),
            failed.join("], ["),
            all.join(","),
            reports.join("\n\n")
        );
    }
}

/// Every source in `guest-programs/threads/` has a test above and every test a source; the
/// programs in `special/` are exactly those the tests below use. Also checks every directive.
#[test]
fn every_thread_program_has_a_test() {
    let mut problems = Vec::new();
    for (dir, listed, list_name) in
        [(common::threads_dir(), THREAD_TESTS, "thread_tests!"), (common::threads_special_dir(), SPECIAL_PROGRAMS, "SPECIAL_PROGRAMS")]
    {
        let names = common::guest_names_in(&dir);
        for n in &names {
            if !listed.contains(&n.as_str()) {
                problems.push(format!("{}/{n}: no test; add `{n}` to {list_name} in tests/threads.rs", dir.display()));
            }
            if let Err(e) = common::guest_spec_in(&dir, n) {
                problems.push(format!("{n}: {e}"));
            }
        }
        for t in listed {
            if !names.iter().any(|n| n == t) {
                problems.push(format!("{t}: listed in {list_name} in tests/threads.rs but missing from {}", dir.display()));
            }
        }
    }
    assert!(problems.is_empty(), "threads programs and tests disagree:\n  {}", problems.join("\n  "));
}

/// A correctly synchronized program prints the same under every scheduling policy, including a
/// switch every 50 blocks and PCT priorities.
#[test]
fn scheduling_policies_keep_correct_output() {
    let guest = common::guest_in(&common::threads_dir(), "condvar_pc").unwrap_or_else(|e| panic!("{e}"));
    let cmd = guest.cmd(&guest.builds[0].1);
    let native = run_native(&cmd);
    guest.spec.expect.check(&native).unwrap_or_else(|e| panic!("native run of condvar_pc: {e}\n{}", native.describe()));
    let mut errors = Vec::new();
    for opts in
        [&["--sched=rr", "--quantum=50"][..], &["--sched=random:11", "--quantum=200"][..], &["--sched=pct:5:3"][..], &["--sched=pct:9:5", "--quantum=1000"][..]]
    {
        let mut all = vec!["-q", "--tool=none"];
        all.extend_from_slice(opts);
        let rt = run_rtgrind(&all, &cmd);
        if let Err(e) = compare(&native, &rt) {
            errors.push(format!("[{}] {e}", opts.join(" ")));
        }
        if rt.timed_out {
            break;
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n\n"));
}

/// A thread that busy-waits on another's progress does not stall a PCT schedule for ever: one
/// that kept the others from running for a hundred decisions in a row drops below them (and so
/// does one that yields). Depth 1 has no change point: with the spinner ranked first, half of
/// these seeds never ended before.
#[test]
fn pct_lets_a_spinning_thread_fall_behind() {
    let source = std::fs::read_to_string(common::threads_special_dir().join("spin_flag.c")).unwrap();
    let exe = common::compile_snippet("spin_flag", "c", &source, &["-O1", "-pthread"]);
    for seed in 1..=12 {
        let sched = format!("--sched=pct:{seed}:1");
        let o = run_rtgrind_within(["-q", "--tool=none", sched.as_str()], &Cmd::new(&exe), Duration::from_secs(60));
        assert!(!o.timed_out, "{sched}: the run did not end");
        assert_eq!((o.status.code(), o.stdout_str().as_str()), (Some(0), "done\n"), "{sched}: {}", o.describe());
    }
}

/// `pause` is a switch point (as in Valgrind): a thread spinning with it lets the thread it
/// waits for run at its first `pause`, under each policy (before, it spun out its quantum at
/// every wait: 49,989 pauses here under `rr`, and libgomp's barriers took 300x native).
#[test]
fn a_spinning_thread_lets_the_others_run_at_pause() {
    let source = std::fs::read_to_string(common::threads_special_dir().join("spin_pause.c")).unwrap();
    let exe = common::compile_snippet("spin_pause", "c", &source, &["-O1", "-pthread"]);
    for sched in ["--sched=rr", "--sched=random:4", "--sched=pct:3:2"] {
        let o = run_rtgrind(["-q", "--tool=none", sched], &Cmd::new(&exe));
        assert_eq!((o.status.code(), o.stdout_str().as_str()), (Some(0), "1 pauses\n"), "{sched}: {}", o.describe());
    }
}

const PYTHON_THREADS: &str = r#"
import queue
import threading

lock = threading.Lock()
items = []

def appender(k):
    for i in range(3000):
        with lock:
            items.append(k * 100000 + i)

threads = [threading.Thread(target=appender, args=(k,)) for k in range(6)]
for t in threads:
    t.start()
for t in threads:
    t.join()
in_order = all(
    [x for x in items if x // 100000 == k] == [k * 100000 + i for i in range(3000)]
    for k in range(6)
)
print("items:", len(items), "sum:", sum(items), "per-thread order kept:", in_order)

q = queue.Queue(maxsize=5)
results = []
def producer():
    for i in range(500):
        q.put(i)
    for _ in range(3):
        q.put(None)
def consumer():
    total = 0
    while True:
        v = q.get()
        if v is None:
            break
        total += v * v
    with lock:
        results.append(total)
workers = [threading.Thread(target=consumer) for _ in range(3)]
workers.append(threading.Thread(target=producer))
for t in workers:
    t.start()
for t in workers:
    t.join()
print("queue: sum of squares", sum(results), "consumers", len(results))

done = threading.Event()
seen = []
def waiter():
    done.wait()
    seen.append(threading.current_thread().name)
ws = [threading.Thread(target=waiter, name="w%d" % i) for i in range(4)]
for t in ws:
    t.start()
done.set()
for t in ws:
    t.join()
print("event woke:", sorted(seen), "alive now:", threading.active_count())
"#;

#[test]
fn python3_threading() {
    let python = Path::new("/usr/bin/python3");
    assert!(python.exists(), "/usr/bin/python3 is not installed (see .ci/run)");
    let cmd = Cmd::new(python).args(["-c", PYTHON_THREADS]).env("PYTHONDONTWRITEBYTECODE", "1").env("PYTHONHASHSEED", "0");
    let native = run_native(&cmd);
    common::assert_exit(&native, 0);
    assert!(
        native.stdout_str().contains("items: 18000 sum: 4526991000 per-thread order kept: True"),
        "unexpected native python output:\n{}",
        native.describe()
    );
    let rt = run_rtgrind(["-q", "--tool=none"], &cmd);
    common::assert_same(&native, &rt);
}

// ---------------------------------------------------------------------------------------------
// Determinism

/// A program of `guest-programs/threads/special/`.
fn special(name: &str) -> &'static GuestProgram {
    common::guest_in(&common::threads_special_dir(), name).unwrap_or_else(|e| panic!("{e}"))
}

/// The executable of `variant` of `g`.
fn build<'a>(g: &'a GuestProgram, variant: &str) -> &'a Path {
    g.builds.iter().find(|(v, _)| *v == variant).map(|(_, p)| p.as_path()).unwrap_or_else(|| panic!("{} has no {variant} build", g.name))
}

/// The result of one racy_counter run under rtgrind with a recorded schedule.
struct RacyRun {
    out: Output,
    /// The final counter the guest printed.
    counter: u64,
    /// The recorded schedule file's contents.
    schedule: Vec<u8>,
}

/// `racy_counter` under `rtgrind -q --tool=none SCHED_OPTS --record-schedule=FILE`. Panics
/// unless the guest exits 0 with a well-formed line and the schedule file was written.
fn racy_run(sched_opts: &[&str], schedule_file: &Path) -> RacyRun {
    let g = special("racy_counter");
    let _ = std::fs::remove_file(schedule_file);
    let record = format!("--record-schedule={}", schedule_file.display());
    let mut opts = vec!["-q", "--tool=none"];
    opts.extend_from_slice(sched_opts);
    opts.push(&record);
    let out = run_rtgrind(&opts, &g.cmd(build(g, "pie")));
    assert_no_panic(&out);
    common::assert_exit(&out, 0);
    let text = out.stdout_str();
    let counter = text
        .strip_prefix("counter=")
        .and_then(|t| t.strip_suffix(" of 600000\n"))
        .and_then(|n| n.parse::<u64>().ok())
        .filter(|&n| n > 0 && n <= 600_000)
        .unwrap_or_else(|| panic!("racy_counter printed an unexpected line:\n{}", out.describe()));
    let schedule = std::fs::read(schedule_file)
        .unwrap_or_else(|e| panic!("rtgrind did not write the schedule file {} ({e}):\n{}", schedule_file.display(), out.describe()));
    assert!(!schedule.is_empty(), "the recorded schedule {} is empty although three threads ran:\n{}", schedule_file.display(), out.describe());
    // Each decision: `N TO QUANTUM FROM BLOCKS`, numbered from 1, and a thread's block count
    // at its switches never goes back.
    let mut last: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    for (i, line) in String::from_utf8_lossy(&schedule).lines().filter(|l| !l.starts_with('#')).enumerate() {
        let f: Vec<u64> = line.split(' ').filter_map(|x| x.parse().ok()).collect();
        assert!(f.len() == 5 && f[0] == i as u64 + 1, "schedule line {}: {line:?}", i + 1);
        let prev = last.insert(f[3], f[4]).unwrap_or(0);
        assert!(f[4] >= prev, "schedule line {}: thread {} at block {} after {prev}", i + 1, f[3], f[4]);
    }
    RacyRun { out, counter, schedule }
}

/// The first line where two schedule files differ, for messages.
fn first_schedule_difference(a: &[u8], b: &[u8]) -> String {
    let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    for i in 0..la.len().max(lb.len()) {
        let (x, y) = (la.get(i), lb.get(i));
        if x != y {
            return format!("line {}: {:?} vs {:?} ({} vs {} lines)", i + 1, x, y, la.len(), lb.len());
        }
    }
    "identical".to_owned()
}

/// The same seed gives byte-identical output and an identical recorded schedule, 20 times.
#[test]
fn racy_counter_same_seed_same_run() {
    let dir = common::scratch_dir("racy-same-seed");
    let first = racy_run(&["--sched=random:7"], &dir.join("schedule-0.txt"));
    let mut problems = Vec::new();
    for k in 1..20 {
        let run = racy_run(&["--sched=random:7"], &dir.join(format!("schedule-{k}.txt")));
        if run.out.stdout != first.out.stdout {
            problems.push(format!("run {k}: stdout {:?}, run 0: {:?}", run.out.stdout_str(), first.out.stdout_str()));
        }
        if run.schedule != first.schedule {
            problems.push(format!("run {k}: the recorded schedule differs from run 0's: {}", first_schedule_difference(&first.schedule, &run.schedule)));
        }
    }
    assert!(problems.is_empty(), "racy_counter under --sched=random:7 is not repeatable (files in {}):\n  {}", dir.display(), problems.join("\n  "));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Different seeds give different interleavings: over seeds 1..50 at least two different final
/// counters appear (the loop stops as soon as they have).
#[test]
fn racy_counter_seeds_give_different_outputs() {
    let dir = common::scratch_dir("racy-seeds");
    let mut seen = BTreeSet::new();
    let mut tried = 0;
    for seed in 1..=50 {
        let run = racy_run(&[&format!("--sched=random:{seed}")], &dir.join("schedule.txt"));
        tried += 1;
        seen.insert(run.counter);
        if seen.len() >= 2 {
            break;
        }
    }
    assert!(
        seen.len() >= 2,
        "racy_counter printed the same counter under all {tried} seeds 1..50: {seen:?}; \
         --sched=random:SEED does not change the interleaving"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--sched=replay:FILE` of a recorded schedule reproduces that run's output (and its schedule),
/// for random and PCT recordings.
#[test]
fn replay_reproduces_recorded_runs() {
    let dir = common::scratch_dir("racy-replay");
    let mut problems = Vec::new();
    let mut counters = BTreeSet::new();
    for (k, sched) in ["--sched=random:3", "--sched=random:17", "--sched=random:42", "--sched=pct:5:3"].iter().enumerate() {
        let recorded_file = dir.join(format!("recorded-{k}.txt"));
        let recorded = racy_run(&[sched], &recorded_file);
        counters.insert(recorded.counter);
        let replay = format!("--sched=replay:{}", recorded_file.display());
        let replayed = racy_run(&[&replay], &dir.join(format!("replayed-{k}.txt")));
        if replayed.out.stdout != recorded.out.stdout {
            problems.push(format!("{sched}: recorded run printed {:?}, its replay {:?}", recorded.out.stdout_str(), replayed.out.stdout_str()));
        }
        if replayed.schedule != recorded.schedule {
            problems.push(format!(
                "{sched}: the schedule recorded during the replay differs: {}",
                first_schedule_difference(&recorded.schedule, &replayed.schedule)
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "replay does not reproduce recorded runs (files in {}; counters seen {counters:?}):\n  {}",
        dir.display(),
        problems.join("\n  ")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// Deadlock

/// `abba_deadlock` (which deadlocks natively too) is reported: exit status 123 within 30 s, a
/// `==PID== ` line naming the deadlock, and a line per blocked thread (main in pthread_join, two
/// threads in pthread_mutex_lock) with what it waits on (a futex or mutex) and its guest pc.
#[test]
fn abba_deadlock_is_reported() {
    let g = special("abba_deadlock");
    let cmd = g.cmd(build(g, "pie"));
    let mut problems = Vec::new();
    for opts in [&["-q", "--tool=none"][..], &["-q", "--tool=none", "--sched=random:5", "--quantum=500"][..]] {
        let out = run_rtgrind_within(opts, &cmd, Duration::from_secs(30));
        if let Err(e) = check_deadlock_report(&out) {
            problems.push(format!("[{}] {e}\n{}", opts.join(" "), out.describe()));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// Two threads that spin until each sees the other's flag finish under the shadow tools too:
/// their wide shadow stores (AVX-512 temporaries) leave the engine's block count alone, so the
/// spinning thread is still preempted (they clobbered it once, and the program hung).
#[test]
fn spinning_threads_are_preempted_under_the_shadow_tools() {
    let exe = build(special("spin_wide_store"), "pie");
    let cmd = Cmd::new(exe);
    let mut problems = Vec::new();
    for opts in [&["-q", "--tool=taint"][..], &["-q", "--tool=taint", "--track-origins=yes"][..]] {
        let out = run_rtgrind_within(opts, &cmd, Duration::from_secs(60));
        if out.timed_out || !out.status.success() || out.stdout_str() != "both flags seen\n" {
            problems.push(format!("[{}]\n{}", opts.join(" "), out.describe()));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// A thread that reads and writes a regular file keeps the baton through those calls (they
/// never wait for another thread): the interleaving, the output and the recorded schedule are
/// the same in every run. (When such a call handed the baton on, which thread took it back
/// depended on how fast the kernel answered: `sort --parallel=2` could not be replayed.)
/// The layout is fixed (`--repeatable=yes`): the guest's own block counts depend on where
/// its mappings fall (glibc trims a new thread arena's `mmap` to 64 MiB alignment, and ld.so's
/// `strcmp` checks for page crossings), so under ASLR about one run in 30 differs natively too.
#[test]
fn file_reads_and_writes_leave_the_schedule_repeatable() {
    let exe = build(special("racy_file_io"), "pie");
    let dir = common::scratch_dir("racy-file-io");
    let mut runs = Vec::new();
    for k in 0..6 {
        let file = dir.join(format!("schedule-{k}"));
        let out = run_rtgrind(["-q", "--tool=none", "--repeatable=yes", "--quantum=50", &format!("--record-schedule={}", file.display())], &Cmd::new(exe));
        assert_no_panic(&out);
        common::assert_exit(&out, 0);
        runs.push((out.stdout_str(), std::fs::read(&file).unwrap()));
    }
    for (k, (out, schedule)) in runs.iter().enumerate().skip(1) {
        assert_eq!(out, &runs[0].0, "run {k}'s output");
        assert!(schedule == &runs[0].1, "run {k}'s schedule: {}", first_schedule_difference(&runs[0].1, schedule));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A schedule recorded under one tool replays under any other: a recorded or replayed run
/// counts blocks from its start, so its decisions fall at the same instructions whatever the
/// instrumentation and the options (the race tool's detection run, which counts blocks from
/// the start for its search, and the replay command it prints rely on it).
#[test]
fn a_schedule_recorded_under_one_tool_replays_under_another() {
    let exe = build(special("racy_counter"), "pie");
    let dir = common::scratch_dir("schedule-across-tools");
    let (first, again) = (dir.join("race"), dir.join("again"));
    let record = |tool: &[&str], file: &Path, replay: Option<&Path>| {
        let mut opts: Vec<String> = ["-q", "--quantum=997", &format!("--record-schedule={}", file.display())].map(String::from).to_vec();
        opts.extend(tool.iter().map(|o| o.to_string()));
        if let Some(r) = replay {
            opts.push(format!("--sched=replay:{}", r.display()));
        }
        let out = run_rtgrind(&opts, &Cmd::new(exe));
        assert_no_panic(&out);
        (out.stdout_str(), std::fs::read(file).unwrap())
    };
    let (output, schedule) = record(&["--tool=race", "--harm=no", "--budget-blocks=1000000000"], &first, None);
    for tool in [&["--tool=none"][..], &["--tool=taint"][..], &["--tool=count"][..]] {
        let (o, s) = record(tool, &again, Some(&first));
        assert_eq!(o, output, "{tool:?}");
        assert!(s == schedule, "{tool:?}: {}", first_schedule_difference(&schedule, &s));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn check_deadlock_report(out: &Output) -> Result<(), String> {
    if out.timed_out {
        return Err("rtgrind hung instead of reporting the deadlock".to_owned());
    }
    if out.stderr_str().contains("panicked at") {
        return Err("rtgrind panicked".to_owned());
    }
    let mut problems = Vec::new();
    if out.status.code() != Some(123) {
        problems.push(format!("expected exit status 123, got {}", out.status_text()));
    }
    if out.stdout_str() != "starting two threads that lock A,B and B,A\n" {
        problems.push(format!("the guest's stdout should be its first line only, got {:?}", out.stdout_str()));
    }
    let (report, _) = common::split_report_lines(&out.stderr);
    let own: Vec<&String> = report.iter().filter(|l| common::report_line_pid(l) == Some(out.pid)).collect();
    if !own.iter().any(|l| l.to_ascii_lowercase().contains("deadlock")) {
        problems.push(format!("no `=={}== ...deadlock...` line on stderr (report lines: {report:#?})", out.pid));
    }
    let per_thread = own.iter().filter(|l| (l.contains("futex") || l.contains("mutex")) && l.contains("0x")).count();
    if per_thread < 3 {
        problems.push(format!(
            "expected a line for each of the 3 blocked threads naming the futex/mutex it waits \
             on and its pc (0x...), found {per_thread} (report lines: {own:#?})"
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// `racy_env` prints times, random bytes, its pid and tid and several addresses: under
/// `--repeatable=yes` every run prints the same line (dynamic PIE and static builds).
#[test]
fn racy_env_is_repeatable() {
    let g = special("racy_env");
    let mut problems = Vec::new();
    for (variant, runs) in [("pie", 5), ("static", 2)] {
        let cmd = g.cmd(build(g, variant));
        let n1 = run_native(&cmd);
        let n2 = run_native(&cmd);
        common::assert_exit(&n1, 0);
        common::assert_exit(&n2, 0);
        if n1.stdout == n2.stdout {
            // Not a failure: only a sign that this check would not notice much on this machine.
            eprintln!("note: two native runs of racy_env ({variant}) printed the same line: {}", n1.stdout_str().trim_end());
        }
        let mut first: Option<Output> = None;
        for k in 0..runs {
            let out = run_rtgrind(["-q", "--tool=none", "--repeatable=yes"], &cmd);
            assert_no_panic(&out);
            common::assert_exit(&out, 0);
            assert!(
                out.stdout_str().starts_with("time=") && out.stdout_str().lines().count() == 1,
                "racy_env printed an unexpected output:\n{}",
                out.describe()
            );
            match &first {
                None => first = Some(out),
                Some(f) if f.stdout != out.stdout => {
                    problems.push(format!("[{variant}] run {k} differs from run 0 in {}", field_differences(&f.stdout_str(), &out.stdout_str())))
                }
                Some(_) => {}
            }
        }
    }
    assert!(problems.is_empty(), "racy_env under --repeatable=yes is not repeatable:\n{}", problems.join("\n"));
}

/// Which `key=value` fields of two racy_env lines differ: `time (1 vs 2), pid (5 vs 6)`.
fn field_differences(a: &str, b: &str) -> String {
    let fields = |s: &str| -> Vec<(String, String)> {
        s.split_whitespace()
            .map(|w| match w.split_once('=') {
                Some((k, v)) => (k.to_owned(), v.to_owned()),
                None => (w.to_owned(), String::new()),
            })
            .collect()
    };
    let (fa, fb) = (fields(a), fields(b));
    if fa.len() != fb.len() || fa.iter().zip(&fb).any(|(x, y)| x.0 != y.0) {
        return format!("its shape:\n{}", common::diff(a.as_bytes(), b.as_bytes()));
    }
    let diffs: Vec<String> = fa.iter().zip(&fb).filter(|(x, y)| x.1 != y.1).map(|(x, y)| format!("{} ({} vs {})", x.0, x.1, y.1)).collect();
    format!("{}: {}", if diffs.len() == 1 { "field" } else { "fields" }, diffs.join(", "))
}

/// The random bytes of a repeatable run come from `--seed`: another seed, other bytes.
#[test]
fn repeatable_seed_changes_random_bytes() {
    let g = special("racy_env");
    let cmd = g.cmd(build(g, "pie"));
    let field = |out: &Output, key: &str| -> String {
        out.stdout_str()
            .split_whitespace()
            .find_map(|w| w.strip_prefix(key).map(str::to_owned))
            .unwrap_or_else(|| panic!("no {key} in racy_env's output:\n{}", out.describe()))
    };
    let run = |seed: &str| {
        let out = run_rtgrind(["-q", "--tool=none", "--repeatable=yes", seed], &cmd);
        assert_no_panic(&out);
        common::assert_exit(&out, 0);
        out
    };
    let (a, a2, b) = (run("--seed=1"), run("--seed=1"), run("--seed=2"));
    assert_eq!(a.stdout_str(), a2.stdout_str(), "two --repeatable=yes --seed=1 runs differ");
    assert_ne!(field(&a, "getrandom="), field(&b, "getrandom="), "getrandom returned the same bytes under --seed=1 and --seed=2");
}

/// `--stop-at=THREAD:INSTANCE` lines of one run (the `stop-at:` report and register dump).
fn stop_at_report(prog: &Path, opts: &[&str]) -> Vec<String> {
    let mut all = vec!["-q", "--tool=none", "--repeatable=yes"];
    all.extend_from_slice(opts);
    let out = run_rtgrind(&all, &common::Cmd::new(prog));
    assert_no_panic(&out);
    common::assert_exit(&out, 0);
    let lines: Vec<String> = out.stderr_str().lines().filter_map(|l| l.split_once("== stop-at: ").map(|(_, r)| r.to_string())).collect();
    assert!(lines.len() >= 5, "no stop-at report with registers:\n{}", out.describe());
    lines
}

/// Instance 1 of the main thread is the very first block: the interpreter's entry point.
#[test]
fn stop_at_first_instance_is_the_entry_point() {
    let g = special("racy_counter");
    let exe = build(g, "pie");
    let lines = stop_at_report(exe, &["--stop-at=0:1"]);
    let interp = std::fs::read(exe).unwrap();
    let elf = String::from_utf8_lossy(&interp);
    assert!(elf.contains("ld-linux-x86-64.so.2"), "a dynamic PIE is expected");
    // ld.so's entry, as rtgrind names it in the report: module+offset of e_entry.
    let ld = std::fs::read("/lib64/ld-linux-x86-64.so.2").unwrap();
    let entry = u64::from_le_bytes(ld[24..32].try_into().unwrap());
    let want = format!("ld-linux-x86-64.so.2+{entry:#x})");
    assert!(
        lines[0].starts_with("thread 0 instance 1: before the block at ") && lines[0].ends_with(&want),
        "first line {:?} does not name ld.so's entry {want}",
        lines[0]
    );
}

/// The same instance gives the same registers in every repeatable run, another instance
/// other ones; a non-main thread's instances work the same way under a seeded schedule.
#[test]
fn stop_at_names_the_same_instance_in_every_run() {
    let g = special("racy_counter");
    let exe = build(g, "pie");
    let a = stop_at_report(exe, &["--stop-at=0:10000"]);
    let b = stop_at_report(exe, &["--stop-at=0:10000"]);
    assert_eq!(a, b, "two runs stopped at 0:10000 differ");
    let c = stop_at_report(exe, &["--stop-at=0:10001"]);
    assert_ne!(a, c, "instances 10000 and 10001 look the same");
    let sched = ["--sched=random:11", "--quantum=300", "--stop-at=1:5000"];
    let t1 = stop_at_report(exe, &sched);
    assert!(t1[0].starts_with("thread 1 instance 5000:"), "{:?}", t1[0]);
    assert_eq!(t1, stop_at_report(exe, &sched), "thread 1's instance 5000 differs between runs");
}

/// Block counts kept in xmm16 (AVX-512 hosts) and in memory name the same instances: a stop
/// in the main thread and one in thread 1 under a seeded schedule give the same reports. The
/// status flags are left out: where a block's count may clobber them (the block writes them
/// all before reading one), the two counts leave different dead values.
#[test]
fn block_counts_in_a_register_and_in_memory_agree() {
    let g = special("racy_counter");
    let exe = build(g, "pie");
    let without_flags = |lines: Vec<String>| -> Vec<String> {
        lines.into_iter().map(|l| l.split(' ').filter(|f| !f.starts_with("rflags=")).collect::<Vec<_>>().join(" ")).collect()
    };
    for opts in [&["--stop-at=0:10000"][..], &["--sched=random:11", "--quantum=300", "--stop-at=1:5000"][..]] {
        let register = without_flags(stop_at_report(exe, opts));
        let memory = without_flags(stop_at_report(exe, &[opts, &["--count-in-memory"]].concat()));
        assert_eq!(register, memory, "{opts:?}: the two counts stop at different places");
    }
}

/// `--stdin-file=FILE`: the first run captures stdin into a new FILE, later runs replay FILE
/// whatever their own stdin is, and an existing FILE is never changed.
#[test]
fn stdin_file_captures_once_and_replays() {
    let dir = common::scratch_dir("stdin_file");
    common::reset_dir(&dir);
    let file = dir.join("input");
    let opt = format!("--stdin-file={}", file.display());
    let cat = |stdin: &str| {
        let out = run_rtgrind(["-q", "--tool=none", &opt], &Cmd::new("/bin/cat").stdin(stdin));
        assert_no_panic(&out);
        common::assert_exit(&out, 0);
        out.stdout_str()
    };
    assert_eq!(cat("first input\n"), "first input\n");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "first input\n");
    assert_eq!(cat("something else\n"), "first input\n", "the second run did not replay the captured input");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "first input\n", "an existing --stdin-file was changed");
    let bad = run_rtgrind(["-q", "--tool=none", "--stdin-file=/no/such/dir/input"], &Cmd::new("/bin/cat"));
    assert_eq!(bad.status.code(), Some(2));
    assert!(bad.stderr_str().starts_with("rtgrind: error: --stdin-file: cannot use"), "{}", bad.describe());
}

/// A thread other than the main one that aborts kills the process the usual way: the report's
/// line names the signal and the place, and the tool's end-of-run hooks run. (A new thread's
/// Rust code once ran on its creator's thread-local storage, so it seemed parked when its own
/// abort arrived, and died without a report.)
#[test]
fn an_abort_in_a_worker_thread_ends_the_run_with_its_report() {
    let source = "#include <pthread.h>\n#include <stdlib.h>\nstatic void *work(void *a) { abort(); return a; }\nint main(void) { pthread_t t; pthread_create(&t, NULL, work, NULL); pthread_join(t, NULL); return 0; }\n";
    let exe = common::compile_snippet("abort_worker", "c", source, &["-pthread"]);
    for tool in ["--tool=none", "--tool=count"] {
        let out = run_rtgrind([tool], &Cmd::new(&exe));
        assert_eq!(out.status.code(), None, "{tool}: {}", out.describe());
        let err = out.stderr_str();
        assert!(err.contains("Process terminating with default action of signal 6 (SIGABRT) at ") && !err.contains("waiting to be scheduled"), "{tool}: {err}");
    }
    let out = run_rtgrind(["--tool=count"], &Cmd::new(&exe));
    assert!(out.stderr_str().contains("count:") || out.stderr_str().contains("instructions"), "the tool's report: {}", out.describe());
}
