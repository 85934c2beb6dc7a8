//! The trace run of the switch search: every conditional branch instance of the program (or
//! of every module, `--switch-libs=yes`) up to the failure point, in execution order.
//!
//! Each branch site appends its number and direction to the trace buffer inline (a few
//! flag-free instructions; one buffer for all threads, in the order they ran); the failure point is where the trace stands when the program first writes
//! a byte of standard output that differs from the expected output, or when it crashes, or at
//! its end for the other oracles. The trace file lists the sites (number, pc, source line),
//! the number of threads the program created, and then the instances as site numbers.

use crate::kernel::memory::GuestMemory;
use crate::report::lines::SourceLines;
use crate::report::Reporter;
use crate::shadow::propagate::r32;
use crate::tools::expected::ExpectedOutput;
use crate::tools::ToolRun;
use rtgrind_jit::iced_x86::{ConditionCode, FlowControl};
use rtgrind_jit::instrument::code_asm::{dword_ptr, qword_ptr};
use rtgrind_jit::instrument::{Inline, InsnSite, Tool};
use rtgrind_jit::ThreadContext;
use std::collections::HashMap;
use std::path::PathBuf;

/// Bit of a trace entry saying the branch instance was taken.
pub const TAKEN: u32 = 1 << 31;

/// Trace entries a thread can hold (4 bytes each, reserved, touched as written).
const CAPACITY: usize = 1 << 28;
/// Where buffers are asked for: far from the guest's code, near which code-cache arenas must go.
const PLACE: u64 = 0x2000_0000_0000;

pub struct SwitchTrace {
    out: PathBuf,
    /// Only branches of the main program (`--switch-libs=no`).
    main_only: bool,
    main: (u64, u64),
    program: String,
    /// Site numbers by pc, and pcs by number.
    ids: HashMap<u64, u32>,
    pcs: Vec<u64>,
    /// The trace buffer and where its next entry goes: one for all threads, which run one at a
    /// time, so the trace is in global order (as the switched run counts a site's executions).
    buffer: u64,
    cursor: Box<u64>,
    /// Threads the program created (the fork search cannot fork those).
    threads: u64,
    /// The first call by which the program changed the file system before its failure (the
    /// fork search's children would see each other's changes, and their parent's).
    changes_files: Option<String>,
    /// Expected standard output, compared as the program writes.
    expected: Option<ExpectedOutput>,
    /// The trace length at the failure point.
    cut: Option<u64>,
    lifetime: crate::tools::Lifetime,
    /// What the failure was.
    what: String,
    /// The dynamic dependence graph, for `--order=prior`.
    pub deps: Option<super::deps::Deps>,
}

impl SwitchTrace {
    pub fn new(out: PathBuf, main_only: bool, program: String, expected: Option<Vec<u8>>) -> SwitchTrace {
        SwitchTrace {
            out,
            main_only,
            main: (0, 0),
            program,
            ids: HashMap::new(),
            pcs: Vec::new(),
            buffer: 0,
            cursor: Box::new(0),
            threads: 0,
            expected: expected.map(|e| ExpectedOutput::new(e, 0)),
            cut: None,
            what: String::new(),
            deps: None,
            lifetime: Default::default(),
            changes_files: None,
        }
    }

    /// Entries in the main thread's buffer now.
    fn length(&self) -> u64 {
        (*self.cursor).saturating_sub(self.buffer) / 4
    }
}

/// Two passes, in order: the branch trace, then the dependence log when there is one (an
/// `Option`, whose hooks run when it is there).
impl Tool for SwitchTrace {
    fn block_start(&mut self, pc: u64, b: &mut Inline) {
        self.deps.block_start(pc, b);
    }

    fn fall_through(&mut self, pc: u64, b: &mut Inline) {
        self.deps.fall_through(pc, b);
    }

    fn after_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        self.deps.after_insn(site, b);
    }

    fn before_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        self.trace_branch(site, b);
        self.deps.before_insn(site, b);
    }
}

impl SwitchTrace {
    fn trace_branch(&mut self, site: &InsnSite, b: &mut Inline) {
        let ins = site.ins;
        let pc = ins.ip();
        if ins.flow_control() != FlowControl::ConditionalBranch || ins.condition_code() == ConditionCode::None {
            return;
        }
        if self.main_only && !(self.main.0..self.main.1).contains(&pc) {
            return;
        }
        if let Some(d) = &mut self.deps {
            d.branch(site, b);
            b.release_scratch();
        }
        let next = self.pcs.len() as u32;
        let id = *self.ids.entry(pc).or_insert(next);
        if id == next {
            self.pcs.push(pc);
        }
        let (t, u, v, w) = (b.scratch(), b.scratch(), b.scratch(), b.scratch());
        let cursor = &mut *self.cursor as *mut u64 as u64;
        let a = b.asm();
        // The entry: the site number, with bit 31 set if the branch is taken (`cmov` on the
        // guest's flags, which nothing here changes).
        a.mov(v, u64::from(id)).unwrap();
        a.mov(w, u64::from(id | TAKEN)).unwrap();
        crate::tools::cmov_cc(a, ins.condition_code(), v, w);
        a.mov(t, cursor).unwrap();
        a.mov(u, qword_ptr(t)).unwrap();
        a.mov(dword_ptr(u), r32(v)).unwrap();
        a.lea(u, qword_ptr(u + 4)).unwrap();
        a.mov(qword_ptr(t), u).unwrap();
    }
}

