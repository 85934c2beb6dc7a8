//! `--tool=switch`: predicate switching (`../shared/papers/002`). The search (`driver`) traces
//! every conditional branch instance up to the failure (`trace`), then re-runs the program
//! with one instance's outcome inverted at a time (`run`) until the oracle (`oracle`) accepts a
//! run: that instance is the critical predicate.

pub mod deps;
pub mod driver;
pub mod fork;
pub mod run;
pub mod trace;

pub use run::Switch;

use super::{Error, ToolRun};
use crate::cli::{Cli, YesNo};
use std::path::PathBuf;

/// `--tool=switch`'s options (and, hidden, those of the search's own runs).
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Options of --tool=switch")]
pub struct Options {
    /// The branch instance to invert: ADDR (hex guest address of a conditional branch) and N
    /// (its N-th execution, from 1).
    #[arg(long, value_name = "ADDR:N")]
    pub switch_at: Option<String>,

    /// The expected standard output of a correct run (byte for byte).
    #[arg(long, value_name = "FILE")]
    pub expected_output: Option<PathBuf>,

    /// The expected standard error of a correct run.
    #[arg(long, value_name = "FILE")]
    pub expected_stderr: Option<PathBuf>,

    /// The expected exit status of a correct run.
    #[arg(long, value_name = "N")]
    pub expected_exit: Option<i32>,

    /// A shell command that judges a run: it gets the run's standard output on its standard
    /// input, that file's path as $1 and in $RTGRIND_STDOUT, the error output's in
    /// $RTGRIND_STDERR; exit 0 = pass.
    #[arg(long, value_name = "CMD")]
    pub oracle: Option<String>,

    /// Candidate order: lefs (last executed first), last-instance-first, prior (by dynamic
    /// dependence distance from the failure).
    #[arg(long, default_value = "lefs", value_name = "ORDER")]
    pub order: String,

    /// Also switch branches in libraries.
    #[arg(long, value_enum, default_value = "no", value_name = "yes|no")]
    pub switch_libs: YesNo,

    /// Keep searching after the first success and list every successful switch.
    #[arg(long)]
    pub all: bool,

    /// A switched run may enter this many times more blocks than the original run.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub budget_factor: u64,

    /// Search by forking at each candidate from forward runs of the program (yes), or by
    /// re-running the program once per candidate (no).
    #[arg(long, value_enum, default_value = "yes", value_name = "yes|no")]
    pub fork: YesNo,

    /// Switched runs at once: forked children, or re-executions (`--fork=no`, a program with
    /// threads) of a program that changes no files.
    #[arg(short = 'j', long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..))]
    pub jobs: u64,

    /// (Internal) record every conditional branch instance into FILE.
    #[arg(long, value_name = "FILE", hide = true)]
    pub switch_trace: Option<PathBuf>,

    /// (Internal) the trace run also logs dynamic dependences (for --order=prior).
    #[arg(long, value_enum, default_value = "no", value_name = "yes|no", hide = true)]
    pub switch_deps: YesNo,
}

/// Ids of the options the tool owns.
pub fn option_ids() -> Vec<String> {
    [super::ids::<Options>(), super::ids::<super::SearchOptions>()].concat()
}

fn read(p: &PathBuf, what: &str) -> Result<Vec<u8>, Error> {
    std::fs::read(p).map_err(|e| Error::usage(format!("{what}: cannot read '{}': {e}", p.display())))
}

/// The run's instrumentation: one switched run (`--switch-at`), or one of the search's runs.
pub fn make(cli: &Cli) -> Result<Box<dyn ToolRun>, Error> {
    let o = &cli.switch;
    let expected = || o.expected_output.as_ref().map(|p| read(p, "--expected-output")).transpose();
    let program = || std::fs::canonicalize(crate::resolve(&cli.command[0])).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    if let Some(dir) = &cli.checkpoints {
        // The fork search's forward run: its checkpoints are branch instances.
        let checkpoints = crate::tools::checkpoints::Checkpoints::read(dir.clone(), o.jobs as usize);
        let budget = cli.budget_blocks.unwrap_or(1 << 40);
        return Ok(Box::new(fork::new(checkpoints, budget, expected()?, program()).map_err(claimed)?));
    }
    if let Some(out) = &o.switch_trace {
        let main_only = o.switch_libs == YesNo::No;
        crate::shadow::claim_layout().map_err(claimed)?;
        let mut trace = trace::SwitchTrace::new(out.clone(), main_only, program(), expected()?);
        if o.switch_deps == YesNo::Yes {
            trace.deps = Some(deps::Deps::new(main_only).map_err(|e| Error::usage(format!("cannot reserve the dependence log: {e}")))?);
        }
        return Ok(Box::new(trace));
    }
    let spec = o.switch_at.as_deref().ok_or_else(|| Error::usage("--tool=switch needs --switch-at=ADDR:N".into()))?;
    let (site, n) = Switch::parse(spec).ok_or_else(|| Error::usage(format!("invalid --switch-at value '{spec}' (expected ADDR:N, e.g. 0x401136:3)")))?;
    Ok(Box::new(Switch::new(site, n, run::claim_outcome().map_err(claimed)?)))
}

/// A tool-area or register claim refused: rtgrind's own layout is wrong.
fn claimed(e: rtgrind_jit::claims::ClaimError) -> Error {
    Error::internal(format!("internal: {e}"))
}

/// Without `--switch-at` (or an internal run's option), the predicate-switching search.
pub fn wants_search(cli: &Cli) -> bool {
    let o = &cli.switch;
    o.switch_at.is_none() && o.switch_trace.is_none() && cli.checkpoints.is_none()
}

/// The search; its exit status.
pub fn search(cli: &Cli) -> Result<i32, Error> {
    let o = &cli.switch;
    if !crate::resolve(&cli.command[0]).is_file() {
        return Err(Error { message: format!("{}: no such file", cli.command[0].to_string_lossy()), code: 127 });
    }
    let oracle = crate::tools::oracle::Oracle {
        output: o.expected_output.as_ref().map(|p| read(p, "--expected-output")).transpose()?,
        stderr: o.expected_stderr.as_ref().map(|p| read(p, "--expected-stderr")).transpose()?,
        exit: o.expected_exit,
        command: o.oracle.clone(),
        cwd: None,
    };
    let order =
        driver::Order::parse(&o.order).ok_or_else(|| Error::usage(format!("invalid --order '{}' (expected lefs, last-instance-first or prior)", o.order)))?;
    let opts = driver::Options {
        oracle,
        order,
        libs: o.switch_libs == YesNo::Yes,
        all: o.all,
        budget_factor: o.budget_factor,
        error_exitcode: cli.search.error_exitcode,
        seed: cli.seed,
        stdin_file: cli.stdin_file.clone(),
        expected_output_path: o.expected_output.as_ref().map(|p| std::fs::canonicalize(p).unwrap_or(p.clone())),
        // (Switch draws no graph.)
        output: crate::tools::output::Output { dot: None, ..crate::tools::output::Output::of(cli) },
        fork: o.fork == YesNo::Yes,
        jobs: o.jobs,
    };
    crate::log_to_file(cli);
    Ok(driver::drive(super::search::Runner::new("switch", cli), cli.command.clone(), opts))
}
