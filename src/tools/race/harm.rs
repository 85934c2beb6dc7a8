//! The harm test of a race (issue 23; the replay classification of Narayanasamy et al., PLDI
//! 2007, on rtgrind's deterministic scheduler). A race is two accesses, the *first* and the
//! *second* in the detection run's order, by two threads with no synchronization between. Two
//! runs replay the detection run's schedule: the reference lets both run as they did; the
//! reversed one holds the first access's thread back just before it (`Scheduler::hold`) until
//! the other thread has made the second access. A race is harmful when a value read by either
//! access, or the values the two leave in memory, differ between the two orders.
//!
//! An access is named across runs by its thread (in creation order), its instruction and its
//! thread's epoch (the thread's own clock, which only synchronization moves): the first time
//! the thread runs that instruction on the race's address in that epoch. The recorded schedule
//! makes the runs the same up to the point where they differ on purpose.

use crate::kernel::sched::Scheduler;
use serde::{Deserialize, Serialize};

/// One access of a race, as the runs name it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Side {
    pub tid: usize,
    pub epoch: u32,
    pub pc: u64,
    pub size: u64,
    pub write: bool,
    /// It reads the location (a load, or a read-modify-write).
    pub reads: bool,
}

/// A race: the two accesses in the detection run's order and the first byte they share.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    pub addr: u64,
    pub first: Side,
    pub second: Side,
}

impl Key {
    /// The bytes the watch compares for each access: its own; for a memory function's call
    /// (size 0: a range), the other access's bytes at the race's address (8 if both are
    /// calls), the part of the range the race is about.
    fn sizes(&self) -> (u64, u64) {
        let size = |own: u64, theirs: u64| match (own, theirs) {
            (0, 0) => 8,
            (0, x) | (x, _) => x,
        };
        (size(self.first.size, self.second.size), size(self.second.size, self.first.size))
    }

    /// Where the watch reads an access's bytes: where it was made, or for a call the race's
    /// address.
    fn at(&self, side: &Side, addr: u64) -> u64 {
        if side.size == 0 {
            self.addr
        } else {
            addr
        }
    }
}

/// What a detection run leaves the search: its report and each finding's race, in order.
#[derive(Serialize, Deserialize)]
pub struct Found {
    pub report: crate::report::model::Report,
    pub races: Vec<Key>,
}

/// A harm run's plan: the races to watch, and which one to reverse (none: the reference run).
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Plan {
    pub races: Vec<Key>,
    pub reverse: Option<usize>,
}

/// What a harm run saw of one race.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    pub first: bool,
    pub second: bool,
    /// The first access waited until the second was made (reversed run only).
    pub reversed: bool,
    /// The bytes each access found at its address before it ran.
    pub first_found: Vec<u8>,
    pub second_found: Vec<u8>,
    /// Both accesses' bytes once the later of the two had run.
    pub left: Vec<u8>,
    /// The first access's pc and the return addresses on its thread's stack when it came (its
    /// callers, which the detection run, seeing the race only at the later access, does not
    /// know).
    #[serde(default)]
    pub first_stack: Vec<u64>,
    /// That call stack as the report says it, as the run's end writes it.
    #[serde(default)]
    pub first_frames: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Waiting,
    First,
    Done,
}

/// The watch a harm run keeps on its plan's races, driven by the run's call-outs.
pub struct Watcher {
    plan: Plan,
    phase: Vec<Phase>,
    /// Each race's two accesses' addresses, as they were made.
    addrs: Vec<[u64; 2]>,
    pub seen: Vec<Seen>,
    /// Accesses after which their race's `left` is read: (thread, race).
    pending: Vec<(usize, usize)>,
    sched: Option<&'static Scheduler>,
}

/// Whether `size` bytes at `addr` include byte `at`.
fn covers(addr: u64, size: u64, at: u64) -> bool {
    (addr..addr.saturating_add(size.max(1))).contains(&at)
}

/// `size` bytes of guest memory at `addr` (empty if unreadable).
fn bytes(addr: u64, size: u64) -> Vec<u8> {
    crate::kernel::guest_mem::read_vec(addr, size as usize).unwrap_or_default()
}

impl Watcher {
    pub fn new(plan: Plan) -> Watcher {
        let n = plan.races.len();
        Watcher { plan, phase: vec![Phase::Waiting; n], addrs: vec![[0; 2]; n], seen: vec![Seen::default(); n], pending: Vec::new(), sched: None }
    }

    pub fn attach(&mut self, sched: &'static Scheduler) {
        self.sched = Some(sched);
    }

