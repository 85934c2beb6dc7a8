//! The forward run of the replacement search (`tools::forward`, as `switch::fork` does it
//! for branches): one run of a failing test that counts the executions
//! of use sites (the same count as the profiling run's) and forks at the checkpoints the search
//! listed, each a use-site execution and one replacement there (`at = execution * 16 + k`, the
//! plan file `--vr-plan` giving each its pc, use and value). The parent goes on unaltered; the
//! child drops the translations holding the site and runs on as `Replace` with N = 1.

use super::replace::{Replace, Target};
use crate::tools::checkpoints::Checkpoints;
use crate::tools::forward::{Forking, ForwardRun};
use rtgrind_jit::instrument::InsnSite;
use std::collections::HashMap;

/// Replacements per use-site execution a checkpoint number can name.
pub const PER_EXECUTION: u64 = 16;

/// The checkpoints are use-site executions, each with a replacement (`at = execution * 16 + k`).
pub struct UseExecutions {
    plan: HashMap<u64, Target>,
}

impl Forking for UseExecutions {
    type Child = Replace;

    fn counts(&self, site: &InsnSite) -> bool {
        !super::uses::uses(site.ins, site.info).is_empty()
    }

    fn due(&self, at: u64) -> u64 {
        at / PER_EXECUTION + 1
    }

    fn child(&mut self, at: u64, pc: u64) -> Option<(Replace, (u64, u64))> {
        let target = self.plan.get(&at).copied().filter(|t| t.pc == pc)?;
        Some((Replace::new(Target { n: 1, ..target }), (pc, pc + 1)))
    }
}

pub type VrFork = ForwardRun<UseExecutions>;

/// Reads a plan: `checkpoint pc op value` a line.
pub fn read_plan(path: &std::path::Path) -> Result<HashMap<u64, Target>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--vr-plan: cannot read '{}': {e}", path.display()))?;
    let mut plan = HashMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let parsed = match f[..] {
            [at, pc, op, value] => at.parse().ok().zip(Target::parse(&format!("{pc}:1:{op}:{value}"))),
            _ => None,
        };
        let (at, t) = parsed.ok_or_else(|| format!("--vr-plan: '{}': bad line '{line}'", path.display()))?;
        plan.insert(at, t);
    }
    Ok(plan)
}

pub fn new(
    checkpoints: Checkpoints,
    plan: HashMap<u64, Target>,
    budget: u64,
    program: String,
    expected: Option<Vec<u8>>,
) -> Result<VrFork, rtgrind_jit::claims::ClaimError> {
    let kind = crate::tools::callouts::Kind::VrForkPoint;
    ForwardRun::new(UseExecutions { plan }, checkpoints, budget, program, expected, "value replacement's forward run", kind)
}
