//! `rtgrind --tool=switch ORACLE prog args`: the predicate-switching search. A trace run lists
//! every conditional branch instance up to the failure; then, in the chosen order, each
//! candidate instance is inverted in a run of its own (plain re-execution, repeatable mode)
//! until the oracle accepts a run. Every switched run has a block budget of `--budget-factor`
//! times the original run's, so a switch that makes the program loop ends.

use crate::report::model::{Finding, Report, VERSION};
use crate::tools::child;
use crate::tools::oracle::{Ending, Oracle, RunResult};
use crate::tools::search::{Failure, Forked, Limits, Ran, Request, RunOutcome, Runner, SearchError, Step};
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Last executed first.
    Lefs,
    /// The last instance of each site (most recent site first), then the ones before.
    LastInstanceFirst,
    /// The instances the failure depends on, nearest in the dynamic dependence graph first
    /// (the paper's PRIOR), then the others last executed first.
    Prior,
}

impl Order {
    pub fn parse(s: &str) -> Option<Order> {
        match s {
            "lefs" => Some(Order::Lefs),
            "last-instance-first" => Some(Order::LastInstanceFirst),
            "prior" => Some(Order::Prior),
            _ => None,
        }
    }
}

pub struct Options {
    pub oracle: Oracle,
    pub order: Order,
    pub libs: bool,
    pub all: bool,
    pub budget_factor: u64,
    pub error_exitcode: i32,
    pub seed: u64,
    pub stdin_file: Option<PathBuf>,
    pub expected_output_path: Option<PathBuf>,
    /// The report as asked (`tools::output`).
    pub output: crate::tools::output::Output,
    /// Fork search (one forward run) rather than a run per candidate.
    pub fork: bool,
    pub jobs: u64,
}

/// One candidate: a branch instance of the trace.
#[derive(Clone, Debug)]
struct Candidate {
    /// Position in the trace (0 = first branch executed).
    index: usize,
    site: usize,
    /// Its instance counted from the start (1 = first) and back from the failure (1 = last).
    forward: u64,
    backward: u64,
}

struct Trace {
    /// (pc, source place) by site number.
    sites: Vec<(u64, String)>,
    ids: Vec<usize>,
    /// Whether each instance was taken (the trace's `+`).
    taken: Vec<bool>,
    failure: String,
    /// Threads the program created.
    threads: u64,
    /// How the program changed the file system before the failure, if it did.
    changes_files: Option<String>,
    /// Dependence distance from the failure by trace position (`--order=prior`); None if the
    /// dependence log overflowed.
    distance: Option<HashMap<usize, u32>>,
}

fn parse_trace(text: &str) -> Trace {
    let mut t = Trace { sites: Vec::new(), ids: Vec::new(), taken: Vec::new(), failure: String::new(), threads: 0, changes_files: None, distance: None };
    for line in text.lines() {
        let f: Vec<&str> = line.splitn(5, '\t').collect();
        match f[0] {
            "site" if f.len() >= 4 => {
                let pc = u64::from_str_radix(f[2].trim_start_matches("0x"), 16).unwrap_or(0);
                t.sites.push((pc, f.get(3).unwrap_or(&"").to_string()));
            }
            "failure" => t.failure = f.get(1).unwrap_or(&"").to_string(),
            "threads" => t.threads = f.get(1).and_then(|n| n.parse().ok()).unwrap_or(0),
            "files" => t.changes_files = f.get(1).map(|w| w.to_string()),
            "distance" => {
                let pairs = f.get(1).unwrap_or(&"").split_whitespace().filter_map(|p| {
                    let (i, d) = p.split_once(':')?;
                    Some((i.parse().ok()?, d.parse().ok()?))
                });
                t.distance = Some(pairs.collect());
            }
            "trace" => {
                for x in f.get(1).unwrap_or(&"").split_whitespace() {
                    let (id, taken) = x.strip_suffix('+').map_or((x, false), |id| (id, true));
                    if let Ok(id) = id.parse() {
                        t.ids.push(id);
                        t.taken.push(taken);
                    }
                }
            }
            _ => {}
        }
    }
    t
}

/// "taken" or "not taken": the candidate's own outcome in the trace run.
fn direction(trace: &Trace, c: &Candidate) -> String {
    if trace.taken.get(c.index).copied().unwrap_or(false) { "taken" } else { "not taken" }.to_string()
}

