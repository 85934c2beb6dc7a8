//! `--tool=cbi`'s report: the predicates the elimination selected, the ranking before it, and
//! spectra's ranking of the same runs (the baseline), each predicate at its source line with
//! the line's text.

use super::super::spectra::{self, Metric};
use super::super::suite::Test;
use super::predicates::{self, Kind};
use super::score::{self, Ranked};
use super::{counts_of, data, ranks, read_runs, Pred};
use crate::report::model::{Finding, Report, VERSION};
use std::collections::{BTreeSet, HashMap, HashSet};

/// A predicate as the report says it.
#[derive(Clone, Debug, Default)]
pub struct Described {
    /// "file:line (function)".
    pub place: String,
    /// "file:line".
    pub line: String,
    /// The line's text.
    pub source: String,
    /// What is true: "the branch is taken", "the value atoi returns is < 0".
    pub what: String,
}

/// Descriptions of the program's predicates, from its DWARF and sources (each read once).
struct Describer<'a> {
    program: &'a str,
    sources: HashMap<String, Vec<String>>,
    /// Branches that share their line with another (`a && b`): said with their address.
    shared: HashSet<u64>,
}

impl Describer<'_> {
    /// The line at file address `at`: "file:line" and the frames there.
    fn line_of(&self, at: u64) -> Option<(String, u32, Option<String>)> {
        let frames = crate::report::debuginfo::frames(self.program, at);
        let f = frames.first()?;
        Some((f.file.clone()?, f.line?, f.function.clone()))
    }

    fn describe(&mut self, p: &Pred, detail: &str) -> Described {
        // A return site's line is its call's.
        let at = if matches!(p.kind, Kind::Return | Kind::UnsignedReturn) { p.at - 1 } else { p.at };
        let what = match p.kind {
            Kind::Branch => {
                let to: Vec<u64> = detail.split(' ').filter_map(|a| u64::from_str_radix(a, 16).ok()).collect();
                let line = to.get(p.which as usize).and_then(|&a| self.line_of(a)).map_or(String::new(), |(_, l, _)| format!(" (on to line {l})"));
                let which = if self.shared.contains(&p.at) { format!(" at {:#x}", p.at) } else { String::new() };
                format!("the branch{which} is {}{line}", if p.which == 0 { "taken" } else { "not taken" })
            }
            Kind::Return | Kind::UnsignedReturn => {
                let callee = if detail.is_empty() { "the function called".to_string() } else { format!("{detail}()") };
                format!("the value {callee} returns is {}", ["< 0", "== 0", "> 0"][p.which.min(2) as usize])
            }
            Kind::Pair => {
                let (x, y) = detail.split_once(' ').unwrap_or((detail, "?"));
                format!("{x} {} {y} (as {x} is stored)", ["<", "==", ">"][p.which.min(2) as usize])
            }
        };
        let frames = crate::report::debuginfo::frames(self.program, at);
        let Some((file, line)) = frames.first().and_then(|f| Some((f.file.clone()?, f.line?))) else {
            let place = format!("{:#x} in {}", p.at, spectra::short(self.program));
            return Described { line: place.clone(), place, source: String::new(), what };
        };
        let function = frames.first().and_then(|f| f.function.clone()).map_or(String::new(), |f| format!(" ({f})"));
        let lines = self.sources.entry(file.clone()).or_insert_with(|| spectra::read_lines(&file));
        let short = format!("{}:{line}", spectra::short(&file));
        Described { place: format!("{short}{function}"), line: short, source: spectra::source_line(lines, line), what }
    }
}

/// A finding for predicate `r` at file address `at` of `program`.
fn finding(kind: &str, r: &Ranked, d: &Described, at: u64, program: &str) -> Finding {
    let s = &r.scores;
    Finding {
        kind: kind.into(),
        place: d.place.clone(),
        message: format!("{}: {}", d.line, d.what),
        source: Some(d.source.clone()),
        // (Its file address: the runs' addresses differ.)
        pc: format!("{at:#x}"),
        module: Some(spectra::short(program).to_string()),
        offset: Some(format!("{at:#x}")),
        scores: [("importance", s.importance), ("increase", s.increase), ("failure", s.failure), ("context", s.context)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), (v * 1e6).round() / 1e6))
            .collect(),
        failed_tests: Some(r.counts.f),
        passed_tests: Some(r.counts.s),
        observed_failed: Some(r.counts.f_obs),
        observed_passed: Some(r.counts.s_obs),
        ..Finding::default()
    }
}

