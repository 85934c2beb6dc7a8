//! The ranking (dissertation 004 §2.4): a line's suspiciousness is the number of failing tests
//! with an IVMP at it, ties broken by Tarantula, ties left ranked pessimistically (as
//! `spectra`). With `--faults=N`, the iterative variant of ch. 3 this tool implements: after a
//! ranking, the failing tests with an IVMP at its top line are taken as explained by that
//! line (as if it were fixed, they pass) and the lines are ranked again over the failing tests
//! left, their IVMPs looked up rather than searched again, up to N rankings.

use super::search::{Candidate, VrSearch};
use crate::report::model::{Finding, Ivmp, Report, VERSION};
use crate::tools::spectra::{line_counts, rank_pessimistically, read_lines, scores, short, source_line};
use std::collections::{BTreeSet, HashMap};

pub type Line = (String, u32);

/// The IVMPs found in one failing test, by line index (`search::Suite::lines`).
pub struct Found {
    pub test: usize,
    pub lines: HashMap<usize, Candidate>,
}

/// The report of a finished search.
pub fn report(s: &VrSearch, faults: u32) -> Report {
    let mut report = Report { tool: "vr".into(), schema: VERSION, ..Report::default() };
    if let Some(why) = &s.error {
        report.result = "cannot-run".into();
        report.reason = why.clone();
        return report;
    }
    let Some(suite) = &s.suite else {
        report.result = "cannot-run".into();
        report.reason = "the suite did not run".into();
        return report;
    };
    let n = suite.outcomes.len();
    let fails = suite.outcomes.iter().filter(|o| !o.passed).count();
    if fails == 0 || fails == n {
        report.result = "no-failure".into();
        report.reason = if fails == 0 {
            format!("all {n} tests pass: there is no failure to localize")
        } else {
            format!("all {n} tests fail: a ranking needs passing tests too")
        };
        return report;
    }
    let found = s.found();
    let mut failing: BTreeSet<usize> = found.iter().map(|f| f.test).collect();
    let mut sources: HashMap<String, Vec<String>> = HashMap::new();
    for round in 1..=faults.max(1) {
        let mut findings = rank(s, &found, &failing, &mut sources);
        let Some(top) = findings.first().map(|f| f.place.clone()) else { break };
        if faults > 1 {
            findings.iter_mut().for_each(|f| f.fault = Some(round));
        }
        let top_line = suite.lines.iter().position(|l| place(l) == top);
        report.findings.extend(findings);
        let explained: Vec<usize> = found.iter().filter(|f| top_line.is_some_and(|l| f.lines.contains_key(&l))).map(|f| f.test).collect();
        if explained.is_empty() {
            break;
        }
        failing.retain(|t| !explained.contains(t));
        if failing.is_empty() {
            break;
        }
    }
    report.result = "found".into();
    summarize(&mut report, s, &found);
    report
}

fn place(l: &Line) -> String {
    format!("{}:{}", short(&l.0), l.1)
}

/// The lines the `failing` tests ran, ranked over them and every passing test.
fn rank(s: &VrSearch, found: &[Found], failing: &BTreeSet<usize>, sources: &mut HashMap<String, Vec<String>>) -> Vec<Finding> {
    let suite = s.suite.as_ref().expect("ran");
    let passes = suite.outcomes.iter().filter(|o| o.passed).count() as u32;
    let counts = line_counts(&suite.outcomes, |i| suite.outcomes[i].passed || failing.contains(&i));
    let index: HashMap<&Line, usize> = suite.lines.iter().enumerate().map(|(k, l)| (l, k)).collect();
    let mut findings: Vec<Finding> = counts
        .into_iter()
        .filter(|(_, (f, _))| *f > 0)
        .map(|(line, (f, p))| {
            let ivmps: Vec<Ivmp> = index
                .get(line)
                .map(|k| found.iter().filter(|x| failing.contains(&x.test)).filter_map(|x| Some(ivmp(s, x.test, x.lines.get(k)?))).collect())
                .unwrap_or_default();
            let tarantula = scores(f, p, failing.len() as u32, passes).1;
            Finding {
                kind: "value replacement line".into(),
                place: place(line),
                message: source_line(sources.entry(line.0.clone()).or_insert_with(|| read_lines(&line.0)), line.1),
                scores: [("ivmp".to_string(), ivmps.len() as f64), ("tarantula".to_string(), tarantula)].into(),
                failed_tests: Some(f),
                passed_tests: Some(p),
                ivmps,
                ..Finding::default()
            }
        })
        .collect();
    // (Tarantula to 1e-9: equal fractions computed from other counts differ in the last bit.)
    let key = |f: &Finding| (f.scores["ivmp"], (f.scores["tarantula"] * 1e9).round());
    findings.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        kb.0.total_cmp(&ka.0).then(kb.1.total_cmp(&ka.1))
    });
    rank_pessimistically(&mut findings, key);
    findings
}