/// Distances `d` of the branch instances of trace `from` (by position), carried over to the
/// positions in `to` of the same site (by pc) and forward instance.
fn by_site_instance(from: &Trace, d: &HashMap<usize, u32>, to: &Trace) -> HashMap<usize, u32> {
    let keyed = |t: &Trace| -> Vec<(u64, u64)> {
        let mut seen: HashMap<usize, u64> = HashMap::new();
        t.ids
            .iter()
            .map(|&site| {
                let n = seen.entry(site).or_insert(0);
                *n += 1;
                (t.sites.get(site).map_or(0, |s| s.0), *n)
            })
            .collect()
    };
    let from_keys = keyed(from);
    let by_key: HashMap<(u64, u64), u32> = d.iter().filter_map(|(&i, &dist)| Some((*from_keys.get(i)?, dist))).collect();
    keyed(to).into_iter().enumerate().filter_map(|(i, k)| Some((i, *by_key.get(&k)?))).collect()
}

fn candidates(trace: &Trace, order: Order) -> Vec<Candidate> {
    let mut total = vec![0u64; trace.sites.len()];
    for &s in &trace.ids {
        total[s] += 1;
    }
    let mut seen = vec![0u64; trace.sites.len()];
    let mut c: Vec<Candidate> = trace
        .ids
        .iter()
        .enumerate()
        .map(|(index, &site)| {
            seen[site] += 1;
            Candidate { index, site, forward: seen[site], backward: total[site] - seen[site] + 1 }
        })
        .collect();
    match order {
        Order::Lefs => c.reverse(),
        Order::LastInstanceFirst => c.sort_by(|a, b| a.backward.cmp(&b.backward).then(b.index.cmp(&a.index))),
        Order::Prior => {
            let none = HashMap::new();
            let d = trace.distance.as_ref().unwrap_or(&none);
            c.sort_by_key(|x| (d.get(&x.index).copied().unwrap_or(u32::MAX), std::cmp::Reverse(x.index)));
        }
    }
    c
}

/// The predicate-switching search, a `tools::search::Search`.
struct Switching {
    command: Vec<OsString>,
    opts: Options,
    input: Replay,
    started: Instant,
    /// The run(s) asked for last.
    stage: Stage,
    /// The trace run's tool arguments.
    trace_args: Vec<OsString>,
    original: Option<RunResult>,
    trace: Option<Trace>,
    cands: Vec<Candidate>,
    /// Each switched run's block budget and time limit (calibrated on the trace run).
    budget: u64,
    limit: Duration,
    fork: bool,
    /// The next candidate to switch, and (fork search) the next batch's size.
    from: usize,
    batch: usize,
    t: Tally,
}

enum Stage {
    Start,
    /// The original run, tracing every branch instance.
    Traced,
    /// The check that the failure repeats.
    Repeated,
    /// The dependence run of `--order=prior`.
    Deps,
    /// A forward run forking at `cands[part]`.
    Forked {
        part: std::ops::Range<usize>,
    },
    /// Runs each switching one of `cands[part]`.
    Switched {
        part: std::ops::Range<usize>,
    },
}

/// Where the program's standard input came from, for the replay command.
enum Replay {
    StdinFile(std::path::PathBuf),
    Redirect(std::path::PathBuf),
    /// A pipe or terminal: the search read it once; the replay needs it again.
    Captured,
}

/// The SARIF rule of the search's findings.
const RULE: crate::tools::sarif::Rule = crate::tools::sarif::Rule {
    id: "critical-predicate",
    description: "A branch instance whose inverted outcome makes a failing run pass (predicate switching)",
    help: "Check this condition: with this one outcome of it inverted the run gave the expected output; the fault is in the predicate or in what it tests.",
};

/// What a successful switch did.
struct Found {
    candidate: Candidate,
    /// The branch's own outcome at that instance (the trace's direction).
    outcome: Option<String>,
}

/// The switched runs so far: the successes, how many were tried and how many their budget
/// stopped.
#[derive(Default)]
struct Tally {
    found: Vec<Found>,
    tried: u64,
    stopped: u64,
}

