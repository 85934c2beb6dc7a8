//! One run of `--tool=race`: every data race the run shows, by happens-before over the
//! program's memory accesses (`hb`), with the synchronization read from the binary alone: a
//! `lock`-prefixed read-modify-write or an `xchg` with memory acquires and releases its
//! location (pthread mutexes, condition variables, barriers, semaphores and C11
//! read-modify-writes are built of those and futexes), a plain access to a location such an
//! instruction has touched is atomic too (an `atomic_load` or `atomic_store` of it), a futex
//! wake releases its word and a wait that returned acquires it, a thread's creation orders its
//! creator's past before it, and its exit releases the word the kernel clears for
//! `pthread_join` (`CLONE_CHILD_CLEARTID`), which a load that reads it acquires.
//!
//! Each access is handed to the detector in a call-out (a light one first, for what the
//! detector's compact words hold: `access_light`), unless inline code dismisses it first
//! (a bitmap of atomic locations for the runtime's plain accesses, a same-epoch cache for the
//! others); accesses through the stack pointer (the thread's own frames) are not. A harm run
//! (a plan) also watches its races' accesses around their instructions (`harm::Watcher`).

use super::calls;
use super::harm::{self, Watcher};
use super::hb;
use super::owned;
use super::record;
use crate::kernel::memory::GuestMemory;
use crate::report::model::{Finding, Report, VERSION};
use crate::report::Reporter;
use crate::tools::heap::{self, Heap, Hook};
use crate::tools::{Error, ToolRun};
use rtgrind_jit::iced_x86::{Mnemonic, OpAccess, Register, UsedMemory};
use rtgrind_jit::instrument::code_asm::{qword_ptr, AsmRegister64, CodeAssembler, CodeLabel};
use rtgrind_jit::instrument::{tool_area, Callout, Inline, InsnSite, Tool};
use rtgrind_jit::ThreadContext;
use std::collections::HashSet;

/// How the report is given: JSON and SARIF on standard output after the program's, and the
/// exit status when races were found; or, in a search's run, to a file for it.
pub struct Output {
    /// The report as asked (`tools::output`; its graph: `--dot`).
    pub report: crate::tools::output::Output,
    pub error_exitcode: i32,
    pub command: Vec<String>,
    pub race_out: Option<std::path::PathBuf>,
    /// Races to leave out (`--suppressions`).
    pub suppressions: super::suppressions::Suppressions,
}

/// The SARIF rule of the tool's findings.
pub const RULE: crate::tools::sarif::Rule = crate::tools::sarif::Rule {
    id: "data-race",
    description: "Two accesses to one location by two threads, one a write, with no synchronization between",
    help: "Order the two accesses (a lock both hold, an atomic, a join): a race reported harmful changed what the program read or left in memory when its accesses were replayed in the other order.",
};

/// The libraries of the C and C++ runtime, trusted (by file name).
const RUNTIME: [&str; 6] = ["libc.so", "ld-linux", "libstdc++.so", "libgcc_s.so", "libgomp.so", "libpthread.so"];

/// The widest access the same-epoch cache checks inline across granules (a 32-byte vector).
const MAX_CACHED: u64 = 32;

/// Bits of the filter of atomic locations (512 KiB).
const FILTER_BITS: usize = 1 << 22;
impl State {
    /// Thread `t`'s epoch as the cache words and the inline code hold it: `tid << 32 | clock`
    /// (48 bits: threads are fewer than 65536).
    fn epoch(&self, t: hb::Tid) -> u64 {
        (t as u64) << 32 | u64::from(self.detector.epoch(t))
    }

    /// Thread `t`'s clock entries into its tool area's table (`known_word`).
    fn publish(&self, t: hb::Tid, area: &mut [u64]) {
        let entries = self.detector.clock_entries(t);
        let entry = |k: usize| u64::from(entries.get(k).copied().unwrap_or(0));
        for (i, word) in area[self.known_word / 8..][..record::KNOWN_THREADS / 2].iter_mut().enumerate() {
            *word = entry(2 * i) | entry(2 * i + 1) << 32;
        }
    }

    /// Thread `t` synchronized at `pc`.
    fn synced(&mut self, t: hb::Tid, pc: u64) {
        if self.last_sync.len() <= t {
            self.last_sync.resize(t + 1, 0);
        }
        self.last_sync[t] = pc;
    }

    /// After an access by `t` (its stack pointer `sp`): each race it found keeps both
    /// threads' last synchronization and the return addresses on `t`'s stack.
    fn note_races(&mut self, t: hb::Tid, sp: u64) {
        let sync = |s: &State, u: hb::Tid| s.last_sync.get(u).copied().unwrap_or(0);
        while self.noted.len() < self.detector.races.len() {
            let race = self.detector.races[self.noted.len()];
            let syncs = [sync(self, race.earlier.tid), sync(self, t)];
            let stack = return_addresses(sp, self.stack_top(t), STACK_FRAMES);
            let block = self.heap.block_at(race.addr).map(|(start, b)| (start, b.size, b.stack.clone()));
            self.noted.push(Noted { syncs, stack, block });
        }
    }

    /// How far up a scan of thread `t`'s stack goes: a little past where its stack pointer
    /// started (the frame of `clone` that started it; above are other threads' or the
    /// environment's words, whose stale return addresses are no callers).
    fn stack_top(&self, t: hb::Tid) -> u64 {
        self.stack_of.get(t).map_or(u64::MAX, |&sp| sp.saturating_add(64))
    }

    /// The inline code's last read-modify-write (`owned`), made in the detector as it would
    /// have been: the thread's clock at its epoch, then acquire, access, release and tick (the
    /// inline code ticked the thread's epoch word and marker already). Before anything reads or
    /// changes the detector's state.
    fn settle(&mut self) {
        if let Some((t, addr, site)) = self.take_pending() {
            self.detector.acquire(t, addr);
            self.detector.access(t, addr, site.size, true, true, site.number);
            self.detector.release(t, addr);
            self.last_sync[t] = site.pc;
        }
    }

    /// `settle` in a light call-out: false (nothing settled: the full call-out will) if the
    /// detector's quick path cannot do it.
    fn settle_quick(&mut self) -> bool {
        if self.pending.epoch == 0 {
            return true;
        }
        let (t, site) = ((self.pending.epoch >> 32) as hb::Tid, self.pending.site);
        // SAFETY: the pending site is a `Site` the tool keeps for as long as translations exist.
        let site = unsafe { &*(site as *const Site) };
        self.detector.set_epoch(t, self.pending.epoch as u32);
        if !self.detector.rmw_quick(t, self.pending.addr, site.size, site.number) {
            return false;
        }
        self.pending.epoch = 0;
        self.last_sync[t] = site.pc;
        true
    }

    /// The pending read-modify-write, taken (its thread's clock put at its epoch): its thread,
    /// address and site.
    fn take_pending(&mut self) -> Option<(hb::Tid, u64, &'static Site)> {
        let p = std::mem::take(&mut self.pending);
        if p.epoch == 0 {
            return None;
        }
        let t = (p.epoch >> 32) as hb::Tid;
        self.detector.set_epoch(t, p.epoch as u32);
        // SAFETY: as in `settle_quick`.
        Some((t, p.addr, unsafe { &*(p.site as *const Site) }))
    }

    /// Thread `t` made a read-modify-write of `size` bytes at `addr`: the next one there is
    /// inline while the thread has not ticked since (`owned`). (Not before a second thread:
    /// no tick then.)
    fn own(&mut self, t: hb::Tid, addr: u64, size: u64) {
        if let Some(m) = owned::marker(addr, size, self.epoch(t)).filter(|_| !self.detector.alone()) {
            // SAFETY: as in `forget`.
            unsafe { *self.word(addr) = m };
        }
    }

    /// Thread `t` releases the location `addr` other than by a read-modify-write (an atomic
    /// store, a futex wake, its exit): its clock is no longer its owner's.
    fn release_at(&mut self, t: hb::Tid, addr: u64) {
        self.forget(addr);
        self.detector.release(t, addr);
    }

    /// The cache word of the granule of `addr`: its record's user word.
    fn word(&self, addr: u64) -> *mut u64 {
        let records = self.detector.records().expect("a run's detector keeps records");
        // SAFETY: a word of the record (records are `WORDS` words).
        unsafe { records.record(addr).add(hb::USER_WORD) }
    }

