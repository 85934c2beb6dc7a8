//! SARIF 2.1.0 as typed serde structures: the part of the format rtgrind's reports use (one
//! run of one tool with its rules; results with locations, related locations, partial
//! fingerprints and code flows). The tools' and triage's documents are built from these and
//! serialised by serde_json, so a document is well-formed by construction; the tests validate
//! them against the official schema.

use serde::Serialize;
use std::collections::BTreeMap;

pub const VERSION: &str = "2.1.0";
pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Log {
    pub version: &'static str,
    #[serde(rename = "$schema")]
    pub schema: &'static str,
    pub runs: Vec<Run>,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Run {
    pub tool: Tool,
    pub results: Vec<SarifResult>,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Tool {
    pub driver: Driver,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Driver {
    pub name: &'static str,
    pub version: &'static str,
    pub rules: Vec<Rule>,
}

/// A kind of result, with the text a viewer shows and help on what to do.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    pub id: &'static str,
    pub short_description: Message,
    pub full_description: Message,
    pub help: Message,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Message {
    pub text: String,
}

impl Message {
    pub fn new(text: impl Into<String>) -> Message {
        Message { text: text.into() }
    }
}

/// A result (SARIF's `result`; named apart from `std::result::Result`).
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SarifResult {
    pub rule_id: &'static str,
    pub level: &'static str,
    pub message: Message,
    pub locations: Vec<Location>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub related_locations: Vec<Location>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub partial_fingerprints: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub code_flows: Vec<CodeFlow>,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Location {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub physical_location: Option<PhysicalLocation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
}

impl Location {
    /// At a "file:line (function)" place (none where it has no line: a message only), with
    /// `text` if any.
    pub fn at(place: &str, text: Option<String>) -> Location {
        let physical_location =
            file_line(place).map(|(uri, line)| PhysicalLocation { artifact_location: ArtifactLocation { uri }, region: Region { start_line: line } });
        Location { id: None, physical_location, message: text.map(Message::new) }
    }
}

#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PhysicalLocation {
    pub artifact_location: ArtifactLocation,
    pub region: Region,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct ArtifactLocation {
    pub uri: String,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Region {
    pub start_line: u64,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CodeFlow {
    pub thread_flows: Vec<ThreadFlow>,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct ThreadFlow {
    pub locations: Vec<ThreadFlowLocation>,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct ThreadFlowLocation {
    pub location: Location,
}

impl CodeFlow {
    /// One thread flow through `steps` (place, what happened there).
    pub fn of(steps: impl IntoIterator<Item = (String, String)>) -> CodeFlow {
        let locations = steps.into_iter().map(|(place, text)| ThreadFlowLocation { location: Location::at(&place, Some(text)) }).collect();
        CodeFlow { thread_flows: vec![ThreadFlow { locations }] }
    }
}

/// A log of one run of rtgrind with `rules`, holding `results`, as JSON text.
pub fn document(rules: Vec<Rule>, results: Vec<SarifResult>) -> String {
    let driver = Driver { name: "rtgrind", version: env!("CARGO_PKG_VERSION"), rules };
    let log = Log { version: VERSION, schema: SCHEMA, runs: vec![Run { tool: Tool { driver }, results }] };
    serde_json::to_string(&log).expect("a SARIF log serializes")
}

/// `("file", line)` of a "file:line (function)" place.
pub fn file_line(place: &str) -> Option<(String, u64)> {
    let loc = place.split(" (").next()?;
    let (file, line) = loc.rsplit_once(':')?;
    Some((file.to_string(), line.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_split_into_file_and_line() {
        assert_eq!(file_line("copy_paste.c:15 (main)"), Some(("copy_paste.c".into(), 15)));
        assert_eq!(file_line("strlen+0x10 in libc.so.6"), None);
    }

    /// Empty parts are left out, names are SARIF's camelCase.
    #[test]
    fn a_result_serializes_as_sarif_names_it() {
        let r = SarifResult {
            rule_id: "r",
            level: "error",
            message: Message::new("m"),
            locations: vec![Location::at("a.c:3 (f)", None)],
            related_locations: Vec::new(),
            partial_fingerprints: BTreeMap::new(),
            code_flows: Vec::new(),
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"ruleId": "r", "level": "error", "message": {"text": "m"}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": "a.c"}, "region": {"startLine": 3}}}]})
        );
    }
}
