//! `rtgrind --tool=suppress prog args`: iterated execution suppression (dissertation
//! Fig. 5.3). Each run is a child rtgrind in repeatable mode with a plan (the suppression
//! points so far); it reports its crash and the definitions of the locations the crash used.
//! Those become suppression points of the next run, until a run ends without a crash: the
//! points added last are the first point of memory corruption.

use super::plan::{Crash, Def, Hit, Outcome, Plan, Point};
use crate::report::lines::SourceLines;
use crate::tools::reorder::driver::{LayoutSearch, Verdict as ReorderVerdict};
use crate::tools::search::{Ending, Failure, Limits, Ran, Request, Runner, Search as _, SearchError, Step};
use std::time::Instant;

#[derive(Clone)]
pub struct Options {
    pub max_runs: u32,
    pub error_exitcode: i32,
    /// A failure other than a crash, as `--failure` gave it.
    pub failure: Option<String>,
    /// Copy the original run's standard output to rtgrind's (not when a report takes it).
    pub show_output: bool,
    /// A suppression run that fails otherwise, on constants the program stored, is the next
    /// failure to explain rather than the end of the search (the race tool's loop, ch. 6 of
    /// the dissertation: in Fig. 6.6 the assertion that fails once the crashes are suppressed
    /// is followed to its definition).
    pub follow_new_failures: bool,
    /// When a run does not fail (the original, or a suppression run), run it again with heap
    /// redzones (`redzones`), where an overflow that corrupted nothing the run used shows, and
    /// go on under them if it fails (the complete technique of the dissertation's Fig. 5.7,
    /// its heap layout).
    pub reorder: bool,
    /// What layouts of globals and frames may move, when the complete technique searches
    /// them too (`--reorder=yes` on a program rtgrind can read): after the redzones, a run
    /// that still does not fail is run under layouts (`tools::reorder`) until one fails.
    pub layouts: Option<LayoutSetup>,
}

/// The program's movable variables and the layout search's limits.
#[derive(Clone)]
pub struct LayoutSetup {
    pub objects: crate::layout::objects::Objects,
    pub program: String,
    pub max_layouts: usize,
    pub jobs: usize,
    /// `--layout-out`: where the layout found is saved (else a new file in the current
    /// directory), for the user to run under it again.
    pub out: Option<std::path::PathBuf>,
}

/// Exit status when the search could not conclude.
const INCONCLUSIVE: i32 = 2;

/// The suppression search, a `tools::search::Search`: every step is one run, with a plan.
struct Suppression<'o> {
    opts: &'o Options,
    /// The run asked for last, and what the search does with its outcome.
    stage: Stage,
    /// Each run after the check: the points it added and its outcome.
    chain: Vec<(Vec<Point>, Outcome)>,
    /// The original failure.
    crash: Option<Crash>,
    /// The points suppressed in the next run.
    points: Vec<Point>,
    calls: super::calls::Calls,
    /// Runs made again to trace a suppression run's failure.
    traced_again: u32,
    /// The caller's answer found in the chain so far: the search stops there.
    enough: Option<&'o Enough<'o>>,
    /// The runs have heap redzones: from which run on (`Options::reorder`), and whether that
    /// run failed where the one before it had not.
    redzones_from: Option<u32>,
    redzones_exposed: bool,
    /// The layout search, while it runs (`Stage::Layouts`), and the runs it made in all (not
    /// counted in `--max-runs`).
    layout_search: Option<LayoutSearch<'o>>,
    layout_runs: u32,
    layout_runs_before: u32,
    /// The layouts the runs had, each from some run on (that run, its file, its pairs, what
    /// its search tried), and what the last search tried if it found none.
    layouts: Vec<(u32, std::path::PathBuf, String, String)>,
    layouts_tried: Option<String>,
    /// A layout search was made since the last layout was found (Fig. 5.7's loop searches
    /// again only from a run under the layout found).
    searched: bool,
}

/// Whether the chain so far holds what the caller looks for (the race tool: a definition
/// that is a harmful race's access, where the dissertation's loop ends).
pub type Enough<'a> = dyn Fn(&[(Vec<Point>, Outcome)]) -> bool + 'a;

