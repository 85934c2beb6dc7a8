//! Differential tests: every program in `guest-programs/correct/`, in each of its build variants,
//! runs natively and under `rtgrind -q --tool=none` and `--tool=taint` (and `--tool=count`,
//! `--tool=race --harm=no`, a suppression run with heap redzones for the first variant, and
//! `--tool=none` under 20 random layouts of the globals, frames and heap for it and `O0`); exit status (or fatal
//! signal), stdout and stderr must be identical. The native run must also match the program's `exit=`/`signal=`
//! directive, so a broken test program is reported as such and not as an rtgrind bug.

use crate::common::{self, compare_tool, run_native, run_rtgrind};

/// One `#[test]` per guest program (running all of its variants), plus `GUEST_TESTS`, the list
/// that `every_guest_program_has_a_test` checks the directory against.
macro_rules! guest_tests {
    ($($name:ident),* $(,)?) => {
        const GUEST_TESTS: &[&str] = &[$(stringify!($name)),*];
        $(
            #[test]
            fn $name() {
                check_guest(stringify!($name));
            }
        )*
    };
}

guest_tests! {
    hello,
    exit_code,
    args_env,
    stdin_echo,
    recursion,
    setjmp,
    pointer_tables,
    signals_segv,
    signals_alarm,
    signals_during_lookups,
    signals_misc,
    fork_wait,
    jit_smc,
    float_sse,
    avx2,
    strings,
    cxx_exceptions,
    cxx_virtual,
    stdio_files,
    malloc_heavy,
    asm_hello,
    asm_exit,
    asm_loop,
    asm_ripdata,
    crash_segv,
    crash_abort,
    proc_maps,
}

