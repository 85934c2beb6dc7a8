//! The forward run of the replacement search (the fork trick of dissertation 004 §4.3, as
//! `switch::fork` does it for branches): one run of a failing test that counts the executions
//! of use sites (the same count as the profiling run's) and forks at the checkpoints the search
//! listed, each a use-site execution and one replacement there (`at = execution * 16 + k`, the
//! plan file `--vr-plan` giving each its pc, use and value). The parent goes on unaltered; the
//! child drops the translations holding the site and runs on as `Replace` with N = 1.

use super::replace::{Replace, Target};
use crate::kernel::memory::GuestMemory;
use crate::report::Reporter;
use crate::tools::checkpoints::{give_up_if_output_departs, Checkpoints, ForkTrigger, GAVE_UP};
use crate::tools::expected::ExpectedOutput;
use crate::tools::ToolRun;
use rtgrind_jit::instrument::{Inline, InsnSite, Tool};
use rtgrind_jit::ThreadContext;
use std::collections::HashMap;

/// Replacements per use-site execution a checkpoint number can name.
pub const PER_EXECUTION: u64 = 16;

pub struct VrFork {
    checkpoints: Checkpoints,
    plan: HashMap<u64, Target>,
    budget: u64,
    main: (u64, u64),
    program: String,
    trigger: ForkTrigger,
    child: Option<Replace>,
    retranslate: Option<u64>,
    /// The test's expected standard output: a child whose output departs from it stops.
    expected: Option<Vec<u8>>,
    output: Option<ExpectedOutput>,
}

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

impl VrFork {
    pub fn new(
        checkpoints: Checkpoints,
        plan: HashMap<u64, Target>,
        budget: u64,
        program: String,
        expected: Option<Vec<u8>>,
    ) -> Result<VrFork, rtgrind_jit::claims::ClaimError> {
        let trigger = ForkTrigger::new("value replacement's forward run", crate::tools::callouts::Kind::VrForkPoint)?;
        Ok(VrFork { checkpoints, plan, budget, main: (0, 0), program, trigger, child: None, retranslate: None, expected, output: None })
    }

    /// The count at which the next fork is due (the index is incremented before the compare).
    fn next_due(&self) -> u64 {
        self.checkpoints.next().map_or(u64::MAX, |c| c / PER_EXECUTION + 1)
    }
}

impl Tool for VrFork {
    fn before_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        if let Some(c) = self.child.as_mut() {
            return c.before_insn(site, b);
        }
        let pc = site.ins.ip();
        if !(self.main.0..self.main.1).contains(&pc) || super::uses::uses(site.ins, site.info).is_empty() {
            return;
        }
        self.trigger.count(pc, b);
    }

    fn after_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        if let Some(c) = self.child.as_mut() {
            c.after_insn(site, b);
        }
    }
}

impl ToolRun for VrFork {
    fn start(&mut self, ctx: &mut ThreadContext, mem: &GuestMemory) {
        self.checkpoints.started();
        self.main = crate::tools::main_module_range(mem, &self.program);
        self.trigger.set_due(ctx, self.next_due());
    }

    fn forks_children(&self) -> bool {
        true
    }

    fn fork_requested(&mut self) -> bool {
        self.trigger.requested() && self.child.is_none()
    }

    fn forked(&mut self, ctx: &mut ThreadContext, child: i64) -> Option<u64> {
        let pc = self.trigger.take().unwrap_or(0);
        let at = self.checkpoints.next().unwrap_or(u64::MAX);
        let in_child = self.checkpoints.forked(at, child);
        self.trigger.set_due(ctx, self.next_due());
        let before = in_child?;
        self.output = self.expected.take().map(|e| ExpectedOutput::new(e, before as usize));
        let Some(target) = self.plan.get(&at).copied().filter(|t| t.pc == pc) else {
            // SAFETY: ending this child before it alters anything: the plan names another
            // instruction here (the counts disagree); the parent reads only its status.
            unsafe { libc::_exit(GAVE_UP) };
        };
        self.child = Some(Replace::new(Target { n: 1, ..target }));
        self.retranslate = Some(pc);
        Some(self.budget)
    }

    fn retranslate_requested(&mut self) -> Option<(u64, u64)> {
        self.retranslate.take().map(|pc| (pc, pc + 1))
    }

    fn syscall_pre(&mut self, _ctx: &mut ThreadContext, nr: u64, args: &[u64; 6]) -> Option<i64> {
        give_up_if_output_departs(&mut self.output, nr, args);
        None
    }

    fn fini(&mut self, report: &mut Reporter, mem: &GuestMemory) {
        if let Some(c) = self.child.as_mut() {
            return c.fini(report, mem);
        }
        self.checkpoints.finish();
    }
}
