//! The forward pass of the fork search (the paper's fork trick, dissertation 004 §4.3): one run
//! of the program that forks at each of the given branch instances (`tools::forward`). The
//! parent goes on unswitched; the child inverts that instance, stops at its first output byte
//! that differs from the expected output (or when its block budget is used up), and the parent
//! collects how every child ended. In the child the translations holding the site are dropped
//! and it is instrumented again as the switched run does (`Switch`), with "the next execution"
//! as its instance.

use super::run::Switch;
use crate::tools::checkpoints::Checkpoints;
use crate::tools::forward::{Forking, ForwardRun};
use rtgrind_jit::iced_x86::{ConditionCode, FlowControl};
use rtgrind_jit::instrument::InsnSite;

/// The checkpoints are the program's conditional branch instances (0-based).
pub struct BranchInstances {
    /// The child's switched branch's word.
    outcome: usize,
}

impl Forking for BranchInstances {
    type Child = Switch;

    fn counts(&self, site: &InsnSite) -> bool {
        site.ins.flow_control() == FlowControl::ConditionalBranch && site.ins.condition_code() != ConditionCode::None
    }

    fn due(&self, instance: u64) -> u64 {
        instance + 1
    }

    fn child(&mut self, _instance: u64, pc: u64) -> Option<(Switch, (u64, u64))> {
        Some((Switch::new(pc, 1, self.outcome), (pc, pc + 1)))
    }
}

pub type SwitchFork = ForwardRun<BranchInstances>;

pub fn new(checkpoints: Checkpoints, budget: u64, expected: Option<Vec<u8>>, program: String) -> Result<SwitchFork, rtgrind_jit::claims::ClaimError> {
    let outcome = super::run::claim_outcome()?;
    let kind = crate::tools::callouts::Kind::SwitchForkPoint;
    ForwardRun::new(BranchInstances { outcome }, checkpoints, budget, program, expected, "the fork search's forward run", kind)
}
