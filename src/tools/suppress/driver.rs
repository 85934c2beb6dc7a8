//! `rtgrind --tool=suppress prog args`: iterated execution suppression (dissertation
//! Fig. 5.3). Each run is a child rtgrind in repeatable mode with a plan (the suppression
//! points so far); it reports its crash and the definitions of the locations the crash used.
//! Those become suppression points of the next run, until a run ends without a crash: the
//! points added last are the first point of memory corruption.

use super::plan::{Crash, Def, Outcome, Plan, Point};
use crate::tools::search::{Ending, Limits, Runner};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Clone)]
pub struct Options {
    pub max_runs: u32,
    pub error_exitcode: i32,
    pub stdin_file: Option<PathBuf>,
    pub seed: u64,
    /// A failure other than a crash, as `--failure` gave it.
    pub failure: Option<String>,
    /// Copy the original run's standard output to rtgrind's (not when a report takes it).
    pub show_output: bool,
}

/// Exit status when the search could not conclude.
const INCONCLUSIVE: i32 = 2;

/// The search's runs: the one runner (`tools::search`), each run with a plan.
struct Runs {
    runner: Runner,
    failure: Option<String>,
    max_runs: u32,
    /// Runs made again to trace a suppression run's failure.
    traced_again: u32,
}

enum Ended {
    Outcome(Box<Outcome>),
    /// rtgrind could not run the program: its exit status and error line.
    Error(i32, String),
    TimedOut,
    /// The run used up its block budget (suppression made the program run on and on).
    Budget,
}

impl Runs {
    /// The next run, as the search takes it: a suppression run that does not end (suppression
    /// sent the program round a loop) did not fail where the program failed, so it stands for a
    /// run without the failure, marked as stopped; the original run and its repeat must end.
    fn next(&mut self, points: &[Point], trace: bool, watch: &[(u64, u64)]) -> Result<Outcome, Verdict> {
        let stopped = |why: &str| Outcome { stopped: Some(why.into()), ..Outcome::default() };
        let traced = if trace && !points.is_empty() { ", traced" } else { "" };
        crate::tools::child::progress(&format!("suppress: run {} ({} suppression points{traced})", self.runner.runs + 1, points.len()));
        match self.run(points, trace, watch) {
            Ok(Ended::Outcome(o)) => Ok(*o),
            Ok(Ended::TimedOut) if !points.is_empty() => Ok(stopped("stopped after 20 times the first run's time")),
            Ok(Ended::Budget) if !points.is_empty() => Ok(stopped("stopped after 20 times the first run's blocks")),
            Ok(Ended::TimedOut) => Err(Verdict::Inconclusive(format!("run {} did not end (more than 20 times the first run's time)", self.runner.runs))),
            Ok(Ended::Budget) => Err(Verdict::Inconclusive(format!("run {} did not end within 20 times the first run's blocks", self.runner.runs))),
            // rtgrind's own "cannot run" statuses (125 unsupported, 126 not a program, 127
            // missing) pass through; a run that ended some other way without an outcome (the
            // program replaced itself) is an error of the search (2).
            Ok(Ended::Error(code, line)) => Err(Verdict::CannotRun(if (125..=127).contains(&code) { code } else { 2 }, line)),
            Err(e) => Err(Verdict::Inconclusive(format!("cannot run rtgrind: {e}"))),
        }
    }

    /// Run `n + 1` with the points, tracing or not, watching those locations; its outcome.
    fn run(&mut self, points: &[Point], trace: bool, watch: &[(u64, u64)]) -> std::io::Result<Ended> {
        let n = self.runner.runs + 1;
        let (plan_path, out_path) = (self.runner.file(&format!("plan-{n}")), self.runner.file(&format!("outcome-{n}")));
        let plan = Plan { points: points.to_vec(), out: None, at_functions: Vec::new(), failure: self.failure.clone(), trace, watch: watch.to_vec() };
        std::fs::write(&plan_path, plan.to_text())?;
        let args: Vec<std::ffi::OsString> =
            vec!["--tool=suppress".into(), format!("--suppress-plan={}", plan_path.display()).into(), format!("--suppress-out={}", out_path.display()).into()];
        // Later runs: 20 times the first run's time and blocks.
        let limits = Limits { budget: self.runner.block_budget(20), time: self.runner.time_limit(20), log: false, count_blocks: n == 1 };
        let r = self.runner.run(&args, limits)?;
        match r.ending {
            Ending::TimedOut => return Ok(Ended::TimedOut),
            Ending::Budget => return Ok(Ended::Budget),
            _ => {}
        }
        let Ok(text) = std::fs::read_to_string(&out_path) else {
            // rtgrind itself stopped (the program cannot run under it): its one-line error.
            let line = r.error().unwrap_or_else(|| "rtgrind: error: the run ended without an outcome".into());
            let code = if let Ending::Exit(c) = r.ending { c } else { 2 };
            return Ok(Ended::Error(code, line));
        };
        Ok(Ended::Outcome(Box::new(Outcome::parse(&text))))
    }
}

