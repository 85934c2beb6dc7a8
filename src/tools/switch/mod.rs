//! `--tool=switch`: predicate switching (`../shared/papers/002`). The search (`driver`) traces
//! every conditional branch instance up to the failure (`trace`), then re-runs the program
//! with one instance's outcome inverted at a time (`run`) until the oracle (`oracle`) accepts a
//! run: that instance is the critical predicate.

pub mod deps;
pub mod driver;
pub mod fork;
pub mod oracle;
pub mod run;
pub mod trace;

pub use run::Switch;
