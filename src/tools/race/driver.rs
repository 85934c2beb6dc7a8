//! The search of `--tool=race`: a detection run that records its schedule, then a reference
//! run and one reversed run per race (up to `--max-harm-tests`), all replaying that schedule
//! (`harm`), made `--jobs` at a time; the races reported harmful first.

use super::harm::{self, Found, Plan, Seen, Verdict};
use crate::cli::Cli;
use crate::report::model::{Finding, Report};
use crate::tools::search::{Ending, Ran, Request, RunOutcome, Runner, Search, Step};
use crate::tools::suppress::driver::{self as suppression, Verdict as SupVerdict};
use crate::tools::suppress::plan::{Outcome as SupOutcome, Point};
use crate::tools::Error;
use std::ffi::OsString;
use std::path::PathBuf;

/// Exit status when no race could be judged harmful but some could not be judged at all.
const UNDECIDED: i32 = 2;

enum Stage {
    Start,
    /// Schedule `k` (from 0) of `--explore` ran.
    Explore(u32),
    Detect,
    Test {
        found: Box<Found>,
        detect: RunOutcome,
        failed: Option<String>,
    },
}

/// What the search ends with: the detection run's races, its ending and how it failed (if it
/// did), with a verdict on each race tested; or why it could not run.
enum Outcome {
    Tested { found: Box<Found>, ending: Ending, failed: Option<String>, verdicts: Vec<Judged> },
    CannotRun(String, i32),
}

/// A race's harm test: the verdict, why, and whether the run in the other order avoided the
/// failure the run in the race's order had.
struct Judged {
    verdict: Verdict,
    why: String,
    avoids: bool,
    /// The earlier access's call stack, from the reference run.
    earlier_frames: Vec<String>,
}

struct Harm {
    /// `--sched` for the detection run: as given, or replaying the schedule `--explore` found.
    sched: String,
    /// `--quantum` as given.
    quantum: u64,
    /// `--explore` and `--depth`.
    explore: u32,
    depth: u32,
    /// The schedule `--explore` found failing: its number, its policy, and how the run failed.
    explored: Option<(u32, String, String)>,
    max_tests: usize,
    /// `--failure`, checked.
    failure: Option<String>,
    /// `--suppressions`, made absolute for the runs.
    suppressions: Option<PathBuf>,
    stage: Stage,
}

impl Harm {
    /// Schedule `k` of `--explore`: random and PCT in turn, with quanta of 1000, 100 and 20
    /// blocks (a window between a check and its use is a few blocks wide); its policy.
    fn explore(&self, runner: &Runner, k: u32) -> (Request, String) {
        let seed = k / 2 + 1;
        let quantum = [1000, 100, 20][(k / 2 % 3) as usize];
        let policy = if k.is_multiple_of(2) { format!("random:{seed}") } else { format!("pct:{seed}:{}", self.depth) };
        let mut r = Request {
            args: vec![
                "--tool=none".into(),
                format!("--sched={policy}").into(),
                format!("--quantum={quantum}").into(),
                format!("--record-schedule={}", runner.file(&format!("explore-{k}")).display()).into(),
            ],
            progress: format!("exploring schedule {} of {}", k + 1, self.explore),
            ..Request::default()
        };
        r.limits.log = true;
        r.limits.count_blocks = true;
        r.limits.time = runner.time_limit(10);
        r.limits.budget = runner.block_budget(30);
        (r, format!("{policy} with a quantum of {quantum} blocks"))
    }

    fn detect(&self, runner: &Runner) -> Request {
        let mut r = Request {
            args: vec![
                "--tool=race".into(),
                format!("--sched={}", self.sched).into(),
                format!("--quantum={}", self.quantum).into(),
                format!("--record-schedule={}", runner.file("schedule").display()).into(),
                format!("--race-out={}", runner.file("found.json").display()).into(),
            ],
            progress: "detecting races".into(),
            ..Request::default()
        };
        if let Some(s) = &self.suppressions {
            r.args.push(format!("--suppressions={}", s.display()).into());
        }
        r.limits.log = true;
        r.limits.count_blocks = true;
        r
    }