pub fn drive(runner: Result<Runner, SearchError>, command: Vec<OsString>, opts: Options) -> i32 {
    // How the replay command printed with an answer gets the same input.
    let input = match &opts.stdin_file {
        Some(f) => Replay::StdinFile(f.clone()),
        None => child::stdin_source().map_or(Replay::Captured, Replay::Redirect),
    };
    let mut runner = match runner {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rtgrind: error: {e}");
            return 2;
        }
    };
    runner.jobs = opts.jobs as usize;
    let mut s = Switching {
        command,
        opts,
        input,
        started: Instant::now(),
        stage: Stage::Start,
        trace_args: Vec::new(),
        original: None,
        trace: None,
        cands: Vec::new(),
        budget: u64::MAX,
        limit: Duration::from_secs(3600),
        fork: false,
        from: 0,
        batch: 32,
        t: Tally::default(),
    };
    runner.drive(&mut s)
}

impl crate::tools::search::Search for Switching {
    /// The exit status.
    type Verdict = i32;

    fn next(&mut self, runner: &Runner, ran: Vec<Ran>) -> Step<i32> {
        self.step(runner, ran).unwrap_or_else(Step::Done)
    }
}

impl Switching {
    fn say(&self, s: &str) {
        eprintln!("=={}== switch: {s}", std::process::id());
    }

    fn step(&mut self, runner: &Runner, ran: Vec<Ran>) -> Result<Step<i32>, i32> {
        match std::mem::replace(&mut self.stage, Stage::Start) {
            Stage::Start => self.trace_run(runner),
            Stage::Traced => self.traced(runner, one(ran)?),
            Stage::Repeated => self.repeated(runner, one(ran)?),
            Stage::Deps => {
                one(ran)?;
                let deps = parse_trace(&std::fs::read_to_string(runner.file("deps-trace")).unwrap_or_default());
                let trace = self.trace.as_mut().expect("traced");
                trace.distance = deps.distance.as_ref().map(|d| by_site_instance(&deps, d, trace));
                self.begin(runner)
            }
            Stage::Forked { part } => {
                let mut ran = ran.into_iter().next().expect("a run was asked for");
                let children = ran.outcome.as_mut().map(|o| std::mem::take(&mut o.children)).unwrap_or_default();
                result(ran)?;
                self.forked(&part, children);
                self.next_candidates(runner)
            }
            Stage::Switched { part } => {
                for (i, r) in part.zip(ran) {
                    let (r, log) = result(r)?;
                    self.switched(self.cands[i].clone(), &r, &log);
                    if !self.t.found.is_empty() && !self.opts.all {
                        // (Runs after it in the batch are not the order's: not counted.)
                        break;
                    }
                }
                self.next_candidates(runner)
            }
        }
    }

    /// The trace run: the original execution, every branch instance up to the failure.
    fn trace_run(&mut self, runner: &Runner) -> Result<Step<i32>, i32> {
        self.trace_args = vec!["--tool=switch".into(), format!("--switch-trace={}", runner.file("trace").display()).into()];
        if self.opts.libs {
            self.trace_args.push("--switch-libs=yes".into());
        }
        if let Some(p) = &self.opts.expected_output_path {
            self.trace_args.push(format!("--expected-output={}", p.display()).into());
        }
        self.stage = Stage::Traced;
        let limits = Limits { time: None, log: true, count_blocks: true, budget: None };
        Ok(Step::Run(Request { args: self.trace_args.clone(), limits, progress: "the trace run".into(), checkpoints: None, test: None }))
    }

    /// The trace run ended: the failure, then the check that it repeats.
    fn traced(&mut self, runner: &Runner, (original, _): (RunResult, String)) -> Result<Step<i32>, i32> {
        if !self.opts.output.json && !self.opts.output.sarif {
            child::show_output(&original.stdout);
        }
        if self.opts.oracle.passes(&original) {
            if !self.opts.oracle.given() {
                self.say(&format!(
                    "no oracle given (--expected-output, --expected-stderr, --expected-exit, --oracle) and the program did not crash ({}): nothing to search for",
                    original.ending.describe()
                ));
                return Err(2);
            }
            self.say(&format!("the run already passes the oracle ({}); nothing to find", original.ending.describe()));
            return Err(0);
        }
        self.original = Some(original);
        self.stage = Stage::Repeated;
        let limits = Limits { time: runner.time_limit(20), log: true, count_blocks: false, budget: None };
        Ok(Step::Run(Request { args: vec!["--tool=none".into()], limits, progress: "the failure again".into(), checkpoints: None, test: None }))
    }

