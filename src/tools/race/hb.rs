//! Happens-before race detection with vector clocks (the epoch rule of FastTrack, Flanagan and
//! Freund 2009, without its adaptive read sets): each thread has a vector clock; a release on a
//! synchronization object joins the thread's clock into the object's and ticks the thread, an
//! acquire joins the object's into the thread's. Each byte of memory keeps its last write and
//! the last read of each thread as epochs (thread, that thread's clock then); an access races
//! with an earlier one by another thread whose epoch the accessing thread's clock does not
//! cover. Atomic accesses never race with each other.
//!
//! Where the memory is (a slice the shadow covers), a granule's state is two words kept in
//! shadow memory, as TSan keeps its shadow cells: its last write and its last read, each an
//! epoch with the bytes it covers, and a third word with their code sites, side by side in the
//! granule's record (`shadow::records`; its fourth word is the user's). That is enough for
//! almost every granule: a write covering the earlier one's bytes replaces it, as does a read
//! covering the last read's bytes by a thread that read after it; accesses of one epoch add
//! up their bytes. A granule that needs more (reads by two threads not ordered with each
//! other, writes of different bytes in different epochs) moves to a full cell, and back when
//! its accesses fit the words again; memory outside the covered slices has full cells only.

use crate::shadow::records::GranuleRecords;
use std::collections::{HashMap, HashSet};

pub type Tid = usize;

/// A vector clock: thread -> the last of its events this one knows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Clock(Vec<u32>);

impl Clock {
    pub fn get(&self, t: Tid) -> u32 {
        self.0.get(t).copied().unwrap_or(0)
    }

    fn set(&mut self, t: Tid, v: u32) {
        if self.0.len() <= t {
            self.0.resize(t + 1, 0);
        }
        self.0[t] = v;
    }

    /// `join` of a clock no longer than this one (which never grows, so never allocates: for
    /// the light call-out).
    fn join_as_long(&mut self, other: &Clock) {
        debug_assert!(other.0.len() <= self.0.len());
        for (a, &b) in self.0.iter_mut().zip(&other.0) {
            *a = (*a).max(b);
        }
    }

    fn join(&mut self, other: &Clock) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        self.join_as_long(other);
    }
}

/// One access: who, when (its thread's own clock), where in the code (the tool's site
/// number), and what.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub tid: Tid,
    pub clock: u32,
    pub site: u32,
    pub write: bool,
    pub atomic: bool,
}

/// A race: an access and the earlier one by another thread it is not ordered with, at
/// address `addr` (the first byte they share).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Race {
    pub addr: u64,
    pub earlier: Access,
    pub later: Access,
}

/// An access to some bytes of a granule (`mask`: bit k for byte k of the 8).
/// (16 bytes, not `Access`'s 24 and a mask: a cell's lists stay within its own cache lines.)
#[derive(Clone, Copy, Debug)]
struct Held {
    tid: u32,
    clock: u32,
    site: u32,
    write: bool,
    atomic: bool,
    mask: u8,
}

impl Held {
    fn new(a: Access, mask: u8) -> Held {
        // (Threads are fewer than 65536: the compact words keep 16 bits of a tid.)
        Held { tid: a.tid as u32, clock: a.clock, site: a.site, write: a.write, atomic: a.atomic, mask }
    }
    fn access(&self) -> Access {
        Access { tid: self.tid as Tid, clock: self.clock, site: self.site, write: self.write, atomic: self.atomic }
    }
}

/// Granule `g`'s full cell, if it has one (it spilled, or is outside covered slices).
#[inline]
fn full_cell<'a>(compact: &Option<GranuleRecords>, cells: &'a mut Granules, spilled: &'a mut [Cell], g: u64) -> Option<&'a mut Cell> {
    match compact.as_ref().filter(|c| c.covers(g)) {
        Some(c) => {
            let (w, index, _) = Slots(c.record(g)).get();
            (w.0 & SPILLED != 0).then(|| &mut spilled[index.0 as usize])
        }
        None => cells.get_mut(&g),
    }
}

/// The compact words that hold exactly what `cell` holds, if they can: its writes one thread's
/// in at most two epochs `DELTA_MAX` apart, its reads likewise, each list's newest site under
/// `SITE_LIMIT` (the words keep one site each, the newest).
fn compacted(cell: &Cell) -> Option<(Word, Word, u64)> {
    fn one(list: &[Held]) -> Option<(Word, u8, u32, u32)> {
        let Some(newest) = list.iter().max_by_key(|h| h.clock) else { return Some((Word(0), 0, 0, 0)) };
        let a = newest.access();
        if a.site >= SITE_LIMIT {
            return None;
        }
        let (mut all, mut old, mut old_clock) = (0u8, 0u8, None);
        for h in list {
            if h.tid as Tid != a.tid || h.atomic != a.atomic {
                return None;
            }
            all |= h.mask;
            if h.clock != a.clock {
                match old_clock {
                    Some(c) if c != h.clock => return None,
                    _ => old_clock = Some(h.clock),
                }
                old |= h.mask;
            }
        }
        let delta = old_clock.map_or(0, |c| a.clock - c);
        (delta <= DELTA_MAX).then(|| (Word::of(a, all), old, delta, a.site))
    }
    // (The reads first: reads by two threads, the common full cell, fail there.)
    let (r, r_old, r_delta, r_site) = one(&cell.reads)?;
    let (w, w_old, w_delta, w_site) = one(&cell.writes)?;
    Some(Compacted { w, w_old, w_delta, r, r_old, r_delta, w_site, r_site }.words())
}

/// An 8-byte granule's last writes and each thread's last reads, with the bytes each touched.
#[derive(Clone, Default)]
struct Cell {
    writes: Held4,
    reads: Held4,
}

/// A full cell's list: room for four in the cell itself (a granule read by two threads, as
/// `sort`'s lines are, is read through its cell at every compare: its lists one cache miss
/// away in the slab, not three).
type Held4 = smallvec::SmallVec<[Held; 4]>;

type Granules = HashMap<u64, Cell, Fast>;

/// The hasher of addresses (granules, locations, objects).
pub use crate::tools::address_hash::Fast;

/// One thread's accesses in a compact word: `tid << 48 | clock << 16 | delta's low bits << 10
/// | flags << 8 | bytes` (bit k of the bytes for byte k of the granule; none: no access). Some
/// of the bytes (the *older* ones, a mask kept in the sites word) may be of an earlier epoch of
/// the same thread, `delta` ticks before `clock` (a thread's partial writes or reads of a
/// granule across a lock or an atomic: glibc's malloc ticks the clock at every call; the delta's
/// high bits are in the sites word too). A thread's clock starts at 1.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Word(u64);

