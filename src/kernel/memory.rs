//! The guest's address space as rtgrind sees it: which ranges the guest owns and with what
//! protection, the virtual `brk` heap, and the checks that keep guest mappings from replacing
//! engine memory (code cache, rtgrind's heap and stacks).
//!
//! Every range is page-aligned. A guest `MAP_FIXED` request is honoured only where the range
//! is the guest's own or free: free parts are probed with `MAP_FIXED_NOREPLACE` first, so a
//! mapping over rtgrind's memory fails with ENOMEM instead of corrupting the engine.

use std::collections::BTreeMap;

pub const PAGE: u64 = 4096;

pub fn page_down(a: u64) -> u64 {
    a & !(PAGE - 1)
}
pub fn page_up(a: u64) -> u64 {
    a.wrapping_add(PAGE - 1) & !(PAGE - 1)
}

#[derive(Clone, Debug)]
pub struct Region {
    pub end: u64,
    /// Protection the guest asked for.
    pub prot: i32,
    /// Backing file, for reports.
    pub name: Option<String>,
    /// Code was translated from here while writable, so the real protection lacks
    /// PROT_WRITE until a write fault invalidates the translations.
    pub write_protected: bool,
    /// The mapped file's (device, inode): its translations go when the file is truncated.
    pub file: Option<FileId>,
}

/// A file's (device, inode).
pub type FileId = (u64, u64);

/// The (device, inode) of the file open as `fd`.
pub fn file_id(fd: i32) -> Option<FileId> {
    crate::kernel::raw::fstat(fd).map(|st| (st.st_dev, st.st_ino))
}

#[derive(Default)]
pub struct GuestMemory {
    regions: BTreeMap<u64, Region>,
    pub brk_start: u64,
    pub brk_cur: u64,
    /// Address space rtgrind keeps free (reserved PROT_NONE, not the guest's) where nothing
    /// would be mapped natively, so that a guest access there faults as natively instead of
    /// reaching rtgrind's memory beside it: the gaps around the guest stack and the one below
    /// rtgrind's own mappings. A guest mapping placed there (MAP_FIXED) takes the part it needs.
    kept_free: Vec<(u64, u64)>,
}

/// Address space kept free below rtgrind's own mappings at the top of the kernel's mmap area
/// (its libraries' data, its threads' stacks), below which the kernel then puts the guest's
/// mappings: natively a mapped buffer has the gap before the stack above it, and a store
/// 100 MB past one faulted where under rtgrind it overwrote rtgrind's data.
pub const RUNTIME_GAP: u64 = 4 << 30;

/// The part of the guest's brk heap reserved at start-up (`reserve_brk`): below where a
/// non-PIE program's code arena goes (256 MiB above its code).
const BRK_RESERVE: u64 = 128 << 20;

/// The highest user address; above it faults are the kernel's own kind (SI_KERNEL).
const USER_END: u64 = 1 << 47;

/// Where rtgrind's main thread's stack may be: from its top in the real `/proc/self/maps`
/// down by the stack size limit (a fault there, a kernel copy's too, grows it).
fn runtime_stack() -> (u64, u64) {
    static STACK: std::sync::OnceLock<(u64, u64)> = std::sync::OnceLock::new();
    *STACK.get_or_init(|| {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        let Some(hi) = maps.lines().find(|l| l.ends_with("[stack]")).and_then(|l| u64::from_str_radix(l.split(['-', ' ']).nth(1)?, 16).ok()) else {
            return (0, 0);
        };
        let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit fills the struct it is given.
        unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut rl) };
        let size = if rl.rlim_cur == libc::RLIM_INFINITY { 1 << 32 } else { rl.rlim_cur.min(1 << 32) };
        (hi.saturating_sub(size + (1 << 20)), hi)
    })
}

/// `mmap`, its result an address or an errno (a seccomp-skipped call, which "returns" its own
/// number, is a failure).
pub(crate) fn raw_mmap(addr: u64, len: u64, prot: i32, flags: i32, fd: i32, off: u64) -> Result<u64, i32> {
    // SAFETY: callers pass either MAP_FIXED over guest-owned memory, MAP_FIXED_NOREPLACE, or
    // no fixed flag; none of these can replace memory rtgrind uses.
    let p = unsafe { libc::mmap(addr as *mut libc::c_void, len as usize, prot, flags, fd, off as i64) };
    if p == libc::MAP_FAILED {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::ENOMEM))
    } else if p as u64 & (PAGE - 1) != 0 {
        // A seccomp filter's SECCOMP_RET_TRAP skipped the call, which "returns" its own number.
        Err(libc::ENOSYS)
    } else {
        Ok(p as u64)
    }
}

