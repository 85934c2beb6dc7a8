//! Whole-process benchmarks of the engine: each workload runs natively, under
//! `rtgrind -q --tool=none`, `valgrind --tool=none -q` and `qemu-x86_64`, N times each in
//! interleaved order; the table gives the median wall time and the ratio to native, and is
//! printed and written to `target/bench-engine.md`.
//!
//! ```text
//! cargo bench --bench engine [-- [--runs N] [--tools native,rtgrind,valgrind,qemu] [FILTER...]]
//! ```
//!
//! A FILTER keeps the workloads whose name contains it. Every run's stdout and exit status must
//! match the native run's, else the cell says FAIL and a note says why. A tool that is not
//! installed gets an "n/a" column. `qemu-x86_64` comes from Debian's `qemu-user`, which `.ci/run`
//! does not install: benchmarks stay out of CI.
//!
//! Workloads: the kernels `guest-programs/bench/*.c` (built with `gcc -O2` into
//! `target/bench-bin/`), `gzip -9` of a fixed 50 MiB file that `gen_data.c` writes once into
//! `target/bench-bin/`, and `guest-programs/bench/python_workload.py` under `/usr/bin/python3`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A run slower than this is killed and counts as a failure.
const TIMEOUT: Duration = Duration::from_secs(600);
const TOOLS: [&str; 4] = ["native", "rtgrind", "valgrind", "qemu"];

struct Workload {
    name: String,
    argv: Vec<String>,
}

/// What one run produced: the digest of stdout and the exit status.
#[derive(PartialEq)]
struct Outcome {
    stdout_len: usize,
    stdout_hash: u64,
    status: String,
}

#[derive(Default)]
struct Cell {
    times: Vec<f64>,
    /// Why the tool failed on this workload.
    failure: Option<String>,
}