    /// The granules of `[addr, addr+len)` hold no access any more (another access was recorded
    /// there without the cache: a memory function's).
    fn forget_range(&mut self, addr: u64, len: u64) {
        for g in (addr >> 3)..=(addr.saturating_add(len - 1) >> 3) {
            self.forget(g << 3);
        }
    }

    /// A heap block was freed: its atomic locations (a mutex, libgomp's task) are plain memory
    /// again for whatever the allocator puts there next.
    fn freed(&mut self, start: u64, size: u64) {
        if self.atomic.is_empty() {
            return;
        }
        let end = start.saturating_add(size);
        let gone: Vec<u64> = if size as usize > self.atomic.len() {
            self.atomic.iter().copied().filter(|a| (start..end).contains(a)).collect()
        } else {
            (start..end).filter(|a| self.atomic.contains(a)).collect()
        };
        for a in gone {
            // (Its owner's marker too.)
            self.atomic.remove(&a);
            self.forget(a);
        }
    }

    /// `access` of the runtime's plain access by `t` at `addr` (`site`: trusted, not atomic
    /// code) where it grows no clock (`runtime_light`): an atomic location's or exit word's load
    /// acquires, an atomic location's store releases (and ticks), the thread's last
    /// synchronization is noted; false, with nothing changed, where the acquire or release
    /// would grow a clock or make an object (`last_sync` has the thread's entry: the caller
    /// checks).
    fn runtime_quick(&mut self, t: hb::Tid, addr: u64, site: &Site) -> bool {
        let atomic = self.atomic.contains(&addr);
        if site.write {
            if !atomic {
                return true;
            }
            if !self.detector.release_quick(t, addr) {
                return false;
            }
            // (`release_at`'s.)
            self.forget(addr);
        } else if atomic || self.exit_words.contains(&addr) {
            if !self.detector.acquire_quick(t, addr) {
                return false;
            }
        } else {
            return true;
        }
        self.last_sync[t] = site.pc;
        true
    }

    /// The granule of `addr` holds no access any more (it turned atomic, or an exit word).
    fn forget(&mut self, addr: u64) {
        // SAFETY: a shadow address of the cache's map: its slice (or the sink) is reserved.
        unsafe { *self.word(addr) = 0 };
    }

    /// After thread `t`'s access: the words of its granules hold it (the bytes this thread
    /// wrote and read there in its epoch, added up). The inline check reads one word for an
    /// access within a granule, each of its granules' for an aligned one of up to
    /// `MAX_CACHED` bytes; an unaligned one over several is held too, and found by the checks
    /// of later accesses to its granules. (Only the first granule's address was checked for
    /// an atomic location: a later granule that may hold one is emptied instead, so that an
    /// atomic load there still calls out and acquires.)
    fn cache(&mut self, t: hb::Tid, addr: u64, size: u64, write: bool) {
        let high = self.epoch(t) << 16;
        for (g, bytes) in hb::granules(addr, size) {
            if g > addr && self.filtered(g) {
                self.forget(g);
                continue;
            }
            let bytes = u64::from(bytes);
            let p = self.word(g);
            // SAFETY: as in `forget`.
            let old = unsafe { *p };
            let kept = if old & !0xffff == high { old & 0xffff } else { 0 };
            // SAFETY: as above.
            unsafe { *p = high | kept | if write { bytes << 8 } else { bytes } };
        }
    }

    /// A futex word is an atomic location from its first futex call on (the kernel reads it
    /// atomically; the code that waits and wakes on it publishes through it): its plain stores
    /// release, its plain loads acquire. libgomp's barriers spin on their generation word with
    /// plain loads before they sleep on it, and the last thread to arrive stores it plainly:
    /// a thread that saw the store while spinning never reached the futex wait that would
    /// have acquired (false races across `#pragma omp barrier` and a parallel region's end).
    fn atomic_word(&mut self, addr: u64) {
        if self.atomic.insert(addr) {
            self.mark(addr);
            self.forget(addr);
        }
    }

    /// `addr` is an atomic location or an exit word from now on: the filter has its bit.
    fn mark(&mut self, addr: u64) {
        let (word, bit) = filter_bit(addr);
        self.filter[word] |= bit;
    }

    /// The filter has the bit of `addr`'s granule: it may be an atomic location or an exit word.
    fn filtered(&self, addr: u64) -> bool {
        let (word, bit) = filter_bit(addr);
        self.filter[word] & bit != 0
    }
}

/// v = the cache word of the record `offset` bytes past the one at `u`; on to `slow` unless it
/// is of this thread's epoch (the tool-area word `epoch`). `w` is clobbered.
fn word_of_this_epoch(a: &mut CodeAssembler, (u, v, w): (AsmRegister64, AsmRegister64, AsmRegister64), offset: i32, epoch: u64, slow: CodeLabel) {
    a.mov(v, qword_ptr(u + (offset + 8 * hb::USER_WORD as i32))).unwrap();
    a.mov(w, v).unwrap();
    a.shr(w, 16).unwrap();
    a.cmp(w, qword_ptr(epoch).gs()).unwrap();
    a.jne(slow).unwrap();
}

/// The filter's word and bit for the (hashed) granule of `addr`.
fn filter_bit(addr: u64) -> (usize, u64) {
    let bit = (addr >> 3) as usize & (FILTER_BITS - 1);
    (bit / 64, 1 << (bit % 64))
}

/// What is kept of a race when it is found: where both threads last synchronized (the earlier
/// access's thread's, then the later's), the return addresses on the later access's thread's
/// stack, and the heap block its address was in (start, size, its allocation's callers; the
/// program may free it by the end).
struct Noted {
    syncs: [u64; 2],
    stack: Vec<u64>,
    block: Option<(u64, u64, Vec<u64>)>,
}

/// The synchronization object of signal `sig`: sending it releases there, its handler's start
/// acquires (a kernel address, never a guest location's).
fn signal_object(sig: i32) -> u64 {
    0xffff_ff00_0000_0000 | sig as u64
}

