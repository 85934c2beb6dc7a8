//! The heap's part of a layout: which block follows which. An overflow past a heap block lands
//! in whatever the C library's allocator put next, often a block nobody reads again. Under a
//! layout with heap pairs, rtgrind's own allocator replaces the library's (`malloc`, `calloc`,
//! `realloc`, `free`, the `memalign` family, `malloc_usable_size`; C++'s `new` and `delete`
//! go through them) and places each block itself, without headers between blocks: the next
//! block of a pair's follower site goes right after the latest block of its buffer site (or,
//! when the follower comes first, the buffer's next block ends where it starts). The sites are
//! the program's calls that allocate, by the return address of the call (the first in the
//! program on the stack, for an allocation made by a library function such as `strdup`).

use crate::tools::address_hash::Fast;
use crate::tools::heap::{Heap, Hook, Kind};
use rtgrind_jit::iced_x86::Instruction;
use rtgrind_jit::instrument::Inline;
use rtgrind_jit::ThreadContext;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// An allocation site, as a record run saw it: the return address of its call (the program
/// file's own address), the largest block it allocated, and whether its blocks held pointers
/// (at their free or at the end: an address-related object).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Site {
    pub site: u64,
    pub size: u64,
    pub pointers: bool,
}

/// A pair of a layout: the blocks of site `follower` placed right after the blocks of site
/// `buffer` (rooms made for the largest blocks a record run saw at each).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeapPair {
    pub buffer: u64,
    pub buffer_size: u64,
    pub follower: u64,
    pub follower_size: u64,
}

/// The alignment `malloc` promises, and the unit blocks are placed in.
const ALIGN: u64 = 16;

fn room(size: u64) -> u64 {
    size.max(1).div_ceil(ALIGN) * ALIGN
}

/// rtgrind's allocator in a run under a heap layout: blocks placed in a region of the guest's
/// memory rtgrind reserved, bump by bump, freed blocks reused by the room they take (last
/// freed first), and the layout's pairs placed next to each other. Sites are file addresses.
pub struct Placement {
    start: u64,
    end: u64,
    next: u64,
    live: BlockTable,
    free: HashMap<u64, Vec<u64>, Fast>,
    pairs: Vec<HeapPair>,
    /// A place made for a follower site's next block, right after a buffer block: (at, room).
    after: HashMap<u64, (u64, u64)>,
    /// A room made for a buffer site's next block, ending where a follower block starts.
    before: HashMap<u64, (u64, u64)>,
    /// With a seed (a random layout), each new block is placed 0 to 3 units further on.
    seed: Option<u64>,
}

impl Placement {
    /// An allocator over the region `[start, end)`, placing the `pairs`.
    pub fn new(start: u64, end: u64, pairs: Vec<HeapPair>, seed: Option<u64>) -> Placement {
        Placement {
            start,
            end,
            next: start,
            live: BlockTable::new(start, end),
            free: HashMap::default(),
            pairs,
            after: HashMap::new(),
            before: HashMap::new(),
            seed,
        }
    }

    /// Whether `a` is in the allocator's region (a block of its, live or not).
    pub fn owns(&self, a: u64) -> bool {
        (self.start..self.end).contains(&a)
    }

    /// The live block starting at `block`: its site and size.
    pub fn live(&self, block: u64) -> Option<(u64, u64)> {
        self.live.get(block)
    }

    /// Whether `a` is in a live block (by the room it takes).
    pub fn holding(&self, a: u64) -> bool {
        // (Blocks are in rooms of 16-byte units: at most one lookup per unit back to a start.)
        let unit = a & !(ALIGN - 1);
        self.owns(a) && (0..64).map(|k| unit.wrapping_sub(k * ALIGN)).filter(|&s| s >= self.start).any(|s| self.live.get(s).is_some_and(|b| a < s + room(b.1)))
    }

