//! One report model for every search (issue 22): what a tool found, how the search went, and
//! the chain of runs. `--json` prints it as one line (`VERSION` says its format; every field is
//! documented in the JSON Schema `docs/schemas/report.schema.json`, made from this file's doc
//! comments by schemars: `rtgrind schema report`); the text report and the Graphviz chain
//! (`report::render`) and SARIF (`tools::sarif`) are renderings of it.
//! This file depends on serde and schemars alone, so the integration tests parse the JSON with it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The JSON format's version: a change that removes or renames a field increments it.
pub const VERSION: u32 = 1;

/// A search's report.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct Report {
    /// The tool (`suppress`, `switch`, `race`, `reorder`, `spectra`, `cbi`, `vr`).
    pub tool: String,
    /// How the search ended: `root-cause`, `found`, `no-failure`, `not-reproducible`, `already-fails`,
    /// `inconclusive`, `exhausted`, `cannot-run`.
    pub result: String,
    /// The JSON format's version (`VERSION`): a change that removes or renames a field increments it.
    pub schema: u32,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Why the search ended without an answer (empty with one).
    pub reason: String,
    /// The answers: root causes, critical predicates; the first is the headline.
    pub findings: Vec<Finding>,
    /// Runs of the program in all.
    pub runs: u32,
    /// Of `runs`, the runs made again to trace a suppression run's failure (suppress).
    pub traced_again: u32,
    /// Candidates the search tried (switch), or layouts (reorder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tried: Option<u64>,
    /// Candidates the search had (switch: branch instances; reorder: layouts made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates: Option<u64>,
    /// Of `candidates`, those never run: the replacements a search from the start of every
    /// failing run would make that the ch. 4 reductions skipped (vr).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_avoided: Option<u64>,
    /// Wall time of the whole search, in seconds (to the millisecond).
    pub seconds: f64,
    /// The runs after the first, each with what it changed and how it ended (suppress).
    #[serde(default)]
    pub chain: Vec<Step>,
    /// The order candidates were tried in, how they were run, and how many of those runs their
    /// budget stopped (switch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<String>,
    /// How the candidates were run: a run each, or forked from one forward run (switch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub how: Option<String>,
    /// Of the runs tried, those their budget stopped (switch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<u64>,
    /// The one-line summary of a tool that has neither candidates nor a chain of runs (race:
    /// "2 data races (3 threads)").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// How `--explore` went: the schedule that failed, where it was saved and the command
    /// that replays it, or how many schedules were tried (race).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explored: Option<String>,
    /// What a layout could not move, each with why: "frame of 'f': rsp is used as a value at
    /// 0x1234" (reorder).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmoved: Vec<String>,
    /// How the original run failed: its signal, where, and the program's calls it happened
    /// under (suppress; what a grouping by crash stack uses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureSite>,
    /// The memory layout the runs had from some run on, and why (suppress: heap redzones
    /// once a run did not fail without them); the layout found, and where it was saved
    /// (reorder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
}

/// Where a run failed.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct FailureSite {
    /// "SIGSEGV", or a named failure's kind.
    pub signal: String,
    /// "file:line (function)" of the failing instruction, or its address.
    pub place: String,
    /// Guest address, hex.
    pub pc: String,
    /// For a failure inside a library: the program's call it happened in ("file:line
    /// (function)"), where a crash site is said to be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// The program's calls it happened under, innermost first: "file:line (function)" of each
    /// call (or its return address).
    pub stack: Vec<String>,
    /// Its call stack as Valgrind prints one, innermost first, at most `--num-callers` frames:
    /// "0x10913D: f (a.c:10)" (an inlined function a frame of its own at the same address;
    /// without lines "f (in /path/module)").
    #[serde(default)]
    pub frames: Vec<String>,
}

