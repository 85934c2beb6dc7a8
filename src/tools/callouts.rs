//! How often each tool's call-outs left the code cache (issue 30's audit): `--stats` turns the
//! counting on and prints the kinds that were called. Off (the default) a call-out pays one
//! relaxed load and a predictable branch; nothing here allocates, uses a thread-local or calls
//! the C library, so light call-outs may count too (`Inline::callout_light`'s promise).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// Every tool's call-out, by what called it.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    TaintFirstEvent,
    ShadowLoadSlow,
    ShadowStoreSlow,
    ShadowOriginStoreSlow,
    ShadowStringAfter,
    SuppressGuardAccess,
    SuppressGuardBranch,
    SuppressGuardRet,
    SuppressGuardIndirectCall,
    SuppressGuardIndirectJump,
    SuppressGuardDivide,
    SuppressGuardFrameLost,
    SuppressPoint,
    SuppressCallStore,
    SuppressWatchStore,
    SuppressWatchStringBefore,
    SuppressWatchStringAfter,
    SuppressHeapHook,
    SuppressRestartCount,
    RaceAccess,
    RaceAccessLight,
    RaceRmwLight,
    RaceRuntimeLight,
    RaceMemoryCall,
    RaceMemoryCallLight,
    RaceAllocEnter,
    RaceAllocReturn,
    RaceAllocJump,
    RaceWatchBefore,
    RaceWatchCall,
    RaceWatchAfter,
    SwitchForkPoint,
    CbiNextCountdown,
    VrHit,
    VrForkPoint,
    VrApply,
    VrPutBack,
    CountBenchFull,
    CountBenchLight,
}

const KINDS: usize = Kind::CountBenchLight as usize + 1;

/// The names `--stats` prints, in `Kind`'s order.
const NAMES: [&str; KINDS] = [
    "taint first event of a site",
    "shadow load out of line",
    "shadow store out of line",
    "origin store out of line",
    "shadow string instruction",
    "suppress guard: access",
    "suppress guard: branch",
    "suppress guard: ret",
    "suppress guard: indirect call",
    "suppress guard: indirect jump",
    "suppress guard: division",
    "suppress guard: frame lost",
    "suppress point",
    "suppress store of a call suppressed whole",
    "suppress watched store",
    "suppress watched string (before)",
    "suppress watched string (after)",
    "suppress heap hook",
    "suppress restart count",
    "race access (full)",
    "race access (light)",
    "race atomic (light)",
    "race runtime access (light)",
    "race memory call (full)",
    "race memory call (light)",
    "race allocation entered",
    "race allocation returned",
    "race allocation jumped out",
    "race watch before",
    "race watch call",
    "race watch after",
    "switch fork point",
    "cbi next countdown",
    "vr profile hit",
    "vr fork point",
    "vr replacement",
    "vr put back",
    "count --callout-bench=full",
    "count --callout-bench=light",
];

static ON: AtomicBool = AtomicBool::new(false);
static COUNTS: [AtomicU64; KINDS] = [const { AtomicU64::new(0) }; KINDS];

/// Counts from now on (`--stats`).
pub fn enable() {
    ON.store(true, Relaxed);
}

/// One call-out of `kind`, counted if `--stats` asked.
#[inline(always)]
pub fn note(kind: Kind) {
    if ON.load(Relaxed) {
        COUNTS[kind as usize].fetch_add(1, Relaxed);
    }
}

/// `stats:` lines of the kinds that were called, most first.
pub fn lines() -> Vec<String> {
    let mut called: Vec<(u64, &str)> = COUNTS.iter().zip(NAMES).map(|(c, n)| (c.load(Relaxed), n)).filter(|c| c.0 > 0).collect();
    called.sort_by_key(|c| std::cmp::Reverse(c.0));
    let total: u64 = called.iter().map(|c| c.0).sum();
    let mut out = vec![format!("stats: {total} tool call-outs")];
    out.extend(called.iter().map(|(c, n)| format!("stats:   {c} {n}")));
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_kind_has_a_name() {
        assert_eq!(super::NAMES.len(), super::Kind::CountBenchLight as usize + 1);
        assert!(super::NAMES.iter().all(|n| !n.is_empty()));
    }
}
