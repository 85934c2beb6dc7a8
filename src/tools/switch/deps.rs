//! The dynamic dependence graph of the trace run, for `--order=prior`: which branch instances
//! the failure depends on, and through how many dependence edges.
//!
//! Data dependences come from the origin propagation with a dependence log
//! (`shadow::propagate::DepLog`): every computation, constant and program copy is a node
//! named by the origin it defines, and logs the origins it read. This module adds the rest to
//! the same log, in execution order: each block entry and `ret` of the traced code (rsp), each
//! traced branch instance (its node, its flags' origin, pc, rsp), and the failure: the
//! origins of the first wrong output byte or of what the crashing instruction read; for the
//! oracles that judge the whole run (and an output that is only too short), of every output
//! byte and the exit status.
//!
//! Control dependences are found when the log is read: a branch instance opens a region that
//! ends where the branch's paths meet again (its immediate post-dominator, `suppress::cfg`) in
//! the same frame, or when its function returns; every record is control dependent on the
//! innermost open region (library code on the program's region around the call).
//! The distance of a branch instance is the length of the shortest path of data and control
//! edges from the failure to it (breadth-first).

use crate::kernel::guest_mem;
use crate::kernel::memory::GuestMemory;
use crate::shadow::memory::ShadowMemory;
use crate::shadow::propagate::{dep, DepLog, Propagation};
use crate::shadow::{self, origin, slot};
use crate::tools::suppress::cfg;
use rtgrind_jit::iced_x86::{Decoder, DecoderOptions, FlowControl, InstructionInfoFactory, OpAccess};
use rtgrind_jit::instrument::code_asm::*;
use rtgrind_jit::instrument::{tool_area, Inline, InsnSite, Tool};
use rtgrind_jit::ThreadContext;
use std::collections::{HashMap, VecDeque};

const BLOCK: u64 = 2;
const BRANCH: u64 = 3;
const FAIL: u64 = 4;
const RET: u64 = 6;
/// A failure point that replaces the ones before (the first wrong byte, a crash).
const FAIL_ONLY: u64 = 5;

/// Bytes reserved for the log (touched as written).
const CAPACITY: u64 = 16 << 30;
/// Where it is asked for (next to the branch trace's buffer).
const PLACE: u64 = 0x2100_0000_0000;

pub struct Deps {
    shadow: *mut ShadowMemory,
    origins: *mut ShadowMemory,
    prop: Propagation,
    cursor: Box<u64>,
    buffer: u64,
    main: (u64, u64),
    functions: Vec<(u64, u64)>,
    threads: u64,
    /// Only the main program's branches are traced.
    main_only: bool,
    /// Log length at the failure (the end of the run if none).
    cut: Option<u64>,
}

/// A word of a record written by translated code.
enum Word {
    Imm(u64),
    /// A tool-area qword.
    Slot(usize),
    /// The guest's stack pointer.
    Rsp,
    /// The origin a definition at this site would have now (`here`: the site, shifted).
    Origin(u64),
}

fn qword(off: usize) -> AsmMemoryOperand {
    qword_ptr(tool_area(off)).gs()
}

impl Deps {
    pub fn new(main_only: bool) -> std::io::Result<Deps> {
        let shadow = Box::into_raw(Box::new(ShadowMemory::new()?));
        let origins = Box::into_raw(Box::new(ShadowMemory::for_origins()?));
        let mut prop = Propagation::new(shadow, Some(origins));
        prop.taint_on = false;
        let buffer = crate::kernel::raw::reserve(PLACE, CAPACITY as usize)?;
        Ok(Deps { shadow, origins, prop, cursor: Box::new(buffer), buffer, main: (0, 0), functions: Vec::new(), threads: 0, main_only, cut: None })
    }

    fn limit(&self) -> u64 {
        // Room for the longest record past the limit.
        self.buffer + CAPACITY - 4096
    }

    fn full(&self) -> bool {
        *self.cursor >= self.limit()
    }