    /// A harm run of `races`, reversing the one numbered `reverse` (none: the reference run).
    fn harm_run(runner: &Runner, races: &[harm::Key], reverse: Option<usize>) -> std::io::Result<Request> {
        let name = reverse.map_or("reference".to_string(), |k| format!("reverse-{k}"));
        let plan = runner.file(&format!("plan-{name}.json"));
        std::fs::write(&plan, serde_json::to_string(&Plan { races: races.to_vec(), reverse }).unwrap_or_default())?;
        let mut r = Request {
            args: vec![
                "--tool=race".into(),
                format!("--sched=replay:{}", runner.file("schedule").display()).into(),
                format!("--race-plan={}", plan.display()).into(),
                format!("--race-out={}", runner.file(&format!("seen-{name}.json")).display()).into(),
            ],
            progress: match reverse {
                Some(k) => format!("harm test of race {} of {}", k + 1, races.len()),
                None => "the reference run".into(),
            },
            ..Request::default()
        };
        r.limits.log = true;
        r.limits.time = runner.time_limit(10);
        r.limits.budget = runner.block_budget(30);
        Ok(r)
    }

    fn step(&mut self, runner: &Runner, ran: Vec<Ran>) -> Result<Step<Outcome>, Outcome> {
        match std::mem::replace(&mut self.stage, Stage::Start) {
            Stage::Start if self.explore > 0 => {
                self.stage = Stage::Explore(0);
                Ok(Step::Run(self.explore(runner, 0).0))
            }
            Stage::Start => {
                self.stage = Stage::Detect;
                Ok(Step::Run(self.detect(runner)))
            }
            Stage::Explore(k) => {
                let run = ran.into_iter().next().and_then(|r| r.outcome.ok());
                if let Some(how) = run.as_ref().and_then(|r| failed(r, self.failure.as_deref())) {
                    self.sched = format!("replay:{}", runner.file(&format!("explore-{k}")).display());
                    self.explored = Some((k, self.explore(runner, k).1, how));
                } else if k + 1 < self.explore {
                    self.stage = Stage::Explore(k + 1);
                    return Ok(Step::Run(self.explore(runner, k + 1).0));
                }
                self.stage = Stage::Detect;
                Ok(Step::Run(self.detect(runner)))
            }
            Stage::Detect => self.detected(runner, ran),
            Stage::Test { found, detect, failed } => {
                let verdicts = self.verdicts(runner, &found, ran);
                Err(Outcome::Tested { found, ending: detect.ending, failed, verdicts })
            }
        }
    }

    /// The detection run made: its output shown, its races read back; the harm runs next.
    fn detected(&mut self, runner: &Runner, ran: Vec<Ran>) -> Result<Step<Outcome>, Outcome> {
        let run = ran.into_iter().next().ok_or_else(|| Outcome::CannotRun("no run was made".into(), crate::EXIT_INTERNAL))?;
        let detect = run.outcome.map_err(|e| Outcome::CannotRun(format!("cannot run rtgrind: {e}"), crate::EXIT_INTERNAL))?;
        crate::tools::child::show_output(&detect.stdout);
        crate::tools::child::show_error_output(&detect.stderr);
        // What the run's own report said of how it ended that the race report does not
        // repeat: a deadlock (the threads and futexes, exit status 123).
        for line in detect.log.lines().filter(|l| l.contains("deadlock")) {
            eprintln!("=={}== {}", std::process::id(), line.split_once("== ").map_or(line, |x| x.1));
        }
        let text = std::fs::read_to_string(runner.file("found.json")).map_err(|_| {
            let why = detect.error().unwrap_or_else(|| format!("the detection run ended ({}) without its report", detect.ending.describe()));
            Outcome::CannotRun(why, code_of(&detect.ending))
        })?;
        let failed = failed(&detect, self.failure.as_deref());
        let found: Box<Found> =
            serde_json::from_str(&text).map_err(|e| Outcome::CannotRun(format!("internal: the detection run's report: {e}"), crate::EXIT_INTERNAL))?;
        if found.races.is_empty() {
            return Err(Outcome::Tested { found, ending: detect.ending, failed, verdicts: Vec::new() });
        }
        let tested = &found.races[..found.races.len().min(self.max_tests)];
        let mut batch = Vec::with_capacity(tested.len() + 1);
        for reverse in std::iter::once(None).chain((0..tested.len()).map(Some)) {
            batch.push(Self::harm_run(runner, tested, reverse).map_err(|e| Outcome::CannotRun(format!("cannot write a plan: {e}"), crate::EXIT_INTERNAL))?);
        }
        self.stage = Stage::Test { found, detect, failed };
        Ok(Step::Batch(batch))
    }

