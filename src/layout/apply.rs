//! A layout applied to a run, under any tool: [`Layered`] wraps the run's tool, rewrites the
//! program's instructions that name a moved variable as they are translated (`Tool::rewrite`:
//! RIP-relative operands of moved globals, rbp- or rsp-relative operands of re-laid frames'
//! locals),
//! and, when the program's own code first runs (its entry point, after the dynamic loader
//! relocated it), copies the moved globals to the layout's region and points the slots the
//! loader filled with their addresses (pointers in data, the GOT) at the new places.
//! With `--layout-record`, it also notes which variables the run's code names, for the search.

use super::cfa::StackFrame;
use super::heap::{HeapLayer, Placement};
use super::objects::FrameBase;
use super::objects::Objects;
use super::Layout;
use crate::kernel::memory::GuestMemory;
use crate::report::Reporter;
use crate::tools::ToolRun;
use rtgrind_jit::iced_x86::{Code, Instruction, MemoryOperand, Register};
use rtgrind_jit::instrument::{BlockCode, Inline, InsnSite, Tool};
use rtgrind_jit::ThreadContext;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// What a run's code named: the globals (by name) and the functions with locals whose frame it
/// used (by file address), for `--tool=reorder`'s search.
#[derive(Default, Debug, Serialize, Deserialize)]
pub struct Accessed {
    pub globals: BTreeSet<String>,
    pub frames: BTreeSet<u64>,
    /// The allocation sites, in the order they first allocated.
    #[serde(default)]
    pub heap: Vec<super::heap::Site>,
}

/// The moved globals, where the guest sees them: (start, end, new start), by start.
struct Moves {
    moves: Vec<(u64, u64, u64)>,
    /// Every data symbol's start (moved or not): an address one past a moved global's end that
    /// is another symbol's start means that one.
    starts: Vec<u64>,
    /// The slots the loader filled with addresses.
    slots: Vec<u64>,
    done: bool,
}

impl Moves {
    /// Where address `a` is under the layout, if it is in (or just past) a moved global.
    fn moved(&self, a: u64) -> Option<u64> {
        let i = self.moves.partition_point(|m| m.0 <= a);
        let (start, end, to) = *self.moves.get(i.checked_sub(1)?)?;
        if a < end || a == end && self.starts.binary_search(&a).is_err() {
            return Some(to + (a - start));
        }
        None
    }

    /// Where the byte at `a` is under the layout: in a moved global, its copy.
    fn moved_byte(&self, a: u64) -> u64 {
        holding(&self.moves, |m| (m.0, m.1), a).map_or(a, |&(start, _, to)| to + (a - start))
    }

    /// The moved globals' bytes copied to their places, and the loader's slots that point
    /// into them pointed at the copies (a slot inside a moved global is in its copy).
    fn relocate(&mut self) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        for &(start, end, to) in &self.moves {
            if let Some(bytes) = crate::kernel::guest_mem::read_vec(start, (end - start) as usize) {
                crate::kernel::guest_mem::write(to, &bytes);
            }
        }
        for &slot in &self.slots {
            let at = self.moved_byte(slot);
            let Some(v) = crate::kernel::guest_mem::read_u64(at) else { continue };
            if let Some(n) = self.moved(v) {
                if !crate::kernel::guest_mem::write_u64(at, n) {
                    // A slot the loader made read-only (RELRO): written as a debugger does.
                    write_forced(at, n);
                }
            }
        }
    }
}

/// The entry of `sorted` (by start, disjoint ranges) whose range holds `a`.
fn holding<T>(sorted: &[T], range: impl Fn(&T) -> (u64, u64), a: u64) -> Option<&T> {
    let i = sorted.partition_point(|x| range(x).0 <= a);
    sorted.get(i.checked_sub(1)?).filter(|x| a < range(x).1)
}

/// Writes a word through `/proc/self/mem`, which may write a read-only private mapping.
fn write_forced(at: u64, v: u64) {
    use std::os::unix::fs::FileExt;
    if let Ok(f) = std::fs::OpenOptions::new().write(true).open("/proc/self/mem") {
        let _ = f.write_at(&v.to_le_bytes(), at);
    }
}