/// One memory access instruction of the code, as its call-out is told.
struct Site {
    pc: u64,
    size: u64,
    write: bool,
    reads: bool,
    /// A `lock`-prefixed read-modify-write or an `xchg` with memory.
    atomic_rmw: bool,
    /// A load or store of C++'s `std::atomic` (`atomics::code`): its location is atomic.
    atomic_code: bool,
    /// Code of the C and C++ runtime (the C library, the dynamic loader, libstdc++, libgcc,
    /// libgomp): trusted to be race-free itself, as TSan and Helgrind take it; its atomics
    /// still order.
    trusted: bool,
    number: u32,
    state: *mut State,
    /// A call of the C library's memory or string function of this name (`calls`): the site
    /// is the call, its accesses the ranges the function reads or writes (`size` is 0).
    call: Option<(&'static str, calls::Kind)>,
}

/// What the call-outs share (one guest thread runs at a time: the scheduler's baton).
struct State {
    /// The detector, whose granule records' user word is the run's same-epoch cache: the epoch
    /// of the last thread to access the granule, and the bytes that thread wrote and read there
    /// in that epoch: `epoch << 16 | written << 8 | read` (a bit per byte). An access by the
    /// same thread in the same epoch to bytes it already wrote (or, for a read, read or wrote)
    /// adds nothing (FastTrack's same-epoch case): the inline code skips its call-out. Any
    /// other access to the granule calls out and updates the word. (In the record, beside the
    /// detector's words for it, which a call-out reads next: one cache line, one page.)
    detector: hb::Detector,
    /// Locations a `lock`-prefixed instruction or `xchg` touched: atomic ever after.
    atomic: HashSet<u64, hb::Fast>,
    /// Words the kernel clears when a thread exits (`CLONE_CHILD_CLEARTID`), released then.
    exit_words: HashSet<u64, hb::Fast>,
    /// A bit per 8-byte granule (hashed): set where an atomic location or an exit word may
    /// be, so the library's plain accesses elsewhere skip their call-out.
    filter: Box<[u64]>,
    /// Guest pages the string functions' checks read in place (`calls::Readable`).
    readable: calls::Readable,
    /// Tool-area words: the thread's number, the access's address, the thread's epoch.
    tid_word: usize,
    addr_word: usize,
    epoch_word: usize,
    /// Set by `access_light` when the access needs `access`.
    slow_word: usize,
    /// The thread's clock entries of the first `record::KNOWN_THREADS` threads (32 bits each),
    /// for the inline record's check of another thread's write word: renewed by the access
    /// call-outs and at a thread's start (`publish`), so never ahead of the thread's clock
    /// (which only grows), only behind it, which makes the inline code decline (and the
    /// call-out it takes renews them).
    known_word: usize,
    /// A harm run's watch on its races.
    watch: Option<Watcher>,
    /// Per thread: the instruction of its last synchronization (0: none yet).
    last_sync: Vec<u64>,
    /// Per race found: what was noted of it then.
    noted: Vec<Noted>,
    /// Each thread's stack pointer when it started (its stack's mapping holds it; nothing of
    /// its own is above it), by thread.
    stack_of: Vec<u64>,
    /// The live heap blocks and where they were allocated (detection runs only).
    heap: Heap,
    /// The read-modify-write the inline code made last, not settled yet (`owned`).
    pending: owned::Pending,
}

/// An allocation function's entry, as its call-out is told.
struct AllocSite {
    kind: heap::Kind,
    state: *mut State,
}

pub struct RaceRun {
    program: String,
    /// The main program's mapping's name (for its symbols).
    main_path: String,
    /// The main program's code of `std::atomic` operations (`atomics::code`), sorted ranges.
    atomic_code: Vec<(u64, u64)>,
    /// The main program's loads and stores of C11's atomic operations (`atomics::c_accesses`),
    /// sorted.
    c_atomics: Vec<u64>,
    /// The runtime's code, trusted (`Site::trusted`), as it is mapped: the loader at start,
    /// the libraries as the loader maps them.
    runtime: Vec<(u64, u64)>,
    /// libgomp's code, as mapped: its plain loads and stores are its acquires and releases.
    gomp: Vec<(u64, u64)>,
    state: Box<State>,
    // Boxed: translations hold their addresses, which must not move as the vector grows.
    #[allow(clippy::vec_box)]
    sites: Vec<Box<Site>>,
    #[allow(clippy::vec_box)]
    alloc_sites: Vec<Box<AllocSite>>,
    /// The main program's calls through the PLT or GOT, by name (`calls::CALLS`), and its
    /// code's range (whose calls those names are).
    callees: Option<crate::report::symbols::Callees>,
    main_range: (u64, u64),
    /// In a harm run: where the watched memory functions' calls return (their accesses are
    /// made there).
    watched_returns: HashSet<u64>,
    /// A clone under way: the clock its thread starts from, and its exit word.
    creating: Option<(hb::Clock, u64)>,
    /// Each thread's exit word, by thread.
    exit_word: Vec<u64>,
    out: Output,
    /// Races were reported.
    found: bool,
    /// A second thread has started: the code translated from then on records accesses inline
    /// (`record`). Before, nothing can race and the light call-outs record nothing either, so
    /// a program that never starts a thread (most short runs) is not translated with ~40
    /// instructions of record per access; the first thread's start drops every translation
    /// (the engine drops them then too, for its preemption counts; the tool does not rely on
    /// that).
    threaded: bool,
    retranslate: bool,
}

impl RaceRun {
    pub fn new(program: String, out: Output, plan: Option<harm::Plan>) -> Result<RaceRun, Error> {
        let words =
            rtgrind_jit::claims::claim_area("the race detector", 32 + 4 * record::KNOWN_THREADS).map_err(|e| Error::internal(format!("internal: {e}")))?;
        let state = State {
            detector: hb::Detector::new().map_err(|e| Error::internal(format!("cannot reserve shadow memory: {e}")))?,
            atomic: HashSet::default(),
            exit_words: HashSet::default(),
            filter: vec![0u64; FILTER_BITS / 64].into_boxed_slice(),
            readable: calls::Readable::default(),
            tid_word: words,
            addr_word: words + 8,
            epoch_word: words + 16,
            slow_word: words + 24,
            known_word: words + 32,
            watch: plan.map(Watcher::new),
            last_sync: Vec::new(),
            noted: Vec::new(),
            stack_of: Vec::new(),
            heap: Heap::default(),
            pending: owned::Pending::default(),
        };
        Ok(RaceRun {
            program,
            main_path: String::new(),
            atomic_code: Vec::new(),
            c_atomics: Vec::new(),
            runtime: Vec::new(),
            gomp: Vec::new(),
            state: Box::new(state),
            sites: Vec::new(),
            alloc_sites: Vec::new(),
            callees: None,
            main_range: (0, 0),
            watched_returns: HashSet::new(),
            creating: None,
            exit_word: vec![0],
            out,
            found: false,
            threaded: false,
            retranslate: false,
        })
    }

    fn tid(&self, ctx: &ThreadContext) -> hb::Tid {
        ctx.tool_area[self.state.tid_word / 8] as hb::Tid
    }
}

extern "C" fn access(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::RaceAccess);
    // SAFETY: rtg_callout passes this thread's context; `arg` is a `Site` the tool keeps for
    // as long as translations exist, and its state outlives the run; one guest thread runs at
    // a time, so nothing else touches the state meanwhile.
    let (ctx, site) = unsafe { (&mut *ctx, &*(arg as *const Site)) };
    // SAFETY: as above.
    let st = unsafe { &mut *site.state };
    st.settle();
    let t = ctx.tool_area[st.tid_word / 8] as hb::Tid;
    let addr = ctx.tool_area[st.addr_word / 8];
    if site.atomic_rmw {
        if st.atomic.insert(addr) {
            // Atomic from now on: plain accesses to it call out again (they order).
            st.mark(addr);
            st.forget(addr);
        }
        st.detector.acquire(t, addr);
        st.detector.access(t, addr, site.size, true, true, site.number);
        st.detector.release(t, addr);
        st.synced(t, site.pc);
        st.note_races(t, ctx.callout_regs[4]);
        ctx.tool_area[st.epoch_word / 8] = st.epoch(t);
        st.own(t, addr, site.size);
        st.publish(t, &mut ctx.tool_area);
        return;
    }
    if site.atomic_code && st.atomic.insert(addr) {
        // A `std::atomic`'s load or store: its location is atomic from now on.
        st.mark(addr);
        st.forget(addr);
    }
    let atomic = st.atomic.contains(&addr);
    let exit_word = st.exit_words.contains(&addr);
    if (atomic || exit_word) && !site.write {
        // An atomic load acquires what stores to its location released; reading a dead
        // thread's cleared word is seeing its exit (`pthread_join`).
        st.detector.acquire(t, addr);
        st.synced(t, site.pc);
    }
    if !site.trusted {
        st.detector.access(t, addr, site.size, site.write, atomic, site.number);
        st.note_races(t, ctx.callout_regs[4]);
        if !atomic && !exit_word {
            st.cache(t, addr, site.size, site.write);
        } else {
            // (An owner's marker there, too: another access took its bytes.)
            st.forget_range(addr, site.size);
        }
    }
    if atomic && site.write {
        st.release_at(t, addr);
        st.synced(t, site.pc);
        ctx.tool_area[st.epoch_word / 8] = st.epoch(t);
    }
    st.publish(t, &mut ctx.tool_area);
}

/// The common case of an atomic read-modify-write, in a light call-out (as `access_light`):
/// a location already atomic whose clock and the thread's need no growing, and no race.
extern "C" fn rmw_light(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::RaceRmwLight);
    // SAFETY: as for `access`.
    let (ctx, site) = unsafe { (&mut *ctx, &*(arg as *const Site)) };
    // SAFETY: as above.
    let st = unsafe { &mut *site.state };
    let t = ctx.tool_area[st.tid_word / 8] as hb::Tid;
    let addr = ctx.tool_area[st.addr_word / 8];
    let done = st.settle_quick() && st.atomic.contains(&addr) && st.last_sync.len() > t && st.detector.rmw_quick(t, addr, site.size, site.number);
    if done {
        st.last_sync[t] = site.pc;
        ctx.tool_area[st.epoch_word / 8] = st.epoch(t);
        st.own(t, addr, site.size);
    }
    ctx.tool_area[st.slow_word / 8] = u64::from(!done);
}