impl GuestMemory {
    /// Every guest mapping as `(start, end)`.
    pub fn ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.regions.iter().map(|(&s, r)| (s, r.end))
    }

    /// Removes `[start, end)` from the map, splitting regions that straddle its ends.
    fn carve(&mut self, start: u64, end: u64) {
        if let Some((&s, r)) = self.regions.range(..start).next_back() {
            if r.end > start {
                let mut tail = r.clone();
                let old_end = r.end;
                self.regions.get_mut(&s).unwrap().end = start;
                if old_end > end {
                    tail.end = old_end;
                    self.regions.insert(end, tail);
                }
            }
        }
        let inside: Vec<u64> = self.regions.range(start..end).map(|(&s, _)| s).collect();
        for s in inside {
            let r = self.regions.remove(&s).unwrap();
            if r.end > end {
                self.regions.insert(end, r);
            }
        }
    }

    pub fn add(&mut self, start: u64, len: u64, prot: i32, name: Option<String>) {
        self.add_file(start, len, prot, name, None);
    }

    /// `add` for a mapping of the file `file`.
    fn add_file(&mut self, start: u64, len: u64, prot: i32, name: Option<String>, file: Option<FileId>) {
        let end = start + len;
        self.carve(start, end);
        self.give_up_kept(start, end);
        self.regions.insert(start, Region { end, prot, name, write_protected: false, file });
    }

    /// Executable ranges mapped from the file `id` (their translations must go when the
    /// file shrinks: natively, fetching code past its new end raises SIGBUS).
    pub fn exec_ranges_of(&self, id: FileId) -> Vec<(u64, u64)> {
        self.regions.iter().filter(|(_, r)| r.file == Some(id) && r.prot & libc::PROT_EXEC != 0).map(|(&s, r)| (s, r.end)).collect()
    }

    pub fn remove(&mut self, start: u64, len: u64) {
        self.carve(start, start + len);
    }

    /// Guest-owned pieces overlapping `[start, end)`, clipped to it.
    pub fn pieces(&self, start: u64, end: u64) -> Vec<(u64, u64, Region)> {
        let mut v = Vec::new();
        let first = self.regions.range(..=start).next_back().map(|(&s, _)| s).unwrap_or(start);
        for (&s, r) in self.regions.range(first..end) {
            if r.end <= start {
                continue;
            }
            v.push((s.max(start), r.end.min(end), r.clone()));
        }
        v
    }

    /// Parts of `[start, end)` the guest does not own.
    pub fn gaps(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
        let mut v = Vec::new();
        let mut cur = start;
        for (s, e, _) in self.pieces(start, end) {
            if s > cur {
                v.push((cur, s));
            }
            cur = e;
        }
        if cur < end {
            v.push((cur, end));
        }
        v
    }

    /// Whether a guest buffer `[start, start + len)` reaches memory that is mapped but not the
    /// guest's (rtgrind's own: its heap, stacks, code cache, shadow memory), where natively
    /// there is nothing: the kernel would copy to or from rtgrind's memory where the native
    /// call fails with EFAULT. A kernel copy goes from the start, so each part the guest does
    /// not own is looked at in its first page (`mincore`: mapped or not); the parts the guest
    /// owns cost a look-up in the map and no call.
    pub fn reaches_runtime(&self, start: u64, len: u64) -> bool {
        if len == 0 {
            return false;
        }
        let Some(end) = start.checked_add(len).filter(|&e| e <= USER_END) else { return false };
        self.gaps(start, end).into_iter().any(|(s, _)| {
            let (stack_lo, stack_hi) = runtime_stack();
            if (stack_lo..stack_hi).contains(&s) {
                // rtgrind's own stack, or below it where the kernel's copy would grow it.
                return true;
            }
            let page = page_down(s);
            let mut v = 0u8;
            // SAFETY: mincore only reports on the page; `v` holds its one byte of answer.
            unsafe { libc::mincore(page as *mut libc::c_void, 4096, &mut v) == 0 }
        })
    }

    pub fn region_at(&self, addr: u64) -> Option<(u64, &Region)> {
        let (&s, r) = self.regions.range(..=addr).next_back()?;
        (addr < r.end).then_some((s, r))
    }

    /// Reserves `len` bytes of address space at `hint` (exactly if `fixed`, else where the
    /// kernel puts a mapping) that is kept free: neither the guest's nor rtgrind's, so a guest
    /// access there faults (as SEGV_MAPERR, `native_segv_code`).
    pub fn keep_free(&mut self, hint: u64, len: u64, fixed: bool) -> std::io::Result<u64> {
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | if hint != 0 { libc::MAP_FIXED_NOREPLACE } else { 0 };
        let at = raw_mmap(hint, len, libc::PROT_NONE, flags, -1, 0).map_err(std::io::Error::from_raw_os_error)?;
        if fixed && at != hint {
            // SAFETY: the reservation was just made and is not used.
            unsafe { libc::munmap(at as *mut libc::c_void, len as usize) };
            return Err(std::io::Error::from_raw_os_error(libc::EEXIST));
        }
        self.kept_free.push((at, at + page_up(len)));
        Ok(at)
    }

    /// Keeps `RUNTIME_GAP` free below rtgrind's own mappings at the top of the kernel's mmap
    /// area (those mapped at start-up: its libraries, their data, its TLS), and the holes
    /// between them too (the kernel puts a mapping in the highest hole it fits in), so that
    /// every guest mapping the kernel places goes below the gap. Best effort.
    pub fn keep_runtime_apart(&mut self) {
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return };
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        let mut stack = USER_END;
        for line in maps.lines() {
            let Some((range, _)) = line.split_once(' ') else { continue };
            let Some((lo, hi)) = range.split_once('-') else { continue };
            let (Ok(lo), Ok(hi)) = (u64::from_str_radix(lo, 16), u64::from_str_radix(hi, 16)) else { continue };
            if line.ends_with("[stack]") {
                stack = stack.min(lo);
            }
            ranges.push((lo, hi));
        }
        ranges.retain(|&(_, hi)| hi <= stack);
        ranges.sort_unstable();
        // The cluster below the stack: mappings less than this apart.
        const APART: u64 = 256 << 20;
        let Some(&(mut lo, _)) = ranges.last() else { return };
        let mut holes = Vec::new();
        for w in ranges.windows(2).rev() {
            let ((_, below_end), (above_start, _)) = (w[0], w[1]);
            if above_start != lo {
                break;
            }
            if above_start - below_end >= APART {
                break;
            }
            if above_start > below_end {
                holes.push((below_end, above_start));
            }
            lo = w[0].0;
        }
        for (s, e) in holes {
            let _ = self.keep_free(s, e - s, true);
        }
        if lo > RUNTIME_GAP {
            let _ = self.keep_free(lo - RUNTIME_GAP, RUNTIME_GAP, true);
        }
    }

    /// `[start, end)` becomes the guest's: it is no longer kept free.
    fn give_up_kept(&mut self, start: u64, end: u64) {
        let mut left = Vec::with_capacity(self.kept_free.len() + 1);
        for &(s, e) in &self.kept_free {
            if e <= start || s >= end {
                left.push((s, e));
                continue;
            }
            if s < start {
                left.push((s, start));
            }
            if e > end {
                left.push((end, e));
            }
        }
        self.kept_free = left;
    }

    /// The si_code of a SIGSEGV at `addr` as the native process gets it: an access denied
    /// (SEGV_ACCERR) where the guest has nothing mapped (rtgrind's memory, or address space it
    /// keeps free, PROT_NONE) would natively find nothing there at all (SEGV_MAPERR).
    pub fn native_segv_code(&self, addr: u64, code: i32) -> i32 {
        const SEGV_MAPERR: i32 = 1;
        const SEGV_ACCERR: i32 = 2;
        if code == SEGV_ACCERR && addr < USER_END && self.region_at(addr).is_none() {
            SEGV_MAPERR
        } else {
            code
        }
    }

    /// Makes sure every part of `[start, end)` the guest does not own is free, by reserving
    /// it with MAP_FIXED_NOREPLACE (parts rtgrind keeps free are free for the guest). On
    /// failure nothing is left reserved.
    fn claim_gaps(&mut self, start: u64, end: u64) -> Result<(), i32> {
        let mut gaps = Vec::new();
        for (s, e) in self.gaps(start, end) {
            let mut cur = s;
            let mut kept: Vec<(u64, u64)> = self.kept_free.iter().map(|&(ks, ke)| (ks.max(s), ke.min(e))).filter(|(ks, ke)| ks < ke).collect();
            kept.sort_unstable();
            for (ks, ke) in kept {
                if ks > cur {
                    gaps.push((cur, ks));
                }
                cur = cur.max(ke);
            }
            if cur < e {
                gaps.push((cur, e));
            }
        }
        let mut done = Vec::new();
        for (s, e) in gaps {
            let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE;
            match raw_mmap(s, e - s, libc::PROT_NONE, flags, -1, 0) {
                Ok(p) if p == s => done.push((s, e)),
                other => {
                    if let Ok(p) = other {
                        // SAFETY: an old kernel placed our probe elsewhere; it is ours to drop.
                        unsafe { libc::munmap(p as *mut libc::c_void, (e - s) as usize) };
                    }
                    for (s, e) in done {
                        // SAFETY: these probes were mapped just above and belong to nobody else.
                        unsafe { libc::munmap(s as *mut libc::c_void, (e - s) as usize) };
                    }
                    return Err(libc::ENOMEM);
                }
            }
        }
        Ok(())
    }

    /// Reserves `len` bytes (PROT_NONE) at `hint` exactly if `fixed`, else near it.
    pub fn reserve(&mut self, hint: u64, len: u64, fixed: bool) -> std::io::Result<u64> {
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | if hint != 0 || fixed { libc::MAP_FIXED_NOREPLACE } else { 0 };
        let at = match raw_mmap(hint, len, libc::PROT_NONE, flags, -1, 0) {
            Ok(p) => p,
            Err(_) if !fixed => raw_mmap(0, len, libc::PROT_NONE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0).map_err(std::io::Error::from_raw_os_error)?,
            Err(e) => return Err(std::io::Error::from_raw_os_error(e)),
        };
        if fixed && at != hint {
            return Err(std::io::Error::from_raw_os_error(libc::EEXIST));
        }
        self.add(at, page_up(len), libc::PROT_NONE, None);
        Ok(at)
    }

    /// Maps a file range inside guest-owned memory (the loader's segments).
    pub fn map_file_fixed(&mut self, at: u64, len: u64, prot: i32, fd: i32, off: u64, name: &str) -> std::io::Result<()> {
        raw_mmap(at, len, prot, libc::MAP_PRIVATE | libc::MAP_FIXED, fd, off).map_err(std::io::Error::from_raw_os_error)?;
        self.add_file(at, len, prot, Some(name.to_string()), file_id(fd));
        Ok(())
    }

    pub fn map_anon_fixed(&mut self, at: u64, len: u64, prot: i32, name: &str) -> std::io::Result<()> {
        raw_mmap(at, len, prot, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED, -1, 0).map_err(std::io::Error::from_raw_os_error)?;
        self.add(at, len, prot, Some(name.to_string()));
        Ok(())
    }

    /// Changes real and recorded protection of guest-owned memory.
    pub fn protect_fixed(&mut self, at: u64, len: u64, prot: i32) {
        // SAFETY: the range is guest-owned (the loader's own segment).
        unsafe { libc::mprotect(at as *mut libc::c_void, len as usize, prot) };
        let (name, file) = self.region_at(at).map_or((None, None), |(_, r)| (r.name.clone(), r.file));
        self.add_file(at, len, prot, name, file);
    }

    /// The guest's `mmap`. Returns the address or a negative errno.
    pub fn guest_mmap(&mut self, addr: u64, len: u64, prot: i32, flags: i32, fd: i32, off: u64) -> i64 {
        if len == 0 {
            return -libc::EINVAL as i64;
        }
        let len = page_up(len);
        let fixed = flags & libc::MAP_FIXED != 0 && flags & libc::MAP_FIXED_NOREPLACE == 0;
        if fixed {
            if !addr.is_multiple_of(PAGE) {
                return -libc::EINVAL as i64;
            }
            if let Err(e) = self.claim_gaps(addr, addr + len) {
                return -e as i64;
            }
        }
        match raw_mmap(addr, len, prot, flags, fd, off) {
            Ok(p) => {
                let (name, file) = if fd >= 0 && flags & libc::MAP_ANONYMOUS == 0 {
                    (std::fs::read_link(format!("/proc/self/fd/{fd}")).ok().map(|p| p.display().to_string()), file_id(fd))
                } else {
                    (None, None)
                };
                self.add_file(p, len, prot, name, file);
                p as i64
            }
            Err(e) => -e as i64,
        }
    }

    /// The guest's `munmap`: only guest-owned pieces are unmapped; other parts are left alone
    /// (they are free, or they are rtgrind's and the guest must not unmap them).
    pub fn guest_munmap(&mut self, addr: u64, len: u64) -> i64 {
        if !addr.is_multiple_of(PAGE) || len == 0 {
            return -libc::EINVAL as i64;
        }
        let end = addr.saturating_add(page_up(len));
        for (s, e, _) in self.pieces(addr, end) {
            // SAFETY: [s, e) is guest-owned.
            unsafe { libc::munmap(s as *mut libc::c_void, (e - s) as usize) };
        }
        self.remove(addr, end - addr);
        0
    }

    /// The guest's `mprotect`. Write-protected code pages keep PROT_WRITE off for real.
    pub fn guest_mprotect(&mut self, addr: u64, len: u64, prot: i32) -> i64 {
        if !addr.is_multiple_of(PAGE) {
            return -libc::EINVAL as i64;
        }
        let end = addr.saturating_add(page_up(len));
        // As the kernel: the mappings before the first hole change, and the call fails.
        let (end, ret) = match self.gaps(addr, end).first() {
            Some(&(hole, _)) if hole == addr => return -libc::ENOMEM as i64,
            Some(&(hole, _)) => (hole, -libc::ENOMEM as i64),
            None => (end, 0),
        };
        // SAFETY: the whole range is guest-owned (no gaps before `end`).
        let r = unsafe { libc::mprotect(addr as *mut libc::c_void, (end - addr) as usize, prot) };
        if r != 0 {
            return -(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL)) as i64;
        }
        for (s, e, reg) in self.pieces(addr, end) {
            self.carve(s, e);
            self.regions.insert(s, Region { end: e, prot, write_protected: false, ..reg });
        }
        ret
    }

    /// The guest's `mremap`.
    pub fn guest_mremap(&mut self, old: u64, old_len: u64, new_len: u64, flags: i32, new_addr: u64) -> i64 {
        let old_end = old.saturating_add(page_up(old_len));
        if !self.gaps(old, old_end).is_empty() {
            return -libc::EFAULT as i64;
        }
        let (prot, name, file) = self.region_at(old).map(|(_, r)| (r.prot, r.name.clone(), r.file)).unwrap_or((0, None, None));
        if flags & libc::MREMAP_FIXED != 0 {
            if let Err(e) = self.claim_gaps(new_addr, new_addr + page_up(new_len)) {
                return -e as i64;
            }
        }
        // SAFETY: the old range is guest-owned; a fixed destination was checked to be guest-owned or free.
        let p = unsafe { libc::mremap(old as *mut libc::c_void, old_len as usize, new_len as usize, flags, new_addr as *mut libc::c_void) };
        if p == libc::MAP_FAILED {
            return -(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::ENOMEM)) as i64;
        }
        if flags & libc::MREMAP_DONTUNMAP == 0 {
            self.remove(old, old_end - old);
        }
        self.add_file(p as u64, page_up(new_len), prot, name, file);
        p as i64
    }

    /// Reserves the first `BRK_RESERVE` bytes of the guest's brk heap (kept free until it
    /// grows there), so that it grows by `mprotect`, without `mmap`: a guest whose seccomp
    /// filter denies mmap (the filter applies to rtgrind's own calls too) still has its brk,
    /// as natively. Best effort.
    pub fn reserve_brk(&mut self) {
        let _ = self.keep_free(page_up(self.brk_start), BRK_RESERVE, true);
    }

    /// Whether all of `[start, end)` is kept free.
    fn all_kept_free(&self, start: u64, end: u64) -> bool {
        let covered: u64 = self.kept_free.iter().map(|&(s, e)| e.min(end).saturating_sub(s.max(start))).sum();
        covered == end - start
    }

    /// The guest's `brk`: a heap separate from rtgrind's own.
    pub fn guest_brk(&mut self, want: u64) -> u64 {
        if want < self.brk_start {
            return self.brk_cur;
        }
        let (cur_top, new_top) = (page_up(self.brk_cur), page_up(want));
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        if new_top > cur_top {
            let len = new_top - cur_top;
            let grown = if self.all_kept_free(cur_top, new_top) {
                // SAFETY: the range is reserved by rtgrind for the brk heap and unused.
                unsafe { libc::mprotect(cur_top as *mut libc::c_void, len as usize, rw) == 0 }
            } else {
                let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE;
                raw_mmap(cur_top, len, rw, flags, -1, 0) == Ok(cur_top)
            };
            if !grown {
                return self.brk_cur;
            }
            self.add(cur_top, len, rw, Some("[heap]".into()));
        } else if new_top < cur_top {
            let (start, len) = (new_top, cur_top - new_top);
            let reserved = page_up(self.brk_start).saturating_add(BRK_RESERVE);
            if cur_top <= reserved {
                // Back into the reservation, its pages freed (they read as zero when it grows).
                // SAFETY: [new_top, cur_top) is the guest heap's own tail.
                unsafe {
                    libc::madvise(start as *mut libc::c_void, len as usize, libc::MADV_DONTNEED);
                    libc::mprotect(start as *mut libc::c_void, len as usize, libc::PROT_NONE);
                }
                self.remove(start, len);
                self.kept_free.push((start, cur_top));
            } else {
                // SAFETY: [new_top, cur_top) is the guest heap's own tail.
                unsafe { libc::munmap(start as *mut libc::c_void, len as usize) };
                self.remove(start, len);
            }
        }
        self.brk_cur = want;
        want
    }

    /// Length of executable guest code readable from `addr` (contiguous regions).
    pub fn exec_len(&self, addr: u64, max: u64) -> u64 {
        let mut cur = addr;
        while cur < addr + max {
            match self.region_at(cur) {
                Some((_, r)) if r.prot & libc::PROT_EXEC != 0 => cur = r.end,
                _ => break,
            }
        }
        cur.min(addr + max) - addr
    }

    /// Marks the pages of `[start, end)` as holding translated code: writable pages lose
    /// PROT_WRITE for real so a guest write faults and invalidates the translations.
    pub fn protect_code(&mut self, start: u64, end: u64) {
        let (s, e) = (page_down(start), page_up(end));
        for (ps, pe, r) in self.pieces(s, e) {
            if r.prot & libc::PROT_WRITE != 0 && !r.write_protected {
                // SAFETY: guest-owned pages; only the write permission is removed.
                unsafe { libc::mprotect(ps as *mut libc::c_void, (pe - ps) as usize, r.prot & !libc::PROT_WRITE) };
                self.carve(ps, pe);
                self.regions.insert(ps, Region { end: pe, write_protected: true, ..r });
            }
        }
    }

    /// A write to `addr` faulted: if it hit a write-protected code page, gives the page its
    /// write permission back and returns the page range whose translations must go.
    pub fn unprotect_code_page(&mut self, addr: u64) -> Option<(u64, u64)> {
        let (_, r) = self.region_at(addr)?;
        if !r.write_protected {
            return None;
        }
        let r = r.clone();
        let (ps, pe) = (page_down(addr), page_down(addr) + PAGE);
        // SAFETY: a guest-owned page that the guest mapped writable.
        unsafe { libc::mprotect(ps as *mut libc::c_void, PAGE as usize, r.prot) };
        self.carve(ps, pe);
        self.regions.insert(ps, Region { end: pe, write_protected: false, ..r });
        Some((ps, pe))
    }

    /// Gives every write-protected code page its write permission back (before retrying a
    /// syscall that failed with EFAULT writing into one). Returns the ranges unprotected.
    pub fn unprotect_all_code(&mut self) -> Vec<(u64, u64)> {
        let wp: Vec<(u64, Region)> = self.regions.iter().filter(|(_, r)| r.write_protected).map(|(&s, r)| (s, r.clone())).collect();
        let mut v = Vec::new();
        for (s, r) in wp {
            // SAFETY: guest-owned pages the guest mapped writable.
            unsafe { libc::mprotect(s as *mut libc::c_void, (r.end - s) as usize, r.prot) };
            v.push((s, r.end));
            self.regions.insert(s, Region { write_protected: false, ..r });
        }
        v
    }
}

impl GuestMemory {
    /// Start of the lowest region backed by the file `name` (a module's load address).
    pub fn lowest_start_named(&self, name: &str) -> Option<u64> {
        self.regions.iter().find(|(_, r)| r.name.as_deref() == Some(name)).map(|(&s, _)| s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carve_splits_regions() {
        let mut m = GuestMemory::default();
        m.add(0x1000, 0x5000, libc::PROT_READ, None);
        m.remove(0x2000, 0x1000);
        assert_eq!(m.gaps(0x1000, 0x6000), vec![(0x2000, 0x3000)]);
        m.add(0x2000, 0x1000, libc::PROT_EXEC | libc::PROT_READ, None);
        assert_eq!(m.exec_len(0x2000, 0x10000), 0x1000);
        assert_eq!(m.pieces(0x0, 0x10000).len(), 3);
    }
}
