//! Happens-before race detection with vector clocks (the epoch rule of FastTrack, Flanagan and
//! Freund 2009, without its adaptive read sets): each thread has a vector clock; a release on a
//! synchronization object joins the thread's clock into the object's and ticks the thread, an
//! acquire joins the object's into the thread's. Each byte of memory keeps its last write and
//! the last read of each thread as epochs (thread, that thread's clock then); an access races
//! with an earlier one by another thread whose epoch the accessing thread's clock does not
//! cover. Atomic accesses never race with each other.

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

    fn join(&mut self, other: &Clock) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (a, &b) in self.0.iter_mut().zip(&other.0) {
            *a = (*a).max(b);
        }
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
#[derive(Clone, Copy, Debug)]
struct Held {
    access: Access,
    mask: u8,
}

/// An 8-byte granule's last writes and each thread's last reads, with the bytes each touched.
#[derive(Default)]
struct Cell {
    writes: Vec<Held>,
    reads: Vec<Held>,
}

/// Granules are keyed by address / 8: a multiplicative hash is enough (and far cheaper than
/// SipHash, which dominated).
#[derive(Default, Clone, Copy)]
pub struct GranuleHasher(u64);

impl std::hash::Hasher for GranuleHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    }
}

type Granules = HashMap<u64, Cell, Fast>;

/// The hasher of addresses (granules, locations, objects).
pub type Fast = std::hash::BuildHasherDefault<GranuleHasher>;

#[derive(Default)]
pub struct Detector {
    threads: Vec<Clock>,
    objects: HashMap<u64, Clock, Fast>,
    cells: Granules,
    /// Races found, once per pair of sites.
    pub races: Vec<Race>,
    seen: HashSet<(u32, u32)>,
}

impl Detector {
    /// The main thread (0) alone.
    pub fn new() -> Detector {
        let mut d = Detector::default();
        d.threads.push(Clock::default());
        d.threads[0].set(0, 1);
        d
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

    /// Thread `t`'s epoch: its own clock's entry.
    pub fn epoch(&self, t: Tid) -> u32 {
        self.threads[t].get(t)
    }

    fn tick(&mut self, t: Tid) {
        let v = self.threads[t].get(t) + 1;
        self.threads[t].set(t, v);
    }

    /// Thread `t` releases synchronization object `obj` (an unlock, a wake, its exit).
    pub fn release(&mut self, t: Tid, obj: u64) {
        let c = self.threads[t].clone();
        self.objects.entry(obj).or_default().join(&c);
        self.tick(t);
    }

    /// Thread `t` acquires `obj` (a lock, a wait that returned): what was released there
    /// happens before what `t` does next.
    pub fn acquire(&mut self, t: Tid, obj: u64) {
        if let Some(c) = self.objects.get(&obj) {
            let c = c.clone();
            self.threads[t].join(&c);
        }
    }

    /// Thread `t` accesses `size` bytes at `addr` from code site `site`.
    pub fn access(&mut self, t: Tid, addr: u64, size: u64, write: bool, atomic: bool, site: u32) {
        let now = Access { tid: t, clock: self.threads[t].get(t), site, write, atomic };
        let end = addr.saturating_add(size.max(1));
        let mut g = addr & !7;
        while g < end {
            let (lo, hi) = (addr.max(g) - g, end.min(g + 8) - g);
            let mask = (((1u16 << hi) - 1) & !((1u16 << lo) - 1)) as u8;
            if let Some((earlier, byte)) = self.granule(t, g, mask, now) {
                let key = (earlier.site.min(site), earlier.site.max(site));
                if self.seen.insert(key) {
                    self.races.push(Race { addr: g + byte, earlier, later: now });
                }
            }
            g += 8;
        }
    }

    /// The access `now` by `t` to the bytes `mask` of granule `g`: an earlier access it races
    /// with (and the first byte they share), after recording it.
    fn granule(&mut self, t: Tid, g: u64, mask: u8, now: Access) -> Option<(Access, u64)> {
        let clock = &self.threads[t];
        let cell = self.cells.entry(g).or_default();
        let unordered = |h: &&Held| h.mask & mask != 0 && h.access.tid != t && h.access.clock > clock.get(h.access.tid) && !(h.access.atomic && now.atomic);
        let mut found = cell.writes.iter().find(unordered).copied();
        if now.write && found.is_none() {
            found = cell.reads.iter().find(unordered).copied();
        }
        let list = if now.write { &mut cell.writes } else { &mut cell.reads };
        // What this access covers it takes over: earlier entries keep only the other bytes.
        list.retain_mut(|h| {
            if now.write || h.access.tid == t {
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
        let list = if now.write { &mut cell.writes } else { &mut cell.reads };
        list.push(Held { access: now, mask });
        found.map(|h| (h.access, u64::from((h.mask & mask).trailing_zeros())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unordered_writes_race_and_a_lock_orders_them() {
        let mut d = Detector::new();
        let (a, b) = (d.create(0), d.create(0));
        d.access(a, 0x1000, 4, true, false, 1);
        d.access(b, 0x1000, 4, true, false, 2);
        assert_eq!(d.races.len(), 1);
        assert_eq!((d.races[0].earlier.site, d.races[0].later.site, d.races[0].addr), (1, 2, 0x1000));
        // The same through a lock: no race.
        let mut d = Detector::new();
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
        let mut d = Detector::new();
        d.access(0, 0x1000, 4, true, false, 1);
        let a = d.create(0);
        d.access(a, 0x1000, 4, false, false, 2);
        // The parent's write after creating it races with the child's read.
        d.access(0, 0x1000, 4, true, false, 3);
        assert_eq!(d.races.len(), 1);
        assert_eq!((d.races[0].earlier.site, d.races[0].later.site), (2, 3));
        let mut d = Detector::new();
        let (a, b) = (d.create(0), d.create(0));
        d.access(a, 0x3000, 4, true, true, 1);
        d.access(b, 0x3000, 4, true, true, 2);
        assert!(d.races.is_empty());
        // Disjoint bytes of one word do not race.
        d.access(a, 0x4000, 1, true, false, 3);
        d.access(b, 0x4001, 1, true, false, 4);
        assert!(d.races.is_empty());
    }
}