    /// The log length now, in qwords.
    fn length(&self) -> u64 {
        (*self.cursor - self.buffer) / 8
    }

    fn mems(&mut self) -> [&mut ShadowMemory; 2] {
        // SAFETY: both memories live as long as the tool; tool hooks run on the thread holding
        // the baton while no translated code (hence no call-out) runs.
        unsafe { [&mut *self.shadow, &mut *self.origins] }
    }

    fn cover(&mut self, start: u64, end: u64) {
        for m in self.mems() {
            m.cover(start, end);
        }
    }

    pub fn start(&mut self, ctx: &mut ThreadContext, mem: &GuestMemory, path: &str, main: (u64, u64)) {
        for (s, e) in shadow::initial_ranges(ctx.gpr[4], mem) {
            self.cover(s, e);
        }
        shadow::init_thread(ctx);
        self.main = main;
        self.functions = crate::report::symbols::functions(path, mem).iter().map(|f| (f.0, f.1)).collect();
        let cursor = &mut *self.cursor as *mut u64 as u64;
        self.prop.log = Some(DepLog { cursor, limit: self.limit(), main });
    }

    pub fn thread_start(&mut self, child: &mut ThreadContext) {
        self.threads += 1;
        shadow::start_thread(child, self.threads);
        // rax, rcx and r11 of the new thread depend on nothing the program computed.
        for r in [0, 1, 11] {
            *shadow::word(child, slot::ORIGIN_GPR + 8 * r) = 0;
        }
    }

    /// Appends a record to the log from the code being built (`b`), unless the log is full.
    fn emit(&self, b: &mut Inline, words: &[Word]) {
        b.clobber_flags();
        let (p, t) = (b.scratch(), b.scratch());
        let cursor = &*self.cursor as *const u64 as u64;
        let a = b.asm();
        let mut full = a.create_label();
        a.mov(p, cursor).unwrap();
        a.mov(p, qword_ptr(p)).unwrap();
        a.mov(t, self.limit()).unwrap();
        a.cmp(p, t).unwrap();
        a.jae(full).unwrap();
        for (k, w) in words.iter().enumerate() {
            match *w {
                Word::Imm(v) => b.asm().mov(t, v).unwrap(),
                Word::Slot(off) => b.asm().mov(t, qword(off)).unwrap(),
                Word::Rsp => b.asm().mov(t, rsp).unwrap(),
                Word::Origin(here) => {
                    b.counter_to(t);
                    b.asm().or(t, here as i32).unwrap();
                }
            }
            b.asm().mov(qword_ptr(p + 8 * k as i32), t).unwrap();
        }
        let a = b.asm();
        a.lea(p, qword_ptr(p + 8 * words.len() as i32)).unwrap();
        a.mov(t, cursor).unwrap();
        a.mov(qword_ptr(t), p).unwrap();
        a.set_label(&mut full).unwrap();
        a.zero_bytes().unwrap();
    }

    /// Whether branches at `pc` are traced (and their regions followed).
    fn traced(&self, pc: u64) -> bool {
        !self.main_only || (self.main.0..self.main.1).contains(&pc)
    }

    /// Before a traced branch instance.
    pub fn branch(&mut self, site: &InsnSite, b: &mut Inline) {
        let pc = site.ins.ip();
        let here = u64::from(self.prop.sites.id(pc)) << origin::SITE_SHIFT;
        self.emit(b, &[Word::Imm(BRANCH), Word::Origin(here), Word::Slot(slot::ORIGIN_FLAGS), Word::Imm(pc), Word::Rsp]);
    }

    /// Appends a failure record naming `sources` (origins; those without a definition dropped).
    fn fail(&mut self, kind: u64, sources: &[u64]) {
        let mut s: Vec<u64> = sources.iter().copied().filter(|&o| o & origin::REAL != 0).collect();
        s.sort_unstable();
        s.dedup();
        if self.full() {
            return;
        }
        s.truncate(512);
        let words: Vec<u64> = std::iter::once(kind | (s.len() as u64) << dep::COUNT_SHIFT).chain(s).collect();
        // SAFETY: the log has room for 4096 bytes past `limit`, which `full` checked; only this
        // thread (holding the baton) writes it now.
        unsafe { std::ptr::copy_nonoverlapping(words.as_ptr(), *self.cursor as *mut u64, words.len()) };
        *self.cursor += 8 * words.len() as u64;
    }

