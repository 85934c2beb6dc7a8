//! The search over a suite: every test runs twice (its coverage, `--tool=count`, and its value
//! profile, `--vr-profile`); then, for each failing test, forward runs fork a child at each
//! replacement to try (`fork`), the last executed first, in batches, until the candidates are
//! used up or the test's time budget is; a line's remaining instances in a test are dropped at
//! its first IVMP there (dissertation 004 §4.2). The outcomes go to `rank`.

use super::profile::RunProfile;
use super::rank::{Found, Line};
use crate::tools::search::{Ran, Request, Runner, Search, Step};
use crate::tools::suite::Test;
use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::time::{Duration, Instant};

/// One replacement to try in a failing test.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// Its checkpoint: the use-site execution * 16 + which replacement there.
    pub at: u64,
    pub pc: u64,
    /// The execution of its instruction, from 1.
    pub instance: u64,
    pub op: usize,
    pub from: i64,
    pub to: i64,
    pub line: usize,
    /// Index of the site in the test's profile.
    pub site: usize,
}

/// What the search knows of the suite once every test ran once.
pub struct Suite {
    pub outcomes: Vec<crate::tools::spectra::Outcome>,
    pub profiles: Vec<RunProfile>,
    /// The lines instructions are on (by the module's file address).
    pub lines: Vec<Line>,
    pub line_of: HashMap<u64, usize>,
    /// Blocks of each test's profiling run (the children's budget is ten times as many).
    pub blocks: Vec<u64>,
}

/// The search in one failing test.
pub struct InTest {
    pub test: usize,
    pub cands: Vec<Candidate>,
    /// Replacements trying every value of each use's profile would make (no ch. 4 limit).
    pub every_value: u64,
    next: usize,
    batch: usize,
    started: Option<Instant>,
    /// Lines with an IVMP in this test: the first found.
    pub found: HashMap<usize, Candidate>,
    pub tried: u64,
    /// Candidates dropped because their line already had an IVMP in this test.
    pub skipped: u64,
    pub stopped: u64,
    pub forward_runs: u64,
    pub out_of_time: bool,
    done: bool,
}

enum Stage {
    Start,
    Profiled,
    /// Forward runs, one per failing test (index into `searches`), each with its batch.
    Forward(Vec<(usize, Vec<Candidate>)>),
}

pub struct VrSearch<'a> {
    pub tests: &'a [Test],
    pub timeout: Duration,
    pub budget: Duration,
    pub jobs: u64,
    /// The program's absolute path (its DWARF lines are the statements).
    pub program: String,
    stage: Stage,
    pub suite: Option<Suite>,
    pub searches: Vec<InTest>,
    /// Why the search stopped early (a test that could not run).
    pub error: Option<String>,
}

