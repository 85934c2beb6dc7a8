//! One way for a search to re-run the program (issue 22; rr's sessions are the model): a
//! [`Runner`] owns the search's work directory, the standard input captured once, repeatable
//! mode and its seed, what runs leave in the working directory (`child::Leftovers`), the run
//! count, and the limits calibrated once on the first run (wall time and blocks). A run is
//! rtgrind with the search's options for it, on the program; it ends as a typed [`RunOutcome`].
//! A search is a type ([`Search`]) that, given the outcomes of the runs it asked for last, says
//! what to run next ([`Step`]) or that it is done; [`Runner::drive`] makes the runs (several at
//! once when the search says they are independent: `--jobs`), shows progress, and hands the
//! outcomes back in the order asked, so no answer depends on which run finished first. The
//! repeat check compares two runs' [`Failure`]s, named fields each search fills in.
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
    /// A forward run's children, in the order they ended.
    pub children: Vec<Forked>,
}

/// A child a forward run forked at a checkpoint.
pub struct Forked {
    pub at: u64,
    /// How it ran (its output: the forward run's up to the fork, then its own); None if it
    /// stopped itself, its variant unable to pass (`checkpoints::GAVE_UP`).
    pub outcome: Option<RunOutcome>,
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

/// A run a search asks for: rtgrind's tool arguments for it and its limits.
#[derive(Clone, Debug, Default)]
pub struct Request {
    pub args: Vec<OsString>,
    pub limits: Limits,
    /// The progress line while it runs (on a terminal).
    pub progress: String,
    /// A forward run: the checkpoints to fork a child at (what they count is the tool's,
    /// `tools::checkpoints`); the children come back in `RunOutcome::children`.
    pub checkpoints: Option<Vec<u64>>,
    /// A test of a suite (`tools::suite`): its own arguments, input and directory.
    pub test: Option<TestRun>,
}

/// How one test of a suite runs: the program with these arguments after the command's own,
/// this standard input (not the search's), in this directory.
#[derive(Clone, Debug, Default)]
pub struct TestRun {
    pub args: Vec<OsString>,
    pub stdin: PathBuf,
    pub cwd: Option<PathBuf>,
}

/// What a search does next.
pub enum Step<V> {
    Run(Request),
    /// Runs that do not depend on each other (nor on what the others leave in the working
    /// directory): made up to `jobs` at a time, their outcomes handed back in this order.
    Batch(Vec<Request>),
    Done(V),
}

/// A run made, as the search gets it back.
pub struct Ran {
    /// Its number in the search (from 1): its files are `stdout-N`, `stderr-N`, `log-N`.
    pub number: u32,
    pub outcome: std::io::Result<RunOutcome>,
}

/// A search over runs of the program (rr's stepped sessions are the model): each call gets the
/// runs asked for by the step before (none at first) and says what to do next.
pub trait Search {
    type Verdict;
    fn next(&mut self, runner: &Runner, ran: Vec<Ran>) -> Step<Self::Verdict>;
}

/// What the repeat check compares of a failure: named fields, in the order a difference is
/// reported (the first that differs is named).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Failure {
    pub fields: Vec<(&'static str, String)>,
}

impl Failure {
    pub fn with(mut self, name: &'static str, value: impl Into<String>) -> Failure {
        self.fields.push((name, value.into()));
        self
    }