enum Stage {
    Start,
    /// The original run, traced.
    Original,
    /// Its repeat (watching what the failure used narrower than a granule).
    Repeat {
        first: Box<Outcome>,
    },
    /// A suppression run that added `new`.
    Suppressed {
        new: Vec<Point>,
    },
    /// It failed: the same run traced, then (`Watched`) watching what it used narrower than a
    /// granule.
    Traced {
        new: Vec<Point>,
        plain: Box<Outcome>,
    },
    Watched {
        new: Vec<Point>,
        traced: Box<Outcome>,
        crash: Crash,
    },
    /// Suppressing `new` together made the program loop: the run with `new[k]` alone.
    Alone {
        new: Vec<Point>,
        together: Box<Outcome>,
        k: usize,
    },
    /// The layout search (`layout_search`) runs; then the search goes on from `resume`.
    Layouts {
        resume: Resume,
    },
}

/// Where the suppression search goes on after a layout search: the original run (asked for
/// again under the layout found), or the suppression run that added `new` and ended with `o`.
enum Resume {
    Original,
    Suppressed { new: Vec<Point>, o: Box<Outcome> },
}

impl crate::tools::search::Search for Suppression<'_> {
    type Verdict = Verdict;

    fn next(&mut self, runner: &Runner, ran: Vec<Ran>) -> Step<Verdict> {
        self.step(runner, ran).unwrap_or_else(Step::Done)
    }
}