/// A plain access of the runtime's (trusted, never checked) that the filter let through, in a
/// light call-out: one at no atomic location or exit word (the filter's bits are hashed), or
/// an atomic location's load or an exit word's (an acquire) or an atomic location's store (a
/// release) that grows no clock and makes no object: the C library's plain loads and stores of
/// a mutex's word (the threaded kernel's 271,728 full call-outs). Anything else sets the slow
/// word (`access` does it all, as it did before).
extern "C" fn runtime_light(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::RaceRuntimeLight);
    // SAFETY: as for `access`.
    let (ctx, site) = unsafe { (&mut *ctx, &*(arg as *const Site)) };
    // SAFETY: as above.
    let st = unsafe { &mut *site.state };
    let t = ctx.tool_area[st.tid_word / 8] as hb::Tid;
    let addr = ctx.tool_area[st.addr_word / 8];
    let done = st.settle_quick() && st.last_sync.len() > t && st.runtime_quick(t, addr, site);
    if done && site.write && st.atomic.contains(&addr) {
        ctx.tool_area[st.epoch_word / 8] = st.epoch(t);
    }
    ctx.tool_area[st.slow_word / 8] = u64::from(!done);
}

/// The common case of an access, in a light call-out (`Inline::callout_light`: it calls
/// nothing and allocates nothing): a plain access away from atomic locations and exit words
/// that the detector's compact words record without a race. Anything else sets the tool-area
/// word that sends the inline code on to `access`.
extern "C" fn access_light(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::RaceAccessLight);
    // SAFETY: as for `access`.
    let (ctx, site) = unsafe { (&mut *ctx, &*(arg as *const Site)) };
    // SAFETY: as above.
    let st = unsafe { &mut *site.state };
    let t = ctx.tool_area[st.tid_word / 8] as hb::Tid;
    let addr = ctx.tool_area[st.addr_word / 8];
    let done = st.settle_quick() && !st.filtered(addr) && (st.detector.alone() || st.detector.access_quick(t, addr, site.size, site.write, false, site.number));
    if done {
        st.cache(t, addr, site.size, site.write);
    }
    // (The inline record may have declined on another thread's write word for a table
    // behind the clock.)
    st.publish(t, &mut ctx.tool_area);
    ctx.tool_area[st.slow_word / 8] = u64::from(!done);
}

impl Tool for RaceRun {
    fn before_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        let ins = site.ins;
        // (In harm runs too: a freed block's atomics stop ordering there as well, so both
        // runs tick the same epochs.)
        self.watch_heap(site, b);
        self.check_memory_call(site, b);
        if self.watched_returns.contains(&ins.ip()) {
            // A watched memory function's call returned: its accesses are made.
            let r = b.scratch();
            b.callout(watch_after, &*self.state as *const State as u64, r);
            b.release_scratch();
        }
        if ins.is_string_instruction() || matches!(ins.mnemonic(), Mnemonic::Lea | Mnemonic::Nop) {
            return;
        }
        let atomic_rmw = ins.has_lock_prefix() || ins.mnemonic() == Mnemonic::Xchg;
        let used: Vec<UsedMemory> = site.info.used_memory().iter().filter(|m| m.access() != OpAccess::NoMemAccess).copied().collect();
        // A harm run checks nothing: it needs only the synchronization (the epochs that name
        // its accesses), which the filtered path keeps as the checked one does.
        let trusted = self.state.watch.is_some() || self.runtime.iter().any(|r| (r.0..r.1).contains(&ins.ip()));
        let watched = self.state.watch.as_ref().is_some_and(|w| w.watches(ins.ip()));
        let in_atomic_code = super::atomics::within(&self.atomic_code, ins.ip()) || self.c_atomics.binary_search(&ins.ip()).is_ok();
        // libgomp orders its threads with plain loads and stores the source calls acquires
        // and releases (a task's completion and `taskwait`/`taskgroup`'s fast path on the
        // children count): in libgomp every plain access to shared memory is atomic.
        let gomp = self.gomp.iter().any(|r| (r.0..r.1).contains(&ins.ip()));
        for m in used {
            // The thread's own frames, thread-local storage and gathers are not shared data;
            // an atomic in the frame (another thread may have its address) still orders.
            let own_frame = m.base() == Register::RSP && !atomic_rmw && !in_atomic_code;
            let atomic_code = in_atomic_code || gomp && !own_frame;
            if own_frame || matches!(m.segment(), Register::FS | Register::GS) || m.index().is_vector_register() {
                continue;
            }
            let write = crate::shadow::propagate::writes(m.access());
            let reads = atomic_rmw || matches!(m.access(), OpAccess::Read | OpAccess::ReadWrite | OpAccess::CondRead | OpAccess::ReadCondWrite);
            let size = m.memory_size().size().max(1) as u64;
            let number = self.sites.len() as u32;
            let s = Box::new(Site {
                pc: ins.ip(),
                size,
                write,
                reads,
                atomic_rmw: atomic_rmw && ins.op_count() > 0,
                atomic_code,
                trusted,
                number,
                call: None,
                state: &mut *self.state,
            });
            let arg = &*s as *const Site as u64;
            self.sites.push(s);
            let (t, u) = (b.scratch(), b.scratch());
            crate::shadow::propagate::effective_address(b, t, &m, u);
            if watched {
                b.asm().mov(qword_ptr(tool_area(self.state.addr_word)).gs(), t).unwrap();
                b.callout(watch_before, arg, u);
            }
            if trusted && !atomic_rmw && !atomic_code {
                // The library's plain accesses matter only at atomic locations and exit words:
                // the filter says where those may be, inline.
                self.filtered_callout(b, arg, t, u);
            } else if !atomic_rmw && !atomic_code {
                self.cached_callout(b, arg, (t, u), size, write, number);
            } else if atomic_rmw && ins.op_count() > 0 && self.state.watch.is_none() {
                self.owned_rmw(b, arg, (t, u), size);
            } else if atomic_rmw && ins.op_count() > 0 {
                b.asm().mov(qword_ptr(tool_area(self.state.addr_word)).gs(), t).unwrap();
                self.light_or_full(b, (rmw_light, access), arg, t);
            } else {
                b.asm().mov(qword_ptr(tool_area(self.state.addr_word)).gs(), t).unwrap();
                b.callout(access, arg, t);
            }
            b.release_scratch();
            if m.access() == OpAccess::ReadWrite || atomic_rmw {
                // One access for a read-modify-write.
                break;
            }
        }
    }

    fn after_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        if self.state.watch.as_ref().is_some_and(|w| w.watches(site.ins.ip())) {
            let r = b.scratch();
            b.callout(watch_after, &*self.state as *const State as u64, r);
            b.release_scratch();
        }
    }
}

/// The ranges the call at `site` (of a `calls` function) reads and writes, from its
/// arguments.
/// (In a full call-out: pages not known readable yet are checked.)
fn call_ranges(site: &Site, ctx: &ThreadContext, st: &mut State) -> calls::Ranges {
    let ranges = site.call.map(|(_, kind)| calls::ranges(kind, call_args(ctx), &mut calls::Checking(&mut st.readable)));
    ranges.and_then(Result::ok).unwrap_or_default()
}

/// What `call_ranges` gives with only the pages known readable (a light call-out's).
fn quick_call_ranges(site: &Site, ctx: &ThreadContext, st: &State) -> Result<calls::Ranges, calls::Unknown> {
    site.call.map_or(Ok(calls::Ranges::default()), |(_, kind)| calls::ranges(kind, call_args(ctx), &mut calls::Known(&st.readable)))
}

/// A call's first three arguments (rdi, rsi, rdx), as the call-out saw them.
fn call_args(ctx: &ThreadContext) -> [u64; 3] {
    let regs = ctx.callout_regs;
    [regs[7], regs[6], regs[2]]
}

/// Before the program's call of a memory or string function (`calls`; `arg` its write site,
/// whose number plus one is its read site): the ranges it writes and reads.
extern "C" fn memory_call(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::RaceMemoryCall);
    // SAFETY: as for `access`.
    let (ctx, site) = unsafe { (&mut *ctx, &*(arg as *const Site)) };
    // SAFETY: as above.
    let st = unsafe { &mut *site.state };
    st.settle();
    let t = ctx.tool_area[st.tid_word / 8] as hb::Tid;
    for r in call_ranges(site, ctx, st).iter() {
        st.detector.access(t, r.addr, r.len, r.write, false, site.number + u32::from(!r.write));
        st.forget_range(r.addr, r.len);
    }
    st.note_races(t, ctx.callout_regs[4]);
}

