//! Where translation time goes (`--stats`): the translator's phases, timed with the
//! time-stamp counter only while a cache's `profile` is on (otherwise each switch is one
//! predictable test), and how many guest instructions each pass decodes.
//!
//! Phase times are exclusive: a translation is always in exactly one phase, and each switch
//! charges the ticks since the last one to the phase it leaves, so the phases of a
//! translation add up to its total.

/// A phase of translating one block.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Phase {
    /// Reading the guest bytes (`CodeSource::read_code`).
    Fetch,
    /// Decoding the block's instructions: the reachable code once for the analyses, then once
    /// per version translated.
    Decode,
    /// The status flags' liveness over the reachable code (its own work).
    FlagLiveness,
    /// The flags' look-ahead at direct branch targets and callees (fetch and decode there).
    FlagLookahead,
    /// Registers used up to the next exit (`used_from`) and each instruction's
    /// `InstructionInfo`.
    Registers,
    /// Inside the tool's callbacks (`Tool::two_versions`, `block_start`, `before_insn`, ...):
    /// building its code, its own analyses.
    ToolHooks,
    /// Encoding through iced-x86: the tool's code, and guest instructions encoded anew.
    Encode,
    /// The engine's own emission and bookkeeping (fixed byte sequences, spills, stubs,
    /// labels, the fault map).
    Build,
    /// Room in an arena (a new arena's mapping), copying the code there and registering the
    /// block.
    Commit,
    /// The translation cache across runs (`persist`): looking the block up, checking and
    /// installing an image, noting a translation to store.
    Cache,
}

/// How many phases there are.
pub const PHASES: usize = 10;

/// The phases in order, with their names for `--stats`.
pub const PHASE_NAMES: [(Phase, &str); PHASES] = [
    (Phase::Fetch, "fetch"),
    (Phase::Decode, "decode"),
    (Phase::FlagLiveness, "flag liveness"),
    (Phase::FlagLookahead, "flag look-ahead"),
    (Phase::Registers, "register analyses"),
    (Phase::ToolHooks, "tool hooks"),
    (Phase::Encode, "encode (iced)"),
    (Phase::Build, "emit and bookkeeping"),
    (Phase::Commit, "commit"),
    (Phase::Cache, "translation cache"),
];

/// The time-stamp counter.
#[inline]
pub fn ticks() -> u64 {
    // SAFETY: `rdtsc` has no preconditions on x86-64 (user mode may read it under Linux).
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Totals over every translation (kept in `CodeCache::profile_stats`).
#[derive(Default, Debug, Clone, Copy)]
pub struct TranslateProfile {
    /// Ticks spent in each phase (indexed as `PHASE_NAMES`), and how many times a translation
    /// went into it (each time costs about one `switch_cost`, counted in the phase).
    pub phase_ticks: [u64; PHASES],
    pub phase_entries: [u64; PHASES],
    /// Ticks from the start to the end of every translation.
    pub total_ticks: u64,
    /// Guest instructions decoded for the blocks themselves: the reachable code's decode and
    /// every version's (and a retranslation's).
    pub decoded: u64,
    /// Guest instructions decoded by the flags' look-ahead.
    pub lookahead_decoded: u64,
    /// Passes over a block's body (one per version, again for a retranslation).
    pub bodies: u64,
    /// Blocks built twice (a loop back to the start with registers stolen).
    pub rebuilt: u64,
    /// Blocks given two versions.
    pub two_version_blocks: u64,
    /// Of those, built with the fast version only (`Block::lazy_full`).
    pub lazy_full_blocks: u64,
    /// Translations timed.
    pub translations: u64,
    /// Phase switches made (each reads the counter once: the timing's own cost, see
    /// `switch_cost`).
    pub switches: u64,
}

impl TranslateProfile {
    fn add(&mut self, t: &PhaseTimer) {
        for (a, b) in self.phase_ticks.iter_mut().zip(t.ticks) {
            *a += b;
        }
        for (a, b) in self.phase_entries.iter_mut().zip(t.entries) {
            *a += b;
        }
        self.total_ticks += t.end - t.start;
        self.decoded += t.decoded;
        self.lookahead_decoded += t.lookahead_decoded;
        self.bodies += t.bodies;
        self.two_version_blocks += t.two_versions as u64;
        self.lazy_full_blocks += t.lazy_full as u64;
        self.rebuilt += t.rebuilt as u64;
        self.translations += 1;
        self.switches += t.switches;
    }
}

/// One translation's timer: the phase it is in and since when.
#[derive(Default, Clone, Copy)]
pub(crate) struct PhaseTimer {
    on: bool,
    phase: usize,
    at: u64,
    start: u64,
    end: u64,
    ticks: [u64; PHASES],
    entries: [u64; PHASES],
    pub decoded: u64,
    pub lookahead_decoded: u64,
    pub bodies: u64,
    pub two_versions: bool,
    pub lazy_full: bool,
    pub rebuilt: bool,
    switches: u64,
}

impl PhaseTimer {
    /// A timer in phase `first` (off: every switch does nothing).
    pub fn start(on: bool, first: Phase) -> PhaseTimer {
        let now = if on { ticks() } else { 0 };
        let mut t = PhaseTimer { on, phase: first as usize, at: now, start: now, ..PhaseTimer::default() };
        t.entries[first as usize] = 1;
        t
    }

    /// Goes into phase `p`; returns the phase it was in (to go back to).
    #[inline]
    pub fn switch(&mut self, p: Phase) -> Phase {
        let was = PHASE_NAMES[self.phase].0;
        if self.on {
            let now = ticks();
            self.ticks[self.phase] += now - self.at;
            self.at = now;
            self.phase = p as usize;
            self.switches += 1;
            self.entries[p as usize] += 1;
        }
        was
    }

    /// Runs `f` in phase `p`, then goes back to the current phase.
    #[inline]
    pub fn timed<R>(&mut self, p: Phase, f: impl FnOnce() -> R) -> R {
        let was = self.switch(p);
        let r = f();
        self.switch(was);
        r
    }

    /// Ends the translation and adds its figures to `to`.
    pub fn finish(mut self, to: &mut TranslateProfile) {
        if !self.on {
            return;
        }
        let now = PHASE_NAMES[self.phase].0;
        self.switch(now);
        self.end = self.at;
        to.add(&self);
    }
}

/// What one phase switch costs, in ticks (the least of a few measurements of a thousand).
pub fn switch_cost() -> f64 {
    (0..5)
        .map(|_| {
            let mut t = PhaseTimer::start(true, Phase::Build);
            let t0 = ticks();
            for _ in 0..500 {
                let was = t.switch(std::hint::black_box(Phase::Decode));
                t.switch(was);
            }
            (ticks() - t0) as f64 / 1000.0
        })
        .fold(f64::MAX, f64::min)
}