impl Suppression<'_> {
    /// The search. Only the runs whose failure is analysed trace (origins cost most of a run):
    /// the first one, and a suppression run that fails, made again with tracing. The check
    /// that the failure repeats and the suppression runs that end without one do not.
    fn step(&mut self, runner: &Runner, ran: Vec<Ran>) -> Result<Step<Verdict>, Verdict> {
        let stage = std::mem::replace(&mut self.stage, Stage::Start);
        if let Stage::Layouts { resume } = stage {
            return self.layouts_step(runner, ran, resume);
        }
        let last = match ran.into_iter().next() {
            Some(r) => self.outcome(runner, r, !matches!(stage, Stage::Original | Stage::Repeat { .. }))?,
            None => return self.ask(runner, Stage::Original, &[], true, &[]),
        };
        if self.redzones_from == Some(runner.runs) {
            self.redzones_exposed = last.crash.is_some();
        }
        match stage {
            Stage::Start | Stage::Layouts { .. } => unreachable!("no run is asked for before the original; the layout search's runs are its own"),
            Stage::Original => {
                if self.opts.show_output && self.redzones_from.is_none() {
                    crate::tools::child::show_output(&runner.file("stdout-1"));
                }
                if last.crash.is_none() {
                    if self.opts.reorder && self.redzones_from.is_none() {
                        // A corruption that made no crash may show with redzones.
                        self.redzones_from = Some(runner.runs + 1);
                        return self.ask(runner, Stage::Original, &[], true, &[]);
                    }
                    // Or under another layout of its globals and frames.
                    return self.search_layouts(runner, Resume::Original);
                }
                let watch = last.narrow.clone();
                self.ask(runner, Stage::Repeat { first: Box::new(last) }, &[], !watch.is_empty(), &watch)
            }
            Stage::Repeat { first } => {
                let crash = first.crash.clone().expect("the original run failed");
                if !last.crash.as_ref().is_some_and(|c| c.same(&crash)) {
                    let how = failure(&crash).difference(last.crash.as_ref().map(failure).as_ref()).unwrap_or_default();
                    return Err(Verdict::NotReproducible(crash_text(&first), crash_text(&last), how));
                }
                self.chain.push((Vec::new(), if first.narrow.is_empty() { *first } else { last }));
                self.crash = Some(crash);
                self.advance(runner)
            }
            Stage::Suppressed { new } => {
                if last.crash.is_none() {
                    return self.ran_with(runner, new, last);
                }
                // The same run again, traced: the locations the failure used and their definitions.
                if self.used(runner) >= self.opts.max_runs {
                    return Err(Verdict::Inconclusive(format!("no room within --max-runs={} to trace the last run's failure", self.opts.max_runs)));
                }
                self.traced_again += 1;
                let points = self.points.clone();
                self.ask(runner, Stage::Traced { new, plain: Box::new(last) }, &points, true, &[])
            }
            Stage::Traced { new, plain } => {
                let c = plain.crash.clone().expect("the suppression run failed");
                if !last.crash.as_ref().is_some_and(|t| t.same(&c)) {
                    let n = runner.runs - 1;
                    return Err(Verdict::Inconclusive(format!(
                        "run {n} did not fail the same way when traced: {}, then {}",
                        crash_text(&plain),
                        crash_text(&last)
                    )));
                }
                if !last.narrow.is_empty() && self.used(runner) < self.opts.max_runs {
                    self.traced_again += 1;
                    let (points, watch) = (self.points.clone(), last.narrow.clone());
                    return self.ask(runner, Stage::Watched { new, traced: Box::new(last), crash: c }, &points, true, &watch);
                }
                self.ran_with(runner, new, last)
            }
            Stage::Watched { new, traced, crash } => {
                let t = if last.crash.as_ref().is_some_and(|w| w.same(&crash)) { last } else { *traced };
                self.ran_with(runner, new, t)
            }
            Stage::Alone { new, together, k } => {
                if last.crash.is_none() && last.stopped.is_none() {
                    let before = self.points.len() - new.len();
                    let d = new[k];
                    self.chain.push((new, *together));
                    self.points.truncate(before);
                    self.points.push(d);
                    return self.finish(runner, vec![d], last);
                }
                self.alone(runner, new, *together, k + 1)
            }
        }
    }

    /// Asks for a run with `points`, tracing or not, watching those locations, its plan
    /// written; `stage` says what its outcome is for.
    fn ask(&mut self, runner: &Runner, stage: Stage, points: &[Point], trace: bool, watch: &[(u64, u64)]) -> Result<Step<Verdict>, Verdict> {
        let n = runner.runs + 1;
        let (plan_path, out_path) = (runner.file(&format!("plan-{n}")), runner.file(&format!("outcome-{n}")));
        let plan = Plan {
            points: points.to_vec(),
            out: None,
            at_functions: Vec::new(),
            failure: self.opts.failure.clone(),
            trace,
            watch: watch.to_vec(),
            redzones: self.redzones_from.is_some(),
        };
        std::fs::write(&plan_path, plan.to_text()).map_err(|e| Verdict::Inconclusive(format!("cannot run rtgrind: {e}")))?;
        let args = self.run_args(runner, n, &plan_path, &out_path);
        // Later runs: 20 times the first run's time and blocks.
        let limits = Limits { budget: runner.block_budget(20), time: runner.time_limit(20), log: false, count_blocks: n == 1 };
        let progress = match points.len() {
            0 if trace => "the failure, traced".to_string(),
            0 => "the failure again, to check that it repeats".to_string(),
            k => format!("suppressing {k} point{}{}", if k == 1 { "" } else { "s" }, if trace { ", traced" } else { "" }),
        };
        self.stage = stage;
        Ok(Step::Run(Request { args, limits, progress, checkpoints: None, test: None }))
    }

    /// A suppression run's arguments (numbered `n`, with its plan and outcome files): under
    /// the layout found so far; noting the variables its code names for a layout search
    /// (`--layout-record`).
    fn run_args(&self, runner: &Runner, n: u32, plan: &std::path::Path, out: &std::path::Path) -> Vec<std::ffi::OsString> {
        let mut args = suppress_args(plan, out);
        if let Some((_, l, ..)) = self.layouts.last() {
            args.push(format!("--layout={}", l.display()).into());
        }
        if self.opts.layouts.is_some() && self.layout_search.is_none() && !self.searched {
            args.push(format!("--layout-record={}", runner.file(&format!("accessed-{n}")).display()).into());
        }
        args
    }

    /// Runs made towards `--max-runs` (a layout search's are not).
    fn used(&self, runner: &Runner) -> u32 {
        runner.runs - self.layout_runs
    }

    /// The last run did not fail: the layout search from it (once from the start, and once
    /// again after each layout found; with the redzones it had), then the search goes on from
    /// `resume`.
    fn search_layouts(&mut self, runner: &Runner, resume: Resume) -> Result<Step<Verdict>, Verdict> {
        let Some(setup) = self.opts.layouts.as_ref().filter(|_| !self.searched) else {
            return self.resume(runner, resume);
        };
        self.searched = true;
        let plan = Plan {
            points: self.points.clone(),
            out: None,
            at_functions: Vec::new(),
            failure: self.opts.failure.clone(),
            trace: false,
            watch: Vec::new(),
            redzones: self.redzones_from.is_some(),
        }
        .to_text();
        let run = move |runner: &Runner, n: u32, layout: &std::path::Path| {
            let (plan_path, out_path) = (runner.file(&format!("plan-{n}")), runner.file(&format!("outcome-{n}")));
            let _ = std::fs::write(&plan_path, &plan);
            let mut args = suppress_args(&plan_path, &out_path);
            args.push(format!("--layout={}", layout.display()).into());
            let limits = Limits { budget: runner.block_budget(20), time: runner.time_limit(20), log: false, count_blocks: false };
            Request { args, limits, progress: "layouts".into(), checkpoints: None, test: None }
        };
        let failed = |runner: &Runner, ran: &Ran| -> Option<String> {
            let text = std::fs::read_to_string(runner.file(&format!("outcome-{}", ran.number))).ok()?;
            let o = named_outcome(&text);
            o.crash.is_some().then(|| describe_crash(&o))
        };
        let accessed = runner.file(&format!("accessed-{}", runner.runs));
        let search = LayoutSearch::new(&setup.objects, &setup.program, (setup.max_layouts, setup.jobs), accessed, None, Box::new(run), Box::new(failed));
        self.layout_search = Some(search);
        self.layout_runs_before = runner.runs;
        self.layouts_step(runner, Vec::new(), resume)
    }

    /// A step of the layout search; when it ends, the suppression search goes on: under the
    /// layout that failed, or from `resume` as it was.
    fn layouts_step(&mut self, runner: &Runner, ran: Vec<Ran>, resume: Resume) -> Result<Step<Verdict>, Verdict> {
        let search = self.layout_search.as_mut().expect("a layout search runs");
        let step = match search.next(runner, ran) {
            Step::Done(v) => Err(v),
            Step::Run(r) => Ok(Step::Run(r)),
            Step::Batch(b) => Ok(Step::Batch(b)),
        };
        let verdict = match step {
            Ok(step) => {
                self.stage = Stage::Layouts { resume };
                return Ok(step);
            }
            Err(v) => v,
        };
        let made = runner.runs - self.layout_runs_before;
        self.layout_runs += made;
        let search = self.layout_search.take().expect("a layout search runs");
        let tried = search.tried(Some(made));
        match verdict {
            ReorderVerdict::Found { k, file, .. } => {
                // (The file its run read, in the search's directory: saved where the user can
                // run under it again when the search ends, `save_layout`.)
                self.layouts.push((self.used(runner) + 1, file, search.layouts[k].summary(), tried));
                self.searched = false;
                match resume {
                    Resume::Original => self.ask(runner, Stage::Original, &[], true, &[]),
                    Resume::Suppressed { new, .. } => {
                        let points = self.points.clone();
                        self.ask(runner, Stage::Suppressed { new }, &points, false, &[])
                    }
                }
            }
            _ => {
                self.layouts_tried = Some(tried);
                self.resume(runner, resume)
            }
        }
    }

    /// The search goes on from `resume` with no (further) layout: the original run did not
    /// fail, or the suppression run's outcome goes into the chain.
    fn resume(&mut self, runner: &Runner, resume: Resume) -> Result<Step<Verdict>, Verdict> {
        match resume {
            Resume::Original => Err(Verdict::NoFailure),
            Resume::Suppressed { new, o } => self.finish(runner, new, *o),
        }
    }

    /// A run's outcome, as the search takes it: a suppression run that does not end
    /// (suppression sent the program round a loop) did not fail where the program failed, so
    /// it stands for a run without the failure, marked as stopped; the original run and its
    /// repeat must end.
    fn outcome(&self, runner: &Runner, ran: Ran, suppressing: bool) -> Result<Outcome, Verdict> {
        let stopped = |why: &str| Outcome { stopped: Some(why.into()), ..Outcome::default() };
        let r = ran.outcome.map_err(|e| Verdict::Inconclusive(format!("cannot run rtgrind: {e}")))?;
        match r.ending {
            Ending::TimedOut if suppressing => return Ok(stopped("stopped after 20 times the first run's time")),
            Ending::Budget if suppressing => return Ok(stopped("stopped after 20 times the first run's blocks")),
            Ending::TimedOut => return Err(Verdict::Inconclusive(format!("run {} did not end (more than 20 times the first run's time)", ran.number))),
            Ending::Budget => return Err(Verdict::Inconclusive(format!("run {} did not end within 20 times the first run's blocks", ran.number))),
            _ => {}
        }
        let Ok(text) = std::fs::read_to_string(runner.file(&format!("outcome-{}", ran.number))) else {
            // rtgrind itself stopped (the program cannot run under it): its one-line error.
            // rtgrind's own "cannot run" statuses (125 unsupported, 126 not a program, 127
            // missing) pass through; a run that ended some other way without an outcome (the
            // program replaced itself) is an error of the search (2).
            let line = r.error().unwrap_or_else(|| "rtgrind: error: the run ended without an outcome".into());
            let code = match r.ending {
                Ending::Exit(c) if (125..=127).contains(&c) => c,
                _ => 2,
            };
            return Err(Verdict::CannotRun(code, line));
        };
        Ok(named_outcome(&text))
    }

    /// The chain's last run was analysed: ends the search, or asks for the next suppression run
    /// with the points for its failure's definitions.
    fn advance(&mut self, runner: &Runner) -> Result<Step<Verdict>, Verdict> {
        if self.enough.is_some_and(|enough| enough(&self.chain)) {
            return Err(Verdict::Inconclusive("the caller's answer is in the chain".into()));
        }
        let current = &self.chain.last().expect("the original run is in the chain").1;
        self.calls.learn(current);
        if let Some(v) = concluded(&self.chain, self.crash.as_ref().expect("a failure"), &self.calls, self.opts.follow_new_failures) {
            return Err(v);
        }
        let new = next_points(&self.chain.last().unwrap().1, &mut self.calls, &self.points)?;
        if self.used(runner) >= self.opts.max_runs {
            return Err(Verdict::Inconclusive(format!("no run without a crash within --max-runs={}", self.opts.max_runs)));
        }
        self.points.retain(|p| !self.calls.subsumed(p, &new));
        self.points.extend(&new);
        let points = self.points.clone();
        self.ask(runner, Stage::Suppressed { new }, &points, false, &[])
    }

    /// The suppression run that added `new` ended with `o` (traced if it failed).
    fn ran_with(&mut self, runner: &Runner, new: Vec<Point>, o: Outcome) -> Result<Step<Verdict>, Verdict> {
        if o.stopped.is_some() && new.len() > 1 {
            // Suppressing them together made the program loop: each alone may end it.
            return self.alone(runner, new, o, 0);
        }
        self.finish(runner, new, o)
    }

    /// The run with the earlier points and `new[k]` alone, if any is left to try.
    fn alone(&mut self, runner: &Runner, new: Vec<Point>, together: Outcome, k: usize) -> Result<Step<Verdict>, Verdict> {
        if k >= new.len() || self.used(runner) >= self.opts.max_runs {
            return self.finish(runner, new, together);
        }
        let before = self.points.len() - new.len();
        let mut alone = self.points[..before].to_vec();
        alone.push(new[k]);
        self.ask(runner, Stage::Alone { new, together: Box::new(together), k }, &alone, false, &[])
    }

    /// The run that added `new` goes into the chain: a root cause if it did not fail, else
    /// the next step from its failure.
    fn finish(&mut self, runner: &Runner, new: Vec<Point>, o: Outcome) -> Result<Step<Verdict>, Verdict> {
        let done = o.crash.is_none();
        let room = self.used(runner) < self.opts.max_runs;
        if done && o.stopped.is_none() && self.opts.reorder && self.redzones_from.is_none() && room {
            // The same suppression with redzones: an overflow the suppressed run still made
            // may show there (Fig. 5.7), and its failure is followed as any other.
            self.redzones_from = Some(runner.runs + 1);
            let points = self.points.clone();
            return self.ask(runner, Stage::Suppressed { new }, &points, false, &[]);
        }
        if done && o.stopped.is_none() && !self.searched && self.opts.layouts.is_some() && room {
            // Then under other layouts (Fig. 5.7's loop: again after each layout found).
            return self.search_layouts(runner, Resume::Suppressed { new, o: Box::new(o) });
        }
        self.chain.push((new, o));
        if done {
            let looped = self.chain[self.chain.len() - 1].1.stopped.is_some();
            return Err(Verdict::RootCause(roots(&self.chain, Some(looped), None)));
        }
        self.advance(runner)
    }
}

