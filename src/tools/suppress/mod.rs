//! `--tool=suppress`: the first point of memory corruption behind a crash, by iterated
//! execution suppression (`driver`), each run tracing and suppressing at once (`run`), with
//! branches skipped to their immediate post-dominator (`cfg`); `report` prints what it found.

pub mod cfg;
pub mod driver;
pub mod plan;
pub mod report;
pub mod run;
