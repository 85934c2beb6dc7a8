//! What rtgrind tells the user: its own messages (`==PID==` lines, to stderr or
//! `--log-file`), errors, and guest addresses named as function+offset in a module.

pub mod debuginfo;
pub mod dwarf;
pub mod lines;
pub mod model;
pub mod render;
pub mod sarif;
pub mod schema;
pub mod symbolize;
pub mod symbols;

use crate::kernel::memory::GuestMemory;
use crate::kernel::signals::SigInfo;
use std::io::Write;

pub struct Reporter {
    quiet: bool,
    log: Option<std::fs::File>,
    stderr: std::mem::ManuallyDrop<std::fs::File>,
    symbols: symbols::SymbolCache,
}

pub fn signal_name(sig: i32) -> String {
    let names = [
        "",
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    names.get(sig as usize).map(|s| s.to_string()).unwrap_or_else(|| format!("SIGRT{}", sig - 32))
}

fn fault_cause(info: &SigInfo) -> Option<String> {
    if info.code() <= 0 || info.code() == 0x80 {
        return None;
    }
    let what = match (info.sig, info.code()) {
        (libc::SIGSEGV, 1) => "access not within mapped region",
        (libc::SIGSEGV, 2) => "bad permissions for mapped region",
        (libc::SIGBUS, _) => "bus error",
        (libc::SIGILL, _) => "illegal instruction",
        (libc::SIGFPE, 1) => "integer divide by zero",
        (libc::SIGFPE, 2) => "integer overflow",
        (libc::SIGFPE, _) => "floating-point exception",
        (libc::SIGTRAP, _) => "trace/breakpoint trap",
        _ => return None,
    };
    Some(format!("{what} at address {:#x}", info.addr()))
}

/// A copy of stderr among rtgrind's own descriptors (`kernel::fds`), so the report still
/// reaches it after the guest closed its own stderr (coreutils do at exit), reused fd 2, or
/// closed every descriptor.
fn private_stderr() -> std::mem::ManuallyDrop<std::fs::File> {
    use std::os::fd::FromRawFd;
    let fd = crate::kernel::fds::dup_reserved(2).unwrap_or(2);
    // SAFETY: the duplicate is a new descriptor that only this File owns; if there is none
    // (fd 2 closed), fd 2 itself is used through a File that is never dropped (never closed).
    std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) })
}

impl Reporter {
    pub fn new(quiet: bool, log: Option<std::fs::File>) -> Reporter {
        use crate::kernel::fds;
        use std::os::fd::AsRawFd;
        let stderr = private_stderr();
        fds::STDERR.store(stderr.as_raw_fd(), std::sync::atomic::Ordering::Relaxed);
        fds::REPORT.store(log.as_ref().map_or(stderr.as_raw_fd(), |f| f.as_raw_fd()), std::sync::atomic::Ordering::Relaxed);
        Reporter { quiet, log, stderr, symbols: symbols::SymbolCache::default() }
    }

    /// One `==PID==` line of rtgrind's own output.
    pub fn line(&mut self, text: &str) {
        let l = format!("=={}== {}\n", std::process::id(), text);
        match &mut self.log {
            Some(f) => {
                let _ = f.write_all(l.as_bytes());
            }
            None => {
                let _ = self.stderr.write_all(l.as_bytes());
            }
        }
    }

    /// A banner line, unless `-q`.
    pub fn info(&mut self, text: &str) {
        if !self.quiet {
            self.line(text);
        }
    }

    /// An error: always to stderr (rtgrind's copy: the guest's fd 2 may be anything by now)
    /// and the log, one line.
    pub fn error(&mut self, text: &str) {
        let _ = writeln!(self.stderr, "rtgrind: error: {text}");
        if let Some(f) = &mut self.log {
            let _ = writeln!(f, "rtgrind: error: {text}");
        }
    }

    pub fn flush(&mut self) {
        if let Some(f) = &mut self.log {
            let _ = f.flush();
        }
    }

    /// " (function+0x12 in /path/module)" for a guest pc, or "" if unknown.
    pub fn describe_pc(&mut self, pc: u64, mem: &GuestMemory) -> String {
        match self.symbols.lookup(pc, mem) {
            Some((Some(f), off, module)) => format!(" ({f}+{off:#x} in {module})"),
            Some((None, off, module)) => format!(" ({module}+{off:#x})"),
            None => String::new(),
        }
    }

    pub fn fatal_signal_line(&mut self, info: &SigInfo, pc: u64, mem: &GuestMemory) -> String {
        let mut l =
            format!("Process terminating with default action of signal {} ({}) at {pc:#x}{}", info.sig, signal_name(info.sig), self.describe_pc(pc, mem));
        if let Some(c) = fault_cause(info) {
            l.push_str(": ");
            l.push_str(&c);
        }
        l
    }
}