fn signame(sig: i32) -> String {
    match sig {
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGFPE => "SIGFPE".into(),
        libc::SIGILL => "SIGILL".into(),
        libc::SIGABRT => "SIGABRT".into(),
        super::run::REDZONE_FAILURE => "a heap block's redzone overwritten".into(),
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

/// What the repeat check compares of a failure: its signal, place and calls.
fn failure(c: &Crash) -> Failure {
    let calls = c.stack.iter().map(|r| format!("{r:#x}")).collect::<Vec<_>>().join(" < ");
    Failure::default().with("the failure", signame(c.signal)).with("the place", format!("{:#x}", c.pc)).with("the calls it happened under", calls)
}

/// Suppression point `p` includes instance `d` (instance 0: every instance of the site).
fn covers(p: &Point, d: &Point) -> bool {
    (p.pc == d.pc || p.call() || p.call_site().is_some()) && p.thread == d.thread && (p.instance == 0 || p.same_instance(d))
}

/// The place a point is reported at: its own line, or for code in a library the main
/// program's call that led there.
fn headline(def: &Def, hits: &[Hit]) -> String {
    match hit_of(def, hits).map(|h| h.call.as_str()).filter(|s| !s.is_empty()) {
        Some(call) => format!("{call}, inside {}", def.place),
        None => def.place.clone(),
    }
}

/// The hit at the definition's own instance (the run records a point of every instance at
/// the instances it fired at), else any of its instruction's (or its call site's).
fn hit_of<'a>(def: &Def, hits: &'a [Hit]) -> Option<&'a Hit> {
    let exact = hits.iter().find(|h| covers(&h.point, &def.point));
    exact.or_else(|| hits.iter().find(|h| covers(&Point { instance: 0, ..h.point }, &def.point)))
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
    /// Its call stack where the run suppressing it reached it.
    pub frames: Vec<String>,
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
    /// The run from which the runs had heap redzones, if they came to, and whether it failed
    /// where the run before it had not.
    pub redzones: Option<(u32, bool)>,
    /// The layouts the runs had, each from some run on (that run, its file, its pairs, what
    /// its search tried), and what the last search tried if it found none.
    pub layouts: Vec<(u32, String, String, String)>,
    pub layouts_tried: Option<String>,
}