/// `memory_call`'s common case, in a light call-out (as `access_light`): its strings on pages
/// known readable, and every range recorded by the compact words without a race. Anything
/// else sets the slow word (the full call-out does it all again).
extern "C" fn memory_call_light(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::RaceMemoryCallLight);
    // SAFETY: as for `access`.
    let (ctx, site) = unsafe { (&mut *ctx, &*(arg as *const Site)) };
    // SAFETY: as above.
    let st = unsafe { &mut *site.state };
    let t = ctx.tool_area[st.tid_word / 8] as hb::Tid;
    let done = st.settle_quick()
        && match quick_call_ranges(site, ctx, st) {
            Ok(ranges) => ranges.iter().all(|r| {
                let ok = st.detector.alone() || st.detector.access_quick(t, r.addr, r.len, r.write, false, site.number + u32::from(!r.write));
                if ok {
                    st.forget_range(r.addr, r.len);
                }
                ok
            }),
            Err(calls::Unknown) => false,
        };
    ctx.tool_area[st.slow_word / 8] = u64::from(!done);
}

/// At an allocation function's entry: its arguments and callers.
extern "C" fn alloc_enter(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::RaceAllocEnter);
    // SAFETY: as for `access`; `arg` is an `AllocSite` the tool keeps.
    let (ctx, site) = unsafe { (&mut *ctx, &*(arg as *const AllocSite)) };
    // SAFETY: as above.
    let st = unsafe { &mut *site.state };
    st.settle();
    let t = ctx.tool_area[st.tid_word / 8] as hb::Tid;
    let (regs, top) = (ctx.callout_regs, st.stack_top(t));
    if let Some((start, size)) = st.heap.enter(t, site.kind, [regs[7], regs[6], regs[2]], regs[4], || return_addresses(regs[4], top, ALLOC_FRAMES)) {
        st.freed(start, size);
    }
}

/// At a `ret` of an allocation function: the block it returns.
extern "C" fn alloc_return(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::RaceAllocReturn);
    // SAFETY: rtg_callout passes this thread's context; `arg` is the tool's state.
    let (ctx, st) = unsafe { (&mut *ctx, &mut *(arg as *mut State)) };
    st.settle();
    let t = ctx.tool_area[st.tid_word / 8] as hb::Tid;
    st.heap.returned(t, ctx.callout_regs[4], ctx.callout_regs[0]);
}

/// At a jump out of an allocation function's code (calloc's to memset).
extern "C" fn alloc_jump(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::RaceAllocJump);
    // SAFETY: rtg_callout passes this thread's context; `arg` is the tool's state.
    let (ctx, st) = unsafe { (&mut *ctx, &mut *(arg as *mut State)) };
    st.settle();
    let t = ctx.tool_area[st.tid_word / 8] as hb::Tid;
    st.heap.jumped_out(t, ctx.callout_regs[4], ctx.callout_regs[7]);
}

/// Before a watched access (a harm run): the watch sees it, and may hold the thread back.
extern "C" fn watch_before(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::RaceWatchBefore);
    // SAFETY: as for `access`.
    let (ctx, site) = unsafe { (&mut *ctx, &*(arg as *const Site)) };
    // SAFETY: as above.
    let addr = ctx.tool_area[unsafe { &*site.state }.addr_word / 8];
    watch_ranges(ctx, site, &[(addr, site.size)]);
}

/// Before a watched call of a memory or string function (a harm run): the watch sees the
/// ranges it writes and reads (as `memory_call` names them).
extern "C" fn watch_call(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::RaceWatchCall);
    // SAFETY: as for `access`.
    let (ctx, site) = unsafe { (&mut *ctx, &*(arg as *const Site)) };
    // SAFETY: as above.
    let st = unsafe { &mut *site.state };
    let ranges: Vec<(u64, u64)> = call_ranges(site, ctx, st).iter().map(|r| (r.addr, r.len)).collect();
    watch_ranges(ctx, site, &ranges);
}

/// Thread's accesses of `site` to `ranges` are about to be made: the watch sees them, and may
/// hold the thread back (until the other access of the race it reverses is made).
fn watch_ranges(ctx: &mut ThreadContext, site: &Site, ranges: &[(u64, u64)]) {
    // (No reference to the state lives while the thread is held: other threads' call-outs use
    // it meanwhile.)
    let (t, hold) = {
        // SAFETY: the site's state outlives the run; one guest thread runs at a time.
        let st = unsafe { &mut *site.state };
        st.settle();
        let t = ctx.tool_area[st.tid_word / 8] as hb::Tid;
        let epoch = st.detector.epoch(t);
        let top = st.stack_top(t);
        let Some(w) = st.watch.as_mut() else { return };
        let sp = ctx.callout_regs[4];
        let stack = || return_addresses(sp, top, STACK_FRAMES);
        let mut hold = None;
        for &(addr, size) in ranges {
            hold = hold.or(w.before(t, epoch, site.pc, addr, size, stack));
        }
        (t, hold.and_then(|k| Some((k, w.scheduler()?))))
    };
    if let Some((k, sched)) = hold {
        let reversed = sched.hold(t, site.pc);
        // SAFETY: as above; the thread holds the baton again.
        let st = unsafe { &mut *site.state };
        if let Some(w) = st.watch.as_mut() {
            w.resumed(t, k, reversed);
        }
    }
}

/// After a watched access: what its race's accesses left in memory.
extern "C" fn watch_after(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::RaceWatchAfter);
    // SAFETY: rtg_callout passes this thread's context; `arg` is the tool's state, which
    // outlives the run; one guest thread runs at a time.
    let (ctx, st) = unsafe { (&mut *ctx, &mut *(arg as *mut State)) };
    st.settle();
    let t = ctx.tool_area[st.tid_word / 8] as usize;
    if let Some(w) = st.watch.as_mut() {
        w.after(t);
    }
}

impl RaceRun {
    /// Notes the runtime libraries' code mapped in `[start, end)`.
    fn note_runtime(&mut self, mem: &GuestMemory, start: u64, end: u64) {
        for (s, e, r) in mem.pieces(start, end) {
            let name = r.name.as_deref().and_then(|n| n.rsplit('/').next()).unwrap_or_default();
            if RUNTIME.iter().any(|p| name.starts_with(p)) && !self.runtime.contains(&(s, e)) {
                self.runtime.push((s, e));
                if name.starts_with("libgomp.so") {
                    self.gomp.push((s, e));
                }
            }
        }
        self.state.heap.note_mapping(mem, start, end);
    }

    /// A call-out before the program's calls of memory functions (`calls::CALLS`), whose
    /// ranges are checked as the program's accesses.
    fn check_memory_call(&mut self, site: &InsnSite, b: &mut Inline) {
        let ins = site.ins;
        // (Only the main program's: the callees are named by its GOT slots.)
        if ins.mnemonic() != Mnemonic::Call || !(self.main_range.0..self.main_range.1).contains(&ins.ip()) {
            return;
        }
        let Some(name) = self.callees.as_ref().and_then(|c| c.name(ins.next_ip())) else { return };
        let Some(call) = calls::kind(&name) else { return };
        let number = self.sites.len() as u32;
        for write in [true, false] {
            let number = self.sites.len() as u32;
            let s = Site {
                pc: ins.ip(),
                size: 0,
                write,
                reads: !write,
                atomic_rmw: false,
                atomic_code: false,
                trusted: false,
                number,
                state: &mut *self.state,
                call: Some(call),
            };
            self.sites.push(Box::new(s));
        }
        let arg = &*self.sites[number as usize] as *const Site as u64;
        let r = b.scratch();
        match &self.state.watch {
            // A harm run watches the calls its races name (checks nothing), until they return.
            Some(w) if w.watches(ins.ip()) => {
                b.callout(watch_call, arg, r);
                self.watched_returns.insert(ins.next_ip());
            }
            Some(_) => {}
            None => self.light_or_full(b, (memory_call_light, memory_call), arg, r),
        }
        b.release_scratch();
    }