/// In a write word: the granule's state is a full cell of the map.
pub const SPILLED: u64 = 1 << 9;
const ATOMIC: u64 = 1 << 8;
const DELTA_SHIFT: u32 = 10;
/// The delta's bits in the word, and in all.
const DELTA_LOW: u32 = 6;
const DELTA_MAX: u32 = (1 << 10) - 1;
/// Sites the sites word holds (20 bits each, beside the deltas' high bits and the two
/// older-bytes masks: `write site | read site << 20 | write's delta >> 6 << 40 | read's delta
/// >> 6 << 44 | write's older << 48 | read's older << 56`).
pub const SITE_LIMIT: u32 = 1 << 20;
/// Where the sites word keeps the write's and the read's older bytes.
const W_OLD_SHIFT: u32 = 48;
const R_OLD_SHIFT: u32 = 56;
/// The bits of the sites word that are the read's: its site, its delta's high bits, its older
/// bytes.
const READ_OWN: u64 = ((1 << 20) - 1) << 20 | 0xf << 44 | 0xff << R_OLD_SHIFT;

impl Word {
    fn of(a: Access, mask: u8) -> Word {
        Word((a.tid as u64) << 48 | u64::from(a.clock) << 16 | if a.atomic { ATOMIC } else { 0 } | u64::from(mask))
    }
    fn mask(self) -> u8 {
        self.0 as u8
    }
    fn tid(self) -> Tid {
        (self.0 >> 48) as Tid
    }
    fn clock(self) -> u32 {
        (self.0 >> 16) as u32
    }
    fn atomic(self) -> bool {
        self.0 & ATOMIC != 0
    }
    fn with_mask(self, mask: u8) -> Word {
        if mask == 0 {
            Word(0)
        } else {
            Word(self.0 & !0xff | u64::from(mask))
        }
    }
    /// Its bytes by epoch: (bytes, clock) for the newer ones, then the older ones (`old`,
    /// `delta` ticks before).
    fn parts(self, old: u8, delta: u32) -> [(u8, u32); 2] {
        [(self.mask() & !old, self.clock()), (self.mask() & old, self.clock().wrapping_sub(delta))]
    }
    fn access(self, clock: u32, site: u32, write: bool) -> Access {
        Access { tid: self.tid(), clock, site, write, atomic: self.atomic() }
    }
}

/// A granule's compact state, decoded: its last writes and reads (each a word, its older
/// bytes and how much older they are) and their sites.
#[derive(Clone, Copy)]
struct Compacted {
    w: Word,
    w_old: u8,
    w_delta: u32,
    r: Word,
    r_old: u8,
    r_delta: u32,
    w_site: u32,
    r_site: u32,
}

impl Compacted {
    fn of((w, r, sites): (Word, Word, u64)) -> Compacted {
        let bits = |x: u64, at: u32, n: u32| (x >> at) as u32 & ((1 << n) - 1);
        let delta = |x: Word, high: u32| bits(x.0, DELTA_SHIFT, DELTA_LOW) | bits(sites, high, 4) << DELTA_LOW;
        let plain = |x: Word| Word(x.0 & !(u64::from((1u32 << DELTA_LOW) - 1) << DELTA_SHIFT));
        Compacted {
            w: plain(w),
            w_old: (sites >> W_OLD_SHIFT) as u8,
            w_delta: delta(w, 40),
            r: plain(r),
            r_old: (sites >> R_OLD_SHIFT) as u8,
            r_delta: delta(r, 44),
            w_site: bits(sites, 0, 20),
            r_site: bits(sites, 20, 20),
        }
    }
    fn words(self) -> (Word, Word, u64) {
        let low = |x: Word, delta: u32| Word(x.0 | u64::from(delta & ((1 << DELTA_LOW) - 1)) << DELTA_SHIFT);
        let high = |delta: u32| u64::from(delta >> DELTA_LOW);
        let sites = u64::from(self.w_site)
            | u64::from(self.r_site) << 20
            | high(self.w_delta) << 40
            | high(self.r_delta) << 44
            | u64::from(self.w_old) << 48
            | u64::from(self.r_old) << 56;
        (low(self.w, self.w_delta), low(self.r, self.r_delta), sites)
    }
}

/// `x` (older bytes `old`, `delta` ticks older) and the access `now` to `mask`, both one
/// thread's, in one word: the access's bytes at its clock, the rest of `x`'s at theirs, if the
/// rest are of one epoch no more than `DELTA_MAX` ticks older (else none: the granule spills).
/// The word, its older bytes and their delta.
fn merge(x: Word, old: u8, delta: u32, now: Access, mask: u8) -> Option<(Word, u8, u32)> {
    let new = Word::of(now, mask);
    let rest = x.mask() & !mask;
    if rest == 0 {
        return Some((new, 0, 0));
    }
    let (in_old, in_new) = (rest & old, rest & !old);
    if in_old != 0 && in_new != 0 {
        // Two epochs left beside the access: only if it is of the newer one (it moves its
        // bytes there), else three.
        return (now.clock == x.clock()).then_some((new.with_mask(mask | rest), in_old, delta));
    }
    let rest_clock = if in_old != 0 { x.clock().wrapping_sub(delta) } else { x.clock() };
    let delta = now.clock.checked_sub(rest_clock)?;
    if delta == 0 {
        return Some((new.with_mask(mask | rest), 0, 0));
    }
    (delta <= DELTA_MAX).then_some((new.with_mask(mask | rest), rest, delta))
}

/// The granules' compact words are the first three of their records: last write, last read,
/// and their sites, deltas' high bits and older bytes (laid out as `SITE_LIMIT` says). The
/// fourth is the detector's user's (`USER_WORD`).
pub const USER_WORD: usize = 3;

pub struct Detector {
    threads: Vec<Clock>,
    objects: HashMap<u64, Clock, Fast>,
    /// None: every granule in a full cell (a test's reference detector).
    compact: Option<GranuleRecords>,
    /// Full cells of memory outside covered slices.
    cells: Granules,
    /// Full cells of granules the compact words cannot hold: a spilled granule's read word is
    /// its index here (no hash lookup: its record is at hand, in the cache already).
    spilled: Vec<Cell>,
    /// Slots of `spilled` free again (their granules went back to compact words), their cells
    /// empty and their lists in place.
    free: Vec<usize>,
    /// Slots whose granules went back to the compact words in a light call-out with lists grown
    /// onto the heap, emptied but not freed (the light call-out may not): the next full access
    /// frees them and makes them free slots (a free slot's cell with heap lists would cost every
    /// later visit a miss more).
    emptied: Vec<usize>,
    /// Races found, once per pair of sites.
    pub races: Vec<Race>,
    seen: HashSet<(u32, u32)>,
}

impl Detector {
    /// The main thread (0) alone.
    pub fn new() -> std::io::Result<Detector> {
        Ok(Detector::with(Some(GranuleRecords::new()?)))
    }

    fn with(compact: Option<GranuleRecords>) -> Detector {
        let mut d = Detector {
            threads: vec![Clock::default()],
            objects: HashMap::default(),
            compact,
            cells: Granules::default(),
            spilled: Vec::new(),
            free: Vec::new(),
            emptied: Vec::with_capacity(EMPTIED),
            races: Vec::new(),
            seen: HashSet::new(),
        };
        d.threads[0].set(0, 1);
        d
    }

