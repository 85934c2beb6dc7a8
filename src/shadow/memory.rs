//! Shadow memory: a direct map from guest addresses to shadow bytes, one shadow byte per
//! guest byte (taint), or one u64 per 8-byte granule (origins: the same size), reached from
//! translated code in a handful of branch-free instructions.
//!
//! The 128 TiB user address space is cut into 128 slices of 1 TiB. A slice where the guest
//! has memory gets a shadow slice of its own, reserved with `MAP_NORESERVE` (only touched
//! pages are ever backed) in a slice nobody uses; every other slice shares one "sink" slice.
//! The shadow of `x` is `x + delta[bits 40-47 of x]`, where `delta` takes the slice's base to
//! its shadow's (plus a small skew, see `SKEW`); the table lives in the low 2 GiB, so
//! translated code needs a `pext`, one load with the table as displacement and the add, which
//! can be the access's own addressing (`shadow_delta_of` in `propagate.rs`). No access can
//! miss: a guest access outside its memory reads and writes the sink (and then faults natively,
//! as it would without rtgrind); the 128 entries of the kernel half (bit 47 set) send canonical
//! kernel addresses to the sink too. A non-canonical address stays non-canonical after the
//! add (the delta is below 2^47), so its shadow access faults like the guest's own would, with
//! the same signal. The shadow slices and the sink are rtgrind's memory, so the guest can
//! neither map over nor unmap them (`kernel::memory`).
//!
//! Limits: an access that crosses a 1 TiB boundary between two guest mappings reads the
//! first slice's shadow and the 64 KiB guard after it (translated code may take the slice of
//! `[base + disp]` from the base register when the displacement is under 64 KiB: guards lie on
//! both sides); a slice first used by a guest mapping rtgrind does not see (none is known)
//! shares the sink.
//!
//! A map that fast versions check (`shadow::fast`) also keeps a summary: one byte per 256 KiB
//! chunk of guest addresses, non-zero wherever a shadow byte of the chunk may be. Clean data's
//! check reads the summary (a few hot cache lines for the whole address space) instead of the
//! data's own shadow pages (one TLB entry per 4 KiB of data, even where they are all the zero
//! page); only where the summary is set does the check look at the shadow itself. Every write
//! of a non-zero shadow byte marks its chunk: here, and in translated code's stores
//! (`propagate`), which mark theirs whatever they store. Marks are never cleared.
//!
//! Only the thread holding the scheduler's baton runs translated code or tool hooks, so the
//! map needs no locking.

use std::io;

pub const SLICE_BITS: u32 = 40;
pub const SLICES: usize = 128;
/// Table entries: bits 40-47 of an address (the user slices, then the kernel half's).
pub const ENTRIES: usize = 256;
/// The `pext` mask of a table index.
pub const INDEX_BITS: u64 = 0xff << SLICE_BITS;
/// The 47 bits of a user address.
pub const ADDR_MASK: u64 = (1 << 47) - 1;
/// Slack on both sides of each shadow slice for accesses that run over its ends.
pub const GUARD: u64 = 1 << 16;

/// A summary byte stands for `1 << SUMMARY_BITS` guest bytes.
pub const SUMMARY_BITS: u32 = 18;
/// Summary bytes: one per chunk of the 47-bit user address space.
const SUMMARY_LEN: u64 = 1 << (47 - SUMMARY_BITS);
/// The `pext` mask of an address's summary index: bits 18-46 (a kernel or non-canonical
/// address gets some user chunk's index, harmless: its access faults anyway).
pub const SUMMARY_SEL: u64 = ADDR_MASK & !((1 << SUMMARY_BITS) - 1);

/// A direct map's table (`ShadowMemory`'s, `records::GranuleRecords`'): per table index (bits
/// 40-47 of an address), what to add to the (scaled) address to reach its shadow, in a page of
/// its own below 2 GiB (translated code holds its address as a 32-bit displacement); and which
/// user slices have a shadow of their own (`width` adjacent slices each), not the sink.
pub(super) struct SliceTable {
    pub deltas: &'static mut [u64; ENTRIES],
    pub covered: [bool; SLICES],
    width: u64,
}

