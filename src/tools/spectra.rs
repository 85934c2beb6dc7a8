//! `--tool=spectra`: spectrum-based fault localization over a test suite (`tools::suite`), the
//! baseline the test-suite techniques are compared with. Every test runs once under
//! `--tool=count --coverage-out` (repeatable, `--jobs` at a time); the basic blocks it entered
//! become the source lines of the program they hold (DWARF); each line is scored from how many
//! failing and passing tests ran it, by Ochiai and Tarantula, and ranked by `--metric` with ties
//! ranked pessimistically (every line of a tie takes the worst of its ranks).
//!
//! Tarantula: (f/F) / (f/F + p/P); Ochiai: f / sqrt(F (f + p)); f and p the failing and passing
//! tests that ran the line, F and P all failing and passing tests.

use super::count::Covered;
use super::search::{Ran, RunOutcome, Runner};
use super::suite::{self, Test};
use super::{Error, ToolRun};
use crate::cli::Cli;
use crate::report::model::{Finding, Report, VERSION};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// The suspiciousness metrics.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Metric {
    #[default]
    Ochiai,
    Tarantula,
}

impl Metric {
    pub(super) fn name(self) -> &'static str {
        match self {
            Metric::Ochiai => "ochiai",
            Metric::Tarantula => "tarantula",
        }
    }
}

/// The test-suite tools' options.
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "Options of the test-suite tools (--tool=spectra, --tool=cbi)")]
pub struct Options {
    /// The test suite: one JSON object a line (name, args, stdin, expected_stdout,
    /// expected_exit, cwd, oracle; paths relative to FILE's directory, where tests run unless
    /// cwd says otherwise).
    #[arg(long, value_name = "FILE", conflicts_with = "suite_dir")]
    pub suite: Option<PathBuf>,

    /// The test suite as a directory: a directory per test holding cmd (the arguments, one a
    /// line), stdin (optional), expected (the standard output) and exit (optional).
    #[arg(long, value_name = "DIR")]
    pub suite_dir: Option<PathBuf>,

    /// The metric the lines are ranked by (both are reported).
    #[arg(long, value_enum, default_value = "ochiai", value_name = "ochiai|tarantula")]
    pub metric: Metric,

    /// Lines of the ranking said in the text report (all in --json).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,

    /// Wall-time limit of one test's run, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub test_timeout: u64,
}

impl Options {
    /// The suite the options give (`tool` needs one).
    pub(super) fn tests(&self, tool: &str) -> Result<Vec<Test>, Error> {
        match (&self.suite, &self.suite_dir) {
            (Some(f), _) => suite::from_file(f),
            (None, Some(d)) => suite::from_dir(d),
            (None, None) => Err(format!("--tool={tool} needs a test suite: --suite=FILE or --suite-dir=DIR")),
        }
        .map_err(Error::usage)
    }
}

/// Ids of the options the tool owns.
pub fn option_ids() -> Vec<String> {
    [super::ids::<Options>(), vec!["jobs".to_string()], super::ids::<super::SearchOptions>()].concat()
}

/// The tool is a search only.
pub fn make(_: &Cli) -> Result<Box<dyn ToolRun>, Error> {
    Err(Error::usage("--tool=spectra ranks lines over a test suite; it has no run of its own".into()))
}

pub fn wants_search(_: &Cli) -> bool {
    true
}

/// The ranking; its exit status (2 when the suite does not both pass and fail).
pub fn search(cli: &Cli) -> Result<i32, Error> {
    let o = &cli.spectra;
    let mut run = suite::SuiteSearch::new(cli, "spectra")?;
    let mut search = suite::EveryTest::new(&run.tests, Duration::from_secs(o.test_timeout), coverage_args);
    let ran = run.runner.drive(&mut search);
    let coverage = |run: &RunOutcome, i: usize| run.stdout.with_file_name(coverage_file(i));
    let mut report = rank(&run.tests, ran, &run.program_name(), o.metric, &coverage);
    run.finish(&mut report);
    let pid = std::process::id();
    let output = super::output::Output { dot: None, text_findings: Some(o.top), ..super::output::Output::of(cli) };
    super::output::emit(&report, RULE, &output, |line| eprintln!("=={pid}== {line}"));
    Ok(suite::exit_status(cli, &report))
}

const RULE: super::sarif::Rule = super::sarif::Rule {
    id: "suspicious-line",
    description: "A source line that the failing tests of the suite run more than the passing ones",
    help: "Lines are ranked by their suspiciousness (Ochiai or Tarantula) from the tests that ran them: start reading the program at the top-ranked lines.",
};

