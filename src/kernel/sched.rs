//! The deterministic scheduler. Guest threads are real host threads, but only the one
//! holding the *baton* runs guest code or touches process-wide runtime state; every other
//! thread waits on its own condition variable.
//!
//! Design. Switch points are counted, never timed: a thread gives up the baton when its
//! quantum of translated blocks runs out (a flag-free countdown at block entry, see
//! `rtgrind_jit::CodeCache::set_preemption`), when it waits on a futex, when it enters a
//! syscall that may block in the kernel, and when it exits. At each switch point the policy
//! picks the next thread and its quantum from the runnable ones, so the same program, input and
//! policy give the same interleaving. Futexes are implemented here (wait queues per address),
//! so mutexes, condition variables, barriers and semaphores block and wake deterministically.
//! A thread blocked in the kernel (a read on a pipe, a sleep) has released the baton and takes
//! it back when the baton holder next reaches a switch point, or at once if no thread holds it:
//! such runs are not exactly repeatable, because when the kernel returns is not. Calls that
//! cannot wait for another thread (reads and writes of regular files, opening a file that is
//! not a FIFO: `syscall::prompt`) keep the baton, so a program that only does those replays
//! exactly.
//!
//! When no thread can run, a futex waiter with a timeout times out (virtual time jumps), a
//! waiter with a pending signal is interrupted; otherwise every live thread waits on a futex
//! forever, which is reported as a deadlock.

use super::repeat::splitmix;
use super::signals::Inbox;
use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Policy {
    RoundRobin,
    Random(u64),
    /// Probabilistic concurrency testing: random priorities, DEPTH-1 priority change points.
    Pct {
        seed: u64,
        depth: u32,
    },
    /// Decisions read from a recorded schedule.
    Replay(Vec<Decision>),
}

/// One scheduling decision: which thread runs next and for how many blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub to: usize,
    pub quantum: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TState {
    Runnable,
    Futex {
        addr: u64,
        bitset: u32,
        timed: bool,
        seq: u64,
    },
    InSyscall(u64),
    /// Held back by the tool where it stands (`Scheduler::hold`) until `unhold`.
    Held,
    Exited,
}

struct Slot {
    tid: i32,
    state: TState,
    cv: Arc<Condvar>,
    /// Result handed to a futex waiter when it is woken.
    wake_ret: i64,
    /// Quantum granted by the decision that scheduled this thread.
    quantum: u64,
    /// Guest pc where the thread last stopped (for deadlock reports).
    pc: u64,
    /// The thread's block count there (for the schedule record).
    blocks: u64,
    inbox: Arc<Inbox>,
    mask: u64,
    priority: u64,
    /// Signals sent to this thread by another guest thread (tgkill), raw siginfos in order.
    directed: VecDeque<[u8; 128]>,
    /// Its last hold ended because no other thread could run, or ran long enough.
    hold_broken: bool,
    /// The decision its hold began at.
    held_at: u64,
    /// PCT: decisions in a row that kept it running while others could run.
    streak: u64,
    /// It yielded (`sched_yield`) at the switch point being decided.
    yielded: bool,
}

struct State {
    current: Option<usize>,
    slots: Vec<Slot>,
    rng: u64,
    seq: u64,
    decisions: u64,
    replay: VecDeque<Decision>,
    change_points: Vec<u64>,
    /// PCT: the priority the next thread lowered for starving the others gets (below every
    /// other; see `lower`).
    low: u64,
    record: Option<std::fs::File>,
}

pub struct Scheduler {
    state: Mutex<State>,
    policy: Policy,
    pub quantum: u64,
}

/// Scheduling decisions a held thread waits at most (`Scheduler::hold`).
const HOLD_DECISIONS: u64 = 20;

/// PCT priorities: threads start at random ones above `CHANGED`; the i-th change point gives
/// its thread `CHANGED + i` (later change points rank above earlier ones, as in the paper);
/// a thread that yields, or that kept the others from running for `STARVE` decisions in a
/// row, drops below every other (`State::low` counts down from `CHANGED`). Strict priorities
/// alone let a thread that spins on another's progress (a flag in a busy loop, libgomp's
/// barrier with an infinite spin count) run forever: the run would never end.
const CHANGED: u64 = 1 << 40;
const STARVE: u64 = 100;

/// PCT: thread `me` drops below every other thread.
fn lower(st: &mut State, me: usize) {
    st.slots[me].priority = st.low;
    st.low -= 1;
    st.slots[me].streak = 0;
}

