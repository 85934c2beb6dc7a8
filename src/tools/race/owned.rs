//! Atomic read-modify-writes of a location one thread owns, in the code cache (issue 30): a
//! thread that made the last read-modify-write of a location, and has not ticked since, makes
//! the next one inline (the threaded kernel's `lock xadd` on its counter, 10 million of them,
//! nearly all by the thread that made the one before).
//!
//! Such a read-modify-write changes nothing the detector could tell from doing it later: the
//! acquire joins a clock the thread's already covers (the location's is the thread's own of
//! its last release there), the access finds no other thread's access on its bytes (the last
//! one took them all over, and any other access to the granule empties its marker), and the
//! release makes the location's clock the thread's. So the inline code only ticks the
//! thread's epoch (its tool-area word) and notes itself in one pending slot; the next call-out
//! or hook of any thread *settles* it (`RaceRun`'s `settle`): the detector's thread clock goes
//! to the epoch of the last inline one, which is then made there in full (acquire, access,
//! release and tick), as it would have been.
//!
//! The marker is the location's granule's same-epoch cache word (unused for atomic locations
//! otherwise): `OWNED | size << 51 | offset in the granule << 48 | tid << 32 | clock`, the epoch
//! the thread has after that read-modify-write's tick. Only the call-outs set it; any other
//! access to the granule (its cache word rewritten or emptied), a release there by another
//! path (a futex wake, an atomic store, an exit) and a `free` of it empty it.

use rtgrind_jit::instrument::code_asm::{qword_ptr, AsmRegister64, CodeAssembler, CodeLabel};
use rtgrind_jit::instrument::{tool_area, Inline};

/// A marker's flag (a tid of 32768 or more: none is).
const OWNED: u64 = 1 << 63;

/// The read-modify-write the inline code made last and no call-out has settled yet
/// (`epoch` 0: none). Read and written by translated code at its address.
#[repr(C)]
#[derive(Default)]
pub struct Pending {
    /// The thread's epoch word (`tid << 32 | clock`) when it made it, before its tick.
    pub epoch: u64,
    pub addr: u64,
    /// Its site (the call-outs' argument).
    pub site: u64,
}

/// The marker of a read-modify-write of `size` bytes at `addr` by the thread whose epoch word,
/// after its tick, is `epoch`; none for one over two granules (never inline).
pub fn marker(addr: u64, size: u64, epoch: u64) -> Option<u64> {
    ((addr & 7) + size <= 8).then_some(OWNED | size << 51 | (addr & 7) << 48 | epoch)
}

/// Where translated code finds the granule's record and the thread's epoch.
pub struct Layout {
    /// The records' delta table (`GranuleRecords::delta_table_addr`).
    pub table: i32,
    /// The tool-area word of the thread's epoch.
    pub epoch_word: usize,
    /// The cache word's index in a record.
    pub user_word: i32,
}

/// The inline read-modify-write of `size` bytes at the address in `t` (site `arg`): on to
/// `done` when the granule's marker is this thread's at its epoch and the pending slot is free
/// or this location's, else on to `slow` (the call-outs). `u` and two more registers are
/// borrowed; the flags are clobbered.
pub fn emit(
    b: &mut Inline,
    layout: &Layout,
    pending: &Pending,
    (t, u): (AsmRegister64, AsmRegister64),
    size: u64,
    arg: u64,
    (slow, done): (CodeLabel, CodeLabel),
) {
    b.clobber_flags();
    let (v, w) = (b.scratch(), b.scratch());
    let slot = pending as *const Pending as u64;
    let epoch = tool_area(layout.epoch_word);
    let a = b.asm();
    let mut take = a.create_label();
    record_address(a, t, u, layout.table);
    // w = this access's marker at the thread's epoch.
    a.mov(w, t).unwrap();
    a.and(w, 7).unwrap();
    a.shl(w, 48).unwrap();
    a.mov(v, OWNED | size << 51).unwrap();
    a.or(w, v).unwrap();
    a.or(w, qword_ptr(epoch).gs()).unwrap();
    a.cmp(w, qword_ptr(u + 8 * layout.user_word)).unwrap();
    a.jne(slow).unwrap();
    // The slot: free, or this location's (only its owner, this thread, can have it there).
    a.mov(v, slot).unwrap();
    a.cmp(qword_ptr(v), 0).unwrap();
    a.je(take).unwrap();
    a.cmp(qword_ptr(v + 8), t).unwrap();
    a.jne(slow).unwrap();
    a.set_label(&mut take).unwrap();
    a.mov(w, qword_ptr(epoch).gs()).unwrap();
    a.mov(qword_ptr(v), w).unwrap();
    a.mov(qword_ptr(v + 8), t).unwrap();
    a.mov(w, arg).unwrap();
    a.mov(qword_ptr(v + 16), w).unwrap();
    // The release's tick: the thread's epoch and the marker move on together.
    a.add(qword_ptr(epoch).gs(), 1).unwrap();
    a.add(qword_ptr(u + 8 * layout.user_word), 1).unwrap();
    a.jmp(done).unwrap();
}

/// u = the record of the granule of the address in `t`: the address times the record's words
/// plus its slice's delta from the table at `table` (records are aligned).
pub fn record_address(a: &mut CodeAssembler, t: AsmRegister64, u: AsmRegister64, table: i32) {
    const _: () = assert!(crate::shadow::records::WORDS == 4);
    a.mov(u, t).unwrap();
    a.shr(u, crate::shadow::memory::SLICE_BITS).unwrap();
    a.and(u, 0xff).unwrap();
    a.mov(u, qword_ptr(u * 8 + table)).unwrap();
    a.lea(u, qword_ptr(u + t * 4)).unwrap();
    a.and(u, -32).unwrap();
}

#[cfg(test)]
mod tests {
    /// The slot's layout is what the inline code writes.
    #[test]
    fn pending_layout() {
        assert_eq!(std::mem::offset_of!(super::Pending, epoch), 0);
        assert_eq!(std::mem::offset_of!(super::Pending, addr), 8);
        assert_eq!(std::mem::offset_of!(super::Pending, site), 16);
    }
}
