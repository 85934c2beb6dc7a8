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

#[derive(Default)]
struct Cell {
    write: Option<Access>,
    reads: Vec<Access>,
}

#[derive(Default)]
pub struct Detector {
    threads: Vec<Clock>,
    objects: HashMap<u64, Clock>,
    cells: HashMap<u64, Cell>,
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
    pub fn create(&mut self, parent: Tid) -> Tid {
        let t = self.threads.len();
        let mut c = self.threads[parent].clone();
        c.set(t, 1);
        self.threads.push(c);
        self.tick(parent);
        t
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
        for a in addr..addr.saturating_add(size.max(1)) {
            let cell = self.cells.entry(a).or_default();
            let clock = &self.threads[t];
            let unordered = |e: &Access| e.tid != t && e.clock > clock.get(e.tid) && !(e.atomic && atomic);
            let mut found: Option<Access> = cell.write.filter(|w| unordered(w));
            if write && found.is_none() {
                found = cell.reads.iter().find(|r| unordered(r)).copied();
            }
            if write {
                cell.write = Some(now);
                cell.reads.clear();
            } else {
                match cell.reads.iter_mut().find(|r| r.tid == t) {
                    Some(r) => *r = now,
                    None => cell.reads.push(now),
                }
            }
            if let Some(earlier) = found {
                let key = (earlier.site.min(site), earlier.site.max(site));
                if self.seen.insert(key) {
                    self.races.push(Race { addr: a, earlier, later: now });
                }
                // One report per access (its other bytes race with the same one).
                return;
            }
        }
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