/// A PCT thread's starting priority: random, above every lowered one.
fn pct_priority(rng: &mut u64) -> u64 {
    CHANGED << 1 | splitmix(rng) >> 24
}

/// Every live thread waits forever: the report lines.
pub struct Deadlock(pub Vec<String>);

thread_local! {
    /// Whether this host thread is parked waiting for the baton (read by the signal handler:
    /// a fatal signal arriving there cannot wait for the thread to run again).
    pub static PARKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Waits on `cv` until `me` holds the baton.
fn park<'a>(mut st: MutexGuard<'a, State>, cv: &Condvar, me: usize) -> MutexGuard<'a, State> {
    PARKED.with(|p| p.set(true));
    while st.current != Some(me) {
        st = cv.wait(st).unwrap_or_else(|e| e.into_inner());
    }
    PARKED.with(|p| p.set(false));
    st
}

impl Scheduler {
    /// A scheduler whose only thread (index 0, the main thread) holds the baton.
    pub fn new(policy: Policy, quantum: u64, record: Option<std::fs::File>, main_tid: i32, inbox: Arc<Inbox>) -> Scheduler {
        let (rng, replay, change_points) = match &policy {
            Policy::RoundRobin => (0, VecDeque::new(), vec![]),
            Policy::Random(s) => (*s, VecDeque::new(), vec![]),
            Policy::Pct { seed, depth } => {
                let mut r = *seed;
                // Change points among the first few thousand decisions.
                let mut cps: Vec<u64> = (1..*depth).map(|_| splitmix(&mut r) % 2000 + 1).collect();
                cps.sort();
                (r, VecDeque::new(), cps)
            }
            Policy::Replay(d) => (0, d.iter().copied().collect(), vec![]),
        };
        let mut record = record;
        if let Some(f) = &mut record {
            // The main thread's first quantum, which no decision grants (`schedule_quantum`).
            let _ = writeln!(f, "# quantum {quantum}");
        }
        let mut st = State { current: Some(0), slots: Vec::new(), rng, seq: 0, decisions: 0, replay, change_points, low: CHANGED, record };
        let priority = pct_priority(&mut st.rng);
        st.slots.push(Slot {
            tid: main_tid,
            state: TState::Runnable,
            cv: Arc::new(Condvar::new()),
            wake_ret: 0,
            quantum,
            pc: 0,
            blocks: 0,
            inbox,
            mask: 0,
            priority,
            directed: VecDeque::new(),
            hold_broken: false,
            held_at: 0,
            streak: 0,
            yielded: false,
        });
        Scheduler { state: Mutex::new(st), policy, quantum }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a new, runnable thread; returns its index.
    pub fn add_thread(&self, tid: i32, inbox: Arc<Inbox>, mask: u64) -> usize {
        let mut st = self.lock();
        let priority = pct_priority(&mut st.rng);
        st.slots.push(Slot {
            tid,
            state: TState::Runnable,
            cv: Arc::new(Condvar::new()),
            wake_ret: 0,
            quantum: self.quantum,
            pc: 0,
            blocks: 0,
            inbox,
            mask,
            priority,
            directed: VecDeque::new(),
            hold_broken: false,
            held_at: 0,
            streak: 0,
            yielded: false,
        });
        st.slots.len() - 1
    }

    pub fn set_tid(&self, me: usize, tid: i32) {
        self.lock().slots[me].tid = tid;
    }

    /// The thread with kernel tid `tid`, if it is a live guest thread.
    pub fn thread_of_tid(&self, tid: i32) -> Option<usize> {
        self.lock().slots.iter().position(|s| s.tid == tid && s.state != TState::Exited)
    }

    /// Queues a signal for thread `to` (a guest tgkill); a futex wait it does not block is
    /// interrupted, as the kernel would. Returns false (nothing queued: send a real signal)
    /// if the thread is in a kernel syscall or blocks the signal.
    pub fn send_directed(&self, to: usize, raw: [u8; 128]) -> bool {
        let mut st = self.lock();
        let sig = i32::from_le_bytes(raw[0..4].try_into().unwrap());
        // A thread in the kernel needs a real signal to be interrupted; a blocked signal must
        // stay pending in the kernel, where sigpending and sigwait look for it.
        if matches!(st.slots[to].state, TState::InSyscall(_)) || st.slots[to].mask & (1u64 << (sig - 1)) != 0 {
            return false;
        }
        st.slots[to].directed.push_back(raw);
        let s = &mut st.slots[to];
        if matches!(s.state, TState::Futex { .. }) && s.mask & (1u64 << (sig - 1)) == 0 {
            s.state = TState::Runnable;
            s.wake_ret = -(libc::EINTR as i64);
        }
        true
    }

    /// Takes the oldest directed signal of `me` that `mask` does not block.
    pub fn take_directed(&self, me: usize, mask: u64) -> Option<[u8; 128]> {
        let mut st = self.lock();
        let q = &mut st.slots[me].directed;
        let i = q.iter().position(|raw| {
            let sig = i32::from_le_bytes(raw[0..4].try_into().unwrap());
            mask & (1u64 << (sig - 1)) == 0
        })?;
        q.remove(i)
    }

    pub fn set_mask(&self, me: usize, mask: u64) {
        self.lock().slots[me].mask = mask;
    }

    /// Picks the next thread among the runnable ones (None if none is).
    fn decide(&self, st: &mut State, me: usize) -> Option<Decision> {
        // A futex waiter that the kernel handed a signal it does not block is interrupted.
        for s in st.slots.iter_mut() {
            if matches!(s.state, TState::Futex { .. }) && s.inbox.pending_bits() & !s.mask != 0 {
                s.state = TState::Runnable;
                s.wake_ret = -(libc::EINTR as i64);
            }
        }
        let mut runnable: Vec<usize> = (0..st.slots.len()).filter(|&i| st.slots[i].state == TState::Runnable).collect();
        let stuck = runnable.is_empty() && !st.slots.iter().any(|s| matches!(s.state, TState::InSyscall(_)));
        let decisions = st.decisions;
        for s in st.slots.iter_mut().filter(|s| s.state == TState::Held) {
            // Nothing else can go on, or the others ran long enough (they may be waiting
            // for it by spinning): the held thread goes on after all (its hold is broken).
            if stuck || decisions - s.held_at > HOLD_DECISIONS {
                s.state = TState::Runnable;
                s.hold_broken = true;
            }
        }
        if stuck {
            runnable = (0..st.slots.len()).filter(|&i| st.slots[i].state == TState::Runnable).collect();
        }
        if runnable.is_empty() {
            return None;
        }
        st.decisions += 1;
        let yielded = std::mem::take(&mut st.slots[me].yielded);
        let d = match &self.policy {
            Policy::RoundRobin => {
                let to = runnable.iter().copied().find(|&i| i > me).unwrap_or(runnable[0]);
                Decision { to, quantum: self.quantum }
            }
            Policy::Random(_) => {
                let to = runnable[(splitmix(&mut st.rng) % runnable.len() as u64) as usize];
                let quantum = 1 + splitmix(&mut st.rng) % (2 * self.quantum);
                Decision { to, quantum }
            }
            Policy::Pct { depth, .. } => {
                if st.change_points.first() == Some(&st.decisions) {
                    st.change_points.remove(0);
                    st.slots[me].priority = CHANGED + u64::from(*depth) - 1 - st.change_points.len() as u64;
                }
                if yielded {
                    lower(st, me);
                }
                let best = |st: &State| *runnable.iter().max_by_key(|&&i| (st.slots[i].priority, i)).unwrap();
                let mut to = best(st);
                if to == me && runnable.len() > 1 {
                    st.slots[me].streak += 1;
                    if st.slots[me].streak >= STARVE {
                        lower(st, me);
                        to = best(st);
                    }
                }
                if to != me {
                    st.slots[me].streak = 0;
                }
                let quantum = 1 + splitmix(&mut st.rng) % (2 * self.quantum);
                Decision { to, quantum }
            }
            Policy::Replay(_) => match st.replay.pop_front() {
                Some(d) if d.to < st.slots.len() && st.slots[d.to].state == TState::Runnable => d,
                _ => Decision { to: runnable.iter().copied().find(|&i| i > me).unwrap_or(runnable[0]), quantum: self.quantum },
            },
        };
        let (n, from) = (st.decisions, st.slots[me].blocks);
        if let Some(f) = &mut st.record {
            let _ = writeln!(f, "{n} {} {} {me} {from}", d.to, d.quantum);
        }
        Some(d)
    }

    /// Gives the baton to `d.to` (or to nobody) and, unless `me` is the one chosen or has
    /// exited, waits until `me` is scheduled again. Returns `me`'s granted quantum.
    fn switch<'a>(&'a self, mut st: MutexGuard<'a, State>, me: usize, d: Option<Decision>) -> (MutexGuard<'a, State>, u64) {
        match d {
            Some(d) => {
                st.slots[d.to].quantum = d.quantum;
                st.current = Some(d.to);
                if d.to != me {
                    st.slots[d.to].cv.notify_one();
                }
            }
            None => st.current = None,
        }
        if st.slots[me].state == TState::Exited {
            return (st, 0);
        }
        let cv = st.slots[me].cv.clone();
        let st = park(st, &cv, me);
        let q = st.slots[me].quantum;
        (st, q)
    }