impl<'a> VrSearch<'a> {
    pub fn new(tests: &'a [Test], timeout: Duration, budget: Duration, jobs: u64, program: String) -> VrSearch<'a> {
        VrSearch { tests, timeout, budget, jobs, program, stage: Stage::Start, suite: None, searches: Vec::new(), error: None }
    }

    /// Each test's coverage run and profiling run.
    fn first_runs(&self, runner: &Runner) -> Vec<Request> {
        let mut out = Vec::new();
        for (i, t) in self.tests.iter().enumerate() {
            out.push(t.request(crate::tools::spectra::coverage_args(runner, i), self.timeout, format!("test {}", t.name)));
            let profile = vec!["--tool=vr".into(), format!("--vr-profile={}", runner.file(&format!("profile-{i}")).display()).into()];
            let mut p = t.request(profile, self.timeout, format!("profiling test {}", t.name));
            p.limits.count_blocks = true;
            out.push(p);
        }
        out
    }

    /// The first runs are back: the suite's outcomes, profiles and each failing test's
    /// candidates.
    fn profiled(&mut self, runner: &Runner, ran: Vec<Ran>, program: &str) -> Result<(), String> {
        let (mut coverage, mut profiling) = (Vec::new(), Vec::new());
        for (k, r) in ran.into_iter().enumerate() {
            if k % 2 == 0 {
                coverage.push(r)
            } else {
                profiling.push(r)
            }
        }
        let dir = runner.dir.0.clone();
        let coverage_of = move |_: &crate::tools::search::RunOutcome, i: usize| dir.join(crate::tools::spectra::coverage_file(i));
        let outcomes = crate::tools::spectra::outcomes(self.tests, coverage, program, &coverage_of)?;
        let mut profiles = Vec::new();
        let mut blocks = Vec::new();
        for (i, r) in profiling.into_iter().enumerate() {
            let name = &self.tests[i].name;
            self.tests[i].outcome(&r)?;
            let p = RunProfile::read(&runner.file(&format!("profile-{i}"))).map_err(|e| format!("test '{name}': its profiling run left no profile ({e})"))?;
            profiles.push(p);
            blocks.push(std::fs::read_to_string(runner.file(&format!("blocks-{}", r.number))).ok().and_then(|t| t.trim().parse().ok()).unwrap_or(0));
        }
        let (lines, line_of) = lines_of(&profiles);
        let suite = Suite { outcomes, profiles, lines, line_of, blocks };
        let values = value_sets(&suite.profiles);
        for (i, o) in suite.outcomes.iter().enumerate() {
            if o.passed {
                continue;
            }
            let cands = candidates(&suite, i, &values);
            let every_value = every_value(&suite, i, &values);
            self.searches.push(InTest {
                test: i,
                cands,
                every_value,
                next: 0,
                batch: 64,
                started: None,
                found: HashMap::new(),
                tried: 0,
                skipped: 0,
                stopped: 0,
                forward_runs: 0,
                out_of_time: false,
                done: false,
            });
        }
        self.suite = Some(suite);
        Ok(())
    }

    /// The next forward run of each failing test still searched.
    fn forward_runs(&mut self, runner: &Runner) -> Step<()> {
        let mut requests = Vec::new();
        let mut batches = Vec::new();
        for (s, search) in self.searches.iter_mut().enumerate() {
            if search.done {
                continue;
            }
            if search.started.is_some_and(|t| t.elapsed() >= self.budget) {
                search.out_of_time = true;
                search.done = true;
                continue;
            }
            let mut batch = Vec::new();
            while search.next < search.cands.len() && batch.len() < search.batch {
                let c = &search.cands[search.next];
                search.next += 1;
                if search.found.contains_key(&c.line) {
                    search.skipped += 1;
                } else {
                    batch.push(c.clone());
                }
            }
            if batch.is_empty() {
                search.done = true;
                continue;
            }
            search.batch = (search.batch * 2).min(256);
            search.started.get_or_insert_with(Instant::now);
            search.forward_runs += 1;
            let plan = runner.file(&format!("plan-{}-{}", search.test, search.forward_runs));
            let text: String = batch.iter().map(|c| format!("{} {:x} {} {}\n", c.at, c.pc, c.op, c.to)).collect();
            if let Err(e) = std::fs::write(&plan, text) {
                self.error = Some(format!("cannot write '{}': {e}", plan.display()));
                return Step::Done(());
            }
            let suite = self.suite.as_ref().expect("profiled");
            let budget = suite.blocks[search.test].max(100_000).saturating_mul(10);
            let mut args: Vec<OsString> = vec![
                "--tool=vr".into(),
                format!("--vr-plan={}", plan.display()).into(),
                format!("--budget-blocks={budget}").into(),
                format!("--jobs={}", self.jobs).into(),
            ];
            let test = &self.tests[search.test];
            if let (Some(out), None) = (&test.judge.output, &test.judge.command) {
                // Children whose output departs from the expected stop there.
                let file = runner.file(&format!("expected-{}", search.test));
                if std::fs::write(&file, out).is_ok() {
                    args.push(format!("--vr-expected={}", file.display()).into());
                }
            }
            let progress = format!("test {}: replacements {}-{} of {}", test.name, search.next - batch.len() + 1, search.next, search.cands.len());
            let mut r = test.request(args, self.budget + self.timeout, progress);
            r.checkpoints = Some(batch.iter().map(|c| c.at).collect());
            requests.push(r);
            batches.push((s, batch));
        }
        if requests.is_empty() {
            return Step::Done(());
        }
        self.stage = Stage::Forward(batches);
        Step::Batch(requests)
    }

    /// Forward runs are back: each child judged by its test's oracle.
    fn forwarded(&mut self, batches: Vec<(usize, Vec<Candidate>)>, ran: Vec<Ran>) {
        for ((s, batch), r) in batches.into_iter().zip(ran) {
            let search = &mut self.searches[s];
            let test = &self.tests[search.test];
            let Ok(mut run) = r.outcome else {
                search.done = true;
                continue;
            };
            let mut children: HashMap<u64, Option<crate::tools::search::RunOutcome>> =
                std::mem::take(&mut run.children).into_iter().map(|c| (c.at, c.outcome)).collect();
            for c in batch {
                let Some(child) = children.remove(&c.at) else { continue };
                search.tried += 1;
                let Some(outcome) = child else { continue };
                if outcome.ending == crate::tools::search::Ending::Budget {
                    search.stopped += 1;
                }
                if !search.found.contains_key(&c.line) && test.passes(&outcome) {
                    search.found.insert(c.line, c);
                }
            }
            if run.ending == crate::tools::search::Ending::TimedOut {
                search.out_of_time = true;
                search.done = true;
            }
        }
    }

    /// What the search found.
    pub fn found(&self) -> Vec<Found> {
        self.searches.iter().map(|s| Found { test: s.test, lines: s.found.clone() }).collect()
    }
}

impl Search for VrSearch<'_> {
    type Verdict = ();