    /// The failure must repeat; then the trace (and, for `--order=prior`, the dependences).
    fn repeated(&mut self, runner: &Runner, (again, _): (RunResult, String)) -> Result<Step<i32>, i32> {
        let original = self.original.as_ref().expect("traced");
        let seen = |r: &RunResult| Failure::default().with("the ending", r.ending.describe()).with("the output", digest(&r.stdout));
        if let Some(how) = seen(original).difference(Some(&seen(&again))) {
            self.say(&format!("the failure does not reproduce: {how}"));
            return Err(2);
        }
        let Ok(trace_text) = std::fs::read_to_string(runner.file("trace")) else {
            // The trace run ended without writing its trace: rtgrind stopped, or the program
            // replaced itself with one rtgrind does not follow. Its one-line error says which.
            let err = std::fs::read_to_string(&original.stderr).unwrap_or_default();
            let line = err.lines().rev().find(|l| l.starts_with("rtgrind: error:")).unwrap_or("rtgrind: error: the trace run ended without a trace");
            eprintln!("{line}");
            return Err(2);
        };
        self.trace = Some(parse_trace(&trace_text));
        if self.opts.order != Order::Prior {
            return self.begin(runner);
        }
        // The dependence graph comes from a run of its own: its shadow memory changes where the
        // kernel puts the program's mappings, and with them what some programs do (a hash of
        // addresses), so its branch instances are matched to the trace's by site and instance
        // rather than by position. A mismatch can only change the order, never the answer.
        let mut args = self.trace_args.clone();
        args[1] = format!("--switch-trace={}", runner.file("deps-trace").display()).into();
        args.push("--switch-deps=yes".into());
        self.stage = Stage::Deps;
        let limits = Limits { time: runner.time_limit(40), log: true, count_blocks: false, budget: None };
        Ok(Step::Run(Request { args, limits, progress: "the dependence run".into(), checkpoints: None, test: None }))
    }

    /// The candidates, in the chosen order, and how they are searched.
    fn begin(&mut self, runner: &Runner) -> Result<Step<i32>, i32> {
        let trace = self.trace.as_ref().expect("traced");
        // (Calibrated on the trace run, once.)
        self.budget = runner.block_budget(self.opts.budget_factor).unwrap_or(u64::MAX);
        self.cands = candidates(trace, self.opts.order);
        let original = self.original.as_ref().expect("traced");
        let failure = if trace.failure.is_empty() { original.ending.describe() } else { trace.failure.clone() };
        self.say(&format!("the original run fails ({failure}); {} branch instances before the failure, {} sites", self.cands.len(), trace.sites.len()));
        if self.opts.order == Order::Prior {
            match &trace.distance {
                Some(d) => self.say(&format!("{} of them are in the failure's dynamic dependences (searched first, nearest first)", d.len())),
                None => self.say("the dependence log overflowed: searching last executed first"),
            }
        }
        self.limit = runner.time_limit(20).unwrap_or(Duration::from_secs(3600));
        // A fork copies only the forking thread: programs with threads are searched by re-running;
        // so are programs that change files (forked children share the file system with their
        // parent and each other: a child listing a directory saw the file its parent made).
        self.fork = self.opts.fork && !self.opts.libs && trace.threads == 0 && trace.changes_files.is_none();
        self.next_candidates(runner)
    }

    /// The next forward run (fork search) or switched runs, or the report when done.
    fn next_candidates(&mut self, runner: &Runner) -> Result<Step<i32>, i32> {
        if self.from >= self.cands.len() || (!self.t.found.is_empty() && !self.opts.all) {
            return Err(self.report(runner));
        }
        if self.fork {
            return self.fork_run();
        }
        // Re-executions of a program that changes no files do not see each other: several at
        // once (`--jobs`), examined in the order's.
        let trace = self.trace.as_ref().expect("traced");
        let at_once = if trace.changes_files.is_none() { runner.jobs.max(1) } else { 1 };
        let part = self.from..(self.from + at_once).min(self.cands.len());
        self.from = part.end;
        let requests: Vec<Request> = self.cands[part.clone()]
            .iter()
            .map(|c| {
                let (pc, _) = trace.sites[c.site];
                let args = vec!["--tool=switch".into(), format!("--switch-at={pc:#x}:{}", c.forward).into(), format!("--budget-blocks={}", self.budget).into()];
                let limits = Limits { time: Some(self.limit), log: true, count_blocks: false, budget: None };
                Request { args, limits, progress: format!("switched run {} of {}", part.start + 1, self.cands.len()), checkpoints: None, test: None }
            })
            .collect();
        self.stage = Stage::Switched { part };
        Ok(if requests.len() == 1 { Step::Run(requests.into_iter().next().unwrap()) } else { Step::Batch(requests) })
    }

