//! One way for a search to re-run the program (issue 22; rr's sessions are the model): a
//! [`Runner`] owns the search's work directory, the standard input captured once, repeatable
//! mode and its seed, what runs leave in the working directory (`child::Leftovers`), the run
//! count, and the limits calibrated once on the first run (wall time and blocks). A run is
//! rtgrind with the search's options for it, on the program; it ends as a typed [`RunOutcome`].
//! Suppress and switch run on it; what a run's tool writes back (a plan's outcome, a trace) is
//! the search's own.

use super::child::{self, Leftovers, TempDir};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Why a search cannot start.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("cannot create a temporary directory: {0}")]
    WorkDirectory(std::io::Error),
    #[error("cannot capture standard input: {0}")]
    Input(std::io::Error),
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    Exit(i32),
    Signal(i32),
    /// Stopped by its block budget (an altered run that loops).
    Budget,
    /// Stopped by its wall-time limit.
    TimedOut,
}

impl Ending {
    pub fn describe(&self) -> String {
        match self {
            Ending::Exit(c) => format!("exit status {c}"),
            Ending::Signal(s) => format!("signal {s}"),
            Ending::Budget => "stopped by its budget".into(),
            Ending::TimedOut => "stopped by its time limit".into(),
        }
    }
}

/// A finished run: how it ended, its files and its wall time.
pub struct RunOutcome {
    pub ending: Ending,
    /// The program's standard output and error (with rtgrind's own messages unless `log`).
    pub stdout: PathBuf,
    pub stderr: PathBuf,
    /// rtgrind's messages, when the run was asked to log them apart (`Limits::log`).
    pub log: String,
    pub took: Duration,
}

impl RunOutcome {
    /// rtgrind's one-line error, if it stopped rather than the program (in its log, else in
    /// standard error).
    pub fn error(&self) -> Option<String> {
        let err = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        self.log.lines().chain(err.lines()).find(|l| l.starts_with("rtgrind: error:")).map(str::to_string)
    }
}

/// What a run may take, and where rtgrind's messages go.
#[derive(Clone, Copy, Debug, Default)]
pub struct Limits {
    /// Blocks the program may enter (rtgrind ends it with status 124).
    pub budget: Option<u64>,
    pub time: Option<Duration>,
    /// rtgrind's messages to a log file of the run (`-q --log-file`), apart from the
    /// program's standard error (which an oracle may compare).
    pub log: bool,
    /// Write the main thread's block count (the first run's, for the calibration).
    pub count_blocks: bool,
}

pub struct Runner {
    /// (Before `dir`: dropped first, it puts the first run's files back from the directory.)
    leftovers: Option<Leftovers>,
    pub dir: TempDir,
    command: Vec<OsString>,
    seed: u64,
    /// The program's standard input, the same bytes in every run.
    pub stdin_file: PathBuf,
    /// Runs made so far.
    pub runs: u32,
    /// The calibration: the first run's wall time and blocks.
    first: Option<(Duration, u64)>,
}

impl Runner {
    /// A search of `tool` on `command`: its directory, and standard input read once into it
    /// (unless the user gave `--stdin-file`).
    pub fn new(tool: &str, command: Vec<OsString>, seed: u64, stdin_file: Option<PathBuf>) -> Result<Runner, SearchError> {
        let dir = TempDir::new(tool).map_err(SearchError::WorkDirectory)?;
        let stdin_file = match stdin_file {
            Some(f) => f,
            None => child::capture_stdin(&dir.0).map_err(SearchError::Input)?,
        };
        let leftovers = Leftovers::new(dir.0.clone());
        Ok(Runner { leftovers, dir, command, seed, stdin_file, runs: 0, first: None })
    }

    /// A file of the search's directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.0.join(name)
    }

    /// Runs rtgrind with `tool_args` and the search's own options (repeatable, the seed, the
    /// input, the limits) on the program. Its files are `stdout-N`, `stderr-N` (and `log-N`).
    pub fn run(&mut self, tool_args: &[OsString], limits: Limits) -> std::io::Result<RunOutcome> {
        self.runs += 1;
        let n = self.runs;
        let (stdout, stderr, log) = (self.file(&format!("stdout-{n}")), self.file(&format!("stderr-{n}")), self.file(&format!("log-{n}")));
        let blocks = self.file(&format!("blocks-{n}"));
        let mut args: Vec<OsString> = Vec::new();
        if limits.log {
            args.extend(["-q".into(), format!("--log-file={}", log.display()).into()]);
        }
        args.extend(tool_args.iter().cloned());
        args.extend(["--repeatable=yes".into(), format!("--seed={}", self.seed).into(), format!("--stdin-file={}", self.stdin_file.display()).into()]);
        if let Some(b) = limits.budget {
            args.push(format!("--budget-blocks={b}").into());
        }
        if limits.count_blocks {
            args.push(format!("--blocks-out={}", blocks.display()).into());
        }
        // Runs count blocks where this process does (the instances they name must agree).
        if !rtgrind_jit::context::counts_in_registers() {
            args.push("--count-in-memory".into());
        }
        args.push("--".into());
        args.extend(self.command.iter().cloned());
        let ended = child::run(&args, &stdout, &stderr, limits.time);
        if let Some(l) = self.leftovers.as_mut() {
            l.clear(n);
        }
        let log_text = if limits.log { std::fs::read_to_string(&log).unwrap_or_default() } else { String::new() };
        let (ending, took) = match ended? {
            None => (Ending::TimedOut, limits.time.unwrap_or_default()),
            Some((status, took)) => {
                use std::os::unix::process::ExitStatusExt;
                let budget_said = || log_text.contains("budget of") || std::fs::read_to_string(&stderr).is_ok_and(|e| e.contains("budget of"));
                let e = match (status.code(), status.signal()) {
                    (Some(crate::EXIT_BUDGET), _) if budget_said() => Ending::Budget,
                    (Some(c), _) => Ending::Exit(c),
                    (None, Some(sig)) => Ending::Signal(sig),
                    _ => Ending::Exit(-1),
                };
                (e, took)
            }
        };
        if limits.count_blocks && self.first.is_none() {
            let counted = std::fs::read_to_string(&blocks).ok().and_then(|t| t.trim().parse().ok()).unwrap_or(0);
            self.first = Some((took, counted));
        }
        Ok(RunOutcome { ending, stdout, stderr, log: log_text, took })
    }

    /// The wall-time limit of a later run: `factor` times the first run's, and 20 s more (a
    /// loaded machine).
    pub fn time_limit(&self, factor: u32) -> Option<Duration> {
        self.first.map(|(t, _)| t * factor + Duration::from_secs(20))
    }

    /// The block budget of a later run: `factor` times the first run's blocks (at least
    /// 100,000: start-up alone is thousands).
    pub fn block_budget(&self, factor: u64) -> Option<u64> {
        self.first.map(|(_, b)| b.max(100_000).saturating_mul(factor))
    }
}