    /// Memory in `[start, end)` (mapped by the program) keeps its granules' state compact.
    pub fn cover(&mut self, start: u64, end: u64) {
        if let Some(c) = &mut self.compact {
            c.cover(start, end);
        }
    }

    /// The granules' records (none in a test's reference detector).
    pub fn records(&self) -> Option<&GranuleRecords> {
        self.compact.as_ref()
    }

    /// Thread `parent` creates a thread: everything the parent did so far happens before
    /// anything the new one does. Its number.
    #[cfg(test)]
    pub fn create(&mut self, parent: Tid) -> Tid {
        let c = self.fork(parent);
        self.adopt(c)
    }

    /// The clock a thread `parent` is creating starts from (the parent moves on to a new
    /// epoch): for `adopt` when the thread starts.
    pub fn fork(&mut self, parent: Tid) -> Clock {
        let c = self.threads[parent].clone();
        self.tick(parent);
        c
    }

    /// A new thread starting from clock `c`: its number.
    pub fn adopt(&mut self, mut c: Clock) -> Tid {
        let t = self.threads.len();
        c.set(t, 1);
        self.threads.push(c);
        t
    }

    /// Threads seen so far (the main one included).
    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    /// Thread `t`'s clock, by thread (those past its end are 0).
    pub fn clock_entries(&self, t: Tid) -> &[u32] {
        &self.threads[t].0
    }

    /// Thread `t`'s epoch: its own clock's entry.
    pub fn epoch(&self, t: Tid) -> u32 {
        self.threads[t].get(t)
    }

    /// Thread `t`'s epoch moves on to `clock` (the ticks of read-modify-writes made inline,
    /// before the last of them).
    /// (It allocates nothing: the light call-outs settle with it.)
    pub fn set_epoch(&mut self, t: Tid, clock: u32) {
        debug_assert!(clock >= self.epoch(t));
        // (The thread's own entry is there: `adopt` set it.)
        self.threads[t].0[t] = clock;
    }

    fn tick(&mut self, t: Tid) {
        let v = self.threads[t].get(t) + 1;
        self.threads[t].set(t, v);
    }

    /// Thread `t` releases synchronization object `obj` (an unlock, a wake, its exit).
    pub fn release(&mut self, t: Tid, obj: u64) {
        let c = self.threads[t].clone();
        self.objects.entry(obj).or_default().join(&c);
        // Before the first thread is created nothing can tell the epochs apart (every thread
        // starts from the creator's clock): one epoch for the whole start keeps its accesses
        // in the same-epoch cache.
        if self.threads.len() > 1 {
            self.tick(t);
        }
    }

    /// No thread was created yet: no access can race with anything (every thread starts
    /// after all of them).
    pub fn alone(&self) -> bool {
        self.threads.len() == 1
    }

    /// Thread `t` acquires `obj` (a lock, a wait that returned): what was released there
    /// happens before what `t` does next.
    pub fn acquire(&mut self, t: Tid, obj: u64) {
        if let Some(c) = self.objects.get(&obj) {
            let c = c.clone();
            self.threads[t].join(&c);
        }
    }

    /// `acquire` when it grows no clock (the object's is no longer than the thread's, or there
    /// is none): false otherwise, with nothing changed. It calls nothing and allocates nothing
    /// (the tool runs it in a light call-out).
    #[inline]
    pub fn acquire_quick(&mut self, t: Tid, obj: u64) -> bool {
        match self.objects.get(&obj) {
            None => true,
            Some(c) if c.0.len() <= self.threads[t].0.len() => {
                self.threads[t].join_as_long(c);
                true
            }
            Some(_) => false,
        }
    }

    /// `release` when it grows no clock and makes no object (the object's clock is there, as
    /// long as the thread's at least): false otherwise, with nothing changed. It calls nothing
    /// and allocates nothing.
    #[inline]
    pub fn release_quick(&mut self, t: Tid, obj: u64) -> bool {
        let (threads, objects) = (&mut self.threads, &mut self.objects);
        let Some(object) = objects.get_mut(&obj).filter(|o| o.0.len() >= threads[t].0.len()) else { return false };
        object.join_as_long(&threads[t]);
        if threads.len() > 1 {
            // (The thread's own entry is there: `adopt` set it.)
            threads[t].0[t] += 1;
        }
        true
    }

    /// Thread `t` accesses `size` bytes at `addr` from code site `site`.
    pub fn access(&mut self, t: Tid, addr: u64, size: u64, write: bool, atomic: bool, site: u32) {
        for index in self.emptied.drain(..) {
            self.spilled[index] = Cell::default();
            self.free.push(index);
        }
        let now = Access { tid: t, clock: self.threads[t].get(t), site, write, atomic };
        for (g, mask) in granules(addr, size) {
            if let Some((earlier, byte)) = self.granule(t, g, mask, now) {
                let key = (earlier.site.min(site), earlier.site.max(site));
                if self.seen.insert(key) {
                    self.races.push(Race { addr: g + byte, earlier, later: now });
                }
            }
        }
    }

    /// Thread `t`'s plain access of `size` bytes at `addr` when it is the common case,
    /// recorded: no race, and granules whose state takes it without a new cell or a spill.
    /// False otherwise, with the granules before the first that cannot take it recorded (`access`
    /// then does it all: an access recorded again finds nothing new). It calls nothing and
    /// allocates nothing (the tool runs it in a light call-out).
    #[inline]
    pub fn access_quick(&mut self, t: Tid, addr: u64, size: u64, write: bool, atomic: bool, site: u32) -> bool {
        let now = Access { tid: t, clock: self.threads[t].get(t), site, write, atomic };
        granules(addr, size).all(|(g, mask)| self.granule_quick(t, g, mask, now))
    }

    /// Thread `t`'s atomic read-modify-write of `size` bytes at `addr` (acquire, the access,
    /// release: `access` between `acquire` and `release` of the location) when it is the common
    /// case, recorded: the location's clock is as long as the thread's (neither clock grows),
    /// and the access is `access_quick`'s. False otherwise, with nothing changed that doing it
    /// all again would do differently (the acquire, done again, changes nothing more). It calls
    /// nothing and allocates nothing.
    #[inline]
    pub fn rmw_quick(&mut self, t: Tid, addr: u64, size: u64, site: u32) -> bool {
        let (threads, objects) = (&mut self.threads, &mut self.objects);
        let Some(object) = objects.get_mut(&addr).filter(|o| o.0.len() == threads[t].0.len()) else { return false };
        threads[t].join_as_long(object);
        if !self.access_quick(t, addr, size, true, true, site) {
            return false;
        }
        let (threads, objects) = (&mut self.threads, &mut self.objects);
        if let Some(object) = objects.get_mut(&addr) {
            object.join_as_long(&threads[t]);
        }
        if threads.len() > 1 {
            // (The thread's own entry is there: `adopt` set it.)
            threads[t].0[t] += 1;
        }
        true
    }

