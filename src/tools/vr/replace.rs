//! One replacement: at the N-th execution of the instruction at `pc`, use `op` reads `value`
//! instead of its own. A call-out before the instruction writes the value into the register's
//! low bytes or the memory operand; one after it puts the location back as it was, unless the
//! instruction wrote it itself, so only that use sees the value. `--vr-replace=PC:N:OP:VALUE`
//! is such a run from the start; a forked child of `fork` runs one with N = 1.

use super::uses::{self, Saved, Use};
use crate::kernel::memory::GuestMemory;
use crate::report::Reporter;
use crate::tools::ToolRun;
use rtgrind_jit::iced_x86::Instruction;
use rtgrind_jit::instrument::{Inline, InsnSite, Tool};
use rtgrind_jit::ThreadContext;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    pub pc: u64,
    /// Which execution (from 1).
    pub n: u64,
    /// The use's index among the instruction's uses.
    pub op: usize,
    pub value: i64,
}

impl Target {
    /// Parses `PC:N:OP:VALUE` (PC in hex).
    pub fn parse(s: &str) -> Option<Target> {
        let f: Vec<&str> = s.split(':').collect();
        let [pc, n, op, value] = f[..] else { return None };
        let t = Target { pc: u64::from_str_radix(pc.trim_start_matches("0x"), 16).ok()?, n: n.parse().ok()?, op: op.parse().ok()?, value: value.parse().ok()? };
        (t.n >= 1 && t.op < uses::MAX_USES).then_some(t)
    }
}

#[derive(Default)]
struct State {
    count: u64,
    /// The location before the replacement, until the instruction has run.
    saved: Option<Saved>,
    /// The value the use had (once replaced).
    from: Option<i64>,
}

struct Probe {
    ins: Instruction,
    u: Use,
    spilled: u16,
    target: Target,
    state: *mut State,
}

pub struct Replace {
    target: Target,
    state: Box<State>,
    /// Boxed: translations hold their addresses, which a growing Vec would move.
    #[allow(clippy::vec_box)]
    probes: Vec<Box<Probe>>,
    /// The instruction and its use, once translated.
    seen: Option<(Instruction, Use)>,
}

impl Replace {
    pub fn new(target: Target) -> Replace {
        Replace { target, state: Box::default(), probes: Vec::new(), seen: None }
    }
}

extern "C" fn apply(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::VrApply);
    // SAFETY: rtg_callout passes this thread's context; `arg` is a Probe the tool keeps, its
    // state the tool's boxed State.
    let (ctx, p) = unsafe { (&mut *ctx, &*(arg as *const Probe)) };
    // SAFETY: as above.
    let st = unsafe { &mut *p.state };
    st.count += 1;
    if st.count != p.target.n {
        return;
    }
    if let Some(saved) = uses::read(ctx, p.spilled, &p.ins, &p.u) {
        st.from = Some(uses::value(&saved, &p.u));
        uses::write(ctx, p.spilled, &p.u, &saved, p.target.value);
        st.saved = Some(saved);
    }
}

extern "C" fn put_back(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::VrPutBack);
    // SAFETY: as in `apply`.
    let (ctx, p) = unsafe { (&mut *ctx, &*(arg as *const Probe)) };
    // SAFETY: as above.
    let st = unsafe { &mut *p.state };
    if let Some(saved) = st.saved.take() {
        if !p.u.written {
            uses::restore(ctx, p.spilled, &p.u, &saved);
        }
    }
}

impl Replace {
    fn probe(&mut self, site: &InsnSite, b: &mut Inline, f: rtgrind_jit::instrument::Callout) {
        if site.ins.ip() != self.target.pc {
            return;
        }
        let Some(u) = uses::uses(site.ins, site.info).get(self.target.op).copied() else { return };
        self.seen = Some((*site.ins, u));
        let t = b.scratch();
        let spilled = b.spilled();
        let probe = Box::new(Probe { ins: *site.ins, u, spilled, target: self.target, state: &mut *self.state });
        b.callout(f, &*probe as *const Probe as u64, t);
        self.probes.push(probe);
    }
}

impl Tool for Replace {
    fn before_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        self.probe(site, b, apply);
    }

    fn after_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        self.probe(site, b, put_back);
    }
}

impl ToolRun for Replace {
    fn fini(&mut self, report: &mut Reporter, _mem: &GuestMemory) {
        let t = self.target;
        let line = match (&self.seen, self.state.from) {
            (None, _) => format!("vr: no use {} of an instruction at {:#x} was executed", t.op, t.pc),
            (Some(_), None) => format!("vr: the instruction at {:#x} ran {} times; instance {} never came", t.pc, self.state.count, t.n),
            (Some((ins, u)), Some(from)) => format!("vr: instance {} of `{ins}` at {:#x}: {} {from} -> {}", t.n, t.pc, uses::describe(ins, u), t.value),
        };
        report.line(&line);
    }
}
