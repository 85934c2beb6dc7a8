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