/// Runs every variant of guest program `name` natively and under rtgrind and reports all
/// mismatching variants together.
fn check_guest(name: &str) {
    let guest = common::guest(name).unwrap_or_else(|e| panic!("{e}"));
    let dir = common::scratch_dir(name);
    let mut failed = Vec::new();
    let mut reports = Vec::new();
    for (variant, exe) in &guest.builds {
        let cmd = guest.cmd(exe).cwd(&dir);
        common::reset_dir(&dir);
        let native = run_native(&cmd);
        if let Err(e) = guest.spec.expect.check(&native) {
            failed.push(*variant);
            reports.push(format!(
                "[{variant}] the native run does not match the program's directives ({e}); \
                 fix the test program:\n{}",
                native.describe()
            ));
            continue;
        }
        // The tools must not change what the program does either: taint with origins (inline
        // shadow propagation on every instruction) in every variant, count in the first.
        // And race (its light call-outs keep only some of the registers) in the first, and a
        // suppression run with heap redzones (issue 24: a correct program runs the same with
        // its blocks laid out otherwise, and overruns none).
        let tools: &[&str] = if variant == &guest.builds[0].0 { &["none", "taint", "count", "race", "suppress"] } else { &["none", "taint"] };
        let mut timed_out = false;
        for tool in tools {
            common::reset_dir(&dir);
            let mut opts = vec!["-q".to_string(), format!("--tool={tool}")];
            if *tool == "taint" {
                opts.push("--track-origins=yes".into());
            }
            if *tool == "race" {
                opts.push("--harm=no".into());
            }
            let outcome = (*tool == "suppress").then(|| {
                let plans = common::scratch_dir(&format!("{name}-plan"));
                std::fs::write(plans.join("plan"), "redzones\n").unwrap();
                let _ = std::fs::remove_file(plans.join("outcome"));
                opts.push(format!("--suppress-plan={}", plans.join("plan").display()));
                opts.push(format!("--suppress-out={}", plans.join("outcome").display()));
                plans.join("outcome")
            });
            let rt = run_rtgrind(&opts, &cmd);
            let mut result = compare_tool(&native, &rt, tool);
            if let (Some(outcome), Ok(())) = (&outcome, &result) {
                // (An overwritten redzone is the outcome's `crash` line of kind -2; a program
                // that crashes natively crashes there with its own signal.)
                let seen = std::fs::read_to_string(outcome).unwrap_or_default();
                if let Some(line) = seen.lines().find(|l| l.starts_with("crash\t-2\t")) {
                    result = Err(format!("the run with heap redzones failed: {line}"));
                }
            }
            if let Err(e) = result {
                if !failed.contains(variant) {
                    failed.push(*variant);
                }
                reports.push(format!("[{variant}, --tool={tool}] {e}"));
            }
            timed_out |= rt.timed_out;
        }
        if (variant == &guest.builds[0].0 || *variant == "O0") && !timed_out {
            // Issue 24: the program runs the same under any layout of its globals, frames and heap
            // (20 random ones), optimized (frames found from rsp) and at -O0 (from rbp).
            for seed in 1..=20 {
                common::reset_dir(&dir);
                let rt = run_rtgrind(["-q".to_string(), "--tool=none".into(), format!("--layout=random:{seed}")], &cmd);
                if let Err(e) = compare_tool(&native, &rt, &format!("none --layout=random:{seed}")) {
                    failed.push(*variant);
                    reports.push(format!("[{variant}, --layout=random:{seed}] {e}"));
                    break;
                }
            }
        }
        if timed_out {
            // One hang is enough to see; more would only multiply the wait.
            reports.push("(after a timeout the remaining variants are not run)".to_owned());
            break;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    if !failed.is_empty() {
        let all: Vec<&str> = guest.builds.iter().map(|(v, _)| *v).collect();
        panic!("guest program {name} ({}) failed in variants {} of {}:\n\n{}", guest.source.display(), failed.join(","), all.join(","), reports.join("\n\n"));
    }
}

/// Every source in `guest-programs/correct/` has a test above, and every test has a source, so a
/// new program cannot be forgotten and a renamed one cannot be skipped silently. Also checks the
/// directives of every program (without building anything).
#[test]
fn every_guest_program_has_a_test() {
    let names = common::guest_names();
    let mut problems = Vec::new();
    for n in &names {
        if !GUEST_TESTS.contains(&n.as_str()) {
            problems.push(format!("{n}: no test; add `{n},` to guest_tests! in tests/differential.rs"));
        }
        if let Err(e) = common::guest_spec(n) {
            problems.push(format!("{n}: {e}"));
        }
    }
    for t in GUEST_TESTS {
        if !names.iter().any(|n| n == t) {
            problems.push(format!("{t}: listed in tests/differential.rs but missing from {}", common::correct_dir().display()));
        }
    }
    assert!(problems.is_empty(), "guest programs and tests disagree:\n  {}", problems.join("\n  "));
}

/// Issue 29 (the translation cache's step 1): every guest program, its first variant, runs the
/// same under `--tool=none`, `count` and `taint` with each block run from a copy installed
/// from its relocatable image at another place in the code cache (`RTGRIND_REINSTALL=1`), as
/// a run re-using another run's translations would: the copy's exits have ids of their own
/// and its RIP-relative operands are aimed from where it is. (The variable is the guest's
/// too, natively as well.) With `--stats`, the run says it installed blocks.
#[test]
fn blocks_installed_from_their_images_run_the_same() {
    let mut reports = Vec::new();
    for name in GUEST_TESTS {
        let guest = common::guest(name).unwrap_or_else(|e| panic!("{e}"));
        let dir = common::scratch_dir(&format!("{name}-reinstall"));
        let cmd = guest.cmd(&guest.builds[0].1).cwd(&dir).env("RTGRIND_REINSTALL", "1");
        common::reset_dir(&dir);
        let native = run_native(&cmd);
        for tool in ["none", "count", "taint"] {
            common::reset_dir(&dir);
            let rt = run_rtgrind(["-q".to_string(), format!("--tool={tool}")], &cmd);
            if let Err(e) = compare_tool(&native, &rt, tool) {
                reports.push(format!("[{name}, --tool={tool}] {e}"));
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(reports.is_empty(), "runs from installed images differ:\n\n{}", reports.join("\n\n"));
    let hello = common::guest("hello").unwrap();
    let rt = run_rtgrind(["--stats"], &hello.cmd(&hello.builds[0].1).env("RTGRIND_REINSTALL", "1"));
    let stats = rt.stderr_str();
    let count = |what: &str| -> u64 {
        let line = stats.lines().find(|l| l.contains(what)).unwrap_or_else(|| panic!("no `{what}` in:\n{stats}"));
        let before = line[..line.find(what).unwrap()].trim_end();
        before.rsplit([' ', '(']).next().unwrap().parse().unwrap()
    };
    assert_eq!(count("blocks installed from images"), count("blocks translated"), "{stats}");
}