/// An IVMP as reported.
fn ivmp(s: &VrSearch, test: usize, c: &Candidate) -> Ivmp {
    let suite = s.suite.as_ref().expect("ran");
    let site = &suite.profiles[test].sites[c.site];
    Ivmp {
        test: s.tests[test].name.clone(),
        pc: format!("{:#x}", c.pc),
        instance: c.instance,
        instruction: site.insn.clone(),
        operand: site.uses.get(c.op).map_or(String::new(), |u| u.0.clone()),
        use_index: c.op as u32,
        from: c.from,
        to: c.to,
    }
}

/// The report's figures: runs, replacements tried and avoided, and the one-line summary.
fn summarize(report: &mut Report, s: &VrSearch, found: &[Found]) {
    let suite = s.suite.as_ref().expect("ran");
    let tried: u64 = s.searches.iter().map(|x| x.tried).sum();
    let naive: u64 = s.searches.iter().map(|x| x.cands.len() as u64).sum();
    let forward: u64 = s.searches.iter().map(|x| x.forward_runs).sum();
    let every_value: u64 = s.searches.iter().map(|x| x.every_value).sum();
    report.tried = Some(tried);
    report.candidates = Some(naive);
    let skipped: u64 = s.searches.iter().map(|x| x.skipped).sum();
    report.runs_avoided = Some(skipped);
    report.stopped = Some(s.searches.iter().map(|x| x.stopped).sum());
    report.how = Some(format!("forked from {forward} forward runs of the failing tests"));
    let failing: Vec<&str> = found.iter().map(|f| s.tests[f.test].name.as_str()).collect();
    let with = found.iter().filter(|f| !f.lines.is_empty()).count();
    let late: Vec<&str> = s.searches.iter().filter(|x| x.out_of_time).map(|x| s.tests[x.test].name.as_str()).collect();
    let mut summary = format!(
        "{} tests: {} failed ({}), {} passed; {with} failing tests have an IVMP; {tried} replacements run, each forked at its instance from one of {forward} forward runs (searching every instance of every line from the start would run the program {naive} times, {every_value} with every value of the profiles rather than 4; stopping at a line's first IVMP in a test avoided {skipped}); ranked by failing tests with an IVMP, then Tarantula (ties take their worst rank)",
        suite.outcomes.len(),
        failing.len(),
        failing.join(", "),
        suite.outcomes.len() - failing.len(),
    );
    let capped: BTreeSet<u64> = suite.profiles.iter().flat_map(|p| &p.sites).filter(|x| x.capped).map(|x| x.file_addr).collect();
    if !capped.is_empty() {
        summary +=
            &format!("; {} instructions read more than {} distinct values, of which the profile kept the first", capped.len(), super::profile::MAX_VALUES);
    }
    if !late.is_empty() {
        let left = naive.saturating_sub(tried + skipped);
        summary += &format!("; the time budget ended the search in {} ({left} replacements not tried)", late.join(", "));
    }
    report.summary = Some(summary);
}