/// Runs the search and prints the report; returns the exit status.
pub fn drive(runner: Result<Runner, SearchError>, command: Vec<std::ffi::OsString>, opts: Options, output: crate::tools::output::Output) -> i32 {
    let pid = std::process::id();
    let error_exitcode = opts.error_exitcode;
    let search = match runner {
        Ok(mut runner) => find(&mut runner, &opts),
        Err(e) => Search {
            verdict: Verdict::Inconclusive(e.to_string()),
            chain: Vec::new(),
            runs: 0,
            traced_again: 0,
            seconds: 0.0,
            redzones: None,
            layouts: Vec::new(),
            layouts_tried: None,
        },
    };
    super::report::emit(&search, &command, &output, pid);
    match search.verdict {
        Verdict::NoFailure => 0,
        Verdict::RootCause(_) => error_exitcode,
        Verdict::CannotRun(code, _) => code,
        _ => INCONCLUSIVE,
    }
}

/// The search on `runner`'s program, to its verdict (another tool's search runs it too: the
/// race tool, for a failure no harmful race explains).
pub fn find(runner: &mut Runner, opts: &Options) -> Search {
    find_until(runner, opts, None)
}

/// The search, ended early where the chain holds what `enough` looks for.
pub fn find_until<'o>(runner: &mut Runner, opts: &'o Options, enough: Option<&'o Enough<'o>>) -> Search {
    let started = Instant::now();
    let mut s = Suppression {
        opts,
        stage: Stage::Start,
        chain: Vec::new(),
        crash: None,
        points: Vec::new(),
        calls: super::calls::Calls::new(),
        traced_again: 0,
        enough,
        redzones_from: None,
        redzones_exposed: false,
        layout_search: None,
        layout_runs: 0,
        layout_runs_before: 0,
        layouts: Vec::new(),
        layouts_tried: None,
        searched: false,
    };
    let verdict = runner.drive(&mut s);
    let out = opts.layouts.as_ref().and_then(|l| l.out.as_deref());
    // (`--layout-out` names the last layout, the one the last runs had.)
    let last = s.layouts.len().saturating_sub(1);
    let layouts =
        s.layouts.into_iter().enumerate().map(|(i, (n, file, pairs, tried))| (n, save_layout(&file, out.filter(|_| i == last)), pairs, tried)).collect();
    Search {
        verdict,
        chain: s.chain,
        // (The layout search's runs are said with what it tried.)
        runs: runner.runs - s.layout_runs,
        traced_again: s.traced_again,
        seconds: started.elapsed().as_secs_f64(),
        redzones: s.redzones_from.map(|n| (n, s.redzones_exposed)),
        layouts,
        layouts_tried: s.layouts_tried,
    }
}

