//! A plain access recorded in the detector's compact words from the code cache (issue 30), as
//! ThreadSanitizer's fast path stores its shadow cell: where the same-epoch cache declines
//! (the granule is new to this thread's epoch, or the access adds bytes to it) and the
//! granule's compact words hold nothing of another thread (empty: a granule's first access;
//! or this thread's own accesses of earlier epochs: thread-local data across a tick).
//!
//! Such an access races with nothing (only another thread's access can), and its new words
//! follow from the old ones, the thread's epoch, its bytes and its site, where it covers what
//! it must: a read, the read word's bytes (the read word becomes the access alone); a write,
//! the write word's (which becomes the access alone), its read bytes left keeping their epoch
//! only where none is of an older one (the read word keeps the bytes the write leaves); the
//! sites word takes the site, the access's word's deltas and older bytes cleared (`fresh`, the
//! rule in Rust, which a unit test checks against the detector's own path). The same-epoch
//! cache word becomes the epoch and the bytes, as `State::cache` makes it. Anything else
//! (another thread's access there, a write over part of its own earlier write, older read
//! bytes a write leaves, a full cell, memory outside the covered slices (full cells only, its
//! record the shared sink's), an atomic location the filter may hold, a site number past the
//! sites word's 20 bits) goes to the call-outs as before. Before the first thread is created
//! only the cache word is written (the call-outs record nothing in the detector then either).
//!
//! What it relies on: one guest thread runs at a time (the scheduler's baton), so no other
//! thread's access or call-out falls between the inline code's reads and writes of the words;
//! the thread's tool-area epoch word is its detector clock (every call-out and hook that ticks
//! it writes it back, and the inline read-modify-writes of `owned` tick both, their settling
//! leaving the detector where the word is); and a pending read-modify-write (`owned`) touches
//! only its own location's granule, which the filter keeps out of this path, so settling it
//! after an inline record gives what settling it before would.

use super::hb;
use crate::shadow::propagate::r32;
use rtgrind_jit::instrument::code_asm::{byte_ptr, dword_ptr, qword_ptr, AsmRegister64, CodeAssembler, CodeLabel};

/// The bits of a compact word that hold its delta's low bits.
const DELTA_BITS: u64 = 0x3f << 10;
/// The bits of the sites word that hold the read's site.
const READ_SITE: u64 = ((1 << 20) - 1) << 20;
/// The bits of the sites word a read keeps: the write's site, its deltas' high bits, its older
/// bytes (the read's site, deltas and older bytes are its own).
const READ_KEEPS: u64 = ((1 << 20) - 1) | 0xf << 40 | 0xff << 48;

/// Threads whose clock entries a thread keeps in its tool area (`KNOWN_THREADS` 32-bit words,
/// entry u at byte 4u of the table): where a granule's write word is another thread's, the
/// inline record compares its clock with the entry of that thread.
pub const KNOWN_THREADS: usize = 16;

/// What the inline code makes of a granule's compact words `(write, read, sites)` for a plain
/// access by the thread whose epoch word is `epoch` (`tid << 32 | clock`) and whose tool-area
/// table of clock entries is `known` (`KNOWN_THREADS` of them) to its bytes `mask` from site
/// `site`: the new words, or none where it declines. (The rule the emitted code follows,
/// checked against the detector's own path by a unit test.)
#[cfg(test)]
pub fn fresh(words: [u64; 3], (epoch, known): (u64, &[u32]), mask: u8, write: bool, site: u32) -> Option<[u64; 3]> {
    let [w, r, sites] = words;
    let high = epoch << 16;
    // Empty, or this thread's (not a full cell's index, whose tid bits are 0: the main thread's).
    let own = |x: u64| x == 0 || (x ^ high) >> 48 == 0 && x & hb::SPILLED == 0;
    // Or another thread's of an epoch (its newer bytes': the older ones are older still) the
    // table covers, so ordered before this access (the table is never ahead of the clock).
    let ordered = |x: u64| {
        let u = (x >> 48) as usize;
        x & hb::SPILLED == 0 && u < KNOWN_THREADS && (x >> 16) as u32 <= known[u]
    };
    let covered = |x: u64| (x as u8) & !mask == 0;
    let m = u64::from(mask);
    if !(own(w) || ordered(w)) || !own(r) || site >= hb::SITE_LIMIT {
        return None;
    }
    if write {
        // The reads it leaves keep their epoch: only if none of them is of an older one (the
        // older bytes, the sites word's top byte).
        if !covered(w) || (sites >> 56) as u8 & !mask != 0 {
            return None;
        }
        let left = if covered(r) { 0 } else { r & !m & !DELTA_BITS };
        Some([high | m, left, u64::from(site) | sites & READ_SITE])
    } else {
        covered(r).then_some([w, high | m, sites & READ_KEEPS | u64::from(site) << 20])
    }
}