fn signame(sig: i32) -> String {
    match sig {
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGFPE => "SIGFPE".into(),
        libc::SIGILL => "SIGILL".into(),
        libc::SIGABRT => "SIGABRT".into(),
        s => format!("signal {s}"),
    }
}

fn crash_text(o: &Outcome) -> String {
    match &o.crash {
        // A named failure: the run says what it was.
        Some(c) if c.signal < 0 => format!("{} (at {:#x})", c.place, c.pc),
        Some(c) => format!("{} at {:#x} {}", signame(c.signal), c.pc, c.place),
        None => match &o.stopped {
            Some(why) => format!("the program looped ({why}), without the failure so far"),
            None => "no failure".into(),
        },
    }
}

/// How a failure's repeat differs from it: which of signal, place and calls.
fn difference(first: &Crash, again: Option<&Crash>) -> String {
    let Some(again) = again else { return "the second run did not fail".into() };
    if again.signal != first.signal {
        return format!("the failure ({} then {})", signame(first.signal), signame(again.signal));
    }
    if again.pc != first.pc {
        return format!("the place ({:#x} then {:#x})", first.pc, again.pc);
    }
    if again.stack != first.stack {
        let calls = |s: &[u64]| s.iter().map(|r| format!("{r:#x}")).collect::<Vec<_>>().join(" < ");
        return format!("the calls it happened under ({} then {})", calls(&first.stack), calls(&again.stack));
    }
    "nothing the check compares".into()
}

/// Suppression point `p` includes instance `d` (instance 0: every instance of the site).
fn covers(p: &Point, d: &Point) -> bool {
    (p.pc == d.pc || p.call() || p.call_site().is_some()) && p.thread == d.thread && (p.instance == 0 || p.same_instance(d))
}

/// The place a point is reported at: its own line, or for code in a library the main
/// program's call that led there.
fn headline(def: &Def, hits: &[(Point, String)]) -> String {
    // The hit at the definition's own instance (the run records a point of every instance at
    // the instances it fired at), else any of its instruction's (or its call site's).
    let exact = hits.iter().find(|h| covers(&h.0, &def.point));
    let hit = exact.or_else(|| hits.iter().find(|h| covers(&Point { instance: 0, ..h.0 }, &def.point)));
    match hit.map(|h| h.1.as_str()).filter(|s| !s.is_empty()) {
        Some(call) => format!("{call}, inside {}", def.place),
        None => def.place.clone(),
    }
}

/// How the search ended.
pub enum Verdict {
    /// The first run did not crash.
    NoFailure,
    /// The crash did not repeat: (first run, second run).
    /// (first run, second run, how they differ).
    NotReproducible(String, String, String),
    /// The first point(s) of memory corruption: (point as the crash analysis named it, the
    /// place to report, suppressed in every instance).
    RootCause(Vec<Root>),
    /// The search stopped without an answer, and why.
    Inconclusive(String),
    /// rtgrind cannot run the program (its exit status and error line).
    CannotRun(i32, String),
}

pub struct Root {
    pub point: Point,
    /// Where it is reported: its line, or the program's call into the library it is in.
    pub place: String,
    /// Its own line (inside a library, the library's).
    pub own_place: String,
    pub instruction: String,
    pub every_instance: bool,
    /// It is a library's, and the program's call it belongs to was suppressed whole.
    pub whole_call: bool,
    /// With `whole_call`: every call the program made from that line was (a copy in a loop).
    pub every_call: bool,
    /// Suppressing it made the program loop (no run ended without the failure): reported as
    /// such, never as a plain root cause.
    pub looped: bool,
    /// Suppressing it avoided the failure, but the run then failed otherwise, on nothing
    /// defined (how): reported as such, never as a plain root cause.
    pub failed_otherwise: Option<String>,
}

