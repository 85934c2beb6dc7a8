//! A triage's machine outputs, each from the one model (`model::Triage`), serialised by a
//! library: SARIF 2.1.0 (one result per group, its representative's chain of runs as a code
//! flow; `serde_json`) for code-scanning dashboards, and JUnit XML (one test case per input,
//! failing when its root cause is new against the baseline; `quick-xml`'s serde) for CI.

use super::model::{Group, Input, Triage};
use crate::report::sarif::{CodeFlow, Location, Message, SarifResult};
use crate::tools::sarif::{chain_flow, Rule};
use serde::Serialize;

/// The rule of a triage's results: a root cause behind crashing inputs, by the tool that found
/// them.
fn rule(t: &Triage) -> Rule {
    match t.tool.as_str() {
        "race" => Rule {
            id: "harmful-data-race",
            description: "The harmful data race (or, with none behind it, the first point of memory corruption) behind crashing inputs",
            help: "Order the race's two accesses; every input of the group crashed in a schedule whose failure this race's write defined.",
        },
        _ => Rule {
            id: "first-point-of-memory-corruption",
            description: "The first point of memory corruption behind crashing inputs, found by execution suppression",
            help: "Fix the write at this line: the group's inputs crash, at the crash sites listed, because of it; a member confirmed did not fail with it suppressed from the start.",
        },
    }
}

/// The SARIF document: one result per group.
pub fn sarif(t: &Triage) -> String {
    let rule = rule(t);
    let results = t.groups.iter().map(|g| sarif_result(t, g, rule.id)).collect();
    crate::report::sarif::document(vec![rule.sarif()], results)
}

/// A group as a SARIF result: at its root cause, fingerprinted, its crash sites as related
/// locations, and its first member's runs (each failure, then the root cause) as a code flow.
fn sarif_result(t: &Triage, g: &Group, rule_id: &'static str) -> SarifResult {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let message = format!(
        "{} behind {} crashing input{} ({} crash site{}): {}",
        g.place,
        g.members.len(),
        plural(g.members.len()),
        g.crash_sites.len(),
        plural(g.crash_sites.len()),
        g.members.join(", ")
    );
    let related = g
        .crash_sites
        .iter()
        .enumerate()
        .map(|(k, site)| Location { id: Some(k as u64), ..Location::at(site.split(" at ").nth(1).unwrap_or(site), Some(site.clone())) })
        .collect();
    let representative = g.members.first().and_then(|m| t.inputs.iter().find(|i| &i.path == m));
    let root = representative.and_then(|i| i.report.as_ref()).and_then(|r| Some((r, r.findings.first()?)));
    let flow = match root {
        Some((report, finding)) => chain_flow(report, finding),
        None => CodeFlow::of([(g.place.clone(), format!("root cause: {}", g.place))]),
    };
    SarifResult {
        rule_id,
        level: "error",
        message: Message::new(message),
        locations: vec![Location::at(&g.place, Some(g.place.clone()))],
        related_locations: related,
        partial_fingerprints: [("rtgrindRootCause/v1".to_string(), g.fingerprint.clone())].into(),
        code_flows: vec![flow],
    }
}

#[derive(Serialize)]
#[serde(rename = "testsuite")]
struct Suite {
    #[serde(rename = "@name")]
    name: String,
    #[serde(rename = "@timestamp")]
    timestamp: String,
    #[serde(rename = "@hostname")]
    hostname: String,
    #[serde(rename = "@tests")]
    tests: usize,
    #[serde(rename = "@failures")]
    failures: usize,
    #[serde(rename = "@errors")]
    errors: usize,
    #[serde(rename = "@time")]
    time: String,
    properties: Properties,
    testcase: Vec<Case>,
    #[serde(rename = "system-out")]
    system_out: String,
    #[serde(rename = "system-err")]
    system_err: String,
}

#[derive(Serialize)]
struct Properties {
    property: Vec<Property>,
}

#[derive(Serialize)]
struct Property {
    #[serde(rename = "@name")]
    name: String,
    #[serde(rename = "@value")]
    value: String,
}

#[derive(Serialize)]
struct Case {
    #[serde(rename = "@name")]
    name: String,
    #[serde(rename = "@classname")]
    classname: String,
    #[serde(rename = "@time")]
    time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure: Option<Failure>,
}

#[derive(Serialize)]
struct Failure {
    #[serde(rename = "@message")]
    message: String,
    #[serde(rename = "@type")]
    kind: String,
    #[serde(rename = "$text")]
    text: String,
}

/// The JUnit XML document; `timestamp` is when the triage started (ISO 8601, UTC, no zone).
pub fn junit(t: &Triage, timestamp: &str) -> String {
    let new = |i: &Input| i.group.as_ref().is_some_and(|g| t.comparison.as_ref().is_some_and(|c| c.new.contains(g)));
    let place = |i: &Input| t.groups.iter().find(|g| Some(&g.fingerprint) == i.group.as_ref()).map_or(String::new(), |g| g.place.clone());
    let cases: Vec<Case> = t
        .inputs
        .iter()
        .map(|i| Case {
            name: i.path.clone(),
            // (A test case's class: the root cause's group, or how the input went.)
            classname: match &i.group {
                Some(g) => format!("rtgrind.triage.{g}"),
                None => format!("rtgrind.triage.{}", serde_json::to_value(i.status).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()),
            },
            time: format!("{:.3}", i.seconds),
            failure: new(i).then(|| Failure {
                message: format!("new root cause: {}", place(i)),
                kind: "new-root-cause".into(),
                text: i.crash.clone().unwrap_or_default(),
            }),
        })
        .collect();
    let suite = Suite {
        name: "rtgrind triage".into(),
        timestamp: timestamp.into(),
        hostname: hostname(),
        tests: cases.len(),
        failures: cases.iter().filter(|c| c.failure.is_some()).count(),
        errors: 0,
        time: format!("{:.3}", t.seconds),
        properties: Properties { property: vec![Property { name: "command".into(), value: t.command.join(" ") }] },
        testcase: cases,
        system_out: String::new(),
        system_err: String::new(),
    };
    let body = quick_xml::se::to_string(&suite).expect("the JUnit model serializes");
    format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{body}\n")
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).ok().filter(|h| !h.is_empty()).unwrap_or_else(|| "localhost".into())
}

/// The time `t` as ISO 8601 in UTC without a zone (what the JUnit schema wants):
/// "2026-11-28T07:05:00".
pub fn iso8601(t: std::time::SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string().trim_end_matches('Z').to_string()
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn times_are_iso_8601_without_a_zone() {
        assert_eq!(super::iso8601(UNIX_EPOCH + Duration::from_secs(1_795_849_500)), "2026-11-28T07:05:00");
    }
}