impl ToolRun for SwitchTrace {
    fn start(&mut self, ctx: &mut ThreadContext, mem: &GuestMemory) {
        self.buffer = crate::kernel::raw::reserve(PLACE, CAPACITY * 4).unwrap_or(0);
        *self.cursor = self.buffer;
        let (path, main) = crate::tools::main_module(mem, &self.program);
        self.main = main;
        if let Some(d) = &mut self.deps {
            d.start(ctx, mem, &path, main);
        }
    }

    fn thread_start(&mut self, child: &mut ThreadContext) {
        self.threads += 1;
        self.lifetime.started();
        if let Some(d) = &mut self.deps {
            d.thread_start(child);
        }
    }

    fn syscall_post(&mut self, ctx: &mut ThreadContext, nr: u64, args: &[u64; 6], ret: i64, mem: &GuestMemory) {
        if let Some(d) = &mut self.deps {
            d.syscall_post(ctx, nr, args, ret, mem);
        }
    }

    fn syscall_pre(&mut self, ctx: &mut ThreadContext, nr: u64, args: &[u64; 6]) -> Option<i64> {
        crate::tools::note_exec(nr, args);
        let ends = self.lifetime.ends_process(nr);
        if self.cut.is_some() {
            return None;
        }
        if let Some(d) = &mut self.deps {
            d.syscall_pre(ctx, nr, args, ends);
        }
        if self.changes_files.is_none() {
            self.changes_files = changes_files(nr, args);
        }
        let out = self.expected.as_mut()?;
        if let Some(m) = out.check(nr, args) {
            self.what = format!("standard output differs from the expected at byte {}", m.offset);
            self.cut = Some(self.length());
            if let Some(d) = &mut self.deps {
                d.wrong_byte(args[1] + m.index as u64);
            }
        } else if ends && out.short() {
            self.what = format!("standard output ends at byte {} of the expected {}", out.pos(), out.expected_len());
            self.cut = Some(self.length());
        }
        None
    }

    fn fatal_signal(&mut self, ctx: &mut ThreadContext, sig: i32, _code: i32, _addr: u64, _mem: &GuestMemory) {
        if self.cut.is_none() {
            self.what = format!("signal {sig} at {:#x}", ctx.rip);
            self.cut = Some(self.length());
            if let Some(d) = &mut self.deps {
                d.crash(ctx);
            }
        }
    }

    fn fini(&mut self, _report: &mut Reporter, mem: &GuestMemory) {
        let places = SourceLines::default().describe(&self.pcs, mem);
        let mut text = String::new();
        for (i, (pc, place)) in self.pcs.iter().zip(places).enumerate() {
            text += &format!("site\t{i}\t{pc:#x}\t{place}\n");
        }
        let len = self.cut.unwrap_or_else(|| self.length());
        if !self.what.is_empty() {
            text += &format!("failure\t{}\n", self.what);
        }
        text += &format!("length\t{len}\nthreads\t{}\n", self.threads);
        if let Some(what) = &self.changes_files {
            text += &format!("files\t{what}\n");
        }
        match self.deps.as_ref().map(|d| d.distances()) {
            Some(Some(d)) => text += &format!("distance\t{}\n", d.iter().map(|(i, d)| format!("{i}:{d}")).collect::<Vec<_>>().join(" ")),
            Some(None) => text += "distance-overflow\n",
            None => {}
        }
        if self.buffer != 0 {
            // SAFETY: the buffer holds `len` entries the translated code wrote.
            let ids = unsafe { std::slice::from_raw_parts(self.buffer as *const u32, len as usize) };
            let mut line = String::with_capacity(ids.len() * 4);
            // Each instance as its site number, `+` if it was taken.
            for &id in ids {
                line += &(id & !TAKEN).to_string();
                if id & TAKEN != 0 {
                    line.push('+');
                }
                line.push(' ');
            }
            text += &format!("trace\t{line}\n");
        }
        let _ = std::fs::write(&self.out, text);
    }
}

/// The system call's name if it changes the file system: creates, truncates, opens for writing,
/// removes or renames a file or directory.
fn changes_files(nr: u64, args: &[u64; 6]) -> Option<String> {
    let writing = |flags: u64| flags as i32 & (libc::O_WRONLY | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC) != 0;
    let name = match nr as i64 {
        libc::SYS_open if writing(args[1]) => "open for writing",
        libc::SYS_openat if writing(args[2]) => "openat for writing",
        libc::SYS_creat => "creat",
        libc::SYS_mkdir | libc::SYS_mkdirat => "mkdir",
        libc::SYS_unlink | libc::SYS_unlinkat => "unlink",
        libc::SYS_rmdir => "rmdir",
        libc::SYS_rename | libc::SYS_renameat | libc::SYS_renameat2 => "rename",
        libc::SYS_link | libc::SYS_linkat | libc::SYS_symlink | libc::SYS_symlinkat => "link",
        libc::SYS_truncate | libc::SYS_ftruncate => "truncate",
        _ => return None,
    };
    Some(name.to_string())
}