    /// A block of `size` bytes aligned to `align` (a power of two) for an allocation at
    /// `site`; None when the region is full (the library's allocator then serves it).
    pub fn alloc(&mut self, site: u64, size: u64, align: u64) -> Option<u64> {
        let r = room(size);
        let placed = (align <= ALIGN).then(|| self.reserved(site, r)).flatten();
        let at = match placed {
            Some(at) => at,
            None => self.fresh(site, r, align.max(ALIGN))?,
        };
        self.live.insert(at, size, site);
        Some(at)
    }

    /// A place the pairs reserved for `site`, else a freed block of the same room.
    fn reserved(&mut self, site: u64, r: u64) -> Option<u64> {
        // (Whatever a room leaves beside the block stays unused.)
        if let Some(&(at, _)) = self.after.get(&site).filter(|p| p.1 >= r) {
            self.after.remove(&site);
            return Some(at);
        }
        if let Some(&(_, end)) = self.before.get(&site).filter(|p| p.1 - p.0 >= r) {
            self.before.remove(&site);
            return Some(end - r);
        }
        self.free.get_mut(&r).and_then(Vec::pop)
    }

    /// A new block from the region's unused end, with the room its pairs want around it.
    fn fresh(&mut self, site: u64, r: u64, align: u64) -> Option<u64> {
        let gap = gap(&mut self.seed);
        let before = self.pairs.iter().find(|p| p.follower == site && !self.before.contains_key(&p.buffer)).map(|p| (p.buffer, room(p.buffer_size)));
        let ahead = before.map_or(0, |b| b.1);
        let at = (self.next + gap + ahead).checked_next_multiple_of(align)?;
        let mut next = at.checked_add(r)?;
        let after = self.pairs.iter().find(|p| p.buffer == site).map(|p| (p.follower, room(p.follower_size)));
        if let Some((follower, room)) = after {
            self.after.insert(follower, (next, room));
            next = next.checked_add(room)?;
        }
        if next > self.end {
            return None;
        }
        if let Some((buffer, room)) = before {
            self.before.insert(buffer, (at - room, at));
        }
        self.next = next;
        Some(at)
    }

    /// `alloc` without pairs, at no site, as far as it goes without allocating any of
    /// rtgrind's own memory (a light call-out's): None where it would (or could not place).
    pub fn alloc_light(&mut self, size: u64) -> Option<u64> {
        if !self.pairs.is_empty() {
            return None;
        }
        let r = room(size);
        if let Some(list) = self.free.get_mut(&r) {
            if let Some(&at) = list.last() {
                let placed = self.live.insert_light(at, size, 0);
                if placed {
                    list.pop();
                }
                return placed.then_some(at);
            }
        }
        // (The seed moves on only if the block is placed: the full path draws the same gap.)
        let mut seed = self.seed;
        let at = (self.next + gap(&mut seed)).checked_next_multiple_of(ALIGN)?;
        let next = at.checked_add(r).filter(|&n| n <= self.end)?;
        if !self.live.insert_light(at, size, 0) {
            return None;
        }
        (self.seed, self.next) = (seed, next);
        Some(at)
    }

    /// `free` of a live block as far as it goes without allocating (see `alloc_light`).
    pub fn free_light(&mut self, block: u64) -> Option<()> {
        let (_, size) = self.live.get(block)?;
        let list = self.free.get_mut(&room(size)).filter(|l| l.len() < l.capacity())?;
        list.push(block);
        self.live.remove(block);
        Some(())
    }

    /// Frees a block of the region: false if it is no live block (a double or wild free,
    /// which does nothing).
    pub fn free(&mut self, block: u64) -> bool {
        let Some((_, size)) = self.live.remove(block) else { return false };
        let r = room(size);
        self.free.entry(r).or_default().push(block);
        true
    }
}

