//! `--tool=vr`: value replacement (dissertation 004 ch. 2-4) over a test suite
//! (`tools::suite`). Each test runs once for its coverage and once for its value profile
//! (`profile`: the values every use of the main program reads, `uses`); in each failing test,
//! every instance of a use is then given each alternate value from the profile (`search`), in a
//! child forked at that instance from a forward run of the test (`fork`, `replace`), and the
//! test's oracle judges the child: a replacement that makes it pass is an IVMP. Lines are
//! ranked by the failing tests with an IVMP at them, Tarantula breaking ties (`rank`).

pub mod fork;
pub mod profile;
pub mod rank;
pub mod replace;
pub mod search;
pub mod uses;

use super::{Error, ToolRun};
use crate::cli::Cli;
use std::path::PathBuf;
use std::time::Duration;

/// `--tool=vr`'s own options (the suite's are spectra's: `--suite`, `--suite-dir`, `--top`,
/// `--test-timeout`, `--jobs`).
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "Options of --tool=vr")]
pub struct Options {
    /// Faults to look for: after each ranking, the failing tests with an IVMP at its top line
    /// count as explained and the lines are ranked again over the others (dissertation 004
    /// ch. 3), up to N rankings.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub faults: u32,

    /// Wall-time budget of the search for IVMPs in one failing test, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    pub vr_budget: u64,

    /// (Internal) a test's profiling run: write the value profile to FILE.
    #[arg(long, value_name = "FILE", hide = true)]
    pub vr_profile: Option<PathBuf>,

    /// (Internal) a forward run's replacements: `checkpoint pc use value` a line.
    #[arg(long, value_name = "FILE", hide = true)]
    pub vr_plan: Option<PathBuf>,

    /// (Internal) a forward run's expected standard output: a child that departs from it
    /// gives up.
    #[arg(long, value_name = "FILE", hide = true)]
    pub vr_expected: Option<PathBuf>,

    /// One replaced run: at the N-th execution of the instruction at PC (hex), its use USE
    /// (from 0) reads VALUE.
    #[arg(long, value_name = "PC:N:USE:VALUE")]
    pub vr_replace: Option<String>,
}

/// Ids of the options the tool owns (the suite's with spectra).
pub fn option_ids() -> Vec<String> {
    [super::ids::<Options>(), super::spectra::option_ids()].concat()
}

fn program(cli: &Cli) -> String {
    std::fs::canonicalize(crate::resolve(&cli.command[0])).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default()
}

fn claimed(e: rtgrind_jit::claims::ClaimError) -> Error {
    Error::internal(format!("internal: {e}"))
}

/// A run of its own: a profiling run, a forward run, or one replaced run.
pub fn make(cli: &Cli) -> Result<Box<dyn ToolRun>, Error> {
    let o = &cli.vr;
    if let Some(out) = &o.vr_profile {
        return Ok(Box::new(profile::Profile::new(out.clone(), program(cli))));
    }
    if let Some(plan) = &o.vr_plan {
        let dir = cli.checkpoints.clone().ok_or_else(|| Error::usage("--vr-plan is a forward run's: it needs --checkpoints".into()))?;
        let checkpoints = super::checkpoints::Checkpoints::read(dir, cli.switch.jobs as usize);
        let plan = fork::read_plan(plan).map_err(Error::usage)?;
        let budget = cli.budget_blocks.unwrap_or(1 << 40);
        let expected = match &o.vr_expected {
            Some(p) => Some(std::fs::read(p).map_err(|e| Error::usage(format!("--vr-expected: cannot read '{}': {e}", p.display())))?),
            None => None,
        };
        return Ok(Box::new(fork::new(checkpoints, plan, budget, program(cli), expected).map_err(claimed)?));
    }
    if let Some(spec) = &o.vr_replace {
        let t = replace::Target::parse(spec)
            .ok_or_else(|| Error::usage(format!("invalid --vr-replace value '{spec}' (expected PC:N:USE:VALUE, e.g. 0x401136:3:0:499)")))?;
        return Ok(Box::new(replace::Replace::new(t)));
    }
    Err(Error::usage("--tool=vr ranks lines over a test suite (--suite=FILE or --suite-dir=DIR), or replaces one value (--vr-replace)".into()))
}

/// Without a run of its own, the search.
pub fn wants_search(cli: &Cli) -> bool {
    let o = &cli.vr;
    o.vr_profile.is_none() && o.vr_plan.is_none() && o.vr_replace.is_none()
}

const RULE: super::sarif::Rule = super::sarif::Rule {
    id: "ivmp-line",
    description: "A source line where replacing a value the program reads makes failing tests pass (value replacement)",
    help: "Lines are ranked by the failing tests that one replaced value at the line makes pass (an IVMP), Tarantula breaking ties: start reading at the top-ranked lines.",
};

/// The search; its exit status (2 when the suite does not both pass and fail).
pub fn search(cli: &Cli) -> Result<i32, Error> {
    let o = &cli.spectra;
    let mut run = super::suite::SuiteSearch::new(cli, "vr")?;
    let timeout = Duration::from_secs(o.test_timeout);
    let mut s = search::VrSearch::new(&run.tests, timeout, Duration::from_secs(cli.vr.vr_budget), 1, run.program_name());
    run.runner.drive(&mut s);
    let mut report = rank::report(&s, cli.vr.faults);
    run.finish(&mut report);
    let pid = std::process::id();
    let output = super::output::Output { dot: None, text_findings: Some(o.top), ..super::output::Output::of(cli) };
    super::output::emit(&report, RULE, &output, |line| eprintln!("=={pid}== {line}"));
    Ok(super::suite::exit_status(cli, &report))
}
