//! The program's live heap blocks (for the race tool, where a race's address was allocated,
//! as helgrind and TSan report it; for suppression runs, the blocks whose redzones to check):
//! the C library's `malloc`, `calloc`, `realloc`, `free` and the `memalign` family are watched
//! at their entry (the size asked for, the callers) and at their `ret`s (the block returned;
//! calloc's jump to `memset`, which returns it for calloc; the `ret`s of the local function
//! `memalign` tail-calls), by address, as the library is mapped (`hook_at` says where a tool
//! puts its call-outs). C++'s `new` and everything else that allocates
//! through `malloc` is seen there too, with its own caller among the callers.

use std::collections::{BTreeMap, HashMap};

/// Which allocation function an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Malloc,
    Calloc,
    Realloc,
    Free,
    /// `memalign` and `aligned_alloc` (one function in the library).
    Memalign,
    PosixMemalign,
    Valloc,
    Pvalloc,
    UsableSize,
}

impl Kind {
    /// Which argument (0: rdi, 1: rsi, 2: rdx) is the size of the block it allocates; None for
    /// calloc (a product of two), free and the size query.
    pub fn size_arg(self) -> Option<usize> {
        match self {
            Kind::Malloc | Kind::Valloc | Kind::Pvalloc => Some(0),
            Kind::Realloc | Kind::Memalign => Some(1),
            Kind::PosixMemalign => Some(2),
            Kind::Calloc | Kind::Free | Kind::UsableSize => None,
        }
    }
}

const FUNCTIONS: [(&str, Kind); 9] = [
    ("malloc", Kind::Malloc),
    ("calloc", Kind::Calloc),
    ("realloc", Kind::Realloc),
    ("free", Kind::Free),
    ("memalign", Kind::Memalign),
    ("aligned_alloc", Kind::Memalign),
    ("posix_memalign", Kind::PosixMemalign),
    ("valloc", Kind::Valloc),
    ("pvalloc", Kind::Pvalloc),
];
/// What an allocator that replaces the library's takes over besides: its blocks must never
/// reach the library's functions (only entries: their bodies never run).
const REPLACED: [(&str, Kind); 1] = [("malloc_usable_size", Kind::UsableSize)];

/// Where a heap-watching tool puts a call-out (`Heap::hook_at`), and what it then tells the
/// `Heap`: `enter`, `returned` (rsp, rax), `jumped_out` (rsp, rdi).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    Enter(Kind),
    Return,
    JumpOut,
}

/// A live block: its size and the return addresses on the allocating thread's stack.
pub struct Block {
    pub size: u64,
    pub stack: Vec<u64>,
}

/// An allocation under way in a thread: the stack pointer at the entry (the `ret` that ends it
/// has it again), the size asked for, the callers.
struct Pending {
    kind: Kind,
    sp: u64,
    size: u64,
    stack: Vec<u64>,
    /// Where `posix_memalign` stores the block.
    out: u64,
}

#[derive(Default)]
pub struct Heap {
    /// The allocation functions' entries and their code (start, end), as mapped.
    entries: HashMap<u64, Kind>,
    bodies: Vec<(u64, u64)>,
    blocks: BTreeMap<u64, Block>,
    /// Per thread, allocations under way (innermost last).
    pending: Vec<Vec<Pending>>,
    /// The C library files whose functions `note_mapping` learnt.
    libraries: Vec<String>,
    /// Whether the entries of `REPLACED` are learnt too (`Heap::replacing`).
    replacing: bool,
    /// A `ret` of `malloc`'s code, where a replaced function returns.
    ret: Option<u64>,
    /// The `ret`s of the code the aligned family's functions jump to (glibc's `memalign`
    /// tail-calls a local `_mid_memalign`, which has no symbol): they end those allocations.
    tail_rets: Vec<u64>,
}

impl Heap {
    /// A heap for an allocator that replaces the library's: it learns the aligned family's
    /// entries and `malloc_usable_size`'s too, and a `ret` to return from them by.
    pub fn replacing() -> Heap {
        Heap { replacing: true, ..Heap::default() }
    }

