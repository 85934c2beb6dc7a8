//! Instances that survive drift between runs (issue 21, item 6). A point names the k-th
//! execution of its instruction by its thread, and a library's instruction the k-th call its
//! thread made at the program's call site it runs under, not the thread's block count: a run
//! that does more elsewhere first (lists a directory an earlier run left a file in, retries,
//! waits longer) still names the same instances, as the switch tool names branches.
//!
//! Firing. Each instruction of the program a plan names, and each call site of the program,
//! counts its executions in a table of the thread (`area::ORDS`, indexed by an [`Anchors`]
//! id); a call stores its site's count in `area::CALL_ORD` beside its return address in
//! `area::CALL_SITE`, which a library's point compares.
//!
//! Naming. Origins keep the block instance (the "most recent source" rule needs one clock per
//! thread), so a traced run turns a definition's block instance into its ordinal at the
//! failure: each basic block of the program (a block's start, and each fall-through of a
//! conditional branch it goes on past: a [`Segments`] id) counts its entries in a table of the
//! thread and keeps the block instances of its last [`RING`] entries. An instruction ran as
//! often as the segments that hold it were entered, and the entries after the definition's are
//! all in the rings if its own is: the ordinal is exact, or unknown (the point then keeps its
//! block instance).

use super::area;
use crate::shadow::origin;
use crate::tools::address_hash::Fast;
use rtgrind_jit::instrument::code_asm::*;
use rtgrind_jit::instrument::{tool_area, Inline};
use rtgrind_jit::ThreadContext;
use std::collections::HashMap;

/// Counters in a thread's table of executions (planned instructions and call sites).
const ANCHORS: usize = 1 << 20;

/// Ids of what counts its executions: the program's call sites (by return address, counted
/// up from 0 as they are translated) and the plan's instructions of the program (counted down
/// from the table's top), so a call site's id, and the code that counts it, is the same
/// whatever the plan (what re-using a translation across a search's runs needs).
pub struct Anchors {
    pcs: HashMap<u64, u32, Fast>,
    calls: HashMap<u64, u32, Fast>,
    /// The next call site's id.
    next: u32,
    /// The lowest planned instruction's id (call sites stay below it).
    low: u32,
}

impl Anchors {
    pub fn new(planned: impl IntoIterator<Item = u64>) -> Anchors {
        let mut a = Anchors { pcs: HashMap::default(), calls: HashMap::default(), next: 0, low: ANCHORS as u32 };
        for pc in planned {
            if !a.pcs.contains_key(&pc) && a.low > 0 {
                a.low -= 1;
                a.pcs.insert(pc, a.low);
            }
        }
        a
    }

    /// The id of a planned instruction.
    pub fn pc(&self, pc: u64) -> Option<u32> {
        self.pcs.get(&pc).copied()
    }

    /// The id of the call site returning to `ret` (None once the table is full).
    pub fn call(&mut self, ret: u64) -> Option<u32> {
        if let Some(&id) = self.calls.get(&ret) {
            return Some(id);
        }
        if self.next >= self.low {
            return None;
        }
        self.calls.insert(ret, self.next);
        self.next += 1;
        Some(self.next - 1)
    }
}

/// A thread's table of executions, zeroed (pages untouched until counted in).
pub fn init_counts(ctx: &mut ThreadContext) {
    let table: &'static mut [u64] = Box::leak(vec![0u64; ANCHORS].into_boxed_slice());
    *crate::shadow::word(ctx, area::ORDS) = table.as_mut_ptr() as u64;
}

/// Code that counts one more execution of `id`, flag-free: `count` holds the new count.
pub fn count(b: &mut Inline, id: u32, table: AsmRegister64, count: AsmRegister64) {
    let at = 8 * id as i32;
    let a = b.asm();
    a.mov(table, qword_ptr(tool_area(area::ORDS)).gs()).unwrap();
    a.mov(count, qword_ptr(table + at)).unwrap();
    a.lea(count, qword_ptr(count + 1)).unwrap();
    a.mov(qword_ptr(table + at), count).unwrap();
}

