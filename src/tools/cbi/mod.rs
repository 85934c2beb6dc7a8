//! `--tool=cbi`: statistical bug isolation over a test suite (Liblit et al., "Scalable
//! statistical bug isolation"). Every test runs once (`--jobs` at a time) under the
//! instrumentation of `predicates` (`--cbi-out`, internal), which counts the main program's
//! predicates inline: each conditional branch taken and not taken, the sign of the value a
//! call returns (as the callee's DWARF types it), and how an integer variable assigned compares
//! with the function's other ones (frame slots at `-O0`, DWARF's registers and slots in
//! optimized code: `locations`). `score` ranks them by Importance and runs the elimination,
//! keeping predicates whose Increase is above 0 at 95% confidence; the report gives
//! each predicate the elimination selected, with its source line and the failing tests it
//! explains, the ranking before the elimination, and spectra's ranking of the same runs as the
//! baseline (`spectra::rank`, from the basic blocks the same runs counted).

mod locations;
mod pair_sites;
pub mod predicates;
mod report;
pub mod score;

use super::search::{Ran, RunOutcome, Runner};
use super::suite::Test;
use super::{Error, ToolRun};
use crate::cli::Cli;
use predicates::{Kind, Site};
use score::{Data, Ranked, RunPreds};
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// `--tool=cbi`'s own options (the suite's are spectra's).
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "Options of --tool=cbi")]
pub struct Options {
    /// Count the predicates of a site in about one of N of its executions (1/N: a geometric
    /// countdown per thread, for long runs); every execution counts without it.
    #[arg(long, value_name = "1/N", value_parser = parse_sample)]
    pub sample: Option<u64>,

    /// Keep a predicate only if its Increase is above 0 at this confidence, in percent (the
    /// paper's test; 90, 95 or 99). 0 keeps every Increase above 0: a small suite (tens of
    /// tests, a few failing) leaves few predicates at 95%.
    #[arg(long, value_name = "PCT", default_value = "95", value_parser = parse_confidence)]
    pub confidence: u32,

    /// (Internal) this run counts the main program's predicates into FILE.
    #[arg(long, value_name = "FILE", hide = true)]
    pub cbi_out: Option<PathBuf>,
}

/// `--sample`'s value: "1/N" with N at least 1.
fn parse_sample(s: &str) -> Result<u64, String> {
    let n = s.strip_prefix("1/").and_then(|n| n.parse::<u64>().ok()).filter(|n| (1..1 << 40).contains(n));
    n.ok_or_else(|| format!("'{s}' is not a sampling rate 1/N (N a whole number from 1)"))
}

/// `--confidence`'s value: 0, 90, 95 or 99.
fn parse_confidence(s: &str) -> Result<u32, String> {
    s.parse().ok().filter(|p| z_of(*p).is_some()).ok_or_else(|| format!("'{s}' is not a confidence --tool=cbi knows (0, 90, 95 or 99)"))
}

/// z of the two-sided confidence interval of `percent` (0: no interval).
fn z_of(percent: u32) -> Option<f64> {
    match percent {
        0 => Some(0.0),
        90 => Some(1.645),
        95 => Some(1.96),
        99 => Some(2.576),
        _ => None,
    }
}

/// Ids of the options the tool owns (the suite's shared with spectra).
pub fn option_ids() -> Vec<String> {
    [super::ids::<Options>(), super::spectra::option_ids()].concat()
}

/// The instrumentation run of one test (`--cbi-out`); otherwise the tool is a search.
pub fn make(cli: &Cli) -> Result<Box<dyn ToolRun>, Error> {
    let Some(out) = cli.cbi.cbi_out.clone() else {
        return Err(Error::usage("--tool=cbi ranks predicates over a test suite; it has no run of its own".into()));
    };
    Ok(Box::new(predicates::Predicates::new(out, program_path(cli), cli.cbi.sample, cli.seed)?))
}

pub fn wants_search(cli: &Cli) -> bool {
    cli.cbi.cbi_out.is_none()
}

