//! The layout search: one run of the program as it is (noting which variables its code names:
//! `--layout-record`), then runs under the layouts `layout::pairs` makes of those, `--jobs` at
//! a time, in order, until one fails (a fatal signal). What it found is a report of the shared
//! model (`report::model`): the layout, the failure it exposed and the command to run under it.

use crate::layout::apply::Accessed;
use crate::layout::objects::Objects;
use crate::layout::pairs::{self, Considered};
use crate::layout::Layout;
use crate::report::model::{Finding, Report};
use crate::tools::search::{Ending, Limits, Ran, Request, Runner, Search, Step};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Instant;

pub struct Options {
    pub max_layouts: usize,
    pub jobs: usize,
    /// Where the layout that fails is saved.
    pub out: PathBuf,
    pub program: String,
    pub objects: Objects,
}

/// How a layout search ended.
pub enum Verdict {
    /// The program fails as it is (the run that noted its variables): `how`.
    AlreadyFails(String),
    /// Layout `k` (from 0) of those made failed: `how`; `file` is the copy its run read.
    Found { k: usize, how: String, file: PathBuf },
    /// None of the layouts failed (how many, over what).
    NoneFailed,
    /// A run could not be made.
    CannotRun(String),
}

/// A run the search makes under a layout file, numbered `n` in the search.
pub type RunUnder<'o> = dyn Fn(&Runner, u32, &std::path::Path) -> Request + 'o;
/// How a run failed, if it did.
pub type Failed<'o> = dyn Fn(&Runner, &Ran) -> Option<String> + 'o;

/// The layout search, a `tools::search::Search` of its own (`--tool=reorder`) or a phase of
/// the suppression search (the complete technique): from the variables a run's code named
/// (`--layout-record`'s file; with `record`, a run made first to note them), the layouts the
/// pairing heuristic makes, each run as `run` says, `jobs` at a time, until one `failed`.
pub struct LayoutSearch<'o> {
    objects: &'o Objects,
    program: String,
    max: usize,
    jobs: usize,
    accessed: PathBuf,
    record: Option<Request>,
    run: Box<RunUnder<'o>>,
    failed: Box<Failed<'o>>,
    pub layouts: Vec<Layout>,
    pub considered: Considered,
    /// The next layout to run, and whether the layouts were made.
    next: usize,
    made: bool,
    /// The layout files of the batch under way, in its order.
    files: Vec<PathBuf>,
}

impl<'o> LayoutSearch<'o> {
    pub fn new(
        objects: &'o Objects,
        program: &str,
        (max, jobs): (usize, usize),
        accessed: PathBuf,
        record: Option<Request>,
        run: Box<RunUnder<'o>>,
        failed: Box<Failed<'o>>,
    ) -> Self {
        LayoutSearch {
            objects,
            program: program.to_string(),
            max,
            jobs,
            accessed,
            record,
            run,
            failed,
            layouts: Vec::new(),
            considered: Considered::default(),
            next: 0,
            made: false,
            files: Vec::new(),
        }
    }

    /// What the search tried, for a report: "5 layouts tried [in 6 runs] over 2 buffers and ...".
    pub fn tried(&self, runs: Option<u32>) -> String {
        if self.layouts.is_empty() {
            return format!("no layout to try over {}", self.considered.describe());
        }
        let n = self.next.min(self.layouts.len());
        let runs = runs.map_or(String::new(), |r| format!(" in {r} run{}", if r == 1 { "" } else { "s" }));
        format!("{n} layout{} tried{runs} over {}", if n == 1 { "" } else { "s" }, self.considered.describe())
    }
}

impl Search for LayoutSearch<'_> {
    type Verdict = Verdict;

    fn next(&mut self, runner: &Runner, ran: Vec<Ran>) -> Step<Verdict> {
        if let Some(record) = self.record.take() {
            return Step::Run(record);
        }
        if !self.made {
            self.made = true;
            if let Some(first) = ran.first() {
                // The run that noted the variables.
                if let Err(e) = &first.outcome {
                    return Step::Done(Verdict::CannotRun(e.to_string()));
                }
                if let Some(how) = (self.failed)(runner, first) {
                    return Step::Done(Verdict::AlreadyFails(how));
                }
            }
            let accessed: Accessed = std::fs::read_to_string(&self.accessed).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
            (self.layouts, self.considered) = pairs::layouts(self.objects, &accessed, &self.program, self.max);
        } else if let Some((i, how)) = ran.iter().enumerate().find_map(|(i, r)| (self.failed)(runner, r).map(|how| (i, how))) {
            let k = self.next - ran.len() + i;
            // (Those after it in its batch do not count as tried.)
            self.next = k + 1;
            return Step::Done(Verdict::Found { k, how, file: self.files[i].clone() });
        }
        if self.next >= self.layouts.len() {
            return Step::Done(Verdict::NoneFailed);
        }
        let end = (self.next + self.jobs.max(1)).min(self.layouts.len());
        self.files.clear();
        let batch = (self.next..end)
            .map(|k| {
                let n = runner.runs + 1 + (k - self.next) as u32;
                let file = runner.file(&format!("layout-{n}.json"));
                let _ = self.layouts[k].write(&file);
                let mut r = (self.run)(runner, n, &file);
                self.files.push(file);
                r.progress = format!("{} (layout {} of {})", r.progress, k + 1, self.layouts.len());
                r
            })
            .collect();
        self.next = end;
        Step::Batch(batch)
    }
}

