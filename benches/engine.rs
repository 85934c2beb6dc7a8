//! Whole-process benchmarks of the engine: each workload runs natively, under
//! `rtgrind -q --tool=none`, `valgrind --tool=none -q` and `qemu-x86_64`, N times each in
//! interleaved order; the median wall times and their ratios to native are printed as a markdown
//! table and written to `target/bench-engine.md`.
//!
//! ```text
//! cargo bench --bench engine [-- [--runs N] [--tools native,rtgrind,valgrind,qemu] [FILTER...]]
//! ```
//!
//! More tools for the instrumentation figures: `count`, `taint`, `taint-origins` (rtgrind's
//! tools), `lackey`,
//! `memcheck`, `origins` (memcheck with `--track-origins=yes`), e.g.
//! `--tools native,taint,memcheck,origins`.
//!
//! `TOOL-before` (`rtgrind-before`, `taint-before`, ...): the rtgrind tool TOOL run by the
//! rtgrind binary in `RTGRIND_BEFORE` (a build of an earlier commit), for before/after columns
//! from the same run.
//!
//! A FILTER keeps the workloads whose name contains it. Every run's stdout and exit status must
//! match the native run's, else its cell says FAIL and a note says why. A tool that is not
//! installed gets an "n/a" column. `qemu-x86_64` comes from Debian's `qemu-user`, which `.ci/run`
//! does not install: benchmarks stay out of CI.
//!
//! Workloads: the kernels `guest-programs/bench/*.c` (built with `gcc -O2` into
//! `target/bench-bin/`), `gzip -9` of a fixed 50 MiB file (written once into `target/bench-bin/`
//! by `guest-programs/bench/gen_data.c`), and `guest-programs/bench/python_workload.py` under
//! `/usr/bin/python3`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A run slower than this is killed and counts as a failure.
const TIMEOUT: Duration = Duration::from_secs(600);

struct Tool {
    name: &'static str,
    title: &'static str,
    /// The command prefix that runs a program under the tool, or why it is not available.
    prefix: Result<Vec<String>, String>,
}

struct Workload {
    name: String,
    argv: Vec<String>,
}

/// Wall times of one tool on one workload, or why it failed.
#[derive(Default)]
struct Cell {
    times: Vec<f64>,
    failure: Option<String>,
}

fn main() {
    let (mut runs, mut names, mut filters) = (5, "native,rtgrind,valgrind,qemu".to_string(), vec![]);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bench" => {} // passed by `cargo bench`
            "--runs" => runs = args.next().and_then(|n| n.parse().ok()).expect("--runs N"),
            "--tools" => names = args.next().expect("--tools LIST"),
            _ if arg.starts_with("--") => panic!("unknown option {arg}"),
            _ => filters.push(arg),
        }
    }
    // native always comes first: it is the reference for outputs and ratios
    let mut tools = vec![tool("native")];
    tools.extend(names.split(',').filter(|n| *n != "native").map(tool));

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap();
    let bin_dir = target.join("bench-bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let workloads = workloads(root, &bin_dir, &filters);
    if workloads.is_empty() {
        eprintln!("no workload matches {filters:?}");
        return;
    }

    let mut table = Vec::new();
    for w in &workloads {
        eprint!("{:<12}", w.name);
        let mut cells: Vec<Cell> = tools.iter().map(|_| Cell::default()).collect();
        let mut reference = None;
        for round in 0..runs {
            // interleaved: native first in the first round, then each round starts one later
            for t in (0..tools.len()).map(|i| (i + round) % tools.len()) {
                let (Ok(prefix), None) = (&tools[t].prefix, &cells[t].failure) else {
                    continue;
                };
                eprint!(".");
                let argv: Vec<String> = prefix.iter().chain(&w.argv).cloned().collect();
                let cell = &mut cells[t];
                match (run(&argv), &reference) {
                    (Err(e), _) => cell.failure = Some(e),
                    (Ok((out, _)), Some(native)) if out != *native => {
                        cell.failure = Some(format!("{out}; native: {native}"));
                    }
                    (Ok((out, secs)), _) => {
                        reference.get_or_insert(out);
                        cell.times.push(secs);
                    }
                }
            }
            if cells[0].failure.is_some() {
                break; // nothing to compare with
            }
        }
        eprintln!();
        table.push(cells);
    }

    let report = render(&workloads, &tools, &table, runs);
    print!("{report}");
    let path = target.join("bench-engine.md");
    std::fs::write(&path, &report).unwrap();
    eprintln!("written to {}", path.display());
}

