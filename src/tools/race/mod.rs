//! `--tool=race` (issue 23): every data race a run shows (`run`, happens-before over the
//! program's accesses in `hb`, synchronization read from the binary), each tested for harm
//! (`harm`): the run is replayed on its recorded schedule with the race's two accesses first in
//! their order, then in the other; different values read or left in memory make it harmful.
//! `driver` is the search that makes those runs.

mod atomics;
mod calls;
mod driver;
mod harm;
mod hb;
mod owned;
mod record;
mod run;
mod suppressions;

use super::{Error, ToolRun};
use crate::cli::{Cli, YesNo};
use std::path::PathBuf;

/// `--tool=race`'s options (and, hidden, those of the search's own runs).
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Options of --tool=race")]
pub struct Options {
    /// Test each race for harm: replay the run with its two accesses in the other order and
    /// compare the values read and left in memory (no: report the races only, in one run).
    #[arg(long, value_enum, default_value = "yes", value_name = "yes|no")]
    pub harm: YesNo,

    /// Most races tested for harm (one replayed run each, and one in the run's own order).
    #[arg(long, default_value_t = 10, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_harm_tests: u32,

    /// Before detecting, try up to N schedules (random and PCT, alternately, with short
    /// quanta) and analyse the first that fails: saved with --record-schedule (else as
    /// rtgrind-schedule.PID), and the command that replays it is given.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub explore: u32,

    /// The depth of the PCT schedules --explore tries (priority change points + 1).
    #[arg(long, default_value_t = 3, value_name = "D", value_parser = clap::value_parser!(u32).range(1..))]
    pub depth: u32,

    /// Leave out the races FILE names: `race:PATTERN` lines (ThreadSanitizer's) or helgrind's
    /// `{ ... fun:NAME ... }` blocks; a pattern names a function, a file, `file:line` or a module.
    #[arg(long, value_name = "FILE")]
    pub suppressions: Option<PathBuf>,

    /// (Internal) write the races found, for the search, to FILE (or, with --race-plan, what
    /// the run saw of the planned races).
    #[arg(long, value_name = "FILE", hide = true)]
    pub race_out: Option<PathBuf>,

    /// (Internal) a harm run: watch the races in FILE, reversing the one it names.
    #[arg(long, value_name = "FILE", hide = true)]
    pub race_plan: Option<PathBuf>,
}

/// Ids of the options the tool owns: its own and the searches' (`--json`, `--sarif`,
/// `--error-exitcode`).
pub fn option_ids() -> Vec<String> {
    [super::ids::<Options>(), super::ids::<super::SearchOptions>(), super::ids::<super::FailureOptions>()].concat()
}

/// One run: detection (its report, or with `--race-out` the races for the search), or a harm
/// run with `--race-plan`.
pub fn make(cli: &Cli) -> Result<Box<dyn ToolRun>, Error> {
    let o = &cli.race;
    let plan = match &o.race_plan {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| Error::usage(format!("cannot read race plan '{}': {e}", path.display())))?;
            let plan: harm::Plan = serde_json::from_str(&text).map_err(|e| Error::usage(format!("bad race plan '{}': {e}", path.display())))?;
            Some(plan)
        }
        None => None,
    };
    let program = std::fs::canonicalize(crate::resolve(&cli.command[0])).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    let out = run::Output {
        // (A search's own runs write no graph: the search does.)
        report: crate::tools::output::Output {
            dot: if o.race_out.is_none() && o.race_plan.is_none() { cli.failure.dot_file()? } else { None },
            ..crate::tools::output::Output::of(cli)
        },
        error_exitcode: cli.search.error_exitcode,
        command: cli.command.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
        race_out: o.race_out.clone(),
        suppressions: match &o.suppressions {
            Some(path) => suppressions::Suppressions::load(path).map_err(Error::usage)?,
            None => suppressions::Suppressions::default(),
        },
    };
    Ok(Box::new(run::RaceRun::new(program, out, plan)?))
}

/// Races are tested for harm by a search (runs of this program under rtgrind), unless the
/// run is one of the search's or `--harm=no`.
pub fn wants_search(cli: &Cli) -> bool {
    let o = &cli.race;
    o.harm == YesNo::Yes && o.race_out.is_none() && o.race_plan.is_none()
}

/// The search; its exit status.
pub fn search(cli: &Cli) -> Result<i32, Error> {
    if !crate::resolve(&cli.command[0]).is_file() {
        return Err(Error { message: format!("{}: no such file", cli.command[0].to_string_lossy()), code: 127 });
    }
    if let Some(path) = &cli.race.suppressions {
        suppressions::Suppressions::load(path).map_err(Error::usage)?;
    }
    cli.failure.dot_file()?;
    crate::log_to_file(cli);
    driver::drive(cli)
}
