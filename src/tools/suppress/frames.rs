//! The return-address table of a suppression run: each call records where its return address
//! lives, the address, rdi (value and origin) and the callee-saved registers, so that a corrupt
//! return address can be restored, a function left early with its caller's registers, and a
//! crash inside a library traced to the program's call.

use super::area;
use crate::kernel::guest_mem;
use crate::shadow;
use rtgrind_jit::ThreadContext;

/// Return-address table: entry (128 bytes) = stack slot of the return address, return
/// address, origin of rdi at the call, rbx, rbp, r12-r15 at the call, rdi at the call, and
/// once points fired the corrupt masks of rbx, rbp, r12-r15 at the call;
/// indexed by the slot's low 16 bits. A call fills its entry; nothing
/// pops it, so `longjmp` and exceptions need no care, and an entry is trusted only if it names
/// the slot asked about.
pub(super) const TABLE_BYTES: usize = (1 << 16) / 8 * ENTRY_BYTES;
pub(super) const ENTRY_BYTES: usize = 128;

pub(super) const CALLEE_SAVED: [usize; 6] = [3, 5, 12, 13, 14, 15]; // rbx rbp r12-r15
/// Words of an entry in use; the callee-saved registers' masks from word `MASKS`.
pub(super) const ENTRY_WORDS_USED: usize = 16;
pub(super) const MASKS: usize = 10;

/// Active frames of the thread from its return-address table: (return-address slot, return
/// address, rdi's origin at the call), innermost first.
pub(super) fn frames(ctx: &mut ThreadContext, rsp: u64) -> Vec<(u64, u64, u64)> {
    frame_entries(ctx, rsp).into_iter().map(|e| (e[0], e[1], e[2])).collect()
}

/// The live entries of the thread's table (see `TABLE_BYTES`), innermost first.
pub(super) fn frame_entries(ctx: &mut ThreadContext, rsp: u64) -> Vec<[u64; ENTRY_WORDS_USED]> {
    let table = *shadow::word(ctx, area::RET_TABLE);
    if table == 0 {
        return Vec::new();
    }
    // SAFETY: the table is this thread's, TABLE_BYTES long, allocated in `init_table`.
    let words = unsafe { std::slice::from_raw_parts(table as *const u64, TABLE_BYTES / 8) };
    let mut out: Vec<[u64; ENTRY_WORDS_USED]> =
        words.chunks(ENTRY_BYTES / 8).filter(|e| e[0] >= rsp && e[0] < rsp + (64 << 20)).map(|e| e[..ENTRY_WORDS_USED].try_into().unwrap()).collect();
    out.sort();
    // Live if the slot still holds the return address: the stack read once, not per entry.
    let top = out.last().map_or(rsp, |e| e[0] + 8);
    let mut stack = vec![0u8; (top - rsp) as usize];
    if !guest_mem::read(rsp, &mut stack) {
        out.retain(|e| guest_mem::read_u64(e[0]) == Some(e[1]));
        return out;
    }
    out.retain(|e| {
        let off = (e[0] - rsp) as usize;
        u64::from_le_bytes(stack[off..off + 8].try_into().unwrap()) == e[1]
    });
    out
}

pub(super) fn init_table(ctx: &mut ThreadContext) {
    let table: &'static mut [u64] = Box::leak(vec![0u64; TABLE_BYTES / 8].into_boxed_slice());
    *shadow::word(ctx, area::RET_TABLE) = table.as_mut_ptr() as u64;
}

/// The last calls the program made (in a run that traces), in a ring per thread: the call's
/// instance word, its first argument's origin and value, its return address, its ordinal at
/// its site (`ordinals`), in 64 bytes each. The ring is aligned to twice its size, so the
/// code that appends wraps by clearing one bit.
pub(super) const CALL_LOG_BYTES: usize = 1 << 21;
pub(super) const CALL_LOG_WRAP_BIT: u32 = 21;
pub(super) const CALL_LOG_ENTRY: usize = 64;
const ENTRY_WORDS: usize = CALL_LOG_ENTRY / 8;

pub(super) fn init_call_log(ctx: &mut ThreadContext) {
    let layout = std::alloc::Layout::from_size_align(CALL_LOG_BYTES, 2 * CALL_LOG_BYTES).expect("a valid layout");
    // SAFETY: a non-zero size; the ring lives as long as the process (threads' contexts point
    // to it), so it is never freed.
    let ring = unsafe { std::alloc::alloc_zeroed(layout) };
    *shadow::word(ctx, area::CALL_LOG) = ring as u64;
}

