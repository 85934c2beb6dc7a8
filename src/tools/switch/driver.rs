//! `rtgrind --tool=switch ORACLE prog args`: the predicate-switching search. A trace run lists
//! every conditional branch instance up to the failure; then, in the chosen order, each
//! candidate instance is inverted in a run of its own (plain re-execution, repeatable mode)
//! until the oracle accepts a run. Every switched run has a block budget of `--budget-factor`
//! times the original run's, so a switch that makes the program loop ends.

use super::oracle::{Ending, Oracle, RunResult};
use crate::report::model::{Finding, Report, VERSION};
use crate::tools::child;
use crate::tools::search::{Limits, Runner};
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
    pub json: bool,
    pub sarif: bool,
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

struct Search {
    runner: Runner,
    command: Vec<OsString>,
    opts: Options,
    input: Replay,
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
};

impl Search {
    /// The search's result as the one report model (`report::model`).
    fn report(&self, result: &str, findings: Vec<Finding>, tried: u64, candidates: u64, seconds: f64) -> Report {
        Report {
            tool: "switch".into(),
            result: result.into(),
            version: VERSION,
            command: self.command.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
            reason: if findings.is_empty() { "no single switch makes the run pass".into() } else { String::new() },
            findings,
            runs: self.runner.runs,
            tried: Some(tried),
            candidates: Some(candidates),
            seconds: (seconds * 1000.0).round() / 1000.0,
            ..Report::default()
        }
    }

    /// The command that runs the program with instance `n` of the branch at `pc` switched, as
    /// the search ran it: the same address needs the same layout (`--repeatable`, its seed),
    /// the same input.
    fn replay(&self, pc: u64, n: u64) -> String {
        let mut words: Vec<OsString> = vec!["rtgrind".into(), "--tool=switch".into(), format!("--switch-at={pc:#x}:{n}").into(), "--repeatable=yes".into()];
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
            Replay::Captured if std::fs::metadata(&self.runner.stdin_file).is_ok_and(|m| m.len() > 0) => line += " < (the same standard input)",
            _ => {}
        }
        line
    }

    /// Runs rtgrind with `tool_args` on the program (`tools::search`), its messages in a log
    /// apart from the program's standard error; its result, or rtgrind's error line.
    fn run(&mut self, tool_args: Vec<OsString>, limit: Option<Duration>, count_blocks: bool) -> Result<(RunResult, Duration, String), String> {
        let r = self.runner.run(&tool_args, Limits { time: limit, log: true, count_blocks, budget: None }).map_err(|e| format!("cannot run rtgrind: {e}"))?;
        if let Some(line) = r.log.lines().find(|l| l.starts_with("rtgrind: error:")) {
            return Err(line.to_string());
        }
        Ok((RunResult { stdout: r.stdout, stderr: r.stderr, ending: r.ending }, r.took, r.log))
    }
}

/// What a successful switch did.
struct Found {
    candidate: Candidate,
    /// The branch's own outcome at that instance (the trace's direction).
    outcome: Option<String>,
}

pub fn drive(command: Vec<OsString>, opts: Options) -> i32 {
    let pid = std::process::id();
    let say = |s: &str| eprintln!("=={pid}== switch: {s}");
    let started = Instant::now();
    // How the replay command printed with an answer gets the same input.
    let input = match &opts.stdin_file {
        Some(f) => Replay::StdinFile(f.clone()),
        None => child::stdin_source().map_or(Replay::Captured, Replay::Redirect),
    };
    let runner = match Runner::new("switch", command.clone(), opts.seed, opts.stdin_file.clone()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rtgrind: error: {e}");
            return 2;
        }
    };
    let mut s = Search { runner, command, opts, input };
    let (original, trace) = match trace_failure(&mut s, &say) {
        Ok(r) => r,
        Err(code) => return code,
    };
    // (Calibrated on the trace run, once.)
    let budget = s.runner.block_budget(s.opts.budget_factor).unwrap_or(u64::MAX);
    let cands = candidates(&trace, s.opts.order);
    let failure = if trace.failure.is_empty() { original.ending.describe() } else { trace.failure.clone() };
    say(&format!("the original run fails ({failure}); {} branch instances before the failure, {} sites", cands.len(), trace.sites.len()));
    if s.opts.order == Order::Prior {
        match &trace.distance {
            Some(d) => say(&format!("{} of them are in the failure's dynamic dependences (searched first, nearest first)", d.len())),
            None => say("the dependence log overflowed: searching last executed first"),
        }
    }
    let limit = s.runner.time_limit(20).unwrap_or(Duration::from_secs(3600));
    // A fork copies only the forking thread: programs with threads are searched by re-running;
    // so are programs that change files (forked children share the file system with their
    // parent and each other: a child listing a directory saw the file its parent made).
    let fork = s.opts.fork && !s.opts.libs && trace.threads == 0 && trace.changes_files.is_none();
    let mut t = Tally::default();
    let searched = if fork { fork_search(&mut s, &trace, &cands, budget, limit, &mut t) } else { rerun_search(&mut s, &trace, &cands, budget, limit, &mut t) };
    if let Err(code) = searched {
        return code;
    }
    report(&s, &trace, &cands, &t, fork, started, &say)
}

