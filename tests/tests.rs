//! rtgrind's integration tests: one binary that drives the real `rtgrind` executable.

mod common;
mod bad_input;
mod differential;
mod system_programs;
mod insn;
mod threads;
mod tools;
mod suppress;
mod switch;