    fn byte_origins(&mut self, buf: u64, len: u64) -> Vec<u64> {
        let [_, o] = self.mems();
        (0..len.min(4096)).map(|i| o.get64(buf + i)).collect()
    }

    /// Before a syscall: a write of the program's output, or its exit, is a failure point
    /// unless a first wrong byte or a crash replaces them all.
    pub fn syscall_pre(&mut self, ctx: &mut ThreadContext, nr: u64, args: &[u64; 6], ends_process: bool) {
        if self.cut.is_some() {
            return;
        }
        match nr as i64 {
            libc::SYS_write if args[0] == 1 || args[0] == 2 => {
                let o = self.byte_origins(args[1], args[2]);
                self.fail(FAIL, &o);
            }
            _ if ends_process => {
                let o = *shadow::word(ctx, slot::ORIGIN_GPR + 8 * 7);
                self.fail(FAIL, &[o]);
            }
            _ => {}
        }
    }

    /// The first wrong output byte, at `addr`: the failure.
    pub fn wrong_byte(&mut self, addr: u64) {
        if self.cut.is_none() {
            let o = self.byte_origins(addr, 1);
            self.fail(FAIL_ONLY, &o);
            self.cut = Some(self.length());
        }
    }

    /// A crash: what the crashing instruction read (registers and memory) is the failure.
    pub fn crash(&mut self, ctx: &mut ThreadContext) {
        if self.cut.is_some() {
            return;
        }
        let mut sources = Vec::new();
        let ins = crate::tools::decode(ctx.rip).unwrap_or_default();
        let mut factory = InstructionInfoFactory::new();
        let info = factory.info(&ins);
        for r in info.used_registers() {
            if matches!(r.access(), OpAccess::Read | OpAccess::ReadWrite | OpAccess::CondRead | OpAccess::ReadCondWrite) {
                if let Some(g) = shadow::gpr_number(r.register()) {
                    sources.push(*shadow::word(ctx, slot::ORIGIN_GPR + 8 * g));
                }
            }
        }
        for m in info.used_memory() {
            let base = shadow::gpr_number(m.base()).map_or(0, |g| ctx.gpr[g]);
            let index = shadow::gpr_number(m.index()).map_or(0, |g| ctx.gpr[g]);
            let ea = base.wrapping_add(index.wrapping_mul(u64::from(m.scale()))).wrapping_add(m.displacement());
            if guest_mem::read_u64(ea).is_some() {
                let [_, o] = self.mems();
                sources.push(o.get64(ea));
            }
        }
        self.fail(FAIL_ONLY, &sources);
        self.cut = Some(self.length());
    }

    pub fn syscall_post(&mut self, ctx: &mut ThreadContext, nr: u64, a: &[u64; 6], ret: i64, mem: &GuestMemory) {
        for r in [0, 1, 11] {
            *shadow::word(ctx, slot::ORIGIN_GPR + 8 * r) = 0;
        }
        let nr = nr as i64;
        if let Some((start, end)) = shadow::mapped_by(nr, a, ret, mem) {
            self.cover(start, end);
        }
        if ret > 0 {
            // What the kernel wrote depends on nothing the program computed.
            if let Some((buf, len)) = crate::tools::taint::written_buffer(nr, a, ret) {
                let [_, o] = self.mems();
                o.set64_range(buf, len, 0);
            }
        }
    }

