//! One input triaged: reproduced in repeatable runs (seeds 0 to `PROBES - 1`, `--tool=none`:
//! how often it fails), then, from a run that failed (with `--expose`, seed 0's of one that
//! never did), its root cause searched by the tool. Each
//! run is a child rtgrind in the input's own scratch directory (what the program writes stays
//! there), in a process group of its own so that a timeout kills its runs too; the input
//! itself is only read.

use super::corpus;
use super::model::{Input, Status};
use crate::report::model::{Finding, Report};
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Repeatable runs made of each input (each with its own seed: the random bytes, the
/// schedule's random choices).
pub const PROBES: u32 = 5;
/// The tool's search may take this many times an input's time limit (it runs the program
/// again and again).
const SEARCH_FACTOR: u32 = 60;

/// What every input is run with.
pub struct Target {
    /// rtgrind itself.
    pub rtgrind: PathBuf,
    pub tool: String,
    /// The program (an absolute path) and its arguments, `@@` where the input's path goes;
    /// without one the input is the program's standard input.
    pub command: Vec<OsString>,
    pub timeout: Duration,
    /// Search the inputs that never failed too (`--expose`).
    pub expose: bool,
}

/// How a run ended.
#[derive(Debug, PartialEq, Eq)]
enum Ending {
    Exit(i32),
    Signal(i32),
    Timeout,
}

impl Target {
    /// The input at `path` triaged, with `scratch` (an empty directory) as the runs' working
    /// directory.
    pub fn triage(&self, path: &Path, scratch: &Path) -> Input {
        let started = Instant::now();
        let mut input = self.reproduce_and_search(path, scratch);
        input.seconds = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
        input
    }

    fn reproduce_and_search(&self, path: &Path, scratch: &Path) -> Input {
        let mut input = Input { path: path.display().to_string(), ..Input::default() };
        let readable = std::fs::File::open(path).and_then(|f| f.metadata()).map_err(|e| e.to_string());
        let hash = readable.and_then(|_| corpus::content_hash(path).ok_or_else(|| "cannot read it".to_string()));
        match hash {
            Ok(h) => input.sha256 = h,
            Err(e) => {
                input.status = Status::Unreadable;
                input.reason = Some(e);
                return input;
            }
        }
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let mut failing_seed = None;
        for seed in 0..PROBES {
            let mut args = vec!["-q".into(), "--tool=none".into(), "--repeatable=yes".into(), format!("--seed={seed}")];
            args.extend(self.schedule(seed, scratch));
            let (ending, _) = self.run(&args, &absolute, scratch, self.timeout);
            input.runs += 1;
            match ending {
                Ending::Timeout => {
                    input.status = Status::Timeout;
                    input.reason = Some(format!("its run with seed {seed} did not end in {} s: killed", self.timeout.as_secs_f64()));
                    return input;
                }
                Ending::Signal(_) => {
                    input.failed_runs += 1;
                    failing_seed.get_or_insert(seed);
                }
                // (rtgrind's own error: bad usage, an instruction it cannot run.)
                Ending::Exit(code @ (crate::EXIT_USAGE | crate::EXIT_INTERNAL)) => {
                    let err = std::fs::read_to_string(scratch.join("stderr")).unwrap_or_default();
                    input.status = Status::Inconclusive;
                    input.reason = Some(format!("rtgrind could not run it (exit {code}): {}", err.lines().last().unwrap_or_default()));
                    return input;
                }
                Ending::Exit(_) => {}
            }
        }
        // (An input that never failed is searched only if asked: with heap redzones and
        // layouts of its variables, memory corruption that crashes nothing as it is shows, at
        // the cost of a run per layout.)
        if failing_seed.is_none() && !self.expose {
            input.status = Status::NoCrash;
            return input;
        }
        let seed = failing_seed.unwrap_or(0);
        input.seed = Some(u64::from(seed));
        let mut args = vec![format!("--tool={}", self.tool), "--json".into(), format!("--seed={seed}")];
        if self.races() {
            // (The failing probe's schedule, replayed: the interleaving that failed.)
            args.push(format!("--sched=replay:{}", schedule_file(scratch, seed).display()));
        }
        let (ending, stdout) = self.run(&args, &absolute, scratch, self.timeout * SEARCH_FACTOR);
        // (The failing probe's schedule is kept for the check, beside the scratch directory.)
        for s in (0..PROBES).filter(|&s| !self.races() || s != seed) {
            let _ = std::fs::remove_file(schedule_file(scratch, s));
        }
        if self.races() {
            input.schedule = Some(schedule_file(scratch, seed));
        }
        let report = stdout.lines().rev().find_map(|l| serde_json::from_str::<Report>(l).ok());
        let found = report.as_ref().is_some_and(|r| r.result == "root-cause" && !r.findings.is_empty());
        input.status = match (found, input.failed_runs) {
            (_, 0) if report.as_ref().is_some_and(|r| r.result == "no-failure") => Status::NoCrash,
            (true, 0) => {
                input.reason = Some("it did not fail as it is: heap redzones or a layout of its variables made its memory corruption a failure".into());
                Status::RootCause
            }
            (true, n) if n < input.runs => Status::Flaky,
            (true, _) => Status::RootCause,
            (false, _) => Status::Inconclusive,
        };
        if input.status == Status::Inconclusive {
            input.reason = Some(match (&ending, &report) {
                (Ending::Timeout, _) => format!("the {} search did not end in {} s: killed", self.tool, (self.timeout * SEARCH_FACTOR).as_secs_f64()),
                (_, Some(r)) if !r.reason.is_empty() => r.reason.clone(),
                (_, Some(r)) => format!("the {} search ended with '{}'", self.tool, r.result),
                (e, None) => format!("the {} search gave no report ({e:?})", self.tool),
            });
        }
        input.crash = report.as_ref().and_then(|r| r.failure.as_ref()).map(|f| {
            let place = if f.place.is_empty() { &f.pc } else { &f.place };
            match &f.call {
                Some(call) => format!("{} at {call}, inside {place}", f.signal),
                None => format!("{} at {place}", f.signal),
            }
        });
        input.report = report;
        input
    }

    /// Whether the root causes searched are races: then the probes try schedules.
    pub fn races(&self) -> bool {
        self.tool == "race"
    }

    /// The scheduler's options of probe `seed`: none for memory corruption (the default
    /// schedule, random bytes by the seed); for races a random schedule of its own, with quanta
    /// of 1000, 100 and 20 blocks in turn (a window between a check and its use is a few blocks
    /// wide), recorded for the search to replay (every probe: a recorded run is the one
    /// whose ending counts).
    fn schedule(&self, seed: u32, scratch: &Path) -> Vec<String> {
        if !self.races() {
            return Vec::new();
        }
        let quantum = [1000, 100, 20][(seed % 3) as usize];
        vec![format!("--sched=random:{}", seed + 1), format!("--quantum={quantum}"), format!("--record-schedule={}", schedule_file(scratch, seed).display())]
    }

    /// Whether `input` still fails with `root` (its group's root cause) suppressed from the
    /// start: every execution of its instruction, or for a library's, every store the library
    /// makes for every call from the program's call site. Else why there is no answer (that
    /// run did not end: suppressing a root cause from the start can make a program loop).
    pub fn still_fails(&self, input: &Input, root: &Finding, scratch: &Path) -> Result<bool, String> {
        self.check(input, root, scratch).unwrap_or_else(|| Err("its check could not run".into()))
    }

    fn check(&self, input: &Input, root: &Finding, scratch: &Path) -> Option<Result<bool, String>> {
        let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
        let (point, thread) = match race_write(root) {
            Some((pc, thread)) => (hex(pc)?, thread),
            None => match root.call_site.as_deref().and_then(hex) {
                Some(site) => (site | 1 << 63, root.thread),
                None => (hex(&root.pc)?, root.thread),
            },
        };
        // (Outside the scratch directory, which every run empties; named whole, as the run
        // works in that directory.)
        let scratch = &std::path::absolute(scratch).ok()?;
        let plan = scratch.with_extension("plan");
        let outcome = scratch.with_extension("outcome");
        let mut options = vec![
            "--tool=suppress".to_string(),
            format!("--suppress-plan={}", plan.display()),
            format!("--suppress-out={}", outcome.display()),
            format!("--seed={}", input.seed.unwrap_or(0)),
            "--repeatable=yes".into(),
        ];
        if let Some(schedule) = &input.schedule {
            options.push(format!("--sched=replay:{}", schedule.display()));
        }
        let absolute = std::path::absolute(&input.path).ok()?;
        // Whether the run with `plan` failed; None if it did not end or left no outcome.
        let attempt = |text: String| -> Result<bool, String> {
            std::fs::write(&plan, text).map_err(|e| format!("cannot write its plan: {e}"))?;
            let (ending, _) = self.run(&options, &absolute, scratch, self.timeout);
            let failed = std::fs::read_to_string(&outcome).ok().map(|o| o.lines().any(|l| l.starts_with("crash\t")));
            let _ = (std::fs::remove_file(&plan), std::fs::remove_file(&outcome));
            if ending == Ending::Timeout {
                return Err(format!("with the root cause suppressed from the start, it did not end in {} s (killed)", self.timeout.as_secs_f64()));
            }
            failed.ok_or_else(|| format!("its check ended ({ending:?}) without an outcome"))
        };
        // A schedule recorded under another tool replays its decisions, not always its
        // interleaving: the check stands only if the run fails again without the suppression.
        if input.schedule.is_some() && attempt(String::new()) != Ok(true) {
            return Some(Err("its failing schedule did not fail again in the check's runs".into()));
        }
        Some(attempt(format!("point\t{point:#x}\t{thread}\t0\n")))
    }
}

/// A race's write (the side that writes; the later if both do): its guest address (hex) and
/// thread. None for another finding.
fn race_write(f: &Finding) -> Option<(&str, u64)> {
    if f.kind != "data race" {
        return None;
    }
    match f.race_writes() {
        (true, _) => Some((f.pc.as_str(), f.thread)),
        (false, true) => Some((f.earlier_pc.as_deref()?, f.earlier_thread?)),
        (false, false) => None,
    }
}

/// A copy of `input` with its name, beside the scratch directory `scratch` (which every run
/// empties); None if it cannot be made (the input itself is named then).
fn fresh_copy(input: &Path, scratch: &Path) -> Option<PathBuf> {
    let dir = beside_scratch(scratch, "input");
    std::fs::create_dir_all(&dir).ok()?;
    let copy = dir.join(input.file_name()?);
    let _ = std::fs::remove_file(&copy);
    std::fs::copy(input, &copy).ok()?;
    Some(copy)
}

/// Where probe `seed`'s schedule is recorded: beside the scratch directory, which every run
/// empties (named whole: the runs work in that directory).
fn schedule_file(scratch: &Path, seed: u32) -> PathBuf {
    beside_scratch(scratch, &format!("schedule-{seed}"))
}

/// `SCRATCH.EXT`, absolute: a name beside the scratch directory, which every run empties.
fn beside_scratch(scratch: &Path, ext: &str) -> PathBuf {
    std::path::absolute(scratch).unwrap_or_else(|_| scratch.to_path_buf()).with_extension(ext)
}

impl Target {
    /// Runs rtgrind with `options` on the program with `input`, in `dir`, for at most `limit`:
    /// how it ended and what it wrote on its standard output.
    fn run(&self, options: &[String], input: &Path, dir: &Path, limit: Duration) -> (Ending, String) {
        let uses_path = self.command.iter().any(|a| a.to_string_lossy().contains("@@"));
        let mut args: Vec<OsString> = options.iter().map(OsString::from).collect();
        if !uses_path {
            args.push(format!("--stdin-file={}", input.display()).into());
        }
        args.push("--".into());
        // (`@@` names a fresh copy of the input, as AFL's does: a program that rewrites the
        // file it is given changes neither the user's corpus nor what the next run reads.)
        let copy = if uses_path { fresh_copy(input, dir) } else { None };
        let path = copy.as_deref().unwrap_or(input).as_os_str().to_string_lossy().into_owned();
        args.extend(self.command.iter().map(|a| match a.to_str() {
            Some(s) if s.contains("@@") => OsString::from(s.replace("@@", &path)),
            _ => a.clone(),
        }));
        // (Every run starts in an empty directory: what an earlier one wrote is gone.)
        if let Ok(entries) = std::fs::read_dir(dir) {
            for e in entries.flatten() {
                let p = e.path();
                let _ = if p.is_dir() && !p.is_symlink() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
            }
        }
        let out = dir.join("stdout");
        let ending = match crate::tools::child::run(&self.rtgrind, &args, &out, &dir.join("stderr"), Some(limit), Some(dir)) {
            Ok(Some((status, _))) => status.signal().map_or(Ending::Exit(status.code().unwrap_or(-1)), Ending::Signal),
            Ok(None) => Ending::Timeout,
            Err(_) => Ending::Exit(-1),
        };
        (ending, std::fs::read_to_string(&out).unwrap_or_default())
    }
}
