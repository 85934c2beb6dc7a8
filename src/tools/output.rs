//! How a search's report reaches the user, the same for every tool: its text on rtgrind's
//! messages, and on request SARIF then JSON on standard output and the chain of runs as a
//! Graphviz graph in a file; call stacks cut to `--num-callers` in all of them.

use crate::report::model::Report;
use crate::report::render;
use std::path::PathBuf;

/// What the user asked of the report (the search options).
#[derive(Clone, Debug)]
pub struct Output {
    pub json: bool,
    pub sarif: bool,
    pub dot: Option<PathBuf>,
    /// Frames of a call stack said (Valgrind's `--num-callers`).
    pub num_callers: usize,
    /// Findings said in text, the first ones (a ranking's top: `--top`); all by default.
    pub text_findings: Option<usize>,
}

impl Output {
    pub fn of(cli: &crate::cli::Cli) -> Output {
        Output {
            json: cli.search.json,
            sarif: cli.search.sarif,
            dot: cli.failure.dot.clone(),
            num_callers: usize::from(cli.search.num_callers),
            text_findings: None,
        }
    }
}

/// Gives `report` as asked: each text line to `say`, SARIF and JSON to stdout, the graph to
/// `--dot`'s file.
pub fn emit(report: &Report, rule: super::sarif::Rule, out: &Output, mut say: impl FnMut(&str)) {
    let report = &as_given(report, out.num_callers);
    let mut text = report.clone();
    if let Some(n) = out.text_findings.filter(|n| *n < report.findings.len()) {
        text.findings.truncate(n);
        text.summary = text.summary.map(|s| format!("{s}; the first {n} of {} lines said (all in --json)", report.findings.len()));
    }
    for line in render::text(&text) {
        say(&line);
    }
    if out.sarif {
        println!("{}", super::sarif::document(rule, report));
    }
    if out.json {
        println!("{}", report.to_json());
    }
    if let Some(path) = &out.dot {
        render::write_dot(path, report);
    }
}

/// The report as it is given: each call stack cut to its `n` innermost frames, the time to
/// the millisecond.
fn as_given(report: &Report, n: usize) -> Report {
    let mut r = report.clone();
    r.seconds = (r.seconds * 1000.0).round() / 1000.0;
    for f in &mut r.findings {
        f.frames.truncate(n);
        f.earlier_frames.truncate(n);
    }
    if let Some(site) = &mut r.failure {
        site.frames.truncate(n);
    }
    r
}