/// Bytes reserved for rtgrind's allocator (only pages the program touches are backed), and a
/// smaller try where the system refuses that much.
const HEAP_REGION: [u64; 2] = [4 << 30, 1 << 30];
/// Where it is asked for: far from the program and its libraries, whose translations' code
/// cache must lie within a jump of them.
const HEAP_HINT: u64 = 0x1000_0000_0000;

/// The region of the guest's memory rtgrind's allocator places blocks in: (start, length).
fn heap_region(mem: &mut GuestMemory) -> Result<(u64, u64), String> {
    let mut last = String::new();
    for len in HEAP_REGION {
        match mem.reserve(HEAP_HINT, len, false).and_then(|at| mem.map_anon_fixed(at, len, libc::PROT_READ | libc::PROT_WRITE, "rtgrind heap").map(|_| at)) {
            Ok(at) => return Ok((at, len)),
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!("--layout: cannot map the heap's region: {last}"))
}

/// At the program's entry point: the moved globals copied (`Moves::relocate`).
extern "C" fn relocate(_ctx: *mut ThreadContext, arg: u64) {
    // SAFETY: `arg` is the `Moves` the `Layered` keeps boxed for the whole run; call-outs run
    // on the thread holding the baton, the only one touching the tool.
    unsafe { &mut *(arg as *mut Moves) }.relocate();
}

/// A re-laid frame: its function's code range and its locals' (start, end, new start) from
/// its base: rbp, or the CFA where `rsp` says how far above rsp that is at each pc.
struct FrameMoves {
    low: u64,
    high: u64,
    locals: Vec<(i64, i64, i64)>,
    rsp: Option<StackFrame>,
}

impl FrameMoves {
    /// Where offset `c` from the base is under the layout, if it is in a moved local.
    fn moved(&self, c: i64) -> Option<i64> {
        self.locals.iter().find(|l| l.0 <= c && c < l.1).map(|&(at, _, to)| c - at + to)
    }

    /// `ins` of this frame's function, naming a moved local, made to name where it is now: an
    /// operand from rbp, or from rsp; a copy of rsp (a local's address) made an `lea` of the
    /// new address.
    fn rewrite(&self, ins: &mut Instruction) -> bool {
        let Some(frame) = &self.rsp else {
            if ins.memory_base() != Register::RBP {
                return false;
            }
            let Some(to) = self.moved(ins.memory_displacement64() as i64) else { return false };
            ins.set_memory_displacement64(to as u64);
            return true;
        };
        let Some(off) = frame.offset_at(ins.ip()) else { return false };
        if ins.memory_base() == Register::RSP {
            let Some(to) = self.moved(ins.memory_displacement64() as i64 - off) else { return false };
            ins.set_memory_displacement64((to + off) as u64);
            return true;
        }
        let Some(reg) = super::frames::copy_of_rsp(ins) else { return false };
        let Some(to) = self.moved(-off) else { return false };
        let Ok(mut lea) = Instruction::with2(Code::Lea_r64_m, reg, MemoryOperand::with_base_displ(Register::RSP, to + off)) else { return false };
        lea.set_len(ins.len());
        lea.set_next_ip(ins.next_ip());
        *ins = lea;
        true
    }
}

/// The run's tool, under a layout.
pub struct Layered {
    inner: Box<dyn ToolRun>,
    moves: Box<Moves>,
    frames: Vec<FrameMoves>,
    /// The program's mapped range and its entry point.
    program: (u64, u64),
    entry: u64,
    /// Every movable global (start, end, name) and every re-laidable frame (low, high, file
    /// low), for `--layout-record`.
    globals: Vec<(u64, u64, String)>,
    all_frames: Vec<(u64, u64, u64)>,
    record: Option<(PathBuf, Accessed)>,
    /// The heap, placed by rtgrind's allocator or watched for the record.
    heap: Option<Box<HeapLayer>>,
}

impl Layered {
    /// `inner` under `layout` in the program `exe` (loaded in `mem`; what can move in it:
    /// `objects`): the layout checked against the program, its region mapped.
    pub fn new(
        inner: Box<dyn ToolRun>,
        layout: &Layout,
        objects: Objects,
        exe: &str,
        mem: &mut GuestMemory,
        record: Option<PathBuf>,
    ) -> Result<Layered, String> {
        layout.check(&objects).map_err(|e| format!("--layout: the layout does not fit '{exe}': {e}"))?;
        let (_, program) = crate::tools::main_module(mem, exe);
        let bias = program.0.wrapping_sub(objects.first_vaddr);
        let region_len = crate::kernel::memory::page_up(layout.globals.iter().map(|g| g.to + g.size).max().unwrap_or(0));
        let region = if region_len == 0 {
            0
        } else {
            let hint = program.0.saturating_sub(region_len + 0x10_0000) & !0xfff;
            let at = mem.reserve(hint, region_len, false).map_err(|e| format!("--layout: cannot map the layout's region: {e}"))?;
            mem.map_anon_fixed(at, region_len, libc::PROT_READ | libc::PROT_WRITE, "moved globals")
                .map_err(|e| format!("--layout: cannot map the layout's region: {e}"))?;
            at
        };
        let mut moves: Vec<(u64, u64, u64)> = layout.globals.iter().map(|g| (g.address + bias, g.address + g.size + bias, region + g.to)).collect();
        moves.sort_unstable();
        let starts = objects.starts.iter().map(|a| a + bias).collect();
        let slots = if moves.is_empty() { Vec::new() } else { objects.pointer_slots.iter().map(|s| s + bias).collect() };
        let mut frames: Vec<FrameMoves> = layout
            .frames
            .iter()
            .filter_map(|f| {
                let fr = objects.frames.iter().find(|fr| fr.low == f.low_pc)?;
                let mut locals: Vec<(i64, i64, i64)> = f.locals.iter().map(|l| (l.offset, l.offset + l.size as i64, l.to)).collect();
                locals.sort_unstable();
                let rsp = match &fr.base {
                    FrameBase::Rbp => None,
                    FrameBase::Cfa(frame) => Some(StackFrame { rsp: frame.rsp.iter().map(|&(s, e, o)| (s + bias, e + bias, o)).collect(), saved: frame.saved }),
                };
                Some(FrameMoves { low: fr.low + bias, high: fr.high + bias, locals, rsp })
            })
            .collect();
        frames.sort_by_key(|f| f.low);
        let placement = if layout.places_heap() {
            let (at, len) = heap_region(mem)?;
            Some(Placement::new(at, at + len, layout.heap.clone(), layout.heap_seed))
        } else {
            None
        };
        let heap = (placement.is_some() || record.is_some()).then(|| HeapLayer::new(placement, record.is_some(), program, bias));
        Ok(Layered {
            inner,
            moves: Box::new(Moves { moves, starts, slots, done: false }),
            frames,
            program,
            entry: objects.entry + bias,
            globals: objects.globals.iter().map(|v| (v.at as u64 + bias, v.at as u64 + v.size + bias, v.name.clone())).collect(),
            all_frames: objects.frames.iter().map(|f| (f.low + bias, f.high + bias, f.low)).collect(),
            record: record.map(|p| (p, Accessed::default())),
            heap,
        })
    }

    /// Notes which global an address of the program's code names, and which frame it uses.
    fn note(&mut self, ins: &Instruction) {
        let Some((_, accessed)) = self.record.as_mut() else { return };
        if ins.is_ip_rel_memory_operand() {
            if let Some(g) = holding(&self.globals, |g| (g.0, g.1), ins.ip_rel_memory_address()) {
                accessed.globals.insert(g.2.clone());
            }
        } else if matches!(ins.memory_base(), Register::RBP | Register::RSP) || super::frames::copy_of_rsp(ins).is_some() {
            if let Some(f) = holding(&self.all_frames, |f| (f.0, f.1), ins.ip()) {
                accessed.frames.insert(f.2);
            }
        }
    }
}

/// The layout's constant (`Tool::constant`; the inner tool's are below it): its moves.
const MOVES: u32 = u32::MAX;

impl Layered {
    /// The program's instruction `ins` as the layout changes it: a moved global's address, a
    /// moved local's offset (None: unchanged).
    fn laid_out(&self, ins: &Instruction) -> Option<Instruction> {
        let mut ins = *ins;
        if ins.is_ip_rel_memory_operand() {
            let to = self.moves.moved(ins.ip_rel_memory_address())?;
            ins.set_memory_displacement64(to);
            return Some(ins);
        }
        let f = holding(&self.frames, |f| (f.low, f.high), ins.ip())?;
        f.rewrite(&mut ins).then_some(ins)
    }
}

impl Tool for Layered {
    fn rewrite(&mut self, ins: &mut Instruction) -> bool {
        let ip = ins.ip();
        if ip < self.program.0 || ip >= self.program.1 {
            return self.inner.rewrite(ins);
        }
        self.note(ins);
        if let Some(changed) = self.laid_out(ins) {
            *ins = changed;
            return true;
        }
        self.inner.rewrite(ins)
    }
    fn two_versions(&mut self, pc: u64, code: &BlockCode) -> bool {
        self.inner.two_versions(pc, code)
    }
    fn full_entry(&mut self, b: &mut Inline) {
        self.inner.full_entry(b)
    }
    fn block_start(&mut self, pc: u64, b: &mut Inline) {
        if pc == self.entry && !self.moves.moves.is_empty() {
            let r = b.scratch();
            b.callout_constant(relocate, MOVES, &mut *self.moves as *mut Moves as u64, r);
            b.release_scratch();
        }
        self.inner.block_start(pc, b)
    }
    fn fall_through(&mut self, pc: u64, b: &mut Inline) {
        self.inner.fall_through(pc, b)
    }
    fn before_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        // (The inner tool's code first: at an allocation function's entry it sees the call,
        // and a `ret` of the allocator, where a replaced one returns, ends it.)
        self.inner.before_insn(site, b);
        if let Some(h) = self.heap.as_mut() {
            h.instrument(site.ins, b);
        }
    }
    fn after_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        self.inner.after_insn(site, b)
    }
    // (Its rewritten displacements are the layout's: a cache checks it, `plan_digest`. The
    // heap layer's call-outs hold their arguments as they are, which keeps their blocks from
    // having images.)
    fn relocatable_code(&self) -> bool {
        self.inner.relocatable_code()
    }
    fn installed(&mut self, pcs: &[u64]) {
        // The record notes what the code names as it is translated (`rewrite`): an installed
        // block's instructions are noted here instead.
        if self.record.is_some() {
            let program = self.program.0..self.program.1;
            for &pc in pcs.iter().filter(|&&pc| program.contains(&pc)) {
                if let Some(ins) = crate::tools::decode_code(pc) {
                    self.note(&ins);
                }
            }
        }
        self.inner.installed(pcs)
    }
    fn revive(&mut self, kind: u32, bytes: &[u8]) -> Option<u64> {
        self.inner.revive(kind, bytes)
    }
    fn constant(&mut self, k: u32) -> Option<u64> {
        match k {
            MOVES => Some(&mut *self.moves as *mut Moves as u64),
            k => self.inner.constant(k),
        }
    }
    fn id(&mut self, kind: u32, pc: u64) -> Option<u64> {
        self.inner.id(kind, pc)
    }
    fn code_key(&self) -> u64 {
        self.inner.code_key()
    }
    // (The layout changes the instructions of the program it rewrites and the entry's
    // relocation, nothing else: a block of the program whose instructions name no moved
    // variable is the same under every layout. And the heap layer's hooks, whose blocks have
    // no image but whose places must not take one from a run without them.)
    fn plan_digest(&mut self, pcs: &[u64]) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for &pc in pcs.iter().filter(|&&pc| (self.program.0..self.program.1).contains(&pc)) {
            if pc == self.entry && !self.moves.moves.is_empty() {
                (pc, &self.moves.moves).hash(&mut h);
            }
            if let Some(changed) = crate::tools::decode_code(pc).and_then(|ins| self.laid_out(&ins)) {
                changed.hash(&mut h);
            }
        }
        self.heap.as_ref().is_some_and(|heap| pcs.iter().any(|&pc| heap.watches(pc))).hash(&mut h);
        self.inner.plan_digest(pcs) ^ h.finish().rotate_left(1)
    }
}

