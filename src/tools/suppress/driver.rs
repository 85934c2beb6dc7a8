//! `rtgrind --tool=suppress prog args`: iterated execution suppression (dissertation
//! Fig. 5.3). Each run is a child rtgrind in repeatable mode with a plan (the suppression
//! points so far); it reports its crash and the definitions of the locations the crash used.
//! Those become suppression points of the next run, until a run ends without a crash: the
//! points added last are the first point of memory corruption.

use super::plan::{Outcome, Plan, Point};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Clone)]
pub struct Options {
    pub max_runs: u32,
    pub error_exitcode: i32,
    pub stdin_file: Option<PathBuf>,
    pub seed: u64,
}

/// Exit status when the search could not conclude.
const INCONCLUSIVE: i32 = 2;

struct Runs {
    dir: PathBuf,
    command: Vec<std::ffi::OsString>,
    opts: Options,
    count: u32,
    /// Wall time of the first run, to bound later ones.
    first: Option<Duration>,
}

enum Ended {
    Outcome(Outcome),
    TimedOut,
}

impl Runs {
    fn run(&mut self, points: &[Point]) -> std::io::Result<Ended> {
        self.count += 1;
        let n = self.count;
        let plan_path = self.dir.join(format!("plan-{n}"));
        let out_path = self.dir.join(format!("outcome-{n}"));
        std::fs::write(&plan_path, Plan { points: points.to_vec(), out: None, at_functions: Vec::new() }.to_text())?;
        let exe = std::env::current_exe()?;
        let mut cmd = Command::new(exe);
        cmd.arg("--tool=suppress")
            .arg(format!("--suppress-plan={}", plan_path.display()))
            .arg(format!("--suppress-out={}", out_path.display()))
            .arg("--repeatable=yes")
            .arg(format!("--seed={}", self.opts.seed))
            .arg(format!("--stdin-file={}", self.opts.stdin_file.as_ref().expect("stdin captured").display()))
            .arg("--")
            .args(&self.command)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(self.dir.join(format!("stdout-{n}")))?)
            .stderr(std::fs::File::create(self.dir.join(format!("stderr-{n}")))?);
        let start = Instant::now();
        let mut child = cmd.spawn()?;
        let limit = self.first.map(|d| d * 20 + Duration::from_secs(20));
        let status = loop {
            if let Some(s) = child.try_wait()? {
                break s;
            }
            if limit.is_some_and(|l| start.elapsed() > l) {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(Ended::TimedOut);
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        self.first.get_or_insert(start.elapsed());
        let text = std::fs::read_to_string(&out_path).unwrap_or_default();
        let _ = status;
        Ok(Ended::Outcome(Outcome::parse(&text)))
    }
}

fn signame(sig: i32) -> String {
    match sig {
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGFPE => "SIGFPE".into(),
        libc::SIGILL => "SIGILL".into(),
        libc::SIGABRT => "SIGABRT".into(),
        s => format!("signal {s}"),
    }
}

fn crash_text(o: &Outcome) -> String {
    match &o.crash {
        Some((sig, pc, _, place)) => format!("{} at {pc:#x} {place}", signame(*sig)),
        None => "no crash".into(),
    }
}

/// Suppression point `p` includes instance `d` (instance 0: every instance of the site).
fn covers(p: &Point, d: &Point) -> bool {
    p.pc == d.pc && p.thread == d.thread && (p.instance == 0 || p.instance == d.instance)
}

/// The place a point is reported at: its own line, or for code in a library the main
/// program's call that led there.
fn headline(def: &(Point, String, String, String), hits: &[(Point, String)]) -> String {
    match hits.iter().find(|h| covers(&h.0, &def.0)).map(|h| h.1.as_str()).filter(|s| !s.is_empty()) {
        Some(call) => format!("{call}, inside {}", def.2),
        None => def.2.clone(),
    }
}

/// Runs the search and prints the report; returns the exit status.
pub fn drive(command: Vec<std::ffi::OsString>, mut opts: Options) -> i32 {
    let started = Instant::now();
    let pid = std::process::id();
    let say = |s: &str| eprintln!("=={pid}== {s}");
    let dir = std::env::temp_dir().join(format!("rtgrind-suppress-{pid}"));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        say(&format!("error: cannot create {}: {e}", dir.display()));
        return INCONCLUSIVE;
    }
    let result = search(command, &mut opts, &dir, started, &say);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn search(command: Vec<std::ffi::OsString>, opts: &mut Options, dir: &Path, started: Instant, say: &dyn Fn(&str)) -> i32 {
    if opts.stdin_file.is_none() {
        // Every run reads the same input: capture it once (nothing from a terminal).
        let path = dir.join("stdin");
        let mut data = Vec::new();
        // SAFETY: isatty on a descriptor number.
        if unsafe { libc::isatty(0) } == 0 {
            let _ = std::io::stdin().read_to_end(&mut data);
        }
        if let Err(e) = std::fs::write(&path, data) {
            say(&format!("error: cannot write {}: {e}", path.display()));
            return INCONCLUSIVE;
        }
        opts.stdin_file = Some(path);
    }
    let max_runs = opts.max_runs;
    let error_exitcode = opts.error_exitcode;
    let mut runs = Runs { dir: dir.to_path_buf(), command, opts: opts.clone(), count: 0, first: None };
    let next = |runs: &mut Runs, points: &[Point]| -> Result<Outcome, i32> {
        match runs.run(points) {
            Ok(Ended::Outcome(o)) => Ok(o),
            Ok(Ended::TimedOut) => {
                say(&format!("suppress: run {} did not end (more than 20 times the first run's time); cannot conclude", runs.count));
                Err(INCONCLUSIVE)
            }
            Err(e) => {
                say(&format!("error: cannot run rtgrind: {e}"));
                Err(INCONCLUSIVE)
            }
        }
    };
    let first = match next(&mut runs, &[]) {
        Ok(o) => o,
        Err(c) => return c,
    };
    let Some(crash) = first.crash.clone() else {
        say("suppress: the program did not fail (no crash); nothing to find. For failures that need a different schedule or memory layout, see --tool=reorder.");
        return 0;
    };
    let again = match next(&mut runs, &[]) {
        Ok(o) => o,
        Err(c) => return c,
    };
    if again.crash.as_ref().map(|c| (c.0, c.1, c.2)) != Some((crash.0, crash.1, crash.2)) {
        say(&format!("suppress: the failure does not reproduce in repeatable mode: run 1: {}; run 2: {}", crash_text(&first), crash_text(&again)));
        return INCONCLUSIVE;
    }
    let mut chain: Vec<(Vec<Point>, Outcome)> = vec![(Vec::new(), first)];
    let mut points: Vec<Point> = Vec::new();
    loop {
        let current = &chain.last().unwrap().1;
        let defs: Vec<Point> = current.defs.iter().map(|d| d.0).collect();
        if defs.is_empty() {
            print_chain(say, &chain, runs.count, started);
            say(&format!("suppress: cannot conclude: the crash ({}) used no location with a known definition", crash_text(current)));
            return INCONCLUSIVE;
        }
        let mut new: Vec<Point> = defs.iter().copied().filter(|d| !points.contains(d)).collect();
        if new.is_empty() {
            // Suppressing the instance did not avoid the crash (another instance of the same
            // statement wrote part of the same word, which origins do not tell apart):
            // suppress every instance of the statement.
            new = defs.iter().map(|d| Point { instance: 0, ..*d }).filter(|d| !points.contains(d)).collect();
        }
        if new.is_empty() {
            print_chain(say, &chain, runs.count, started);
            say("suppress: cannot conclude: suppressing the crash's definitions did not avoid it");
            return INCONCLUSIVE;
        }
        if runs.count >= max_runs {
            print_chain(say, &chain, runs.count, started);
            say(&format!("suppress: cannot conclude within --max-runs={max_runs}"));
            return INCONCLUSIVE;
        }
        points.extend(&new);
        let o = match next(&mut runs, &points) {
            Ok(o) => o,
            Err(c) => return c,
        };
        let done = o.crash.is_none();
        chain.push((new, o));
        if done {
            let (prev, (added, last)) = (&chain[chain.len() - 2].1, &chain[chain.len() - 1]);
            for d in prev.defs.iter().filter(|d| added.iter().any(|p| covers(p, &d.0))) {
                say(&format!("suppress: first point of memory corruption: {}", headline(d, &last.hits)));
                let which = if added.iter().any(|p| p.instance == 0 && covers(p, &d.0)) { " (suppressed in every instance)" } else { "" };
                say(&format!("suppress:    instruction `{}` at {:#x}, thread {}, block instance {}{which}", d.3, d.0.pc, d.0.thread, d.0.instance));
            }
            print_chain(say, &chain, runs.count, started);
            return error_exitcode;
        }
    }
}

fn print_chain(say: &dyn Fn(&str), chain: &[(Vec<Point>, Outcome)], runs: u32, started: Instant) {
    say(&format!("suppress: {} runs ({} of them to check that the crash repeats), {:.2} s:", runs, 1, started.elapsed().as_secs_f64()));
    for (i, (added, o)) in chain.iter().enumerate() {
        let from = if added.is_empty() {
            "original run".to_string()
        } else {
            let prev = &chain[i - 1].1;
            let places: Vec<String> = prev.defs.iter().filter(|d| added.iter().any(|p| covers(p, &d.0))).map(|d| headline(d, &o.hits)).collect();
            let every = if added.iter().all(|p| p.instance == 0) { " (every instance)" } else { "" };
            format!("suppressing from {}{every}", places.join(" and "))
        };
        say(&format!("suppress:   {}. {from}: {}", i + 1, crash_text(o)));
        for d in &o.defs {
            say(&format!("suppress:        it used {}, defined at {}", d.1, d.2));
        }
        if o.crash.is_none() && !o.suppressed.is_empty() {
            let s: Vec<String> = o.suppressed.iter().map(|(w, n)| format!("{n} {w}")).collect();
            say(&format!("suppress:        suppressed: {}", s.join(", ")));
        }
    }
}
