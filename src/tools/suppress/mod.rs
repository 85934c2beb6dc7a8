//! `--tool=suppress`: the first point of memory corruption behind a crash, by iterated
//! execution suppression (`driver`), each run tracing and suppressing at once (`run`), with
//! branches skipped to their immediate post-dominator (`cfg`); `report` prints what it found.

mod calls;
pub mod cfg;
pub mod driver;
mod flags;
mod frames;
mod guards;
pub mod plan;
pub mod report;
pub mod run;
mod slice;
mod watch;

/// Tool-area offsets of the suppression tool's own words (after the shadow registers).
pub(crate) mod area {
    use crate::shadow::slot;
    /// Address of this thread's return-address table.
    pub const RET_TABLE: usize = slot::END;
    /// Guest pc of the last `ret` or indirect jump or call (for a crash at its target).
    pub const LAST_IND: usize = slot::END + 8;
    /// Where a guard's call-out wants the block left for (0: go on).
    pub const REDIRECT: usize = slot::END + 16;
    /// The table key the last `ret` found for its slot (the slot itself if the return was
    /// to a recorded call).
    pub const LAST_RET_KEY: usize = slot::END + 24;
    /// The last indirect call or jump through a register: its pc and its target's origin.
    pub const LAST_ICALL: usize = slot::END + 32;
    pub const LAST_ICALL_ORIGIN: usize = slot::END + 40;
    /// The last conditional branch in the program: its pc and its flags' origin (what a
    /// failed `assert` or an error exit was decided on).
    pub const LAST_BRANCH: usize = slot::END + 48;
    pub const LAST_BRANCH_ORIGIN: usize = slot::END + 56;
    /// The instance word of the program's innermost call (set at each call in the program):
    /// the instance of a library's definitions (`propagate::Policy::call_word`), and where
    /// that call's return address lies (the bottom of the frames it may write freely).
    pub const CALL_WORD: usize = slot::END + 64;
    pub const CALL_FRAME: usize = slot::END + 72;
    /// Where the next entry of this thread's log of the program's calls goes (`frames::CallLog`).
    pub const CALL_LOG: usize = slot::END + 80;
    /// Scratch for the code that appends to that log.
    pub const CALL_TMP: usize = slot::END + 88;
    /// The last `ret` (in a run that traces): the return address its call recorded (0: no
    /// call matched) and the address it went to.
    pub const LAST_RET_EXPECTED: usize = slot::END + 96;
    pub const LAST_RET_TARGET: usize = slot::END + 104;
    /// The return address of the program's innermost call (with `CALL_WORD`): which call site
    /// a library's store belongs to.
    pub const CALL_SITE: usize = slot::END + 112;
}