    /// Call-outs at the allocation functions' entries and returns (`heap`).
    fn watch_heap(&mut self, site: &InsnSite, b: &mut Inline) {
        let state = &*self.state as *const State as u64;
        let (f, arg): (extern "C" fn(*mut ThreadContext, u64), u64) = match self.state.heap.hook_at(site.ins) {
            Some(Hook::Enter(kind)) => {
                let s = Box::new(AllocSite { kind, state: &mut *self.state });
                let arg = &*s as *const AllocSite as u64;
                self.alloc_sites.push(s);
                (alloc_enter, arg)
            }
            Some(Hook::Return) => (alloc_return, state),
            Some(Hook::JumpOut) => (alloc_jump, state),
            None => return,
        };
        let r = b.scratch();
        b.callout(f, arg, r);
        b.release_scratch();
    }

    /// The call-outs for the runtime's access at the address in `t`, only if the filter has the
    /// bit of its granule: the light one (`runtime_light`), then the full one where it declines
    /// (`u` and two more registers are borrowed; the flags are clobbered).
    fn filtered_callout(&mut self, b: &mut Inline, arg: u64, t: AsmRegister64, u: AsmRegister64) {
        b.clobber_flags();
        let (v, w) = (b.scratch(), b.scratch());
        let filter = self.state.filter.as_ptr() as u64;
        let a = b.asm();
        let mut skip = a.create_label();
        a.mov(u, t).unwrap();
        a.shr(u, 3).unwrap();
        a.and(u, (FILTER_BITS - 1) as i32).unwrap();
        a.mov(v, u).unwrap();
        a.shr(v, 6).unwrap();
        a.mov(w, filter).unwrap();
        a.mov(v, qword_ptr(w + v * 8)).unwrap();
        a.bt(v, u).unwrap();
        a.jae(skip).unwrap();
        a.mov(qword_ptr(tool_area(self.state.addr_word)).gs(), t).unwrap();
        self.light_then_full(b, (runtime_light, access), arg, t, skip);
        let a = b.asm();
        a.set_label(&mut skip).unwrap();
        a.zero_bytes().unwrap();
    }

    /// The call-out for the access at the address in `t` (of `size` bytes, a write or not),
    /// unless its granules' cache words say this thread already made it in its epoch
    /// (`State::cache`): one word for an access within a granule, each of its granules' for
    /// an aligned 16- or 32-byte one (a vector move of a structure: sort's 32-byte lines).
    fn cached_callout(&mut self, b: &mut Inline, arg: u64, (t, u): (AsmRegister64, AsmRegister64), size: u64, write: bool, site: u32) {
        b.clobber_flags();
        let (v, w) = (b.scratch(), b.scratch());
        let records = self.state.detector.records().expect("a run's detector keeps records");
        let table = records.delta_table_addr() as i32;
        let (epoch, address) = (tool_area(self.state.epoch_word), tool_area(self.state.addr_word));
        let a = b.asm();
        let (mut slow, mut stored, mut done) = (a.create_label(), a.create_label(), a.create_label());
        // Where a granule is new to this thread's epoch: the inline record (`record`), else
        // the call-outs.
        let inline_record = self.threaded && site < hb::SITE_LIMIT;
        let (mut fresh, mut refresh) = if inline_record { (a.create_label(), a.create_label()) } else { (slow, slow) };
        let whole = size > 8 && size <= MAX_CACHED && size.is_multiple_of(8);
        if whole {
            // Aligned, and within one slice of records (the granules' records side by side).
            a.test(t, 7).unwrap();
            a.jne(slow).unwrap();
            a.lea(v, qword_ptr(t + (size - 1) as i32)).unwrap();
            a.xor(v, t).unwrap();
            a.shr(v, crate::shadow::memory::SLICE_BITS).unwrap();
            a.jne(slow).unwrap();
        }
        owned::record_address(a, t, u, table);
        if whole {
            // Each granule's word: this thread's epoch, and every byte covered (written ones
            // for a write, either for a read).
            for k in 0..(size / 8) as i32 {
                word_of_this_epoch(a, (u, v, w), 32 * k, epoch, fresh);
                a.mov(w, v).unwrap();
                a.shr(w, 8).unwrap();
                if !write {
                    a.or(w, v).unwrap();
                }
                a.not(w).unwrap();
                a.test(w, 0xff).unwrap();
                a.jne(fresh).unwrap();
            }
            a.jmp(done).unwrap();
        } else if size > 8 {
            // (Wider ones of other sizes, an x87 `tbyte`: the call-outs.)
            a.jmp(slow).unwrap();
        } else {
            word_of_this_epoch(a, (u, v, w), 0, epoch, fresh);
            // w = the access's bytes in the granule (past bit 7 if it runs into the next one).
            a.mov(u, t).unwrap();
            a.and(u, 7).unwrap();
            a.mov(w, (1u64 << size.clamp(1, 8)) - 1).unwrap();
            a.shlx(w, w, u).unwrap();
            // u = the bytes that cover it: written ones for a write, either for a read.
            a.mov(u, v).unwrap();
            a.shr(u, 8).unwrap();
            if !write {
                a.or(u, v).unwrap();
            }
            a.and(u, 0xff).unwrap();
            a.andn(w, u, w).unwrap();
            a.je(done).unwrap();
            if inline_record {
                // (New bytes in this epoch: u is the record again first.)
                a.jmp(refresh).unwrap();
            }
        }
        a.set_label(&mut slow).unwrap();
        a.mov(qword_ptr(address).gs(), t).unwrap();
        a.set_label(&mut stored).unwrap();
        self.light_then_full(b, (access_light, access), arg, t, done);
        if inline_record {
            b.asm().jmp(done).unwrap();
            let emit = record::Emit {
                record: u,
                temps: [v, w],
                epoch: tool_area(self.state.epoch_word),
                known: tool_area(self.state.known_word),
                covered: records.covered_table_addr(),
                filter: self.state.filter.as_ptr() as u64,
                filter_mask: (FILTER_BITS - 1) as i32,
            };
            let a = b.asm();
            if !whole {
                a.set_label(&mut refresh).unwrap();
                owned::record_address(a, t, u, table);
            }
            a.set_label(&mut fresh).unwrap();
            // (The address kept for the call-outs: the inline record clobbers it.)
            a.mov(qword_ptr(address).gs(), t).unwrap();
            if whole {
                emit.whole(a, t, ((size / 8) as i32, write, site), (stored, done));
            } else {
                emit.within(a, t, (size.clamp(1, 8), write, site), (stored, done));
            }
        }
        let a = b.asm();
        a.set_label(&mut done).unwrap();
        a.zero_bytes().unwrap();
    }

    /// An atomic read-modify-write at the address in `t` (of `size` bytes): inline where this
    /// thread owns its location (`owned`), else the call-outs.
    fn owned_rmw(&mut self, b: &mut Inline, arg: u64, (t, u): (AsmRegister64, AsmRegister64), size: u64) {
        let records = self.state.detector.records().expect("a run's detector keeps records");
        let layout = owned::Layout { table: records.delta_table_addr() as i32, epoch_word: self.state.epoch_word, user_word: hb::USER_WORD as i32 };
        let a = b.asm();
        let (mut slow, mut done) = (a.create_label(), a.create_label());
        owned::emit(b, &layout, &self.state.pending, (t, u), size, arg, (slow, done));
        let a = b.asm();
        a.set_label(&mut slow).unwrap();
        a.mov(qword_ptr(tool_area(self.state.addr_word)).gs(), t).unwrap();
        self.light_then_full(b, (rmw_light, access), arg, t, done);
        let a = b.asm();
        a.set_label(&mut done).unwrap();
        a.zero_bytes().unwrap();
    }

    /// The light call-out `light` for the access (its address in the tool area already), then,
    /// if it set the slow word, the full one (`full`); on to `done` otherwise. (The flags are
    /// clobbered; `t` is a borrowed register.)
    fn light_then_full(&self, b: &mut Inline, (light, full): (Callout, Callout), arg: u64, t: AsmRegister64, done: CodeLabel) {
        b.callout_light(light, arg, t);
        let a = b.asm();
        a.cmp(qword_ptr(tool_area(self.state.slow_word)).gs(), 0).unwrap();
        a.je(done).unwrap();
        b.callout(full, arg, t);
    }