impl SliceTable {
    /// A table whose every index leads to one new sink (`delta(index, where the shadow is)`).
    pub fn new(width: u64, delta: impl Fn(usize, u64) -> u64) -> io::Result<SliceTable> {
        let sink = reserve_slices(width)?;
        let deltas = low_table()?;
        for (i, d) in deltas.iter_mut().enumerate() {
            *d = delta(i, sink);
        }
        Ok(SliceTable { deltas, covered: [false; SLICES], width })
    }

    /// Address of the table (below 2 GiB, for translated code).
    pub fn addr(&self) -> u32 {
        let a = self.deltas.as_ptr() as u64;
        u32::try_from(a).ok().filter(|&a| a < 1 << 31).expect("a table page is below 2 GiB")
    }

    /// Gives every slice `[start, end)` touches a shadow of its own.
    pub fn cover(&mut self, start: u64, end: u64, delta: impl Fn(usize, u64) -> u64) {
        if end <= start {
            return;
        }
        let (first, last) = ((start & ADDR_MASK) >> SLICE_BITS, ((end - 1) & ADDR_MASK) >> SLICE_BITS);
        for s in first as usize..=last as usize {
            if self.covered[s] {
                continue;
            }
            match reserve_slices(self.width) {
                Ok(at) => {
                    self.deltas[s] = delta(s, at);
                    self.covered[s] = true;
                }
                Err(e) => {
                    eprintln!("rtgrind: error: cannot reserve shadow memory: {e}");
                    std::process::exit(crate::EXIT_INTERNAL)
                }
            }
        }
    }

    /// Whether `addr`'s slice has a shadow of its own.
    #[inline]
    pub fn covers(&self, addr: u64) -> bool {
        canonical(addr) && addr >> 47 == 0 && self.covered[(addr >> SLICE_BITS) as usize]
    }
}

pub struct ShadowMemory {
    table: SliceTable,
    /// Where shadow bytes sit in their page relative to the guest's (see `SKEW`).
    skew: u64,
    /// The summary's byte 0 (below 2 GiB, with a readable page on both sides: translated
    /// code reads the four bytes from index - 1), or null.
    summary: *mut u8,
}

/// The summary's length (with a guard page on each side) and where it goes first: just under
/// the `MAP_32BIT` window, where nothing of a non-PIE guest is unless its `brk` heap grew past
/// 512 MiB.
const SUMMARY_MAP_LEN: u64 = SUMMARY_LEN + 2 * 4096;
const SUMMARY_HINT: u64 = 0x4000_0000 - SUMMARY_MAP_LEN;

/// Reserves a zeroed summary below 2 GiB (translated code holds its address as a 32-bit
/// displacement): at `SUMMARY_HINT`, else anywhere in the `MAP_32BIT` window.
fn reserve_summary() -> io::Result<*mut u8> {
    let len = SUMMARY_MAP_LEN as usize;
    let p = map_low(std::iter::once(SUMMARY_HINT), len, libc::MAP_NORESERVE).map_err(|_| io::Error::from_raw_os_error(libc::ENOMEM))?;
    // (Read as the zero page, as the shadow slices are.)
    // SAFETY: advice on the mapping just made.
    unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
    // SAFETY: one page into the mapping.
    Ok(unsafe { (p as *mut u8).add(4096) })
}

/// The summary index of `addr`, as translated code computes it (`pext` with `SUMMARY_SEL`).
fn summary_index(addr: u64) -> u64 {
    (addr & ADDR_MASK) >> SUMMARY_BITS
}

/// The summary indices of the chunks `[addr, addr+len)` touches (`len` > 0; a range that
/// wraps past the top of the address space runs to its last chunk).
fn summary_chunks(addr: u64, len: u64) -> std::ops::RangeInclusive<u64> {
    let (first, last) = (summary_index(addr), summary_index(addr.saturating_add(len - 1)));
    first..=if last < first { SUMMARY_LEN - 1 } else { last }
}