/// The run of test `i` that counts the blocks it enters into its coverage file.
pub(crate) fn coverage_args(runner: &Runner, i: usize) -> Vec<OsString> {
    vec!["--tool=count".into(), format!("--coverage-out={}", runner.file(&coverage_file(i)).display()).into()]
}

/// The file test `i`'s run writes its coverage to, in the search's directory.
pub(crate) fn coverage_file(i: usize) -> String {
    format!("coverage-{i}")
}

/// A line of the program: its source file and number; code without lines (no DWARF line
/// table for it) is one statement per function, (`NO_LINES` and the function's name, 0).
pub(crate) type Line = (String, u32);

/// What stands for the file of a function's code that has no lines.
const NO_LINES: &str = "(no line information) ";

/// The functions gcc's and glibc's start-up objects (crt1.o, crti.o, crtbegin.o) link into
/// every program.
const START_UP: [&str; 9] =
    ["_start", "_init", "_fini", "deregister_tm_clones", "register_tm_clones", "__do_global_dtors_aux", "frame_dummy", "__libc_csu_init", "__libc_csu_fini"];

/// What one test did: whether it passed, and the lines it ran.
pub(crate) struct Outcome {
    pub(crate) passed: bool,
    pub(crate) lines: BTreeSet<Line>,
}

/// The lines of `program` each run of `ran` entered, as `Outcome`s in the tests' order, or
/// why a test could not be run.
pub(crate) fn outcomes(tests: &[Test], ran: Vec<Ran>, program: &str, coverage_of: &Coverage) -> Result<Vec<Outcome>, String> {
    let mut blocks: HashMap<(u64, u64), Vec<Line>> = HashMap::new();
    let same_file = |m: &str| m == program || std::fs::canonicalize(m).is_ok_and(|c| c.to_string_lossy() == program);
    let mut modules: HashMap<String, bool> = HashMap::new();
    let mut functions: HashMap<String, Vec<(u64, u64, String)>> = HashMap::new();
    let mut out = Vec::new();
    for (test, r) in tests.iter().zip(ran) {
        let run = test.outcome(&r)?;
        let coverage = coverage_of(run, out.len());
        let covered =
            Covered::read(&coverage).map_err(|e| format!("test '{}': its run left no coverage ({e}; it ended with {})", test.name, run.ending.describe()))?;
        let mut lines = BTreeSet::new();
        for c in covered {
            if !*modules.entry(c.module.clone()).or_insert_with(|| same_file(&c.module)) {
                continue;
            }
            let at = blocks.entry((c.start, c.end)).or_insert_with(|| {
                let lines = crate::report::debuginfo::lines_in(&c.module, c.start, c.end);
                if !lines.is_empty() {
                    return lines;
                }
                let functions = functions.entry(c.module.clone()).or_insert_with(|| crate::report::symbols::file_functions(&c.module));
                // (Code in no function, as PLT stubs, and the C start-up files' functions are
                // the linker's, not the program's statements.)
                match crate::report::symbols::function_holding(functions, c.start) {
                    Some(name) if !START_UP.contains(&name) => vec![(format!("{NO_LINES}{name}"), 0)],
                    _ => Vec::new(),
                }
            });
            lines.extend(at.iter().cloned());
        }
        out.push(Outcome { passed: test.passes(run), lines });
    }
    Ok(out)
}

/// Ochiai and Tarantula of a line `f` failing and `p` passing tests ran, of `fails` and `passes`.
pub(crate) fn scores(f: u32, p: u32, fails: u32, passes: u32) -> (f64, f64) {
    let (f, p, fails, passes) = (f as f64, p as f64, fails as f64, passes as f64);
    let ochiai = if f == 0.0 { 0.0 } else { f / (fails * (f + p)).sqrt() };
    let tarantula = if f == 0.0 { 0.0 } else { (f / fails) / (f / fails + p / passes) };
    (ochiai, tarantula)
}

/// Where test `i`'s run (its outcome given) left its coverage.
pub(crate) type Coverage = dyn Fn(&RunOutcome, usize) -> PathBuf;