    /// How `again`, the same run made again, differs from this failure (None: it is the same).
    pub fn difference(&self, again: Option<&Failure>) -> Option<String> {
        let Some(again) = again else { return Some("the second run did not fail".into()) };
        for ((name, a), (_, b)) in self.fields.iter().zip(&again.fields) {
            if a != b {
                return Some(format!("{name} ({a} then {b})"));
            }
        }
        (self.fields.len() != again.fields.len()).then(|| "what the runs report".into())
    }
}

pub struct Runner {
    /// (Before `dir`: dropped first, it puts the first run's files back from the directory.)
    leftovers: Option<Leftovers>,
    pub dir: TempDir,
    command: Vec<OsString>,
    /// The run options given on the command line (`cli::run_options`), for every run.
    options: Vec<OsString>,
    seed: u64,
    /// The program's standard input, the same bytes in every run.
    pub stdin_file: PathBuf,
    /// Runs made so far.
    pub runs: u32,
    /// Runs of a batch made at once.
    pub jobs: usize,
    /// The calibration: the first run's wall time and blocks.
    first: Option<(Duration, u64)>,
    /// The live progress line (`--progress`).
    pub progress: super::progress::Progress,
    /// The translation cache the runs share (`--code-cache`), in the search's directory: see
    /// `shares_translations`.
    pub code_cache: Option<PathBuf>,
}

/// The one gate of the translation cache across a search's runs (issue 29, `persist`): whether
/// the runs of the search `tool` share their translations. Only a tool whose code is
/// relocatable (`Tool::relocatable_code`) can: suppression's untraced runs (its traced runs,
/// and blocks with the layout's heap hooks, stay out by themselves: the engine asks the run's
/// tool at each lookup). On by default for suppression, whose later runs install most of the
/// first armed run's blocks (docs/PERFORMANCE.md); `RTGRIND_SHARE_TRANSLATIONS=0` switches it
/// off.
fn shares_translations(tool: &str) -> bool {
    shares_translations_with(tool, std::env::var_os("RTGRIND_SHARE_TRANSLATIONS").as_deref())
}

/// `shares_translations` with the variable's value `var`.
fn shares_translations_with(tool: &str, var: Option<&std::ffi::OsStr>) -> bool {
    tool == "suppress" && var.is_none_or(|v| v != "0")
}

impl Runner {
    /// A search of `tool` on `command`: its directory, and standard input read once into it
    /// (unless the user gave `--stdin-file`).
    pub fn new(tool: &str, cli: &crate::cli::Cli) -> Result<Runner, SearchError> {
        let options = cli.run_options.iter().map(OsString::from).collect();
        let mut runner = Runner::with(tool, cli.command.clone(), options, cli.seed, cli.stdin_file.clone())?;
        runner.progress = super::progress::Progress::of(cli, tool);
        Ok(runner)
    }

    /// A search of `tool` on `command`, with `options` for every run.
    pub fn with(tool: &str, command: Vec<OsString>, options: Vec<OsString>, seed: u64, stdin_file: Option<PathBuf>) -> Result<Runner, SearchError> {
        let dir = TempDir::new(tool).map_err(SearchError::WorkDirectory)?;
        let stdin_file = match stdin_file {
            Some(f) => f,
            None => child::capture_stdin(&dir.0).map_err(SearchError::Input)?,
        };
        let leftovers = Leftovers::new(dir.0.clone());
        let code_cache = shares_translations(tool).then(|| dir.0.join("code"));
        Ok(Runner {
            leftovers,
            dir,
            command,
            options,
            seed,
            stdin_file,
            runs: 0,
            jobs: 1,
            first: None,
            progress: super::progress::Progress::hidden(),
            code_cache,
        })
    }

    /// The run options given on the command line, which every run gets (a replay command
    /// needs them too: `--layout`, the scheduler's).
    pub fn options(&self) -> &[OsString] {
        &self.options
    }

    /// A file of the search's directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.0.join(name)
    }

    /// Runs the search to its verdict: each step's runs, made and handed back.
    pub fn drive<S: Search>(&mut self, search: &mut S) -> S::Verdict {
        let mut ran = Vec::new();
        loop {
            ran = match search.next(self, ran) {
                Step::Done(v) => {
                    self.progress.done();
                    return v;
                }
                Step::Run(r) => {
                    self.progress.runs(self.runs + 1, self.runs + 1, &r.progress);
                    let outcome = self.run_request(&r);
                    vec![Ran { number: self.runs, outcome }]
                }
                Step::Batch(rs) => self.run_batch(rs),
            }
        }
    }