    /// `access_quick` on granule `g`. A granule in a full cell (a spilled one: its record's
    /// write word says so; or one outside the covered slices) goes to its cell at once, the
    /// record looked at once. A spilled granule whose accesses fit the compact words again goes
    /// back to them here, as `access` does, where that frees nothing (its lists in the cell
    /// itself) and the free slots' list has room. (It relies on the detector being used by one
    /// thread at a time, as everything here does: the call-outs run under the scheduler's baton,
    /// one guest thread at a time, so no other call-out takes a free slot between the look at
    /// the free list and the cell filled there.)
    #[inline]
    fn granule_quick(&mut self, t: Tid, g: u64, mask: u8, now: Access) -> bool {
        let (cell, at) = match self.compact.as_ref().filter(|c| c.covers(g)) {
            Some(c) => {
                let at = Slots(c.record(g));
                let (w, index, _) = at.get();
                if w.0 & SPILLED == 0 {
                    return self.compact_quick(t, g, mask, now);
                }
                (&mut self.spilled[index.0 as usize], Some((at, index.0 as usize)))
            }
            None => match self.cells.get_mut(&g) {
                Some(cell) => (cell, None),
                None => return false,
            },
        };
        if !cell_access_quick(cell, &self.threads[t], t, mask, now) {
            return false;
        }
        let Some((at, index)) = at else { return true };
        let Some(words) = compacted(cell) else { return true };
        let heap = cell.writes.spilled() || cell.reads.spilled();
        if !push_in_room(if heap { &mut self.emptied } else { &mut self.free }, index) {
            // (`access` does it: it frees the lists, or grows the list of free slots.)
            return false;
        }
        // (`Cell::default()` where its lists are in place; else emptied, freed later.)
        cell.writes.clear();
        cell.reads.clear();
        at.set(words);
        true
    }

    /// `granule_quick` on a covered granule whose compact words hold it (not spilled): in the
    /// words, or, where they cannot hold it, in a new full cell as `granule` makes it, in a
    /// free slot of the slab (`place` keeps some ready: the slab may not grow here).
    #[inline]
    fn compact_quick(&mut self, t: Tid, g: u64, mask: u8, now: Access) -> bool {
        if !now.write && !now.atomic && self.read_in_place(t, g, mask, now) {
            return true;
        }
        match self.plan(t, g, mask, now) {
            Some(Plan { at, next: Some(next), found: None, .. }) => {
                at.set(next);
                true
            }
            Some(Plan { at, old, next: None, found: None }) => {
                // Built in a free slot (an empty cell, its lists in place), not moved there: a
                // light call-out may not copy it with the C library's `memcpy`.
                let Some(&index) = self.free.last() else { return false };
                let cell = &mut self.spilled[index];
                fill_spilled(cell, old);
                if !cell_access_quick(cell, &self.threads[t], t, mask, now) {
                    cell.writes.clear();
                    cell.reads.clear();
                    return false;
                }
                self.free.pop();
                at.set((Word(SPILLED), Word(index as u64), 0));
                true
            }
            _ => false,
        }
    }

    /// A slot of the slab for `cell`: a free one, else a new one at the end. The slab then keeps
    /// `SPARE` empty cells ready where it has no free one left, for the light call-outs' spills
    /// (`compact_quick`), which may neither grow it nor move a cell into it.
    fn place(&mut self, cell: Cell) -> usize {
        let index = match self.free.pop() {
            Some(i) => {
                self.spilled[i] = cell;
                i
            }
            None => {
                self.spilled.push(cell);
                self.spilled.len() - 1
            }
        };
        if self.free.is_empty() {
            for _ in 0..SPARE {
                self.spilled.push(Cell::default());
                self.free.push(self.spilled.len() - 1);
            }
        }
        index
    }

    /// A plain read `now` by `t` of the bytes `mask` of granule `g` recorded in place where
    /// its compact words leave no doubt: the read word empty or this thread's own of this epoch
    /// (no older bytes), and the write word ordered before it on those bytes. The read word
    /// then takes the bytes, the sites word the site, as `plan` would make them (its decoding
    /// and encoding of all three words, the race checks of both, are most of a memory
    /// function's check: `sort`'s `strcoll` and `memcmp` of the same lines, over and over
    /// within an epoch). False where `plan` must decide (nothing changed).
    #[inline]
    fn read_in_place(&self, t: Tid, g: u64, mask: u8, now: Access) -> bool {
        let Some(c) = self.compact.as_ref().filter(|c| c.covers(g)) else { return false };
        let at = Slots(c.record(g));
        let (w, r, sites) = at.get();
        let this = (t as u64) << 32 | u64::from(now.clock);
        // (Not a full cell's index: its write word is `SPILLED`, whose tid bits are 0.)
        let read_ok = r.0 == 0 || r.0 >> 16 == this && r.0 & ATOMIC == 0 && sites >> R_OLD_SHIFT == 0;
        let w_old = (sites >> W_OLD_SHIFT) as u8;
        // Another thread's write on these bytes: ordered before, if its newer bytes are all it
        // has here (its older ones, `plan`'s case).
        let write_ok = w.0 & SPILLED == 0 && (w.mask() & mask == 0 || w.tid() == t || w_old & mask == 0 && w.clock() <= self.threads[t].get(w.tid()));
        if !read_ok || !write_ok || now.site >= SITE_LIMIT {
            return false;
        }
        let r2 = Word::of(now, r.mask() | mask);
        at.set_read((r2, sites & !READ_OWN | u64::from(now.site) << 20));
        true
    }

    /// What the access `now` by `t` to the bytes `mask` of granule `g` does to its compact
    /// words; none where a full cell holds the granule (it is spilled, or not covered).
    #[inline]
    fn plan(&self, t: Tid, g: u64, mask: u8, now: Access) -> Option<Plan> {
        let c = self.compact.as_ref().filter(|c| c.covers(g))?;
        let at = Slots(c.record(g));
        let old = at.get();
        if old.0 .0 & SPILLED != 0 {
            return None;
        }
        let k = Compacted::of(old);
        let clock = &self.threads[t];
        // What the granule's words become, if they can hold it.
        let own = |x: Word| x.tid() == t && x.atomic() == now.atomic;
        let next = if now.site >= SITE_LIMIT {
            None
        } else if now.write {
            let w2 = if k.w.mask() & !mask == 0 {
                Some((Word::of(now, mask), 0, 0))
            } else if own(k.w) {
                merge(k.w, k.w_old, k.w_delta, now, mask)
            } else {
                None
            };
            w2.map(|(w, w_old, w_delta)| {
                let r = k.r.with_mask(k.r.mask() & !mask);
                let r_old = k.r_old & !mask;
                let r_delta = if r_old == 0 { 0 } else { k.r_delta };
                Compacted { w, w_old, w_delta, r, r_old, r_delta, w_site: now.site, ..k }.words()
            })
        } else {
            // (The newer clock is the later: ordered after it is ordered after both.)
            let ordered = k.r.tid() == t || k.r.clock() <= clock.get(k.r.tid());
            let r2 = if k.r.mask() & !mask == 0 && ordered {
                Some((Word::of(now, mask), 0, 0))
            } else if own(k.r) {
                merge(k.r, k.r_old, k.r_delta, now, mask)
            } else {
                None
            };
            r2.map(|(r, r_old, r_delta)| Compacted { r, r_old, r_delta, r_site: now.site, ..k }.words())
        };
        let unordered = |x: Word, old: u8, delta: u32, site: u32, write: bool| {
            x.parts(old, delta).into_iter().find_map(|(m, c)| {
                let races = m & mask != 0 && x.tid() != t && c > clock.get(x.tid()) && !(x.atomic() && now.atomic);
                races.then(|| (x.access(c, site, write), m))
            })
        };
        let mut found = unordered(k.w, k.w_old, k.w_delta, k.w_site, true);
        if now.write && found.is_none() {
            found = unordered(k.r, k.r_old, k.r_delta, k.r_site, false);
        }
        Some(Plan { at, old, next, found: found.map(|(a, m)| (a, u64::from((m & mask).trailing_zeros()))) })
    }

