//! Heap redzones: the heap's part of variable re-ordering (the dissertation's §5.3, Fig. 5.7).
//! An overflow past a heap block often corrupts nothing the run goes on to use, and then no
//! crash shows it. A run with redzones asks the C library for `REDZONE` more bytes with every
//! block (`malloc`, `calloc`, `realloc`, the `memalign` family; C++'s `new` through them),
//! fills them with a known
//! byte when the block comes back, and checks them when the block is freed or reallocated and
//! when the process ends: a byte that changed is the run's failure, and the store that wrote
//! it is what the failure used (its origin, in a traced run), so suppression goes on from the
//! overflowing store as from a crash.

use crate::tools::heap::{Heap, Kind};
use std::collections::HashMap;

/// Bytes after each block.
pub const REDZONE: u64 = 16;
/// What a redzone holds (a `calloc` block's: zeros, as the library's `memset` of the whole
/// request leaves it).
const FILL: u8 = 0xfa;
/// What a freed block holds while it waits in quarantine.
const FREED: u8 = 0xfb;
/// Bytes of freed blocks kept from reuse at most (then frees go through).
const QUARANTINE: u64 = 16 << 20;

/// The blocks with redzones and what theirs hold.
#[derive(Default)]
pub struct Redzones {
    pub heap: Heap,
    /// Each live block's redzone byte, by block start.
    fill: HashMap<u64, u8>,
    /// Freed blocks kept from reuse, filled with `FREED` (start, size), and their bytes.
    quarantine: HashMap<u64, u64>,
    quarantined: u64,
    /// Pages a redzone was written on through the kernel, so known writable.
    writable: std::collections::HashSet<u64>,
}

/// A redzone found overwritten (or, `after_free`, a quarantined block written): its block,
/// the first byte that changed, and when it was seen.
#[derive(Debug, PartialEq, Eq)]
pub struct Overwritten {
    pub block: u64,
    pub size: u64,
    pub byte: u64,
    pub when: &'static str,
    pub after_free: bool,
}

impl Redzones {
    /// At an allocation function's entry: the block it frees, checked, and the arguments it
    /// is to run with instead (`rdi`, `rsi`, `rdx`), asking for the redzone too; a freed block
    /// kept in quarantine if `quarantine` allows.
    pub fn enter(&mut self, t: usize, kind: Kind, [rdi, rsi, rdx]: [u64; 3], sp: u64, quarantine: bool) -> (Option<Overwritten>, [u64; 3]) {
        let freed = self.heap.enter(t, kind, [rdi, rsi, rdx], sp, Vec::new);
        let when = if kind == Kind::Free { "at its free" } else { "at its realloc" };
        let overwritten = freed.and_then(|(block, size)| self.check(block, size, when, false));
        if matches!(kind, Kind::Free | Kind::Realloc) {
            // A quarantined block freed again (or reallocated) is the library's live block it
            // still is: freed now (once, as the library sees it), or reallocated.
            self.unquarantine(rdi);
        }
        if let Some((block, size)) = freed.filter(|&(_, size)| quarantine && kind == Kind::Free && self.quarantined + size <= QUARANTINE) {
            // Kept from reuse and filled: a write through a stale pointer changes the fill
            // (checked at the end), a read of a pointer gets a non-canonical one. The library
            // is asked to free nothing.
            // SAFETY: the library's live block of `size` bytes (it has not freed it and will
            // not: its free is made `free(NULL)`), mapped and writable in this process.
            unsafe { std::ptr::write_bytes(block as *mut u8, FREED, size as usize) };
            self.quarantine.insert(block, size);
            self.quarantined += size;
            return (overwritten, [0, rsi, rdx]);
        }
        let mut args = [rdi, rsi, rdx];
        match (kind, kind.size_arg()) {
            // (An overflowing product is the library's to refuse: left as asked.)
            (Kind::Calloc, _) => {
                if let Some(n) = rdi.checked_mul(rsi).and_then(|n| n.checked_add(REDZONE)) {
                    args = [1, n, rdx];
                }
            }
            // (realloc to 0 frees.)
            (Kind::Realloc, _) if rsi == 0 => {}
            (_, Some(i)) => args[i] = args[i].saturating_add(REDZONE),
            (_, None) => {}
        }
        (overwritten, args)
    }

