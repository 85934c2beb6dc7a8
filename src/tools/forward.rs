//! The forward run of a fork search (dissertation 004 §4.3), shared by the tools that fork at
//! counted executions: the switch search (branch instances) and value replacement (use-site
//! executions). One run of the program counts the executions its tool names (`ForkTrigger`)
//! and forks at each checkpoint the search listed (`Checkpoints`). The parent goes on
//! unaltered; the child becomes the tool's altered run, its translations of the altered site
//! dropped, its output checked against the expected as it writes (a child whose output departs
//! stops at once), within its block budget.

use crate::kernel::memory::GuestMemory;
use crate::report::Reporter;
use crate::tools::callouts::Kind;
use crate::tools::checkpoints::{give_up_if_output_departs, Checkpoints, ForkTrigger, GAVE_UP};
use crate::tools::expected::ExpectedOutput;
use crate::tools::ToolRun;
use rtgrind_jit::claims::ClaimError;
use rtgrind_jit::instrument::{Inline, InsnSite, Tool};
use rtgrind_jit::ThreadContext;

/// What a tool's forward run decides.
pub trait Forking {
    /// The altered run a child becomes.
    type Child: Tool + ToolRun;
    /// Whether the executions of this instruction of the main program are counted.
    fn counts(&self, site: &InsnSite) -> bool;
    /// The count at which checkpoint `at`'s fork is due: the count goes up before the compare,
    /// so the execution with 0-based index i is reached at i + 1.
    fn due(&self, at: u64) -> u64;
    /// In the child forked at checkpoint `at`, before the instruction at `pc`: the altered run
    /// and the guest code range to translate again. None: the checkpoint names another
    /// instruction (the counts disagree), and the child gives up.
    fn child(&mut self, at: u64, pc: u64) -> Option<(Self::Child, (u64, u64))>;
}

pub struct ForwardRun<F: Forking> {
    forking: F,
    checkpoints: Checkpoints,
    /// The child's block budget.
    budget: u64,
    /// The main program's mapped range, and its path.
    main: (u64, u64),
    program: String,
    trigger: ForkTrigger,
    /// The test's expected standard output, and in a child its check.
    expected: Option<Vec<u8>>,
    output: Option<ExpectedOutput>,
    child: Option<F::Child>,
    /// The child asks once for the altered site's translations to be dropped.
    retranslate: Option<(u64, u64)>,
}

impl<F: Forking> ForwardRun<F> {
    /// `what` names the run in claim errors, `kind` its fork call-out under `--stats`.
    pub fn new(
        forking: F,
        checkpoints: Checkpoints,
        budget: u64,
        program: String,
        expected: Option<Vec<u8>>,
        what: &'static str,
        kind: Kind,
    ) -> Result<ForwardRun<F>, ClaimError> {
        let trigger = ForkTrigger::new(what, kind)?;
        Ok(ForwardRun { forking, checkpoints, budget, main: (0, 0), program, trigger, expected, output: None, child: None, retranslate: None })
    }

    fn next_due(&self) -> u64 {
        self.checkpoints.next().map_or(u64::MAX, |at| self.forking.due(at))
    }
}

/// Before the fork: only the counting; in a child: its altered run's instrumentation.
impl<F: Forking> Tool for ForwardRun<F> {
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
        let pc = site.ins.ip();
        if (self.main.0..self.main.1).contains(&pc) && self.forking.counts(site) {
            self.trigger.count(pc, b);
        }
    }

    fn after_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        if let Some(c) = self.child.as_mut() {
            c.after_insn(site, b);
        }
    }
}

impl<F: Forking> ToolRun for ForwardRun<F> {
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
        let Some((run, range)) = self.forking.child(at, pc) else {
            // SAFETY: ending this child before it alters anything; the parent reads only its
            // status.
            unsafe { libc::_exit(GAVE_UP) };
        };
        self.child = Some(run);
        self.retranslate = Some(range);
        Some(self.budget)
    }

    fn retranslate_requested(&mut self) -> Option<(u64, u64)> {
        // Only the blocks holding the altered site: elsewhere the forward run's counting code
        // stays, harmless with no fork to come, and costs no retranslation.
        self.retranslate.take()
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