/// How far on a new block goes: 0 to 3 units drawn from a random layout's seed, else 0.
fn gap(seed: &mut Option<u64>) -> u64 {
    seed.as_mut().map_or(0, |s| crate::kernel::repeat::splitmix(s) % 4 * ALIGN)
}

/// The live blocks of a placement's region by start (their size and site), in a table of
/// 16-byte units per 64 KiB page, made when a block first starts in the page: beside the
/// blocks rather than hashed (freeing a tree of a million nodes missed the cache at every
/// lookup of a hash map).
struct BlockTable {
    start: u64,
    pages: Vec<Option<Box<[u64]>>>,
    sites: Vec<u64>,
    site_index: HashMap<u64, u32, Fast>,
}

const PAGE_SHIFT: u32 = 16;
const PAGE_UNITS: usize = 1 << (PAGE_SHIFT - 4);

impl BlockTable {
    fn new(start: u64, end: u64) -> BlockTable {
        let pages = ((end - start) >> PAGE_SHIFT) as usize + 1;
        BlockTable { start, pages: vec![None; pages], sites: Vec::new(), site_index: HashMap::default() }
    }

    /// The page and unit of `at` (a unit start in the region).
    fn place(&self, at: u64) -> (usize, usize) {
        let off = at - self.start;
        ((off >> PAGE_SHIFT) as usize, ((off >> 4) as usize) & (PAGE_UNITS - 1))
    }

    /// The site's index and `at`'s page table made where missing, then `insert_light`.
    fn insert(&mut self, at: u64, size: u64, site: u64) {
        let n = self.sites.len() as u32;
        if *self.site_index.entry(site).or_insert(n) == n {
            self.sites.push(site);
        }
        let (p, _) = self.place(at);
        self.pages[p].get_or_insert_with(|| vec![0; PAGE_UNITS].into_boxed_slice());
        let placed = self.insert_light(at, size, site);
        debug_assert!(placed, "the site and the page are known now");
    }

    /// An entry, (size + 1) << 24 | the site's index (0: no block starts there), where the site
    /// is known and `at`'s page has its table already (nothing to allocate): false otherwise.
    fn insert_light(&mut self, at: u64, size: u64, site: u64) -> bool {
        let Some(&k) = self.site_index.get(&site) else { return false };
        let (p, u) = self.place(at);
        let Some(Some(table)) = self.pages.get_mut(p) else { return false };
        table[u] = (size + 1) << 24 | u64::from(k);
        true
    }

    /// The block starting at `at`: its site and size.
    fn get(&self, at: u64) -> Option<(u64, u64)> {
        if at < self.start || !at.is_multiple_of(ALIGN) {
            return None;
        }
        let (p, u) = self.place(at);
        let e = *self.pages.get(p)?.as_ref()?.get(u)?;
        (e != 0).then(|| (self.sites[(e & 0xff_ffff) as usize], (e >> 24) - 1))
    }

    fn remove(&mut self, at: u64) -> Option<(u64, u64)> {
        let found = self.get(at)?;
        let (p, u) = self.place(at);
        self.pages[p].as_mut().expect("a block's page has its table")[u] = 0;
        Some(found)
    }

    /// Every live block's start.
    fn starts(&self) -> Vec<u64> {
        let units = self.pages.iter().enumerate().filter_map(|(p, t)| Some((p, t.as_ref()?)));
        units
            .flat_map(|(p, t)| t.iter().enumerate().filter(|e| *e.1 != 0).map(move |(u, _)| ((p as u64) << PAGE_SHIFT) + ((u as u64) << 4)))
            .map(|off| self.start + off)
            .collect()
    }
}