    /// The fork search: forward runs fork at the candidates in order (the runner's checkpoints:
    /// branch instances), in batches growing fourfold (an answer near the front of the order
    /// costs one short batch, a long search few forward runs), each child switched.
    fn fork_run(&mut self) -> Result<Step<i32>, i32> {
        let part = self.from..(self.from + self.batch).min(self.cands.len());
        self.from = part.end;
        self.batch *= 4;
        let mut args: Vec<OsString> =
            vec!["--tool=switch".into(), format!("--budget-blocks={}", self.budget).into(), format!("--jobs={}", self.opts.jobs).into()];
        if let Some(p) = &self.opts.expected_output_path {
            args.push(format!("--expected-output={}", p.display()).into());
        }
        let limits = Limits { time: Some(self.limit * (part.len() as u32).max(1)), log: true, count_blocks: false, budget: None };
        let progress = format!("forking at candidates {}-{} of {}", part.start + 1, part.end, self.cands.len());
        let checkpoints = Some(self.cands[part.clone()].iter().map(|c| c.index as u64).collect());
        self.stage = Stage::Forked { part };
        Ok(Step::Run(Request { args, limits, progress, checkpoints, test: None }))
    }

    /// A forward run ended: its children (by checkpoint: how each ended and its output, or
    /// None if it gave up), in the order's.
    fn forked(&mut self, part: &std::ops::Range<usize>, children: Vec<Forked>) {
        let mut by_index: HashMap<u64, Option<RunOutcome>> = children.into_iter().map(|c| (c.at, c.outcome)).collect();
        let trace = self.trace.as_ref().expect("traced");
        for c in &self.cands[part.clone()] {
            let Some(child) = by_index.remove(&(c.index as u64)) else { continue };
            self.t.tried += 1;
            let Some(RunOutcome { ending, stdout, stderr, .. }) = child else { continue };
            if ending == Ending::Budget {
                self.t.stopped += 1;
            }
            if self.opts.oracle.passes(&RunResult { stdout, stderr, ending }) {
                self.t.found.push(Found { candidate: c.clone(), outcome: Some(direction(trace, c)) });
                if !self.opts.all {
                    break;
                }
            }
        }
    }

    /// A switched run (by re-execution) of candidate `c` ended.
    fn switched(&mut self, c: Candidate, r: &RunResult, log: &str) {
        self.t.tried += 1;
        if matches!(r.ending, Ending::Budget | Ending::TimedOut) {
            self.t.stopped += 1;
        }
        if self.opts.oracle.passes(r) {
            // The switched run forced the inverse of the trace's direction; if it says
            // otherwise the two runs went apart, and the trace is not to be believed.
            let own = direction(self.trace.as_ref().expect("traced"), &c);
            let forced_taken = log.contains("switched to taken");
            let outcome = (forced_taken != (own == "taken")).then_some(own);
            self.t.found.push(Found { candidate: c, outcome });
        }
    }

    /// The command that runs the program with instance `n` of the branch at `pc` switched, as
    /// the search ran it: the same address needs the same layout (`--repeatable`, its seed),
    /// the same input.
    fn replay(&self, runner: &Runner, pc: u64, n: u64) -> String {
        let mut words: Vec<OsString> = vec!["rtgrind".into(), "--tool=switch".into(), format!("--switch-at={pc:#x}:{n}").into(), "--repeatable=yes".into()];
        // (The run options, a layout's among them: the runs had them.)
        words.extend(runner.options().iter().cloned());
        if self.opts.seed != 0 {
            words.push(format!("--seed={}", self.opts.seed).into());
        }
        if let Replay::StdinFile(f) = &self.input {
            words.push(format!("--stdin-file={}", f.display()).into());
        }
        words.push("--".into());
        words.extend(self.command.iter().cloned());
        let mut line = child::shell_words(&words);
        match &self.input {
            Replay::Redirect(f) => line += &format!(" < {}", child::shell_words(&[f.clone().into()])),
            Replay::Captured if std::fs::metadata(&runner.stdin_file).is_ok_and(|m| m.len() > 0) => line += " < (the same standard input)",
            _ => {}
        }
        line
    }

    /// The answer: each successful switch with the command that replays it, and the figures;
    /// the exit status.
    fn report(&self, runner: &Runner) -> i32 {
        runner.progress.done();
        let report = self.model(runner);
        crate::tools::output::emit(&report, RULE, &self.opts.output, |line| self.say(line.strip_prefix("switch: ").unwrap_or(line)));
        if report.findings.is_empty() {
            return 2;
        }
        self.opts.error_exitcode
    }