    /// The access `now` by `t` to the bytes `mask` of granule `g`: an earlier access it races
    /// with (and the first byte they share), after recording it.
    fn granule(&mut self, t: Tid, g: u64, mask: u8, now: Access) -> Option<(Access, u64)> {
        let Some(plan) = self.plan(t, g, mask, now) else {
            let Some(cell) = full_cell(&self.compact, &mut self.cells, &mut self.spilled, g) else {
                return cell_access(self.cells.entry(g).or_default(), &self.threads[t], t, mask, now);
            };
            let found = cell_access(cell, &self.threads[t], t, mask, now);
            // A spilled granule whose accesses fit the compact words again (a write over the
            // reads that spilled it, one thread's partial writes in one epoch) goes back to
            // them: a thread that ticks often (a polling loop's mutex) would otherwise take
            // the cells' path on every new epoch.
            if let (Some(words), Some(c)) = (compacted(cell), self.compact.as_ref().filter(|c| c.covers(g))) {
                let at = Slots(c.record(g));
                let index = at.get().1 .0 as usize;
                self.spilled[index] = Cell::default();
                self.free.push(index);
                at.set(words);
            }
            return found;
        };
        if let Some(next) = plan.next {
            plan.at.set(next);
            return plan.found;
        }
        // Spill: the granule's accesses become a full cell's.
        let mut cell = Cell::default();
        fill_spilled(&mut cell, plan.old);
        let found = cell_access(&mut cell, &self.threads[t], t, mask, now);
        let index = self.place(cell);
        plan.at.set((Word(SPILLED), Word(index as u64), 0));
        found
    }

    /// The compact words of the granule of `addr` (write, read, sites).
    #[cfg(test)]
    pub fn words(&self, addr: u64) -> [u64; 3] {
        let (w, r, sites) = Slots(self.compact.as_ref().expect("compact words").record(addr)).get();
        [w.0, r.0, sites]
    }

    /// Sets the compact words of the granule of `addr` (as the inline record does).
    #[cfg(test)]
    pub fn set_words(&mut self, addr: u64, [w, r, sites]: [u64; 3]) {
        Slots(self.compact.as_ref().expect("compact words").record(addr)).set((Word(w), Word(r), sites));
    }

    /// How many granules have a full cell.
    #[cfg(test)]
    fn full_cells(&self) -> usize {
        self.cells.len() + self.spilled.len() - self.free.len() - self.emptied.len()
    }
}

/// A granule's record: its three compact words (write, read, their sites) first.
struct Slots(*mut u64);

impl Slots {
    fn get(&self) -> (Word, Word, u64) {
        // SAFETY: a record of a covered slice (`Detector::plan`): reserved, read-write, aligned;
        // one thread at a time runs the detector.
        unsafe { (Word(*self.0), Word(*self.0.add(1)), *self.0.add(2)) }
    }

    fn set(&self, (w, r, sites): (Word, Word, u64)) {
        // SAFETY: as in `get`.
        unsafe { (*self.0, *self.0.add(1), *self.0.add(2)) = (w.0, r.0, sites) };
    }

    /// The read word and the sites word (the write word as it is).
    fn set_read(&self, (r, sites): (Word, u64)) {
        // SAFETY: as in `get`.
        unsafe { (*self.0.add(1), *self.0.add(2)) = (r.0, sites) };
    }
}

/// What an access does to a granule's compact words: where they are, what they held, what they
/// become (none: they cannot hold it, the granule spills), and the earlier access it races with.
struct Plan {
    at: Slots,
    old: (Word, Word, u64),
    next: Option<(Word, Word, u64)>,
    found: Option<(Access, u64)>,
}

/// The granules an access of `size` bytes at `addr` touches, each with the bytes of it the
/// access covers (bit k for byte k).
pub fn granules(addr: u64, size: u64) -> impl Iterator<Item = (u64, u8)> {
    let end = addr.saturating_add(size.max(1));
    ((addr & !7)..end).step_by(8).map(move |g| {
        let (lo, hi) = (addr.max(g) - g, end.min(g + 8) - g);
        (g, (((1u16 << hi) - 1) & !((1u16 << lo) - 1)) as u8)
    })
}

/// Slots the light call-outs may leave emptied before a full access frees them.
const EMPTIED: usize = 256;

/// Empty full cells the slab keeps ready for spills in a light call-out.
const SPARE: usize = 64;

/// Pushes `x` onto `v` where it has room (false, nothing done, where it has none): no
/// allocation, as a light call-out needs (`Vec::push` can grow, and calls the allocator then).
fn push_in_room(v: &mut Vec<usize>, x: usize) -> bool {
    if v.len() == v.capacity() {
        return false;
    }
    // SAFETY: within the vector's capacity; the slot past its length is written before the
    // length covers it.
    unsafe {
        v.as_mut_ptr().add(v.len()).write(x);
        v.set_len(v.len() + 1);
    }
    true
}

/// An empty full cell (`cell`, its lists in place) made what a granule's compact words `old`
/// hold when they cannot hold an access: the write's and the read's bytes by epoch (room for
/// four accesses a list in the cell itself, which `access_quick` can then record). It
/// allocates nothing (at most two entries a list).
fn fill_spilled(cell: &mut Cell, old: (Word, Word, u64)) {
    let k = Compacted::of(old);
    let fill = |list: &mut Held4, x: Word, old: u8, delta: u32, site: u32, write: bool| {
        for (m, c) in x.parts(old, delta).into_iter().filter(|p| p.0 != 0) {
            if list.len() < list.capacity() {
                list.push(Held::new(x.access(c, site, write), m));
            }
        }
    };
    fill(&mut cell.writes, k.w, k.w_old, k.w_delta, k.w_site, true);
    fill(&mut cell.reads, k.r, k.r_old, k.r_delta, k.r_site, false);
}

