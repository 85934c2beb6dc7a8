//! `rtgrind triage`: a corpus of crashing inputs (a regression suite's, a fuzzer's) grouped by
//! root cause rather than by crash stack. Every input is reproduced in repeatable runs and its
//! root cause searched by a tool (`--tool=suppress`: the first point of memory corruption),
//! each in a child rtgrind (`input`); inputs with one root cause form a group named by a stable
//! fingerprint (`groups`). AFL's and CASR's conventions: `-i DIR|FILE...`, `@@` for the input's
//! path (else it is the program's standard input), `-j`, `-t`.

pub mod corpus;
pub mod groups;
pub mod input;
pub mod model;

use clap::Parser;
use model::{Status, Triage};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Group a corpus of crashing inputs by root cause.
#[derive(Parser, Debug)]
#[command(name = "rtgrind triage", version, about, after_help = "Example: rtgrind triage -i crashes/ -o triage-out -j 2 -- ./prog --parse @@")]
pub struct Options {
    /// The tool that finds each input's root cause.
    #[arg(long, default_value = "suppress", value_parser = ["suppress"])]
    pub tool: String,

    /// Input files, or directories of them (a fuzzer's queue or crashes: every file in it).
    #[arg(short = 'i', long = "input", required = true, num_args = 1.., value_name = "DIR|FILE")]
    pub inputs: Vec<PathBuf>,

    /// Directory for the results (triage.json); one that exists is refused unless --force.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,

    /// Write into an output directory that exists (its triage.json is replaced).
    #[arg(long)]
    pub force: bool,

    /// Inputs triaged at once.
    #[arg(short = 'j', long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=256))]
    pub jobs: u64,

    /// Seconds a run of the program may take before it is killed (a hang); a root-cause
    /// search may take 60 times as long.
    #[arg(short = 't', long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=86400))]
    pub timeout: u64,

    /// Print one JSON record per input and per group on standard output.
    #[arg(long)]
    pub json: bool,

    /// The program and its arguments, `@@` where an input's path goes.
    #[arg(last = true, required = true, value_name = "PROG [ARGS]...")]
    pub command: Vec<OsString>,
}

/// A JSON record of `--json`.
#[derive(serde::Serialize)]
#[serde(tag = "record", rename_all = "kebab-case")]
enum Record<'a> {
    Input(&'a model::Input),
    Group(&'a model::Group),
}

/// Runs `rtgrind triage ARGS`: the exit status.
pub fn main(args: &[OsString]) -> i32 {
    let argv = std::iter::once(OsString::from("rtgrind triage")).chain(args.iter().cloned());
    let opts = match Options::try_parse_from(argv) {
        Ok(o) => o,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                e.exit();
            }
            let first = e.to_string().lines().next().unwrap_or("invalid usage").trim_start_matches("error: ").to_string();
            return error(&format!("triage: {first} (usage: rtgrind triage -i DIR|FILE... [-o OUT] -- PROG [ARGS] [@@])"));
        }
    };
    match run(&opts) {
        Ok(code) => code,
        Err(e) => error(&format!("triage: {e}")),
    }
}

fn error(msg: &str) -> i32 {
    eprintln!("rtgrind: error: {msg}");
    crate::EXIT_USAGE
}