    /// Learns the allocation functions of the C library at `path` (mapped in `mem`).
    pub fn note_library(&mut self, path: &str, mem: &crate::kernel::memory::GuestMemory) {
        let replaced: &[(&str, Kind)] = if self.replacing { &REPLACED } else { &[] };
        for (start, end, name) in crate::report::symbols::functions(path, mem) {
            // (One name per address is kept, the first in order: `__libc_malloc` for `malloc`,
            // `__GI___libc_free` for `free` where the library's own symbols are there.)
            let plain = name.trim_start_matches("__GI_").trim_start_matches("__libc_");
            if let Some(&(_, kind)) = FUNCTIONS.iter().chain(replaced).find(|f| f.0 == plain) {
                self.entries.entry(start).or_insert(kind);
                if !matches!(kind, Kind::Free | Kind::UsableSize) && !self.bodies.contains(&(start, end)) {
                    self.bodies.push((start, end));
                    if matches!(kind, Kind::Memalign | Kind::Valloc | Kind::Pvalloc) {
                        self.tail_rets.extend(tail_rets(start, end));
                        self.tail_rets.sort_unstable();
                        self.tail_rets.dedup();
                    }
                }
                if kind == Kind::Malloc && self.ret.is_none() {
                    self.ret = first_ret(start, end);
                }
            }
        }
    }

    /// A `ret` of `malloc`'s code: a replaced function's call-out sends the thread there with
    /// its result in rax (a `ret` in the allocator's code, so a tool watching returns sees it).
    pub fn a_ret(&self) -> Option<u64> {
        self.ret
    }

    /// Learns the allocation functions of the C library if `[start, end)` of `mem` maps its
    /// code (once per library file).
    pub fn note_mapping(&mut self, mem: &crate::kernel::memory::GuestMemory, start: u64, end: u64) {
        for (_, _, r) in mem.pieces(start, end) {
            let name = r.name.as_deref().and_then(|n| n.rsplit('/').next()).unwrap_or_default();
            let path = r.name.clone().unwrap_or_default();
            if name.starts_with("libc.so") && r.prot & libc::PROT_EXEC != 0 && !self.libraries.contains(&path) {
                self.note_library(&path, mem);
                self.libraries.push(path);
            }
        }
    }

    /// What a tool watching the heap puts before the instruction `ins`: a call-out at an
    /// allocation function's entry, at a `ret` that ends one, or at a jump out of one.
    pub fn hook_at(&self, ins: &rtgrind_jit::iced_x86::Instruction) -> Option<Hook> {
        use rtgrind_jit::iced_x86::{Mnemonic, OpKind};
        let pc = ins.ip();
        if let Some(kind) = self.entry(pc) {
            return Some(Hook::Enter(kind));
        }
        if ins.mnemonic() == Mnemonic::Ret && (self.in_allocator(pc) || self.tail_rets.binary_search(&pc).is_ok()) {
            return Some(Hook::Return);
        }
        let jump = ins.mnemonic() == Mnemonic::Jmp && ins.op0_kind() == OpKind::NearBranch64;
        (jump && self.leaves_allocator(pc, ins.near_branch_target())).then_some(Hook::JumpOut)
    }

    /// Whether `hook_at` may hook the instruction at `pc` (an allocation function's entry, or
    /// in its code): what a translation cache's check of a block asks.
    pub fn watches(&self, pc: u64) -> bool {
        self.entry(pc).is_some() || self.in_allocator(pc)
    }

    /// The allocation function whose entry is at `pc`.
    pub fn entry(&self, pc: u64) -> Option<Kind> {
        self.entries.get(&pc).copied()
    }

    /// Whether `pc` is in an allocating function's code (its `ret`s end an allocation).
    pub fn in_allocator(&self, pc: u64) -> bool {
        self.bodies.iter().any(|b| (b.0..b.1).contains(&pc))
    }