/// `cell_access` where it finds no race and its list has room (no allocation): true, the
/// access recorded; false, with nothing changed that doing it again would do differently.
#[inline]
fn cell_access_quick(cell: &mut Cell, clock: &Clock, t: Tid, mask: u8, now: Access) -> bool {
    if cell_race(cell, clock, t, mask, now).is_some() {
        return false;
    }
    if now.write || !read_again(cell, t, mask, now) {
        cell_trim(cell, t, mask, now);
        let list = if now.write { &mut cell.writes } else { &mut cell.reads };
        if list.len() == list.capacity() {
            // (`access` does it again: the trim changed nothing the race check sees.)
            return false;
        }
        list.push(Held::new(now, mask));
    }
    true
}

/// The access `now` by `t` (its clock `clock`) to the bytes `mask` of a full cell: an earlier
/// access it races with (and the first byte they share), after recording it.
fn cell_access(cell: &mut Cell, clock: &Clock, t: Tid, mask: u8, now: Access) -> Option<(Access, u64)> {
    let found = cell_race(cell, clock, t, mask, now);
    cell_trim(cell, t, mask, now);
    let list = if now.write { &mut cell.writes } else { &mut cell.reads };
    list.push(Held::new(now, mask));
    found
}

/// The earlier access of a full cell the access `now` races with, and the first byte they share.
#[inline]
fn cell_race(cell: &Cell, clock: &Clock, t: Tid, mask: u8, now: Access) -> Option<(Access, u64)> {
    let unordered = |h: &&Held| h.mask & mask != 0 && h.tid as Tid != t && h.clock > clock.get(h.tid as Tid) && !(h.atomic && now.atomic);
    let mut found = cell.writes.iter().find(unordered).copied();
    if now.write && found.is_none() {
        found = cell.reads.iter().find(unordered).copied();
    }
    found.map(|h| (h.access(), u64::from((h.mask & mask).trailing_zeros())))
}

/// A read `now` by `t` of the bytes `mask` of a full cell whose last read is `t`'s of exactly
/// those bytes (and no other of `t`'s reads there has any of them), made in place: the last
/// entry becomes the read, as `cell_trim` and a push would make it (the trim drops that entry
/// and changes no other). False, with nothing changed, otherwise. (`sort`'s lines, read by both
/// threads, are read again and again through their cells.)
#[inline]
fn read_again(cell: &mut Cell, t: Tid, mask: u8, now: Access) -> bool {
    let Some((last, rest)) = cell.reads.split_last_mut() else { return false };
    if last.tid as Tid != t || last.mask != mask || rest.iter().any(|h| h.tid as Tid == t && h.mask & mask != 0) {
        return false;
    }
    *last = Held::new(now, mask);
    true
}

/// What the access `now` covers it takes over: the cell's earlier entries keep only the other
/// bytes (a write's, every access's; a read's, its thread's reads).
#[inline]
fn cell_trim(cell: &mut Cell, t: Tid, mask: u8, now: Access) {
    let list = if now.write { &mut cell.writes } else { &mut cell.reads };
    list.retain_mut(|h| {
        if now.write || h.tid as Tid == t {
            h.mask &= !mask;
        }
        h.mask != 0
    });
    if now.write {
        cell.reads.retain_mut(|h| {
            h.mask &= !mask;
            h.mask != 0
        });
    }
}