/// Name, column title, program (empty: run natively; no `/`: looked up in PATH), arguments.
#[rustfmt::skip]
const TOOLS: [(&str, &str, &str, &[&str]); 13] = [
    ("native", "native", "", &[]),
    ("native1", "native on 1 core", "taskset", &["-c", "0"]), // for the threaded kernel
    ("rtgrind", "rtgrind --tool=none", env!("CARGO_BIN_EXE_rtgrind"), &["-q", "--tool=none"]),
    ("valgrind", "valgrind --tool=none", "valgrind", &["--tool=none", "-q"]),
    ("qemu", "qemu-x86_64", "qemu-x86_64", &[]), // Debian package qemu-user
    ("count", "rtgrind --tool=count", env!("CARGO_BIN_EXE_rtgrind"), &["-q", "--tool=count", "--log-file=/dev/null"]),
    ("taint", "rtgrind --tool=taint", env!("CARGO_BIN_EXE_rtgrind"), &["-q", "--tool=taint", "--log-file=/dev/null"]),
    ("taint-origins", "rtgrind taint + origins", env!("CARGO_BIN_EXE_rtgrind"), &["-q", "--tool=taint", "--track-origins=yes", "--log-file=/dev/null"]),
    ("lackey", "valgrind --tool=lackey", "valgrind", &["--tool=lackey", "-q", "--log-file=/dev/null"]),
    ("suppress-trace", "rtgrind suppress: trace run", env!("CARGO_BIN_EXE_rtgrind"), &["-q", "--tool=suppress", concat!("--suppress-plan=", env!("CARGO_MANIFEST_DIR"), "/guest-programs/bench/plan-none"), "--log-file=/dev/null"]),
    ("suppress-run", "rtgrind suppress: run suppressing from main", env!("CARGO_BIN_EXE_rtgrind"), &["-q", "--tool=suppress", concat!("--suppress-plan=", env!("CARGO_MANIFEST_DIR"), "/guest-programs/bench/plan-main"), "--log-file=/dev/null"]),
    ("memcheck", "valgrind --tool=memcheck", "valgrind", &["--tool=memcheck", "-q"]),
    ("origins", "memcheck --track-origins=yes", "valgrind", &["--tool=memcheck", "-q", "--track-origins=yes"]),
];

fn tool(name: &str) -> Tool {
    if let Some(now) = name.strip_suffix("-before") {
        return before(tool(now));
    }
    let Some(&(name, title, program, args)) = TOOLS.iter().find(|t| t.0 == name) else {
        let known: Vec<&str> = TOOLS.iter().map(|t| t.0).collect();
        panic!("unknown tool {name} (known: {})", known.join(","));
    };
    let dirs = std::env::var_os("PATH").unwrap_or_default();
    let found = match program {
        "" => Ok(None),
        _ if program.contains('/') => Ok(Some(program.to_string())),
        _ => std::env::split_paths(&dirs)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
            .map(|p| Some(p.display().to_string()))
            .ok_or(format!("{program} not found in PATH")),
    };
    let prefix = found.map(|p| p.into_iter().chain(args.iter().map(|a| a.to_string())).collect());
    Tool { name, title, prefix }
}

/// `t` run by the rtgrind in `RTGRIND_BEFORE` (see the module's documentation).
fn before(t: Tool) -> Tool {
    let name = Box::leak(format!("{}-before", t.name).into_boxed_str());
    let title = Box::leak(format!("{} (before)", t.title).into_boxed_str());
    let prefix = match (std::env::var("RTGRIND_BEFORE"), t.prefix) {
        (Err(_), _) => Err("RTGRIND_BEFORE is not set".to_string()),
        (Ok(path), Ok(mut p)) if p.first().map(String::as_str) == Some(env!("CARGO_BIN_EXE_rtgrind")) => {
            p[0] = path;
            Ok(p)
        }
        (_, Ok(_)) => Err(format!("{} is not an rtgrind tool", t.name)),
        (_, Err(e)) => Err(e),
    };
    Tool { name, title, prefix }
}

/// The kernels, gzip and python, filtered by name; builds what is missing or stale.
fn workloads(root: &Path, bin_dir: &Path, filters: &[String]) -> Vec<Workload> {
    let src_dir = root.join("guest-programs/bench");
    let wanted = |name: &str| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()));
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&src_dir).map(|dir| dir.map(|e| e.unwrap().path()).collect()).unwrap_or_default();
    sources.sort();
    let mut out = Vec::new();
    for src in sources.iter().filter(|p| p.extension().is_some_and(|e| e == "c")) {
        let name = src.file_stem().unwrap().to_string_lossy().to_string();
        if name != "gen_data" && wanted(&name) {
            out.push(Workload { name, argv: vec![build(src, bin_dir)] });
        }
    }
    if wanted("gzip") {
        let input = bin_dir.join("gzip-input-50M");
        if !input.exists() {
            generate_data(&src_dir, bin_dir, &input);
        }
        let argv = ["/usr/bin/gzip", "-9", "-n", "-c", &input.display().to_string()].map(String::from);
        out.push(Workload { name: "gzip".into(), argv: argv.into() });
    }
    let script = src_dir.join("python_workload.py");
    if wanted("python") && script.exists() {
        let argv = vec!["/usr/bin/python3".into(), script.display().to_string()];
        out.push(Workload { name: "python".into(), argv });
    }
    out
}