/// The program's canonical path, as the memory map names it.
fn program_path(cli: &Cli) -> String {
    std::fs::canonicalize(crate::resolve(&cli.command[0])).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The ranking; its exit status (2 when the suite does not both pass and fail).
pub fn search(cli: &Cli) -> Result<i32, Error> {
    let o = &cli.spectra;
    let mut run = super::suite::SuiteSearch::new(cli, "cbi")?;
    let sample = cli.cbi.sample;
    let args = |runner: &Runner, i: usize| {
        let mut args: Vec<OsString> = vec!["--tool=cbi".into(), format!("--cbi-out={}", runner.file(&counts_file(i)).display()).into()];
        args.extend(sample.map(|n| format!("--sample=1/{n}").into()));
        args
    };
    let mut search = super::suite::EveryTest::new(&run.tests, Duration::from_secs(o.test_timeout), args);
    let ran = run.runner.drive(&mut search);
    let z = z_of(cli.cbi.confidence).unwrap_or(0.0);
    let mut report = report::build(&run.tests, ran, &run.program_name(), o.metric, o.top, (cli.cbi.confidence, z));
    run.finish(&mut report);
    report.seconds = (report.seconds * 1000.0).round() / 1000.0;
    if cli.search.sarif {
        // Results are the predicates; the baseline's lines are spectra's.
        let mut own = report.clone();
        own.findings.retain(|f| f.kind != "suspicious line");
        println!("{}", super::sarif::document(RULE, &own));
    }
    let pid = std::process::id();
    let output = super::output::Output { dot: None, sarif: false, ..super::output::Output::of(cli) };
    super::output::emit(&report, RULE, &output, |line| eprintln!("=={pid}== {line}"));
    Ok(match report.result.as_str() {
        "found" => cli.search.error_exitcode,
        "inconclusive" => 0,
        _ => crate::EXIT_USAGE,
    })
}

const RULE: super::sarif::Rule = super::sarif::Rule {
    id: "failure-predicting-predicate",
    description: "A predicate of the program (a branch's direction, the sign of a value returned, how a local stored compares with another) that predicts the failures of the suite's tests",
    help: "Predicates are ranked by Importance (the harmonic mean of their Increase and of how many failing tests they are true in); each one the elimination selects explains failing tests the ones before it did not: read the program at its line.",
};

/// The file test `i`'s run writes its predicates' counts to, in the search's directory.
fn counts_file(i: usize) -> String {
    format!("predicates-{i}")
}

/// Where test `i`'s run (this outcome) left its counts.
fn counts_of(run: &RunOutcome, i: usize) -> PathBuf {
    run.stdout.with_file_name(counts_file(i))
}

/// A predicate: its site (kind and file address) and which of the site's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pred {
    pub kind: Kind,
    pub at: u64,
    /// Which pair of a store's.
    pub k: u32,
    pub which: u8,
}

impl Pred {
    /// The predicates of a site, with how often each was true.
    fn of(site: &Site) -> Vec<(Pred, u64)> {
        let p = |which: u8| Pred { kind: site.kind, at: site.at, k: site.k, which };
        let c = &site.counts;
        match site.kind {
            Kind::Branch => vec![(p(0), c[1]), (p(1), c[0].saturating_sub(c[1]))],
            Kind::Return | Kind::Pair => vec![(p(0), c[1]), (p(1), c[2]), (p(2), c[3])],
            Kind::UnsignedReturn => vec![(p(1), c[2]), (p(2), c[3])],
        }
    }
}

/// Each test's pass or failure and sites, read from its run; or why a test cannot be used.
fn read_runs(tests: &[Test], ran: &[Ran]) -> Result<Vec<(bool, Vec<Site>)>, String> {
    let mut out = Vec::new();
    for (i, (test, r)) in tests.iter().zip(ran).enumerate() {
        let run = test.outcome(r)?;
        let sites = Site::read(&counts_of(run, i))
            .map_err(|e| format!("test '{}': its run left no predicate counts ({e}; it ended with {})", test.name, run.ending.describe()))?;
        out.push((test.passes(run), sites));
    }
    Ok(out)
}

/// The predicates of the runs, numbered, and each run's as `score` takes them.
fn data(runs: &[(bool, Vec<Site>)], z: f64) -> (Vec<(Pred, String)>, Data) {
    let mut preds: Vec<(Pred, String)> = Vec::new();
    let mut pred_ids: HashMap<Pred, usize> = HashMap::new();
    let mut site_ids: HashMap<(Kind, u64, u32), usize> = HashMap::new();
    let mut data = Data { z, ..Data::default() };
    for (passed, sites) in runs {
        let mut run = RunPreds { failed: !passed, ..RunPreds::default() };
        for site in sites.iter().filter(|s| s.counts[0] > 0) {
            let next = site_ids.len();
            let sid = *site_ids.entry((site.kind, site.at, site.k)).or_insert(next);
            run.observed.insert(sid);
            for (p, n) in Pred::of(site) {
                let id = *pred_ids.entry(p).or_insert_with(|| {
                    preds.push((p, site.detail.clone()));
                    data.site_of.push(sid);
                    preds.len() - 1
                });
                if n > 0 {
                    run.truth.insert(id);
                }
            }
        }
        data.runs.push(run);
    }
    (preds, data)
}

/// A ranking's ranks with ties ranked pessimistically (each takes the worst of its tie).
fn ranks(ranked: &[Ranked]) -> Vec<u32> {
    let imp = |r: &Ranked| r.scores.importance;
    ranked.iter().map(|r| ranked.iter().filter(|o| imp(o) >= imp(r) - 1e-12).count() as u32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unsigned_return_has_no_below_zero_predicate() {
        let site = |kind| Site { kind, at: 0x20, k: 0, counts: vec![4, 1, 1, 2], detail: String::new() };
        let which = |kind| Pred::of(&site(kind)).iter().map(|(p, n)| (p.which, *n)).collect::<Vec<_>>();
        assert_eq!(which(Kind::Return), [(0, 1), (1, 1), (2, 2)]);
        assert_eq!(which(Kind::UnsignedReturn), [(1, 1), (2, 2)]);
    }
}