/// Reserves `n` adjacent 1 TiB slices (plus guards) where nobody is; returns their base.
fn reserve_slices(n: u64) -> io::Result<u64> {
    // Candidates in the middle of the address space: below PIE programs and heaps (0x55…),
    // above everything non-PIE (low TiB), far from libraries and stacks (0x7f…).
    for s in (0x08..=0x50 - n).chain(0x58..=0x70 - n) {
        let at = (s << SLICE_BITS) - GUARD;
        let len = ((n << SLICE_BITS) + 2 * GUARD) as usize;
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED_NOREPLACE;
        // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping.
        let p = unsafe { libc::mmap(at as *mut libc::c_void, len, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0) };
        if p != libc::MAP_FAILED {
            if p as u64 == at {
                // No transparent huge pages, even where the system would give them: shadow
                // never written (clean data's, see `shadow::fast`) reads as the kernel's zero
                // page, and the 4 KiB one stays in L1 where the 2 MiB one streams through L2
                // (taint on recursion's tree 2.21 -> 1.65 s; origins no slower either).
                // SAFETY: advice on a mapping this function owns.
                unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
                return Ok(at + GUARD);
            }
            // Old kernels treat the flag as a hint; give the mapping back and go on.
            // SAFETY: the mapping was just created by this function and is not used.
            unsafe { libc::munmap(p, len) };
        }
    }
    Err(io::Error::from_raw_os_error(libc::ENOMEM))
}

/// Shadow bytes sit this far into their page relative to the guest bytes: with the same offset
/// in the page, a shadow load right after a guest store (or the reverse) would look like a
/// dependence to the CPU's memory disambiguation (4 KiB aliasing) and stall. An origin map
/// takes another skew, so that a tool's two maps do not alias each other either (a push writes
/// both, a pop reads both): with one skew for both, taint + origins ran `recursion` three
/// times slower. Multiples of 8, so origin granules stay aligned.
const SKEW: u64 = 0x840;
const ORIGIN_SKEW: u64 = 0x480;

/// What to add to an address with table index `i` to reach its shadow in the slice at
/// `shadow`: the kernel half's indices (128-255) stand for addresses with all upper bits set.
fn delta(i: usize, shadow: u64, skew: u64) -> u64 {
    let base = if i < SLICES { (i as u64) << SLICE_BITS } else { 0xffff_0000_0000_0000 | (i as u64) << SLICE_BITS };
    (shadow + skew).wrapping_sub(base)
}

/// Whether `addr` is canonical: bits 47-63 all clear (user) or all set (kernel).
pub(super) fn canonical(addr: u64) -> bool {
    matches!(addr >> 47, 0 | 0x1_ffff)
}

/// Pages for delta tables: below the summary's place, taken in the order the tables are made
/// (at a tool's start), so that a run's tables are at the same addresses in every run
/// whatever was mapped before them. Translated code holds their addresses (see
/// `docs/TRANSLATION-CACHE.md`, step 3: code re-used from another run needs them there).
const TABLE_SLOTS: u64 = 16;
fn table_slot(k: u64) -> u64 {
    (SUMMARY_HINT & !4095) - (k + 1) * 4096
}

/// A zeroed page below 2 GiB for a delta table: the first free of the table slots, else the
/// kernel's choice in the `MAP_32BIT` window.
fn low_table() -> io::Result<&'static mut [u64; ENTRIES]> {
    const _: () = assert!(ENTRIES * 8 <= 4096);
    let p = map_low((0..TABLE_SLOTS).map(table_slot), 4096, 0)?;
    TABLES.lock().unwrap_or_else(|e| e.into_inner()).push(p as u64);
    // SAFETY: the page is 4 KiB, aligned, zeroed and owned by nothing else; it is never
    // unmapped (but by tests' `Drop`), so the 'static reference stays valid.
    Ok(unsafe { &mut *(p as *mut [u64; ENTRIES]) })
}

/// A fresh zeroed mapping of `len` bytes below 2 GiB (never unmapped: translated code holds its
/// address), with `flags` besides private and anonymous: at the first of `hints` that is free,
/// else in the `MAP_32BIT` window.
fn map_low(hints: impl Iterator<Item = u64>, len: usize, flags: i32) -> io::Result<*mut libc::c_void> {
    let (flags, prot) = (flags | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, libc::PROT_READ | libc::PROT_WRITE);
    for hint in hints {
        // SAFETY: a fresh anonymous mapping; MAP_FIXED_NOREPLACE never replaces an existing one.
        let p = unsafe { libc::mmap(hint as *mut libc::c_void, len, prot, flags | libc::MAP_FIXED_NOREPLACE, -1, 0) };
        if p as u64 == hint {
            return Ok(p);
        }
        if p != libc::MAP_FAILED {
            // An old kernel took the flag for a hint.
            // SAFETY: the mapping was just created here and is not used.
            unsafe { libc::munmap(p, len) };
        }
    }
    // SAFETY: a fresh anonymous mapping.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags | libc::MAP_32BIT, -1, 0) };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    if p as u64 + len as u64 > 1 << 31 {
        // SAFETY: the mapping was just created here and is not used.
        unsafe { libc::munmap(p, len) };
        return Err(io::Error::from_raw_os_error(libc::ENOMEM));
    }
    Ok(p)
}