    /// `light_then_full`, on to the code after it either way.
    fn light_or_full(&self, b: &mut Inline, callouts: (Callout, Callout), arg: u64, t: AsmRegister64) {
        b.clobber_flags();
        let mut done = b.asm().create_label();
        self.light_then_full(b, callouts, arg, t, done);
        let a = b.asm();
        a.set_label(&mut done).unwrap();
        a.zero_bytes().unwrap();
    }
}

impl ToolRun for RaceRun {
    fn retranslate_requested(&mut self) -> Option<(u64, u64)> {
        std::mem::take(&mut self.retranslate).then_some((0, u64::MAX))
    }

    fn attach(&mut self, sched: &'static crate::kernel::sched::Scheduler) {
        if let Some(w) = self.state.watch.as_mut() {
            w.attach(sched);
        }
    }

    fn start(&mut self, ctx: &mut ThreadContext, mem: &GuestMemory) {
        ctx.tool_area[self.state.tid_word / 8] = 0;
        ctx.tool_area[self.state.epoch_word / 8] = self.state.epoch(0);
        self.state.stack_of = vec![ctx.gpr[4]];
        for (s, e) in crate::shadow::initial_ranges(ctx.gpr[4], mem) {
            self.state.detector.cover(s, e);
        }
        let (path, (mapped, end)) = crate::tools::main_module(mem, &self.program);
        self.main_range = (mapped, end);
        self.main_path = path;
        // The program's declared atomics order as those a lock-prefixed instruction touched.
        for (addr, _) in super::atomics::declared(&self.main_path, mapped) {
            self.state.atomic.insert(addr);
            self.state.mark(addr);
            self.state.forget(addr);
        }
        self.atomic_code = super::atomics::code(&self.main_path, mapped);
        self.c_atomics = super::atomics::c_accesses(&self.main_path, mapped);
        self.callees = crate::report::symbols::Callees::of(&self.main_path, mem);
        self.note_runtime(mem, 0, u64::MAX >> 16);
    }

    fn thread_start(&mut self, child: &mut ThreadContext) {
        self.retranslate |= !std::mem::replace(&mut self.threaded, true);
        self.state.settle();
        let (clock, exit_word) = self.creating.take().unwrap_or_else(|| (self.state.detector.fork(0), 0));
        let t = self.state.detector.adopt(clock);
        child.tool_area[self.state.tid_word / 8] = t as u64;
        child.tool_area[self.state.epoch_word / 8] = self.state.epoch(t);
        self.state.publish(t, &mut child.tool_area);
        if self.exit_word.len() <= t {
            self.exit_word.resize(t + 1, 0);
        }
        self.exit_word[t] = exit_word;
        if self.state.stack_of.len() <= t {
            self.state.stack_of.resize(t + 1, 0);
        }
        self.state.stack_of[t] = child.gpr[4];
    }

    fn syscall_pre(&mut self, ctx: &mut ThreadContext, nr: u64, args: &[u64; 6]) -> Option<i64> {
        self.state.settle();
        let t = self.tid(ctx);
        if remaps(nr) {
            // (Before as well as after: another thread may run while this one is in the call.)
            self.state.readable.forget();
        }
        match nr as i64 {
            libc::SYS_clone => {
                // The creator's past orders the thread's future; the creator moves on to a new
                // epoch now.
                let clears = args[0] & libc::CLONE_CHILD_CLEARTID as u64 != 0;
                self.creating = Some((self.state.detector.fork(t), if clears { args[3] } else { 0 }));
                self.state.synced(t, ctx.rip.wrapping_sub(2));
            }
            libc::SYS_exit => {
                if let Some(&w) = self.exit_word.get(t).filter(|&&w| w != 0) {
                    self.state.exit_words.insert(w);
                    self.state.mark(w);
                    self.state.release_at(t, w);
                }
            }
            libc::SYS_futex if is_wake(args[1]) => {
                self.state.atomic_word(args[0]);
                self.state.release_at(t, args[0]);
                self.state.synced(t, ctx.rip.wrapping_sub(2));
            }
            libc::SYS_futex => self.state.atomic_word(args[0]),
            libc::SYS_kill | libc::SYS_tkill | libc::SYS_tgkill | libc::SYS_rt_sigqueueinfo | libc::SYS_rt_tgsigqueueinfo => {
                // A signal sent orders the sender's past before its handler (`signal_handler`).
                let sig = if matches!(nr as i64, libc::SYS_tgkill | libc::SYS_rt_tgsigqueueinfo) { args[2] } else { args[1] };
                if (1..65).contains(&sig) {
                    self.state.detector.release(t, signal_object(sig as i32));
                    self.state.synced(t, ctx.rip.wrapping_sub(2));
                }
            }
            _ => {}
        }
        ctx.tool_area[self.state.epoch_word / 8] = self.state.epoch(t);
        None
    }

    fn signal_handler(&mut self, ctx: &mut ThreadContext, sig: i32) {
        self.state.settle();
        let t = self.tid(ctx);
        self.state.detector.acquire(t, signal_object(sig));
        ctx.tool_area[self.state.epoch_word / 8] = self.state.epoch(t);
    }

    fn syscall_post(&mut self, ctx: &mut ThreadContext, nr: u64, args: &[u64; 6], ret: i64, mem: &GuestMemory) {
        self.state.settle();
        if remaps(nr) {
            self.state.readable.forget();
        }
        if let Some((start, end)) = crate::shadow::mapped_by(nr as i64, args, ret, mem) {
            self.state.detector.cover(start, end);
        }
        if nr as i64 == libc::SYS_mmap && ret > 0 && args[2] as i32 & libc::PROT_EXEC != 0 {
            self.note_runtime(mem, ret as u64, ret as u64 + args[1]);
        }
        if nr as i64 == libc::SYS_futex && !is_wake(args[1]) {
            let t = self.tid(ctx);
            self.state.detector.acquire(t, args[0]);
            self.state.synced(t, ctx.rip.wrapping_sub(2));
        }
    }

    fn fini(&mut self, report: &mut Reporter, mem: &GuestMemory) {
        self.state.settle();
        if let Some(w) = self.state.watch.as_mut() {
            w.finish();
            let mut lines = crate::report::lines::SourceLines::default();
            for s in &mut w.seen {
                if let Some((&pc, returns)) = s.first_stack.split_first() {
                    s.first_frames = scanned_stack(&mut lines, pc, returns, mem);
                }
            }
            let seen = serde_json::to_string(&w.seen).unwrap_or_default();
            self.write_out(report, &seen);
            return;
        }
        let (model, races) = self.model(mem);
        if self.out.race_out.is_some() {
            let found = serde_json::to_string(&harm::Found { report: model, races }).unwrap_or_default();
            self.write_out(report, &found);
            return;
        }
        crate::tools::output::emit(&model, RULE, &self.out.report, |line| report.line(line));
        report.flush();
        self.found = !model.findings.is_empty();
    }

    fn exit_code(&self) -> Option<i32> {
        self.found.then_some(self.out.error_exitcode)
    }
}

impl RaceRun {
    /// What a search's run writes back for it (`--race-out`).
    fn write_out(&self, report: &mut Reporter, text: &str) {
        let Some(path) = &self.out.race_out else { return };
        if let Err(e) = std::fs::write(path, text) {
            report.error(&format!("cannot write '{}': {e}", path.display()));
        }
    }
}

