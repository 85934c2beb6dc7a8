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
use crate::tools::checkpoints::{Checkpoints, GAVE_UP};
use crate::tools::expected::ExpectedOutput;
use crate::tools::ToolRun;
use rtgrind_jit::iced_x86::{ConditionCode, FlowControl};
use rtgrind_jit::instrument::code_asm::qword_ptr;
use rtgrind_jit::instrument::{tool_area, Inline, InsnSite, Tool};
use rtgrind_jit::ThreadContext;

/// Its tool-area words (claimed, `claims`): the program's branch instances so far, the next
/// one to fork at, where to leave the block for.
#[derive(Clone, Copy, Default)]
struct Words {
    index: usize,
    next: usize,
    redirect: usize,
}

/// What the call-out tells the tool (boxed: translations hold its address).
#[derive(Default)]
struct Request {
    /// A fork is wanted at this pc (the branch).
    at: Option<u64>,
    words: Words,
}

pub struct SwitchFork {
    /// The branch instances to fork at (0-based).
    checkpoints: Checkpoints,
    budget: u64,
    expected: Option<Vec<u8>>,
    main: (u64, u64),
    program: String,
    request: Box<Request>,
    /// In a child: the switched run, and its output checked as it writes.
    child: Option<Switch>,
    output: Option<ExpectedOutput>,
    /// The child asks for the switched site's translations to be dropped (once).
    retranslate: bool,
    site: u64,
    words: Words,
    /// The child's switched branch's word.
    outcome: usize,
}

impl SwitchFork {
    pub fn new(checkpoints: Checkpoints, budget: u64, expected: Option<Vec<u8>>, program: String) -> Result<SwitchFork, rtgrind_jit::claims::ClaimError> {
        let base = rtgrind_jit::claims::claim_area("the fork search's forward run", 24)?;
        let words = Words { index: base, next: base + 8, redirect: base + 16 };
        let outcome = super::run::claim_outcome()?;
        Ok(SwitchFork {
            checkpoints,
            budget,
            expected,
            main: (0, 0),
            program,
            child: None,
            output: None,
            retranslate: false,
            site: 0,
            request: Box::new(Request { at: None, words }),
            words,
            outcome,
        })
    }

    /// The count at which the next fork is due: the index is incremented before the compare,
    /// so instance i (0-based) is reached at i + 1.
    fn next_due(&self) -> u64 {
        self.checkpoints.next().map_or(u64::MAX, |i| i + 1)
    }
}

extern "C" fn fork_point(ctx: *mut ThreadContext, arg: u64) {
    // SAFETY: rtg_callout passes this thread's context; `arg` is the tool's boxed Request.
    let (ctx, req) = unsafe { (&mut *ctx, &mut *(arg as *mut Request)) };
    let pc = ctx.tool_area[req.words.redirect / 8];
    // Back to just before the branch, counted again there.
    ctx.tool_area[req.words.index / 8] -= 1;
    req.at = Some(pc);
    ctx.ibl_clear();
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
        b.clobber_flags();
        let t = b.scratch();
        let arg = &mut *self.request as *mut Request as u64;
        let a = b.asm();
        let mut go = a.create_label();
        let w = self.words;
        a.mov(t, qword_ptr(tool_area(w.index)).gs()).unwrap();
        a.lea(t, qword_ptr(t + 1)).unwrap();
        a.mov(qword_ptr(tool_area(w.index)).gs(), t).unwrap();
        a.cmp(t, qword_ptr(tool_area(w.next)).gs()).unwrap();
        a.jne(go).unwrap();
        a.mov(t, pc).unwrap();
        a.mov(qword_ptr(tool_area(w.redirect)).gs(), t).unwrap();
        b.callout(fork_point, arg, t);
        b.exit_to(tool_area(w.redirect));
        let a = b.asm();
        a.set_label(&mut go).unwrap();
        a.zero_bytes().unwrap();
    }
}

impl ToolRun for SwitchFork {
    fn start(&mut self, ctx: &mut ThreadContext, mem: &GuestMemory) {
        self.checkpoints.started();
        self.main = crate::tools::main_module_range(mem, &self.program);
        ctx.tool_area[self.words.next / 8] = self.next_due();
    }

    fn forks_children(&self) -> bool {
        true
    }

    fn fork_requested(&mut self) -> bool {
        self.request.at.is_some() && self.child.is_none()
    }

    fn forked(&mut self, ctx: &mut ThreadContext, child: i64) -> Option<u64> {
        let pc = self.request.at.take().unwrap_or(0);
        let index = ctx.tool_area[self.words.index / 8]; // 0-based index of this instance
        let in_child = self.checkpoints.forked(index, child);
        ctx.tool_area[self.words.next / 8] = self.next_due();
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
        if self.output.as_mut()?.check(nr, args).is_some() {
            // This switch cannot pass: stop now.
            // SAFETY: ending this child process; the parent only reads its status.
            unsafe { libc::_exit(GAVE_UP) };
        }
        None
    }

    fn fini(&mut self, report: &mut Reporter, mem: &GuestMemory) {
        if let Some(c) = self.child.as_mut() {
            return c.fini(report, mem);
        }
        self.checkpoints.finish();
    }
}