    /// Whether the instruction at `pc` is one of the watched accesses.
    pub fn watches(&self, pc: u64) -> bool {
        self.plan.races.iter().any(|k| k.first.pc == pc || k.second.pc == pc)
    }

    /// Thread `t`, in epoch `epoch`, is about to access `size` bytes at `addr` from `pc`. If
    /// this is the first access of the race to reverse, the race (the caller holds the thread
    /// back, then calls `resumed`: no borrow of the watcher may live while it waits).
    pub fn before(&mut self, t: usize, epoch: u32, pc: u64, addr: u64, size: u64, stack: impl Fn() -> Vec<u64>) -> Option<usize> {
        let mut hold = None;
        for (k, key) in self.plan.races.iter().enumerate() {
            match self.phase[k] {
                Phase::Waiting if t == key.first.tid && pc == key.first.pc && epoch == key.first.epoch && covers(addr, size, key.addr) => {
                    self.phase[k] = Phase::First;
                    self.addrs[k][0] = key.at(&key.first, addr);
                    self.seen[k].first = true;
                    self.seen[k].first_found = bytes(self.addrs[k][0], key.sizes().0);
                    self.seen[k].first_stack = std::iter::once(pc).chain(stack()).collect();
                    if self.plan.reverse == Some(k) {
                        hold = Some(k);
                    } else {
                        self.pending.push((t, k));
                    }
                }
                Phase::First if t == key.second.tid && pc == key.second.pc && covers(addr, size, key.addr) => {
                    self.phase[k] = Phase::Done;
                    self.addrs[k][1] = key.at(&key.second, addr);
                    self.seen[k].second = true;
                    self.seen[k].second_found = bytes(self.addrs[k][1], key.sizes().1);
                    if self.plan.reverse == Some(k) {
                        // The held thread goes on at this thread's next switch point, after
                        // its access.
                        if let Some(s) = self.sched {
                            s.unhold(key.first.tid);
                        }
                    }
                    self.pending.push((t, k));
                }
                _ => {}
            }
        }
        hold.filter(|_| self.sched.is_some())
    }

    /// The scheduler that holds threads back.
    pub fn scheduler(&self) -> Option<&'static Scheduler> {
        self.sched
    }

    /// Thread `t`, held back before the first access of race `k`, goes on: `reversed` if the
    /// other thread made its access meanwhile.
    pub fn resumed(&mut self, t: usize, k: usize, reversed: bool) {
        self.seen[k].reversed = reversed;
        // What it finds now that the other thread went first.
        self.seen[k].first_found = bytes(self.addrs[k][0], self.plan.races[k].sizes().0);
        self.pending.push((t, k));
    }

    /// Thread `t` has made a watched access: the values its races' accesses left (the later
    /// access's reading is the one that stays).
    pub fn after(&mut self, t: usize) {
        let (races, addrs, seen) = (&self.plan.races, &self.addrs, &mut self.seen);
        self.pending.retain(|&(pt, k)| {
            if pt != t {
                return true;
            }
            let (first, second) = races[k].sizes();
            let mut left = bytes(addrs[k][0], first);
            left.extend(bytes(addrs[k][1], second));
            seen[k].left = left;
            false
        });
    }

    /// At the end of the run: accesses whose instruction did not fall through to an `after`
    /// are read as the run ends.
    pub fn finish(&mut self) {
        let threads: Vec<usize> = self.pending.iter().map(|p| p.0).collect();
        for t in threads {
            self.after(t);
        }
    }
}

/// What the harm test concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Harmful,
    Undecided,
    Benign,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Harmful => "harmful",
            Verdict::Undecided => "undecided",
            Verdict::Benign => "benign",
        }
    }
}