/// `count` of the call site returning to `ret`, `id` in this run: the id is relocated
/// (`records::CALL_SITE`), since call sites get theirs in translation order.
pub fn count_call(b: &mut Inline, ret: u64, id: u32, table: AsmRegister64, count: AsmRegister64) {
    b.asm().mov(table, qword_ptr(tool_area(area::ORDS)).gs()).unwrap();
    b.mov_id(count, super::records::CALL_SITE, ret, 8 * id as u64);
    let a = b.asm();
    a.lea(table, qword_ptr(table + count)).unwrap();
    a.mov(count, qword_ptr(table)).unwrap();
    a.lea(count, qword_ptr(count + 1)).unwrap();
    a.mov(qword_ptr(table), count).unwrap();
}

fn counter(ctx: &mut ThreadContext, id: u32) -> &mut u64 {
    let table = *crate::shadow::word(ctx, area::ORDS) as *mut u64;
    // SAFETY: the thread's table (`init_counts`) is ANCHORS words long and ids are below that.
    unsafe { &mut *table.add(id as usize) }
}

/// How often the thread executed `id` so far.
pub fn executions(ctx: &mut ThreadContext, id: u32) -> u64 {
    *counter(ctx, id)
}

/// Takes back one execution of `id` (an instruction the thread runs again from its start).
pub fn uncount(ctx: &mut ThreadContext, id: u32) {
    let c = counter(ctx, id);
    *c = c.saturating_sub(1);
}

/// Block instances kept per segment.
pub const RING: usize = 256;
/// A segment's record: its entry count, then the ring (entry n at slot `n % RING`).
const RECORD_WORDS: usize = 1 + RING;
/// Segments of the program a thread's table has room for (its displacement stays in 31 bits).
const SEGMENTS: usize = 1 << 19;
/// Ring slots a segment keeps together (a tile): a thread's table is the counts (a word per
/// segment), then RING / TILE tiles of TILE slots per segment, so slot `s` of segment `id` is
/// in tile `s / TILE` at `id * TILE + s % TILE`. A segment entered a few times touches one
/// line that 15 neighbours (segments translated about when it was) share a page with; a hot
/// one writes 8 entries to a line and a new page every TILE entries. Rows of a word per
/// segment (slot s in row s) had shared pages better but sent every entry of a hot segment to
/// another page: a quarter of a traced `python3 -c pass`'s time in its translated code was
/// that store's TLB misses; a record of 2 KiB per segment cost most segments a page of their
/// own, zeroed at its first entry.
const TILE: usize = 32;
const COUNTS_BYTES: usize = SEGMENTS * 8;
const TILE_BYTES: usize = SEGMENTS * TILE * 8;
const _: () = assert!(RING.is_multiple_of(TILE) && (COUNTS_BYTES + TILE_BYTES) < 1 << 31);
/// `pdep` of an entry count by this gives its ring slot's offset in the tiles (`n % RING`:
/// the low bits to the slot in the tile, the next to the tile).
pub const SLOT_BITS: u64 = ((TILE as u64 - 1) << 3) | (((RING / TILE) as u64 - 1) * TILE_BYTES as u64);
const _: () = assert!(TILE.is_power_of_two() && TILE_BYTES.is_power_of_two() && (RING / TILE).is_power_of_two());

/// The offset of word `k` of segment `id`'s record (0: its entry count, 1 + s: ring slot s)
/// from its thread's table.
fn record_offset(id: u32, k: usize) -> usize {
    match k {
        0 => id as usize * 8,
        _ => COUNTS_BYTES + (k - 1) / TILE * TILE_BYTES + (id as usize * TILE + (k - 1) % TILE) * 8,
    }
}