/// The thread's call log (see `init_call_log`), in a run that traces.
fn call_log(ctx: &mut ThreadContext) -> Option<&'static [u64]> {
    let pos = *shadow::word(ctx, area::CALL_LOG);
    if pos == 0 {
        return None;
    }
    let base = pos & !((2 * CALL_LOG_BYTES as u64) - 1);
    // SAFETY: the ring is CALL_LOG_BYTES long from `base` (see `init_call_log`), never freed.
    Some(unsafe { std::slice::from_raw_parts(base as *const u64, CALL_LOG_BYTES / 8) })
}

/// The program's call whose instance word is `word`, if the thread's log still holds it: its
/// first argument's value and origin, and its return address.
pub(super) fn logged_call(ctx: &mut ThreadContext, word: u64) -> Option<(u64, u64, u64)> {
    call_log(ctx)?.chunks_exact(ENTRY_WORDS).find(|e| e[0] == word).map(|e| (e[2], e[1], e[3]))
}

/// The logged calls' return addresses and ordinals at their sites, by instance word.
pub(super) fn logged_ordinals(ctx: &mut ThreadContext) -> std::collections::HashMap<u64, (u64, u64)> {
    call_log(ctx).map(|ring| ring.chunks_exact(ENTRY_WORDS).filter(|e| e[0] != 0).map(|e| (e[0], (e[3], e[4]))).collect()).unwrap_or_default()
}

/// The thread's logged calls after instance word `after` whose first argument pointed into
/// `[lo, hi)`, the destination nearest `hi` first, then the earliest: (instance word, return
/// address). (A copy of bytes made at `after` into that block is among them.)
pub(super) fn calls_into(ctx: &mut ThreadContext, lo: u64, hi: u64, after: u64) -> Vec<(u64, u64)> {
    use crate::shadow::origin::thread_part;
    let Some(ring) = call_log(ctx) else { return Vec::new() };
    let mut calls: Vec<&[u64]> =
        ring.chunks_exact(ENTRY_WORDS).filter(|e| e[0] >= after && thread_part(e[0]) == thread_part(after) && (lo..hi).contains(&e[2])).collect();
    calls.sort_by_key(|e| (std::cmp::Reverse(e[2]), e[0]));
    calls.into_iter().map(|e| (e[0], e[3])).collect()
}

/// The thread's logged calls before instance word `before` whose first argument was `value`,
/// the latest first: (instance word, the argument's origin, return address).
pub(super) fn calls_with(ctx: &mut ThreadContext, value: u64, before: u64) -> Vec<(u64, u64, u64)> {
    use crate::shadow::origin::thread_part;
    let Some(ring) = call_log(ctx) else { return Vec::new() };
    let mut calls: Vec<(u64, u64, u64)> = ring
        .chunks_exact(ENTRY_WORDS)
        .filter(|e| e[0] != 0 && e[0] < before && thread_part(e[0]) == thread_part(before) && e[2] == value)
        .map(|e| (e[0], e[1], e[3]))
        .collect();
    calls.sort_by_key(|c| std::cmp::Reverse(c.0));
    calls
}

/// The return addresses of the thread's logged calls made between instance words `after` and
/// `before` (exclusive), each once.
pub(super) fn call_sites_between(ctx: &mut ThreadContext, after: u64, before: u64) -> Vec<u64> {
    use crate::shadow::origin::thread_part;
    let Some(ring) = call_log(ctx) else { return Vec::new() };
    let mut rets: Vec<u64> =
        ring.chunks_exact(ENTRY_WORDS).filter(|e| e[0] > after && e[0] < before && thread_part(e[0]) == thread_part(before)).map(|e| e[3]).collect();
    rets.sort();
    rets.dedup();
    rets
}

/// Leaves the current function as if it returned a corrupt value: to the innermost frame's
/// return address, with rsp past it. False if no frame is known.
pub(super) fn return_corrupt(ctx: &mut ThreadContext) -> bool {
    let Some(e) = frame_entries(ctx, ctx.callout_regs[4]).first().copied() else { return false };
    let (slot_addr, ret) = (e[0], e[1]);
    ctx.callout_regs[4] = slot_addr + 8;
    // The callee-saved registers as the caller had them (a lent one is reloaded from its
    // spill slot on the way out, so both are set).
    for (k, &r) in CALLEE_SAVED.iter().enumerate() {
        ctx.callout_regs[r] = e[3 + k];
        ctx.tool_spill[r] = e[3 + k];
        // Corrupt as it was (a pointer to a local whose making was suppressed stays so).
        *shadow::gpr(ctx, r) = e[MASKS + k];
    }
    *shadow::gpr(ctx, 0) = 0xff;
    *shadow::word(ctx, area::REDIRECT) = ret;
    true
}