/// The allocation site of a call whose return address is at `sp`: that address if it is in
/// the program's code `[lo, hi)`, else the first return address into the program above it on
/// the stack (a library function allocating for it; `tools::return_addresses`, 63 words at
/// most), else 0 (unknown).
pub fn site(sp: u64, (lo, hi): (u64, u64)) -> u64 {
    // SAFETY: `sp` is the stack pointer at an allocation function's entry: the word there is
    // the return address its call pushed, on the thread's mapped stack.
    let ret = unsafe { *(sp as *const u64) };
    if (lo..hi).contains(&ret) {
        return ret;
    }
    crate::tools::return_addresses(sp + 8, sp + 8 + 8 * 63).find(|a| (lo..hi).contains(a)).unwrap_or(0)
}

/// What a record run notes of the heap: each allocation site's largest block and whether its
/// blocks held pointers, in the order the sites first allocated.
#[derive(Default)]
pub struct SiteRecord {
    sites: Vec<Site>,
    index: HashMap<u64, usize>,
}

impl SiteRecord {
    /// A block of `size` bytes allocated at `site` (a file address; 0: unknown, not noted).
    pub fn allocated(&mut self, site: u64, size: u64) {
        if site == 0 {
            return;
        }
        let n = self.sites.len();
        let k = *self.index.entry(site).or_insert(n);
        if k == n {
            self.sites.push(Site { site, size: 0, pointers: false });
        }
        self.sites[k].size = self.sites[k].size.max(size);
    }

    /// A block of `site` held pointers (at its free, or at the end), or did not.
    pub fn held_pointers(&mut self, site: u64, pointers: bool) {
        if let Some(&k) = self.index.get(&site) {
            self.sites[k].pointers |= pointers;
        }
    }
}

/// The heap under a layout: the allocator replaced (a layout with heap pairs, or a random
/// one), or the allocation sites noted (`--layout-record`), or both.
pub struct HeapLayer {
    heap: Heap,
    placement: Option<Placement>,
    record: Option<SiteRecord>,
    /// The program's mapped range and its load bias (sites are noted as file addresses).
    program: (u64, u64),
    bias: u64,
    /// Each thread's index in `heap` (by its context's address).
    threads: Vec<usize>,
    /// The call-outs' arguments (boxed: translations hold their addresses).
    #[allow(clippy::vec_box)]
    hooks: Vec<Box<HookArg>>,
}

struct HookArg {
    layer: *mut HeapLayer,
    hook: Hook,
    /// Registers the hook's code lent.
    spilled: u16,
}

/// The common `malloc` and `free` under a placement without pairs or a record, in a light
/// call-out (see `Placement::alloc_light`); where it cannot, the full call-out after it does.
extern "C" fn heap_light(ctx: *mut ThreadContext, arg: u64) {
    // SAFETY: as `heap_callout`'s.
    let (ctx, a) = unsafe { (&mut *ctx, &*(arg as *const HookArg)) };
    // SAFETY: as above.
    let layer = unsafe { &mut *a.layer };
    let (Some(p), Some(ret)) = (layer.placement.as_mut(), layer.heap.a_ret()) else { return };
    let rdi = ctx.guest_gprs(a.spilled)[7];
    let result = match a.hook {
        Hook::Enter(Kind::Malloc) => p.alloc_light(rdi),
        Hook::Enter(Kind::Free) if rdi == 0 => Some(0),
        Hook::Enter(Kind::Free) => p.free_light(rdi).map(|_| 0),
        _ => None,
    };
    if let Some(v) = result {
        ctx.set_guest_gpr(a.spilled, 0, v);
        ctx.redirect = ret;
    }
}

extern "C" fn heap_callout(ctx: *mut ThreadContext, arg: u64) {
    // SAFETY: rtg_callout passes this thread's context; `arg` is a `HookArg` the boxed layer
    // keeps for the whole run, touched by the thread holding the baton only.
    let (ctx, a) = unsafe { (&mut *ctx, &*(arg as *const HookArg)) };
    // SAFETY: as above.
    unsafe { &mut *a.layer }.hooked(ctx, a.hook, a.spilled);
}

