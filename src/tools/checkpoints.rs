//! A forward run's checkpoints (the fork trick of dissertation 004 §4.3), the run's side: the
//! search lists where to fork (`DIR/at`: numbers the tool counts, such as branch instances,
//! ascending), the tool asks the runtime for a fork when it reaches one, the child runs the
//! tool's variant with its output in files of its own (`DIR/out-N`, `DIR/err-N`), and the forward
//! run goes on, `jobs` children at a time, and writes how each ended (`DIR/results`). The
//! search's side (`search::Runner`) passes `--checkpoints=DIR` and reads the children back as
//! run outcomes. What a checkpoint is and what the child alters are the tool's.

use crate::tools::expected::ExpectedOutput;
use rtgrind_jit::instrument::code_asm::qword_ptr;
use rtgrind_jit::instrument::{tool_area, Inline};
use rtgrind_jit::ThreadContext;
use std::collections::VecDeque;
use std::path::PathBuf;

/// Exit status of a child that stopped itself: its variant cannot pass (the switch search's
/// child whose output already differs from the expected).
pub const GAVE_UP: i32 = 97;

pub struct Checkpoints {
    dir: PathBuf,
    /// Checkpoints still to come, the next first.
    at: VecDeque<u64>,
    jobs: usize,
    /// The forward run's process (a fork the program makes carries a copy of this state).
    pid: u32,
    /// Children running: (pid, checkpoint).
    running: Vec<(i32, u64)>,
    /// Children done: (checkpoint, exit status or -signal).
    done: Vec<(u64, i32)>,
    /// Bytes the program had written to stdout and stderr at each checkpoint.
    prefixes: Vec<(u64, u64, u64)>,
}

impl Checkpoints {
    /// The checkpoints the search listed in `dir/at`.
    pub fn read(dir: PathBuf, jobs: usize) -> Checkpoints {
        let mut at: Vec<u64> = std::fs::read_to_string(dir.join("at")).unwrap_or_default().split_whitespace().filter_map(|x| x.parse().ok()).collect();
        at.sort_unstable();
        at.dedup();
        Checkpoints { dir, at: at.into(), jobs: jobs.max(1), pid: std::process::id(), running: Vec::new(), done: Vec::new(), prefixes: Vec::new() }
    }

    /// The next checkpoint to fork at.
    pub fn next(&self) -> Option<u64> {
        self.at.front().copied()
    }

    /// The program starts (in the process that forks).
    pub fn started(&mut self) {
        self.pid = std::process::id();
    }

    /// The runtime forked at checkpoint `at` (`child`: fork's result). In the forward run: the
    /// child is noted, the checkpoints reached are dropped, and it waits while `jobs` children
    /// run; None. In the child: it forgets the forward run's children and its standard output
    /// and error go to files of its own; Some(bytes the program had written to standard output
    /// before). A failed fork (`child` < 0) ends the checkpoints.
    pub fn forked(&mut self, at: u64, child: i64) -> Option<u64> {
        let size = |fd: i32| crate::kernel::raw::fstat(fd).map_or(0, |st| st.st_size as u64);
        if child < 0 {
            self.at.clear();
            return None;
        }
        if child > 0 {
            self.running.push((child as i32, at));
            self.prefixes.push((at, size(1), size(2)));
            while self.at.front().is_some_and(|&i| i <= at) {
                self.at.pop_front();
            }
            while self.running.len() >= self.jobs {
                self.reap(true);
            }
            self.reap(false);
            return None;
        }
        let before = size(1);
        self.running.clear();
        self.done.clear();
        self.prefixes.clear();
        self.at.clear();
        for (fd, what) in [(1, "out"), (2, "err")] {
            if let Ok(f) = std::fs::File::create(self.dir.join(format!("{what}-{at}"))) {
                use std::os::fd::AsRawFd;
                // SAFETY: dup2 of an open file onto the guest's descriptor, which it shares.
                unsafe { libc::dup2(f.as_raw_fd(), fd) };
            }
        }
        Some(before)
    }

