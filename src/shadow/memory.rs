//! Shadow memory: one shadow byte per guest byte, found in a few inline instructions.
//!
//! Two levels. A top table has one 8-byte entry per 64 KiB of guest address space, indexed by
//! bits 16-47 of the address (2^32 entries: any 64-bit value indexes inside it, so translated
//! code never checks bounds); an entry is 0 or the address of a 64 KiB chunk holding the
//! shadow bytes of that piece of guest memory. The table is one `MAP_NORESERVE` reservation,
//! so only the pages of it that name a chunk are ever backed. Reads through a 0 entry use a
//! shared read-only chunk of zeros; the first non-zero write allocates the chunk (from 64 MiB
//! slabs, also `MAP_NORESERVE`). Neither the table nor the chunks are guest memory, so the
//! guest can neither map over nor unmap them (see `kernel::memory`).
//!
//! Only the thread holding the scheduler's baton runs translated code or tool hooks, so the
//! table needs no locking.

use std::io;

/// log2 of the guest bytes one chunk covers.
pub const CHUNK_BITS: u32 = 16;
pub const CHUNK: usize = 1 << CHUNK_BITS;
const TABLE_ENTRIES: usize = 1 << 32;
const SLAB: usize = 64 << 20;

pub struct ShadowMemory {
    table: *mut u64,
    /// Where the next slab is asked to go.
    next_slab: u64,
    zero: *const u8,
    slab: *mut u8,
    slab_left: usize,
    /// Chunks allocated so far.
    pub chunks: u64,
}

/// Shadow memories live from 16 TiB up, 16 TiB apart: far below where the kernel puts the
/// guest's libraries and mappings (top-down from 0x7f…) and above its program and heap, so
/// they never take the address space near guest code that code-cache arenas need.
const REGION_BASE: u64 = 0x1000_0000_0000;
const REGION_STEP: u64 = 0x1000_0000_0000;
static REGIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Maps `len` bytes at `hint` if that range is free, else wherever the kernel likes.
fn map(hint: u64, len: usize, prot: i32) -> io::Result<*mut u8> {
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
    // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping; without a hint the
    // kernel picks free space. Either way no existing memory is touched.
    let mut p = unsafe { libc::mmap(hint as *mut libc::c_void, len, prot, flags | libc::MAP_FIXED_NOREPLACE, -1, 0) };
    if p == libc::MAP_FAILED {
        // SAFETY: as above.
        p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, -1, 0) };
    }
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(p as *mut u8)
}

/// The table index of a guest address (what translated code computes with `rorx`+`mov r32`).
#[inline]
pub fn index(addr: u64) -> usize {
    (addr.rotate_right(CHUNK_BITS) as u32) as usize
}

impl ShadowMemory {
    pub fn new() -> io::Result<ShadowMemory> {
        let region = REGION_BASE + REGION_STEP * REGIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let table = map(region, TABLE_ENTRIES * 8, libc::PROT_READ | libc::PROT_WRITE)? as *mut u64;
        let zero = map(region + (TABLE_ENTRIES * 8) as u64, CHUNK, libc::PROT_READ)?;
        let next_slab = region + (TABLE_ENTRIES * 8 + CHUNK) as u64;
        Ok(ShadowMemory { table, next_slab, zero, slab: std::ptr::null_mut(), slab_left: 0, chunks: 0 })
    }

    /// Base address of the top table (for translated code).
    pub fn table_addr(&self) -> u64 {
        self.table as u64
    }
    /// Address of the shared chunk of zeros (for translated code).
    pub fn zero_chunk_addr(&self) -> u64 {
        self.zero as u64
    }

    fn entry(&self, addr: u64) -> *mut u64 {
        // SAFETY: `index` is below 2^32, the table's length.
        unsafe { self.table.add(index(addr)) }
    }