    /// Thread `t` enters `kind` with arguments `[a, b, c]` (rdi, rsi, rdx), its stack pointer
    /// at `sp` and callers `stack`. The block it frees, if any: (start, size).
    pub fn enter(&mut self, t: usize, kind: Kind, args: [u64; 3], sp: u64, stack: impl FnOnce() -> Vec<u64>) -> Option<(u64, u64)> {
        let [a, b, _] = args;
        let freed = if matches!(kind, Kind::Free | Kind::Realloc) { self.blocks.remove(&a).map(|block| (a, block.size)) } else { None };
        let size = match (kind, kind.size_arg()) {
            (Kind::Calloc, _) => a.saturating_mul(b),
            (_, Some(i)) => args[i],
            (_, None) => return freed,
        };
        if self.pending.len() <= t {
            self.pending.resize_with(t + 1, Vec::new);
        }
        let out = if kind == Kind::PosixMemalign { a } else { 0 };
        self.pending[t].push(Pending { kind, sp, size, stack: stack(), out });
        freed
    }

    /// Thread `t` returns from an allocating function with stack pointer `sp` (at the `ret`)
    /// and result `rax`: the block it allocated, if any (`posix_memalign`'s is where its first
    /// argument points, when it returns 0).
    pub fn returned(&mut self, t: usize, sp: u64, rax: u64) -> Option<u64> {
        let under_way = self.pending.get_mut(t)?;
        // (Entries deeper than this frame were left by a longjmp or an unwind: dropped.)
        while let Some(p) = under_way.pop() {
            if p.sp == sp {
                let block = match p.kind {
                    Kind::PosixMemalign if rax == 0 => crate::kernel::guest_mem::read_u64(p.out).unwrap_or(0),
                    Kind::PosixMemalign => 0,
                    _ => rax,
                };
                if block != 0 {
                    self.blocks.insert(block, Block { size: p.size, stack: p.stack });
                }
                return (block != 0).then_some(block);
            }
            if p.sp > sp {
                under_way.push(p);
                return None;
            }
        }
        None
    }

    /// Thread `t` leaves an allocating function by a jump out of its code with stack pointer
    /// `sp` and first argument `arg`: `calloc`'s last act can be a jump to `memset` (through
    /// the library's own PLT, to whichever version the CPU got), whose `ret` is then calloc's
    /// and whose first argument is the block.
    pub fn jumped_out(&mut self, t: usize, sp: u64, arg: u64) {
        let calloc = self.pending.get(t).and_then(|p| p.last()).is_some_and(|p| p.kind == Kind::Calloc && p.sp == sp);
        if calloc {
            self.returned(t, sp, arg);
        }
    }

    /// Whether a jump at `pc` to `target` leaves an allocating function's code.
    pub fn leaves_allocator(&self, pc: u64, target: u64) -> bool {
        self.bodies.iter().any(|b| (b.0..b.1).contains(&pc) && !(b.0..b.1).contains(&target))
    }

    /// The allocation function thread `t` is in with stack pointer `sp` (at its `ret`).
    pub fn pending_kind(&self, t: usize, sp: u64) -> Option<Kind> {
        self.pending.get(t)?.iter().rev().find(|p| p.sp == sp).map(|p| p.kind)
    }

    /// The live blocks, by address.
    pub fn blocks(&self) -> impl Iterator<Item = (u64, &Block)> {
        self.blocks.iter().map(|(&s, b)| (s, b))
    }

    /// The live block holding `addr`: its start and the block.
    pub fn block_at(&self, addr: u64) -> Option<(u64, &Block)> {
        let (&start, block) = self.blocks.range(..=addr).next_back()?;
        (addr < start.saturating_add(block.size.max(1))).then_some((start, block))
    }
}

