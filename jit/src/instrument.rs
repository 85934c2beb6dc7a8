//! The interface between the engine and tools: the only way a tool sees and changes a
//! translation.
//!
//! `Tool::instrument_insn` must be a true function: the same block always gets the same
//! instrumentation, because blocks are retranslated (after invalidation, or to map a fault
//! back to the guest) and the results must agree. Every hook has an empty default body, so a
//! tool pays only for the hooks it uses.

use iced_x86::Instruction;

pub trait Tool {
    /// Called before the instructions of a block starting at `pc` are translated.
    fn block_start(&mut self, _pc: u64) {}
    /// Called for each guest instruction as it is translated.
    fn instrument_insn(&mut self, _ins: &Instruction) {}
}

/// The tool that adds nothing (Valgrind's `none`).
pub struct NoInstrumentation;
impl Tool for NoInstrumentation {}