    /// The search as the one report model (`report::model`).
    fn model(&self, runner: &Runner) -> Report {
        let (trace, t) = (self.trace.as_ref().expect("traced"), &self.t);
        let seconds = self.started.elapsed().as_secs_f64();
        let findings: Vec<Finding> = t
            .found
            .iter()
            .map(|f| {
                let (pc, place) = &trace.sites[f.candidate.site];
                Finding {
                    kind: "critical predicate".into(),
                    place: place.clone(),
                    message: format!(
                        "critical predicate: the branch at {pc:#x}, instance {} ({} from the failure): inverting it makes the run pass",
                        f.candidate.forward, f.candidate.backward
                    ),
                    pc: format!("{pc:#x}"),
                    instance: f.candidate.forward,
                    from_failure: Some(f.candidate.backward),
                    outcome: f.outcome.clone(),
                    replay: Some(self.replay(runner, *pc, f.candidate.forward)),
                    dependences: trace.distance.as_ref().and_then(|d| d.get(&f.candidate.index)).copied(),
                    ..Finding::default()
                }
            })
            .collect();
        let order = match self.opts.order {
            Order::Lefs => "lefs",
            Order::LastInstanceFirst => "last-instance-first",
            Order::Prior => "prior",
        };
        let how = if self.fork {
            "forked from forward runs"
        } else if trace.threads > 0 {
            "re-executed: the program has threads"
        } else if trace.changes_files.is_some() && self.opts.fork {
            "re-executed: the program changes files"
        } else {
            "re-executed"
        };
        Report {
            tool: "switch".into(),
            result: if findings.is_empty() { "exhausted" } else { "found" }.into(),
            schema: VERSION,
            command: self.command.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
            reason: if findings.is_empty() { "no single switch makes the run pass".into() } else { String::new() },
            findings,
            runs: runner.runs,
            tried: Some(t.tried),
            candidates: Some(self.cands.len() as u64),
            seconds: (seconds * 1000.0).round() / 1000.0,
            order: Some(order.into()),
            how: Some(how.into()),
            stopped: Some(t.stopped),
            ..Report::default()
        }
    }
}

/// The one run a step asked for, as the switch search takes it.
fn one(ran: Vec<Ran>) -> Result<(RunResult, String), i32> {
    result(ran.into_iter().next().expect("a run was asked for"))
}

/// A run's result and rtgrind's log, or (its one-line error printed) exit status 2.
fn result(ran: Ran) -> Result<(RunResult, String), i32> {
    let r = ran.outcome.map_err(|e| {
        eprintln!("cannot run rtgrind: {e}");
        2
    })?;
    if let Some(line) = r.log.lines().find(|l| l.starts_with("rtgrind: error:")) {
        eprintln!("{line}");
        return Err(2);
    }
    Ok((RunResult { stdout: r.stdout, stderr: r.stderr, ending: r.ending }, r.log))
}

/// A file's bytes in short: their length and a hash (what the repeat check compares).
fn digest(path: &std::path::Path) -> String {
    use std::hash::{Hash, Hasher};
    let bytes = std::fs::read(path).unwrap_or_default();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    format!("{} bytes, hash {:016x}", bytes.len(), h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(ids: &[usize]) -> Trace {
        Trace {
            sites: vec![(0x10, String::new()), (0x20, String::new())],
            ids: ids.to_vec(),
            taken: vec![false; ids.len()],
            failure: String::new(),
            threads: 0,
            changes_files: None,
            distance: None,
        }
    }

    #[test]
    fn lefs_goes_back_from_the_failure() {
        let c = candidates(&trace(&[0, 1, 0, 1, 0]), Order::Lefs);
        assert_eq!(c.iter().map(|c| (c.site, c.forward, c.backward)).collect::<Vec<_>>(), vec![(0, 3, 1), (1, 2, 1), (0, 2, 2), (1, 1, 2), (0, 1, 3)]);
    }

    #[test]
    fn last_instance_first_takes_each_site_s_last_instance_first() {
        let c = candidates(&trace(&[0, 0, 0, 1, 0]), Order::LastInstanceFirst);
        assert_eq!(c.iter().map(|c| (c.site, c.forward)).collect::<Vec<_>>(), vec![(0, 4), (1, 1), (0, 3), (0, 2), (0, 1)]);
    }
}