/// One answer: an instruction instance, where it is reported, and how to read it.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct Finding {
    /// What it is: "first point of memory corruption" (suppress), "critical predicate" (switch),
    /// "data race" (race), "suspicious line" (spectra), "selected predicate" and "ranked
    /// predicate" (cbi), "value replacement line" (vr).
    #[serde(default)]
    pub kind: String,
    /// Where it is reported ("file:line (function)", or the program's call into a library).
    pub place: String,
    /// A sentence saying what it is (SARIF's message).
    pub message: String,
    /// Its own line (inside a library, the library's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_place: Option<String>,
    /// The instruction, disassembled: "mov [rbp-58h],rax".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    /// Guest address, hex.
    pub pc: String,
    /// Its call stack where it ran, as `FailureSite::frames` (suppress: where the run
    /// suppressing it reached it; race: the later access's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frames: Vec<String>,
    /// The thread that ran it: 0 the main thread, then in creation order.
    pub thread: u64,
    /// Its instance: which execution of its instruction by its thread (suppress; of the
    /// program's call at `call_site` for a library's instruction, or the thread's block
    /// instance if `by_block`), or of its site over all threads (switch).
    pub instance: u64,
    /// For a library's instruction: the return address (hex) of the program's call it ran under, whose count `instance` is (suppress).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_site: Option<String>,
    /// The program's instruction it names (a library's instruction: the program's call it
    /// belongs to): the module's file name and the offset from where the module is loaded,
    /// hex. What a fingerprint of the finding is made of (triage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// With `module`: the instruction's offset from where the module is loaded (hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<String>,
    /// `instance` counts the thread's block entries, not executions of the instruction (suppress).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_block: bool,
    /// Executions of its site from it to the failure (switch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_failure: Option<u64>,
    /// The outcome the original run had there, when the switched run disagreed (switch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// It was suppressed in every instance of its instruction (suppress).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub every_instance: bool,
    /// It is a library's instruction and the program's call it belongs to was suppressed whole (suppress).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_call: bool,
    /// With `whole_call`: every call the program made from that line was suppressed (a copy in a loop) (suppress).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub every_call: bool,
    /// Suppressing it made the program loop: no run ended without the failure (suppress; never a plain root cause).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub looped: bool,
    /// Suppressing it avoided the failure but the run then failed otherwise, on nothing defined: how (suppress; never a plain root cause).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_otherwise: Option<String>,
    /// The command that replays it (switch), or that finds the root cause under the layout
    /// found (reorder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
    /// Dynamic dependences from it to the failure (switch, `--order=prior`; none: the failure
    /// does not depend on it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependences: Option<u32>,
    /// The address a data race is at, hex (race).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// The access at `place`: "write of 8 bytes by thread 2" (race).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<String>,
    /// The earlier access the race is with: "read of 4 bytes by thread 0" (race).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earlier_access: Option<String>,
    /// Where the earlier access is: "file:line (function)" (race).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earlier_place: Option<String>,
    /// The earlier access's guest address (hex) and thread (race).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earlier_pc: Option<String>,
    /// The earlier access's thread (race).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earlier_thread: Option<u64>,
    /// What the race's address is in: a global, a heap block and where it was allocated, a thread's stack (race).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// A race's harm test (race): "harmful", "benign" or "undecided", and why (the values
    /// each order read or left, whether the output or exit status changed too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// Why the harm test said `verdict`: the values each order read or left, whether the output or exit status changed (race).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harm: Option<String>,
    /// The last synchronization each of a race's threads performed before the race was seen
    /// ("thread 1 at a.c:9 (f); thread 2: none since it started") (race).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syncs: Option<String>,
    /// The call stack of a race's earlier access, as the harm test's reference run saw it
    /// (race; as `frames`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_frames: Vec<String>,
    /// This race is the root cause of the run's failure, and why (race).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// The line's rank in the ranking, ties ranked pessimistically: every line tied with
    /// others takes the worst of their ranks (spectra; cbi's ranked predicates by Importance;
    /// for a predicate the elimination selected, its order of selection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// The line's suspiciousness by metric: `ochiai`, `tarantula` (spectra); a predicate's
    /// `importance`, `increase`, `failure`, `context` (cbi); `ivmp` (failing tests with an
    /// IVMP at it) and `tarantula` (vr).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scores: BTreeMap<String, f64>,
    /// Failing tests that ran the line (spectra); the predicate was true in: F(P) (cbi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_tests: Option<u32>,
    /// Passing tests that ran the line (spectra); the predicate was true in: S(P) (cbi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed_tests: Option<u32>,
    /// Failing tests that reached the predicate's site, whatever it was there: F(P observed)
    /// (cbi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_failed: Option<u32>,
    /// Passing tests that reached the predicate's site: S(P observed) (cbi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_passed: Option<u32>,
    /// The text of the line at `place` (cbi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The failing tests a predicate the elimination selected explains: those left when it
    /// was selected that it is true in (cbi).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub explains: Vec<String>,
    /// The predicates exactly as important as a selected one when it was selected (cbi).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tied_with: Vec<String>,
    /// How the baseline (spectra's ranking of the same runs) ranks the predicate's line (cbi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// Interesting value mapping pairs found at the line, one per failing test that has one
    /// (vr).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ivmps: Vec<Ivmp>,
    /// Which fault of `--faults=N` this ranking is for, from 1 (vr).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<u32>,
}

