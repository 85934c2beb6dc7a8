//! The forward pass of the fork search (the paper's fork trick, dissertation 004 §4.3): one run
//! of the program that forks at each of the given branch instances (its checkpoints,
//! `tools::checkpoints`). The parent goes on unswitched; the child inverts that instance, stops
//! at its first output byte that differs from the expected output (or when its block budget is
//! used up), and the parent collects how every child ended.
//!
//! At a candidate, inline code (a counter of the program's branch instances) calls out; the
//! call-out leaves the block just before the branch and asks the runtime for a fork. In the
//! child the translations holding the site are dropped and it is instrumented again as the
//! switched run does (`Switch`), with "the next execution" as its instance.

use super::run::Switch;
use crate::kernel::memory::GuestMemory;
use crate::report::Reporter;
use crate::tools::checkpoints::{give_up_if_output_departs, Checkpoints, ForkTrigger};
use crate::tools::expected::ExpectedOutput;
use crate::tools::ToolRun;
use rtgrind_jit::iced_x86::{ConditionCode, FlowControl};
use rtgrind_jit::instrument::{Inline, InsnSite, Tool};
use rtgrind_jit::ThreadContext;

pub struct SwitchFork {
    /// The branch instances to fork at (0-based).
    checkpoints: Checkpoints,
    budget: u64,
    expected: Option<Vec<u8>>,
    main: (u64, u64),
    program: String,
    trigger: ForkTrigger,
    /// In a child: the switched run, and its output checked as it writes.
    child: Option<Switch>,
    output: Option<ExpectedOutput>,
    /// The child asks for the switched site's translations to be dropped (once).
    retranslate: bool,
    site: u64,
    /// The child's switched branch's word.
    outcome: usize,
}

impl SwitchFork {
    pub fn new(checkpoints: Checkpoints, budget: u64, expected: Option<Vec<u8>>, program: String) -> Result<SwitchFork, rtgrind_jit::claims::ClaimError> {
        let trigger = ForkTrigger::new("the fork search's forward run", crate::tools::callouts::Kind::SwitchForkPoint)?;
        let outcome = super::run::claim_outcome()?;
        Ok(SwitchFork { checkpoints, budget, expected, main: (0, 0), program, child: None, output: None, retranslate: false, site: 0, trigger, outcome })
    }

    /// The count at which the next fork is due: the index is incremented before the compare,
    /// so instance i (0-based) is reached at i + 1.
    fn next_due(&self) -> u64 {
        self.checkpoints.next().map_or(u64::MAX, |i| i + 1)
    }
}

impl Tool for SwitchFork {
    fn block_start(&mut self, pc: u64, b: &mut Inline) {
        if let Some(c) = self.child.as_mut() {
            c.block_start(pc, b);
        }
    }

    fn fall_through(&mut self, pc: u64, b: &mut Inline) {
        if let Some(c) = self.child.as_mut() {
            c.fall_through(pc, b);
        }
    }

    fn before_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        if let Some(c) = self.child.as_mut() {
            return c.before_insn(site, b);
        }
        let ins = site.ins;
        let pc = ins.ip();
        if ins.flow_control() != FlowControl::ConditionalBranch || ins.condition_code() == ConditionCode::None || !(self.main.0..self.main.1).contains(&pc) {
            return;
        }
        self.trigger.count(pc, b);
    }
}

impl ToolRun for SwitchFork {
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
        let index = self.trigger.counted(ctx); // 0-based index of this instance
        let in_child = self.checkpoints.forked(index, child);
        self.trigger.set_due(ctx, self.next_due());
        // The child: the one switch, its output checked, the budget.
        let before = in_child?;
        self.output = self.expected.take().map(|e| ExpectedOutput::new(e, before as usize));
        self.child = Some(Switch::new(pc, 1, self.outcome));
        self.site = pc;
        // Retranslate: from now on only the switched site is instrumented.
        self.retranslate = true;
        Some(self.budget)
    }

    fn retranslate_requested(&mut self) -> Option<(u64, u64)> {
        // Only the blocks holding the switched site: elsewhere the forward pass's counting
        // code stays, harmless with no fork to come, and costs no retranslation.
        std::mem::take(&mut self.retranslate).then(|| (self.site, self.site + 1))
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