/// Bytes as the value they hold (little-endian), or as hex digits when longer than a word.
fn value(b: &[u8]) -> String {
    if b.is_empty() {
        return "(unreadable)".into();
    }
    if b.len() <= 8 {
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        return format!("{:#x}", u64::from_le_bytes(w));
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The verdict on race `key` from what the reference run and the reversed run saw of it; the
/// accesses are named by `first` and `second` ("thread 1's write at a.c:3").
pub fn judge(key: &Key, reference: Option<&Seen>, reversed: Option<&Seen>, first: &str, second: &str) -> (Verdict, String) {
    let undecided = |why: String| (Verdict::Undecided, why);
    let Some(r) = reference.filter(|r| r.first && r.second) else {
        return undecided("the race did not recur when the run was replayed on its schedule".into());
    };
    let Some(s) = reversed.filter(|s| s.first) else {
        return undecided("the reversed run did not reach the first access".into());
    };
    if !s.reversed || !s.second {
        return undecided(format!("the other order could not be made: {second} did not come while {first} waited"));
    }
    let mut differs = Vec::new();
    if key.first.reads && r.first_found != s.first_found {
        differs.push(format!("{first} reads {} in the run's order, {} in the other", value(&r.first_found), value(&s.first_found)));
    }
    if key.second.reads && r.second_found != s.second_found {
        differs.push(format!("{second} reads {} in the run's order, {} in the other", value(&r.second_found), value(&s.second_found)));
    }
    if r.left != s.left {
        let half = |b: &[u8], n: u64| value(&b[..(n as usize).min(b.len())]);
        let first = key.sizes().0;
        let end = |b: &[u8]| value(&b[(first as usize).min(b.len())..]);
        let (ra, sa) = (half(&r.left, first), half(&s.left, first));
        let shown = if ra != sa { (ra, sa) } else { (end(&r.left), end(&s.left)) };
        differs.push(format!("the two leave {} in memory in the run's order, {} in the other", shown.0, shown.1));
    }
    if !differs.is_empty() {
        return (Verdict::Harmful, differs.join("; "));
    }
    let why = match (key.first.write && !key.first.reads, key.second.write && !key.second.reads) {
        (true, true) => "both orders leave the same value: the two writes store the same value".to_string(),
        _ if key.first.write || key.second.write => "both orders read and leave the same values: the write stores the value already there".to_string(),
        _ => "both orders read the same values".to_string(),
    };
    (Verdict::Benign, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(first_write: bool, second_write: bool) -> Key {
        let side = |write: bool, tid| Side { tid, epoch: 1, pc: 0x1000, size: 4, write, reads: !write };
        Key { addr: 0x5000, first: side(first_write, 1), second: side(second_write, 2) }
    }

    fn seen(first: &[u8], second: &[u8], left: &[u8]) -> Seen {
        Seen { first: true, second: true, reversed: true, first_found: first.to_vec(), second_found: second.to_vec(), left: left.to_vec(), ..Seen::default() }
    }

    #[test]
    fn a_read_that_sees_another_value_is_harmful_and_the_same_value_benign() {
        // Thread 1 writes 1 over 0; thread 2 reads: 1 in the run's order, 0 reversed.
        let k = key(true, false);
        let r = seen(&[0, 0, 0, 0], &[1, 0, 0, 0], &[1, 0, 0, 0, 1, 0, 0, 0]);
        let s = seen(&[0, 0, 0, 0], &[0, 0, 0, 0], &[1, 0, 0, 0, 1, 0, 0, 0]);
        let (v, why) = judge(&k, Some(&r), Some(&s), "A", "B");
        assert_eq!((v, why.as_str()), (Verdict::Harmful, "B reads 0x1 in the run's order, 0x0 in the other"));
        // The write stores what was there: the read sees 1 either way.
        let s = seen(&[1, 0, 0, 0], &[1, 0, 0, 0], &[1, 0, 0, 0, 1, 0, 0, 0]);
        assert_eq!(judge(&k, Some(&r), Some(&s), "A", "B").0, Verdict::Benign);
    }

    #[test]
    fn writes_of_different_values_are_harmful_and_a_race_not_reversed_is_undecided() {
        let k = key(true, true);
        let r = seen(&[0; 4], &[1, 0, 0, 0], &[2, 0, 0, 0, 2, 0, 0, 0]);
        let s = seen(&[2, 0, 0, 0], &[0; 4], &[1, 0, 0, 0, 1, 0, 0, 0]);
        let (v, why) = judge(&k, Some(&r), Some(&s), "A", "B");
        assert_eq!((v, why.as_str()), (Verdict::Harmful, "the two leave 0x2 in memory in the run's order, 0x1 in the other"));
        let same = seen(&[0; 4], &[7, 0, 0, 0], &[7, 0, 0, 0, 7, 0, 0, 0]);
        assert_eq!(judge(&k, Some(&same), Some(&same), "A", "B").0, Verdict::Benign);
        let stuck = Seen { reversed: false, ..same.clone() };
        let (v, why) = judge(&k, Some(&same), Some(&stuck), "A", "B");
        assert_eq!((v, why.as_str()), (Verdict::Undecided, "the other order could not be made: B did not come while A waited"));
        assert_eq!(judge(&k, None, Some(&same), "A", "B").0, Verdict::Undecided);
    }
}
