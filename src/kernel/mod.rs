//! Linux, as the guest sees it through rtgrind: syscalls, signals, memory map.

pub mod buffers;
pub mod created;
pub mod fds;
pub mod guest_mem;
pub mod memory;
pub mod originals;
pub mod procfs;
pub mod raw;
pub mod repeat;
pub mod sched;
pub mod signals;
pub mod syscall;
pub mod threads;
