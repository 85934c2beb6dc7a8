//! Engine fidelity (issue 27): what the guest can see or reach of rtgrind, and how its faults
//! end. Each case compares a run under rtgrind with the native run of the same program.

use crate::common::{compile_snippet, run_native, run_rtgrind, Cmd};

/// Writes one byte `argv[1]` bytes away from a local buffer (stack) and says where.
const FAR_WRITE: &str = r#"#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    char buf[16];
    long off = atol(argv[1]);
    buf[off] = 1;
    printf("wrote at %p\n", (void *)&buf[off]);
    return 0;
}
"#;

/// A store far below or above the stack faults as it does natively, in every mode: in a
/// repeatable run (whose guest stack is not at its usual place, rtgrind's own stack being
/// there) it once landed in rtgrind's code cache right below the stack, and the program "did not
/// fail". (The native run's stack size limit is pinned to the usual 8 MiB, so its stack cannot
/// grow to meet the store; rtgrind's guest stack is 8 MiB.)
#[test]
fn a_store_far_past_the_stack_faults_as_natively_in_every_mode() {
    let exe = compile_snippet("far_write", "c", FAR_WRITE, &["-g", "-O0"]);
    for off in ["-10000000", "-70000000", "100000000"] {
        let native = run_native(&Cmd::new("sh").args(["-c", "ulimit -s 8192 && exec \"$0\" \"$@\""]).arg(&exe).arg(off));
        assert_eq!(native.status.code(), None, "natively the store at {off} faults: {}", native.describe());
        for mode in [&["--tool=none"][..], &["--tool=none", "--repeatable=yes"], &["--tool=count", "--repeatable=yes"]] {
            let opts: Vec<&str> = ["-q"].iter().chain(mode).copied().collect();
            let out = run_rtgrind(&opts, &Cmd::new(&exe).arg(off));
            assert!(out.stderr_str().contains("(SIGSEGV)") && out.stdout_str().is_empty(), "{mode:?} {off}: {}", out.describe());
        }
    }
}

/// Options: a file an option names that cannot be written is an error before the banner (the
/// error is the only line); `--stop-at` naming a thread that never exists, or an instance the
/// run never reaches, says so at the end.
#[test]
fn option_errors_come_before_the_banner_and_a_stop_point_never_reached_is_said() {
    let exe = compile_snippet("far_write_options", "c", FAR_WRITE, &["-g", "-O0"]);
    for bad in ["--record-schedule=/nonexistent/schedule", "--sched=replay:/nonexistent/schedule", "--log-file=/nonexistent/log"] {
        let out = run_rtgrind([bad], &Cmd::new(&exe).arg("0"));
        let err = out.stderr_str();
        assert!(out.status.code() == Some(2) && err.lines().count() == 1 && err.starts_with("rtgrind: error: "), "{bad}: {}", out.describe());
    }
    let out = run_rtgrind(["-q", "--stop-at=5:100"], &Cmd::new(&exe).arg("0"));
    assert_eq!(out.stderr_str(), format!("=={0}== stop-at: not reached: thread 5 never existed (the program had 1 thread)\n", pid(&out)), "{}", out.describe());
    let out = run_rtgrind(["-q", "--stop-at=0:1000000000"], &Cmd::new(&exe).arg("0"));
    assert!(out.stderr_str().ends_with("stop-at: not reached: the program ended before thread 0 ran 1000000000 blocks\n"), "{}", out.describe());
}

/// The `==PID==` of rtgrind's first line.
fn pid(out: &crate::common::Output) -> String {
    out.stderr_str().trim_start_matches("==").split("==").next().unwrap_or_default().to_string()
}