/// Checks everything given, then triages every input.
fn run(opts: &Options) -> Result<i32, String> {
    let program = crate::resolve(&opts.command[0]);
    check_program(&program)?;
    let inputs = corpus::inputs(&opts.inputs)?;
    if inputs.is_empty() {
        let given: Vec<String> = opts.inputs.iter().map(|p| format!("'{}'", p.display())).collect();
        return Err(format!("no inputs in {}", given.join(", ")));
    }
    if let Some(out) = &opts.output {
        if out.exists() && !opts.force {
            return Err(format!("-o: '{}' exists; not writing into it (--force to)", out.display()));
        }
        std::fs::create_dir_all(out).map_err(|e| format!("-o: cannot create '{}': {e}", out.display()))?;
    }
    let scratch = match &opts.output {
        Some(out) => out.join("runs"),
        None => std::env::temp_dir().join(format!("rtgrind-triage-{}", std::process::id())),
    };
    let mut command = opts.command.clone();
    command[0] = std::path::absolute(&program).map_err(|e| e.to_string())?.into_os_string();
    let target = input::Target {
        rtgrind: std::env::current_exe().map_err(|e| format!("cannot find rtgrind itself: {e}"))?,
        tool: opts.tool.clone(),
        command,
        timeout: Duration::from_secs(opts.timeout),
    };
    let started = Instant::now();
    let mut results = triage_all(&target, &inputs, &scratch, opts.jobs as usize);
    let _ = std::fs::remove_dir_all(&scratch);
    let groups = groups::group(&mut results, &program);
    let triage = Triage {
        version: model::VERSION,
        tool: opts.tool.clone(),
        command: opts.command.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
        inputs: results,
        groups,
        seconds: (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
    };
    for line in summary(&triage) {
        eprintln!("triage: {line}");
    }
    if opts.json {
        for i in &triage.inputs {
            println!("{}", serde_json::to_string(&Record::Input(i)).expect("serializes"));
        }
        for g in &triage.groups {
            println!("{}", serde_json::to_string(&Record::Group(g)).expect("serializes"));
        }
    }
    if let Some(out) = &opts.output {
        let path = out.join("triage.json");
        let text = serde_json::to_string_pretty(&triage).expect("serializes") + "\n";
        std::fs::write(&path, text).map_err(|e| format!("cannot write '{}': {e}", path.display()))?;
    }
    Ok(0)
}

/// A program that cannot run is refused before any input is.
fn check_program(program: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(program).map_err(|e| format!("cannot run '{}': {e}", program.display()))?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(format!("cannot run '{}': not an executable file", program.display()));
    }
    let mut head = [0u8; 4];
    let n = std::fs::File::open(program).and_then(|mut f| std::io::Read::read(&mut f, &mut head)).unwrap_or(0);
    if !(n == 4 && head == *b"\x7fELF" || n >= 2 && head[..2] == *b"#!") {
        return Err(format!("cannot run '{}': neither an ELF executable nor a script", program.display()));
    }
    Ok(())
}

/// Every input triaged, `jobs` at a time, each with its own scratch directory; in the
/// inputs' order.
fn triage_all(target: &input::Target, inputs: &[PathBuf], scratch: &Path, jobs: usize) -> Vec<model::Input> {
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<model::Input>>> = Mutex::new(vec![None; inputs.len()]);
    std::thread::scope(|s| {
        for _ in 0..jobs.min(inputs.len()) {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::SeqCst);
                let Some(path) = inputs.get(k) else { break };
                let dir = scratch.join(k.to_string());
                let result = match std::fs::create_dir_all(&dir) {
                    Ok(()) => target.triage(path, &dir),
                    Err(e) => model::Input {
                        path: path.display().to_string(),
                        status: Status::Inconclusive,
                        reason: Some(format!("cannot make its scratch directory: {e}")),
                        ..model::Input::default()
                    },
                };
                let _ = std::fs::remove_dir_all(&dir);
                let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                eprintln!("triage: [{n}/{}] {}: {}", inputs.len(), result.path, result.status.describe());
                results.lock().expect("not poisoned")[k] = Some(result);
            });
        }
    });
    results.into_inner().expect("not poisoned").into_iter().flatten().collect()
}

/// The summary: the counts, then each group (its root cause, members and crash sites), then
/// the inputs without one.
fn summary(t: &Triage) -> Vec<String> {
    let count = |s: Status| t.inputs.iter().filter(|i| i.status == s).count();
    let mut parts = Vec::new();
    for s in [Status::RootCause, Status::Flaky, Status::Inconclusive, Status::NoCrash, Status::Timeout, Status::Unreadable] {
        if count(s) > 0 {
            parts.push(format!("{} {}", count(s), s.describe()));
        }
    }
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let mut out = vec![format!("{} in {:.1} s: {}; {}", plural(t.inputs.len(), "input"), t.seconds, parts.join(", "), plural(t.groups.len(), "root cause"))];
    for (k, g) in t.groups.iter().enumerate() {
        out.push(format!(
            "group {} [{}] {}: {}, {}",
            k + 1,
            g.fingerprint,
            g.place,
            plural(g.members.len(), "input"),
            plural(g.crash_sites.len(), "crash site")
        ));
        out.push(format!("   inputs: {}", g.members.join(", ")));
        out.push(format!("   crash sites: {}", g.crash_sites.join("; ")));
    }
    for i in t.inputs.iter().filter(|i| !i.status.has_root_cause() || i.status == Status::Flaky) {
        let why = match i.status {
            Status::Flaky => format!("failed in {} of {} runs", i.failed_runs, i.runs),
            _ => i.reason.clone().unwrap_or_default(),
        };
        let why = if why.is_empty() { String::new() } else { format!(" ({why})") };
        out.push(format!("{}: {}{why}", i.status.describe(), i.path));
    }
    out
}