    /// Reads the log: the distance of every traced branch instance the failure depends on,
    /// as (index in the trace, distance); None if the log overflowed.
    pub fn distances(&self) -> Option<Vec<(usize, u32)>> {
        if self.full() {
            return None;
        }
        let len = self.cut.unwrap_or_else(|| self.length()) as usize;
        // SAFETY: the first `len` qwords of the buffer are records the run wrote.
        let log = unsafe { std::slice::from_raw_parts(self.buffer as *const u64, len) };
        let mut graph = Graph::default();
        let mut regions = Regions { stack: Vec::new(), ipdoms: HashMap::new(), ends: HashMap::new(), functions: &self.functions, pending: None };
        let pc_of = |node: u64| self.prop.sites.pc(origin::site(node)).unwrap_or(0);
        let mut i = 0;
        while i < log.len() {
            let kind = log[i] & 0xff;
            let count = (log[i] >> dep::COUNT_SHIFT) as usize;
            match kind {
                dep::COMPUTE if i + 2 + count <= log.len() => {
                    regions.at(pc_of(log[i + 1]));
                    let control = regions.innermost();
                    graph.node(log[i + 1], log[i + 2..i + 2 + count].iter().copied().chain(control));
                    i += 2 + count;
                }
                RET if i + 2 <= log.len() => {
                    regions.leave(log[i + 1]);
                    i += 2;
                }
                BLOCK if i + 3 <= log.len() => {
                    regions.enter(log[i + 1], log[i + 2]);
                    i += 3;
                }
                BRANCH if i + 5 <= log.len() => {
                    let (node, flags, pc, stack_ptr) = (log[i + 1], log[i + 2], log[i + 3], log[i + 4]);
                    regions.at(pc);
                    let control = regions.innermost();
                    graph.node(node, std::iter::once(flags).chain(control));
                    graph.branches.push(node);
                    regions.open(node, pc, stack_ptr);
                    i += 5;
                }
                FAIL | FAIL_ONLY if i + 1 + count <= log.len() => {
                    if kind == FAIL_ONLY {
                        graph.roots.clear();
                    }
                    let control = regions.innermost();
                    graph.roots.extend(log[i + 1..i + 1 + count].iter().copied().chain(control));
                    i += 1 + count;
                }
                _ => break,
            }
        }
        Some(graph.distances())
    }
}

/// The dependence log's instrumentation: a pass of the trace run (`trace.rs`).
impl Tool for Deps {
    fn block_start(&mut self, pc: u64, b: &mut Inline) {
        self.prop.block_start(b);
        if self.traced(pc) {
            self.emit(b, &[Word::Imm(BLOCK), Word::Imm(pc), Word::Rsp]);
        }
    }
    /// A basic block starts inside a translated one (after a branch not taken): the log reader
    /// sees it as a block of its own, as it would where blocks end at conditional branches.
    fn fall_through(&mut self, pc: u64, b: &mut Inline) {
        if self.traced(pc) {
            // This code may be lent the registers the propagation keeps for the block.
            self.prop.forget_registers();
            self.emit(b, &[Word::Imm(BLOCK), Word::Imm(pc), Word::Rsp]);
        }
    }
    fn before_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        if site.ins.flow_control() == FlowControl::Return && self.traced(site.ins.ip()) {
            self.emit(b, &[Word::Imm(RET), Word::Rsp]);
            b.release_scratch();
        }
        self.prop.before(site, b);
    }
    fn after_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        self.prop.after(site, b);
    }
}

/// Nodes (origins) and their sources, data and control.
#[derive(Default)]
struct Graph {
    sources: HashMap<u64, Vec<u64>>,
    /// Branch nodes in trace order.
    branches: Vec<u64>,
    /// What the failure read.
    roots: Vec<u64>,
}

impl Graph {
    fn node(&mut self, node: u64, sources: impl Iterator<Item = u64>) {
        let s: Vec<u64> = sources.filter(|&o| o & origin::REAL != 0 && o != node).collect();
        self.sources.insert(node, s);
    }

