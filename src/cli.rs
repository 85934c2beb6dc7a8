//! Command line: Valgrind's conventions (`rtgrind [options] --tool=NAME prog [args]`).

use clap::{Parser, ValueEnum};
use std::ffi::OsString;
use std::path::PathBuf;

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
    #[arg(long, default_value = "none", value_parser = crate::tools::tool_names())]
    pub tool: String,

    /// Print nothing of rtgrind's own except errors and the death of a program that crashed (a
    /// fault, or abort()), not of one that another process killed.
    #[arg(short, long)]
    pub quiet: bool,

    /// Write rtgrind's messages to FILE instead of stderr (appended). As Valgrind's: %p is
    /// rtgrind's process id, %q{VAR} the value of the environment variable VAR, %% a %.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub log_file: Option<PathBuf>,

    /// Print translation and dispatch statistics at exit (code bytes per guest instruction,
    /// translation time by phase, decodes per instruction).
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

    /// (Internal) a search's forward run: fork at the checkpoints listed in DIR/at, each child
    /// running the tool's variant (`tools::checkpoints`).
    #[arg(long, value_name = "DIR", hide = true)]
    pub checkpoints: Option<PathBuf>,

    /// Stop before thread THREAD (0 = main, then in creation order) runs its INSTANCE-th
    /// translated block, and dump its registers.
    #[arg(long, value_name = "THREAD:INSTANCE", help_heading = "Repeatable runs")]
    pub stop_at: Option<String>,

    /// (Debugging, a search's runs) keep translations in DIR across runs: look each block up
    /// there before translating it, add this run's at its end (`rtgrind_jit::persist`). Only
    /// for tools whose code is relocatable (today `none`).
    #[arg(long, value_name = "DIR", hide = true)]
    pub code_cache: Option<PathBuf>,

    /// Keep block counts in memory even where AVX-512's xmm16 could hold them (to compare).
    #[arg(long, hide = true)]
    pub count_in_memory: bool,

    /// Stop the run once a thread has entered N counted blocks (exit status 124).
    #[arg(long, value_name = "N", hide = true)]
    pub budget_blocks: Option<u64>,

    /// Write the main thread's count of entered blocks to FILE at the end of the run.
    #[arg(long, value_name = "FILE", hide = true)]
    pub blocks_out: Option<PathBuf>,

    /// (Internal, a search's runs) log each name the program creates to FILE, a path a line.
    #[arg(long, value_name = "FILE", hide = true)]
    pub created_out: Option<PathBuf>,

    /// Run with the program's variables where layout FILE puts them (written by
    /// --tool=reorder; any tool reads it), or in a random layout (random:SEED).
    #[arg(long, value_name = "FILE", help_heading = "Layouts")]
    pub layout: Option<PathBuf>,

    /// (Internal) write which variables the run's code names to FILE (--tool=reorder's search).
    #[arg(long, value_name = "FILE", hide = true)]
    pub layout_record: Option<PathBuf>,

    /// (Not an option) what a search passes on to each of its runs: the run options given on
    /// the command line (`run_options`).
    #[arg(skip)]
    pub run_options: Vec<String>,

    // Each tool's own options, under its heading (a tool refuses another's: `main`).
    #[command(flatten)]
    pub count: crate::tools::count::Options,

    #[command(flatten)]
    pub taint: crate::tools::taint::Options,

    #[command(flatten)]
    pub switch: crate::tools::switch::Options,

    #[command(flatten)]
    pub suppress: crate::tools::suppress::Options,

    #[command(flatten)]
    pub race: crate::tools::race::Options,

    #[command(flatten)]
    pub reorder: crate::tools::reorder::Options,

    #[command(flatten)]
    pub spectra: crate::tools::spectra::Options,

    #[command(flatten)]
    pub cbi: crate::tools::cbi::Options,

    #[command(flatten)]
    pub vr: crate::tools::vr::Options,

    #[command(flatten)]
    pub search: crate::tools::SearchOptions,

    #[command(flatten)]
    pub failure: crate::tools::FailureOptions,

    /// The program to run, and its arguments.
    #[arg(required = true, num_args = 1.., value_name = "PROG [ARGS]...")]
    pub command: Vec<std::ffi::OsString>,
}