/// An access's bytes in the cache word's place (written ones above the read ones): in a
/// register, or all of the granule's.
enum Bytes {
    In(AsmRegister64),
    All { write: bool },
}

/// Where translated code finds the words: the registers it may use and the tool-area words.
pub struct Emit {
    /// The granule's record (its cache word at `hb::USER_WORD`).
    pub record: AsmRegister64,
    /// Borrowed, clobbered.
    pub temps: [AsmRegister64; 2],
    /// The tool-area word of the thread's epoch, and its table of clock entries
    /// (`KNOWN_THREADS`).
    pub epoch: u64,
    pub known: u64,
    /// The records' table of covered slices (`GranuleRecords::covered_table_addr`): elsewhere
    /// the detector keeps full cells, and a record is the shared sink's.
    pub covered: u64,
    /// The filter of atomic locations (`FILTER_BITS` bits) and its index mask.
    pub filter: u64,
    pub filter_mask: i32,
}

impl Emit {
    /// The inline record of an access of `size` bytes (1-8, within its granule: checked, on
    /// to `slow` if not) at the address in `addr` (clobbered), a write or not, from site
    /// `site` (under `hb::SITE_LIMIT`); on to `slow` where it declines, to `done` once
    /// recorded.
    pub fn within(&self, a: &mut CodeAssembler, addr: AsmRegister64, (size, write, site): (u64, bool, u32), (slow, done): (CodeLabel, CodeLabel)) {
        let [v, w] = self.temps;
        self.in_covered_slice(a, addr, slow);
        self.unfiltered(a, addr, 0, slow);
        a.mov(v, addr).unwrap();
        a.and(v, 7).unwrap();
        if size > 1 {
            a.cmp(v, (8 - size) as i32).unwrap();
            a.ja(slow).unwrap();
        }
        // w = the access's bytes, v = the thread's epoch high (`high` in `fresh`).
        a.mov(w, (1u64 << size) - 1).unwrap();
        a.shlx(w, w, v).unwrap();
        let mut alone = a.create_label();
        self.epoch_high(a, v, alone);
        let t = addr;
        self.own(a, (t, v), 0, 8, slow);
        self.own_or_ordered(a, (t, v), 0, slow);
        if write {
            self.covered(a, (t, w), 0, slow);
            // No older read bytes left beside the write.
            a.mov(t, qword_ptr(self.record + 16)).unwrap();
            a.shr(t, 56).unwrap();
            a.andn(t, w, t).unwrap();
            a.jne(slow).unwrap();
        } else {
            self.covered(a, (t, w), 8, slow);
        }
        self.store(a, (t, v, w), 0, write, site);
        a.set_label(&mut alone).unwrap();
        if write {
            a.shl(w, 8).unwrap();
        }
        self.cache(a, (t, v), 0, Bytes::In(w));
        a.jmp(done).unwrap();
    }