/// The report of the runs `ran` of `tests`, predicates kept at `confidence` (percent, and its
/// z).
pub fn build(tests: &[Test], ran: Vec<super::Ran>, program: &str, metric: Metric, top: usize, confidence: (u32, f64)) -> Report {
    let mut report = Report { tool: "cbi".into(), schema: VERSION, ..Report::default() };
    let runs = match read_runs(tests, &ran) {
        Ok(r) => r,
        Err(why) => {
            report.result = "cannot-run".into();
            report.reason = why;
            return report;
        }
    };
    let fails = runs.iter().filter(|r| !r.0).count();
    let passes = runs.len() - fails;
    if fails == 0 || passes == 0 {
        report.result = "no-failure".into();
        report.reason = if fails == 0 {
            format!("all {} tests pass: there is no failure to isolate", runs.len())
        } else {
            format!("all {} tests fail: predicates are ranked against passing tests too", runs.len())
        };
        return report;
    }
    let (preds, data) = data(&runs, confidence.1);
    let all = vec![true; data.runs.len()];
    let ranked = score::rank(&data, &all);
    // (What a suite too small for the confidence asked would rank without it.)
    let unsure = score::rank(&score::Data { z: 0.0, ..data.clone() }, &all).len() - ranked.len();
    let selected = score::eliminate(&data);
    let blocks = |run: &super::RunOutcome, i: usize| predicates::blocks_file(&counts_of(run, i));
    let baseline = spectra::rank(tests, ran, program, metric, &blocks);
    let mut describer = Describer { program, sources: HashMap::new(), shared: HashSet::new() };
    let mut by_line: HashMap<(String, u32), BTreeSet<u64>> = HashMap::new();
    for (p, _) in preds.iter().filter(|(p, _)| p.kind == Kind::Branch) {
        if let Some((file, line, _)) = describer.line_of(p.at) {
            by_line.entry((file, line)).or_default().insert(p.at);
        }
    }
    describer.shared = by_line.into_values().filter(|s| s.len() > 1).flatten().collect();
    let mut describe = |id: usize| describer.describe(&preds[id].0, &preds[id].1);
    let failing_name = |i: usize| tests[i].name.clone();
    let mut findings = Vec::new();
    for (k, s) in selected.iter().enumerate() {
        let d = describe(s.ranked.pred);
        let mut f = finding("selected predicate", &s.ranked, &d, preds[s.ranked.pred].0.at, program);
        f.rank = Some(k as u32 + 1);
        f.explains = s.explains.iter().map(|&i| failing_name(i)).collect();
        f.tied_with = s.tied_with.iter().map(|&p| describe(p)).map(|t| format!("{}: {}", t.line, t.what)).collect();
        f.baseline = baseline.findings.iter().find(|b| b.place == d.line).map(|b| {
            format!("spectra ranks its line {} by {} ({:.3})", b.rank.unwrap_or(0), metric.name(), b.scores.get(metric.name()).copied().unwrap_or(0.0))
        });
        findings.push(f);
    }
    for (r, rank) in ranked.iter().zip(ranks(&ranked)).take(top) {
        let d = describe(r.pred);
        let mut f = finding("ranked predicate", r, &d, preds[r.pred].0.at, program);
        f.rank = Some(rank);
        findings.push(f);
    }
    findings.extend(baseline.findings.iter().take(top).cloned());
    let explained: usize = selected.iter().map(|s| s.explains.len()).sum();
    let sites = data.site_of.iter().max().map_or(0, |m| m + 1);
    let failing: Vec<String> = runs.iter().enumerate().filter(|(_, r)| !r.0).map(|(i, _)| failing_name(i)).collect();
    report.summary = Some(format!(
        "{} tests: {fails} failed ({}), {passes} passed; {} predicates at {sites} sites the runs reached, {} with an Increase above 0{}; the elimination selected {}, explaining {explained} of the {fails} failing tests",
        runs.len(),
        failing.join(", "),
        preds.len(),
        ranked.len(),
        if confidence.0 == 0 { String::new() } else { format!(" at {}% confidence ({unsure} more below it)", confidence.0) },
        selected.len(),
    ));
    report.result = if ranked.is_empty() { "inconclusive".into() } else { "found".into() };
    if ranked.is_empty() && unsure > 0 {
        report.reason = format!(
            "no predicate has an Increase above 0 at {}% confidence ({unsure} have one above 0: too few tests to be sure of them; --confidence=0 ranks them)",
            confidence.0
        );
    } else if ranked.is_empty() {
        report.reason = "no predicate is true in the failing tests more often than its site is reached in them".into();
    }
    report.findings = findings;
    report
}