impl HeapLayer {
    /// `placement` replaces the allocator; `record` notes the sites. `program` is the
    /// program's mapped range, `bias` its load bias.
    pub fn new(placement: Option<Placement>, record: bool, program: (u64, u64), bias: u64) -> Box<HeapLayer> {
        let heap = if placement.is_some() { Heap::replacing() } else { Heap::default() };
        let record = record.then(SiteRecord::default);
        Box::new(HeapLayer { heap, placement, record, program, bias, threads: Vec::new(), hooks: Vec::new() })
    }

    /// The C library's allocation functions learnt as it is mapped.
    pub fn note_mapping(&mut self, mem: &crate::kernel::memory::GuestMemory, start: u64, end: u64) {
        self.heap.note_mapping(mem, start, end);
    }

    /// Whether `instrument` may hook the instruction at `pc`.
    pub fn watches(&self, pc: u64) -> bool {
        self.heap.watches(pc)
    }

    /// The call-out before an allocation function's instruction `ins`: at its entry, under a
    /// placement, the function replaced (the call-out's result returned by a `ret` of the
    /// allocator); while recording, entries, returns and jumps out watched.
    pub fn instrument(&mut self, ins: &Instruction, b: &mut Inline) {
        let Some(hook) = self.heap.hook_at(ins) else { return };
        let replacing = self.placement.is_some();
        if replacing && !matches!(hook, Hook::Enter(_)) {
            return;
        }
        let r = b.scratch();
        let arg = Box::new(HookArg { layer: self as *mut HeapLayer, hook, spilled: b.spilled() });
        let pairs = self.placement.as_ref().is_some_and(|p| !p.pairs.is_empty());
        if replacing && !pairs && self.record.is_none() && matches!(hook, Hook::Enter(Kind::Malloc | Kind::Free)) {
            // (A full call-out's state save was most of the cost of a tiny block's malloc.)
            b.callout_light(heap_light, &*arg as *const HookArg as u64, r);
            b.exit_if_redirected();
        }
        b.callout(heap_callout, &*arg as *const HookArg as u64, r);
        self.hooks.push(arg);
        if replacing {
            b.exit_if_redirected();
        }
        b.release_scratch();
    }

    fn hooked(&mut self, ctx: &mut ThreadContext, hook: Hook, spilled: u16) {
        let regs = ctx.guest_gprs(spilled);
        let sp = regs[4];
        if let Hook::Enter(Kind::Free | Kind::Realloc) = hook {
            self.scan(regs[7]);
        }
        if let (Some(p), Hook::Enter(kind)) = (self.placement.as_mut(), hook) {
            // (A free or a size query has no site: no stack scan on their way.)
            let placed = !matches!(kind, Kind::Free | Kind::UsableSize);
            let site = if placed { file_site(site(sp, self.program), self.bias) } else { 0 };
            if let Some(result) = replace(p, kind, &regs, site) {
                ctx.set_guest_gpr(spilled, 0, result);
                ctx.redirect = self.heap.a_ret().expect("the allocator's entries are known with its code");
                if let (Some(rec), Some((_, size))) = (self.record.as_mut(), p.live(result).filter(|_| allocates(kind))) {
                    rec.allocated(site, size);
                }
            }
            return;
        }
        let key = ctx as *const ThreadContext as usize;
        let t = self.threads.iter().position(|&k| k == key).unwrap_or_else(|| {
            self.threads.push(key);
            self.threads.len() - 1
        });
        let (bias, program) = (self.bias, self.program);
        let block = match hook {
            Hook::Enter(kind) => {
                self.heap.enter(t, kind, [regs[7], regs[6], regs[2]], sp, || vec![file_site(site(sp, program), bias)]);
                return;
            }
            Hook::Return => match self.heap.returned(t, sp, regs[0]) {
                Some(block) => block,
                None => return,
            },
            Hook::JumpOut => {
                self.heap.jumped_out(t, sp, regs[7]);
                regs[7]
            }
        };
        if let Some((site, size)) = self.block(block) {
            if let Some(rec) = self.record.as_mut() {
                rec.allocated(site, size);
            }
        }
    }

