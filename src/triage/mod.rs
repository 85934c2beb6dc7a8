//! `rtgrind triage`: a corpus of crashing inputs (a regression suite's, a fuzzer's) grouped by
//! root cause rather than by crash stack. Every input is reproduced in repeatable runs and its
//! root cause searched by a tool (`--tool=suppress`: the first point of memory corruption),
//! each in a child rtgrind (`input`); inputs with one root cause form a group named by a stable
//! fingerprint (`groups`). AFL's and CASR's conventions: `-i DIR|FILE...`, `@@` for the input's
//! path (else it is the program's standard input), `-j`, `-t`.

pub mod corpus;
pub mod groups;
pub mod html;
pub mod input;
pub mod merge;
pub mod model;
pub mod outputs;

use crate::tools::progress::When;
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
    #[arg(long, default_value = "suppress", value_parser = ["suppress", "race"])]
    pub tool: String,

    /// Input files, or directories of them (a fuzzer's queue or crashes: every file in it).
    #[arg(short = 'i', long = "input", required = true, num_args = 1.., value_name = "DIR|FILE")]
    pub inputs: Vec<PathBuf>,

    /// Inputs triaged at once.
    #[arg(short = 'j', long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=256))]
    pub jobs: u64,

    /// Seconds a run of the program may take before it is killed (a hang); a root-cause
    /// search may take 60 times as long.
    #[arg(short = 't', long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=86400))]
    pub timeout: u64,

    /// Search the inputs that do not crash too, for memory corruption that heap redzones or
    /// a layout of the program's variables turn into a failure (a run per layout tried).
    #[arg(long)]
    pub expose: bool,

    /// Only the inputs of shard I of N (0 <= I < N), chosen by a hash of their content; merge
    /// the shards' results with `rtgrind triage merge`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,

    /// A live progress bar (inputs done, root causes so far, time left): on a terminal, else a
    /// line per input (auto); the bar always; neither (never).
    #[arg(long, value_enum, default_value = "auto", value_name = "auto|always|never")]
    pub progress: crate::tools::progress::When,

    /// The program and its arguments, `@@` where an input's path goes.
    #[arg(last = true, required = true, value_name = "PROG [ARGS]...")]
    pub command: Vec<OsString>,

    #[command(flatten)]
    pub results: ResultOptions,
}

/// Where a triage's results go, and what they are compared with (triage's and merge's).
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "Results")]
pub struct ResultOptions {
    /// Directory for the results (triage.json); one that exists is refused unless --force.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,

    /// Write into an output directory or over a report file that exists.
    #[arg(long)]
    pub force: bool,

    /// Print JSON Lines on standard output: the triage's record (its format version, tool and
    /// command), then one per input and one per group.
    #[arg(long)]
    pub json: bool,

    /// Print a SARIF 2.1.0 document on standard output: one result per root cause.
    #[arg(long)]
    pub sarif: bool,

    /// Write a JUnit XML report to FILE: one test case per input, failing when its root
    /// cause is new against --baseline.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,

    /// Write an HTML report to FILE: one page with the groups, their inputs and crash sites,
    /// and how each root cause was found, drawn as a graph.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// An earlier triage's triage.json: say which root causes are new, fixed and unchanged,
    /// and exit with status 1 when one is new.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
}

impl ResultOptions {
    /// The outputs asked for, checked before any work (nothing that exists is written over
    /// unless `--force`; the output directory made), and the baseline read.
    pub fn prepare(&self) -> Result<(Outputs, Option<Triage>), String> {
        let outputs = Outputs {
            dir: self.output.clone(),
            json: self.json,
            sarif: self.sarif,
            junit: self.junit.clone(),
            html: self.html.clone(),
            started: std::time::SystemTime::now(),
        };
        let baseline = self.baseline.as_deref().map(read_triage).transpose()?;
        outputs.check(self.force)?;
        Ok((outputs, baseline))
    }
}