impl ToolRun for Layered {
    fn attach(&mut self, sched: &'static crate::kernel::sched::Scheduler) {
        self.inner.attach(sched)
    }
    fn start(&mut self, ctx: &mut ThreadContext, mem: &GuestMemory) {
        self.inner.start(ctx, mem)
    }
    fn thread_start(&mut self, child: &mut ThreadContext) {
        self.inner.thread_start(child)
    }
    fn syscall_pre(&mut self, ctx: &mut ThreadContext, nr: u64, args: &[u64; 6]) -> Option<i64> {
        self.inner.syscall_pre(ctx, nr, args)
    }
    fn syscall_post(&mut self, ctx: &mut ThreadContext, nr: u64, args: &[u64; 6], ret: i64, mem: &GuestMemory) {
        if let Some(h) = self.heap.as_mut().filter(|_| nr == libc::SYS_mmap as u64 && ret >= 0 && args[2] as i32 & libc::PROT_EXEC != 0) {
            h.note_mapping(mem, ret as u64, ret as u64 + args[1]);
        }
        self.inner.syscall_post(ctx, nr, args, ret, mem)
    }
    fn client_request(&mut self, ctx: &mut ThreadContext, req: &[u64; 6], mem: &GuestMemory) -> Option<u64> {
        self.inner.client_request(ctx, req, mem)
    }
    fn signal_handler(&mut self, ctx: &mut ThreadContext, sig: i32) {
        self.inner.signal_handler(ctx, sig)
    }
    fn fatal_signal(&mut self, ctx: &mut ThreadContext, sig: i32, code: i32, addr: u64, mem: &GuestMemory) {
        self.inner.fatal_signal(ctx, sig, code, addr, mem)
    }
    fn forks_children(&self) -> bool {
        self.inner.forks_children()
    }
    fn fork_requested(&mut self) -> bool {
        self.inner.fork_requested()
    }
    fn forked(&mut self, ctx: &mut ThreadContext, child: i64) -> Option<u64> {
        self.inner.forked(ctx, child)
    }
    fn retranslate_requested(&mut self) -> Option<(u64, u64)> {
        self.inner.retranslate_requested()
    }
    fn fini(&mut self, report: &mut Reporter, mem: &GuestMemory) {
        if let Some((path, accessed)) = &mut self.record {
            accessed.heap = self.heap.as_mut().map(|h| h.finish()).unwrap_or_default();
            let _ = std::fs::write(path, serde_json::to_string(accessed).expect("serializes"));
        }
        self.inner.fini(report, mem)
    }
    fn exit_code(&self) -> Option<i32> {
        self.inner.exit_code()
    }
}

#[cfg(test)]
mod tests {
    use super::Moves;

    /// An address inside a moved global follows it; one past its end follows it too unless
    /// another symbol starts there; a slot (a location) never takes that guess.
    #[test]
    fn addresses_in_and_past_moved_globals_follow_them() {
        let m = Moves {
            moves: vec![(0x1000, 0x1010, 0x9000), (0x1020, 0x1028, 0x9100)],
            starts: vec![0x1000, 0x1010, 0x1020, 0x1030],
            slots: Vec::new(),
            done: false,
        };
        assert_eq!(m.moved(0x1004), Some(0x9004));
        assert_eq!(m.moved(0x1010), None);
        assert_eq!(m.moved(0x1028), Some(0x9108));
        assert_eq!((m.moved(0x0fff), m.moved(0x1030)), (None, None));
        assert_eq!((m.moved_byte(0x1024), m.moved_byte(0x1028)), (0x9104, 0x1028));
    }
}