impl RaceRun {
    /// The races as the one report model, and each finding's race as the harm runs name it.
    fn model(&self, mem: &GuestMemory) -> (Report, Vec<harm::Key>) {
        let races = &self.state.detector.races;
        // The two accesses' places, then the two threads' last synchronizations', per race.
        let noted = &self.state.noted;
        let mut pcs: Vec<u64> = races.iter().flat_map(|r| [self.sites[r.earlier.site as usize].pc, self.sites[r.later.site as usize].pc]).collect();
        pcs.extend(noted.iter().flat_map(|n| n.syncs).map(|pc| pc.max(1)));
        let mut lines = crate::report::lines::SourceLines::default();
        let places = lines.describe(&pcs, mem);
        // Each race's later access with the callers a scan of its thread's stack found.
        let stacks: Vec<Vec<String>> =
            races.iter().zip(noted).map(|(r, n)| scanned_stack(&mut lines, self.sites[r.later.site as usize].pc, &n.stack, mem)).collect();
        let sync_of = |k: usize, which: usize, tid: hb::Tid| match noted.get(k).map(|n| n.syncs[which]) {
            Some(pc) if pc != 0 => format!("thread {tid} at {}", places[2 * races.len() + 2 * k + which]),
            _ => format!("thread {tid}: none since it started"),
        };
        let objects = crate::report::symbols::named_objects(&self.main_path, mem);
        let what = |a: &hb::Access| {
            let s = &self.sites[a.site as usize];
            let kind = if s.write { "write" } else { "read" };
            match s.call {
                Some((f, _)) => format!("{kind} by `{f}` by thread {}", a.tid),
                None => format!("{kind} of {} bytes by thread {}", s.size, a.tid),
            }
        };
        // Once per pair of lines (two instructions of one line are one place to the user).
        let mut lines_seen = HashSet::new();
        let mut suppressed = 0;
        let kept: Vec<(usize, &hb::Race)> = races
            .iter()
            .enumerate()
            .filter(|(k, _)| {
                let (e, l) = (&places[2 * k], &places[2 * k + 1]);
                lines_seen.insert(if e <= l { (e, l) } else { (l, e) })
            })
            .filter(|(k, _)| {
                let known = self.out.suppressions.matches(&places[2 * k]) || self.out.suppressions.matches(&places[2 * k + 1]);
                suppressed += usize::from(known);
                !known
            })
            .collect();
        let side = |a: &hb::Access| {
            let s = &self.sites[a.site as usize];
            harm::Side { tid: a.tid, epoch: a.clock, pc: s.pc, size: s.size, write: s.write, reads: s.reads }
        };
        let keys = kept.iter().map(|(_, r)| harm::Key { addr: r.addr, first: side(&r.earlier), second: side(&r.later) }).collect();
        let findings: Vec<Finding> = kept
            .into_iter()
            .map(|(k, r)| {
                let (earlier, later) = (&places[2 * k], &places[2 * k + 1]);
                let (access, earlier_access) = (what(&r.later), what(&r.earlier));
                Finding {
                    kind: "data race".into(),
                    place: later.clone(),
                    message: format!("data race at {:#x}: {access} at {later}, and an earlier {earlier_access} at {earlier}", r.addr),
                    pc: format!("{:#x}", self.sites[r.later.site as usize].pc),
                    thread: r.later.tid as u64,
                    address: Some(format!("{:#x}", r.addr)),
                    access: Some(access),
                    earlier_access: Some(earlier_access),
                    earlier_place: Some(earlier.clone()),
                    earlier_pc: Some(format!("{:#x}", self.sites[r.earlier.site as usize].pc)),
                    earlier_thread: Some(r.earlier.tid as u64),
                    object: Some(object_of(r.addr, &objects, mem, &self.state.stack_of, noted.get(k).and_then(|n| n.block.as_ref()))),
                    syncs: Some(format!("{}; {}", sync_of(k, 0, r.earlier.tid), sync_of(k, 1, r.later.tid))),
                    frames: stacks.get(k).cloned().unwrap_or_default(),
                    ..Finding::default()
                }
            })
            .collect();
        let report = Report {
            tool: "race".into(),
            result: if findings.is_empty() { "none" } else { "found" }.into(),
            schema: VERSION,
            command: self.out.command.clone(),
            summary: Some(match self.state.detector.threads() {
                // Nothing to race with: said so rather than "0 data races".
                1 => "0 data races: the program ran one thread only".into(),
                n if suppressed > 0 => format!("{} data races ({n} threads; {suppressed} more suppressed by --suppressions)", findings.len()),
                n => format!("{} data races ({n} threads)", findings.len()),
            }),
            findings,
            runs: 1,
            ..Report::default()
        };
        (report, keys)
    }
}

/// What `addr` belongs to: a global of the program (by its symbol), the heap, a thread's stack
/// (`stacks`: each thread's stack pointer when it started), a mapping.
fn object_of(addr: u64, objects: &[(u64, u64, String)], mem: &GuestMemory, stacks: &[u64], block: Option<&(u64, u64, Vec<u64>)>) -> String {
    if let Some((s, e, name)) = objects.iter().find(|o| (o.0..o.1).contains(&addr)) {
        let at = if addr > *s { format!(" at offset {}", addr - s) } else { String::new() };
        return format!("in `{name}`{at}, a global of {} bytes", e - s);
    }
    if let Some((start, size, stack)) = block {
        // (Each return address said at its call.)
        let calls: Vec<u64> = code_only(stack, mem).iter().map(|ret| ret - 1).collect();
        let places = crate::report::lines::SourceLines::default().describe(&calls, mem);
        let at = if places.is_empty() { String::new() } else { format!(", allocated at {}", places.join(", called from ")) };
        return format!("in a heap block of {size} bytes at {start:#x}, at offset {}{at}", addr - start);
    }
    if (mem.brk_start..mem.brk_cur).contains(&addr) {
        return "in the heap".into();
    }
    let region = mem.region_at(addr);
    let start = region.map(|(s, _)| s);
    if let Some(t) = stacks.iter().position(|&sp| sp != 0 && start.is_some() && mem.region_at(sp).map(|(s, _)| s) == start) {
        return format!("on thread {t}'s stack");
    }
    match region.and_then(|(_, r)| r.name.clone()) {
        Some(name) => format!("in {name}"),
        None => "in an anonymous mapping (a thread's malloc arena or a large heap block)".into(),
    }
}

/// The call stack of an access at `pc` as the report says it, its callers the `returns` a scan
/// of its thread's stack found.
fn scanned_stack(lines: &mut crate::report::lines::SourceLines, pc: u64, returns: &[u64], mem: &GuestMemory) -> Vec<String> {
    lines.stack(&[&[pc][..], &code_only(returns, mem)].concat(), mem)
}

/// The return addresses into code (a stack scan finds data too).
fn code_only(returns: &[u64], mem: &GuestMemory) -> Vec<u64> {
    returns.iter().copied().filter(|&pc| mem.region_at(pc).is_some_and(|(_, r)| r.prot & libc::PROT_EXEC != 0)).collect()
}

/// Callers kept for a heap block's allocation (the allocator's caller first).
const ALLOC_FRAMES: usize = 3;

/// Callers shown under a race's later access.
const STACK_FRAMES: usize = 6;

/// Up to `n` return addresses on the stack from `sp` up to `top` (`tools::return_addresses`).
fn return_addresses(sp: u64, top: u64, n: usize) -> Vec<u64> {
    crate::tools::return_addresses(sp, top).take(n).collect()
}

/// Whether system call `nr` may change the guest's mappings (so the pages `calls` reads strings
/// from in place are forgotten).
fn remaps(nr: u64) -> bool {
    let calls = [
        libc::SYS_mmap,
        libc::SYS_munmap,
        libc::SYS_mprotect,
        libc::SYS_pkey_mprotect,
        libc::SYS_mremap,
        libc::SYS_brk,
        libc::SYS_madvise,
        libc::SYS_shmat,
        libc::SYS_shmdt,
    ];
    calls.contains(&(nr as i64))
}

/// Whether a futex operation wakes (or requeues) waiters rather than waiting.
fn is_wake(op: u64) -> bool {
    // FUTEX_WAKE, FUTEX_REQUEUE, FUTEX_CMP_REQUEUE, FUTEX_WAKE_OP, FUTEX_WAKE_BITSET, ...
    matches!(op & 0x7f, 1 | 3 | 4 | 5 | 10 | 12)
}

#[cfg(test)]
mod tests {
    /// The functions the race tool runs in light call-outs keep to what those preserve (no
    /// wide vector registers, thread-local storage, C library or allocation, in them or what
    /// they call): `tools::light_check`.
    #[test]
    fn the_light_call_outs_keep_their_contract() {
        let light = [
            ("access_light", super::access_light as *const ()),
            ("rmw_light", super::rmw_light as *const ()),
            ("runtime_light", super::runtime_light as *const ()),
            ("memory_call_light", super::memory_call_light as *const ()),
        ];
        for (name, f) in light.map(|(n, f)| (n, f as usize)) {
            let breaches = crate::tools::light_check::breaches(f);
            assert!(breaches.is_empty(), "{name}:\n{}", breaches.join("\n"));
        }
    }
}