/// A test's random numbers: each call gives one below its argument (xorshift from `seed`).
#[cfg(test)]
pub fn random(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |n| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unordered_writes_race_and_a_lock_orders_them() {
        let mut d = Detector::new().unwrap();
        d.cover(0, 0x10000);
        let (a, b) = (d.create(0), d.create(0));
        d.access(a, 0x1000, 4, true, false, 1);
        d.access(b, 0x1000, 4, true, false, 2);
        assert_eq!(d.races.len(), 1);
        assert_eq!((d.races[0].earlier.site, d.races[0].later.site, d.races[0].addr), (1, 2, 0x1000));
        // The same through a lock: no race.
        d.races.clear();
        let (a, b) = (d.create(0), d.create(0));
        d.acquire(a, 0x50);
        d.access(a, 0x2000, 8, true, false, 1);
        d.release(a, 0x50);
        d.acquire(b, 0x50);
        d.access(b, 0x2000, 8, false, false, 2);
        d.access(b, 0x2000, 8, true, false, 2);
        d.release(b, 0x50);
        assert!(d.races.is_empty());
    }

    #[test]
    fn creation_orders_what_came_before_and_atomics_never_race() {
        let mut d = Detector::new().unwrap();
        d.cover(0, 0x10000);
        d.access(0, 0x1000, 4, true, false, 1);
        let a = d.create(0);
        d.access(a, 0x1000, 4, false, false, 2);
        // The parent's write after creating it races with the child's read.
        d.access(0, 0x1000, 4, true, false, 3);
        assert_eq!(d.races.len(), 1);
        assert_eq!((d.races[0].earlier.site, d.races[0].later.site), (2, 3));
        d.races.clear();
        let (a, b) = (d.create(0), d.create(0));
        d.access(a, 0x3000, 4, true, true, 1);
        d.access(b, 0x3000, 4, true, true, 2);
        assert!(d.races.is_empty());
        // Disjoint bytes of one word do not race.
        d.access(a, 0x4000, 1, true, false, 3);
        d.access(b, 0x4001, 1, true, false, 4);
        assert!(d.races.is_empty());
    }

    /// A thread's partial writes of one granule in two epochs stay in one word, each byte with
    /// its own epoch, even a thousand ticks apart, and so does an access of the newer epoch to
    /// an older byte (it moves to the newer): a thread that acquired what the first epoch
    /// released reads the first bytes without a race and the later ones with one; reads the
    /// same.
    #[test]
    fn a_threads_partial_accesses_in_two_epochs_keep_their_epochs() {
        for write in [true, false] {
            let mut d = Detector::new().unwrap();
            d.cover(0, 0x10000);
            let (a, b) = (d.create(0), d.create(0));
            d.access(a, 0x1000, 4, write, false, 1);
            d.release(a, 0x50);
            for _ in 0..DELTA_MAX - 1 {
                d.release(a, 0x60);
            }
            d.access(a, 0x1004, 4, write, false, 2);
            d.access(a, 0x1000, 1, write, false, 3);
            // Held in one compact word.
            assert_eq!(d.full_cells(), 0, "write {write}");
            d.acquire(b, 0x50);
            // b reads what a wrote, writes what a read: a race on the later bytes only (the
            // word keeps one site: the last).
            d.access(b, 0x1001, 3, !write, false, 4);
            assert!(d.races.is_empty(), "write {write}: {:?}", d.races);
            d.access(b, 0x1000, 1, !write, false, 5);
            d.access(b, 0x1004, 4, !write, false, 6);
            let races = d.races.iter().map(|r| (r.earlier.site, r.later.site, r.addr)).collect::<Vec<_>>();
            assert_eq!(races, vec![(3, 5, 0x1000), (3, 6, 0x1004)], "write {write}");
        }
    }

    /// A read recorded in place (`read_in_place`) leaves exactly the words `plan` makes and
    /// finds no race where `plan` finds one; where it declines it changes nothing: random
    /// accesses of three threads (sizes, bytes, atomics, locks), each read tried both ways.
    #[test]
    fn reads_in_place_are_the_plans_words() {
        let mut next = random(0x9e37_79b9_7f4a_7c15);
        let mut d = Detector::new().unwrap();
        d.cover(0x1000, 0x2000);
        d.create(0);
        d.create(0);
        let (mut placed, mut declined) = (0, 0);
        for round in 0..300u64 {
            let g = 0x1000 + 8 * round;
            let (threads, calm) = (1 + next(3), next(3) == 0);
            for k in 0..2 + next(30) as u32 {
                let t = next(threads) as Tid;
                match next(if calm { 60 } else { 6 }) {
                    0 => d.release(t, next(2)),
                    1 => d.acquire(t, next(2)),
                    _ => {}
                }
                let size = [1u64, 2, 4, 8][next(4) as usize];
                let addr = g + next(9 - size);
                let (write, atomic, site) = (next(2) == 0, next(6) == 0, round as u32 * 100 + k);
                let mask = granules(addr, size).next().unwrap().1;
                let now = Access { tid: t, clock: d.epoch(t), site, write, atomic };
                if !write && !atomic {
                    let before = d.words(g);
                    let plan = d.plan(t, g, mask, now);
                    if d.read_in_place(t, g, mask, now) {
                        let plan = plan.expect("compact words");
                        assert!(plan.found.is_none(), "round {round}, access {k}");
                        let (w, r, sites) = plan.next.expect("the plan's words");
                        assert_eq!(d.words(g), [w.0, r.0, sites], "round {round}, access {k}");
                        placed += 1;
                        d.set_words(g, before);
                    } else {
                        assert_eq!(d.words(g), before, "round {round}, access {k}");
                        declined += 1;
                    }
                }
                d.access(t, addr, size, write, atomic, site);
            }
        }
        // (Both ways taken, often.)
        assert!(placed > 300 && declined > 300, "{placed} placed, {declined} declined");
    }

    /// The light call-out's path (`access_quick`, and `access` where it declines) finds the races
    /// `access` alone finds, and leaves the same words and cells: random accesses of three
    /// threads over a few granules, each made both ways on two detectors, with spills into full
    /// cells and back (now also in `access_quick`, where they allocate nothing).
    #[test]
    fn quick_accesses_with_spills_are_the_full_paths() {
        let mut next = random(0x2545_f491_4f6c_dd1d);
        let (mut quick, mut full) = (Detector::new().unwrap(), Detector::new().unwrap());
        for d in [&mut quick, &mut full] {
            d.cover(0x1000, 0x2000);
            d.create(0);
            d.create(0);
        }
        let (mut taken, mut moved) = (0, 0);
        let spilled = |d: &Detector, g: u64| Slots(d.compact.as_ref().unwrap().record(g)).get().0 .0 & SPILLED != 0;
        for round in 0..400u64 {
            let g = 0x1000 + 8 * (round % 8);
            for k in 0..2 + next(20) as u32 {
                let t = next(3) as Tid;
                match next(8) {
                    0 => [&mut quick, &mut full].map(|d| d.release(t, 1)),
                    1 => [&mut quick, &mut full].map(|d| d.acquire(t, 1)),
                    _ => [(), ()],
                };
                let size = [1u64, 2, 4, 8][next(4) as usize];
                let addr = g + next(9 - size);
                let (write, site) = (next(3) == 0, round as u32 * 100 + k);
                let was = spilled(&quick, g);
                if quick.access_quick(t, addr, size, write, false, site) {
                    taken += 1;
                    // (Into a full cell, or back to the words, in the quick path itself.)
                    moved += usize::from(spilled(&quick, g) != was);
                } else {
                    quick.access(t, addr, size, write, false, site);
                }
                full.access(t, addr, size, write, false, site);
                assert_eq!(quick.races, full.races, "round {round}, access {k}");
                let cells = |d: &Detector| {
                    let (w, index, _) = Slots(d.compact.as_ref().unwrap().record(g)).get();
                    (w.0 & SPILLED != 0).then(|| {
                        let c = &d.spilled[index.0 as usize];
                        (
                            c.writes.iter().map(|h| (h.tid, h.clock, h.site, h.mask)).collect::<Vec<_>>(),
                            c.reads.iter().map(|h| (h.tid, h.clock, h.site, h.mask)).collect::<Vec<_>>(),
                        )
                    })
                };
                let words = |d: &Detector| if cells(d).is_some() { [SPILLED, 0, 0] } else { d.words(g) };
                assert_eq!((words(&quick), cells(&quick)), (words(&full), cells(&full)), "round {round}, access {k}");
            }
        }
        assert!(taken > 1000 && moved > 50 && quick.races.len() > 10, "{taken} taken, {moved} moved, {} races", quick.races.len());
    }

    /// A full cell's read made again in place (`read_again`) leaves the lists `cell_trim` and a
    /// push leave: random accesses of three threads to granules only full cells hold.
    #[test]
    fn reads_again_in_place_are_the_trims_lists() {
        let mut next = random(0x2545_f491_4f6c_dd1d);
        let mut d = Detector::with(None);
        d.create(0);
        d.create(0);
        let lists = |c: &Cell| [&c.writes, &c.reads].map(|l| l.iter().map(|h| (h.access(), h.mask)).collect::<Vec<_>>());
        let mut again = 0;
        for round in 0..300u64 {
            let g = 0x1000 + 8 * round;
            for k in 0..2 + next(30) as u32 {
                let t = next(3) as Tid;
                if next(6) == 0 {
                    d.release(t, 0);
                    d.acquire(next(3) as Tid, 0);
                }
                // (Reads of a few masks, so that a thread reads the same bytes again.)
                let (mask, write) = ([0xffu8, 0x0f, 0xf0, 0x3c][next(4) as usize], next(4) == 0);
                let now = Access { tid: t, clock: d.epoch(t), site: round as u32 * 100 + k, write, atomic: false };
                if let (false, Some(cell)) = (write, d.cells.get(&g)) {
                    let (mut placed, mut trimmed) = (cell.clone(), cell.clone());
                    if read_again(&mut placed, t, mask, now) {
                        cell_trim(&mut trimmed, t, mask, now);
                        trimmed.reads.push(Held::new(now, mask));
                        assert_eq!(lists(&placed), lists(&trimmed), "round {round}, access {k}");
                        again += 1;
                    } else {
                        assert_eq!(lists(&placed), lists(cell), "round {round}, access {k}");
                    }
                }
                d.access(t, g + u64::from(mask.trailing_zeros()), u64::from(mask.count_ones()), write, false, now.site);
            }
        }
        assert!(again > 100, "{again} reads again in place");
    }

    /// A spilled granule goes back to the compact words once its accesses fit them again (a
    /// write over the reads of two unordered threads that spilled it), and races there as
    /// before.
    #[test]
    fn a_granule_whose_accesses_fit_again_leaves_its_full_cell() {
        let mut d = Detector::new().unwrap();
        d.cover(0, 0x10000);
        let (a, b) = (d.create(0), d.create(0));
        d.access(a, 0x1000, 8, false, false, 1);
        d.access(b, 0x1000, 8, false, false, 2);
        assert_eq!(d.full_cells(), 1);
        d.release(b, 0x50);
        d.acquire(a, 0x50);
        d.access(a, 0x1000, 8, true, false, 3);
        // (Its slot free again, beside the slab's `SPARE` empty cells.)
        assert_eq!((d.full_cells(), d.free.len()), (0, SPARE + 1));
        assert!(d.races.is_empty(), "{:?}", d.races);
        d.access(b, 0x1004, 4, true, false, 4);
        assert_eq!(d.races.iter().map(|r| (r.earlier.site, r.later.site, r.addr)).collect::<Vec<_>>(), vec![(3, 4, 0x1004)]);
        // (Another thread's partial write spills it again, into the slot it left.)
        assert_eq!((d.full_cells(), d.free.len(), d.spilled.len()), (1, SPARE, SPARE + 1));
    }

    /// A run of read-modify-writes by the thread that owns a location, settled as the race
    /// tool settles those it made inline (the thread's clock put at the last one's epoch, then
    /// that one alone), leaves the clocks, the granule's words and the races as making each
    /// does: then another thread acquiring the location is ordered after what came before the
    /// last one, and not after what came after it.
    #[test]
    fn an_owners_read_modify_writes_settled_at_once_are_the_same_as_each() {
        let (mut each, mut once) = (Detector::new().unwrap(), Detector::new().unwrap());
        let rmw = |d: &mut Detector, t: Tid, site: u32| {
            d.acquire(t, 0x1000);
            d.access(t, 0x1000, 8, true, true, site);
            d.release(t, 0x1000);
        };
        for d in [&mut each, &mut once] {
            d.cover(0, 0x10000);
            let (a, b) = (d.create(0), d.create(0));
            d.access(b, 0x1000, 8, false, true, 1);
            rmw(d, a, 2);
        }
        let (a, b) = (1, 2);
        let start = once.epoch(a);
        for k in 0..100 {
            rmw(&mut each, a, 3 + k);
        }
        once.set_epoch(a, start + 99);
        rmw(&mut once, a, 102);
        for d in [&mut each, &mut once] {
            d.access(a, 0x2000, 4, true, false, 200);
            d.acquire(b, 0x1000);
            d.access(b, 0x2000, 4, false, false, 201);
        }
        assert_eq!(each.threads, once.threads);
        assert_eq!(each.objects, once.objects);
        let words = |d: &Detector| Slots(d.compact.as_ref().unwrap().record(0x1000)).get();
        let (w, r) = (words(&each), words(&once));
        assert_eq!((w.0 .0, w.1 .0, w.2), (r.0 .0, r.1 .0, r.2));
        let races = |d: &Detector| d.races.iter().map(|r| (r.earlier.site, r.later.site, r.addr)).collect::<Vec<_>>();
        assert_eq!(races(&each), vec![(200, 201, 0x2000)]);
        assert_eq!(races(&each), races(&once));
    }

    /// The compact words find a race on exactly the accesses full cells find one on, and so
    /// does the quick path (`access_quick`, then `access` where it cannot): random accesses of
    /// three threads (sizes, bytes, atomics, locks), in covered memory and in memory only the
    /// cells hold.
    #[test]
    fn compact_words_find_what_full_cells_find() {
        let mut next = random(0x2545_f491_4f6c_dd1d);
        // (Detectors for all rounds, each round on a granule of its own: shadow slices are few
        // and never given back.)
        let (mut compact, mut cells, mut quick) = (Detector::new().unwrap(), Detector::with(None), Detector::new().unwrap());
        compact.cover(0x1000, 0x2000);
        quick.cover(0x1000, 0x2000);
        for d in [&mut compact, &mut cells, &mut quick] {
            d.create(0);
            d.create(0);
        }
        for round in 0..200 {
            let base = [0x1000u64 + 8 * round, 0x7000 + 8 * round];
            // (Few accesses, threads or locks in some rounds, so that some granules never leave
            // the compact words.)
            // (Sites of their own in each round: a race with an access the round before, which
            // shared the granule, is not one seen already.)
            let (threads, calm) = (1 + next(3), next(3) == 0);
            for k in 0..2 + next(30) as u32 {
                let site = round as u32 * 100 + k;
                let t = next(threads) as Tid;
                let (op, obj) = (next(if calm { 60 } else { 6 }), next(2));
                for d in [&mut compact, &mut cells, &mut quick] {
                    match op {
                        0 => d.release(t, obj),
                        1 => d.acquire(t, obj),
                        _ => {}
                    }
                }
                let size = [1u64, 2, 4, 8][next(4) as usize];
                // (Some run into the next granule, the next round's.)
                let off = next(8);
                let (write, atomic) = (next(2) == 0, next(6) == 0);
                compact.access(t, base[0] + off, size, write, atomic, site);
                cells.access(t, base[1] + off, size, write, atomic, site);
                // The light call-out's way: the quick path, else the whole one.
                if !quick.access_quick(t, base[0] + off, size, write, atomic, site) {
                    quick.access(t, base[0] + off, size, write, atomic, site);
                }
                // Now and then an atomic read-modify-write of the granule's first word (its
                // location a synchronization object): the same, quickly where it can be.
                if next(8) == 0 {
                    let (at, size) = (base.map(|b| b + 8 * 200 + (b & 0xff8)), 4);
                    for (d, a) in [(&mut compact, at[0]), (&mut cells, at[1])] {
                        d.acquire(t, a);
                        d.access(t, a, size, true, true, 1_000_000 + site);
                        d.release(t, a);
                    }
                    if !quick.rmw_quick(t, at[0], size, 1_000_000 + site) {
                        quick.acquire(t, at[0]);
                        quick.access(t, at[0], size, true, true, 1_000_000 + site);
                        quick.release(t, at[0]);
                    }
                }
            }
            // (The accesses that found a race: one over two granules may find two.)
            let later = |d: &Detector| d.races.iter().map(|r| r.later.site).collect::<std::collections::BTreeSet<_>>();
            assert_eq!(later(&compact), later(&cells), "round {round}");
            assert_eq!(later(&quick), later(&cells), "round {round}, quick path");
            for d in [&mut compact, &mut cells, &mut quick] {
                d.races.clear();
                d.seen.clear();
            }
        }
        assert!(cells.full_cells() >= 200 && compact.full_cells() < cells.full_cells());
    }
}