    fn distances(&self) -> Vec<(usize, u32)> {
        let mut dist: HashMap<u64, u32> = HashMap::new();
        let mut queue = VecDeque::new();
        for &r in &self.roots {
            if r & origin::REAL != 0 && !dist.contains_key(&r) {
                dist.insert(r, 1);
                queue.push_back(r);
            }
        }
        while let Some(n) = queue.pop_front() {
            let d = dist[&n];
            for &s in self.sources.get(&n).map(Vec::as_slice).unwrap_or(&[]) {
                if let std::collections::hash_map::Entry::Vacant(e) = dist.entry(s) {
                    e.insert(d + 1);
                    queue.push_back(s);
                }
            }
        }
        self.branches.iter().enumerate().filter_map(|(i, b)| dist.get(b).map(|&d| (i, d))).collect()
    }
}

/// The open conditional regions: (branch node, where its paths meet, rsp at the branch).
struct Regions<'a> {
    stack: Vec<(u64, Option<u64>, u64)>,
    ipdoms: HashMap<u64, Option<u64>>,
    /// The last instruction of the straight-line code from a block's start.
    ends: HashMap<u64, u64>,
    functions: &'a [(u64, u64)],
    /// A meeting point inside the running block (join, block start, block end): the innermost
    /// regions meeting there end at the first record of an instruction at or past it.
    pending: Option<(u64, u64, u64)>,
}

impl Regions<'_> {
    fn innermost(&self) -> Option<u64> {
        self.stack.last().map(|r| r.0)
    }

    fn open(&mut self, node: u64, pc: u64, stack_ptr: u64) {
        let functions = self.functions;
        let join = *self.ipdoms.entry(pc).or_insert_with(|| {
            let func = functions.iter().find(|f| (f.0..f.1).contains(&pc)).copied();
            cfg::region(pc, &guest_mem::read_some, func).0
        });
        self.stack.push((node, join, stack_ptr));
    }

    /// A `ret` with `stack_ptr`: the regions of its frame (and of deeper ones) end.
    fn leave(&mut self, stack_ptr: u64) {
        self.settle();
        while self.stack.last().is_some_and(|r| r.2 <= stack_ptr) {
            self.stack.pop();
        }
    }

    /// The running block went past its meeting point (it ended).
    fn settle(&mut self) {
        if let Some((join, ..)) = self.pending.take() {
            self.close(join);
        }
    }

    fn close(&mut self, join: u64) {
        while self.stack.last().is_some_and(|r| r.1 == Some(join)) {
            self.stack.pop();
        }
    }

    /// A record of the instruction at `pc`: if it is in the running block at or past the
    /// block's meeting point, the regions meeting there end first.
    fn at(&mut self, pc: u64) {
        if let Some((join, start, end)) = self.pending {
            if (start..=end).contains(&pc) && pc >= join {
                self.pending = None;
                self.close(join);
            }
        }
    }

    /// A block of the program starts at `pc` with `stack_ptr`: regions of frames that
    /// returned end, and so do regions of this frame whose paths meet at `pc`; a meeting
    /// point further into the block is noted (`pending`).
    fn enter(&mut self, pc: u64, stack_ptr: u64) {
        self.settle();
        while self.stack.last().is_some_and(|r| r.2 < stack_ptr) {
            self.stack.pop();
        }
        while let Some(&(_, Some(join), at)) = self.stack.last() {
            if at != stack_ptr || join < pc {
                break;
            }
            if join == pc {
                self.close(join);
                continue;
            }
            let end = self.end(pc);
            if join <= end {
                self.pending = Some((join, pc, end));
            }
            break;
        }
    }

    fn end(&mut self, pc: u64) -> u64 {
        *self.ends.entry(pc).or_insert_with(|| {
            let mut code = vec![0u8; 4096];
            let n = guest_mem::read_some(pc, &mut code);
            let mut d = Decoder::with_ip(64, &code[..n], pc, DecoderOptions::NONE);
            let mut last = pc;
            while d.can_decode() {
                let ins = d.decode();
                last = ins.ip();
                if ins.is_invalid() || ins.flow_control() != FlowControl::Next {
                    break;
                }
            }
            last
        })
    }
}
