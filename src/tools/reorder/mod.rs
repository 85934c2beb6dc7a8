//! `--tool=reorder`: variable re-ordering (the dissertation's §5.3). A run that corrupts memory
//! without crashing is run again under layouts of its variables (`crate::layout`) chosen by the
//! (buffer, address-variable) pairing heuristic (`layout::pairs`), until one makes it fail;
//! the layout is saved for every tool to run under (`--layout=FILE`). The search is `driver`.

pub mod driver;

use super::{Error, ToolRun};
use crate::cli::Cli;
use std::path::PathBuf;

/// `--tool=reorder`'s options (with `--jobs`, which it shares with `--tool=switch`).
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Options of --tool=reorder")]
pub struct Options {
    /// Most layouts the search tries.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_layouts: u32,

    /// Where to save the layout that exposed a failure (--tool=reorder, and --tool=suppress's
    /// layout search; default: rtgrind-layout.json in the current directory, or the first
    /// rtgrind-layout-N.json that does not exist).
    #[arg(long, value_name = "FILE")]
    pub layout_out: Option<PathBuf>,
}

/// Ids of the options the tool owns.
pub fn option_ids() -> Vec<String> {
    [super::ids::<Options>(), vec!["jobs".to_string()], super::ids::<super::SearchOptions>()].concat()
}

/// The tool is a search only.
pub fn make(_: &Cli) -> Result<Box<dyn ToolRun>, Error> {
    Err(Error::usage("--tool=reorder is a search of layouts; it has no run of its own".into()))
}

pub fn wants_search(_: &Cli) -> bool {
    true
}

/// The search; its exit status.
pub fn search(cli: &Cli) -> Result<i32, Error> {
    let program = crate::resolve(&cli.command[0]);
    if !program.is_file() {
        return Err(Error { message: format!("{}: no such file", cli.command[0].to_string_lossy()), code: 127 });
    }
    let out = crate::layout::new_file(cli.reorder.layout_out.as_deref()).map_err(Error::usage)?;
    let program = std::fs::canonicalize(&program).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    let objects = crate::layout::objects::Objects::of(&program).ok_or_else(|| Error::usage(format!("{program}: not an ELF file rtgrind can read")))?;
    let runner = super::search::Runner::new("reorder", cli).map_err(|e| Error::internal(e.to_string()))?;
    let opts = driver::Options { max_layouts: cli.reorder.max_layouts as usize, jobs: cli.switch.jobs as usize, out, program, objects };
    crate::log_to_file(cli);
    let report = driver::drive(runner, cli.command.clone(), opts);
    driver::emit(&report, cli);
    Ok(if report.result == "no-failure" { 0 } else { cli.search.error_exitcode })
}
