//! Granule records: a direct map from each 8-byte granule of guest memory to a record of
//! `WORDS` u64 words, side by side, so that a tool reading several words of a granule's state
//! touches one cache line and one page, not one per word (the race detector's last write, last
//! read, their sites and its same-epoch cache were four 1:1 maps: four misses per access).
//!
//! The layout is `memory`'s, scaled: each covered 1 TiB slice of guest addresses gets
//! `WORDS` adjacent slices of records (`MAP_NORESERVE`, only touched pages are backed), every
//! other slice shares one sink of the same size, and the record of `x` is at
//! `(x & !7) * WORDS + delta[bits 40-47 of x]`, the table below 2 GiB for translated code
//! (`lea r, [x*4]`, one load with the table as displacement, an add).

use super::memory::{canonical, SliceTable, ADDR_MASK, INDEX_BITS, SLICES, SLICE_BITS};
use std::io;

/// Words in a record (a power of two: translated code scales the address by it).
pub const WORDS: u64 = 4;

/// Where records sit in their page relative to the guest granule's offset (see
/// `memory::SKEW`); a multiple of a record's size.
const SKEW: u64 = 0x860;

pub struct GranuleRecords {
    /// Per table index: what to add to `granule * WORDS` to reach its record.
    table: SliceTable,
}

/// What to add to a scaled address with table index `i` for its record in the slices at `at`
/// (the kernel half's indices stand for addresses with all upper bits set).
fn delta(i: usize, at: u64) -> u64 {
    let base = if i < SLICES { (i as u64) << SLICE_BITS } else { 0xffff_0000_0000_0000 | (i as u64) << SLICE_BITS };
    (at + SKEW).wrapping_sub(base.wrapping_mul(WORDS))
}

/// Tests make many maps in one process: theirs give their slices back (as `ShadowMemory`'s).
#[cfg(test)]
impl Drop for GranuleRecords {
    fn drop(&mut self) {
        let len = ((WORDS << SLICE_BITS) + 2 * super::memory::GUARD) as usize;
        let d = &self.table.deltas;
        let base = |i: usize| d[i].wrapping_add(((i as u64) << SLICE_BITS).wrapping_mul(WORDS)).wrapping_sub(SKEW);
        let kernel = |i: usize| d[i].wrapping_add((0xffff_0000_0000_0000 | (i as u64) << SLICE_BITS).wrapping_mul(WORDS)).wrapping_sub(SKEW);
        for at in (0..SLICES).filter(|&i| self.table.covered[i]).map(base).chain([kernel(SLICES)]) {
            // SAFETY: slices this map reserved (plus guards), used by nothing else.
            unsafe { libc::munmap((at - super::memory::GUARD) as *mut libc::c_void, len) };
        }
        // SAFETY: the map's own table page, no longer used.
        unsafe { libc::munmap(self.table.deltas.as_mut_ptr() as *mut libc::c_void, 4096) };
    }
}

impl GranuleRecords {
    /// A map whose every slice is the sink, until `cover` gives it records of its own.
    pub fn new() -> io::Result<GranuleRecords> {
        Ok(GranuleRecords { table: SliceTable::new(WORDS, delta)? })
    }

    /// Address of the delta table (below 2 GiB, for translated code).
    pub fn delta_table_addr(&self) -> u32 {
        self.table.addr()
    }

    /// Gives every slice `[start, end)` touches records of its own.
    pub fn cover(&mut self, start: u64, end: u64) {
        self.table.cover(start, end, delta);
    }

    /// Address of the table of covered slices (a byte per user slice, 1: covered), for
    /// translated code; it stays where it is while the map does.
    pub fn covered_table_addr(&self) -> u64 {
        const _: () = assert!(std::mem::size_of::<bool>() == 1);
        self.table.covered.as_ptr() as u64
    }

    /// Whether `addr`'s granule has a record of its own (not the sink's).
    #[inline]
    pub fn covers(&self, addr: u64) -> bool {
        self.table.covers(addr)
    }

    /// The record of the granule of `addr`: `WORDS` words (a non-canonical address, which no
    /// guest memory has, is masked into range so that rtgrind's own accesses never fault).
    #[inline]
    pub fn record(&self, addr: u64) -> *mut u64 {
        let x = if canonical(addr) { addr } else { addr & ADDR_MASK };
        ((x & !7).wrapping_mul(WORDS)).wrapping_add(self.table.deltas[((x & INDEX_BITS) >> SLICE_BITS) as usize]) as *mut u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(m: &GranuleRecords, addr: u64, k: usize) -> u64 {
        // SAFETY: a record lies in reserved read-write slices (its own or the sink's).
        unsafe { *m.record(addr).add(k) }
    }

    fn set(m: &GranuleRecords, addr: u64, k: usize, v: u64) {
        // SAFETY: as in `get`.
        unsafe { *m.record(addr).add(k) = v }
    }

    #[test]
    fn a_granules_words_are_adjacent_and_its_own() {
        let m = &mut GranuleRecords::new().unwrap();
        let a = 0x7fff_1234_5678;
        m.cover(a, a + 4096);
        m.cover(0x5555_5555_0000, 0x5555_5556_0000);
        assert!(m.covers(a) && m.covers(0x5555_5555_1000) && !m.covers(0x40_0000));
        // One record per granule: every byte of the granule reaches it, the next granule's is
        // the next record, its words are one aligned run.
        let r = m.record(a) as u64;
        assert_eq!(r % (8 * WORDS), 0);
        assert!((a & !7..(a & !7) + 8).all(|x| m.record(x) as u64 == r));
        assert_eq!(m.record(a + 8) as u64, r + 8 * WORDS);
        for k in 0..WORDS as usize {
            set(m, a, k, 10 + k as u64);
        }
        assert_eq!((0..WORDS as usize).map(|k| get(m, a, k)).collect::<Vec<_>>(), vec![10, 11, 12, 13]);
        assert_eq!(get(m, a + 8, 0), 0);
        // Another covered slice at the same offset does not see it; uncovered ones share the
        // sink, kernel and non-canonical addresses too (no fault).
        assert_eq!(get(m, 0x5555_0000_0000 | (a & 0xff_ffff_ffff), 0), 0);
        set(m, 0x2000_0000_0010, 1, 5);
        assert_eq!(get(m, 0x3000_0000_0010, 1), 5);
        set(m, 0xffff_8800_0000_0010, 2, 6);
        let _ = get(m, 0x4141_4141_4141_4141, 0);
        // The translated code's computation: the scaled granule plus the table's delta.
        let table = m.delta_table_addr() as u64 as *const u64;
        // SAFETY: the table page, ENTRIES words.
        let d = unsafe { *table.add(((a & INDEX_BITS) >> SLICE_BITS) as usize) };
        assert_eq!(((a & !7) * WORDS).wrapping_add(d), r);
    }

    #[test]
    fn maps_give_their_slices_back() {
        for _ in 0..40 {
            let mut m = GranuleRecords::new().unwrap();
            m.cover(0x1000, 0x2000);
            set(&m, 0x1000, 3, 1);
        }
    }
}
