//! SARIF 2.1.0 documents of the searches' reports (`report::model`), on the typed structures
//! of `report::sarif`: one rule per tool, with help; a result per finding at its place, with a
//! code flow: a race's two accesses, or the chain of runs that led to a root cause.

use crate::report::model::{Finding, Report};
pub use crate::report::sarif::file_line;
use crate::report::sarif::{self as s, CodeFlow, Location, Message, SarifResult};

/// The rule a tool's findings are results of.
pub struct Rule {
    pub id: &'static str,
    pub description: &'static str,
    /// What to do about a result.
    pub help: &'static str,
}

impl Rule {
    pub fn sarif(&self) -> s::Rule {
        s::Rule {
            id: self.id,
            short_description: Message::new(self.description),
            full_description: Message::new(self.description),
            help: Message::new(self.help),
        }
    }
}

/// A SARIF 2.1.0 document of a report: one rule, and a result (error) per finding.
pub fn document(rule: Rule, report: &Report) -> String {
    let results = report.findings.iter().enumerate().map(|(k, f)| result(&rule, report, f, k == 0)).collect();
    s::document(vec![rule.sarif()], results)
}

/// A finding as a result: at its place where it has a line; a race's two accesses, earlier
/// first, as a code flow, or for the headline finding the chain of runs (each run's failure,
/// then the finding).
fn result(rule: &Rule, report: &Report, f: &Finding, headline: bool) -> SarifResult {
    let locations = file_line(&f.place).map(|_| Location::at(&f.place, None)).into_iter().collect();
    let mut code_flows = Vec::new();
    if let Some(earlier) = f.earlier_place.as_ref().filter(|e| file_line(e).is_some() && file_line(&f.place).is_some()) {
        let what = |a: &Option<String>| a.clone().unwrap_or_default();
        code_flows.push(CodeFlow::of([(earlier.clone(), what(&f.earlier_access)), (f.place.clone(), what(&f.access))]));
    } else if headline && !report.chain.is_empty() {
        code_flows.push(chain_flow(report, f));
    }
    SarifResult {
        rule_id: rule.id,
        level: "error",
        message: Message::new(f.message.clone()),
        locations,
        related_locations: Vec::new(),
        partial_fingerprints: Default::default(),
        code_flows,
    }
}

/// The chain of runs of `report` as a code flow: each run's failure at its place ("run 1:
/// SIGSEGV at ..."; "run 2: no failure"), then `f` itself.
pub fn chain_flow(report: &Report, f: &Finding) -> CodeFlow {
    let runs = report.chain.iter().map(|step| match &step.crash {
        Some(c) => (crash_place(c).to_string(), format!("run {}: {c}", step.run)),
        None => (String::new(), format!("run {}: no failure", step.run)),
    });
    CodeFlow::of(runs.chain(std::iter::once((f.place.clone(), format!("{}: {}", f.kind, f.place)))))
}

/// The place of a run's failure as the chain says it ("SIGSEGV at 0x401000 a.c:31 (f)").
fn crash_place(crash: &str) -> &str {
    crash.split_once(" at ").and_then(|(_, rest)| rest.split_once(' ')).map_or("", |(_, place)| place)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_crash_is_placed_at_its_source_line() {
        assert_eq!(super::crash_place("SIGSEGV at 0x401000 records.c:31 (call)"), "records.c:31 (call)");
        assert_eq!(super::crash_place("no failure"), "");
    }
}
