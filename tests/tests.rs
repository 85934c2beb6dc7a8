//! rtgrind's integration tests: one binary that drives the real `rtgrind` executable.

mod bad_input;
mod cbi;
mod code_cache;
mod common;
mod differential;
mod fidelity;
mod golden;
mod insn;
/// The searches' one report model, the binary's own file (it depends on serde alone).
#[path = "../src/report/model.rs"]
#[allow(dead_code)]
mod model;
mod race;
mod reorder;
mod spectra;
mod suppress;
mod switch;
mod symbols;
mod system_programs;
mod threads;
mod tools;
mod triage;
mod vr;
