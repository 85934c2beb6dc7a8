//! A triage's machine outputs, each from the one model (`model::Triage`), serialised by a
//! library: SARIF 2.1.0 (one result per group, its representative's chain of runs as a code
//! flow; `serde_json`) for code-scanning dashboards, and JUnit XML (one test case per input,
//! failing when its root cause is new against the baseline; `quick-xml`'s serde) for CI.

use super::model::{Group, Input, Triage};
use crate::tools::sarif::file_line;
use serde::Serialize;
use serde_json::json;

const RULE: &str = "first-point-of-memory-corruption";

/// A SARIF location of a "file:line (function)" place, or one that only says `text`.
fn location(place: &str, text: &str) -> serde_json::Value {
    match file_line(place) {
        Some((uri, line)) => json!({"physicalLocation": {"artifactLocation": {"uri": uri}, "region": {"startLine": line}}, "message": {"text": text}}),
        None => json!({"message": {"text": text}}),
    }
}

/// The SARIF document.
pub fn sarif(t: &Triage) -> String {
    let results: Vec<serde_json::Value> = t.groups.iter().map(|g| sarif_result(t, g)).collect();
    json!({
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [{
            "tool": {"driver": {
                "name": "rtgrind",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": [{"id": RULE, "shortDescription": {"text": "The first point of memory corruption behind crashing inputs, found by execution suppression"}}],
            }},
            "results": results,
        }],
    })
    .to_string()
}

/// A group as a SARIF result: at its root cause, fingerprinted, its crash sites as related
/// locations, and its first member's runs (each failure, then the root cause) as a code flow.
fn sarif_result(t: &Triage, g: &Group) -> serde_json::Value {
    let message = format!(
        "first point of memory corruption at {} behind {} crashing input{} ({} crash site{}): {}",
        g.place,
        g.members.len(),
        if g.members.len() == 1 { "" } else { "s" },
        g.crash_sites.len(),
        if g.crash_sites.len() == 1 { "" } else { "s" },
        g.members.join(", ")
    );
    let related: Vec<serde_json::Value> = g
        .crash_sites
        .iter()
        .enumerate()
        .map(|(k, site)| {
            let mut l = location(site.split(" at ").nth(1).unwrap_or(site), site);
            l["id"] = json!(k);
            l
        })
        .collect();
    let mut flow: Vec<serde_json::Value> = Vec::new();
    let representative = g.members.first().and_then(|m| t.inputs.iter().find(|i| &i.path == m));
    if let Some(report) = representative.and_then(|i| i.report.as_ref()) {
        for step in &report.chain {
            let what = match &step.crash {
                Some(c) => format!("run {}: {c}", step.run),
                None => format!("run {}: no failure", step.run),
            };
            flow.push(json!({"location": location(step.crash.as_deref().map_or("", crash_place), &what)}));
        }
    }
    flow.push(json!({"location": location(&g.place, &format!("root cause: {}", g.place))}));
    json!({
        "ruleId": RULE,
        "level": "error",
        "message": {"text": message},
        "locations": [location(&g.place, &g.place)],
        "relatedLocations": related,
        "partialFingerprints": {"rtgrindRootCause/v1": g.fingerprint},
        "codeFlows": [{"threadFlows": [{"locations": flow}]}],
    })
}

/// The place of a run's failure as the chain says it ("SIGSEGV at 0x401000 a.c:31 (f)").
fn crash_place(crash: &str) -> &str {
    crash.split_once(" at ").and_then(|(_, rest)| rest.split_once(' ')).map_or("", |(_, place)| place)
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

    #[test]
    fn a_crash_is_placed_at_its_source_line() {
        assert_eq!(super::crash_place("SIGSEGV at 0x401000 records.c:31 (call)"), "records.c:31 (call)");
        assert_eq!(super::crash_place("no failure"), "");
    }
}