/// A run's failure, if it died of a signal: the fatal-signal line rtgrind wrote, as "SIGSEGV
/// at 0x... file.c:21 (main): why" (the program's line where it has one).
pub fn failure(ran: &Ran, program: &str) -> Option<String> {
    let o = ran.outcome.as_ref().ok()?;
    let Ending::Signal(sig) = o.ending else { return None };
    let err = std::fs::read_to_string(&o.stderr).unwrap_or_default();
    let line = o.log.lines().chain(err.lines()).find(|l| l.contains("Process terminating with default action of signal"));
    let Some(line) = line else { return Some(format!("signal {sig}")) };
    // "... signal 11 (SIGSEGV) at 0x... (main+0x37 in /p): why"
    let what = line.split(" signal ").nth(1).unwrap_or(line);
    let name = what.split(['(', ')']).nth(1).unwrap_or("");
    let rest = what.split_once(") at ").map_or(what, |r| r.1);
    Some(format!("{name} at {}", crate::report::lines::with_source_line(rest, program)))
}

/// Runs the search and makes its report.
pub fn drive(mut runner: Runner, command: Vec<OsString>, opts: Options) -> Report {
    let started = Instant::now();
    runner.jobs = opts.jobs;
    let accessed = runner.file("accessed.json");
    let record_args = vec!["--tool=none".into(), format!("--layout-record={}", accessed.display()).into()];
    let record = Request {
        args: record_args,
        limits: Limits { log: true, count_blocks: true, ..Limits::default() },
        progress: "the run as it is".into(),
        checkpoints: None,
        test: None,
    };
    let run = |runner: &Runner, _: u32, file: &std::path::Path| {
        let limits = Limits { log: true, budget: runner.block_budget(10), time: runner.time_limit(10), ..Limits::default() };
        Request {
            args: vec!["--tool=none".into(), format!("--layout={}", file.display()).into()],
            limits,
            progress: "a layout".into(),
            checkpoints: None,
            test: None,
        }
    };
    let program = opts.program.clone();
    let failed = move |_: &Runner, ran: &Ran| failure(ran, &program);
    let mut search = LayoutSearch::new(&opts.objects, &opts.program, (opts.max_layouts, opts.jobs), accessed, Some(record), Box::new(run), Box::new(failed));
    let verdict = runner.drive(&mut search);
    let mut report = Report {
        tool: "reorder".into(),
        schema: crate::report::model::VERSION,
        command: command.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
        runs: runner.runs,
        seconds: started.elapsed().as_secs_f64(),
        candidates: Some(search.layouts.len() as u64),
        unmoved: opts.objects.unmoved(),
        ..Report::default()
    };
    match verdict {
        Verdict::AlreadyFails(how) => {
            report.result = "already-fails".into();
            report.reason = format!("the program already fails as it is ({how}): no layout is needed; run --tool=suppress on it");
        }
        Verdict::CannotRun(why) => {
            report.result = "cannot-run".into();
            report.reason = format!("cannot run the program: {why}");
        }
        Verdict::NoneFailed => {
            report.result = "no-failure".into();
            report.tried = Some(search.layouts.len() as u64);
            report.reason = format!("no layout exposed a failure: {}", search.tried(None));
        }
        Verdict::Found { k, how, .. } => {
            let layout = &search.layouts[k];
            let saved = layout.write(&opts.out);
            let mut replay = vec![OsString::from("rtgrind"), "--tool=suppress".into(), format!("--layout={}", opts.out.display()).into()];
            replay.extend(command.iter().cloned());
            let place = how.split_once(" at ").map_or(how.clone(), |p| p.1.to_string());
            report.result = "found".into();
            report.tried = Some(k as u64 + 1);
            let over = search.considered.describe();
            report.summary = Some(format!(
                "{} layout{} tried of {} made over {over}; {} runs, {:.2} s",
                k + 1,
                if k == 0 { "" } else { "s" },
                search.layouts.len(),
                report.runs,
                report.seconds
            ));
            // ("0x401234 a.c:21 (main): why": the address, the place.)
            let place = place.split(": ").next().unwrap_or(&place);
            let (pc, place) = match place.split_once(' ') {
                Some((pc, rest)) if pc.starts_with("0x") => (pc.to_string(), rest.to_string()),
                _ => (String::new(), place.to_string()),
            };
            let (saved, replay) = match saved {
                Ok(()) => (format!("saved as {}", opts.out.display()), Some(crate::tools::child::shell_words(&replay))),
                Err(e) => (format!("it cannot be saved as {}: {e}", opts.out.display()), None),
            };
            report.findings.push(Finding {
                kind: "layout exposing a failure".into(),
                place,
                pc,
                message: format!("under layout {} of {} the run fails: {how}", k + 1, search.layouts.len()),
                replay,
                ..Finding::default()
            });
            report.layout = Some(format!("{}; {saved}", layout.summary()));
        }
    }
    report
}

/// The report: text on rtgrind's messages, JSON and SARIF on standard output.
pub fn emit(report: &Report, cli: &crate::cli::Cli) {
    let pid = std::process::id();
    // (Reorder draws no graph.)
    let output = crate::tools::output::Output { dot: None, ..crate::tools::output::Output::of(cli) };
    crate::tools::output::emit(report, RULE, &output, |line| eprintln!("=={pid}== {line}"));
}

const RULE: crate::tools::sarif::Rule = crate::tools::sarif::Rule {
    id: "hidden-memory-corruption",
    description: "Memory corruption that a different layout of the program's variables turns into a failure",
    help: "The program writes outside an object: under the layout saved with the report it fails; replay it with --layout=FILE and search its root cause with --tool=suppress.",
};