    /// The harm runs made (the reference run first): each tested race's verdict.
    fn verdicts(&self, runner: &Runner, found: &Found, ran: Vec<Ran>) -> Vec<Judged> {
        let mut runs = ran.into_iter().map(|r| r.outcome.ok());
        let reference = runs.next().flatten();
        let seen = |o: &Option<RunOutcome>, name: &str| -> Option<Vec<Seen>> {
            o.as_ref()?;
            serde_json::from_str(&std::fs::read_to_string(runner.file(&format!("seen-{name}.json"))).ok()?).ok()
        };
        let reference_seen = seen(&reference, "reference");
        let mut verdicts = Vec::new();
        for (k, reversed) in runs.enumerate() {
            let key = &found.races[k];
            let f = &found.report.findings[k];
            let first = name(&key.first, f.earlier_place.as_deref().unwrap_or_default());
            let second = name(&key.second, &f.place);
            let reversed_seen = seen(&reversed, &format!("reverse-{k}"));
            let stopped = reversed.as_ref().map(|o| &o.ending).filter(|e| matches!(e, Ending::TimedOut | Ending::Budget));
            let (verdict, mut why) = match stopped {
                Some(e) => (Verdict::Undecided, format!("the run in the other order was {}", e.describe())),
                None => harm::judge(key, reference_seen.as_ref().and_then(|s| s.get(k)), reversed_seen.as_ref().and_then(|s| s.get(k)), &first, &second),
            };
            let mut avoids = false;
            if let (Some(a), Some(b)) = (&reference, &reversed) {
                if verdict != Verdict::Undecided {
                    why.push_str(&changes(a, b));
                }
                avoids = failed(a, self.failure.as_deref()).is_some() && failed(b, self.failure.as_deref()).is_none();
            }
            let earlier_frames = reference_seen.as_ref().and_then(|s| s.get(k)).map(|s| s.first_frames.clone()).unwrap_or_default();
            verdicts.push(Judged { verdict, why, avoids, earlier_frames });
        }
        verdicts
    }
}

impl Search for Harm {
    type Verdict = Outcome;

    fn next(&mut self, runner: &Runner, ran: Vec<Ran>) -> Step<Outcome> {
        self.step(runner, ran).unwrap_or_else(Step::Done)
    }
}

/// "thread 2's read at a.c:9 (f)".
fn name(side: &harm::Side, place: &str) -> String {
    let what = match (side.reads, side.write) {
        (true, true) => "read-modify-write",
        (false, true) => "write",
        _ => "read",
    };
    format!("thread {}'s {what} at {place}", side.tid)
}

/// Whether the run in the other order printed or ended otherwise than the reference run.
fn changes(reference: &RunOutcome, reversed: &RunOutcome) -> String {
    let out = |o: &RunOutcome| std::fs::read(&o.stdout).unwrap_or_default();
    let output = out(reference) != out(reversed);
    let ending = reference.ending != reversed.ending;
    match (output, ending) {
        (false, false) => "; the program's output and exit status were the same".into(),
        (true, false) => "; the program's output changed too".into(),
        (false, true) => format!("; the program's ending changed too ({} then {})", reference.ending.describe(), reversed.ending.describe()),
        (true, true) => format!("; the program's output and ending changed too ({} then {})", reference.ending.describe(), reversed.ending.describe()),
    }
}