fn main() {
    let mut runs = 5;
    let mut tools: Vec<String> = TOOLS.iter().map(|t| t.to_string()).collect();
    let mut filters = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bench" => {} // passed by `cargo bench`
            "--runs" => runs = args.next().and_then(|n| n.parse().ok()).expect("--runs N"),
            "--tools" => {
                tools = args
                    .next()
                    .expect("--tools LIST")
                    .split(',')
                    .map(String::from)
                    .collect()
            }
            _ if arg.starts_with("--") => panic!("unknown option {arg}"),
            _ => filters.push(arg),
        }
    }
    if let Some(t) = tools.iter().find(|t| !TOOLS.contains(&t.as_str())) {
        panic!("unknown tool {t} (known: {})", TOOLS.join(","));
    }
    tools.retain(|t| t != "native");
    tools.insert(0, "native".into()); // first: the reference for outputs and ratios

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let bin_dir = target.join("bench-bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let workloads: Vec<Workload> = workloads(root, &bin_dir, &filters);
    if workloads.is_empty() {
        eprintln!("no workload matches {filters:?}");
        return;
    }

    // Availability of each tool, and the command prefix that runs a program under it.
    let prefix = |tool: &str| -> Result<Vec<String>, String> {
        let (bin, args): (String, &[&str]) = match tool {
            "native" => return Ok(vec![]),
            "rtgrind" => (env!("CARGO_BIN_EXE_rtgrind").into(), &["-q", "--tool=none"]),
            "valgrind" => (
                find_in_path("valgrind").ok_or("valgrind not found in PATH")?,
                &["--tool=none", "-q"],
            ),
            _ => (
                find_in_path("qemu-x86_64")
                    .ok_or("qemu-x86_64 not found in PATH (apt-get install qemu-user)")?,
                &[],
            ),
        };
        Ok(std::iter::once(bin)
            .chain(args.iter().map(|a| a.to_string()))
            .collect())
    };
    let prefixes: Vec<Result<Vec<String>, String>> = tools.iter().map(|t| prefix(t)).collect();
    let unavailable: Vec<Option<String>> =
        prefixes.iter().map(|p| p.as_ref().err().cloned()).collect();

    let mut table: Vec<Vec<Cell>> = Vec::new();
    for w in &workloads {
        eprint!("{:<12}", w.name);
        let mut cells: Vec<Cell> = tools.iter().map(|_| Cell::default()).collect();
        let mut reference: Option<Outcome> = None;
        for round in 0..runs {
            // native first in the first round; then each round starts with the next tool
            for t in (0..tools.len()).map(|i| (i + round) % tools.len()) {
                let (Ok(p), None) = (&prefixes[t], &cells[t].failure) else {
                    continue;
                };
                let argv: Vec<String> = p.iter().chain(&w.argv).cloned().collect();
                let result = run(&argv);
                eprint!(".");
                let cell = &mut cells[t];
                match (result, &reference) {
                    (Err(e), _) => cell.failure = Some(e),
                    (Ok((out, _)), Some(r)) if out != *r => {
                        cell.failure =
                            Some(format!("{} (native: {})", out.describe(), r.describe()));
                    }
                    (Ok((out, secs)), _) => {
                        if reference.is_none() {
                            reference = Some(out);
                        }
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

    let report = render(&workloads, &tools, &unavailable, &table, runs);
    print!("{report}");
    let path = target.join("bench-engine.md");
    std::fs::write(&path, &report).unwrap();
    eprintln!("written to {}", path.display());
}

/// The kernels, gzip and python, filtered by name; builds what is missing or stale.
fn workloads(root: &Path, bin_dir: &Path, filters: &[String]) -> Vec<Workload> {
    let bench_src = root.join("guest-programs/bench");
    let wanted =
        |name: &str| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()));
    let mut out = Vec::new();
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&bench_src)
        .map(|dir| dir.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    sources.sort();
    for src in sources
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
    {
        let name = src.file_stem().unwrap().to_str().unwrap().to_string();
        if name == "gen_data" || !wanted(&name) {
            continue;
        }
        let exe = build(src, bin_dir);
        out.push(Workload {
            name,
            argv: vec![exe.display().to_string()],
        });
    }
    if wanted("gzip") {
        let input = bin_dir.join("gzip-input-50M");
        if !input.exists() {
            generate_data(&bench_src, bin_dir, &input);
        }
        let argv = ["/usr/bin/gzip", "-9", "-n", "-c"]
            .iter()
            .map(|a| a.to_string());
        out.push(Workload {
            name: "gzip".into(),
            argv: argv.chain([input.display().to_string()]).collect(),
        });
    }
    let script = bench_src.join("python_workload.py");
    if wanted("python") && script.exists() {
        out.push(Workload {
            name: "python".into(),
            argv: vec!["/usr/bin/python3".into(), script.display().to_string()],
        });
    }
    out
}

/// `gcc -O2 src -o bin_dir/NAME`, unless the binary is newer than the source.
fn build(src: &Path, bin_dir: &Path) -> PathBuf {
    let exe = bin_dir.join(src.file_stem().unwrap());
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if mtime(&exe).is_none() || mtime(&exe) < mtime(src) {
        let status = Command::new("gcc")
            .arg("-O2")
            .arg(src)
            .arg("-o")
            .arg(&exe)
            .status()
            .expect("cannot run gcc");
        assert!(status.success(), "gcc failed on {}", src.display());
    }
    exe
}

/// The gzip input: by `gen_data.c` if present, else by a generator of the same spirit here.
fn generate_data(bench_src: &Path, bin_dir: &Path, input: &Path) {
    let partial = input.with_extension("partial");
    let gen = bench_src.join("gen_data.c");
    if gen.exists() {
        let status = Command::new(build(&gen, bin_dir))
            .arg(&partial)
            .status()
            .expect("cannot run gen_data");
        assert!(status.success(), "gen_data failed");
    } else {
        let words = [
            "error", "request", "user", "session", "cache", "miss", "the", "of", "block",
        ];
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut data = Vec::with_capacity(50 << 20);
        while data.len() < 50 << 20 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            match rng % 40 {
                0 => data.extend(rng.to_le_bytes()),
                1 => data.extend(format!("id={} ", rng >> 40).bytes()),
                2 => data.push(b'\n'),
                _ => data.extend(format!("{} ", words[(rng >> 20) as usize % words.len()]).bytes()),
            }
        }
        data.truncate(50 << 20);
        std::fs::write(&partial, data).unwrap();
    }
    std::fs::rename(&partial, input).unwrap();
}

fn find_in_path(name: &str) -> Option<String> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .map(|p| p.display().to_string())
}

/// Run `argv` with stdin closed; its outcome and wall time in seconds, or why it failed.
fn run(argv: &[String]) -> Result<(Outcome, f64), String> {
    let start = Instant::now();
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", argv[0]))?;
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    // FNV-1a over the whole stream: the digest does not depend on how reads split it
    let hasher = std::thread::spawn(move || {
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
    let (stdout_hash, stdout_len) = hasher.join().unwrap();
    let stderr = errors.join().unwrap();
    let outcome = Outcome {
        stdout_len,
        stdout_hash,
        status: status.to_string(),
    };
    if !status.success() {
        let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(format!("{}: {}", outcome.status, first.trim()));
    }
    Ok((outcome, secs))
}

impl Outcome {
    fn describe(&self) -> String {
        format!(
            "{}, stdout {} bytes, checksum {:016x}",
            self.status, self.stdout_len, self.stdout_hash
        )
    }
}

fn median(times: &[f64]) -> f64 {
    let mut t = times.to_vec();
    t.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = t.len();
    if n % 2 == 1 {
        t[n / 2]
    } else {
        (t[n / 2 - 1] + t[n / 2]) / 2.0
    }
}

/// The markdown report: one row per workload, a geometric-mean row, notes on failures.
fn render(
    workloads: &[Workload],
    tools: &[String],
    unavailable: &[Option<String>],
    table: &[Vec<Cell>],
    runs: usize,
) -> String {
    let title = |t: &str| match t {
        "native" => "native",
        "rtgrind" => "rtgrind --tool=none",
        "valgrind" => "valgrind --tool=none",
        _ => "qemu-x86_64",
    };
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap().trim().to_string())
        })
        .unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut s = format!(
        "# Engine benchmarks\n\nMedian wall time of {runs} interleaved runs, ratio to native in parentheses \
         ({cpu}, {cpus} CPUs).\n\n| workload |"
    );
    for t in tools {
        s += &format!(" {} |", title(t));
    }
    s += "\n|---|";
    s += &"---:|".repeat(tools.len());
    s += "\n";
    let mut notes = Vec::new();
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); tools.len()];
    for (w, cells) in workloads.iter().zip(table) {
        s += &format!("| {} |", w.name);
        let native = (cells[0].failure.is_none() && !cells[0].times.is_empty())
            .then(|| median(&cells[0].times));
        for (t, cell) in cells.iter().enumerate() {
            match (&cell.failure, native) {
                _ if unavailable[t].is_some() => s += " n/a |",
                (Some(f), _) => {
                    s += " FAIL |";
                    notes.push(format!("- {} under {}: {f}", w.name, tools[t]));
                }
                (None, Some(n)) if !cell.times.is_empty() => {
                    let m = median(&cell.times);
                    if t == 0 {
                        s += &format!(" {m:.2} s |");
                    } else {
                        s += &format!(" {m:.2} s ({:.2}x) |", m / n);
                        ratios[t].push(m / n);
                    }
                }
                _ => s += " – |",
            }
        }
        s += "\n";
    }
    s += "| **geometric mean** |";
    for (t, r) in ratios.iter().enumerate() {
        if t == 0 || r.is_empty() {
            s += " |";
        } else {
            s += &format!(
                " **{:.2}x** |",
                (r.iter().map(|x| x.ln()).sum::<f64>() / r.len() as f64).exp()
            );
        }
    }
    s += "\n";
    if !notes.is_empty() {
        s += "\nFAIL: a non-zero exit, stdout or exit status different from native, or a timeout:\n\n";
        s += &notes.join("\n");
        s += "\n";
    }
    for (tool, why) in tools.iter().zip(unavailable) {
        if let Some(why) = why {
            s += &format!("\nn/a: {tool}: {why}\n");
        }
    }
    if let Some(t) = tools.iter().position(|t| t == "rtgrind") {
        let r = &ratios[t];
        let line = if r.is_empty() {
            "rtgrind/native geometric mean: n/a (no successful rtgrind run)".to_string()
        } else {
            let geo = (r.iter().map(|x| x.ln()).sum::<f64>() / r.len() as f64).exp();
            format!(
                "rtgrind/native geometric mean: {geo:.2}x over {} workloads",
                r.len()
            )
        };
        s += &format!("\n{line}\n");
    }
    s
}