/// What the search found, for the report.
pub struct Search {
    pub verdict: Verdict,
    /// Each run after the check: the points it added and its outcome.
    pub chain: Vec<(Vec<Point>, Outcome)>,
    pub runs: u32,
    /// Of those, runs made again to trace a suppression run's failure.
    pub traced_again: u32,
    pub seconds: f64,
}

/// Runs the search and prints the report; returns the exit status.
pub fn drive(command: Vec<std::ffi::OsString>, opts: Options, format: super::report::Format) -> i32 {
    let started = Instant::now();
    let pid = std::process::id();
    let error_exitcode = opts.error_exitcode;
    let search = match Runner::new("suppress", command.clone(), opts.seed, opts.stdin_file.clone()) {
        Ok(runner) => run_search(runner, opts, started),
        Err(e) => Search { verdict: Verdict::Inconclusive(e.to_string()), chain: Vec::new(), runs: 0, traced_again: 0, seconds: 0.0 },
    };
    crate::tools::child::progress_done();
    super::report::emit(&search, &command, &format, pid);
    match search.verdict {
        Verdict::NoFailure => 0,
        Verdict::RootCause(_) => error_exitcode,
        Verdict::CannotRun(code, _) => code,
        _ => INCONCLUSIVE,
    }
}

fn run_search(runner: Runner, opts: Options, started: Instant) -> Search {
    let mut chain: Vec<(Vec<Point>, Outcome)> = Vec::new();
    let mut runs = Runs { runner, failure: opts.failure.clone(), max_runs: opts.max_runs, traced_again: 0 };
    let verdict = search(&mut runs, &opts, &mut chain);
    Search { verdict, chain, runs: runs.runner.runs, traced_again: runs.traced_again, seconds: started.elapsed().as_secs_f64() }
}

/// The search. Only the runs whose failure is analysed trace (origins cost most of a run):
/// the first one, and a suppression run that fails, made again with tracing. The check that
/// the failure repeats and the suppression runs that end without one do not.
fn search(runs: &mut Runs, opts: &Options, chain: &mut Vec<(Vec<Point>, Outcome)>) -> Verdict {
    let crash = match original(runs, opts, chain) {
        Ok(c) => c,
        Err(v) => return v,
    };
    let mut points: Vec<Point> = Vec::new();
    let mut calls = super::calls::Calls::new();
    loop {
        let current = &chain.last().unwrap().1;
        calls.learn(current);
        if let Some(v) = concluded(chain, &crash, &calls) {
            return v;
        }
        let mut new = match next_points(&chain.last().unwrap().1, &mut calls, &points) {
            Ok(n) => n,
            Err(v) => return v,
        };
        if runs.runner.runs >= runs.max_runs {
            return Verdict::Inconclusive(format!("no run without a crash within --max-runs={}", runs.max_runs));
        }
        points.retain(|p| !calls.subsumed(p, &new));
        points.extend(&new);
        let mut o = match run_points(runs, &points) {
            Ok(o) => o,
            Err(v) => return v,
        };
        if o.stopped.is_some() && new.len() > 1 {
            // Suppressing them together made the program loop: each alone may end it.
            let before = points.len() - new.len();
            for d in new.clone() {
                if runs.runner.runs >= runs.max_runs {
                    break;
                }
                let mut alone = points[..before].to_vec();
                alone.push(d);
                match runs.next(&alone, false, &[]) {
                    Ok(a) if a.crash.is_none() && a.stopped.is_none() => {
                        chain.push((new.clone(), o));
                        points = alone;
                        new = vec![d];
                        o = a;
                        break;
                    }
                    Ok(_) => {}
                    Err(v) => return v,
                }
            }
        }
        let done = o.crash.is_none();
        chain.push((new, o));
        if done {
            let looped = chain[chain.len() - 1].1.stopped.is_some();
            return Verdict::RootCause(roots(chain, Some(looped), None));
        }
    }
}