    /// `me` yields (`sched_yield`): a switch point at which, under PCT, it drops below every
    /// other thread (as a change point would; a thread that yields is waiting for another).
    /// Returns the quantum to run with.
    pub fn yield_now(&self, me: usize, pc: u64, blocks: u64) -> u64 {
        self.lock().slots[me].yielded = true;
        self.preempt(me, pc, blocks)
    }

    /// A counted preemption point of `me`. Returns the quantum to run with.
    pub fn preempt(&self, me: usize, pc: u64, blocks: u64) -> u64 {
        let mut st = self.lock();
        st.slots[me].pc = pc;
        st.slots[me].blocks = blocks;
        let d = self.decide(&mut st, me);
        self.switch(st, me, d).1
    }

    /// A tool holds `me` back where it stands (in a call-out, before an instruction: the harm
    /// test of `--tool=race` runs another thread's access first): the others run until one
    /// `unhold`s it. True if one did; false if `me` went on because nothing else could run.
    pub fn hold(&self, me: usize, pc: u64) -> bool {
        let mut st = self.lock();
        st.slots[me].state = TState::Held;
        st.slots[me].pc = pc;
        st.slots[me].hold_broken = false;
        st.slots[me].held_at = st.decisions;
        let d = self.decide(&mut st, me);
        let (st, _) = self.switch(st, me, d);
        !st.slots[me].hold_broken
    }

