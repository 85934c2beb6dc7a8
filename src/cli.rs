//! Command line: Valgrind's conventions (`rtgrind [options] --tool=NAME prog [args]`).

use clap::{Parser, ValueEnum};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ToolName {
    /// Run the program under the JIT with no instrumentation.
    None,
    /// Count instructions, blocks, loads, stores and conditional branches (inline counters).
    Count,
    /// Track which branches, addresses and syscall arguments depend on input bytes.
    Taint,
    /// Invert the outcome of one instance of one conditional branch.
    Switch,
    /// Find the first point of memory corruption behind a crash (iterated suppression).
    Suppress,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum YesNo {
    Yes,
    No,
}

/// rtgrind: run a program under a dynamic binary translator and find root causes of failures.
#[derive(Parser, Debug)]
#[command(name = "rtgrind", version, about, trailing_var_arg = true, after_help = "Example: rtgrind --tool=none ./prog arg1 arg2")]
pub struct Cli {
    /// The tool to run the program under.
    #[arg(long, value_enum, default_value = "none")]
    pub tool: ToolName,

    /// Print nothing of rtgrind's own except errors.
    #[arg(short, long)]
    pub quiet: bool,

    /// Write rtgrind's messages to FILE instead of stderr.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub log_file: Option<PathBuf>,

    /// Print translation and dispatch statistics at exit.
    #[arg(long, help_heading = "Output")]
    pub stats: bool,

    /// Run programs started with execve under rtgrind too.
    #[arg(long, value_enum, default_value = "no", value_name = "yes|no", help_heading = "Processes")]
    pub trace_children: YesNo,

    /// Thread scheduling policy: rr, random:SEED, pct:SEED:DEPTH or replay:FILE.
    #[arg(long, default_value = "rr", value_name = "POLICY", help_heading = "Threads")]
    pub sched: String,

    /// Translated blocks a thread runs before the next scheduling point.
    #[arg(long, default_value_t = 50_000, value_parser = clap::value_parser!(u64).range(1..), help_heading = "Threads")]
    pub quantum: u64,

    /// Write every scheduling decision to FILE (replay it with --sched=replay:FILE).
    #[arg(long, value_name = "FILE", help_heading = "Threads")]
    pub record_schedule: Option<PathBuf>,

    /// Pin what the program reads from the machine (ASLR, clocks, rdtsc, random bytes).
    #[arg(long, value_enum, default_value = "no", value_name = "yes|no", help_heading = "Repeatable runs")]
    pub repeatable: YesNo,

    /// Seed for the random bytes of a repeatable run.
    #[arg(long, default_value_t = 0, help_heading = "Repeatable runs")]
    pub seed: u64,

    /// Standard input of the program: FILE, which is first created from rtgrind's own
    /// standard input if it does not exist (capture once, replay in every later run).
    #[arg(long, value_name = "FILE", help_heading = "Repeatable runs")]
    pub stdin_file: Option<PathBuf>,

    /// Stop before thread THREAD (0 = main, then in creation order) runs its INSTANCE-th
    /// translated block, and dump its registers.
    #[arg(long, value_name = "THREAD:INSTANCE", help_heading = "Repeatable runs")]
    pub stop_at: Option<String>,

    /// count: also break the counts down by function.
    #[arg(long, help_heading = "Tool options")]
    pub per_function: bool,

    /// taint: where input comes from: stdin, argv or a file's path.
    #[arg(long, value_name = "stdin|argv|FILE", help_heading = "Tool options")]
    pub taint_input: Option<String>,

    /// taint: also track which instruction instance defined each value (origins), and say
    /// where each tainted branch's flags were defined.
    #[arg(long, value_enum, default_value = "no", value_name = "yes|no", help_heading = "Tool options")]
    pub track_origins: YesNo,

    /// switch: the branch instance to invert: ADDR (hex guest address of a conditional
    /// branch) and N (its N-th execution, from 1).
    #[arg(long, value_name = "ADDR:N", help_heading = "Tool options")]
    pub switch_at: Option<String>,

    /// switch: the expected standard output of a correct run (byte for byte).
    #[arg(long, value_name = "FILE", help_heading = "Tool options")]
    pub expected_output: Option<PathBuf>,

    /// switch: the expected standard error of a correct run.
    #[arg(long, value_name = "FILE", help_heading = "Tool options")]
    pub expected_stderr: Option<PathBuf>,

    /// switch: the expected exit status of a correct run.
    #[arg(long, value_name = "N", help_heading = "Tool options")]
    pub expected_exit: Option<i32>,

    /// switch: a shell command that judges a run: it gets the run's standard output on its
    /// standard input and its files' paths in $RTGRIND_STDOUT and $RTGRIND_STDERR; exit 0 = pass.
    #[arg(long, value_name = "CMD", help_heading = "Tool options")]
    pub oracle: Option<String>,

    /// switch: candidate order: lefs (last executed first), last-instance-first, prior (by
    /// dynamic dependence distance from the failure).
    #[arg(long, default_value = "lefs", value_name = "ORDER", help_heading = "Tool options")]
    pub order: String,

    /// switch: also switch branches in libraries.
    #[arg(long, value_enum, default_value = "no", value_name = "yes|no", help_heading = "Tool options")]
    pub switch_libs: YesNo,

    /// switch: keep searching after the first success and list every successful switch.
    #[arg(long, help_heading = "Tool options")]
    pub all: bool,

    /// switch: a switched run may enter this many times more blocks than the original run.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..), help_heading = "Tool options")]
    pub budget_factor: u64,

    /// switch: search by forking at each candidate from forward runs of the program (yes), or
    /// by re-running the program once per candidate (no).
    #[arg(long, value_enum, default_value = "yes", value_name = "yes|no", help_heading = "Tool options")]
    pub fork: YesNo,

    /// switch: switched runs (forked children) at once.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..), help_heading = "Tool options")]
    pub jobs: u64,

    /// switch (internal): the forward pass of the fork search, with its files in DIR (DIR/at:
    /// the branch instances to fork at; `--budget-blocks` is each child's budget).
    #[arg(long, value_name = "DIR", hide = true)]
    pub switch_fork: Option<PathBuf>,

    /// switch (internal): record every conditional branch instance into FILE.
    #[arg(long, value_name = "FILE", hide = true)]
    pub switch_trace: Option<PathBuf>,

    /// switch (internal): the trace run also logs dynamic dependences (for --order=prior).
    #[arg(long, value_enum, default_value = "no", value_name = "yes|no", hide = true)]
    pub switch_deps: YesNo,

    /// Keep block counts in memory even where AVX-512's xmm16 could hold them (to compare).
    #[arg(long, hide = true)]
    pub count_in_memory: bool,

    /// Stop the run once a thread has entered N counted blocks (exit status 124).
    #[arg(long, value_name = "N", hide = true)]
    pub budget_blocks: Option<u64>,

    /// Write the main thread's count of entered blocks to FILE at the end of the run.
    #[arg(long, value_name = "FILE", hide = true)]
    pub blocks_out: Option<PathBuf>,

    /// suppress: most program runs the search may take.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(3..), help_heading = "Tool options")]
    pub max_runs: u32,

    /// suppress, switch: exit status when a root cause or critical predicate was reported.
    #[arg(long, default_value_t = 1, help_heading = "Tool options")]
    pub error_exitcode: i32,

    /// suppress: the failure to explain when it is not a crash: exit-code (a non-zero exit
    /// status), stderr:REGEX (standard error matches), output:FILE (standard output differs
    /// from FILE).
    #[arg(long, value_name = "KIND", help_heading = "Tool options")]
    pub failure: Option<String>,

    /// suppress, switch: also print the result as JSON on stdout.
    #[arg(long, help_heading = "Tool options")]
    pub json: bool,

    /// suppress, switch: also print the result as SARIF 2.1.0 on stdout.
    #[arg(long, help_heading = "Tool options")]
    pub sarif: bool,

    /// suppress: write the chain of runs as a Graphviz graph to FILE.
    #[arg(long, value_name = "FILE", help_heading = "Tool options")]
    pub dot: Option<PathBuf>,

    /// suppress (internal): run once with the suppression points in FILE.
    #[arg(long, value_name = "FILE", hide = true)]
    pub suppress_plan: Option<PathBuf>,

    /// suppress (internal): where that run writes its outcome.
    #[arg(long, value_name = "FILE", hide = true)]
    pub suppress_out: Option<PathBuf>,

    /// The program to run, and its arguments.
    #[arg(required = true, num_args = 1.., value_name = "PROG [ARGS]...")]
    pub command: Vec<std::ffi::OsString>,
}

#[cfg(test)]
mod tests {
    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