/// The switched runs so far: the successes, how many were tried and how many their budget
/// stopped.
#[derive(Default)]
struct Tally {
    found: Vec<Found>,
    tried: u64,
    stopped: u64,
}

/// The original run, traced, and its repeat: the trace (with, for `--order=prior`, the
/// dependence distances from a run of its own); Err(exit status) when there is nothing to
/// search (no failure, not reproducible, no trace).
fn trace_failure(s: &mut Search, say: &dyn Fn(&str)) -> Result<(RunResult, Trace), i32> {
    // The trace run: the original execution, every branch instance up to the failure.
    let trace_file = s.runner.file("trace");
    let mut targs: Vec<OsString> = vec!["--tool=switch".into(), format!("--switch-trace={}", trace_file.display()).into()];
    if s.opts.libs {
        targs.push("--switch-libs=yes".into());
    }
    if let Some(p) = &s.opts.expected_output_path {
        targs.push(format!("--expected-output={}", p.display()).into());
    }
    let (original, _, _) = match s.run(targs.clone(), None, true) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return Err(2);
        }
    };
    if !s.opts.json && !s.opts.sarif {
        child::show_output(&original.stdout);
    }
    if s.opts.oracle.passes(&original) {
        if !s.opts.oracle.given() {
            say(&format!(
                "no oracle given (--expected-output, --expected-stderr, --expected-exit, --oracle) and the program did not crash ({}): nothing to search for",
                original.ending.describe()
            ));
            return Err(2);
        }
        say(&format!("the run already passes the oracle ({}); nothing to find", original.ending.describe()));
        return Err(0);
    }
    // The failure must repeat.
    let again = match s.run(vec!["--tool=none".into()], s.runner.time_limit(20), false) {
        Ok(r) => r.0,
        Err(e) => {
            eprintln!("{e}");
            return Err(2);
        }
    };
    let same_output = std::fs::read(&again.stdout).ok() == std::fs::read(&original.stdout).ok();
    if again.ending != original.ending || !same_output {
        say(&format!(
            "the failure does not reproduce: the first run ended with {}, the second with {}{}",
            original.ending.describe(),
            again.ending.describe(),
            if same_output { "" } else { " and a different output" }
        ));
        return Err(2);
    }
    let Ok(trace_text) = std::fs::read_to_string(&trace_file) else {
        // The trace run ended without writing its trace: rtgrind stopped, or the program
        // replaced itself with one rtgrind does not follow. Its one-line error says which.
        let err = std::fs::read_to_string(&original.stderr).unwrap_or_default();
        let line = err.lines().rev().find(|l| l.starts_with("rtgrind: error:")).unwrap_or("rtgrind: error: the trace run ended without a trace");
        eprintln!("{line}");
        return Err(2);
    };
    let mut trace = parse_trace(&trace_text);
    if s.opts.order == Order::Prior {
        // The dependence graph comes from a run of its own: its shadow memory changes where the
        // kernel puts the program's mappings, and with them what some programs do (a hash of
        // addresses), so its branch instances are matched to the trace's by site and instance
        // rather than by position. A mismatch can only change the order, never the answer.
        let deps_file = s.runner.file("deps-trace");
        let mut dargs = targs;
        dargs[1] = format!("--switch-trace={}", deps_file.display()).into();
        dargs.push("--switch-deps=yes".into());
        let deps = match s.run(dargs, s.runner.time_limit(40), false) {
            Ok(_) => parse_trace(&std::fs::read_to_string(&deps_file).unwrap_or_default()),
            Err(e) => {
                eprintln!("{e}");
                return Err(2);
            }
        };
        trace.distance = deps.distance.as_ref().map(|d| by_site_instance(&deps, d, &trace));
    }
    Ok((original, trace))
}

