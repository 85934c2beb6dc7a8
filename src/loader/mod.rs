//! Loading a program into the guest address space: ELF mapping and the initial stack.

pub mod elf;
pub mod file;
pub mod stack;