    /// Runs independent of each other, `jobs` at a time; their outcomes in the order asked.
    fn run_batch(&mut self, requests: Vec<Request>) -> Vec<Ran> {
        let mut ran = Vec::with_capacity(requests.len());
        for chunk in requests.chunks(self.jobs.max(1)) {
            let first = self.runs + 1;
            self.runs += chunk.len() as u32;
            if let Some(r) = chunk.first() {
                self.progress.runs(first, self.runs, &r.progress);
            }
            let this = &*self;
            let outcomes: Vec<std::io::Result<RunOutcome>> = std::thread::scope(|scope| {
                let handles: Vec<_> = chunk.iter().enumerate().map(|(k, r)| scope.spawn(move || this.run_numbered(first + k as u32, r))).collect();
                handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(std::io::Error::other("a run's thread panicked")))).collect()
            });
            if let Some(l) = self.leftovers.as_mut() {
                l.clear(first);
            }
            ran.extend(outcomes.into_iter().enumerate().map(|(k, outcome)| Ran { number: first + k as u32, outcome }));
        }
        ran
    }

    /// Makes the run `request` asks for, as the next one: rtgrind with the tool's arguments
    /// and the search's own options (repeatable, the seed, the input, the limits) on the
    /// program. Its files are `stdout-N`, `stderr-N` (and `log-N`).
    fn run_request(&mut self, request: &Request) -> std::io::Result<RunOutcome> {
        let limits = request.limits;
        self.runs += 1;
        let n = self.runs;
        let outcome = self.run_numbered(n, request);
        if let Some(l) = self.leftovers.as_mut() {
            l.clear(n);
        }
        let outcome = outcome?;
        if limits.count_blocks && self.first.is_none() {
            let counted = std::fs::read_to_string(self.file(&format!("blocks-{n}"))).ok().and_then(|t| t.trim().parse().ok()).unwrap_or(0);
            self.first = Some((outcome.took, counted));
        }
        Ok(outcome)
    }

    /// `request` as run number `n` (a forward run forking at its checkpoints has its files in
    /// `forward-N`).
    fn run_numbered(&self, n: u32, request: &Request) -> std::io::Result<RunOutcome> {
        let (limits, checkpoints) = (request.limits, request.checkpoints.as_deref());
        let (stdout, stderr, log) = (self.file(&format!("stdout-{n}")), self.file(&format!("stderr-{n}")), self.file(&format!("log-{n}")));
        let forward = self.file(&format!("forward-{n}"));
        if let Some(at) = checkpoints {
            std::fs::create_dir_all(&forward)?;
            std::fs::write(forward.join("at"), at.iter().map(u64::to_string).collect::<Vec<_>>().join(" "))?;
        }
        let args = self.args_of(n, request);
        let ended = child::run(&std::env::current_exe()?, &args, &stdout, &stderr, limits.time, request.test.as_ref().and_then(|t| t.cwd.as_deref()));
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
        let children = if checkpoints.is_some() { children(&forward, &stdout, &stderr) } else { Vec::new() };
        Ok(RunOutcome { ending, stdout, stderr, log: log_text, took, children })
    }

    /// The arguments of run `n` made for `request`: the run options, the tool's arguments
    /// and the search's own (repeatable, the seed, the input, the limits), then the program.
    fn args_of(&self, n: u32, request: &Request) -> Vec<OsString> {
        let limits = request.limits;
        let mut args: Vec<OsString> = self.options.clone();
        if request.checkpoints.is_some() {
            args.push(format!("--checkpoints={}", self.file(&format!("forward-{n}")).display()).into());
        }
        if limits.log {
            args.extend(["-q".into(), format!("--log-file={}", self.file(&format!("log-{n}")).display()).into()]);
        }
        args.extend(request.args.iter().cloned());
        if let Some(dir) = &self.code_cache {
            args.push(format!("--code-cache={}", dir.display()).into());
        }
        let stdin_file = request.test.as_ref().map_or(&self.stdin_file, |t| &t.stdin);
        args.extend(["--repeatable=yes".into(), format!("--seed={}", self.seed).into(), format!("--stdin-file={}", stdin_file.display()).into()]);
        if let Some(l) = &self.leftovers {
            args.push(format!("--created-out={}", l.log().display()).into());
        }
        if let Some(b) = limits.budget {
            args.push(format!("--budget-blocks={b}").into());
        }
        if limits.count_blocks {
            args.push(format!("--blocks-out={}", self.file(&format!("blocks-{n}")).display()).into());
        }
        // Runs count blocks where this process does (the instances they name must agree).
        if !rtgrind_jit::context::counts_in_registers() {
            args.push("--count-in-memory".into());
        }
        args.push("--".into());
        args.extend(self.command.iter().cloned());
        if let Some(t) = &request.test {
            args.extend(t.args.iter().cloned());
        }
        args
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

/// The children a forward run wrote to `dir/results`, each with its output joined to the
/// forward run's (`stdout`, `stderr`) before the fork.
fn children(dir: &std::path::Path, stdout: &std::path::Path, stderr: &std::path::Path) -> Vec<Forked> {
    let results = std::fs::read_to_string(dir.join("results")).unwrap_or_default();
    let join = |prefix: &std::path::Path, n: u64, own: PathBuf, to: PathBuf| -> PathBuf {
        let mut bytes = std::fs::read(prefix).unwrap_or_default();
        bytes.truncate(n as usize);
        bytes.extend(std::fs::read(own).unwrap_or_default());
        let _ = std::fs::write(&to, bytes);
        to
    };
    results
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            let [_, at, code, o, e] = f[..] else { return None };
            let (at, code, o, e): (u64, i32, u64, u64) = (at.parse().ok()?, code.parse().ok()?, o.parse().ok()?, e.parse().ok()?);
            let ending = match code {
                super::checkpoints::GAVE_UP => return Some(Forked { at, outcome: None }),
                crate::EXIT_BUDGET => Ending::Budget,
                c if c < 0 => Ending::Signal(-c),
                c => Ending::Exit(c),
            };
            let stdout = join(stdout, o, dir.join(format!("out-{at}")), dir.join(format!("full-out-{at}")));
            let stderr = join(stderr, e, dir.join(format!("err-{at}")), dir.join(format!("full-err-{at}")));
            let outcome = RunOutcome { ending, stdout, stderr, log: String::new(), took: Duration::ZERO, children: Vec::new() };
            Some(Forked { at, outcome: Some(outcome) })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked example of ARCHITECTURE.md ("Adding a tool"): re-run the program until its
    /// output changes (a flaky test).
    struct Rerun {
        tries: u32,
        first: Option<Vec<u8>>,
    }

    impl Search for Rerun {
        /// "changed", "same" or "cannot run".
        type Verdict = &'static str;

        fn next(&mut self, runner: &Runner, ran: Vec<Ran>) -> Step<&'static str> {
            let mut run = Request { args: vec!["--tool=none".into()], ..Request::default() };
            let last = match ran.into_iter().next().map(|r| r.outcome) {
                // The first run calibrates the others' time limit.
                None => {
                    run.limits.count_blocks = true;
                    return Step::Run(run);
                }
                Some(Err(_)) => return Step::Done("cannot run"),
                Some(Ok(last)) => last,
            };
            let output = std::fs::read(&last.stdout).unwrap_or_default();
            match &self.first {
                Some(first) if *first != output => return Step::Done("changed"),
                None => self.first = Some(output),
                _ => {}
            }
            if runner.runs >= self.tries {
                return Step::Done("same");
            }
            run.limits.time = runner.time_limit(20);
            Step::Run(run)
        }
    }

    /// A run's outcome with `output` as its standard output (no process: the search's steps
    /// alone are under test).
    fn ran(runner: &mut Runner, output: &str) -> Vec<Ran> {
        runner.runs += 1;
        let stdout = runner.file(&format!("stdout-{}", runner.runs));
        std::fs::write(&stdout, output).unwrap();
        let outcome = RunOutcome { ending: Ending::Exit(0), stderr: stdout.clone(), stdout, log: String::new(), took: Duration::ZERO, children: Vec::new() };
        vec![Ran { number: runner.runs, outcome: Ok(outcome) }]
    }

    #[test]
    fn a_search_says_what_to_run_next_until_it_is_done() {
        let input = std::env::temp_dir().join(format!("rtgrind-search-test-input-{}", std::process::id()));
        std::fs::write(&input, "").unwrap();
        let mut runner = Runner::with("search-test", vec!["/bin/true".into()], Vec::new(), 0, Some(input.clone())).unwrap();
        let mut search = Rerun { tries: 3, first: None };
        let Step::Run(first) = search.next(&runner, Vec::new()) else { panic!("the first run") };
        assert!(first.limits.count_blocks && first.args == ["--tool=none"]);
        let a = ran(&mut runner, "a\n");
        assert!(matches!(search.next(&runner, a), Step::Run(_)));
        let b = ran(&mut runner, "b\n");
        assert!(matches!(search.next(&runner, b), Step::Done("changed")));
        let mut same = Rerun { tries: 3, first: None };
        runner.runs = 0;
        let mut verdict = None;
        for _ in 0..5 {
            let a = ran(&mut runner, "a\n");
            if let Step::Done(v) = same.next(&runner, a) {
                verdict = Some(v);
                break;
            }
        }
        assert_eq!((verdict, runner.runs), (Some("same"), 3));
        let _ = std::fs::remove_file(input);
    }

    /// A run gets the search's translation cache (before the program's arguments) exactly
    /// when the gate gave the search one.
    #[test]
    fn runs_are_given_the_translation_cache_the_gate_gives_the_search() {
        let input = std::env::temp_dir().join(format!("rtgrind-search-cache-input-{}", std::process::id()));
        std::fs::write(&input, "").unwrap();
        let mut runner = Runner::with("code-cache-test", vec!["/bin/true".into(), "--code-cache=x".into()], Vec::new(), 0, Some(input.clone())).unwrap();
        let request = Request { args: vec!["--tool=none".into()], ..Request::default() };
        let ours = |args: &[OsString]| args.iter().position(|a| a.to_string_lossy().starts_with("--code-cache"));
        assert_eq!(runner.code_cache.is_some(), shares_translations("code-cache-test"));
        runner.code_cache = None;
        assert_eq!(ours(&runner.args_of(1, &request)), Some(runner.args_of(1, &request).len() - 1), "only the program's own");
        runner.code_cache = Some(runner.dir.0.join("code"));
        let args = runner.args_of(1, &request);
        let end = args.iter().position(|a| a == "--").unwrap();
        assert_eq!(args[ours(&args).unwrap()], *format!("--code-cache={}", runner.dir.0.join("code").display()));
        assert!(ours(&args).unwrap() < end);
        let _ = std::fs::remove_file(input);
    }

    #[test]
    fn suppression_searches_share_translations_unless_switched_off() {
        use std::ffi::OsStr;
        assert!(shares_translations_with("suppress", None));
        assert!(shares_translations_with("suppress", Some(OsStr::new("1"))));
        assert!(!shares_translations_with("suppress", Some(OsStr::new("0"))));
        assert!(!shares_translations_with("switch", None), "a tool whose code is not relocatable");
    }

    #[test]
    fn a_repeat_names_the_first_field_that_differs() {
        let f = Failure::default().with("the ending", "signal 11").with("the output", "3 bytes");
        assert_eq!(f.difference(Some(&f.clone())), None);
        let g = Failure::default().with("the ending", "signal 11").with("the output", "4 bytes");
        assert_eq!(f.difference(Some(&g)).as_deref(), Some("the output (3 bytes then 4 bytes)"));
        assert_eq!(f.difference(None).as_deref(), Some("the second run did not fail"));
    }
}