/// The original run, traced, and its repeat (which watches the locations narrower than their
/// origin granule the failure used, `watch.rs`: then its definitions are the finer ones): the
/// failure, and the chain's first outcome.
fn original(runs: &mut Runs, opts: &Options, chain: &mut Vec<(Vec<Point>, Outcome)>) -> Result<Crash, Verdict> {
    let first = runs.next(&[], true, &[])?;
    if opts.show_output {
        crate::tools::child::show_output(&runs.runner.file("stdout-1"));
    }
    let Some(crash) = first.crash.clone() else { return Err(Verdict::NoFailure) };
    let again = runs.next(&[], !first.narrow.is_empty(), &first.narrow)?;
    if !again.crash.as_ref().is_some_and(|c| c.same(&crash)) {
        return Err(Verdict::NotReproducible(crash_text(&first), crash_text(&again), difference(&crash, again.crash.as_ref())));
    }
    chain.push((Vec::new(), if first.narrow.is_empty() { first } else { again }));
    Ok(crash)
}

/// Whether the chain's last run ends the search otherwise than by running on: the points it
/// added (whole calls that overflowed) avoided the failure and it failed otherwise, or it used
/// nothing defined.
fn concluded(chain: &[(Vec<Point>, Outcome)], crash: &Crash, calls: &super::calls::Calls) -> Option<Verdict> {
    let (added, current) = &chain[chain.len() - 1];
    // Suppressing whole the library calls that overflowed avoided the failure if the run
    // then failed otherwise: what the copy should have written in bounds is missing, and
    // that is no corruption of its own to follow (unzip's strcat, suppressed, left a name
    // unterminated that printf then read past).
    let whole_calls = !added.is_empty() && added.iter().all(|p| p.call() || p.call_site().is_some());
    let same = current.crash.as_ref().is_some_and(|c| (c.signal, c.pc) == (crash.signal, crash.pc));
    // (Unless the new failure used what an earlier call at the same site overflowed:
    // strcat in a loop, every call past the end; then the search goes on to that site.)
    let again_at_site = current.defs.iter().any(|d| added.iter().any(|p| calls.another_at_site(p, &d.point)));
    if whole_calls && !same && !again_at_site {
        return Some(Verdict::RootCause(roots(chain, None, Some(crash_text(current)))));
    }
    // A suppression run that failed otherwise on constants the program stored (`name = NULL`
    // before the code that would set it): no corruption, but what the suppressed points'
    // code left unset when the run went on past the failure (giflib's option parser,
    // suppressed, never set the output name). Their root cause, so qualified.
    if chain.len() > 1 && !same && !added.is_empty() && !current.defs.is_empty() && current.defs.iter().all(|d| d.constant) {
        return Some(Verdict::RootCause(roots(chain, None, Some(crash_text(current)))));
    }
    if current.defs.is_empty() {
        // A suppression run that failed otherwise than the program did (another signal or
        // place), on nothing defined: the points it added avoided the failure, and the
        // suppression itself went astray. Their root cause is reported as such, never as
        // a plain one; the same failure again is inconclusive.
        if chain.len() > 1 && !same {
            let why = format!("{}, which used no location with a known definition", crash_text(current));
            return Some(Verdict::RootCause(roots(chain, None, Some(why))));
        }
        return Some(Verdict::Inconclusive(format!("the crash ({}) used no location with a known definition", crash_text(current))));
    }
    None
}

/// The points the next run adds for the failure's definitions, given those suppressed
/// already.
fn next_points(current: &Outcome, calls: &mut super::calls::Calls, points: &[Point]) -> Result<Vec<Point>, Verdict> {
    let defs: Vec<Point> = current.defs.iter().map(|d| d.point).collect();
    // Library definitions widened to their calls (`calls.rs`).
    let mut new: Vec<Point> = calls.widen(&current.defs, points).into_iter().filter(|d| !points.contains(d)).collect();
    new.sort();
    new.dedup();
    // A statement whose other instance was suppressed already comes back: the crash feeds
    // on its every instance (a loop, an allocator walking its lists); suppress them all at
    // once rather than one instance per run.
    for d in &mut new {
        if !d.call() && d.call_site().is_none() && points.iter().any(|p| p.pc == d.pc && p.thread == d.thread) {
            d.instance = 0;
        }
    }
    new.retain(|d| !points.contains(d));
    if new.is_empty() {
        // Suppressing the instance did not avoid the crash (another instance of the same
        // statement wrote part of the same word, which origins do not tell apart):
        // suppress every instance of the statement.
        new = defs.iter().map(|d| calls.every(d)).filter(|d| !points.contains(d)).collect();
    }
    if new.is_empty() {
        return Err(Verdict::Inconclusive("suppressing the crash's definitions did not avoid it".into()));
    }
    Ok(new)
}