/// A run's outcome with its source places named (`Outcome::name_places`), by one
/// `SourceLines` for the whole search: each module's symbols are read once, not once a run.
fn named_outcome(text: &str) -> Outcome {
    thread_local! {
        static LINES: std::cell::RefCell<SourceLines> = std::cell::RefCell::new(SourceLines::default());
    }
    let mut o = Outcome::parse(text);
    LINES.with_borrow_mut(|lines| o.name_places(lines));
    o
}

/// A suppression run's own arguments: its plan and where it writes its outcome.
fn suppress_args(plan: &std::path::Path, out: &std::path::Path) -> Vec<std::ffi::OsString> {
    vec!["--tool=suppress".into(), format!("--suppress-plan={}", plan.display()).into(), format!("--suppress-out={}", out.display()).into()]
}

/// The layout the runs had, copied from the search's directory (which goes) to `out`, else to
/// a new file in the current directory (what runs leave there is moved away while the search
/// runs, so not before it ends): the path to tell the user, or why it could not be kept.
fn save_layout(file: &std::path::Path, out: Option<&std::path::Path>) -> String {
    match crate::layout::new_file(out).and_then(|to| std::fs::copy(file, &to).map(|_| to).map_err(|e| e.to_string())) {
        Ok(to) => to.display().to_string(),
        Err(e) => format!("{} (not kept: {e})", file.display()),
    }
}