/// The delta tables made so far, in order (`--stats` says where they are).
static TABLES: std::sync::Mutex<Vec<u64>> = std::sync::Mutex::new(Vec::new());

/// `--stats`' line of where the delta tables are, if any were made.
pub fn table_lines() -> Vec<String> {
    let t = TABLES.lock().unwrap_or_else(|e| e.into_inner());
    if t.is_empty() {
        return Vec::new();
    }
    vec![format!("stats: delta tables at {}", t.iter().map(|a| format!("{a:#x}")).collect::<Vec<_>>().join(", "))]
}

/// Tests make many maps in one process, more than the address space has slices for: theirs
/// give their slices back. (A tool's maps live as long as its process: translated code holds
/// their tables' addresses until the very end.)
#[cfg(test)]
impl Drop for ShadowMemory {
    fn drop(&mut self) {
        let len = ((1u64 << SLICE_BITS) + 2 * GUARD) as usize;
        let shadow_of = |i: usize| self.table.deltas[i].wrapping_add((i as u64) << SLICE_BITS).wrapping_sub(self.skew);
        // The covered slices, then the sink (every kernel-half index leads there).
        let slices = (0..SLICES).filter(|&i| self.table.covered[i]).map(shadow_of).chain([shadow_of(SLICES) & ((1 << 47) - 1)]);
        for at in slices {
            // SAFETY: a slice this map reserved (plus its guards), used by nothing else.
            unsafe { libc::munmap((at - GUARD) as *mut libc::c_void, len) };
        }
        // SAFETY: the map's own table page, no longer used.
        unsafe { libc::munmap(self.table.deltas.as_mut_ptr() as *mut libc::c_void, 4096) };
    }
}

impl ShadowMemory {
    /// A map whose every slice is the sink, until `cover` gives it a shadow of its own.
    pub fn new() -> io::Result<ShadowMemory> {
        ShadowMemory::with_skew(SKEW)
    }

    /// A map for origins, beside a `new` one (see `ORIGIN_SKEW`).
    pub fn for_origins() -> io::Result<ShadowMemory> {
        ShadowMemory::with_skew(ORIGIN_SKEW)
    }

    fn with_skew(skew: u64) -> io::Result<ShadowMemory> {
        let table = SliceTable::new(1, |i, at| delta(i, at, skew))?;
        Ok(ShadowMemory { table, skew, summary: std::ptr::null_mut() })
    }

    /// A map with a summary (for a tool whose blocks have fast versions), where there is room
    /// for one below 2 GiB; without, fast versions check the shadow itself.
    pub fn with_summary() -> io::Result<ShadowMemory> {
        let mut m = ShadowMemory::new()?;
        m.summary = reserve_summary().unwrap_or(std::ptr::null_mut());
        Ok(m)
    }

    /// Address of the summary's byte 0 (below 2 GiB), if the map has one.
    pub fn summary_addr(&self) -> Option<u32> {
        (!self.summary.is_null()).then_some(self.summary as u32)
    }

    /// Marks the chunks of `[addr, addr+len)` in the summary: their shadow may be non-zero.
    fn mark(&mut self, addr: u64, len: u64) {
        if self.summary.is_null() || len == 0 {
            return;
        }
        let chunks = summary_chunks(addr, len);
        // SAFETY: indices below SUMMARY_LEN lie in the reserved summary.
        unsafe { std::ptr::write_bytes(self.summary.add(*chunks.start() as usize), 1, (chunks.end() - chunks.start() + 1) as usize) };
    }

    /// Whether some chunk of `[addr, addr+len)` is marked (or the map has no summary).
    fn marked(&self, addr: u64, len: u64) -> bool {
        if self.summary.is_null() {
            return true;
        }
        // SAFETY: as in `mark`.
        summary_chunks(addr, len.max(1)).any(|i| unsafe { *self.summary.add(i as usize) } != 0)
    }