/// The report: every line a failing test ran, ranked by `metric` (pessimistic ties).
pub(super) fn rank(tests: &[Test], ran: Vec<Ran>, program: &str, metric: Metric, coverage: &Coverage) -> Report {
    let mut report = Report { tool: "spectra".into(), schema: VERSION, ..Report::default() };
    let outcomes = match outcomes(tests, ran, program, coverage) {
        Ok(o) => o,
        Err(why) => {
            report.result = "cannot-run".into();
            report.reason = why;
            return report;
        }
    };
    let fails = outcomes.iter().filter(|o| !o.passed).count() as u32;
    let passes = outcomes.len() as u32 - fails;
    let failing: Vec<&str> = tests.iter().zip(&outcomes).filter(|(_, o)| !o.passed).map(|(t, _)| t.name.as_str()).collect();
    if fails == 0 || passes == 0 {
        report.result = "no-failure".into();
        report.reason = if fails == 0 {
            format!("all {} tests pass: there is no failure to localize", outcomes.len())
        } else {
            format!("all {} tests fail: a ranking needs passing tests too", outcomes.len())
        };
        return report;
    }
    let counts = line_counts(&outcomes, |_| true);
    let ran_lines = counts.len();
    // Each source file read once, for the text of its lines.
    let mut sources: HashMap<&str, Vec<String>> = HashMap::new();
    let mut findings: Vec<Finding> = counts
        .into_iter()
        .filter(|(_, (f, _))| *f > 0)
        .map(|((file, line), (f, p))| {
            let (ochiai, tarantula) = scores(f, p, fails, passes);
            Finding {
                kind: "suspicious line".into(),
                place: match file.strip_prefix(NO_LINES) {
                    Some(function) => format!("{} in {function}", short(program)),
                    None => format!("{}:{line}", short(file)),
                },
                message: match file.starts_with(NO_LINES) {
                    true => "(instructions without line information)".to_string(),
                    false => source_line(sources.entry(file).or_insert_with(|| read_lines(file)), *line),
                },
                scores: [("ochiai".to_string(), ochiai), ("tarantula".to_string(), tarantula)].into(),
                failed_tests: Some(f),
                passed_tests: Some(p),
                ..Finding::default()
            }
        })
        .collect();
    let score = |f: &Finding| f.scores[metric.name()];
    findings.sort_by(|a, b| score(b).total_cmp(&score(a)));
    rank_pessimistically(&mut findings, score);
    report.result = "found".into();
    report.summary = Some(format!(
        "{} tests: {fails} failed ({}), {passes} passed; {ran_lines} lines ran, ranked by {} (ties take their worst rank)",
        outcomes.len(),
        failing.join(", "),
        metric.name()
    ));
    report.findings = findings;
    report
}

/// How many failing and passing tests ran each line, over the `outcomes` (by index) `counted`
/// keeps.
pub(crate) fn line_counts(outcomes: &[Outcome], counted: impl Fn(usize) -> bool) -> BTreeMap<&Line, (u32, u32)> {
    let mut counts: BTreeMap<&Line, (u32, u32)> = BTreeMap::new();
    for (_, o) in outcomes.iter().enumerate().filter(|(i, _)| counted(*i)) {
        for l in &o.lines {
            let c = counts.entry(l).or_default();
            if o.passed {
                c.1 += 1;
            } else {
                c.0 += 1;
            }
        }
    }
    counts
}

/// Ranks `findings`, sorted best `key` first: each takes the worst rank of its tie.
pub(crate) fn rank_pessimistically<K: PartialOrd>(findings: &mut [Finding], key: impl Fn(&Finding) -> K) {
    let ranks: Vec<u32> = findings.iter().map(|f| findings.iter().filter(|g| key(g) >= key(f)).count() as u32).collect();
    for (f, r) in findings.iter_mut().zip(ranks) {
        f.rank = Some(r);
    }
}

/// A path as reports give it: the file name (DWARF paths are absolute).
pub(crate) fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The lines of the source file at `path` (none if it cannot be read).
pub(crate) fn read_lines(path: &str) -> Vec<String> {
    std::fs::read_to_string(path).map(|t| t.lines().map(str::to_string).collect()).unwrap_or_default()
}

/// Line `n` (from 1) of a source file's `lines`, trimmed; empty if it has none.
pub(crate) fn source_line(lines: &[String], n: u32) -> String {
    n.checked_sub(1).and_then(|i| lines.get(i as usize)).map_or(String::new(), |l| l.trim().to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn scores_follow_their_definitions() {
        // A line only the 2 failing tests of 2 ran (and no passing one): both metrics say 1.
        assert_eq!(super::scores(2, 0, 2, 8), (1.0, 1.0));
        // 1 of 2 failing, 4 of 8 passing: Ochiai 1/sqrt(2*5), Tarantula 0.5/(0.5+0.5).
        let (o, t) = super::scores(1, 4, 2, 8);
        assert!((o - 1.0 / 10f64.sqrt()).abs() < 1e-12 && (t - 0.5).abs() < 1e-12);
        assert_eq!(super::scores(0, 3, 2, 8), (0.0, 0.0));
    }
}