    /// The chunk holding `addr`'s shadow, allocating it if `alloc`.
    fn chunk(&mut self, addr: u64, alloc: bool) -> Option<*mut u8> {
        let e = self.entry(addr);
        // SAFETY: `e` points into the table (see `entry`).
        let c = unsafe { *e };
        if c != 0 {
            return Some(c as *mut u8);
        }
        if !alloc {
            return None;
        }
        if self.slab_left < CHUNK {
            let slab = map(self.next_slab, SLAB, libc::PROT_READ | libc::PROT_WRITE).unwrap_or_else(|e| {
                eprintln!("rtgrind: error: cannot allocate shadow memory: {e}");
                std::process::exit(crate::EXIT_INTERNAL)
            });
            self.slab = slab;
            self.slab_left = SLAB;
            self.next_slab = slab as u64 + SLAB as u64;
        }
        let c = self.slab;
        // SAFETY: at least one chunk is left in the slab.
        self.slab = unsafe { self.slab.add(CHUNK) };
        self.slab_left -= CHUNK;
        self.chunks += 1;
        // SAFETY: as above.
        unsafe { *e = c as u64 };
        Some(c)
    }

    pub fn get(&mut self, addr: u64) -> u8 {
        match self.chunk(addr, false) {
            // SAFETY: the offset is below CHUNK.
            Some(c) => unsafe { *c.add(addr as usize & (CHUNK - 1)) },
            None => 0,
        }
    }

    pub fn set(&mut self, addr: u64, v: u8) {
        if let Some(c) = self.chunk(addr, v != 0) {
            // SAFETY: the offset is below CHUNK.
            unsafe { *c.add(addr as usize & (CHUNK - 1)) = v };
        }
    }

    pub fn set_range(&mut self, addr: u64, len: u64, v: u8) {
        for a in addr..addr.saturating_add(len) {
            self.set(a, v);
        }
    }

    /// Any shadow byte of `[addr, addr+len)` non-zero.
    pub fn any(&mut self, addr: u64, len: u64) -> bool {
        (addr..addr.saturating_add(len)).any(|a| self.get(a) != 0)
    }

    /// Copies the shadow of `len` bytes from `src` to `dst` (as `memmove`).
    pub fn copy(&mut self, dst: u64, src: u64, len: u64) {
        let bytes: Vec<u8> = (0..len).map(|i| self.get(src.wrapping_add(i))).collect();
        for (i, v) in bytes.into_iter().enumerate() {
            self.set(dst.wrapping_add(i as u64), v);
        }
    }

    /// The 8-byte slot of the granule (8 aligned guest bytes) holding `addr`, for shadow kinds
    /// with one u64 per granule (origins).
    pub fn get64(&mut self, addr: u64) -> u64 {
        match self.chunk(addr, false) {
            // SAFETY: the offset is 8-aligned and below CHUNK.
            Some(c) => unsafe { *(c.add(addr as usize & (CHUNK - 8)) as *const u64) },
            None => 0,
        }
    }

    pub fn set64(&mut self, addr: u64, v: u64) {
        if let Some(c) = self.chunk(addr, v != 0) {
            // SAFETY: the offset is 8-aligned and below CHUNK.
            unsafe { *(c.add(addr as usize & (CHUNK - 8)) as *mut u64) = v };
        }
    }

    /// Sets the granule slots covering `[addr, addr+len)`.
    pub fn set64_range(&mut self, addr: u64, len: u64, v: u64) {
        if len == 0 {
            return;
        }
        let mut g = addr & !7;
        while g < addr.saturating_add(len) {
            self.set64(g, v);
            g += 8;
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

    #[test]
    fn reads_zero_until_written_and_crosses_chunks() {
        let mut m = ShadowMemory::new().unwrap();
        assert_eq!(m.get(0x7fff_1234_5678), 0);
        assert_eq!(m.chunks, 0);
        m.set(0x7fff_1234_5678, 0); // a zero write allocates nothing
        assert_eq!(m.chunks, 0);
        m.set_mask(0x1_ffff - 3, 8, 0b1010_0101);
        assert_eq!(m.chunks, 2);
        assert_eq!(m.mask(0x1_ffff - 3, 8), 0b1010_0101);
        m.copy(0x5000_0000, 0x1_ffff - 3, 8);
        assert_eq!(m.mask(0x5000_0000, 8), 0b1010_0101);
        assert!(m.any(0x1_fffc, 1) && !m.any(0x1_fffd, 1));
    }

    #[test]
    fn index_is_bits_16_to_47() {
        assert_eq!(index(0x0000_7fff_ffff_ffff), 0x7fff_ffff);
        assert_eq!(index(0x1_2345), 1);
        assert!(index(u64::MAX) < TABLE_ENTRIES);
    }
}