/// A replacement that makes a failing test pass (vr): at one execution of an instruction of
/// the line, one value it reads replaced by another.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct Ivmp {
    /// The failing test.
    pub test: String,
    /// The instruction's guest address (hex).
    pub pc: String,
    /// Its execution the value was replaced at, from 1.
    pub instance: u64,
    /// The instruction, disassembled.
    pub instruction: String,
    /// The operand replaced (a register, or a memory operand), as disassembled.
    pub operand: String,
    /// Its index among the instruction's uses (`--vr-replace=PC:N:USE:VALUE`'s USE, with this
    /// `pc`, `instance` and `to` in a repeatable run of the test, replays it).
    pub use_index: u32,
    /// The value it read.
    pub from: i64,
    /// The value it was given instead (from the value profile).
    pub to: i64,
}

/// One run of a search's chain.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct Step {
    /// Its number, from 1 (the original run).
    pub run: u32,
    /// The places of what it suppressed anew, and how (`every-instance`, `whole-call`,
    /// `every-call`; none: those instances).
    pub suppressing_from: Vec<String>,
    /// How the points it added were suppressed: `every-call`, `every-instance`, `whole-call`; none: those instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub how: Option<String>,
    /// How it failed, if it did; else, if its budget or time limit stopped it, why.
    pub crash: Option<String>,
    /// If its budget or time limit stopped it: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// The locations its failure used, with where each was defined.
    pub used: Vec<Used>,
    /// How often each kind of suppression acted.
    pub suppressed: BTreeMap<String, u64>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
pub struct Used {
    /// The location: "rax (address)", "the 4-byte value 0xbebc205 at 0x7ffff7bbfe8c".
    pub location: String,
    /// Where the value it held was defined: "file:line (function)".
    pub defined_at: String,
}

impl Finding {
    /// Whether a race's accesses write: the later one (at `place`), the earlier one (race).
    pub fn race_writes(&self) -> (bool, bool) {
        let writes = |a: &Option<String>| a.as_deref().is_some_and(|a| a.starts_with("write"));
        (writes(&self.access), writes(&self.earlier_access))
    }
}

impl Report {
    /// The one-line JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_round_trips_through_json() {
        let r = Report {
            tool: "suppress".into(),
            result: "root-cause".into(),
            schema: VERSION,
            command: vec!["./prog".into(), "a\"b".into()],
            findings: vec![Finding { place: "a.c:3 (main)".into(), message: "first point".into(), pc: "0x401000".into(), looped: true, ..Finding::default() }],
            runs: 3,
            // (A time that reads back exactly only with serde_json's float_roundtrip: without, a
            // run's JSON said 1.2731542359999999 and read back as 1.273154236.)
            #[allow(clippy::excessive_precision)]
            seconds: 1.2731542359999999,
            chain: vec![Step { run: 1, crash: Some("SIGSEGV at 0x1".into()), suppressed: [("stores".to_string(), 2)].into(), ..Step::default() }],
            ..Report::default()
        };
        let text = r.to_json();
        assert!(text.starts_with("{\"tool\":\"suppress\",\"result\":\"root-cause\",\"schema\":1"), "{text}");
        assert_eq!(serde_json::from_str::<Report>(&text).unwrap(), r);
    }
}