/// A JSON record of `--json`: first the triage's own (its format, tool and command), then one
/// per input and per group.
#[derive(serde::Serialize)]
#[serde(tag = "record", rename_all = "kebab-case")]
enum Record<'a> {
    Triage { schema: u32, tool: &'a str, command: &'a [String] },
    Input(&'a model::Input),
    Group(&'a model::Group),
}

/// Runs `rtgrind triage ARGS` (`rtgrind triage merge ...`: `merge`): the exit status.
pub fn main(args: &[OsString]) -> i32 {
    if args.first().is_some_and(|a| a == "merge") {
        return merge::main(&args[1..]);
    }
    let opts: Options = match crate::cli::parse_command("triage", args, "rtgrind triage -i DIR|FILE... [-o OUT] -- PROG [ARGS] [@@]") {
        Ok(o) => o,
        Err(code) => return code,
    };
    match run(&opts) {
        Ok(code) => code,
        Err(e) => crate::cli::command_error(&format!("triage: {e}")),
    }
}

/// Checks everything given, then triages every input.
fn run(opts: &Options) -> Result<i32, String> {
    let program = crate::resolve(&opts.command[0]);
    check_program(&program)?;
    let shard = opts.shard.as_deref().map(parse_shard).transpose()?;
    let inputs = corpus::inputs(&opts.inputs)?;
    if inputs.is_empty() {
        let given: Vec<String> = opts.inputs.iter().map(|p| format!("'{}'", p.display())).collect();
        return Err(format!("no inputs in {}", given.join(", ")));
    }
    let (outputs, baseline) = opts.results.prepare()?;
    let scratch = match &opts.results.output {
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
        expose: opts.expose,
    };
    let started = Instant::now();
    let inputs: Vec<(usize, PathBuf)> = inputs.into_iter().enumerate().filter(|(_, p)| shard.is_none_or(|s| in_shard(p, s))).collect();
    let mut results = triage_all(&target, &inputs, &scratch, (opts.jobs as usize, opts.progress), &program);
    let groups = check_groups(&target, &mut results, &program, &scratch, opts.jobs as usize);
    let _ = std::fs::remove_dir_all(&scratch);
    let mut triage = Triage {
        schema: model::VERSION,
        tool: opts.tool.clone(),
        command: opts.command.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
        inputs: results,
        groups,
        shard,
        comparison: None,
        seconds: (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
    };
    finish(&mut triage, baseline.as_ref().zip(opts.results.baseline.as_deref()), &outputs)
}

/// Where a triage's results go.
pub struct Outputs {
    pub dir: Option<PathBuf>,
    pub json: bool,
    pub sarif: bool,
    pub junit: Option<PathBuf>,
    pub html: Option<PathBuf>,
    /// When the triage started (the JUnit report's timestamp).
    pub started: std::time::SystemTime,
}

impl Outputs {
    /// Refuses, before any work, to write over what exists (unless `force`), and makes the
    /// output directory.
    pub fn check(&self, force: bool) -> Result<(), String> {
        if let Some(out) = &self.dir {
            if out.exists() && !force {
                return Err(format!("-o: '{}' exists; not writing into it (--force to)", out.display()));
            }
            std::fs::create_dir_all(out).map_err(|e| format!("-o: cannot create '{}': {e}", out.display()))?;
        }
        for (option, file) in [("--junit", &self.junit), ("--html", &self.html)] {
            if let Some(f) = file.as_ref().filter(|f| f.exists() && !force) {
                return Err(format!("{option}: '{}' exists; not overwriting it (--force to)", f.display()));
            }
        }
        Ok(())
    }
}

/// A triage's results compared with a baseline's and written out: the exit status (1 when a
/// root cause is new).
pub fn finish(triage: &mut Triage, baseline: Option<(&Triage, &Path)>, outputs: &Outputs) -> Result<i32, String> {
    if let Some((b, path)) = baseline {
        triage.comparison = Some(compare(triage, b, path));
    }
    for line in summary(triage) {
        eprintln!("triage: {line}");
    }
    if outputs.json {
        let head = Record::Triage { schema: triage.schema, tool: &triage.tool, command: &triage.command };
        println!("{}", serde_json::to_string(&head).expect("serializes"));
        for i in &triage.inputs {
            println!("{}", serde_json::to_string(&Record::Input(i)).expect("serializes"));
        }
        for g in &triage.groups {
            println!("{}", serde_json::to_string(&Record::Group(g)).expect("serializes"));
        }
    }
    if outputs.sarif {
        println!("{}", outputs::sarif(triage));
    }
    let write = |path: &Path, text: String| std::fs::write(path, text).map_err(|e| format!("cannot write '{}': {e}", path.display()));
    if let Some(out) = &outputs.dir {
        write(&out.join("triage.json"), serde_json::to_string_pretty(&*triage).expect("serializes") + "\n")?;
    }
    if let Some(path) = &outputs.junit {
        write(path, outputs::junit(triage, &outputs::iso8601(outputs.started)))?;
    }
    if let Some(path) = &outputs.html {
        write(path, html::page(triage))?;
    }
    Ok(i32::from(triage.comparison.as_ref().is_some_and(|c| !c.new.is_empty())))
}

/// `I/N` of `--shard`.
fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    let parsed = text.split_once('/').and_then(|(i, n)| Some((i.parse::<u64>().ok()?, n.parse::<u64>().ok()?)));
    match parsed {
        Some((i, n)) if n > 0 && i < n => Ok((i, n)),
        _ => Err(format!("--shard: '{text}' is not I/N with 0 <= I < N")),
    }
}

/// Whether the input at `path` is in shard `(i, n)`: by its content's hash (its path's, if it
/// cannot be read), so every machine agrees whatever the inputs' order or location.
fn in_shard(path: &Path, (i, n): (u64, u64)) -> bool {
    let hash = corpus::content_hash(path).unwrap_or_else(|| corpus::text_hash(&path.display().to_string()));
    u64::from_str_radix(&hash[..16], 16).unwrap_or(0) % n == i
}

/// An earlier triage's results (its triage.json, or the directory holding it).
pub fn read_triage(path: &Path) -> Result<Triage, String> {
    let file = if path.is_dir() { path.join("triage.json") } else { path.to_path_buf() };
    let text = std::fs::read_to_string(&file).map_err(|e| format!("cannot read '{}': {e}", file.display()))?;
    // (A result of another format version is said so, not as a missing field.)
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("'{}' is no triage result: {e}", file.display()))?;
    match value.get("schema").and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(model::VERSION) => {}
        Some(v) => return Err(format!("'{}' is a triage result of format {v}; this rtgrind reads format {}", file.display(), model::VERSION)),
        None => return Err(format!("'{}' is no triage result: it has no \"schema\" field", file.display())),
    }
    serde_json::from_value(value).map_err(|e| format!("'{}' is no triage result: {e}", file.display()))
}