/// The `ret`s of the code that the function `[start, end)` jumps to (a tail call out of it),
/// found by following its branches from there (a local function has no symbol to give its
/// extent; at most 4 KiB of code past the target).
fn tail_rets(start: u64, end: u64) -> Vec<u64> {
    use rtgrind_jit::iced_x86::{Decoder, DecoderOptions, FlowControl, Mnemonic, OpKind};
    let Some(code) = crate::kernel::guest_mem::read_vec(start, (end - start) as usize) else { return Vec::new() };
    let targets = Decoder::with_ip(64, &code, start, DecoderOptions::NONE)
        .into_iter()
        .filter(|i| i.mnemonic() == Mnemonic::Jmp && i.op0_kind() == OpKind::NearBranch64 && !(start..end).contains(&i.near_branch_target()))
        .map(|i| i.near_branch_target());
    let mut rets = Vec::new();
    for target in targets {
        let Some(code) = crate::kernel::guest_mem::read_vec(target, 4096) else { continue };
        let insns: BTreeMap<u64, rtgrind_jit::iced_x86::Instruction> =
            Decoder::with_ip(64, &code, target, DecoderOptions::NONE).into_iter().map(|i| (i.ip(), i)).collect();
        let (mut todo, mut seen) = (vec![target], std::collections::HashSet::new());
        while let Some(pc) = todo.pop() {
            let Some(i) = insns.get(&pc).filter(|_| seen.insert(pc)) else { continue };
            match i.flow_control() {
                FlowControl::Return => rets.push(pc),
                FlowControl::UnconditionalBranch if i.op0_kind() == OpKind::NearBranch64 => todo.push(i.near_branch_target()),
                FlowControl::ConditionalBranch => todo.extend([i.near_branch_target(), i.next_ip()]),
                FlowControl::Next | FlowControl::Call => todo.push(i.next_ip()),
                _ => {}
            }
        }
    }
    rets
}

/// The first `ret` in the code `[start, end)`, decoded in place.
fn first_ret(start: u64, end: u64) -> Option<u64> {
    use rtgrind_jit::iced_x86::{Decoder, DecoderOptions, Mnemonic};
    let code = crate::kernel::guest_mem::read_vec(start, (end - start) as usize)?;
    let mut d = Decoder::with_ip(64, &code, start, DecoderOptions::NONE);
    d.iter().find(|i| i.mnemonic() == Mnemonic::Ret && i.op_count() == 0).map(|i| i.ip())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_live_from_their_allocation_to_their_free() {
        let mut h = Heap::default();
        h.enter(1, Kind::Malloc, [24, 0, 0], 0x7000, || vec![0x401000]);
        // A nested allocation (malloc inside calloc's code) ends first, at its own frame.
        h.enter(1, Kind::Calloc, [4, 8, 0], 0x6f00, Vec::new);
        h.returned(1, 0x6f00, 0x5000);
        h.returned(1, 0x7000, 0x6000);
        assert_eq!(h.block_at(0x6017).map(|(s, b)| (s, b.size, b.stack.clone())), Some((0x6000, 24, vec![0x401000])));
        assert!(h.block_at(0x6018).is_none());
        assert_eq!(h.block_at(0x501f).map(|(s, b)| (s, b.size)), Some((0x5000, 32)));
        assert_eq!(h.enter(1, Kind::Free, [0x6000, 0, 0], 0x7000, Vec::new), Some((0x6000, 24)));
        assert!(h.block_at(0x6000).is_none());
        assert_eq!(h.enter(1, Kind::Free, [0x6000, 0, 0], 0x7000, Vec::new), None);
        // realloc frees its old block and allocates the new one.
        assert_eq!(h.enter(2, Kind::Realloc, [0x5000, 64, 0], 0x8000, Vec::new), Some((0x5000, 32)));
        h.returned(2, 0x8000, 0x9000);
        assert!(h.block_at(0x5000).is_none());
        assert_eq!(h.block_at(0x903f).map(|(s, b)| (s, b.size)), Some((0x9000, 64)));
        // calloc's jump to memset: its argument is the block; malloc's jumps are not.
        h.enter(3, Kind::Malloc, [8, 0, 0], 0x9000, Vec::new);
        h.jumped_out(3, 0x9000, 0xa000);
        assert!(h.block_at(0xa000).is_none());
        h.returned(3, 0x9000, 0);
        h.enter(3, Kind::Calloc, [1, 4800, 0], 0x9000, Vec::new);
        h.jumped_out(3, 0x9000, 0xb000);
        assert_eq!(h.block_at(0xb000 + 4799).map(|(s, b)| (s, b.size)), Some((0xb000, 4800)));
    }
}