/// Whether the chain's last run ends the search otherwise than by running on: the points it
/// added (whole calls that overflowed) avoided the failure and it failed otherwise, or it used
/// nothing defined.
fn concluded(chain: &[(Vec<Point>, Outcome)], crash: &Crash, calls: &super::calls::Calls, follow_new_failures: bool) -> Option<Verdict> {
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
    let constants = !current.defs.is_empty() && current.defs.iter().all(|d| d.constant);
    if chain.len() > 1 && !same && !added.is_empty() && constants && !follow_new_failures {
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
            // (Of a call suppressed whole: where its instruction stored.)
            frames: last
                .hits
                .iter()
                .find(|h| h.pc == d.point.pc && covers(&h.point, &d.point))
                .or(hit_of(d, &last.hits))
                .map(|h| SourceLines::default().stack(&h.frames, &last.modules))
                .unwrap_or_default(),
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
pub fn added_places(prev: &Outcome, added: &[Point], hits: &[Hit]) -> Vec<String> {
    prev.defs.iter().filter(|d| added.iter().any(|p| covers(p, &d.point))).map(|d| headline(d, hits)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The repeat check compares the failure's signal, place and calls, not its time, and says
    /// which differs and how (issue 21, item 6).
    #[test]
    fn a_repeat_that_differs_says_how() {
        let first = Crash { signal: 11, pc: 0x401000, instance: 100, place: String::new(), stack: vec![0x401500, 0x401800], frames: Vec::new() };
        assert!(first.same(&first.clone()));
        let other_calls = Crash { stack: vec![0x401600, 0x401800], ..first.clone() };
        assert!(!first.same(&other_calls));
        let difference = |a: &Crash, b: Option<&Crash>| failure(a).difference(b.map(failure).as_ref()).unwrap_or_default();
        assert_eq!(difference(&first, Some(&other_calls)), "the calls it happened under (0x401500 < 0x401800 then 0x401600 < 0x401800)");
        // The same failure later (the program did more first): the same.
        assert!(first.same(&Crash { instance: 130, ..first.clone() }));
        assert_eq!(difference(&first, Some(&Crash { signal: 6, ..first.clone() })), "the failure (SIGSEGV then SIGABRT)");
        assert_eq!(difference(&first, None), "the second run did not fail");
    }
}