/// `gcc -O2 src -o bin_dir/NAME`, unless the binary is newer than the source.
fn build(src: &Path, bin_dir: &Path) -> String {
    let exe = bin_dir.join(src.file_stem().unwrap());
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if mtime(&exe).is_none() || mtime(&exe) < mtime(src) {
        let status = Command::new("gcc").arg("-O2").arg(src).arg("-o").arg(&exe).status();
        assert!(status.expect("cannot run gcc").success(), "gcc failed on {}", src.display());
    }
    exe.display().to_string()
}

/// The gzip input, written by `gen_data.c`.
fn generate_data(src_dir: &Path, bin_dir: &Path, input: &Path) {
    let partial = input.with_extension("partial");
    let gen = build(&src_dir.join("gen_data.c"), bin_dir);
    let status = Command::new(gen).arg(&partial).status();
    assert!(status.expect("cannot run gen_data").success(), "gen_data failed");
    std::fs::rename(&partial, input).unwrap();
}

/// What a run produced: its exit status and a digest of its stdout.
#[derive(PartialEq)]
struct Outcome {
    status: String,
    stdout_len: usize,
    stdout_hash: u64,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{}, stdout {} bytes, FNV-1a {:016x}", self.status, self.stdout_len, self.stdout_hash)
    }
}

/// Run `argv` with stdin closed: its outcome and wall time in seconds, or why it failed.
fn run(argv: &[String]) -> Result<(Outcome, f64), String> {
    let start = Instant::now();
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", argv[0]))?;
    let (mut stdout, mut stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    // FNV-1a over the whole stream, so the digest does not depend on how reads split it
    let digest = std::thread::spawn(move || {
        let (mut hash, mut len, mut buf) = (0xcbf2_9ce4_8422_2325u64, 0, vec![0u8; 1 << 16]);
        while let Ok(n @ 1..) = stdout.read(&mut buf) {
            for &b in &buf[..n] {
                hash = (hash ^ b as u64).wrapping_mul(0x100_0000_01b3);
            }
            len += n;
        }
        (hash, len)
    });
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("timed out after {} s", TIMEOUT.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let secs = start.elapsed().as_secs_f64();
    let (stdout_hash, stdout_len) = digest.join().unwrap();
    let stderr = errors.join().unwrap();
    if !status.success() {
        let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        return Err(format!("{status}: {first}"));
    }
    Ok((Outcome { status: status.to_string(), stdout_len, stdout_hash }, secs))
}

fn median(times: &[f64]) -> f64 {
    let mut t = times.to_vec();
    t.sort_by(f64::total_cmp);
    (t[(t.len() - 1) / 2] + t[t.len() / 2]) / 2.0
}

fn geomean(ratios: &[f64]) -> f64 {
    (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp()
}

/// The markdown report: a row per workload, a geometric-mean row, notes on failures.
fn render(workloads: &[Workload], tools: &[Tool], table: &[Vec<Cell>], runs: usize) -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo.lines().find_map(|l| l.strip_prefix("model name")).unwrap_or(":").trim_start_matches([' ', '\t', ':']);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut s = format!(
        "# Engine benchmarks\n\nMedian wall time of {runs} interleaved runs; in parentheses the ratio \
         to native ({cpu}, {cpus} CPUs).\n\n| workload |"
    );
    for t in tools {
        s += &format!(" {} |", t.title);
    }
    s += &format!("\n|---|{}\n", "---:|".repeat(tools.len()));
    let (mut notes, mut ratios) = (Vec::new(), vec![Vec::new(); tools.len()]);
    for (w, cells) in workloads.iter().zip(table) {
        s += &format!("| {} |", w.name);
        let native = cells[0].failure.is_none().then(|| median(&cells[0].times));
        for (t, cell) in cells.iter().enumerate() {
            s += &match (&tools[t].prefix, &cell.failure, native) {
                (Err(_), ..) => " n/a |".to_string(),
                (_, Some(why), _) => {
                    notes.push(format!("- {} under {}: {why}", w.name, tools[t].name));
                    " FAIL |".to_string()
                }
                (_, None, Some(n)) if t == 0 => format!(" {n:.2} s |"),
                (_, None, Some(n)) => {
                    let m = median(&cell.times);
                    ratios[t].push(m / n);
                    format!(" {m:.2} s ({:.2}x) |", m / n)
                }
                _ => " – |".to_string(),
            };
        }
        s += "\n";
    }
    s += "| **geometric mean** | |";
    for r in &ratios[1..] {
        s += &if r.is_empty() { " – |".to_string() } else { format!(" **{:.2}x** |", geomean(r)) };
    }
    s += "\n";
    if !notes.is_empty() {
        s += "\nFAIL: a non-zero exit status, stdout different from native's, or a timeout.\n\n";
        s += &(notes.join("\n") + "\n");
    }
    for t in tools {
        if let Err(why) = &t.prefix {
            s += &format!("\nn/a: {why}.\n");
        }
    }
    if let Some(t) = tools.iter().position(|t| t.name == "rtgrind") {
        s += &match ratios[t].len() {
            0 => "\nrtgrind/native geometric mean: n/a (no successful rtgrind run)\n".to_string(),
            n => format!("\nrtgrind/native geometric mean: {:.2}x over {n} workloads\n", geomean(&ratios[t])),
        };
    }
    s
}