    /// The live block starting at `block`: its site and size.
    fn block(&self, block: u64) -> Option<(u64, u64)> {
        match &self.placement {
            Some(p) => p.live(block),
            None => self.heap.block_at(block).filter(|(s, _)| *s == block).map(|(_, b)| (b.stack.first().copied().unwrap_or(0), b.size)),
        }
    }

    /// Notes whether the live block at `block` holds a pointer (an aligned word that is an
    /// address in the program or in a live block), for its site.
    fn scan(&mut self, block: u64) {
        if self.record.is_none() {
            return;
        }
        let Some((site, size)) = self.block(block) else { return };
        let Some(bytes) = crate::kernel::guest_mem::read_vec(block, size.min(4096) as usize) else { return };
        let words = bytes.chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")));
        let program = self.program;
        let is_address = |v: u64| (program.0..program.1).contains(&v) || self.block_holding(v);
        let pointers = words.into_iter().any(is_address);
        if let Some(rec) = self.record.as_mut() {
            rec.held_pointers(site, pointers);
        }
    }

    /// Whether `a` is in a live block.
    fn block_holding(&self, a: u64) -> bool {
        match &self.placement {
            Some(p) => p.holding(a),
            None => self.heap.block_at(a).is_some(),
        }
    }

    /// At the run's end: the live blocks scanned, and the sites noted (for `Accessed`).
    pub fn finish(&mut self) -> Vec<Site> {
        let live: Vec<u64> = match &self.placement {
            Some(p) => p.live.starts(),
            None => self.heap.blocks().map(|(s, _)| s).collect(),
        };
        for block in live {
            self.scan(block);
        }
        self.record.as_ref().map(|r| r.sites.clone()).unwrap_or_default()
    }
}

/// The file address of a run's site (0 stays unknown).
fn file_site(site: u64, bias: u64) -> u64 {
    if site == 0 {
        0
    } else {
        site - bias
    }
}

/// Whether `kind` returns a new block.
fn allocates(kind: Kind) -> bool {
    !matches!(kind, Kind::Free | Kind::UsableSize | Kind::PosixMemalign)
}