    /// An allocation function returned `block` (or calloc jumped out to its `memset` with it):
    /// its redzone is filled, for calloc by that `memset`.
    pub fn returned(&mut self, t: usize, sp: u64, block: u64, jumped_out: bool) {
        let kind = self.heap.pending_kind(t, sp);
        // (Only calloc's jump out returns a block; a `ret` ends an allocation under way.)
        if kind.is_none() || jumped_out && kind != Some(Kind::Calloc) {
            return;
        }
        let block = if jumped_out {
            self.heap.jumped_out(t, sp, block);
            block
        } else {
            // (posix_memalign's block is where its argument points, not its result.)
            match self.heap.returned(t, sp, block) {
                Some(b) => b,
                None => return,
            }
        };
        let Some((start, b)) = self.heap.block_at(block).filter(|(s, _)| *s == block) else { return };
        let (size, fill) = (b.size, if kind == Some(Kind::Calloc) { 0 } else { FILL });
        if !jumped_out && !self.fill_zone(start + size, fill) {
            // (Not the library's block: a suppression run changed what the allocator did.)
            return;
        }
        self.fill.insert(start, fill);
    }

    /// Fills the redzone at `zone`: in place on pages a fill already wrote, through the kernel
    /// on others (a checked copy at every allocation cost more than the rest of the hook, but
    /// a suppression run can make an allocator return what is no block). False if it is not
    /// writable memory.
    fn fill_zone(&mut self, zone: u64, fill: u8) -> bool {
        let pages = [zone >> 12, (zone + REDZONE - 1) >> 12];
        if pages.iter().all(|p| self.writable.contains(p)) {
            // SAFETY: pages this process wrote a redzone on, which the guest has not unmapped
            // since (`unmapped` forgets them): mapped and writable.
            unsafe { std::ptr::write_bytes(zone as *mut u8, fill, REDZONE as usize) };
            return true;
        }
        if !crate::kernel::guest_mem::write(zone, &[fill; REDZONE as usize]) {
            return false;
        }
        self.writable.extend(pages);
        true
    }

    /// The guest unmapped or remapped `[start, end)` (or changed its protection): redzones
    /// there are filled through the kernel again.
    pub fn unmapped(&mut self, start: u64, end: u64) {
        self.writable.retain(|p| !(start >> 12..end.div_ceil(4096)).contains(p));
    }

    /// The first overwritten byte of the redzone after `block` (of `size` bytes), if any; read
    /// through the kernel if `checked` (at the end, once for every block: the program may have
    /// unmapped what it never freed), else in place (at a free, on the hot path).
    fn check(&mut self, block: u64, size: u64, when: &'static str, checked: bool) -> Option<Overwritten> {
        let fill = self.fill.remove(&block)?;
        let copy;
        let zone = if checked {
            copy = crate::kernel::guest_mem::read_vec(block + size, REDZONE as usize)?;
            &copy[..]
        } else {
            // SAFETY: a live block's redzone, filled at its allocation: the allocator still
            // owns that memory and is about to read the block's header beside it.
            unsafe { std::slice::from_raw_parts((block + size) as *const u8, REDZONE as usize) }
        };
        let k = zone.iter().position(|&b| b != fill)?;
        Some(Overwritten { block, size, byte: block + size + k as u64, when, after_free: false })
    }

    fn unquarantine(&mut self, block: u64) {
        if let Some(size) = self.quarantine.remove(&block) {
            self.quarantined -= size;
        }
    }