    /// Collects the children that ended (with `block`, waits until one has). Each is waited
    /// for by pid, with __WALL (they send no exit signal): never the program's own children.
    fn reap(&mut self, block: bool) {
        loop {
            let mut reaped = false;
            let mut i = 0;
            while i < self.running.len() {
                let (pid, at) = self.running[i];
                let mut status = 0;
                // SAFETY: waitpid on a child this process forked.
                let r = unsafe { libc::waitpid(pid, &mut status, libc::__WALL | libc::WNOHANG) };
                if r == pid || r < 0 {
                    // r < 0: not our child any more (cannot happen; never wait forever on it).
                    let code = if r < 0 {
                        -1
                    } else if libc::WIFEXITED(status) {
                        libc::WEXITSTATUS(status)
                    } else {
                        -libc::WTERMSIG(status)
                    };
                    self.running.swap_remove(i);
                    self.done.push((at, code));
                    reaped = true;
                } else {
                    i += 1;
                }
            }
            if reaped || !block || self.running.is_empty() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }

    /// The forward run ends: waits for every child and writes `results` (a child, or a fork
    /// the program made itself, writes nothing).
    pub fn finish(&mut self) {
        if std::process::id() != self.pid {
            return;
        }
        while !self.running.is_empty() {
            self.reap(true);
        }
        let mut text = String::new();
        for (at, code) in &self.done {
            let (o, e) = self.prefixes.iter().find(|p| p.0 == *at).map_or((0, 0), |p| (p.1, p.2));
            text += &format!("child\t{at}\t{code}\t{o}\t{e}\n");
        }
        let _ = std::fs::write(self.dir.join("results"), text);
    }
}

/// The forward run's inline side, shared by the tools that fork at counted executions (the
/// switch search's branch instances, value replacement's use-site executions): before each
/// counted instruction, a counter in the tool area goes up; when it reaches the next
/// checkpoint's count, a call-out notes the instruction and the block is left just before it,
/// counted again when it is re-entered, so the runtime forks there.
pub struct ForkTrigger {
    words: Words,
    /// Boxed: translations hold its address.
    request: Box<Request>,
}

/// Tool-area words: executions counted so far, the count at which the next fork is due, where
/// to go on after the call-out.
#[derive(Clone, Copy)]
struct Words {
    index: usize,
    next: usize,
    redirect: usize,
}

/// What the call-out tells the tool.
struct Request {
    /// A fork is wanted before the instruction at this pc.
    at: Option<u64>,
    words: Words,
    kind: crate::tools::callouts::Kind,
}

impl ForkTrigger {
    /// Claims its tool-area words for `what` (the run, as claim errors name it).
    /// `kind`: its call-out as `--stats` counts it.
    pub fn new(what: &'static str, kind: crate::tools::callouts::Kind) -> Result<ForkTrigger, rtgrind_jit::claims::ClaimError> {
        let base = rtgrind_jit::claims::claim_area(what, 24)?;
        let words = Words { index: base, next: base + 8, redirect: base + 16 };
        Ok(ForkTrigger { words, request: Box::new(Request { at: None, words, kind }) })
    }

    /// Counts an execution of the instruction at `pc` (code inserted before it).
    pub fn count(&mut self, pc: u64, b: &mut Inline) {
        b.clobber_flags();
        let t = b.scratch();
        let arg = &mut *self.request as *mut Request as u64;
        let w = self.words;
        let a = b.asm();
        let mut go = a.create_label();
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

    /// The next fork is due when the count reaches `due` (u64::MAX: none).
    pub fn set_due(&self, ctx: &mut ThreadContext, due: u64) {
        ctx.tool_area[self.words.next / 8] = due;
    }

    /// Whether a fork is wanted now.
    pub fn requested(&self) -> bool {
        self.request.at.is_some()
    }

    /// The pc the fork is wanted at, taken.
    pub fn take(&mut self) -> Option<u64> {
        self.request.at.take()
    }
}

extern "C" fn fork_point(ctx: *mut ThreadContext, arg: u64) {
    // SAFETY: rtg_callout passes this thread's context; `arg` is the trigger's boxed Request.
    let (ctx, req) = unsafe { (&mut *ctx, &mut *(arg as *mut Request)) };
    crate::tools::callouts::note(req.kind);
    let pc = ctx.tool_area[req.words.redirect / 8];
    // Back to just before the instruction, counted again there.
    ctx.tool_area[req.words.index / 8] -= 1;
    req.at = Some(pc);
    ctx.ibl_clear();
}

/// A child's check of its output before syscall `nr`: one whose output already departs from
/// the expected cannot pass, and stops at once (exit `GAVE_UP`).
pub fn give_up_if_output_departs(output: &mut Option<ExpectedOutput>, nr: u64, args: &[u64; 6]) {
    if output.as_mut().and_then(|o| o.check(nr, args)).is_some() {
        // SAFETY: ending this child process; the parent only reads its status.
        unsafe { libc::_exit(GAVE_UP) };
    }
}
