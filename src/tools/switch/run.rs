//! `--tool=switch --switch-at=ADDR:N`: runs the program with the outcome of exactly one
//! branch instance inverted — the N-th execution (counted from 1, over all threads, which run
//! one at a time) of the conditional branch at guest address ADDR — and says which outcome it
//! forced. This is the switched run of predicate switching (`../shared/papers/002`); the
//! search over candidate instances is `driver`.
//!
//! The branch site counts its executions in a flag-free sequence, computes the inverse of the
//! outcome the guest's flags give (`cmov`, before anything touches the flags) and hands it to
//! the engine through `Inline::branch_outcome_from` on the N-th execution only.

use crate::kernel::memory::GuestMemory;
use crate::report::lines::SourceLines;
use crate::report::Reporter;
use crate::tools::{cmov_cc, ToolRun};
use rtgrind_jit::iced_x86::{ConditionCode, FlowControl};
use rtgrind_jit::instrument::code_asm::*;
use rtgrind_jit::instrument::{tool_area, Inline, InsnSite, Tool};

/// The tool-area word the engine reads the forced outcome from (claimed: `claims`).
pub fn claim_outcome() -> Result<usize, rtgrind_jit::claims::ClaimError> {
    rtgrind_jit::claims::claim_area("the switched branch's outcome", 8)
}

pub struct Switch {
    site: u64,
    instance: u64,
    /// [executions of the site, outcome forced at the switched instance (1 taken, 2 not)].
    state: Box<[u64; 2]>,
    /// Whether the site was ever translated as a conditional branch.
    seen: bool,
    /// Its tool-area word (`claim_outcome`).
    outcome: usize,
}

impl Switch {
    pub fn new(site: u64, instance: u64, outcome: usize) -> Switch {
        Switch { site, instance, state: Box::new([0; 2]), seen: false, outcome }
    }

    /// Parses `ADDR:N` (ADDR in hex, with or without 0x; N >= 1).
    pub fn parse(spec: &str) -> Option<(u64, u64)> {
        let (a, n) = spec.rsplit_once(':')?;
        let a = u64::from_str_radix(a.trim_start_matches("0x"), 16).ok()?;
        let n: u64 = n.parse().ok()?;
        (n >= 1).then_some((a, n))
    }
}

impl Tool for Switch {
    fn before_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        let ins = site.ins;
        if ins.ip() != self.site || ins.flow_control() != FlowControl::ConditionalBranch || ins.condition_code() == ConditionCode::None {
            return;
        }
        self.seen = true;
        let (p, t, u, w, v) = (b.scratch(), b.scratch(), b.scratch(), b.scratch(), b.scratch());
        let state = self.state.as_mut_ptr() as u64;
        let a = b.asm();
        a.mov(p, state).unwrap();
        a.mov(t, qword_ptr(p)).unwrap();
        a.lea(t, qword_ptr(t + 1)).unwrap();
        a.mov(qword_ptr(p), t).unwrap();
        // u = the inverse of the guest's own outcome: 2 (not taken) if it would branch, else 1.
        a.mov(u, 1u64).unwrap();
        a.mov(w, 2u64).unwrap();
        cmov_cc(a, ins.condition_code(), u, w);
        b.clobber_flags();
        let a = b.asm();
        a.mov(w, self.instance).unwrap();
        a.cmp(t, w).unwrap();
        a.mov(v, qword_ptr(p + 8)).unwrap();
        a.cmove(v, u).unwrap();
        a.mov(qword_ptr(p + 8), v).unwrap();
        a.mov(w, 0u64).unwrap();
        a.cmovne(u, w).unwrap();
        a.mov(qword_ptr(tool_area(self.outcome)).gs(), u).unwrap();
        b.branch_outcome_from(tool_area(self.outcome));
    }
}

impl ToolRun for Switch {
    fn fini(&mut self, report: &mut Reporter, mem: &GuestMemory) {
        let place = SourceLines::default().describe(&[self.site], mem).pop().unwrap_or_default();
        let [runs, forced] = *self.state;
        let line = match (self.seen, forced) {
            (false, _) => format!("switch: no conditional branch at {:#x} was executed", self.site),
            (true, 0) => format!("switch: the branch at {:#x} {place} ran {runs} times; instance {} never came", self.site, self.instance),
            (true, f) => format!(
                "switch: instance {} of the branch at {:#x} {place} switched to {} ({runs} executions in all)",
                self.instance,
                self.site,
                if f == 1 { "taken" } else { "not taken" }
            ),
        };
        report.line(&line);
    }
}
