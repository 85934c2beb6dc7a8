//! The tools: what a run does besides running the program. Each tool is one type that
//! instruments translations (the engine's `instrument::Tool`) and reacts to what the runtime
//! sees (syscalls, client requests, the end of the run) through [`ToolRun`].

pub mod count;

use crate::kernel::memory::GuestMemory;
use crate::report::Reporter;
use rtgrind_jit::instrument::{NoInstrumentation, Tool};
use rtgrind_jit::ThreadContext;

/// A tool as the runtime sees it. Hooks run on the thread holding the scheduler's baton.
pub trait ToolRun: Tool {
    /// Before a guest syscall `nr` with arguments `args` is emulated or passed through.
    fn syscall_pre(&mut self, _ctx: &mut ThreadContext, _nr: u64, _args: &[u64; 6]) {}
    /// After it returned `ret` (a negative errno on failure).
    fn syscall_post(&mut self, _ctx: &mut ThreadContext, _nr: u64, _args: &[u64; 6], _ret: i64, _mem: &GuestMemory) {}
    /// The run ends (exit, fatal signal, stop): print what the tool found.
    fn fini(&mut self, _report: &mut Reporter, _mem: &GuestMemory) {}
}

impl ToolRun for NoInstrumentation {}
