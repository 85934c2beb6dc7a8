//! The live progress line of a search that re-runs the program (indicatif): the run it is at,
//! what that run is for (with how many of its kind there are: "switched run 4 of 31"), and
//! the time elapsed. Drawn where standard error is a terminal and `-q` was not given
//! (`--progress=auto`), always, or never; cleared before the report.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// The bar `when` asks for (`quiet`: `-q` was given), of `len` steps where they are known:
/// hidden where it is not to be drawn, else drawn on standard error in `style`, and on a
/// terminal kept moving every `tick` (the time goes on during a long step; not into a file).
pub fn bar(when: When, quiet: bool, len: Option<u64>, style: ProgressStyle, tick: Duration) -> ProgressBar {
    let terminal = std::io::stderr().is_terminal();
    let target = match when {
        // (indicatif's own stderr target draws on a terminal only.)
        When::Always => ProgressDrawTarget::term_like(Box::new(console::Term::stderr())),
        When::Auto if terminal && !quiet => ProgressDrawTarget::stderr(),
        _ => ProgressDrawTarget::hidden(),
    };
    let bar = ProgressBar::with_draw_target(len, target);
    bar.set_style(style);
    if terminal && !bar.is_hidden() {
        bar.enable_steady_tick(tick);
    }
    bar
}

/// `--progress`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum When {
    Auto,
    Always,
    Never,
}

pub struct Progress {
    bar: ProgressBar,
    tool: String,
}

impl Progress {
    /// A progress line for `tool`'s search as the command line asks.
    pub fn of(cli: &crate::cli::Cli, tool: &str) -> Progress {
        let style = ProgressStyle::with_template("{spinner} {msg} · {elapsed}").expect("a valid template");
        let bar = bar(cli.search.progress, cli.quiet, None, style, Duration::from_millis(250));
        Progress { bar, tool: tool.to_string() }
    }

    /// No progress line (a search inside another, a test).
    pub fn hidden() -> Progress {
        Progress { bar: ProgressBar::hidden(), tool: String::new() }
    }

    /// Runs `first..=last` start, for `what`.
    pub fn runs(&self, first: u32, last: u32, what: &str) {
        let runs = if first == last { format!("run {first}") } else { format!("runs {first}-{last}") };
        self.bar.set_message(format!("{}: {runs}: {what}", self.tool));
        self.bar.tick();
    }

    /// The search is over: the line is cleared.
    pub fn done(&self) {
        self.bar.finish_and_clear();
    }
}