    /// The same for an aligned access of `granules` whole granules within one slice (the
    /// caller checks both): every granule's words checked first, then all written.
    pub fn whole(&self, a: &mut CodeAssembler, addr: AsmRegister64, (granules, write, site): (i32, bool, u32), (slow, done): (CodeLabel, CodeLabel)) {
        let [v, w] = self.temps;
        self.in_covered_slice(a, addr, slow);
        for k in 0..granules {
            self.unfiltered(a, addr, 8 * k, slow);
        }
        let mut alone = a.create_label();
        self.epoch_high(a, v, alone);
        let t = addr;
        for k in 0..granules {
            self.own_or_ordered(a, (t, v), 32 * k, slow);
            self.own(a, (t, v), 32 * k, 8, slow);
        }
        for k in 0..granules {
            a.mov(w, 0xffu64).unwrap();
            self.store(a, (t, v, w), 32 * k, write, site);
        }
        a.set_label(&mut alone).unwrap();
        for k in 0..granules {
            self.cache(a, (t, v), 32 * k, Bytes::All { write });
        }
        a.jmp(done).unwrap();
    }

    /// On to `slow` unless the address in `addr` is in a covered slice (`GranuleRecords::covers`:
    /// a user address, its slice's records its own). `addr` is kept.
    fn in_covered_slice(&self, a: &mut CodeAssembler, addr: AsmRegister64, slow: CodeLabel) {
        let [v, w] = self.temps;
        a.mov(v, addr).unwrap();
        a.shr(v, crate::shadow::memory::SLICE_BITS).unwrap();
        a.cmp(v, crate::shadow::memory::SLICES as i32 - 1).unwrap();
        a.ja(slow).unwrap();
        a.mov(w, self.covered).unwrap();
        a.cmp(byte_ptr(w + v), 0).unwrap();
        a.je(slow).unwrap();
    }

    /// On to `slow` if the filter has the bit of the granule `offset` bytes past the address in
    /// `addr` (an atomic location or an exit word may be there). `addr` is kept.
    fn unfiltered(&self, a: &mut CodeAssembler, addr: AsmRegister64, offset: i32, slow: CodeLabel) {
        let [v, w] = self.temps;
        a.lea(w, qword_ptr(addr + offset)).unwrap();
        a.shr(w, 3).unwrap();
        a.and(w, self.filter_mask).unwrap();
        a.mov(v, self.filter).unwrap();
        // (A bit string from the filter's start: the word at w / 64, bit w % 64.)
        a.bt(qword_ptr(v), w).unwrap();
        a.jb(slow).unwrap();
    }

    /// v = the thread's epoch word << 16 (`tid << 48 | clock << 16`); on to `alone` while no
    /// thread was created (the main thread's first epoch, `tid 0, clock 1`): the call-outs
    /// record nothing in the detector then (`Detector::alone`: nothing can race), only the
    /// cache word, and so does this.
    fn epoch_high(&self, a: &mut CodeAssembler, v: AsmRegister64, alone: CodeLabel) {
        a.mov(v, qword_ptr(self.epoch).gs()).unwrap();
        a.shl(v, 16).unwrap();
        a.cmp(v, 1 << 16).unwrap();
        a.je(alone).unwrap();
    }

    /// On to `slow` unless the compact word `word` bytes into the record `offset` bytes past
    /// `u` is empty or this thread's (`own` in `fresh`). `t` is clobbered.
    fn own(&self, a: &mut CodeAssembler, (t, v): (AsmRegister64, AsmRegister64), offset: i32, word: i32, slow: CodeLabel) {
        self.own_or(a, (t, v), offset + word, slow, false);
    }

    /// On to `slow` unless the write word of the record `offset` bytes past `u` is empty, this
    /// thread's, or another's ordered before the access (`own` or `ordered` in `fresh`: its
    /// thread under `KNOWN_THREADS`, its clock, bytes 2-5 of the word, no later than that
    /// thread's entry in the tool-area table, which is never ahead of the thread's clock).
    /// `t` is clobbered.
    fn own_or_ordered(&self, a: &mut CodeAssembler, (t, v): (AsmRegister64, AsmRegister64), offset: i32, slow: CodeLabel) {
        self.own_or(a, (t, v), offset, slow, true);
    }

