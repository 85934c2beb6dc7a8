//! Definitions finer than an origin granule (issue 21, item 2). Origins are kept per 8-byte
//! granule, so two `int`s in one word share the origin of whichever was written last: a crash
//! that used one of them would be blamed on the other's store (a loop counter beside the index
//! that went wrong). When a failure used such a narrow location and the granule's last
//! definition was a narrow store, the driver runs the same plan again watching the location's
//! bytes: every store of the run is checked against them (a range compare inline, a call-out
//! on a hit), and the origin the granule got from the last store that wrote any of the watched
//! bytes is that location's definition. Runs are repeatable, so the watched run fails where
//! the first did.

use super::guards::{guest_regs, State};
use rtgrind_jit::iced_x86::{Instruction, UsedMemory};
use rtgrind_jit::ThreadContext;

/// One watched location: its bytes, and the origin its last store gave it (0: none yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Watched {
    pub addr: u64,
    pub size: u64,
    pub origin: u64,
}

/// A store the watch checks: the instruction's memory destination, in the call-out.
pub(super) struct WatchCheck {
    pub(super) mem: UsedMemory,
    pub(super) ins: Instruction,
    pub(super) state: *mut State,
    pub(super) spilled: u16,
}

/// Whether `[a, a + n)` and `[b, b + m)` share a byte.
pub(super) fn overlaps(a: u64, n: u64, b: u64, m: u64) -> bool {
    a < b.wrapping_add(m) && b < a.wrapping_add(n)
}

/// The smallest range holding every watched location, less the store's size minus one in
/// front: a store of `size` bytes at `ea` can touch one only if `ea - lo < span` (unsigned),
/// the inline test.
pub(super) fn window(watches: &[Watched], size: u64) -> (u64, u64) {
    let lo = watches.iter().map(|w| w.addr).min().unwrap_or(0).wrapping_sub(size - 1);
    let hi = watches.iter().map(|w| w.addr + w.size).max().unwrap_or(0);
    (lo, hi.wrapping_sub(lo))
}

impl State {
    /// A store wrote `[start, start + len)`, and its origins are in the origin map now: each
    /// watched location it touched takes the origin of its first byte it wrote.
    pub(super) fn watch_store(&mut self, start: u64, len: u64) {
        if self.origins.is_null() {
            return;
        }
        for i in 0..self.watches.len() {
            let w = self.watches[i];
            if overlaps(w.addr, w.size, start, len) {
                // SAFETY: the origin map lives as long as the tool (see `State::mem`).
                let o = unsafe { (*self.origins).get64(w.addr.max(start)) };
                self.watches[i].origin = o;
            }
        }
    }

    /// The watched location's definition, if `[addr, addr + size)` is one and a store wrote it.
    pub(super) fn watched(&self, addr: u64, size: u64) -> Option<u64> {
        self.watches.iter().find(|w| w.addr == addr && w.size == size && w.origin != 0).map(|w| w.origin)
    }
}

/// The effective address of `m` from the guest's registers.
fn address(ctx: &ThreadContext, regs: &[u64; 16], m: &UsedMemory) -> u64 {
    super::guards::effective_address(ctx, regs, [m.base(), m.index()], u64::from(m.scale()), m.displacement(), m.segment())
}

/// A store's range came within the watch window (the inline test): the exact check.
pub(super) extern "C" fn store_callout(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::SuppressWatchStore);
    // SAFETY: rtg_callout passes this thread's context; `arg` is a boxed WatchCheck the tool
    // keeps for as long as translations exist, and its state outlives it.
    let (ctx, c) = unsafe { (&mut *ctx, &*(arg as *const WatchCheck)) };
    // SAFETY: as above.
    let st = unsafe { &mut *c.state };
    let regs = guest_regs(ctx, c.spilled);
    let ea = address(ctx, &regs, &c.mem);
    st.watch_store(ea, c.mem.memory_size().size().max(1) as u64);
}

/// Before a string store (`movs`, `stos`): the range it is about to write, forwards (glibc's
/// copies run forwards; a backward one is taken at its first element).
pub(super) extern "C" fn string_before(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::SuppressWatchStringBefore);
    // SAFETY: as in `store_callout`.
    let (ctx, c) = unsafe { (&mut *ctx, &*(arg as *const WatchCheck)) };
    // SAFETY: as above.
    let st = unsafe { &mut *c.state };
    let regs = guest_regs(ctx, c.spilled);
    let elem = c.mem.memory_size().size().max(1) as u64;
    let count = if c.ins.has_rep_prefix() { regs[1] } else { 1 };
    st.watch_pending = Some((regs[7], count.saturating_mul(elem)));
}

/// After it: its origins were moved by the propagation's call-out; the watched bytes take them.
pub(super) extern "C" fn string_after(_ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::SuppressWatchStringAfter);
    // SAFETY: as in `store_callout`.
    let c = unsafe { &*(arg as *const WatchCheck) };
    // SAFETY: as above.
    let st = unsafe { &mut *c.state };
    if let Some((start, len)) = st.watch_pending.take() {
        st.watch_store(start, len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_admits_exactly_the_stores_that_touch_a_watched_byte() {
        let w = [Watched { addr: 0x1004, size: 4, origin: 0 }];
        for size in [1u64, 2, 4, 8, 16] {
            let (lo, span) = window(&w, size);
            for ea in 0xff0u64..0x1010 {
                let inline = ea.wrapping_sub(lo) < span;
                assert_eq!(inline, overlaps(0x1004, 4, ea, size), "store of {size} at {ea:#x}");
            }
        }
    }
}