    /// Lets thread `t`, held, run again when next chosen (the baton holder goes on first).
    pub fn unhold(&self, t: usize) {
        let mut st = self.lock();
        if st.slots.get(t).is_some_and(|s| s.state == TState::Held) {
            st.slots[t].state = TState::Runnable;
        }
    }

    /// When no thread is runnable: time out or interrupt a waiter, or report a deadlock.
    /// Returns Ok(None) if threads in syscalls may still come back.
    fn unstick(&self, st: &mut State) -> Result<Option<Decision>, Deadlock> {
        let waiters = |pred: &dyn Fn(&Slot) -> bool| {
            st.slots
                .iter()
                .enumerate()
                .filter(|(_, s)| pred(s))
                .min_by_key(|(_, s)| match s.state {
                    TState::Futex { seq, .. } => seq,
                    _ => u64::MAX,
                })
                .map(|(i, _)| i)
        };
        let interrupted = waiters(&|s| matches!(s.state, TState::Futex { .. }) && s.inbox.pending_bits() & !s.mask != 0);
        let timed = waiters(&|s| matches!(s.state, TState::Futex { timed: true, .. }));
        let (i, ret) = match (interrupted, timed) {
            (Some(i), _) => (i, -(libc::EINTR as i64)),
            (None, Some(i)) => (i, -(libc::ETIMEDOUT as i64)),
            (None, None) => {
                if st.slots.iter().any(|s| matches!(s.state, TState::InSyscall(_))) {
                    return Ok(None);
                }
                let mut lines = vec![format!("deadlock: all {} live threads wait forever", st.slots.iter().filter(|s| s.state != TState::Exited).count())];
                for (i, s) in st.slots.iter().enumerate() {
                    if let TState::Futex { addr, .. } = s.state {
                        lines.push(format!(
                            "deadlock:   thread {i} (tid {}) waits on futex {addr:#x} (a mutex, condition or join) at guest pc {:#x}",
                            s.tid, s.pc
                        ));
                    }
                }
                return Err(Deadlock(lines));
            }
        };
        st.slots[i].state = TState::Runnable;
        st.slots[i].wake_ret = ret;
        Ok(Some(Decision { to: i, quantum: self.quantum }))
    }

    /// FUTEX_WAIT after the value check: blocks `me` until woken. Returns the syscall result.
    /// Returns the syscall result and the quantum granted when `me` was scheduled again.
    pub fn futex_wait(&self, me: usize, addr: u64, bitset: u32, timed: bool, pc: u64, blocks: u64) -> Result<(i64, u64), Deadlock> {
        let mut st = self.lock();
        st.slots[me].blocks = blocks;
        st.seq += 1;
        let seq = st.seq;
        st.slots[me].state = TState::Futex { addr, bitset, timed, seq };
        st.slots[me].pc = pc;
        st.slots[me].wake_ret = 0;
        let d = match self.decide(&mut st, me) {
            Some(d) => Some(d),
            None => self.unstick(&mut st)?,
        };
        let (st, q) = self.switch(st, me, d);
        Ok((st.slots[me].wake_ret, q))
    }