    /// At the process's end: the first live block (by address) whose redzone was overwritten,
    /// else the first quarantined block written after its free.
    pub fn at_exit(&mut self) -> Option<Overwritten> {
        let blocks: Vec<(u64, u64)> = self.heap.blocks().map(|(s, b)| (s, b.size)).collect();
        let zone = blocks.into_iter().find_map(|(s, size)| self.check(s, size, "at the end of the run", true));
        zone.or_else(|| {
            let mut kept: Vec<(u64, u64)> = self.quarantine.iter().map(|(&b, &s)| (b, s)).collect();
            kept.sort_unstable();
            kept.into_iter().find_map(|(block, size)| {
                let bytes = crate::kernel::guest_mem::read_vec(block, size as usize)?;
                let k = bytes.iter().position(|&b| b != FREED)?;
                Some(Overwritten { block, size, byte: block + k as u64, when: "at the end of the run", after_free: true })
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block's redzone is asked for, filled and checked: untouched, nothing; a byte past the
    /// end changed, that byte, at the free; calloc's is zeros; a realloc checks the old block.
    #[test]
    fn redzones_are_asked_for_filled_and_checked() {
        let mut zones = Redzones::default();
        let mut memory = vec![0u8; 256];
        let base = memory.as_mut_ptr() as u64;
        let (a, b) = (base, base + 64);
        assert_eq!(zones.enter(1, Kind::Malloc, [20, 0, 0], 0x7000, true), (None, [20 + REDZONE, 0, 0]));
        zones.returned(1, 0x7000, a, false);
        assert_eq!(memory[20..36], [FILL; 16]);
        assert_eq!(zones.enter(1, Kind::Calloc, [3, 8, 0], 0x7000, true), (None, [1, 24 + REDZONE, 0]));
        zones.returned(1, 0x7000, b, true);
        // The program writes one byte past its first block; its calloc block's zone is intact.
        memory[20] = b'x';
        assert_eq!(zones.enter(1, Kind::Free, [b, 0, 0], 0x7000, true).0, None);
        let (overwritten, _) = zones.enter(1, Kind::Realloc, [a, 40, 0], 0x7000, true);
        assert_eq!(overwritten, Some(Overwritten { block: a, size: 20, byte: a + 20, when: "at its realloc", after_free: false }));
        // A block freed twice is checked once.
        assert_eq!(zones.enter(1, Kind::Free, [a, 0, 0], 0x7000, true).0, None);
        // At the end: the live block whose zone changed.
        zones.enter(2, Kind::Malloc, [8, 0, 0], 0x8000, true);
        zones.returned(2, 0x8000, base + 128, false);
        assert_eq!(zones.at_exit(), None);
        zones.enter(2, Kind::Malloc, [8, 0, 0], 0x8000, true);
        zones.returned(2, 0x8000, base + 128, false);
        memory[128 + 8 + 15] = 0;
        assert_eq!(zones.at_exit(), Some(Overwritten { block: base + 128, size: 8, byte: base + 128 + 23, when: "at the end of the run", after_free: false }));
    }

    /// An allocator made to return what is no block (a suppression run can: 0x2 in unrtf's)
    /// gets no redzone, and rtgrind does not crash writing one; a real block still does.
    #[test]
    fn a_result_that_is_no_block_gets_no_redzone() {
        let mut zones = Redzones::default();
        zones.enter(1, Kind::Malloc, [11, 0, 0], 0x7000, true);
        zones.returned(1, 0x7000, 0x2, false);
        assert!(zones.fill.is_empty());
        let mut memory = vec![0u8; 64];
        zones.enter(1, Kind::Malloc, [11, 0, 0], 0x7000, true);
        zones.returned(1, 0x7000, memory.as_mut_ptr() as u64, false);
        assert_eq!((zones.fill.len(), &memory[11..27]), (1, &[FILL; 16][..]));
    }
}
