//! Whether a run of the program is correct, for every search that asks (switch, and each test of
//! a suite): its output, error output, exit status, or a command's judgement, every check given
//! having to hold; without any, a crash is the failure (and not crashing is success).
//!
//! The command runs under `sh -c` in the test's directory, with the run's standard output on its
//! standard input, that file's path as `$1` and in `$RTGRIND_STDOUT`, the error output's in
//! `$RTGRIND_STDERR`; exit status 0 means the run is correct.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub use crate::tools::search::Ending;

/// A finished run: its output files and ending.
pub struct RunResult {
    pub stdout: PathBuf,
    pub stderr: PathBuf,
    pub ending: Ending,
}

#[derive(Clone, Debug, Default)]
pub struct Oracle {
    pub output: Option<Vec<u8>>,
    pub stderr: Option<Vec<u8>>,
    pub exit: Option<i32>,
    pub command: Option<String>,
    /// Where the command runs (a test's directory; else the search's).
    pub cwd: Option<PathBuf>,
}

impl Oracle {
    /// True if some check was given (else a crash is the failure).
    pub fn given(&self) -> bool {
        self.output.is_some() || self.stderr.is_some() || self.exit.is_some() || self.command.is_some()
    }

    /// Whether `r` is a correct run.
    pub fn passes(&self, r: &RunResult) -> bool {
        self.judges(&r.stdout, &r.stderr, &r.ending)
    }

    /// Whether the run that wrote `stdout` and `stderr` and ended so is correct.
    pub fn judges(&self, stdout: &Path, stderr: &Path, ending: &Ending) -> bool {
        if matches!(ending, Ending::Budget | Ending::TimedOut) {
            return false;
        }
        if !self.given() {
            return matches!(ending, Ending::Exit(_));
        }
        let read = |p: &Path| std::fs::read(p).unwrap_or_default();
        if let Some(o) = &self.output {
            if &read(stdout) != o {
                return false;
            }
        }
        if let Some(e) = &self.stderr {
            if &read(stderr) != e {
                return false;
            }
        }
        if let Some(x) = self.exit {
            if *ending != Ending::Exit(x) {
                return false;
            }
        }
        if let Some(cmd) = &self.command {
            let Ok(input) = std::fs::File::open(stdout) else { return false };
            let mut sh = Command::new("sh");
            sh.arg("-c").arg(cmd).arg("oracle").arg(stdout);
            if let Some(d) = &self.cwd {
                sh.current_dir(d);
            }
            let status = sh.env("RTGRIND_STDOUT", stdout).env("RTGRIND_STDERR", stderr).stdin(input).stdout(Stdio::null()).stderr(Stdio::null()).status();
            if !status.is_ok_and(|s| s.success()) {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command of every search gets the output three ways and runs in the test's
    /// directory (the switch tool's oracles read standard input, the suites' `$1`).
    #[test]
    fn an_oracle_command_gets_the_output_as_input_argument_and_variable_in_its_directory() {
        let dir = std::env::temp_dir().join(format!("rtgrind-oracle-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("here")).unwrap();
        std::fs::write(dir.join("here/marker"), "").unwrap();
        let (out, err) = (dir.join("out"), dir.join("err"));
        std::fs::write(&out, "42\n").unwrap();
        std::fs::write(&err, "oops\n").unwrap();
        let cmd = r#"test "$(cat)" = 42 && test "$(cat "$1")" = 42 && test "$RTGRIND_STDOUT" = "$1" && grep -q oops "$RTGRIND_STDERR" && test -f marker"#;
        let judge = |cwd: &str, command: &str, exit: Option<i32>| {
            let o = Oracle { command: Some(command.into()), cwd: Some(dir.join(cwd)), exit, ..Oracle::default() };
            o.judges(&out, &err, &Ending::Exit(0))
        };
        assert!(judge("here", cmd, None));
        assert!(!judge(".", cmd, None), "it ran elsewhere");
        assert!(!judge("here", "false", None));
        assert!(!judge("here", cmd, Some(1)), "every check given must hold");
        let plain = Oracle { exit: Some(0), output: Some(b"42\n".to_vec()), ..Oracle::default() };
        assert!(plain.judges(&out, &err, &Ending::Exit(0)));
        assert!(!plain.judges(&out, &err, &Ending::Signal(11)) && !plain.judges(&out, &err, &Ending::TimedOut));
        let _ = std::fs::remove_dir_all(dir);
    }
}