    /// FUTEX_WAKE: makes up to `n` waiters on `addr` (matching `bitset`) runnable, oldest first.
    pub fn futex_wake(&self, addr: u64, n: u64, bitset: u32) -> i64 {
        let mut st = self.lock();
        let mut waiters: Vec<(u64, usize)> = st
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s.state {
                TState::Futex { addr: a, bitset: b, seq, .. } if a == addr && b & bitset != 0 => Some((seq, i)),
                _ => None,
            })
            .collect();
        waiters.sort();
        let woken = waiters.into_iter().take(n as usize).map(|(_, i)| i).collect::<Vec<_>>();
        for &i in &woken {
            st.slots[i].state = TState::Runnable;
            st.slots[i].wake_ret = 0;
        }
        woken.len() as i64
    }

    /// FUTEX_REQUEUE: wakes `n` waiters on `addr` and moves up to `n2` others to `addr2`.
    pub fn futex_requeue(&self, addr: u64, n: u64, addr2: u64, n2: u64) -> i64 {
        let woken = self.futex_wake(addr, n, u32::MAX);
        let mut st = self.lock();
        let mut moved = 0;
        let mut waiters: Vec<(u64, usize)> = st
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s.state {
                TState::Futex { addr: a, seq, .. } if a == addr => Some((seq, i)),
                _ => None,
            })
            .collect();
        waiters.sort();
        for (_, i) in waiters.into_iter().take(n2 as usize) {
            if let TState::Futex { addr: a, .. } = &mut st.slots[i].state {
                *a = addr2;
                moved += 1;
            }
        }
        woken + moved
    }

    /// `me` enters a syscall that may block in the kernel: the baton goes to another thread.
    pub fn syscall_begin(&self, me: usize, nr: u64, pc: u64, blocks: u64) {
        let mut st = self.lock();
        st.slots[me].blocks = blocks;
        st.slots[me].state = TState::InSyscall(nr);
        st.slots[me].pc = pc;
        let d = self.decide(&mut st, me);
        st.current = d.map(|d| d.to);
        if let Some(d) = d {
            st.slots[d.to].quantum = d.quantum;
            st.slots[d.to].cv.notify_one();
        }
    }

    /// `me` is back from the kernel: waits for the baton (taking it if nobody holds it).
    pub fn syscall_end(&self, me: usize) -> u64 {
        let mut st = self.lock();
        st.slots[me].state = TState::Runnable;
        if st.current.is_none() {
            st.current = Some(me);
            st.slots[me].quantum = self.quantum;
        }
        let cv = st.slots[me].cv.clone();
        let st = park(st, &cv, me);
        st.slots[me].quantum
    }

    /// `me` exits: hands the baton on. Returns the number of threads still alive.
    pub fn exit(&self, me: usize, blocks: u64) -> Result<usize, Deadlock> {
        let mut st = self.lock();
        st.slots[me].blocks = blocks;
        st.slots[me].state = TState::Exited;
        let alive = st.slots.iter().filter(|s| s.state != TState::Exited).count();
        if alive == 0 {
            return Ok(0);
        }
        let d = match self.decide(&mut st, me) {
            Some(d) => Some(d),
            None => self.unstick(&mut st)?,
        };
        let _ = self.switch(st, me, d);
        Ok(alive)
    }
}

/// The quantum a recorded run started its main thread with (its `# quantum Q` line), which a
/// replay must start with too.
pub fn schedule_quantum(text: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix("# quantum ")?.trim().parse().ok())
}

/// Parses a schedule written by `--record-schedule`: lines `N TO QUANTUM FROM BLOCKS` (the
/// N-th decision runs thread TO for QUANTUM blocks, taken when thread FROM had entered BLOCKS
/// blocks); the last two fields are informative and may be left out; `#` starts a comment.
pub fn read_schedule(text: &str) -> Result<Vec<Decision>, String> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .enumerate()
        .map(|(n, l)| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match (f.get(1).and_then(|v| v.parse().ok()), f.get(2).and_then(|v| v.parse().ok())) {
                (Some(to), Some(quantum)) if f.len() == 3 || f.len() == 5 => Ok(Decision { to, quantum }),
                _ => Err(format!("line {}: expected `N THREAD QUANTUM [FROM BLOCKS]`, found `{l}`", n + 1)),
            }
        })
        .collect()
}