/// Which root causes are new, fixed and unchanged against `baseline`.
fn compare(t: &Triage, baseline: &Triage, path: &Path) -> model::Comparison {
    let has = |t: &Triage, f: &str| t.groups.iter().any(|g| g.fingerprint == f);
    let prints = |t: &Triage| t.groups.iter().map(|g| g.fingerprint.clone()).collect::<Vec<_>>();
    model::Comparison {
        baseline: path.display().to_string(),
        new: prints(t).into_iter().filter(|f| !has(baseline, f)).collect(),
        fixed: prints(baseline).into_iter().filter(|f| !has(t, f)).collect(),
        unchanged: prints(t).into_iter().filter(|f| has(baseline, f)).collect(),
    }
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
fn triage_all(target: &input::Target, inputs: &[(usize, PathBuf)], scratch: &Path, (jobs, when): (usize, When), program: &Path) -> Vec<model::Input> {
    let done = AtomicUsize::new(0);
    let progress = Progress::new(inputs.len(), when);
    let results = parallel(inputs, jobs, |k, (index, path)| {
        let dir = scratch.join(k.to_string());
        let mut result = match std::fs::create_dir_all(&dir) {
            Ok(()) => target.triage(path, &dir),
            Err(e) => model::Input {
                path: path.display().to_string(),
                status: Status::Inconclusive,
                reason: Some(format!("cannot make its scratch directory: {e}")),
                ..model::Input::default()
            },
        };
        result.index = *index;
        let _ = std::fs::remove_dir_all(&dir);
        let n = done.fetch_add(1, Ordering::SeqCst) + 1;
        progress.done(n, &result, program);
        result
    });
    progress.finish();
    results
}

/// How far the triage is: a live bar (inputs done, root causes so far, time left) where
/// standard error is a terminal (or `--progress=always`), else a line per input (none with
/// `--progress=never`).
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    lines: bool,
    total: usize,
    roots: Mutex<std::collections::HashSet<String>>,
}

impl Progress {
    fn new(total: usize, when: When) -> Progress {
        let style = indicatif::ProgressStyle::with_template("triage: {bar:30} {pos}/{len} inputs, {msg}, {eta} left").expect("a valid template");
        let bar = crate::tools::progress::bar(when, false, Some(total as u64), style, Duration::from_millis(500));
        bar.set_message("0 root causes");
        let bar = (!bar.is_hidden()).then_some(bar);
        Progress { bar, lines: when == When::Auto, total, roots: Mutex::new(Default::default()) }
    }