    /// `own` of the word `at` bytes past `u`, or with `ordered`, `own_or_ordered`.
    fn own_or(&self, a: &mut CodeAssembler, (t, v): (AsmRegister64, AsmRegister64), at: i32, slow: CodeLabel, ordered: bool) {
        let u = self.record;
        let mut ok = a.create_label();
        a.mov(t, qword_ptr(u + at)).unwrap();
        a.test(t, t).unwrap();
        a.je(ok).unwrap();
        a.test(t, hb::SPILLED as i32).unwrap();
        a.jne(slow).unwrap();
        a.xor(t, v).unwrap();
        a.shr(t, 48).unwrap();
        if ordered {
            a.je(ok).unwrap();
            a.mov(t, qword_ptr(u + at)).unwrap();
            a.shr(t, 48).unwrap();
            a.cmp(t, KNOWN_THREADS as i32).unwrap();
            a.jae(slow).unwrap();
            a.mov(r32(t), dword_ptr(t * 4 + self.known).gs()).unwrap();
            a.cmp(dword_ptr(u + (at + 2)), r32(t)).unwrap();
            a.ja(slow).unwrap();
        } else {
            a.jne(slow).unwrap();
        }
        a.set_label(&mut ok).unwrap();
        a.zero_bytes().unwrap();
    }

    /// On to `slow` unless the access's bytes (in `w`) cover the compact word `word` bytes
    /// into the record at `offset` (`covered` in `fresh`). `t` is clobbered.
    fn covered(&self, a: &mut CodeAssembler, (t, w): (AsmRegister64, AsmRegister64), word: i32, slow: CodeLabel) {
        a.andn(t, w, qword_ptr(self.record + word)).unwrap();
        a.test(t, 0xff).unwrap();
        a.jne(slow).unwrap();
    }

    /// The cache word of the record `offset` bytes past `u` after the access (`State::cache`):
    /// the thread's epoch (v, its high form), the bytes it wrote and read there in this epoch
    /// before (kept if the word was of this epoch), and the access's (`bytes`: in the cache
    /// word's place). `t` is clobbered.
    fn cache(&self, a: &mut CodeAssembler, (t, v): (AsmRegister64, AsmRegister64), offset: i32, bytes: Bytes) {
        let at = qword_ptr(self.record + (offset + 8 * hb::USER_WORD as i32));
        let mut keep = a.create_label();
        // t = the word's bytes if it is of this epoch (the rest equal to v's), else 0.
        a.mov(t, at).unwrap();
        a.xor(t, v).unwrap();
        a.cmp(t, 0xffff).unwrap();
        a.jbe(keep).unwrap();
        a.xor(t, t).unwrap();
        a.set_label(&mut keep).unwrap();
        match bytes {
            Bytes::In(r) => a.or(t, r).unwrap(),
            Bytes::All { write } => a.or(t, if write { 0xff00 } else { 0xff }).unwrap(),
        }
        a.or(t, v).unwrap();
        a.mov(at, t).unwrap();
    }