/// How the detection run failed, if it did: a fatal signal, or what `--failure` names.
fn failed(run: &RunOutcome, failure: Option<&str>) -> Option<String> {
    if let Ending::Signal(sig) = run.ending {
        return Some(format!("died of {}", crate::report::signal_name(sig)));
    }
    let spec = failure?;
    let read = |p: &std::path::Path| std::fs::read(p).unwrap_or_default();
    if spec == "exit-code" {
        return matches!(run.ending, Ending::Exit(c) if c != 0).then(|| format!("ended with {}", run.ending.describe()));
    }
    if let Some(re) = spec.strip_prefix("stderr:") {
        let re = regex::Regex::new(re).ok()?;
        return re.is_match(&String::from_utf8_lossy(&read(&run.stderr))).then(|| format!("wrote what `{}` matches to standard error", re.as_str()));
    }
    let expected = spec.strip_prefix("output:")?;
    (read(std::path::Path::new(expected)) != read(&run.stdout)).then(|| format!("printed another output than {expected}"))
}

/// The failure's root cause among the races, as execution suppression on the recorded
/// schedule meets them (Fig. 6.1 of the dissertation): the first definition of the chain (in
/// the order the runs found them, the failure's own first) that is one access of a harmful
/// race — its later access, a write racing with an earlier access (WAR, WAW), or its earlier
/// access, a write that a later read races with (RAW) — or, on its line, the copy of what a
/// racing read saw (unoptimized code stores a loaded pointer into a local before using it).
/// The race, the run, the location and whether it was the copy.
fn race_behind(chain: &[(Vec<Point>, SupOutcome)], races: &[harm::Key], verdicts: &[Judged], findings: &[Finding]) -> Option<(usize, usize, String, bool)> {
    for (run, (_, outcome)) in chain.iter().enumerate() {
        for def in &outcome.defs {
            let pc = def.point.pc;
            let harmful = |k: usize| verdicts[k].verdict == Verdict::Harmful;
            let hit = (0..races.len()).find(|&k| {
                let r = &races[k];
                harmful(k) && ((r.second.pc == pc && r.second.write) || (r.first.pc == pc && r.first.write && r.second.reads))
            });
            if let Some(k) = hit {
                return Some((k, run, def.location.clone(), false));
            }
            let copied = (0..races.len()).find(|&k| {
                let (r, f) = (&races[k], &findings[k]);
                harmful(k)
                    && ((r.second.reads && !r.second.write && f.place == def.place)
                        || (r.first.reads && !r.first.write && f.earlier_place.as_deref() == Some(&def.place)))
            });
            if let Some(k) = copied {
                return Some((k, run, def.location.clone(), true));
            }
        }
    }
    None
}

/// The status a run's ending gives rtgrind's own.
fn code_of(e: &Ending) -> i32 {
    match e {
        Ending::Exit(c) => *c,
        Ending::Signal(s) => 128 + s,
        _ => UNDECIDED,
    }
}