/// Options that describe one process, never passed on to a program it starts: its input, its
/// files, its stops and budgets, a search's internal protocol, and the tool and tracing, which
/// the child gets explicitly.
const PER_PROCESS: [&str; 15] = [
    "tool",
    "trace_children",
    "command",
    "stdin_file",
    "record_schedule",
    "stop_at",
    "blocks_out",
    "budget_blocks",
    "suppress_plan",
    "suppress_out",
    "race_out",
    "race_plan",
    "checkpoints",
    "switch_trace",
    "dot",
];

/// The options for a program started under `--trace-children=yes`: every option given on the
/// command line (each tool's own included), but the per-process ones.
pub fn child_options(matches: &clap::ArgMatches, command: &clap::Command, tool: &str) -> Vec<String> {
    let mut opts = vec![format!("--tool={tool}"), "--trace-children=yes".to_string()];
    // (A layout is one program's: not another's it starts.)
    opts.extend(given(matches, command, &|id| !PER_PROCESS.contains(&id) && !["layout", "layout_record"].contains(&id)));
    opts
}

/// What a search (`tools::search::Runner`) sets in each of its runs itself, or keeps for its own
/// output: never passed on from the command line.
const SEARCH_OWN: [&str; 6] = ["quiet", "log_file", "repeatable", "seed", "count_in_memory", "created_out"];

/// The options a search passes on to each of its runs: every option given on the command line
/// but the per-process ones, the search's own, and the tools' (the search's tool speaks to its
/// runs through its own arguments): the scheduler's, the engine's, `--stats`.
pub fn run_options(matches: &clap::ArgMatches, command: &clap::Command) -> Vec<String> {
    let tools: Vec<String> = crate::tools::TOOLS.iter().flat_map(|t| (t.options)()).collect();
    given(matches, command, &|id| !PER_PROCESS.contains(&id) && !SEARCH_OWN.contains(&id) && !tools.iter().any(|t| t == id))
}

/// The options given on the command line whose ids `keep` accepts, as `--long[=value]`.
fn given(matches: &clap::ArgMatches, command: &clap::Command, keep: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut opts = Vec::new();
    for arg in command.get_arguments() {
        let id = arg.get_id().as_str();
        if !keep(id) || matches.value_source(id) != Some(clap::parser::ValueSource::CommandLine) {
            continue;
        }
        let Some(long) = arg.get_long() else { continue };
        if !arg.get_action().takes_values() {
            opts.push(format!("--{long}"));
            continue;
        }
        for v in matches.get_raw(id).into_iter().flatten() {
            opts.push(format!("--{long}={}", v.to_string_lossy()));
        }
    }
    opts
}

/// The environment variable a search sets for the rtgrind runs it makes: they take their
/// options from their command line alone (the user's defaults were applied once, by the
/// search).
pub const CHILD_RUN: &str = "RTGRIND_CHILD_RUN";

/// rtgrind's options from where Valgrind users keep theirs, in Valgrind's order, each
/// overriding the ones before and the command line overriding them all: `~/.rtgrindrc`,
/// `$RTGRIND_OPTS`, `./.rtgrindrc` (only if it is a regular file of the user's own, as
/// Valgrind's `./.valgrindrc`). Whitespace-separated options; `#` starts a comment in a file.
pub fn default_options(home: Option<&std::path::Path>, env: Option<&str>, cwd: &std::path::Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let file = |path: &std::path::Path, own_only: bool| -> Vec<String> {
        let Ok(meta) = std::fs::symlink_metadata(path) else { return Vec::new() };
        // SAFETY: getuid has no preconditions.
        if !meta.is_file() || own_only && meta.uid() != unsafe { libc::getuid() } {
            return Vec::new();
        }
        let text = std::fs::read_to_string(path).unwrap_or_default();
        text.lines().flat_map(|l| l.split('#').next().unwrap_or_default().split_whitespace().map(str::to_string).collect::<Vec<_>>()).collect()
    };
    let mut out = home.map(|h| file(&h.join(".rtgrindrc"), false)).unwrap_or_default();
    out.extend(env.unwrap_or_default().split_whitespace().map(str::to_string));
    if home.is_none_or(|h| h != cwd) {
        out.extend(file(&cwd.join(".rtgrindrc"), true));
    }
    out
}