    fn next(&mut self, runner: &Runner, ran: Vec<Ran>) -> Step<()> {
        match std::mem::replace(&mut self.stage, Stage::Profiled) {
            Stage::Start => Step::Batch(self.first_runs(runner)),
            Stage::Profiled => {
                let program = self.program.clone();
                if let Err(e) = self.profiled(runner, ran, &program) {
                    self.error = Some(e);
                    return Step::Done(());
                }
                let s = self.suite.as_ref().expect("profiled");
                let fails = s.outcomes.iter().filter(|o| !o.passed).count();
                if fails == 0 || fails == s.outcomes.len() {
                    return Step::Done(());
                }
                self.forward_runs(runner)
            }
            Stage::Forward(batches) => {
                self.forwarded(batches, ran);
                self.forward_runs(runner)
            }
        }
    }
}

/// Each instruction's source line: the lines, and the index of each file address's.
fn lines_of(profiles: &[RunProfile]) -> (Vec<Line>, HashMap<u64, usize>) {
    let mut lines: Vec<Line> = Vec::new();
    let mut index: HashMap<Line, usize> = HashMap::new();
    let mut line_of = HashMap::new();
    let mut functions = HashMap::new();
    for s in profiles.iter().flat_map(|p| &p.sites) {
        if line_of.contains_key(&s.file_addr) || in_prologue(&mut functions, &s.module, s.file_addr) {
            continue;
        }
        let Some(l) = crate::report::debuginfo::lines_in(&s.module, s.file_addr, s.file_addr + 1).into_iter().next() else { continue };
        let k = *index.entry(l.clone()).or_insert_with(|| {
            lines.push(l);
            lines.len() - 1
        });
        line_of.insert(s.file_addr, k);
    }
    (lines, line_of)
}