/// A suppression run with `points`; if it fails, the same again traced (and once more
/// watching what it used narrower than a granule): its outcome.
fn run_points(runs: &mut Runs, points: &[Point]) -> Result<Outcome, Verdict> {
    let o = runs.next(points, false, &[])?;
    let Some(c) = o.crash.clone() else { return Ok(o) };
    // The same run again, traced: the locations the failure used and their definitions.
    if runs.runner.runs >= runs.max_runs {
        return Err(Verdict::Inconclusive(format!("no room within --max-runs={} to trace the last run's failure", runs.max_runs)));
    }
    runs.traced_again += 1;
    let mut t = runs.next(points, true, &[])?;
    if !t.crash.as_ref().is_some_and(|t| t.same(&c)) {
        return Err(Verdict::Inconclusive(format!(
            "run {} did not fail the same way when traced: {}, then {}",
            runs.runner.runs - 1,
            crash_text(&o),
            crash_text(&t)
        )));
    }
    if !t.narrow.is_empty() && runs.runner.runs < runs.max_runs {
        runs.traced_again += 1;
        let w = runs.next(points, true, &t.narrow)?;
        if w.crash.as_ref().is_some_and(|w| w.same(&c)) {
            t = w;
        }
    }
    Ok(t)
}

/// The root causes the chain's last run stands for: the previous failure's definitions that
/// its added points cover (`looped`: that run looped; `failed_otherwise`: it failed anew).
fn roots(chain: &[(Vec<Point>, Outcome)], looped: Option<bool>, failed_otherwise: Option<String>) -> Vec<Root> {
    let (prev, (added, last)) = (failure_before(chain, chain.len() - 1), &chain[chain.len() - 1]);
    prev.defs
        .iter()
        .filter(|d| added.iter().any(|p| covers(p, &d.point)))
        .map(|d| Root {
            point: d.point,
            place: headline(d, &last.hits),
            own_place: d.place.clone(),
            instruction: d.instruction.clone(),
            every_instance: added.iter().any(|p| p.instance == 0 && p.call_site().is_none() && covers(p, &d.point)),
            whole_call: added.iter().any(|p| (p.call() || p.call_site().is_some()) && covers(p, &d.point)),
            every_call: added.iter().any(|p| p.call_site().is_some() && covers(p, &d.point)),
            looped: looped.unwrap_or(false),
            failed_otherwise: failed_otherwise.clone(),
        })
        .collect()
}

/// The failure whose definitions run `i` of the chain suppresses: the last failing run before
/// it (a run that looped may come between).
pub fn failure_before(chain: &[(Vec<Point>, Outcome)], i: usize) -> &Outcome {
    chain[..i].iter().rev().find(|c| c.1.crash.is_some()).map_or(&chain[i - 1].1, |c| &c.1)
}

/// "SIGSEGV at 0x... place" or "no crash".
pub fn describe_crash(o: &Outcome) -> String {
    crash_text(o)
}

/// The place each point in `added` is reported at.
pub fn added_places(prev: &Outcome, added: &[Point], hits: &[(Point, String)]) -> Vec<String> {
    prev.defs.iter().filter(|d| added.iter().any(|p| covers(p, &d.point))).map(|d| headline(d, hits)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The repeat check compares the failure's signal, place and calls, not its time, and says
    /// which differs and how (issue 21, item 6).
    #[test]
    fn a_repeat_that_differs_says_how() {
        let first = Crash { signal: 11, pc: 0x401000, instance: 100, place: String::new(), stack: vec![0x401500, 0x401800] };
        assert!(first.same(&first.clone()));
        let other_calls = Crash { stack: vec![0x401600, 0x401800], ..first.clone() };
        assert!(!first.same(&other_calls));
        assert_eq!(difference(&first, Some(&other_calls)), "the calls it happened under (0x401500 < 0x401800 then 0x401600 < 0x401800)");
        // The same failure later (the program did more first): the same.
        assert!(first.same(&Crash { instance: 130, ..first.clone() }));
        assert_eq!(difference(&first, Some(&Crash { signal: 6, ..first.clone() })), "the failure (SIGSEGV then SIGABRT)");
        assert_eq!(difference(&first, None), "the second run did not fail");
    }
}