    /// Address of the delta table (below 2 GiB, for translated code).
    pub fn delta_table_addr(&self) -> u32 {
        self.table.addr()
    }

    /// Whether the addresses translated code holds of this map (its delta table, its summary)
    /// are at the fixed places, not the kernel's choice: code made in another run may use
    /// them (a table slot is the first free one: a cache key holds the addresses too).
    pub fn at_fixed_places(&self) -> bool {
        let table = self.table.addr() as u64;
        let in_slots = (0..TABLE_SLOTS).any(|k| table_slot(k) == table);
        in_slots && self.summary_addr().is_none_or(|s| s as u64 == SUMMARY_HINT + 4096)
    }

    /// Gives every slice `[start, end)` touches a shadow of its own.
    pub fn cover(&mut self, start: u64, end: u64) {
        let skew = self.skew;
        self.table.cover(start, end, |s, at| delta(s, at, skew));
    }

    /// The shadow address of guest address `addr` (as translated code computes it; a
    /// non-canonical address, which no guest memory has, is masked into range so that
    /// rtgrind's own accesses never fault).
    #[inline]
    pub fn addr(&self, addr: u64) -> *mut u8 {
        let x = if canonical(addr) { addr } else { addr & ADDR_MASK };
        x.wrapping_add(self.table.deltas[((x & INDEX_BITS) >> SLICE_BITS) as usize]) as *mut u8
    }

    pub fn get(&mut self, addr: u64) -> u8 {
        // SAFETY: every shadow address lies in a reserved read-write slice (its own or the sink).
        unsafe { *self.addr(addr) }
    }

    pub fn set(&mut self, addr: u64, v: u8) {
        if v != 0 {
            self.mark(addr, 1);
        }
        // SAFETY: as in `get`.
        unsafe { *self.addr(addr) = v };
    }

    /// Whether the shadow of `[addr, addr+len)` is one contiguous run (the range stays in one
    /// slice of canonical user or kernel addresses), so bulk operations can use it whole.
    fn contiguous(addr: u64, len: u64) -> bool {
        let Some(last) = addr.checked_add(len.max(1) - 1) else { return false };
        canonical(addr) && addr >> SLICE_BITS == last >> SLICE_BITS
    }

    pub fn set_range(&mut self, addr: u64, len: u64, v: u8) {
        if v != 0 {
            self.mark(addr, len);
        }
        if Self::contiguous(addr, len) {
            // SAFETY: one run of shadow bytes inside a reserved slice (see `contiguous`).
            return unsafe { std::ptr::write_bytes(self.addr(addr), v, len as usize) };
        }
        for a in addr..addr.saturating_add(len) {
            self.set(a, v);
        }
    }

    /// Any shadow byte of `[addr, addr+len)` non-zero.
    pub fn any(&mut self, addr: u64, len: u64) -> bool {
        if Self::contiguous(addr, len) {
            // SAFETY: as in `set_range`.
            let run = unsafe { std::slice::from_raw_parts(self.addr(addr), len as usize) };
            return run.iter().any(|&b| b != 0);
        }
        (addr..addr.saturating_add(len)).any(|a| self.get(a) != 0)
    }

    /// Copies the shadow of `len` bytes from `src` to `dst` (as `memmove`).
    pub fn copy(&mut self, dst: u64, src: u64, len: u64) {
        if len > 0 && self.marked(src, len) {
            self.mark(dst, len);
        }
        if Self::contiguous(src, len) && Self::contiguous(dst, len) {
            // SAFETY: two runs of shadow bytes inside reserved slices; `copy` allows overlap.
            return unsafe { std::ptr::copy(self.addr(src), self.addr(dst), len as usize) };
        }
        let bytes: Vec<u8> = (0..len).map(|i| self.get(src.wrapping_add(i))).collect();
        for (i, v) in bytes.into_iter().enumerate() {
            self.set(dst.wrapping_add(i as u64), v);
        }
    }