/// The program's basic blocks as the translations enter them (see the module's comment): an id
/// per start address, and the instructions each holds. Kept for every segment translated, so
/// cheap to add to: one flat list of instructions, indexed by pc only when asked (`holding`).
#[derive(Default)]
pub struct Segments {
    ids: HashMap<u64, u32, Fast>,
    /// Each segment's start, by id.
    starts: Vec<u64>,
    /// Each segment's instructions, as first translated: a range of `pcs`.
    held: Vec<(u32, u32)>,
    pcs: Vec<u64>,
    /// Segments translated again with other instructions (a block cut short): their counts
    /// say nothing exact.
    unsure: Vec<bool>,
    /// The segments holding each instruction, made from `held` when first asked.
    of_pc: std::cell::OnceCell<HashMap<u64, Vec<u32>, Fast>>,
    /// The segment being translated, and the instructions seen in it so far.
    current: Option<u32>,
    seen: Vec<u64>,
}

impl Segments {
    /// A segment starts at `pc` in the translation (closing the one before): its id.
    pub fn start(&mut self, pc: u64) -> Option<u32> {
        self.close();
        let id = match self.ids.get(&pc) {
            Some(&id) => id,
            None if self.held.len() < SEGMENTS => {
                let id = self.held.len() as u32;
                self.ids.insert(pc, id);
                self.starts.push(pc);
                self.held.push((0, 0));
                self.unsure.push(false);
                id
            }
            None => return None,
        };
        self.current = Some(id);
        Some(id)
    }

    /// An instruction of the segment being translated.
    pub fn insn(&mut self, pc: u64) {
        if self.current.is_some() {
            self.seen.push(pc);
        }
    }

    /// The segment being translated ends (a block's end, or outside the program).
    pub fn close(&mut self) {
        let Some(id) = self.current.take() else { return };
        let i = id as usize;
        let (from, to) = self.held[i];
        if from == to {
            self.held[i] = (self.pcs.len() as u32, (self.pcs.len() + self.seen.len()) as u32);
            self.pcs.extend_from_slice(&self.seen);
            self.of_pc.take();
        } else if self.pcs[from as usize..to as usize] != self.seen[..] {
            self.unsure[i] = true;
        }
        self.seen.clear();
    }

    /// The segments holding `pc`, if their counts are exact.
    fn holding(&self, pc: u64) -> Option<&[u32]> {
        let of_pc = self.of_pc.get_or_init(|| {
            let mut m: HashMap<u64, Vec<u32>, Fast> = HashMap::default();
            for (id, &(from, to)) in self.held.iter().enumerate() {
                for &pc in &self.pcs[from as usize..to as usize] {
                    m.entry(pc).or_default().push(id as u32);
                }
            }
            m
        });
        let ids = of_pc.get(&pc)?;
        ids.iter().all(|&id| !self.unsure[id as usize]).then_some(ids.as_slice())
    }
}

/// A thread's table of segment records (address space reserved, pages touched as entered),
/// far from the guest's code and libraries: the code cache must find room within reach of them.
pub fn init_rings(ctx: &mut ThreadContext) -> std::io::Result<u64> {
    let bytes = COUNTS_BYTES + RING / TILE * TILE_BYTES;
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED_NOREPLACE;
    // From 112 TiB up (the shadow's slices end below, libraries and stacks start above).
    for i in 0..4096u64 {
        let at = (0x70u64 << 40) + i * (bytes as u64).next_multiple_of(1 << 30);
        // SAFETY: a fresh anonymous private mapping (MAP_FIXED_NOREPLACE never replaces one);
        // it lives as long as the process (threads' contexts point into it).
        let p = unsafe { libc::mmap(at as *mut libc::c_void, bytes, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0) };
        if p != libc::MAP_FAILED {
            *crate::shadow::word(ctx, area::RINGS) = p as u64;
            *crate::shadow::word(ctx, area::RING_SLOTS) = SLOT_BITS;
            return Ok(p as u64);
        }
    }
    Err(std::io::Error::last_os_error())
}

/// Code at a segment's entry: one more entry, and the thread's block instance in its ring.
/// Flag-free.
pub fn record(b: &mut Inline, id: u32) {
    let (rec, n) = (b.scratch(), b.scratch());
    let at = record_offset(id, 0) as i32;
    let a = b.asm();
    a.mov(rec, qword_ptr(tool_area(area::RINGS)).gs()).unwrap();
    a.mov(n, qword_ptr(rec + at)).unwrap();
    a.lea(n, qword_ptr(n + 1)).unwrap();
    a.mov(qword_ptr(rec + at), n).unwrap();
    // Slot n % RING's offset from its segment's first slot.
    a.pdep(n, n, qword_ptr(tool_area(area::RING_SLOTS)).gs()).unwrap();
    a.lea(rec, qword_ptr(rec + n)).unwrap();
    b.counter_to_memory(qword_ptr(rec + record_offset(id, 1) as i32));
    b.release_scratch();
}