/// Runs the search and prints the report; returns the exit status.
pub fn drive(cli: &Cli) -> Result<i32, Error> {
    let started = std::time::Instant::now();
    // Each run gets the scheduler it needs: the detection run the user's, the others replay.
    let options: Vec<OsString> = cli.run_options.iter().filter(|o| !o.starts_with("--sched=") && !o.starts_with("--quantum=")).map(OsString::from).collect();
    let mut runner =
        Runner::with("race", cli.command.clone(), options.clone(), cli.seed, cli.stdin_file.clone()).map_err(|e| Error::internal(e.to_string()))?;
    runner.jobs = 2;
    runner.progress = crate::tools::progress::Progress::of(cli, "race");
    let failure = crate::tools::suppress::failure_spec(cli)?;
    let mut search = Harm {
        sched: cli.sched.clone(),
        quantum: cli.quantum,
        explore: cli.race.explore,
        depth: cli.race.depth,
        explored: None,
        max_tests: cli.race.max_harm_tests as usize,
        failure: failure.clone(),
        suppressions: cli.race.suppressions.as_ref().map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())),
        stage: Stage::Start,
    };
    let outcome = runner.drive(&mut search);
    let keep = keep_schedule(cli, &runner, search.explored.is_some())?;
    let (found, ending, failed, verdicts) = match outcome {
        Outcome::CannotRun(why, code) => return Err(Error { message: why, code }),
        Outcome::Tested { found, ending, failed, verdicts } => (found, ending, failed, verdicts),
    };
    let races = found.races;
    let mut report = found.report;
    let tally = judged(&mut report, &verdicts, cli.race.max_harm_tests);
    let root = match &failed {
        Some(how) => {
            let mut replaying = options;
            replaying.push(format!("--sched=replay:{}", runner.file("schedule").display()).into());
            let mut sr = Runner::with("race-suppress", cli.command.clone(), replaying, cli.seed, Some(runner.stdin_file.clone()))
                .map_err(|e| Error::internal(e.to_string()))?;
            sr.progress = crate::tools::progress::Progress::of(cli, "race: the failure's suppression chain");
            let opts = suppression::Options {
                max_runs: 20,
                error_exitcode: cli.search.error_exitcode,
                failure,
                show_output: false,
                follow_new_failures: true,
                reorder: false,
                layouts: None,
            };
            let (concluded, runs) = failure_root(&mut report, sr, &opts, &races[..verdicts.len()], &verdicts, how, &cli.command);
            runner.runs += runs;
            Some(concluded)
        }
        None => None,
    };
    // Harmful first, then undecided, then benign, then those not tested; in order of
    // detection within each (a root cause stays first).
    let rank = |f: &Finding| match (f.root.is_some() || f.kind != "data race", f.verdict.as_deref()) {
        (true, _) => 0,
        (_, Some("harmful")) => 1,
        (_, Some("undecided")) => 2,
        (_, Some("benign")) => 3,
        _ => 4,
    };
    report.findings.sort_by_key(rank);
    report.explored = explored(cli, search.explored.as_ref(), keep.as_deref());
    report.runs = runner.runs;
    report.seconds = started.elapsed().as_secs_f64();
    if let Some(summary) = &mut report.summary {
        summary.push_str(&format!("; {} runs of the program, {:.2} s", report.runs, report.seconds));
    }
    emit(&report, cli);
    Ok(match root {
        Some(true) => cli.search.error_exitcode,
        Some(false) => UNDECIDED,
        None if tally.harmful > 0 => cli.search.error_exitcode,
        None if tally.undecided > 0 || tally.untested > 0 => UNDECIDED,
        None => code_of(&ending),
    })
}

/// The schedule analysed is kept where `--record-schedule` says, or, when `--explore` found
/// it, beside the program's files under a new name (as Valgrind's vgcore.PID): where.
fn keep_schedule(cli: &Cli, runner: &Runner, explored: bool) -> Result<Option<PathBuf>, Error> {
    // (A name of our own is never one that exists: nothing there is overwritten.)
    let fresh = || {
        (0..)
            .map(|n| PathBuf::from(format!("rtgrind-schedule.{}{}", std::process::id(), if n == 0 { String::new() } else { format!(".{n}") })))
            .find(|p| !p.exists())
    };
    let keep = cli.record_schedule.clone().or_else(|| explored.then(fresh).flatten());
    if let Some(path) = &keep {
        if std::fs::copy(runner.file("schedule"), path).is_err() {
            return Err(Error::usage(format!("cannot write the schedule to '{}'", path.display())));
        }
    }
    Ok(keep)
}

/// How many races the harm tests found of each kind, and left untested.
struct Tally {
    harmful: usize,
    undecided: usize,
    untested: usize,
}

/// The harm tests' verdicts into the report's findings and its summary.
fn judged(report: &mut Report, verdicts: &[Judged], max_tests: u32) -> Tally {
    let untested = report.findings.len() - verdicts.len();
    for (f, j) in report.findings.iter_mut().zip(verdicts) {
        f.verdict = Some(j.verdict.name().into());
        f.harm = Some(j.why.clone());
        f.earlier_frames = j.earlier_frames.clone();
    }
    let count = |v: Verdict| verdicts.iter().filter(|j| j.verdict == v).count();
    let (harmful, undecided, benign) = (count(Verdict::Harmful), count(Verdict::Undecided), count(Verdict::Benign));
    if !report.findings.is_empty() {
        let mut parts = vec![format!("{harmful} harmful"), format!("{benign} benign")];
        if undecided > 0 {
            parts.push(format!("{undecided} undecided"));
        }
        if untested > 0 {
            parts.push(format!("{untested} not tested (--max-harm-tests={max_tests})"));
        }
        report.summary = Some(format!("{}: {}", report.summary.take().unwrap_or_default(), parts.join(", ")));
        report.result = if harmful > 0 { "harmful" } else { "found" }.into();
    }
    Tally { harmful, undecided, untested }
}