    /// The u64 slot of the granule (8 aligned guest bytes) holding `addr`, for shadow kinds
    /// with one u64 per granule (origins).
    pub fn get64(&mut self, addr: u64) -> u64 {
        // SAFETY: as in `get`; granule slots are 8-aligned because slice bases are.
        unsafe { *(self.addr(addr & !7) as *const u64) }
    }

    pub fn set64(&mut self, addr: u64, v: u64) {
        // SAFETY: as in `get64`.
        unsafe { *(self.addr(addr & !7) as *mut u64) = v };
    }

    /// Sets the granule slots covering `[addr, addr+len)`.
    pub fn set64_range(&mut self, addr: u64, len: u64, v: u64) {
        if len == 0 {
            return;
        }
        let first = addr & !7;
        if let Some(n) = addr.checked_add(len - 1).map(|last| ((last & !7) - first) / 8 + 1) {
            if Self::contiguous(first, n * 8) {
                // SAFETY: one run of 8-aligned granule slots inside a reserved slice.
                let run = unsafe { std::slice::from_raw_parts_mut(self.addr(first) as *mut u64, n as usize) };
                run.fill(v);
                return;
            }
        }
        let mut g = addr & !7;
        while g < addr.saturating_add(len) {
            self.set64(g, v);
            g += 8;
        }
    }

    /// Origins of a copy of `len` bytes from `src` to `dst`: each destination granule gets the
    /// origin of the source granule at the same offset (as `memmove`).
    pub fn copy64(&mut self, dst: u64, src: u64, len: u64) {
        let (s0, d0) = (src & !7, dst & !7);
        if len > 0 && Self::contiguous(s0, len + (src & 7)) && Self::contiguous(d0, len + (dst & 7)) {
            let (sp, dp) = (self.addr(s0) as *const u64, self.addr(d0) as *mut u64);
            // Chunk i (the 8 bytes from src + 8i) has source granule i's origin and lands on
            // destination granules i and i + 1 (one if dst is aligned), which chunk i + 1
            // overwrites: whatever the offsets, a copy of the granules, and the last chunk's
            // spill into one more granule.
            let slot = |base: u64, x: u64| ((x & !7) - base) as usize / 8;
            let n = len.div_ceil(8) as usize;
            // SAFETY: every index is that of a granule inside the checked runs; `copy` allows
            // overlap (the spill's origin is read first).
            unsafe {
                let spill = slot(d0, dst + len - 1) == n;
                let last = *sp.add(n - 1);
                std::ptr::copy(sp, dp, n);
                if spill {
                    *dp.add(n) = last;
                }
            }
            return;
        }
        let granules: Vec<u64> = (0..len).step_by(8).map(|i| self.get64(src.wrapping_add(i))).collect();
        for (i, g) in granules.into_iter().enumerate() {
            let off = 8 * i as u64;
            self.set64_range(dst.wrapping_add(off), 8.min(len - off), g);
        }
    }

    /// The shadow of up to 64 bytes at `addr` as a bit mask (bit i = byte i non-zero).
    pub fn mask(&mut self, addr: u64, len: u64) -> u64 {
        (0..len.min(64)).filter(|&i| self.get(addr.wrapping_add(i)) != 0).fold(0, |m, i| m | 1 << i)
    }

