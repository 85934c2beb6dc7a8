//! What a triage found, as one typed model: every input with how it went, every group of
//! inputs with one root cause. JSON (`serde`) is this model; the terminal's table is made from
//! it too.

use crate::report::model::Report;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const VERSION: u32 = 1;

/// A triage of a corpus.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct Triage {
    /// The JSON format's version (`VERSION`): a change that removes or renames a field increments it.
    pub schema: u32,
    /// The tool that found each input's root cause (`suppress`, `race`).
    pub tool: String,
    /// The program and its arguments, `@@` where an input's path goes.
    pub command: Vec<String>,
    /// Every input, in the order given (a directory's in name order).
    pub inputs: Vec<Input>,
    /// The inputs grouped by root cause, in the order of their first members.
    pub groups: Vec<Group>,
    /// With `--shard=I/N`: this is shard I (from 0) of N.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<(u64, u64)>,
    /// With `--baseline`: which root causes are new, fixed and unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    /// Wall time of the triage, in seconds (of a merge: the shards' added up).
    pub seconds: f64,
}

/// How an input went.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// It fails in every repeatable run, and the tool found its root cause.
    #[default]
    RootCause,
    /// It fails in some repeatable runs only (its root cause found from one that failed).
    Flaky,
    /// It fails, but the tool found no root cause (the report says why).
    Inconclusive,
    /// It ran to its end in every run.
    NoCrash,
    /// A run of it did not end in the time allowed (`-t`): killed.
    Timeout,
    /// It could not be read.
    Unreadable,
}

impl Status {
    /// Whether the input has a root cause (and so a group).
    pub fn has_root_cause(self) -> bool {
        matches!(self, Status::RootCause | Status::Flaky)
    }

    pub fn describe(self) -> &'static str {
        match self {
            Status::RootCause => "root cause found",
            Status::Flaky => "flaky",
            Status::Inconclusive => "no root cause found",
            Status::NoCrash => "no crash",
            Status::Timeout => "timeout",
            Status::Unreadable => "unreadable",
        }
    }
}

/// One input.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct Input {
    /// Its path, as given (or found in a directory given).
    pub path: String,
    /// SHA-256 of its content, hex.
    pub sha256: String,
    /// How it went: whether it crashed, and whether a root cause was found and checked.
    pub status: Status,
    /// Its place among all the inputs of the triage (shards' results merge in this order).
    pub index: usize,
    /// Of the repeatable runs made to reproduce it (seeds 0, 1, ...), how many failed.
    pub failed_runs: u32,
    /// Runs of the program made for it in all (reproducing it, then the search).
    pub runs: u32,
    /// Seconds its runs took.
    #[serde(default)]
    pub seconds: f64,
    /// The seed of the runs its root cause was searched in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Its group checked: with the group's root cause suppressed from the start, it did not
    /// fail (true) or still failed (false: it has a group of its own); None: not checked (one
    /// that fails only with redzones or a layout, or whose check did not end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed: Option<bool>,
    /// Why its check gave no answer ("with the root cause suppressed from the start, it did
    /// not end in 5 s (killed)").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unchecked: Option<String>,
    /// How its first failing run failed ("SIGSEGV at records.c:40 (dispatch)").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash: Option<String>,
    /// The fingerprint of its root cause: the group it is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Why there is no root cause (inconclusive, unreadable), or what was killed (timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The schedule of its failing probe, kept for its check (races; not in the results).
    #[serde(skip)]
    #[schemars(skip)]
    pub schedule: Option<std::path::PathBuf>,
    /// The tool's report for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<Report>,
}

/// Inputs with one root cause.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct Group {
    /// The stable name of the root cause: a hash of `what`.
    pub fingerprint: String,
    /// What the fingerprint is made of: the module, the function and the offset of the
    /// root-cause instruction in it, its source line: "records:add_record+0x4b:records.c:41".
    pub what: String,
    /// Where the root cause is reported ("records.c:41 (add_record), inside ...").
    pub place: String,
    /// Its members' paths, in order; the first is the representative.
    pub members: Vec<String>,
    /// Where its members crashed, each place once.
    pub crash_sites: Vec<String>,
    /// Members re-run with the root cause suppressed from the start that then did not fail.
    pub confirmed: usize,
    /// Members not checked: they failed only with redzones or a layout (`--expose`), or
    /// their check did not end.
    #[serde(default)]
    pub unchecked: usize,
}

/// How group `g`'s check went, for people: "2 of 3 confirmed".
pub fn checks(g: &Group) -> String {
    let unchecked = if g.unchecked > 0 { format!(", {} not checked", g.unchecked) } else { String::new() };
    format!("{} of {} confirmed{unchecked}", g.confirmed, g.members.len())
}

/// A triage against an earlier one (`--baseline`): fingerprints of root causes.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct Comparison {
    /// The baseline's file.
    pub baseline: String,
    /// Fingerprints of root causes the baseline does not have (they make the exit status 1).
    pub new: Vec<String>,
    /// Fingerprints of the baseline's root causes this triage does not have.
    pub fixed: Vec<String>,
    /// Fingerprints of root causes both have.
    pub unchanged: Vec<String>,
}
