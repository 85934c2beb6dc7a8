//! Whether a run of the program is correct: its output, error output, exit status, or a
//! command's judgement; without any, a crash is the failure (and not crashing is success).

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
}

impl Oracle {
    /// True if some check was given (else a crash is the failure).
    pub fn given(&self) -> bool {
        self.output.is_some() || self.stderr.is_some() || self.exit.is_some() || self.command.is_some()
    }

    /// Whether `r` is a correct run.
    pub fn passes(&self, r: &RunResult) -> bool {
        if matches!(r.ending, Ending::Budget | Ending::TimedOut) {
            return false;
        }
        if !self.given() {
            return matches!(r.ending, Ending::Exit(_));
        }
        let read = |p: &Path| std::fs::read(p).unwrap_or_default();
        if let Some(o) = &self.output {
            if &read(&r.stdout) != o {
                return false;
            }
        }
        if let Some(e) = &self.stderr {
            if &read(&r.stderr) != e {
                return false;
            }
        }
        if let Some(x) = self.exit {
            if r.ending != Ending::Exit(x) {
                return false;
            }
        }
        if let Some(cmd) = &self.command {
            let Ok(input) = std::fs::File::open(&r.stdout) else { return false };
            let status = Command::new("sh")
                .arg("-c")
                .arg(cmd)
                .env("RTGRIND_STDOUT", &r.stdout)
                .env("RTGRIND_STDERR", &r.stderr)
                .stdin(input)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            if !status.is_ok_and(|s| s.success()) {
                return false;
            }
        }
        true
    }
}