/// Whether file address `addr` of `module` is in a function's prologue
/// (`debuginfo::prologue_end`), where the function has more than one line: a replaced
/// parameter there is the replaced argument of the call's line.
fn in_prologue(functions: &mut HashMap<String, Vec<(u64, u64, String)>>, module: &str, addr: u64) -> bool {
    let ranges = functions.entry(module.to_string()).or_insert_with(|| crate::report::symbols::file_functions(module));
    let i = ranges.partition_point(|f| f.0 <= addr);
    let Some(&(low, size, _)) = i.checked_sub(1).map(|i| &ranges[i]).filter(|f| addr < f.0 + f.1.max(1)) else { return false };
    let end = crate::report::debuginfo::prologue_end(module, low, low + size);
    addr < end && end < low + size
}

/// The value profile: the distinct values each use (file address, use) read in all tests.
fn value_sets(profiles: &[RunProfile]) -> HashMap<(u64, usize), BTreeSet<i64>> {
    let mut sets: HashMap<(u64, usize), BTreeSet<i64>> = HashMap::new();
    for s in profiles.iter().flat_map(|p| &p.sites) {
        for (k, (_, values)) in s.uses.iter().enumerate() {
            sets.entry((s.file_addr, k)).or_default().extend(values);
        }
    }
    sets
}

/// The alternates of `v` in a use's profile `set` (dissertation 004 §4.2.2): the nearest lower
/// and higher values and the smallest and largest, each once, never `v`.
pub fn alternates(set: &BTreeSet<i64>, v: i64) -> Vec<i64> {
    let lower = set.range(..v).next_back().copied();
    let higher = set.range(v + 1..).next().copied();
    let (min, max) = (set.first().copied().filter(|&m| m < v), set.last().copied().filter(|&m| m > v));
    let mut out = Vec::new();
    for x in [min, lower, higher, max].into_iter().flatten() {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// Test `i`'s replacements, the last executed first: each recorded execution of a site on a line,
/// each use, each alternate.
fn candidates(suite: &Suite, i: usize, values: &HashMap<(u64, usize), BTreeSet<i64>>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for (site, s) in suite.profiles[i].sites.iter().enumerate() {
        let Some(&line) = suite.line_of.get(&s.file_addr) else { continue };
        for (n, (g, vals)) in s.instances.iter().enumerate() {
            for (op, &v) in vals.iter().enumerate() {
                let Some(set) = values.get(&(s.file_addr, op)) else { continue };
                for (k, to) in alternates(set, v).into_iter().enumerate() {
                    let at = g * super::fork::PER_EXECUTION + (op * 4 + k) as u64;
                    out.push(Candidate { at, pc: s.pc, instance: n as u64 + 1, op, from: v, to, line, site });
                }
            }
        }
    }
    // The last executed first: nearest the failure, where a time budget is best spent (each
    // forward run still forks at its batch in execution order).
    out.sort_by_key(|c| std::cmp::Reverse(c.at));
    out
}

/// Test `i`'s replacements if every other value of a use's profile were tried.
fn every_value(suite: &Suite, i: usize, values: &HashMap<(u64, usize), BTreeSet<i64>>) -> u64 {
    let mut n = 0;
    for s in suite.profiles[i].sites.iter().filter(|s| suite.line_of.contains_key(&s.file_addr)) {
        for (_, vals) in &s.instances {
            n += (0..vals.len()).filter_map(|op| values.get(&(s.file_addr, op))).map(|set| set.len().saturating_sub(1) as u64).sum::<u64>();
        }
    }
    n
}

#[cfg(test)]
mod tests {
    #[test]
    fn alternates_span_the_value() {
        let set = [10, 20, 499, 500, 501, 1000].into_iter().collect();
        assert_eq!(super::alternates(&set, 500), [10, 499, 501, 1000]);
        assert_eq!(super::alternates(&set, 10), [20, 1000]);
        assert_eq!(super::alternates(&set, 7), [10, 1000]);
        assert!(super::alternates(&[3].into_iter().collect(), 3).is_empty());
    }
}