/// The root cause of the run's failure (`how` it failed): execution suppression on the same
/// schedule (`runner`'s runs replay it), its chain of definitions checked against the harmful
/// races (`race_behind`); else a harmful race whose other order avoids the failure (the
/// failure may use what the other thread had not written yet, as in double-checked locking);
/// else suppression's own answer. Into `report`; whether it concluded, and the runs it made.
fn failure_root(
    report: &mut Report,
    mut runner: Runner,
    opts: &suppression::Options,
    races: &[harm::Key],
    verdicts: &[Judged],
    how: &str,
    command: &[OsString],
) -> (bool, u32) {
    // The loop ends at the first harmful race it meets (Fig. 6.1).
    let enough = |chain: &[(Vec<Point>, SupOutcome)]| race_behind(chain, races, verdicts, &report.findings).is_some();
    let sup = suppression::find_until(&mut runner, opts, Some(&enough));
    report.traced_again = sup.traced_again;
    let model = crate::tools::suppress::report::model(&sup, command);
    report.chain = model.chain.clone();
    report.failure = model.failure.clone();
    let behind = race_behind(&sup.chain, races, verdicts, &report.findings)
        .map(|(k, run, location, copied)| {
            let by = if copied { "a copy, on its line, of what this race's read saw" } else { "this race's write" };
            (k, format!("it used {location}, defined by {by} (run {} of the suppression chain)", run + 1))
        })
        .or_else(|| {
            let k = verdicts.iter().position(|j| j.verdict == Verdict::Harmful && j.avoids)?;
            Some((k, "in the other order the program does not fail, and no race defined what the failure used".to_string()))
        });
    if let Some((k, why)) = behind {
        report.findings[k].root = Some(format!("the run {how}; {why}"));
        let f = report.findings.remove(k);
        report.findings.insert(0, f);
        report.result = "root-cause".into();
        return (true, sup.runs);
    }
    let (result, why, concluded) = match &sup.verdict {
        SupVerdict::RootCause(_) => ("root-cause", "no harmful race defined what it used: its root cause is the first point of memory corruption".into(), true),
        SupVerdict::NotReproducible(..) => ("not-reproducible", model.reason.clone(), false),
        // The search's first run replays the schedule: it did not fail at all.
        SupVerdict::NoFailure => (
            "not-reproducible",
            "it did not fail again when its schedule was replayed: the failure depends on more than the schedule (a file the first run changed, input from outside), and no root cause is guessed".into(),
            false,
        ),
        _ => ("inconclusive", model.reason.clone(), false),
    };
    report.reason = format!("the run {how}; {why}");
    report.result = result.into();
    if concluded {
        let races = std::mem::take(&mut report.findings);
        report.findings = model.findings.into_iter().chain(races).collect();
    }
    (concluded, sup.runs)
}

/// How `--explore` went, for the report: the schedule that failed, where it was kept and the
/// command that replays it; or that none failed.
fn explored(cli: &Cli, found: Option<&(u32, String, String)>, kept: Option<&std::path::Path>) -> Option<String> {
    match (found, kept) {
        (Some((k, policy, how)), Some(path)) => {
            let mut replay = vec![OsString::from("rtgrind"), "--tool=race".into(), format!("--sched=replay:{}", path.display()).into()];
            replay.extend(cli.command.iter().cloned());
            let command = crate::tools::child::shell_words(&replay);
            Some(format!("schedule {} of {} ({policy}) failed: the run {how}; saved as {}; to replay it: {command}", k + 1, cli.race.explore, path.display()))
        }
        _ if cli.race.explore > 0 => {
            Some(format!("none of the {} schedules tried (--explore) failed; the run analysed used --sched={}", cli.race.explore, cli.sched))
        }
        _ => None,
    }
}

/// The report: text on rtgrind's messages, SARIF and JSON on standard output.
fn emit(report: &Report, cli: &Cli) {
    let pid = std::process::id();
    crate::tools::output::emit(report, super::run::RULE, &crate::tools::output::Output::of(cli), |line| eprintln!("=={pid}== {line}"));
}