    fn done(&self, n: usize, input: &model::Input, program: &Path) {
        let root = input.report.as_ref().filter(|_| input.status.has_root_cause()).and_then(|r| r.findings.first()).map(|f| groups::what(f, program));
        let mut roots = self.roots.lock().expect("not poisoned");
        roots.extend(root);
        match &self.bar {
            Some(bar) => {
                bar.set_message(format!("{} root cause{} so far", roots.len(), if roots.len() == 1 { "" } else { "s" }));
                bar.inc(1);
            }
            None if self.lines => eprintln!("triage: [{n}/{}] {}: {}", self.total, input.path, input.status.describe()),
            None => {}
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The groups checked: each member re-run with the group's root cause (its first member's; a
/// race's write)
/// suppressed from the start (`confirmed`); then grouped again, those that still failed apart.
/// The first member is checked too: its own search's suppression run was not from the start,
/// and a shard's first member need not be the corpus's (the members share the root-cause
/// instruction, so a check does not depend on which member names it).
fn check_groups(target: &input::Target, inputs: &mut [model::Input], program: &Path, scratch: &Path, jobs: usize) -> Vec<model::Group> {
    let groups = groups::group(inputs, program);
    let root = |path: &String| inputs.iter().find(|i| &i.path == path).and_then(|i| i.report.as_ref()).and_then(|r| r.findings.first()).cloned();
    // (A member that failed only with redzones or a layout is not checked: a plain run of it
    // does not fail either way.)
    let checks: Vec<(usize, crate::report::model::Finding)> = groups
        .iter()
        .filter_map(|g| Some((g, root(g.members.first()?)?)))
        .flat_map(|(g, f)| g.members.iter().map(move |m| (m.clone(), f.clone())))
        .filter_map(|(m, f)| Some((inputs.iter().position(|i| i.path == m && i.failed_runs > 0)?, f)))
        .collect();
    let results = parallel(&checks, jobs, |k, (i, f)| {
        let dir = scratch.join(format!("check-{k}"));
        let _ = std::fs::create_dir_all(&dir);
        let still = target.still_fails(&inputs[*i], f, &dir);
        let _ = std::fs::remove_dir_all(&dir);
        still
    });
    for g in &groups {
        for i in inputs.iter_mut().filter(|i| i.failed_runs == 0 && g.members.contains(&i.path)) {
            i.unchecked = Some("it failed only with heap redzones or a layout: a plain run of it does not fail either way".into());
        }
    }
    for ((i, _), still) in checks.iter().zip(results) {
        match still {
            Ok(s) => inputs[*i].confirmed = Some(!s),
            Err(why) => inputs[*i].unchecked = Some(why),
        }
    }
    groups::group(inputs, program)
}

/// `f` of each item, `jobs` at a time, in the items' order.
fn parallel<T: Sync, R: Send>(items: &[T], jobs: usize, f: impl Fn(usize, &T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.min(items.len()) {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::SeqCst);
                let Some(item) = items.get(k) else { break };
                let r = f(k, item);
                results.lock().expect("not poisoned")[k] = Some(r);
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
        let new = t.comparison.as_ref().is_some_and(|c| c.new.contains(&g.fingerprint));
        out.push(format!(
            "group {} [{}]{} {}: {}, {} ({})",
            k + 1,
            g.fingerprint,
            if new { " NEW" } else { "" },
            g.place,
            plural(g.members.len(), "input"),
            plural(g.crash_sites.len(), "crash site"),
            model::checks(g)
        ));
        out.push(format!("   inputs: {}", g.members.join(", ")));
        out.push(format!("   crash sites: {}", g.crash_sites.join("; ")));
        for i in t.inputs.iter().filter(|i| i.group.as_ref() == Some(&g.fingerprint)) {
            if let Some(why) = &i.unchecked {
                out.push(format!("   not checked: {} ({why})", i.path));
            }
        }
    }
    for i in t.inputs.iter().filter(|i| !i.status.has_root_cause() || i.status == Status::Flaky) {
        let why = match i.status {
            Status::Flaky => format!("failed in {} of {} runs", i.failed_runs, i.runs),
            _ => i.reason.clone().unwrap_or_default(),
        };
        let why = if why.is_empty() { String::new() } else { format!(" ({why})") };
        out.push(format!("{}: {}{why}", i.status.describe(), i.path));
    }
    if let Some(c) = &t.comparison {
        out.push(format!("against {}: {} new, {} fixed, {} unchanged", c.baseline, c.new.len(), c.fixed.len(), c.unchanged.len()));
        out.extend(c.fixed.iter().map(|f| format!("   fixed: [{f}]")));
    }
    out
}
