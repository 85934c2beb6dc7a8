//! `--tool=suppress`: the first point of memory corruption behind a crash, by iterated
//! execution suppression (`driver`), each run tracing and suppressing at once (`run`), with
//! branches skipped to their immediate post-dominator (`cfg`); `report` prints what it found.

mod calls;
pub mod cfg;
pub mod driver;
mod events;
mod flags;
mod frames;
mod guards;
mod ordinals;
pub mod plan;
mod records;
pub(super) mod redzones;
pub mod report;
pub mod run;
mod slice;
mod watch;

use super::{Error, ToolRun};
use crate::cli::Cli;
use std::path::PathBuf;

/// `--tool=suppress`'s options (and, hidden, those of the search's own runs).
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Options of --tool=suppress")]
pub struct Options {
    /// Most program runs the search may take.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(3..))]
    pub max_runs: u32,

    /// When a run does not fail, run it again with heap redzones (16 bytes after each block,
    /// checked at free, realloc and exit) and go on under them if it fails: a heap overflow
    /// that crashes nothing is found too (no: never).
    #[arg(long, value_enum, default_value = "yes", value_name = "yes|no")]
    pub reorder: crate::cli::YesNo,

    /// (Internal) run once with the suppression points in FILE.
    #[arg(long, value_name = "FILE", hide = true)]
    pub suppress_plan: Option<PathBuf>,

    /// (Internal) where that run writes its outcome.
    #[arg(long, value_name = "FILE", hide = true)]
    pub suppress_out: Option<PathBuf>,
}

/// Ids of the options the tool owns.
pub fn option_ids() -> Vec<String> {
    let shared = vec!["max_layouts".to_string(), "jobs".to_string(), "layout_out".to_string()];
    [super::ids::<Options>(), super::ids::<super::SearchOptions>(), super::ids::<super::FailureOptions>(), shared].concat()
}

/// One run of the search, with its plan (`--suppress-plan`).
pub fn make(cli: &Cli) -> Result<Box<dyn ToolRun>, Error> {
    let o = &cli.suppress;
    let path = o.suppress_plan.as_ref().ok_or_else(|| Error::usage("--tool=suppress runs with a plan only inside a search".into()))?;
    let text = std::fs::read_to_string(path).map_err(|e| Error::usage(format!("cannot read plan '{}': {e}", path.display())))?;
    let mut plan = plan::Plan::parse(&text).map_err(|e| Error::usage(format!("bad plan '{}': {e}", path.display())))?;
    plan.out = o.suppress_out.clone();
    let program = std::fs::canonicalize(crate::resolve(&cli.command[0])).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    area::claim().map_err(|e| Error::internal(format!("internal: {e}")))?;
    Ok(Box::new(run::SuppressRun::new(plan, program).map_err(Error::usage)?))
}

/// Without a plan: the search (runs of this program under rtgrind, each with a plan).
pub fn wants_search(cli: &Cli) -> bool {
    cli.suppress.suppress_plan.is_none()
}

/// The search; its exit status.
pub fn search(cli: &Cli) -> Result<i32, Error> {
    let o = &cli.suppress;
    if !crate::resolve(&cli.command[0]).is_file() {
        return Err(Error { message: format!("{}: no such file", cli.command[0].to_string_lossy()), code: 127 });
    }
    let dot = cli.failure.dot_file()?;
    let failure = failure_spec(cli)?;
    let (json, sarif) = (cli.search.json, cli.search.sarif);
    let opts = driver::Options {
        max_runs: o.max_runs,
        error_exitcode: cli.search.error_exitcode,
        failure,
        show_output: !json && !sarif,
        follow_new_failures: false,
        reorder: o.reorder == crate::cli::YesNo::Yes,
        layouts: layout_setup(cli)?,
    };
    let output = crate::tools::output::Output { dot, ..crate::tools::output::Output::of(cli) };
    crate::log_to_file(cli);
    Ok(driver::drive(super::search::Runner::new("suppress", cli), cli.command.clone(), opts, output))
}

/// What the complete technique may re-lay in the program (`--reorder=yes`), with the layout
/// search's limits (`--max-layouts`, `--jobs`); none for a program rtgrind cannot read.
pub fn layout_setup(cli: &Cli) -> Result<Option<driver::LayoutSetup>, Error> {
    if let Some(p) = cli.reorder.layout_out.as_deref().filter(|p| p.exists()) {
        return Err(Error::usage(format!("--layout-out: '{}' exists; not overwriting it", p.display())));
    }
    if cli.suppress.reorder == crate::cli::YesNo::No || cli.layout.is_some() {
        return Ok(None);
    }
    let Ok(program) = std::fs::canonicalize(crate::resolve(&cli.command[0])) else { return Ok(None) };
    let program = program.to_string_lossy().into_owned();
    let Some(objects) = crate::layout::objects::Objects::of(&program) else { return Ok(None) };
    let (max_layouts, jobs, out) = (cli.reorder.max_layouts as usize, cli.switch.jobs as usize, cli.reorder.layout_out.clone());
    Ok(Some(driver::LayoutSetup { objects, program, max_layouts, jobs, out }))
}

/// `--failure` checked, with a file it names made absolute (the runs may not share the
/// driver's idea of a relative path).
pub fn failure_spec(cli: &Cli) -> Result<Option<String>, Error> {
    let Some(f) = &cli.failure.failure else { return Ok(None) };
    run::check_failure(f).map_err(|_| {
        Error::usage(format!("invalid --failure '{f}' (expected exit-code, stderr:REGEX with a valid expression, or output:FILE naming a file)"))
    })?;
    Ok(Some(match f.strip_prefix("output:") {
        Some(p) => format!("output:{}", std::fs::canonicalize(p).map(|c| c.display().to_string()).unwrap_or(p.to_string())),
        None => f.clone(),
    }))
}

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
    /// How many calls the thread made at that site so far, that one included (`ordinals`).
    pub const CALL_ORD: usize = slot::END + 120;
    /// Addresses of this thread's tables of executions and of segment entries (`ordinals`).
    pub const ORDS: usize = slot::END + 128;
    pub const RINGS: usize = slot::END + 136;
    /// The last indirect call or jump's target, and the memory it was read from (0: a
    /// register, whose origin is `LAST_ICALL_ORIGIN`).
    pub const LAST_ICALL_TARGET: usize = slot::END + 144;
    pub const LAST_ICALL_SLOT: usize = slot::END + 152;
    /// The `pdep` mask of a segment's ring slot (`ordinals::SLOT_BITS`).
    pub const RING_SLOTS: usize = slot::END + 160;
    /// Which of the plan's calls suppressed whole (`State::calls`, from 1; 0: none) the
    /// program's innermost call may be: set at each call of the program (`program_call`), so
    /// a library's store tests this word and its code does not depend on the plan.
    pub const CALL_LIVE: usize = slot::END + 168;
    /// The library's store that found a live call (`call_checks`), for its call-out: its pc,
    /// and the registers its code spilled in bits 48-63.
    pub const CALL_STORE: usize = slot::END + 176;
    pub const END: usize = slot::END + 184;

    /// Claims these words and the shadow state's (`rtgrind_jit::claims`).
    pub fn claim() -> Result<(), rtgrind_jit::claims::ClaimError> {
        crate::shadow::claim_layout()?;
        rtgrind_jit::claims::claim("the suppression tool", rtgrind_jit::claims::Resource::Area { start: slot::END, len: END - slot::END })?;
        Ok(())
    }
}