    /// The words `fresh` gives, written (v = the epoch high, w = the access's bytes, kept; `t`
    /// clobbered).
    fn store(&self, a: &mut CodeAssembler, (t, v, w): (AsmRegister64, AsmRegister64, AsmRegister64), offset: i32, write: bool, site: u32) {
        let u = self.record;
        let at = |word: i32| qword_ptr(u + (offset + 8 * word));
        a.mov(t, w).unwrap();
        a.or(t, v).unwrap();
        if write {
            a.mov(at(0), t).unwrap();
            // The read word: the bytes the write leaves, or none (`left` in `fresh`).
            let mut some = a.create_label();
            a.andn(t, w, at(1)).unwrap();
            a.and(t, !DELTA_BITS as i32).unwrap();
            a.test(t, 0xff).unwrap();
            a.jne(some).unwrap();
            a.xor(t, t).unwrap();
            a.set_label(&mut some).unwrap();
            a.mov(at(1), t).unwrap();
            // The sites word: the site, beside the read's (bits 20-39).
            a.mov(t, READ_SITE).unwrap();
            a.and(t, at(2)).unwrap();
            a.or(t, site as i32).unwrap();
            a.mov(at(2), t).unwrap();
        } else {
            a.mov(at(1), t).unwrap();
            a.mov(t, READ_KEEPS).unwrap();
            a.and(at(2), t).unwrap();
            a.mov(t, u64::from(site) << 20).unwrap();
            a.or(at(2), t).unwrap();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hb::Detector;

    /// The inline record's rule gives the compact words the detector's own path gives, and
    /// misses no race (it declines wherever one may be): random accesses of three threads
    /// (sizes, bytes, atomics, locks) to a few granules, made by the detector in one copy and,
    /// where `fresh` takes them, by the rule in the other. Twice: mostly the threads' own
    /// granules and a lock taken now and then; then granules handed from thread to thread
    /// under the lock (the rule's case of another thread's write ordered before).
    #[test]
    fn the_inline_record_makes_the_detectors_words() {
        let (taken, _) = replay(0x9e37_79b9_7f4a_7c15, 12, 4);
        assert!(taken.iter().all(|&n| n > 500), "{taken:?}");
        let (taken, after_another) = replay(0x2545_f491_4f6c_dd1d, 3, 1);
        assert!(taken.iter().all(|&n| n > 100) && after_another > 100, "{taken:?} {after_another}");
    }

    /// One history (`seed`; a lock op in 2 of `sync` accesses, a shared granule in 1 of
    /// `shared`), checked access by access: the accesses `fresh` took, reads and writes, and
    /// those of them over another thread's write word. Races must be found.
    fn replay(seed: u64, sync: u64, shared: u64) -> ([usize; 2], usize) {
        let mut next = hb::random(seed);
        let (mut path, mut rule) = (Detector::new().unwrap(), Detector::new().unwrap());
        let mut taken = [0usize; 2];
        // Each thread's table of clock entries, as the tool area keeps it: renewed where the
        // rule declines (as `access_light` renews it), stale in between (behind the clock).
        let mut known = [[0u32; KNOWN_THREADS]; 3];
        let mut after_another = 0;
        for d in [&mut path, &mut rule] {
            d.cover(0x1000, 0x2000);
            d.create(0);
            d.create(0);
        }
        for k in 0..20_000u32 {
            let t = next(3) as hb::Tid;
            let op = next(sync);
            for d in [&mut path, &mut rule] {
                match op {
                    0 => d.release(t, 0x50),
                    1 => d.acquire(t, 0x50),
                    _ => {}
                }
            }
            let size = [1u64, 2, 4, 8][next(4) as usize];
            let granule = if next(shared) == 0 { next(6) } else { 2 * t as u64 + next(2) };
            let addr = 0x1000 + 8 * granule + next(9 - size);
            let (write, atomic) = (next(2) == 0, next(10) == 0);
            let site = k % 2000;
            let mask = (((1u16 << size) - 1) << (addr & 7)) as u8;
            let epoch = (t as u64) << 32 | u64::from(rule.epoch(t));
            path.access(t, addr, size, write, atomic, site);
            let before = rule.words(addr);
            match fresh(before, (epoch, &known[t]), mask, write, site).filter(|_| !atomic) {
                Some(words) => {
                    rule.set_words(addr, words);
                    taken[usize::from(write)] += 1;
                    after_another += usize::from(before[0] != 0 && (before[0] >> 48) as hb::Tid != t);
                }
                None => {
                    rule.access(t, addr, size, write, atomic, site);
                    for (k, e) in rule.clock_entries(t).iter().take(KNOWN_THREADS).enumerate() {
                        known[t][k] = *e;
                    }
                }
            }
            assert_eq!(path.words(addr), rule.words(addr), "access {k}");
            assert_eq!(path.races, rule.races, "access {k}");
        }
        assert!(!path.races.is_empty());
        (taken, after_another)
    }
}
