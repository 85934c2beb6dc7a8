//! rtgrind's integration tests: one binary that drives the real `rtgrind` executable.

mod bad_input;
mod common;
mod differential;
mod insn;
mod suppress;
mod switch;
mod system_programs;
mod threads;
mod tools;