/// A replaced allocation function's work, with the guest's registers `regs` at its entry, for
/// an allocation at `site`: its result (rax), or None to leave the call to the library (a
/// block not of the placement's region, a region full, a size that overflows).
fn replace(p: &mut Placement, kind: Kind, regs: &[u64; 16], site: u64) -> Option<u64> {
    let (a, b, c) = (regs[7], regs[6], regs[2]);
    let zero = |block: u64, n: u64| {
        // SAFETY: a live block of the placement's region, mapped read-write for the guest.
        unsafe { std::ptr::write_bytes(block as *mut u8, 0, n as usize) };
        block
    };
    match kind {
        Kind::Malloc => p.alloc(site, a, ALIGN),
        Kind::Calloc => {
            let n = a.checked_mul(b)?;
            p.alloc(site, n, ALIGN).map(|block| zero(block, n))
        }
        Kind::Free => (a == 0 || p.owns(a)).then(|| {
            p.free(a);
            0
        }),
        Kind::Realloc if a == 0 => p.alloc(site, b, ALIGN),
        Kind::Realloc => {
            if !p.owns(a) {
                return None;
            }
            let Some((_, old)) = p.live(a) else { return Some(0) };
            if b == 0 {
                p.free(a);
                return Some(0);
            }
            let new = p.alloc(site, b, ALIGN)?;
            // SAFETY: two live blocks of the placement's region, distinct, each as long as
            // the bytes copied.
            unsafe { std::ptr::copy_nonoverlapping(a as *const u8, new as *mut u8, old.min(b) as usize) };
            p.free(a);
            Some(new)
        }
        Kind::Memalign => p.alloc(site, b, a.max(1).checked_next_power_of_two()?),
        Kind::Valloc => p.alloc(site, a, 4096),
        Kind::Pvalloc => p.alloc(site, a.checked_next_multiple_of(4096)?, 4096),
        Kind::PosixMemalign => {
            if !b.is_power_of_two() || !b.is_multiple_of(8) {
                return Some(libc::EINVAL as u64);
            }
            let block = p.alloc(site, c, b)?;
            if !crate::kernel::guest_mem::write_u64(a, block) {
                p.free(block);
                return None;
            }
            Some(0)
        }
        Kind::UsableSize if a == 0 => Some(0),
        Kind::UsableSize => p.owns(a).then(|| p.live(a).map_or(0, |l| l.1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks are packed without headers, freed ones reused by room; a pair's follower goes
    /// right after its buffer's block whichever comes first; a full region serves nothing.
    #[test]
    fn blocks_are_placed_by_pairs_and_reused_by_room() {
        let pair = HeapPair { buffer: 0xb, buffer_size: 24, follower: 0xf, follower_size: 16 };
        let mut p = Placement::new(0x10000, 0x10200, vec![pair], None);
        let a = p.alloc(0x1, 10, 16).unwrap();
        let buffer = p.alloc(0xb, 24, 16).unwrap();
        let other = p.alloc(0x2, 8, 16).unwrap();
        let follower = p.alloc(0xf, 16, 16).unwrap();
        assert_eq!((a, buffer), (0x10000, 0x10010));
        // The follower's place was made right after the buffer's 32 bytes.
        assert_eq!((follower, other), (0x10030, 0x10040));
        assert_eq!(p.live(buffer), Some((0xb, 24)));
        // The follower first: the buffer's next block ends where it starts.
        let follower = p.alloc(0xf, 16, 16).unwrap();
        let buffer = p.alloc(0xb, 20, 16).unwrap();
        assert_eq!(buffer + 32, follower);
        assert!(p.free(a) && !p.free(a));
        assert_eq!(p.alloc(0x3, 16, 16), Some(a));
        assert_eq!(p.alloc(0x3, 64, 64).map(|b| b % 64), Some(0));
        assert!(p.owns(a) && !p.owns(0x10200));
        assert_eq!(p.alloc(0x3, 0x200, 16), None);
    }

    /// The light paths place and free as the full ones do, and decline what would allocate:
    /// a page without its table, a site not seen, a free list without room, any pair.
    #[test]
    fn light_paths_decline_what_would_allocate() {
        let mut p = Placement::new(0x100000, 0x140000, Vec::new(), None);
        assert_eq!(p.alloc_light(8), None);
        let a = p.alloc(0, 8, 16).unwrap();
        let b = p.alloc_light(20).unwrap();
        assert_eq!((a, b, p.live(b)), (0x100000, 0x100010, Some((0, 20))));
        // The first free of a room makes its list: the full path's.
        assert_eq!(p.free_light(a), None);
        assert!(p.free(a));
        let c = p.alloc_light(16).unwrap();
        assert_eq!(c, a);
        assert_eq!(p.free_light(c), Some(()));
        assert_eq!((p.live(c), p.free_light(c)), (None, None));
        // A block starting in the next 64 KiB page: its table is not made yet.
        assert_eq!(p.alloc_light(0x10000), Some(0x100030));
        assert_eq!(p.alloc_light(40), None);
        assert_eq!(p.alloc(0, 40, 16), Some(0x110030));
        assert_eq!(p.alloc_light(40), Some(0x110060));
        let mut paired = Placement::new(0x100000, 0x140000, vec![HeapPair { buffer: 1, buffer_size: 8, follower: 2, follower_size: 8 }], None);
        paired.alloc(0, 8, 16).unwrap();
        assert_eq!(paired.alloc_light(8), None);
    }
}
