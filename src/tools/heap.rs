//! The program's live heap blocks (for the race tool, where a race's address was allocated,
//! as helgrind and TSan report it; for suppression runs, the blocks whose redzones to check):
//! the C library's `malloc`, `calloc`, `realloc` and `free` are watched at their entry (the
//! size asked for, the callers) and at their `ret`s (the block returned; or calloc's jump to
//! `memset`, which returns it for calloc), by address, as the library is mapped (`hook_at`
//! says where a tool puts its call-outs). C++'s `new` and everything else that allocates
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

const FUNCTIONS: [(&str, Kind); 4] = [("malloc", Kind::Malloc), ("calloc", Kind::Calloc), ("realloc", Kind::Realloc), ("free", Kind::Free)];
/// What an allocator that replaces the library's takes over besides: its blocks must never
/// reach the library's functions (only entries: their bodies never run).
const REPLACED: [(&str, Kind); 6] = [
    ("memalign", Kind::Memalign),
    ("aligned_alloc", Kind::Memalign),
    ("posix_memalign", Kind::PosixMemalign),
    ("valloc", Kind::Valloc),
    ("pvalloc", Kind::Pvalloc),
    ("malloc_usable_size", Kind::UsableSize),
];

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
                if matches!(kind, Kind::Malloc | Kind::Calloc | Kind::Realloc) && !self.bodies.contains(&(start, end)) {
                    self.bodies.push((start, end));
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
        if ins.mnemonic() == Mnemonic::Ret && self.in_allocator(pc) {
            return Some(Hook::Return);
        }
        let jump = ins.mnemonic() == Mnemonic::Jmp && ins.op0_kind() == OpKind::NearBranch64;
        (jump && self.leaves_allocator(pc, ins.near_branch_target())).then_some(Hook::JumpOut)
    }

    /// The allocation function whose entry is at `pc`.
    pub fn entry(&self, pc: u64) -> Option<Kind> {
        self.entries.get(&pc).copied()
    }

    /// Whether `pc` is in an allocating function's code (its `ret`s end an allocation).
    pub fn in_allocator(&self, pc: u64) -> bool {
        self.bodies.iter().any(|b| (b.0..b.1).contains(&pc))
    }

    /// Thread `t` enters `kind` with arguments `a` and `b` (rdi, rsi), its stack pointer at
    /// `sp` and callers `stack`. The block it frees, if any: (start, size).
    pub fn enter(&mut self, t: usize, kind: Kind, (a, b): (u64, u64), sp: u64, stack: impl FnOnce() -> Vec<u64>) -> Option<(u64, u64)> {
        let freed = if matches!(kind, Kind::Free | Kind::Realloc) { self.blocks.remove(&a).map(|block| (a, block.size)) } else { None };
        let size = match kind {
            Kind::Malloc => a,
            Kind::Calloc => a.saturating_mul(b),
            Kind::Realloc => b,
            // (Seen only by a replacing allocator, which does not call this.)
            _ => return freed,
        };
        if self.pending.len() <= t {
            self.pending.resize_with(t + 1, Vec::new);
        }
        self.pending[t].push(Pending { kind, sp, size, stack: stack() });
        freed
    }

    /// Thread `t` returns from an allocating function with stack pointer `sp` (at the `ret`)
    /// and result `block`.
    pub fn returned(&mut self, t: usize, sp: u64, block: u64) {
        let Some(under_way) = self.pending.get_mut(t) else { return };
        // (Entries deeper than this frame were left by a longjmp or an unwind: dropped.)
        while let Some(p) = under_way.pop() {
            if p.sp == sp {
                if block != 0 {
                    self.blocks.insert(block, Block { size: p.size, stack: p.stack });
                }
                return;
            }
            if p.sp > sp {
                under_way.push(p);
                return;
            }
        }
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
        h.enter(1, Kind::Malloc, (24, 0), 0x7000, || vec![0x401000]);
        // A nested allocation (malloc inside calloc's code) ends first, at its own frame.
        h.enter(1, Kind::Calloc, (4, 8), 0x6f00, Vec::new);
        h.returned(1, 0x6f00, 0x5000);
        h.returned(1, 0x7000, 0x6000);
        assert_eq!(h.block_at(0x6017).map(|(s, b)| (s, b.size, b.stack.clone())), Some((0x6000, 24, vec![0x401000])));
        assert!(h.block_at(0x6018).is_none());
        assert_eq!(h.block_at(0x501f).map(|(s, b)| (s, b.size)), Some((0x5000, 32)));
        assert_eq!(h.enter(1, Kind::Free, (0x6000, 0), 0x7000, Vec::new), Some((0x6000, 24)));
        assert!(h.block_at(0x6000).is_none());
        assert_eq!(h.enter(1, Kind::Free, (0x6000, 0), 0x7000, Vec::new), None);
        // realloc frees its old block and allocates the new one.
        assert_eq!(h.enter(2, Kind::Realloc, (0x5000, 64), 0x8000, Vec::new), Some((0x5000, 32)));
        h.returned(2, 0x8000, 0x9000);
        assert!(h.block_at(0x5000).is_none());
        assert_eq!(h.block_at(0x903f).map(|(s, b)| (s, b.size)), Some((0x9000, 64)));
        // calloc's jump to memset: its argument is the block; malloc's jumps are not.
        h.enter(3, Kind::Malloc, (8, 0), 0x9000, Vec::new);
        h.jumped_out(3, 0x9000, 0xa000);
        assert!(h.block_at(0xa000).is_none());
        h.returned(3, 0x9000, 0);
        h.enter(3, Kind::Calloc, (1, 4800), 0x9000, Vec::new);
        h.jumped_out(3, 0x9000, 0xb000);
        assert_eq!(h.block_at(0xb000 + 4799).map(|(s, b)| (s, b.size)), Some((0xb000, 4800)));
    }
}