/// The fork search: forward runs that fork at the candidates in order, each child switched.
fn fork_search(s: &mut Search, trace: &Trace, cands: &[Candidate], budget: u64, limit: Duration, t: &mut Tally) -> Result<(), i32> {
    // Forward runs fork at the candidates in order, in batches growing fourfold: an answer
    // near the front of the order costs one short batch, a long search few forward runs.
    let mut from = 0usize;
    let mut batch = 32usize;
    let mut pass = 0;
    'search: while from < cands.len() {
        pass += 1;
        let part = &cands[from..(from + batch).min(cands.len())];
        crate::tools::child::progress(&format!("switch: forking at candidates {}-{} of {}", from + 1, from + part.len(), cands.len()));
        from += part.len();
        batch *= 4;
        let fork_dir = s.runner.file(&format!("fork-{pass}"));
        let at: Vec<String> = part.iter().map(|c| c.index.to_string()).collect();
        if let Err(e) = std::fs::create_dir_all(&fork_dir).and_then(|()| std::fs::write(fork_dir.join("at"), at.join(" "))) {
            eprintln!("rtgrind: error: cannot write {}: {e}", fork_dir.display());
            return Err(2);
        }
        let mut args: Vec<OsString> = vec![
            "--tool=switch".into(),
            format!("--switch-fork={}", fork_dir.display()).into(),
            format!("--budget-blocks={budget}").into(),
            format!("--jobs={}", s.opts.jobs).into(),
        ];
        if let Some(p) = &s.opts.expected_output_path {
            args.push(format!("--expected-output={}", p.display()).into());
        }
        let (parent, _, _) = match s.run(args, Some(limit * (part.len() as u32).max(1)), false) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{e}");
                return Err(2);
            }
        };
        let results = std::fs::read_to_string(fork_dir.join("results")).unwrap_or_default();
        let mut by_index: std::collections::HashMap<usize, (i32, u64, u64)> = std::collections::HashMap::new();
        for line in results.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            if f.len() == 5 {
                if let (Ok(i), Ok(c), Ok(o), Ok(e)) = (f[1].parse(), f[2].parse(), f[3].parse(), f[4].parse()) {
                    by_index.insert(i, (c, o, e));
                }
            }
        }
        for c in part {
            let Some(&(code, o, e)) = by_index.get(&c.index) else { continue };
            t.tried += 1;
            let ending = match code {
                super::fork::DIVERGED => None,
                crate::EXIT_BUDGET => Some(Ending::Budget),
                c if c < 0 => Some(Ending::Signal(-c)),
                c => Some(Ending::Exit(c)),
            };
            if matches!(ending, Some(Ending::Budget)) {
                t.stopped += 1;
            }
            let Some(ending) = ending else { continue };
            // The child's output: what the program had written before the fork, then its own.
            let join = |prefix: &std::path::Path, n: u64, own: PathBuf, to: PathBuf| -> PathBuf {
                let mut bytes = std::fs::read(prefix).unwrap_or_default();
                bytes.truncate(n as usize);
                bytes.extend(std::fs::read(own).unwrap_or_default());
                let _ = std::fs::write(&to, bytes);
                to
            };
            let stdout = join(&parent.stdout, o, fork_dir.join(format!("out-{}", c.index)), fork_dir.join(format!("full-out-{}", c.index)));
            let stderr = join(&parent.stderr, e, fork_dir.join(format!("err-{}", c.index)), fork_dir.join(format!("full-err-{}", c.index)));
            if s.opts.oracle.passes(&RunResult { stdout, stderr, ending }) {
                t.found.push(Found { candidate: c.clone(), outcome: Some(direction(trace, c)) });
                if !s.opts.all {
                    break 'search;
                }
            }
        }
    }
    Ok(())
}