/// Word `k` of segment `id`'s record (0: its entry count, 1 + s: ring slot s) in the thread's
/// table at `table` (`init_rings`).
pub fn table_word(table: u64, id: u32, k: usize) -> u64 {
    assert!((id as usize) < SEGMENTS && k < RECORD_WORDS);
    // SAFETY: `table` is a thread's table, its counts and RING / TILE tiles (asserted in
    // bounds above); its thread is not running (the failure's analysis or its end).
    unsafe { *((table as usize + record_offset(id, k)) as *const u64) }
}

/// The entries of one segment (by one thread) that are no executions of their own (see
/// `State::continued`): how many, and the block instances of the most recent. Only those the
/// segment's ring still keeps matter to `ordinal`, and they are among the last `RING` entries
/// of the segment; `KEPT` of them are kept (a guard in a hot loop goes on after each event: a
/// set of all 20 million once took most of a suppression run's time and a gigabyte).
#[derive(Clone, Debug, Default)]
pub struct Continued {
    pub count: u64,
    pub recent: std::collections::VecDeque<u64>,
}

impl Continued {
    const KEPT: usize = 4 * RING;

    /// One more entry, at block instance `instance`, unless noted at that instance already (a
    /// thread's instances never go down, so that is the last one noted).
    pub fn note(&mut self, instance: u64) {
        if self.recent.back() == Some(&instance) {
            return;
        }
        self.count += 1;
        if self.recent.len() == Self::KEPT {
            self.recent.pop_front();
        }
        self.recent.push_back(instance);
    }
}