/// `--log-file`'s name with Valgrind's escapes replaced: `%p` by `pid`, `%q{VAR}` by the
/// environment variable's value (`env`), `%%` by `%`; any other `%` is an error.
pub fn log_file_name(template: &str, pid: u32, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(k) = rest.find('%') {
        out.push_str(&rest[..k]);
        let after = &rest[k + 1..];
        rest = match after.chars().next() {
            Some('p') => {
                out.push_str(&pid.to_string());
                &after[1..]
            }
            Some('%') => {
                out.push('%');
                &after[1..]
            }
            Some('q') => {
                let name = after[1..].strip_prefix('{').and_then(|n| n.split_once('}'));
                let Some((var, tail)) = name.filter(|(v, _)| !v.is_empty()) else {
                    return Err(format!("--log-file: '%q' in '{template}' is not followed by {{VAR}}"));
                };
                out.push_str(&env(var).ok_or_else(|| format!("--log-file: %q{{{var}}} in '{template}': {var} is not set"))?);
                tail
            }
            _ => return Err(format!("--log-file: '%' in '{template}' is not followed by p, q{{VAR}} or %")),
        };
    }
    out.push_str(rest);
    Ok(out)
}

/// The command line of `rtgrind NAME ...`: a usage error is one line (help and version print
/// as clap does), and its exit status.
pub fn parse_command<T: Parser>(name: &str, args: &[OsString], usage: &str) -> Result<T, i32> {
    let argv = std::iter::once(OsString::from(format!("rtgrind {name}"))).chain(args.iter().cloned());
    T::try_parse_from(argv).map_err(|e| {
        use clap::error::ErrorKind;
        if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
            e.exit();
        }
        // (clap's first line; one that ends in ':' goes on with what is missing.)
        let text = e.to_string();
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let mut first = lines.next().unwrap_or("invalid usage").trim_start_matches("error: ").to_string();
        if first.ends_with(':') {
            first = format!("{first} {}", lines.next().unwrap_or_default());
        }
        command_error(&format!("{name}: {first} (usage: {usage})"))
    })
}

/// One line of error of a command of rtgrind's own, and its exit status (bad usage).
pub fn command_error(msg: &str) -> i32 {
    eprintln!("rtgrind: error: {msg}");
    crate::EXIT_USAGE
}

#[cfg(test)]
mod tests {
    /// Valgrind's escapes of `--log-file`: the pid, an environment variable, a percent sign;
    /// a bad escape or an unset variable is an error.
    #[test]
    fn log_file_names_expand_as_valgrind_s() {
        let env = |v: &str| (v == "JOB").then(|| "nightly".to_string());
        assert_eq!(super::log_file_name("rt.%p.log", 42, &env), Ok("rt.42.log".to_string()));
        assert_eq!(super::log_file_name("%q{JOB}/%p-100%%", 7, &env), Ok("nightly/7-100%".to_string()));
        assert_eq!(super::log_file_name("plain", 7, &env), Ok("plain".to_string()));
        for bad in ["a%", "a%x", "%q", "%q{}", "%q{JOB", "%q{UNSET}"] {
            assert!(super::log_file_name(bad, 7, &env).is_err(), "{bad}");
        }
    }

    /// A traced child gets every option given but the per-process ones (issue 22).
    #[test]
    fn children_get_every_option_but_the_per_process_ones() {
        use clap::CommandFactory;
        let command = super::Cli::command();
        let argv = [
            "rtgrind",
            "--tool=taint",
            "--sched=random:7",
            "--track-origins=yes",
            "--taint-input=argv",
            "--stdin-file=in",
            "--trace-children=yes",
            "-q",
            "prog",
            "--sched=x",
        ];
        let matches = command.clone().try_get_matches_from(argv).unwrap();
        let opts = super::child_options(&matches, &command, "taint");
        for o in ["--tool=taint", "--trace-children=yes", "--sched=random:7", "--track-origins=yes", "--taint-input=argv", "--quiet"] {
            assert!(opts.contains(&o.to_string()), "{o} missing from {opts:?}");
        }
        assert!(!opts.iter().any(|o| o.starts_with("--stdin-file") || o == "--sched=x" || o.starts_with("--seed")), "{opts:?}");
    }

    /// A search passes the scheduler's and the engine's options on to its runs, not its own,
    /// its tool's, or those it sets itself (issue 22).
    #[test]
    fn a_search_passes_the_run_options_on() {
        use clap::CommandFactory;
        let command = super::Cli::command();
        let argv = ["rtgrind", "--tool=suppress", "--sched=pct:3:2", "--quantum=500", "--max-runs=9", "--json", "--seed=4", "-q", "--stats", "prog"];
        let matches = command.clone().try_get_matches_from(argv).unwrap();
        assert_eq!(super::run_options(&matches, &command), ["--stats", "--sched=pct:3:2", "--quantum=500"]);
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