/// The search by re-execution: one run of the program per candidate, switched.
fn rerun_search(s: &mut Search, trace: &Trace, cands: &[Candidate], budget: u64, limit: Duration, t: &mut Tally) -> Result<(), i32> {
    for c in cands {
        let (pc, _) = trace.sites[c.site];
        t.tried += 1;
        if t.tried % 16 == 1 {
            crate::tools::child::progress(&format!("switch: switched run {} of {}", t.tried, cands.len()));
        }
        let args: Vec<OsString> = vec!["--tool=switch".into(), format!("--switch-at={pc:#x}:{}", c.forward).into(), format!("--budget-blocks={budget}").into()];
        let (r, _, log) = match s.run(args, Some(limit), false) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{e}");
                return Err(2);
            }
        };
        if matches!(r.ending, Ending::Budget | Ending::TimedOut) {
            t.stopped += 1;
        }
        if s.opts.oracle.passes(&r) {
            // The switched run forced the inverse of the trace's direction; if it says
            // otherwise the two runs went apart, and the trace is not to be believed.
            let own = direction(trace, c);
            let forced_taken = log.contains("switched to taken");
            let outcome = (forced_taken != (own == "taken")).then_some(own);
            t.found.push(Found { candidate: c.clone(), outcome });
            if !s.opts.all {
                break;
            }
        }
    }
    Ok(())
}

/// The answer: each successful switch with the command that replays it, and the figures.
fn report(s: &Search, trace: &Trace, cands: &[Candidate], t: &Tally, fork: bool, started: Instant, say: &dyn Fn(&str)) -> i32 {
    crate::tools::child::progress_done();
    let secs = started.elapsed().as_secs_f64();
    if t.found.is_empty() {
        say(&format!(
            "no single switch makes the run pass: search exhausted after {} switched runs ({} stopped by their budget; {:.2} s)",
            t.tried, t.stopped, secs
        ));
        if s.opts.json {
            println!("{}", s.report("exhausted", Vec::new(), t.tried, cands.len() as u64, secs).to_json());
        }
        return 2;
    }
    let mut findings = Vec::new();
    for (k, f) in t.found.iter().enumerate() {
        let (pc, place) = &trace.sites[f.candidate.site];
        let head = if k == 0 { "critical predicate" } else { "also" };
        say(&format!("{head}: {place}, the branch at {pc:#x}"));
        let was = f.outcome.as_ref().map_or(String::new(), |o| format!(", which was {o}"));
        say(&format!("   instance {} of its site ({} from the failure){was}; inverting it makes the run pass", f.candidate.forward, f.candidate.backward));
        say(&format!("   to replay it: {}", s.replay(*pc, f.candidate.forward)));
        let distance = trace.distance.as_ref().and_then(|d| d.get(&f.candidate.index));
        match (s.opts.order, distance) {
            (Order::Prior, Some(d)) => say(&format!("   the failure depends on it through {d} dynamic dependences")),
            (Order::Prior, None) => say("   the failure does not depend on it (through the dependences traced)"),
            _ => {}
        }
        findings.push(Finding {
            place: place.clone(),
            message: format!(
                "critical predicate: the branch at {pc:#x}, instance {} ({} from the failure): inverting it makes the run pass",
                f.candidate.forward, f.candidate.backward
            ),
            pc: format!("{pc:#x}"),
            instance: f.candidate.forward,
            from_failure: Some(f.candidate.backward),
            outcome: f.outcome.clone(),
            ..Finding::default()
        });
    }
    let order = match s.opts.order {
        Order::Lefs => "lefs",
        Order::LastInstanceFirst => "last-instance-first",
        Order::Prior => "prior",
    };
    let how = if fork {
        "forked from forward runs"
    } else if trace.threads > 0 {
        "re-executed: the program has threads"
    } else if trace.changes_files.is_some() && s.opts.fork {
        "re-executed: the program changes files"
    } else {
        "re-executed"
    };
    say(&format!(
        "{} switched runs of {} candidates ({order} order, {how}; {} stopped by their budget), {} runs in all, {:.2} s",
        t.tried,
        cands.len(),
        t.stopped,
        s.runner.runs,
        secs
    ));
    let report = s.report("found", findings, t.tried, cands.len() as u64, secs);
    if s.opts.sarif {
        println!("{}", crate::tools::sarif::document(RULE, &report));
    }
    if s.opts.json {
        println!("{}", report.to_json());
    }
    s.opts.error_exitcode
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