/// The ordinal of the execution of `pc` at block instance `instance` by the thread whose
/// records `word` reads (word k of segment id's, as `table_word`): how many times the thread
/// ran `pc` up to then. None if a segment holding it no longer keeps that instance (or never
/// did). `continued`: the thread's entries of segments that are no executions of their own,
/// looked up by segment start (see `State::continued`).
pub fn ordinal<'c>(
    segments: &Segments,
    word: impl Fn(u32, usize) -> u64,
    pc: u64,
    instance: u64,
    continued: impl Fn(u64) -> Option<&'c Continued>,
) -> Option<u64> {
    let ids = segments.holding(pc)?;
    let (mut total, mut found) = (0u64, false);
    for &id in ids {
        let start = segments.starts[id as usize];
        let rec = |k: usize| word(id, k);
        let n = rec(0);
        let kept = n.min(RING as u64);
        let mut after = 0;
        // Entries that are no executions of their own: the count goes back by all of them
        // (those the ring no longer keeps came before the definition, see below).
        let went_on = continued(start);
        total = total.wrapping_sub(went_on.map_or(0, |c| c.count));
        for j in n + 1 - kept..=n {
            let inst = origin::instance(rec(1 + (j % RING as u64) as usize));
            // (`recent` ascends: a thread's instances never go down.)
            if went_on.is_some_and(|c| c.recent.binary_search(&inst).is_ok()) {
                continue;
            }
            if inst > instance {
                after += 1;
            } else {
                found |= inst == instance;
            }
        }
        if n > kept && origin::instance(rec(1 + ((n + 1 - kept) % RING as u64) as usize)) > instance {
            // Entries after the definition's fell out of the ring: unknown.
            return None;
        }
        total = total.wrapping_add(n - after);
    }
    // (An execution enters one segment holding `pc`: a block that goes on with one is noted
    // as continued and counted back above.)
    found.then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ordinals from segment rings: a segment entered 300 times (block instances 10, 20, ...),
    /// twice skipped into mid-way (the blocks the run went on in hold the second instruction
    /// too, at the same instances, as no execution of their own); the 256 kept entries tell
    /// the recent executions exactly, and older ones are unknown.
    #[test]
    fn executions_are_counted_from_the_rings_and_continuations_count_back() {
        let mut segments = Segments::default();
        for start in [0x1000, 0x1004] {
            segments.start(start);
            for pc in (start..0x1008).step_by(4) {
                segments.insn(pc);
            }
        }
        segments.close();
        let mut table = vec![0u64; 2 * RECORD_WORDS];
        let mut enter = |id: usize, instance: u64| {
            let rec = &mut table[id * RECORD_WORDS..(id + 1) * RECORD_WORDS];
            rec[0] += 1;
            rec[1 + (rec[0] % RING as u64) as usize] = origin::thread_bits(0) | instance << origin::INSTANCE_SHIFT;
        };
        let mut continued = std::collections::HashMap::<u64, Continued>::new();
        for e in 1..=300u64 {
            enter(0, 10 * e);
            if e == 5 || e == 290 {
                enter(1, 10 * e);
                continued.entry(0x1004).or_default().note(10 * e);
            }
        }
        let at = |pc: u64, instance: u64| ordinal(&segments, |id, k| table[id as usize * RECORD_WORDS + k], pc, instance, |start| continued.get(&start));
        assert_eq!(at(0x1004, 2950), Some(295));
        assert_eq!(at(0x1004, 2900), Some(290));
        assert_eq!(at(0x1000, 3000), Some(300));
        // Executions 1-44 fell out of the first segment's ring.
        assert_eq!(at(0x1004, 50), None);
        assert_eq!(at(0x1004, 450), Some(45));
        // An instance no execution had.
        assert_eq!(at(0x1000, 2955), None);
    }

    /// A segment gone on in at every entry keeps its count and only its most recent instances.
    #[test]
    fn continuations_keep_their_count_and_the_recent_instances() {
        let mut c = Continued::default();
        for e in 1..=10_000u64 {
            c.note(10 * e);
        }
        assert_eq!(c.count, 10_000);
        assert_eq!(c.recent.len(), Continued::KEPT);
        assert_eq!(c.recent.front(), Some(&(10 * (10_001 - Continued::KEPT as u64))));
        assert_eq!(c.recent.back(), Some(&100_000));
        // The same entry again (a second skip in the same execution) counts once.
        c.note(100_000);
        assert_eq!(c.count, 10_000);
    }

    /// The slot `record`'s code stores entry n at (a `pdep` of n by `SLOT_BITS`, from the
    /// segment's first slot) is the one `table_word` reads as slot n % RING.
    #[test]
    fn the_entry_code_and_the_reader_agree_on_slots() {
        let pdep = |mut x: u64, mut mask: u64| {
            let mut r = 0;
            while mask != 0 {
                let bit = mask & mask.wrapping_neg();
                if x & 1 != 0 {
                    r |= bit;
                }
                x >>= 1;
                mask &= mask - 1;
            }
            r
        };
        for id in [0u32, 1, 77, SEGMENTS as u32 - 1] {
            let mut seen = std::collections::HashSet::new();
            for n in 1..=3 * RING as u64 {
                let at = record_offset(id, 1) as u64 + pdep(n, SLOT_BITS);
                assert_eq!(at, record_offset(id, 1 + (n % RING as u64) as usize) as u64);
                seen.insert(at);
            }
            assert_eq!(seen.len(), RING);
        }
    }

    #[test]
    fn a_call_sites_id_does_not_depend_on_the_plan() {
        let (mut none, mut three) = (Anchors::new([]), Anchors::new([0x1000, 0x2000, 0x1000, 0x3000]));
        for ret in [0x1105, 0x1205, 0x1105, 0x1305] {
            assert_eq!(none.call(ret), three.call(ret));
        }
        let planned: Vec<u32> = [0x1000, 0x2000, 0x3000].iter().filter_map(|&pc| three.pc(pc)).collect();
        assert_eq!(planned.len(), 3);
        assert!(planned.iter().all(|id| *id as usize >= ANCHORS - 3 && three.calls.values().all(|c| c < id)));
    }
}