    /// Sets the shadow of `len` bytes at `addr` from a bit mask (bit i -> byte i = 0 or 1).
    pub fn set_mask(&mut self, addr: u64, len: u64, mask: u64) {
        for i in 0..len.min(64) {
            self.set(addr.wrapping_add(i), ((mask >> i) & 1) as u8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A delta table goes to the first free of its fixed slots, not where the kernel's
    /// `MAP_32BIT` placement would put it after whatever was mapped before: with the first slot
    /// taken, the second. (A window of slots of this test's own: other tests' maps take the
    /// real ones.)
    #[test]
    fn tables_take_the_first_free_fixed_slot() {
        let slots: Vec<u64> = (0..3).map(|k| 0x1f00_0000 + k * 4096).collect();
        let first = map_low(slots.iter().copied(), 4096, 0).unwrap();
        let second = map_low(slots.iter().copied(), 4096, 0).unwrap();
        assert_eq!((first as u64, second as u64), (slots[0], slots[1]));
        // SAFETY: the test's own pages.
        unsafe { libc::munmap(first, 4096) };
        let again = map_low(slots.iter().copied(), 4096, 0).unwrap();
        assert_eq!(again as u64, slots[0]);
        // SAFETY: the test's own pages.
        unsafe { (libc::munmap(again, 4096), libc::munmap(second, 4096)) };
        // The real slots lie below the summary's place and 2 GiB.
        assert!(table_slot(0) + 4096 <= SUMMARY_HINT && table_slot(TABLE_SLOTS - 1) > 1 << 28);
    }

    #[test]
    fn a_tests_maps_give_their_slices_back() {
        // More maps, one after another, than the address space has slices for.
        for _ in 0..150 {
            let mut m = ShadowMemory::new().unwrap();
            m.cover(0x1000, 0x2000);
            m.set(0x1000, 7);
            assert_eq!(m.get(0x1000), 7);
        }
    }

    #[test]
    fn covered_slices_are_private_and_the_rest_share_the_sink() {
        let mut m = ShadowMemory::new().unwrap();
        let a = 0x7fff_1234_5678;
        m.cover(a, a + 4096);
        m.set_mask(a, 8, 0b1010_0101);
        assert_eq!(m.mask(a, 8), 0b1010_0101);
        // Another covered slice does not see it; two uncovered slices share the sink.
        m.cover(0x40_0000, 0x50_0000);
        assert_eq!(m.mask(0x40_0000 + (a & 0xff_ffff_ffff), 8), 0);
        m.set(0x2000_0000_0010, 1);
        assert_eq!(m.get(0x3000_0000_0010), 1);
        // Non-canonical addresses are masked into range instead of faulting; kernel ones
        // reach the sink.
        let _ = m.get(0x4141_4141_4141_4141);
        m.set(0xffff_8800_0000_0010, 1);
        assert_eq!(m.get(0x3000_0000_0010), 1);
        m.copy(a + 100, a, 8);
        assert_eq!(m.mask(a + 100, 8), 0b1010_0101);
        // Bulk operations: overlapping copies move like memmove, across slices byte by byte.
        m.copy(a + 102, a + 100, 8);
        assert_eq!(m.mask(a + 100, 10), 0b10_1001_0101);
        m.set_range(a + 200, 3, 1);
        assert!(m.any(a + 190, 11) && !m.any(a + 190, 10));
        let edge = 0x7f00_0000_0000;
        m.cover(edge - 4096, edge + 4096);
        m.set_range(edge - 2, 4, 1);
        assert_eq!(m.mask(edge - 4, 8), 0b0011_1100);
        m.set64_range(a, 16, 7);
        assert_eq!((m.get64(a), m.get64(a + 8), m.get64(a + 16)), (7, 7, 0));
        m.set64(a + 64, 5);
        m.copy64(a + 128, a + 64, 9);
        assert_eq!((m.get64(a + 128), m.get64(a + 136)), (5, 0));
        // A range not aligned to granules covers every granule it touches.
        m.set64_range(a + 30, 3, 9);
        assert_eq!((m.get64(a + 24), m.get64(a + 32), m.get64(a + 40)), (9, 9, 0));
    }

    #[test]
    fn two_maps_put_a_guest_byte_at_different_offsets_in_their_pages() {
        // A tool's taint and origin maps (and the guest's own bytes) at one 4 KiB offset
        // would alias in the CPU's memory disambiguation.
        let (mut t, mut o) = (ShadowMemory::with_summary().unwrap(), ShadowMemory::for_origins().unwrap());
        let a = 0x7fff_1234_5678;
        t.cover(a, a + 8);
        o.cover(a, a + 8);
        let offsets = [a, t.addr(a) as u64, o.addr(a) as u64].map(|x| x % 4096);
        assert!(offsets[0] != offsets[1] && offsets[0] != offsets[2] && offsets[1] != offsets[2], "{offsets:x?}");
        assert!(offsets.iter().all(|&x| x % 8 == a % 8), "granules stay aligned: {offsets:x?}");
    }

    #[test]
    fn the_summary_marks_every_chunk_that_gets_a_non_zero_shadow_byte() {
        let mut m = ShadowMemory::with_summary().unwrap();
        let s = m.summary_addr().unwrap() as u64;
        assert!(s + SUMMARY_LEN < 1 << 31);
        let chunk = 1u64 << SUMMARY_BITS;
        let a = 0x7fff_0000_0000;
        m.cover(a, a + 64 * chunk);
        // Clean writes mark nothing.
        m.set_range(a, 4 * chunk, 0);
        m.set(a + 5, 0);
        m.set_mask(a + 8, 8, 0);
        assert!(!m.marked(a, 64 * chunk));
        m.set(a + chunk + 3, 1);
        assert!(m.marked(a + chunk, 1) && !m.marked(a, chunk) && !m.marked(a + 2 * chunk, 60 * chunk));
        // A range marks each chunk it touches, a mask the chunks of its set bits.
        m.set_range(a + 3 * chunk - 1, 2, 1);
        assert!(m.marked(a + 2 * chunk, 1) && m.marked(a + 3 * chunk, 1) && !m.marked(a + 4 * chunk, 1));
        m.set_mask(a + 5 * chunk - 4, 8, 0b1000_0000);
        assert!(m.marked(a + 5 * chunk, 1) && !m.marked(a + 4 * chunk, chunk));
        // A copy from a marked chunk marks the destination's; from a clean one, not.
        m.copy(a + 10 * chunk, a + 20 * chunk, 16);
        assert!(!m.marked(a + 10 * chunk, 1));
        m.copy(a + 40 * chunk - 8, a + chunk, 16);
        assert!(m.marked(a + 39 * chunk, 1) && m.marked(a + 40 * chunk, 1));
        // Translated code's view: byte `(addr & ADDR_MASK) >> SUMMARY_BITS` of the summary.
        // SAFETY: an index inside the summary.
        assert_eq!(unsafe { *((s + ((a + chunk) >> SUMMARY_BITS)) as *const u8) }, 1);
    }

    #[test]
    fn overlapping_origin_copies_read_the_source_before_it_is_overwritten() {
        let mut m = ShadowMemory::new().unwrap();
        let a = 0x7fff_1234_0000;
        m.cover(a, a + 8192);
        for (src_off, dst_off, len) in [(0, 3, 40), (3, 0, 40), (11, 13, 50), (13, 11, 50), (5, 21, 64), (21, 5, 64), (6, 14, 30), (14, 6, 30)] {
            let (src, dst) = (a + 1000 + src_off, a + 1000 + dst_off);
            for g in 0..32 {
                m.set64(a + 1000 + 8 * g, 100 + g);
            }
            let before: Vec<u64> = (0..len).step_by(8).map(|i| m.get64(src + i)).collect();
            let mut want: std::collections::BTreeMap<u64, u64> = (0..32).map(|g| (a + 1000 + 8 * g, 100 + g)).collect();
            for (k, i) in (0..len).step_by(8).enumerate() {
                for x in dst + i..dst + (i + 8).min(len) {
                    want.insert(x & !7, before[k]);
                }
            }
            m.copy64(dst, src, len);
            for (&x, &w) in &want {
                assert_eq!(m.get64(x), w, "copy of {len} from +{src_off} to +{dst_off}, granule {:#x}", x - a);
            }
        }
    }

    #[test]
    fn unaligned_origin_copies_take_the_granule_at_each_offset() {
        let mut m = ShadowMemory::new().unwrap();
        let a = 0x7fff_1234_0000;
        m.cover(a, a + 8192);
        for (src_off, dst_off, len) in [(1, 0, 23), (0, 5, 16), (3, 7, 40), (6, 2, 1), (7, 7, 9), (5, 5, 16), (5, 5, 19), (2, 2, 6), (4, 4, 4)] {
            let (src, dst) = (a + 1000 + src_off, a + 4000 + dst_off);
            for g in 0..16 {
                m.set64(a + 1000 + 8 * g, 100 + g);
            }
            m.set64_range(a + 3900, 300, 0);
            m.copy64(dst, src, len);
            // Destination granule of dst+i gets the source granule of src+i, later offsets last.
            let mut want = std::collections::BTreeMap::new();
            for i in (0..len).step_by(8) {
                for x in dst + i..dst + (i + 8).min(len) {
                    want.insert(x & !7, m.get64(src + i));
                }
            }
            for x in (a + 3904..a + 4200).step_by(8) {
                assert_eq!(m.get64(x), want.get(&x).copied().unwrap_or(0), "copy of {len} from +{src_off} to +{dst_off}, granule {:#x}", x - a);
            }
        }
    }
}
