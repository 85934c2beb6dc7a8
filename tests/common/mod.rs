//! Shared helpers for the integration tests: where `rtgrind` is, building the guest programs,
//! running a command natively and under rtgrind with a timeout, and comparing the two runs.
//!
//! Guest programs live in `guest-programs/correct/` (`NAME.c`, `NAME.cc`, `NAME.S`), threaded ones
//! in `guest-programs/threads/` (see `guest_in`). The first 20 lines of a source may hold
//! directives, one per comment line:
//!
//! ```text
//! // rtgrind-test: variants=pie,static      (.S files: # rtgrind-test: ...)
//! // rtgrind-test: cflags=-lm -mavx2        (appended after the source; repeats accumulate)
//! // rtgrind-test: args=one "two words"     (the guest's arguments)
//! // rtgrind-test: stdin=line 1\nline 2\n   (escapes: \n \t \r \0 \\ \xHH)
//! // rtgrind-test: exit=3                   (expected native exit status; default 0)
//! // rtgrind-test: signal=SIGSEGV           (expected fatal signal instead of an exit status)
//! ```
//!
//! Variants: `pie` (`-O2 -g -fPIE -pie`), `nopie` (`-O2 -g -no-pie`), `static` (`-O2 -g -static`),
//! `static-pie` (`-O2 -g -static-pie`), `nostdlib` (`-g -nostdlib -static`). Defaults: `.c` all four
//! glibc variants, `.cc` `pie,static`, `.S` `nostdlib`. Each program is built once per test process,
//! its variants in parallel, with at most one compiler per CPU across the whole process.
//!
//! `RTGRIND_BIN=/path/to/wrapper` replaces the binary under test. It exists only to check the
//! harness itself (with a wrapper script that execs the guest natively); CI never sets it.
//! `RTGRIND_TEST_TIMEOUT=SECONDS` changes the per-run time limit (default 60).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// Paths

/// The `rtgrind` binary under test (`RTGRIND_BIN` overrides it for harness checks only).
pub fn rtgrind_bin() -> PathBuf {
    match std::env::var_os("RTGRIND_BIN") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_rtgrind")),
    }
}

/// The repository root.
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `guest-programs/correct/`.
pub fn correct_dir() -> PathBuf {
    repo_root().join("guest-programs").join("correct")
}

/// `guest-programs/threads/`: threaded guest programs, same directives as `correct/`; the
/// differential tests in `tests/threads.rs` run them.
pub fn threads_dir() -> PathBuf {
    repo_root().join("guest-programs").join("threads")
}

/// `guest-programs/threads/special/`: threaded programs whose output is not comparable with a
/// native run (racy, deadlocking, printing times); `tests/threads.rs` uses them one by one.
pub fn threads_special_dir() -> PathBuf {
    threads_dir().join("special")
}

/// This test process's private directory under cargo's target tmpdir. Directories left behind by
/// earlier test processes that are no longer alive are removed the first time this is called.
pub fn run_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("rtgrind-tests");
        if let Ok(entries) = std::fs::read_dir(&base) {
            for e in entries.flatten() {
                let name = e.file_name();
                let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("run-")) else {
                    continue;
                };
                if !Path::new("/proc").join(pid).exists() {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let dir = base.join(format!("run-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("cannot create the test run directory");
        dir
    })
}

/// A fresh, empty directory for one test (unique even if `name` is reused).
pub fn scratch_dir(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = run_dir().join("scratch").join(format!("{name}-{n}"));
    std::fs::create_dir_all(&dir).expect("cannot create a scratch directory");
    dir
}

/// Empties `dir` (creating it if needed), so a second run starts from the same state as the first.
pub fn reset_dir(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("cannot recreate a scratch directory");
}

// ---------------------------------------------------------------------------------------------
// Running processes

/// Per-run wall-clock limit; a run that exceeds it is killed (with its whole process group).
pub fn run_timeout() -> Duration {
    let secs = std::env::var("RTGRIND_TEST_TIMEOUT").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    Duration::from_secs(secs)
}

/// What a finished (or killed) process left behind.
#[derive(Debug, Clone)]
pub struct Output {
    /// The command line, for messages.
    pub command: String,
    pub pid: u32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub status: ExitStatus,
    /// The run hit the time limit and was killed; `status` is then the kill's.
    pub timed_out: bool,
    pub elapsed: Duration,
    /// The time limit this run had.
    pub limit: Duration,
}

impl Output {
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
    /// `exit 3`, `signal SIGSEGV`, `killed after timeout`.
    pub fn status_text(&self) -> String {
        let s = status_text(self.status);
        if self.timed_out {
            format!("killed after the {}s timeout ({s})", self.limit.as_secs())
        } else {
            s
        }
    }
    /// A multi-line description: command, status, and the tails of stdout and stderr.
    pub fn describe(&self) -> String {
        format!(
            "command: {}\nstatus:  {} after {:.2}s\nstdout (last lines):\n{}stderr (last lines):\n{}",
            self.command,
            self.status_text(),
            self.elapsed.as_secs_f64(),
            indent_tail(&self.stdout, 15),
            indent_tail(&self.stderr, 15)
        )
    }
}

fn status_text(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(s)) => format!("signal {}", signal_name(s)),
        _ => format!("{status:?}"),
    }
}

/// Output that a line diff can show: UTF-8 without NUL bytes.
fn is_text(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok() && !bytes.contains(&0)
}

/// `bytes[at-16..at+16]` as hex, marking `at`.
fn hex_around(bytes: &[u8], at: usize) -> String {
    let start = at.saturating_sub(16);
    let end = (at + 16).min(bytes.len());
    let mut s = format!("@{start:#x}:");
    for (i, b) in bytes[start..end].iter().enumerate() {
        s.push_str(if start + i == at { " [" } else { " " });
        let _ = write!(s, "{b:02x}");
        if start + i == at {
            s.push(']');
        }
    }
    s
}

fn indent_tail(bytes: &[u8], n: usize) -> String {
    if !is_text(bytes) {
        return format!("    ({} bytes of binary data)\n", bytes.len());
    }
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    if lines.is_empty() {
        out.push_str("    (empty)\n");
    }
    if lines.len() > n {
        let _ = writeln!(out, "    ... ({} earlier lines)", lines.len() - n);
    }
    for l in &lines[lines.len().saturating_sub(n)..] {
        let _ = writeln!(out, "    | {l}");
    }
    out
}

/// Where a process's stdin comes from.
pub enum Input {
    Null,
    Bytes(Vec<u8>),
    /// For pipelines: e.g. another child's stdout.
    Stdio(Stdio),
}

/// A command to run natively or under rtgrind.
#[derive(Clone, Debug, Default)]
pub struct Cmd {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub stdin: Option<Vec<u8>>,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(OsString, OsString)>,
}

impl Cmd {
    pub fn new(program: impl Into<PathBuf>) -> Cmd {
        Cmd { program: program.into(), ..Cmd::default() }
    }
    pub fn arg(mut self, a: impl AsRef<OsStr>) -> Cmd {
        self.args.push(a.as_ref().to_owned());
        self
    }
    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, args: I) -> Cmd {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Cmd {
        self.stdin = Some(bytes.into());
        self
    }
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Cmd {
        self.cwd = Some(dir.into());
        self
    }
    pub fn env(mut self, k: impl AsRef<OsStr>, v: impl AsRef<OsStr>) -> Cmd {
        self.env.push((k.as_ref().to_owned(), v.as_ref().to_owned()));
        self
    }

    /// The std `Command` for `prefix... program args...` (prefix empty: the program itself).
    fn command(&self, prefix: Option<(&Path, Vec<OsString>)>) -> Command {
        let mut c = match prefix {
            Some((bin, opts)) => {
                let mut c = Command::new(bin);
                c.args(opts).arg(&self.program);
                c
            }
            None => Command::new(&self.program),
        };
        c.args(&self.args);
        // (Not the repository: a search saves a layout it found in its working directory.)
        c.current_dir(self.cwd.clone().unwrap_or_else(|| scratch_dir("cwd")));
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c
    }

    fn input(&self) -> Input {
        match &self.stdin {
            Some(b) => Input::Bytes(b.clone()),
            None => Input::Null,
        }
    }
}

/// Runs `cmd` natively.
pub fn run_native(cmd: &Cmd) -> Output {
    run_command(cmd.command(None), cmd.input())
}

/// Runs `rtgrind OPTS PROGRAM ARGS` (OPTS are rtgrind's own options, e.g. `-q`).
pub fn run_rtgrind<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(opts: I, cmd: &Cmd) -> Output {
    let opts = opts.into_iter().map(|s| s.as_ref().to_owned()).collect();
    run_command(cmd.command(Some((&rtgrind_bin(), opts))), cmd.input())
}

/// `run_rtgrind` with its own time limit instead of `run_timeout()` (for runs that must finish
/// quickly, e.g. a deadlock that must be reported and not hang).
pub fn run_rtgrind_within<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(opts: I, cmd: &Cmd, limit: Duration) -> Output {
    let opts = opts.into_iter().map(|s| s.as_ref().to_owned()).collect();
    spawn(cmd.command(Some((&rtgrind_bin(), opts))), cmd.input(), true).wait_within(limit)
}

/// Runs `rtgrind ARGS` exactly as given (for CLI tests), with stdin from /dev/null.
pub fn rtgrind_raw<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(args: I) -> Output {
    let mut c = Command::new(rtgrind_bin());
    c.args(args);
    run_command(c, Input::Null)
}

/// Runs a command with piped stdout/stderr in its own process group, no core dumps, and the
/// per-run time limit. Never hangs: on timeout the whole group is killed and `timed_out` set.
pub fn run_command(cmd: Command, input: Input) -> Output {
    spawn(cmd, input, true).wait()
}

/// Runs `first | second` (a real pipe); returns both outputs (`first.stdout` stays empty).
pub fn run_pipeline(first: Command, first_input: Input, second: Command) -> (Output, Output) {
    let mut a = spawn(first, first_input, false);
    let pipe = a.child.stdout.take().expect("first stage has a piped stdout");
    let b = spawn(second, Input::Stdio(Stdio::from(pipe)), true).wait();
    (a.wait(), b)
}

struct Running {
    command: String,
    child: Child,
    start: Instant,
    rx: mpsc::Receiver<(u8, Vec<u8>)>,
    readers: usize,
}

fn spawn(mut cmd: Command, input: Input, capture_stdout: bool) -> Running {
    let command = describe_command(&cmd);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let bytes = match input {
        Input::Null => {
            cmd.stdin(Stdio::null());
            None
        }
        Input::Bytes(b) => {
            cmd.stdin(Stdio::piped());
            Some(b)
        }
        Input::Stdio(s) => {
            cmd.stdin(s);
            None
        }
    };
    // Own process group: a timeout kills grandchildren too, and a guest's kill(0, sig) stays
    // inside its own run.
    cmd.process_group(0);
    // SAFETY: the closure runs in the forked child before exec and only calls setrlimit, which
    // is async-signal-safe; it touches no memory shared with the parent.
    unsafe {
        cmd.pre_exec(|| {
            let zero = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            libc::setrlimit(libc::RLIMIT_CORE, &zero);
            Ok(())
        });
    }
    let start = Instant::now();
    // A program written just now can be "busy" for a moment: another test thread forking at
    // that instant holds the writing descriptor open in its child until that child execs.
    let mut tries = 0;
    let mut child = loop {
        match cmd.spawn() {
            Ok(c) => break c,
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 100 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("cannot start `{command}`: {e}"),
        }
    };
    if let Some(bytes) = bytes {
        let mut stdin = child.stdin.take().expect("piped stdin");
        // Errors (EPIPE from a guest that does not read its input) are the guest's business.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
    }
    let (tx, rx) = mpsc::channel();
    let mut readers = 0;
    let mut pipes: Vec<(u8, Box<dyn Read + Send>)> = Vec::new();
    if capture_stdout {
        pipes.push((1, Box::new(child.stdout.take().expect("piped stdout"))));
    }
    pipes.push((2, Box::new(child.stderr.take().expect("piped stderr"))));
    for (fd, mut pipe) in pipes {
        let tx = tx.clone();
        readers += 1;
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            let _ = tx.send((fd, buf));
        });
    }
    Running { command, child, start, rx, readers }
}

impl Running {
    fn wait(self) -> Output {
        self.wait_within(run_timeout())
    }

    fn wait_within(mut self, limit: Duration) -> Output {
        let deadline = self.start + limit;
        let pid = self.child.id();
        let kill_group = || {
            // SAFETY: kill(2) with a negative pid signals the process group we created for this
            // child; it has no memory-safety preconditions.
            unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
        };
        let mut timed_out = false;
        let mut nap = Duration::from_millis(1);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(st)) => break st,
                Ok(None) => {}
                Err(e) => panic!("waiting for `{}` failed: {e}", self.command),
            }
            if Instant::now() >= deadline {
                timed_out = true;
                kill_group();
                break self.child.wait().expect("wait after kill");
            }
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(20));
        };
        // The pipes close when every process holding them is gone; a left-behind grandchild can
        // keep them open, so this wait has a deadline too.
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        let mut got = 0;
        while got < self.readers {
            let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(2));
            match self.rx.recv_timeout(left) {
                Ok((1, b)) => (stdout, got) = (b, got + 1),
                Ok((_, b)) => (stderr, got) = (b, got + 1),
                Err(_) if !timed_out => {
                    timed_out = true;
                    kill_group();
                }
                Err(_) => break,
            }
        }
        Output { command: self.command, pid, stdout, stderr, status, timed_out, elapsed: self.start.elapsed(), limit }
    }
}

fn describe_command(cmd: &Command) -> String {
    let mut s = shell_quote(cmd.get_program());
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&shell_quote(a));
    }
    s
}

fn shell_quote(s: &OsStr) -> String {
    let s = s.to_string_lossy();
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=,:+%@".contains(c)) {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

// ---------------------------------------------------------------------------------------------
// Comparing runs

/// A line rtgrind prints about the guest, Valgrind style: `==PID== ...`. Returns the pid.
pub fn report_line_pid(line: &str) -> Option<u32> {
    let rest = line.strip_prefix("==")?;
    let (pid, tail) = rest.split_once("== ")?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let _ = tail;
    pid.parse().ok()
}

/// Splits stderr into rtgrind's `==PID==` lines and the rest (the guest's own stderr).
pub fn split_report_lines(stderr: &[u8]) -> (Vec<String>, Vec<u8>) {
    let mut report = Vec::new();
    let mut rest = Vec::new();
    for line in stderr.split_inclusive(|&b| b == b'\n') {
        let text = String::from_utf8_lossy(line);
        if report_line_pid(text.trim_end_matches('\n')).is_some() {
            report.push(text.trim_end_matches('\n').to_owned());
        } else {
            rest.extend_from_slice(line);
        }
    }
    (report, rest)
}

/// `compare` for a run under a tool: the tool's own summary lines (`==PID== TOOL: ...`) are
/// removed first; everything else must be as native.
pub fn compare_tool(native: &Output, rt: &Output, tool: &str) -> Result<(), String> {
    let marker = format!("== {tool}: ");
    let mut stderr = Vec::new();
    for line in rt.stderr.split_inclusive(|&b| b == b'\n') {
        let text = String::from_utf8_lossy(line);
        if !(report_line_pid(text.trim_end_matches('\n')).is_some() && text.contains(&marker)) {
            stderr.extend_from_slice(line);
        }
    }
    let filtered = Output { stderr, ..rt.clone() };
    compare(native, &filtered)
}

/// Checks a run under `rtgrind -q` against the same command run natively: same exit status or
/// fatal signal, same stdout, same stderr. When the guest dies from a signal whose default
/// action dumps core (a fault, abort()) rtgrind must print exactly one `==PID== ` line naming
/// the signal and `at 0x...`, which is removed before the stderr comparison; otherwise (an exit,
/// SIGTERM, SIGPIPE, ...) rtgrind must print nothing of its own.
pub fn compare(native: &Output, rt: &Output) -> Result<(), String> {
    let mut problems: Vec<String> = Vec::new();
    if native.timed_out {
        problems.push(format!("the native run timed out:\n{}", native.describe()));
    }
    if rt.timed_out {
        problems.push("the rtgrind run timed out (a hang?)".to_owned());
    }
    let rt_stderr = String::from_utf8_lossy(&rt.stderr);
    if rt_stderr.contains("panicked at") {
        problems.push("rtgrind panicked (\"panicked at\" on its stderr)".to_owned());
    }
    let (report, guest_stderr) = split_report_lines(&rt.stderr);
    match (native.status.signal(), rt.status.signal()) {
        (Some(ns), Some(rs)) => {
            if ns != rs {
                problems.push(format!("fatal signal: native {}, rtgrind {}", signal_name(ns), signal_name(rs)));
            }
            let name = signal_name(ns);
            // (`-q` reports only a signal whose default action dumps core: a program the
            // harness runs raised it itself.)
            let core = [
                libc::SIGQUIT,
                libc::SIGILL,
                libc::SIGTRAP,
                libc::SIGABRT,
                libc::SIGBUS,
                libc::SIGFPE,
                libc::SIGSEGV,
                libc::SIGXCPU,
                libc::SIGXFSZ,
                libc::SIGSYS,
            ];
            match report.as_slice() {
                [] if !core.contains(&ns) => {}
                lines if !core.contains(&ns) => problems.push(format!("-q reports no death by {name}, but rtgrind printed: {lines:#?}")),
                [line] => {
                    if report_line_pid(line) != Some(rt.pid) {
                        problems.push(format!("the crash report line does not start with =={}== : {line:?}", rt.pid));
                    }
                    if !line.contains(&name) || !line.contains("at 0x") {
                        problems.push(format!("the crash report line must name {name} and `at 0x<guest pc>`: {line:?}"));
                    }
                }
                lines => {
                    problems.push(format!("expected exactly one `=={}== ...{name}... at 0x...` line on stderr, found {}: {lines:#?}", rt.pid, lines.len()))
                }
            }
        }
        _ => {
            if native.status.code() != rt.status.code() || native.status.signal() != rt.status.signal() {
                problems.push(format!("status: native {}, rtgrind {}", native.status_text(), rt.status_text()));
            }
            if !report.is_empty() && native.status.signal().is_none() {
                problems.push(format!("rtgrind printed its own lines although the guest was not killed by a signal: {report:#?}"));
            }
        }
    }
    if native.stdout != rt.stdout {
        problems.push(format!("stdout differs:\n{}", diff(&native.stdout, &rt.stdout)));
    }
    if native.stderr != guest_stderr {
        problems.push(format!("stderr differs (rtgrind's `==PID==` lines removed):\n{}", diff(&native.stderr, &guest_stderr)));
    }
    if problems.is_empty() {
        return Ok(());
    }
    let mut msg = format!("`{}` under rtgrind differs from native:\n", native.command);
    for p in problems {
        let _ = writeln!(msg, "  * {}", p.replace('\n', "\n    "));
    }
    let _ = write!(msg, "native:  {}\nrtgrind: {}", native.status_text(), rt.describe());
    Err(msg)
}

/// Panics with a readable report unless `compare(native, rt)` holds.
pub fn assert_same(native: &Output, rt: &Output) {
    if let Err(e) = compare(native, rt) {
        panic!("{e}");
    }
}

/// Panics unless `o` is a normal exit with status `code` (the message shows the output).
pub fn assert_exit(o: &Output, code: i32) {
    assert!(!o.timed_out && o.status.code() == Some(code), "expected exit {code}:\n{}", o.describe());
}

/// Panics if `o`'s stderr contains a Rust panic message.
pub fn assert_no_panic(o: &Output) {
    assert!(!o.stderr_str().contains("panicked at"), "rtgrind panicked:\n{}", o.describe());
}

/// A unified line diff of two outputs (`-` native, `+` rtgrind), 3 lines of context, capped.
pub fn diff(a: &[u8], b: &[u8]) -> String {
    let first = a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
    let mut out = format!("    ({} vs {} bytes; first difference at byte {first})\n", a.len(), b.len());
    if !is_text(a) || !is_text(b) {
        let _ = writeln!(out, "    -{}\n    +{}\n    (- native, + rtgrind; binary)", hex_around(a, first), hex_around(b, first));
        return out;
    }
    let la: Vec<&[u8]> = a.split_inclusive(|&c| c == b'\n').collect();
    let lb: Vec<&[u8]> = b.split_inclusive(|&c| c == b'\n').collect();
    let pre = la.iter().zip(&lb).take_while(|(x, y)| x == y).count();
    let suf = la[pre..].iter().rev().zip(lb[pre..].iter().rev()).take_while(|(x, y)| x == y).count();
    let (ma, mb) = (&la[pre..la.len() - suf], &lb[pre..lb.len() - suf]);
    // Edit script over the differing middle: LCS when small enough, else delete-all/insert-all.
    let mut ops: Vec<(char, &[u8])> = Vec::new();
    if ma.len().saturating_mul(mb.len()) <= 4_000_000 {
        let (n, m) = (ma.len(), mb.len());
        let mut t = vec![0u32; (n + 1) * (m + 1)];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                t[i * (m + 1) + j] = if ma[i] == mb[j] { t[(i + 1) * (m + 1) + j + 1] + 1 } else { t[(i + 1) * (m + 1) + j].max(t[i * (m + 1) + j + 1]) };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && ma[i] == mb[j] {
                ops.push((' ', ma[i]));
                i += 1;
                j += 1;
            } else if i < n && (j == m || t[(i + 1) * (m + 1) + j] >= t[i * (m + 1) + j + 1]) {
                ops.push(('-', ma[i]));
                i += 1;
            } else {
                ops.push(('+', mb[j]));
                j += 1;
            }
        }
    } else {
        ops.extend(ma.iter().map(|l| ('-', *l)));
        ops.extend(mb.iter().map(|l| ('+', *l)));
    }
    let mut all: Vec<(char, &[u8])> = la[..pre].iter().map(|l| (' ', *l)).collect();
    all.extend(ops);
    all.extend(la[la.len() - suf..].iter().map(|l| (' ', *l)));
    let show: Vec<bool> = (0..all.len()).map(|k| all[k.saturating_sub(3)..(k + 4).min(all.len())].iter().any(|(c, _)| *c != ' ')).collect();
    let mut printed = 0;
    let mut skipped = false;
    for (k, (c, line)) in all.iter().enumerate() {
        if !show[k] {
            skipped = true;
            continue;
        }
        if skipped {
            out.push_str("    ...\n");
            skipped = false;
        }
        if printed == 80 {
            out.push_str("    ... (diff truncated)\n");
            break;
        }
        let text = String::from_utf8_lossy(line);
        let (body, eol) = match text.strip_suffix('\n') {
            Some(b) => (b, ""),
            None => (&*text, "\\ (no newline at end)"),
        };
        let _ = writeln!(out, "    {c}{}{eol}", visible(body));
        printed += 1;
    }
    out.push_str("    (- native, + rtgrind)\n");
    out
}

/// Control characters (other than tab) escaped, the rest as is.
fn visible(s: &str) -> String {
    s.chars().map(|c| if c.is_control() && c != '\t' { c.escape_debug().to_string() } else { c.to_string() }).collect()
}

// ---------------------------------------------------------------------------------------------
// Signals

const SIGNALS: &[(i32, &str)] = &[
    (libc::SIGHUP, "SIGHUP"),
    (libc::SIGINT, "SIGINT"),
    (libc::SIGQUIT, "SIGQUIT"),
    (libc::SIGILL, "SIGILL"),
    (libc::SIGTRAP, "SIGTRAP"),
    (libc::SIGABRT, "SIGABRT"),
    (libc::SIGBUS, "SIGBUS"),
    (libc::SIGFPE, "SIGFPE"),
    (libc::SIGKILL, "SIGKILL"),
    (libc::SIGUSR1, "SIGUSR1"),
    (libc::SIGSEGV, "SIGSEGV"),
    (libc::SIGUSR2, "SIGUSR2"),
    (libc::SIGPIPE, "SIGPIPE"),
    (libc::SIGALRM, "SIGALRM"),
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGCHLD, "SIGCHLD"),
    (libc::SIGSYS, "SIGSYS"),
    (libc::SIGXCPU, "SIGXCPU"),
];

/// `SIGSEGV` for 11 (or `signal N` for one not in the table).
pub fn signal_name(sig: i32) -> String {
    SIGNALS.iter().find(|(n, _)| *n == sig).map(|(_, s)| s.to_string()).unwrap_or_else(|| format!("signal {sig}"))
}

/// 11 for `SIGSEGV` or `SEGV`.
pub fn signal_number(name: &str) -> Option<i32> {
    let name = name.trim().to_ascii_uppercase();
    let full = if name.starts_with("SIG") { name } else { format!("SIG{name}") };
    SIGNALS.iter().find(|(_, s)| *s == full).map(|(n, _)| *n)
}

// ---------------------------------------------------------------------------------------------
// Compiling

/// At most one compiler per CPU across the whole test process.
fn with_compile_slot<T>(f: impl FnOnce() -> T) -> T {
    static SLOTS: OnceLock<(Mutex<usize>, Condvar)> = OnceLock::new();
    let (m, cv) = SLOTS.get_or_init(|| {
        let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).min(8);
        (Mutex::new(n), Condvar::new())
    });
    let mut free = cv.wait_while(m.lock().unwrap(), |f| *f == 0).unwrap();
    *free -= 1;
    drop(free);
    struct Release<'a>(&'a (Mutex<usize>, Condvar));
    impl Drop for Release<'_> {
        fn drop(&mut self) {
            *self.0 .0.lock().unwrap() += 1;
            self.0 .1.notify_one();
        }
    }
    let _release = Release(SLOTS.get().unwrap());
    f()
}

/// Runs `compiler ARGS` (in a compile slot); `Err` carries the command and its stderr.
pub fn run_compiler(compiler: &str, args: &[OsString]) -> Result<(), String> {
    let out = with_compile_slot(|| {
        let mut c = Command::new(compiler);
        c.args(args);
        run_command(c, Input::Null)
    });
    if out.timed_out || !out.status.success() {
        return Err(format!("compile failed:\n{}", out.describe()));
    }
    Ok(())
}

/// Writes `source` to `NAME.EXT` in a directory of its own under `snippets/` in the run
/// directory, compiles it with `gcc` (`g++` for `.cc`) there and renames the executable to
/// `snippets/NAME`. Tests running at once may build the same snippet: the rename replaces the
/// file whole, where writing it in place let another test run a half-written (not yet
/// executable) file. Panics with the compiler's stderr on failure.
pub fn compile_snippet(name: &str, ext: &str, source: &str, flags: &[&str]) -> PathBuf {
    static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = run_dir().join("snippets");
    let build = dir.join(format!("build-{}", BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    std::fs::create_dir_all(&build).unwrap();
    let src = build.join(format!("{name}.{ext}"));
    let built = build.join(name);
    let exe = dir.join(name);
    std::fs::write(&src, source).unwrap();
    let compiler = if ext == "cc" || ext == "cpp" { "g++" } else { "gcc" };
    let mut args: Vec<OsString> = flags.iter().map(OsString::from).collect();
    args.extend(["-o".into(), built.clone().into_os_string(), src.into_os_string()]);
    if let Err(e) = run_compiler(compiler, &args) {
        panic!("cannot build the test snippet {name}.{ext}: {e}");
    }
    std::fs::rename(&built, &exe).unwrap();
    exe
}

// ---------------------------------------------------------------------------------------------
// Guest programs

pub const VARIANTS: &[&str] = &["pie", "nopie", "static", "static-pie", "nostdlib", "O0"];

fn variant_flags(variant: &str) -> &'static [&'static str] {
    match variant {
        "pie" => &["-O2", "-g", "-fPIE", "-pie"],
        // Every local in its frame (issue 24: frames a layout can re-lay).
        "O0" => &["-O0", "-g", "-fPIE", "-pie"],
        "nopie" => &["-O2", "-g", "-no-pie"],
        "static" => &["-O2", "-g", "-static"],
        "static-pie" => &["-O2", "-g", "-static-pie"],
        "nostdlib" => &["-g", "-nostdlib", "-static"],
        _ => unreachable!("unknown variant {variant}"),
    }
}

/// How a run of the program must end natively (and so under rtgrind).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    Exit(i32),
    Signal(i32),
}

impl Expect {
    pub fn check(&self, o: &Output) -> Result<(), String> {
        let ok = !o.timed_out
            && match *self {
                Expect::Exit(c) => o.status.code() == Some(c),
                Expect::Signal(s) => o.status.signal() == Some(s),
            };
        if ok {
            Ok(())
        } else {
            let want = match *self {
                Expect::Exit(c) => format!("exit {c}"),
                Expect::Signal(s) => format!("signal {}", signal_name(s)),
            };
            Err(format!("expected {want}, got {}", o.status_text()))
        }
    }
}

/// A guest program's directives.
#[derive(Clone, Debug)]
pub struct Spec {
    pub variants: Vec<&'static str>,
    pub cflags: Vec<String>,
    pub args: Vec<String>,
    pub stdin: Option<Vec<u8>>,
    pub expect: Expect,
}

/// A built guest program.
#[derive(Debug)]
pub struct GuestProgram {
    pub name: String,
    pub source: PathBuf,
    pub spec: Spec,
    /// (variant, executable), in the order of `spec.variants`.
    pub builds: Vec<(&'static str, PathBuf)>,
}

impl GuestProgram {
    /// The command that runs one build of this program with its arguments and stdin.
    pub fn cmd(&self, exe: &Path) -> Cmd {
        let mut c = Cmd::new(exe).args(&self.spec.args);
        c.stdin = self.spec.stdin.clone();
        c
    }
}

enum Lang {
    C,
    Cxx,
    Asm,
}

fn lang_of(path: &Path) -> Option<Lang> {
    match path.extension()?.to_str()? {
        "c" => Some(Lang::C),
        "cc" | "cpp" | "cxx" => Some(Lang::Cxx),
        "S" | "s" => Some(Lang::Asm),
        _ => None,
    }
}

type Entry = (Result<PathBuf, String>, OnceLock<Result<GuestProgram, String>>);

/// Every program in `guest-programs/correct/` by name (file stem). A name with two sources is an
/// error entry.
fn guest_table() -> &'static BTreeMap<String, Entry> {
    guest_table_in(&correct_dir())
}

/// Every program directly in `dir` (not in its subdirectories) by name (file stem), scanned once
/// per test process. A name with two sources is an error entry.
fn guest_table_in(dir: &Path) -> &'static BTreeMap<String, Entry> {
    type Table = &'static BTreeMap<String, Entry>;
    static TABLES: Mutex<Vec<(PathBuf, Table)>> = Mutex::new(Vec::new());
    let mut tables = TABLES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, t)) = tables.iter().find(|(d, _)| d == dir) {
        return t;
    }
    let table: Table = Box::leak(Box::new(scan_guest_dir(dir)));
    tables.push((dir.to_owned(), table));
    table
}

fn scan_guest_dir(dir: &Path) -> BTreeMap<String, Entry> {
    let mut found: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_file() && lang_of(&p).is_some() {
                let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
                found.entry(stem).or_default().push(p);
            }
        }
    }
    found
        .into_iter()
        .map(|(name, mut paths)| {
            paths.sort();
            let src = if paths.len() == 1 { Ok(paths.pop().unwrap()) } else { Err(format!("guest program {name} has more than one source: {paths:?}")) };
            (name, (src, OnceLock::new()))
        })
        .collect()
}

/// Names of all guest programs in `guest-programs/correct/`.
pub fn guest_names() -> Vec<String> {
    guest_names_in(&correct_dir())
}

/// Names of all guest programs directly in `dir` (e.g. `threads_dir()`).
pub fn guest_names_in(dir: &Path) -> Vec<String> {
    guest_table_in(dir).keys().cloned().collect()
}

/// Parses the directives of a guest program's source.
pub fn guest_spec(name: &str) -> Result<Spec, String> {
    guest_spec_in(&correct_dir(), name)
}

/// Parses the directives of the guest program `name` in `dir`.
pub fn guest_spec_in(dir: &Path, name: &str) -> Result<Spec, String> {
    let src = guest_source_in(dir, name)?;
    let text = std::fs::read_to_string(&src).map_err(|e| format!("cannot read {}: {e}", src.display()))?;
    parse_spec(&text, lang_of(&src).unwrap()).map_err(|e| format!("{}: {e}", src.display()))
}

fn guest_source_in(dir: &Path, name: &str) -> Result<PathBuf, String> {
    match guest_table_in(dir).get(name) {
        Some((src, _)) => src.clone(),
        None => Err(format!("guest program `{name}` not found: no {name}.c, {name}.cc or {name}.S in {}", dir.display())),
    }
}

/// The guest program `name`, built (once per test process) in all its variants.
pub fn guest(name: &str) -> Result<&'static GuestProgram, String> {
    guest_in(&correct_dir(), name)
}

/// The guest program `name` in `dir` (e.g. `threads_dir()`), built once per test process in all
/// its variants. Programs of `correct/` are built into `guests/` of the run directory, those of
/// another directory into `guests-<its path under guest-programs, '/' as '-'>/`.
pub fn guest_in(dir: &Path, name: &str) -> Result<&'static GuestProgram, String> {
    let source = guest_source_in(dir, name)?;
    let (_, cell) = guest_table_in(dir).get(name).expect("checked by guest_source_in");
    cell.get_or_init(|| build_guest(dir, name, &source)).as_ref().map_err(Clone::clone)
}

/// Where the programs of `dir` are built.
fn build_dir_for(dir: &Path) -> PathBuf {
    if dir == correct_dir() {
        return run_dir().join("guests");
    }
    let base = repo_root().join("guest-programs");
    let rel = dir.strip_prefix(&base).unwrap_or(dir);
    let tag: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).filter(|c| c != "/").collect();
    run_dir().join(format!("guests-{}", tag.join("-")))
}

fn build_guest(src_dir: &Path, name: &str, source: &Path) -> Result<GuestProgram, String> {
    let spec = guest_spec_in(src_dir, name)?;
    let compiler = match lang_of(source) {
        Some(Lang::Cxx) => "g++",
        _ => "gcc",
    };
    let dir = build_dir_for(src_dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let jobs: Vec<(&'static str, PathBuf, Vec<OsString>)> = spec
        .variants
        .iter()
        .map(|&v| {
            let exe = dir.join(format!("{name}.{v}"));
            let mut args: Vec<OsString> = variant_flags(v).iter().map(OsString::from).collect();
            args.extend(["-o".into(), exe.clone().into_os_string(), source.as_os_str().to_owned()]);
            args.extend(spec.cflags.iter().map(OsString::from));
            (v, exe, args)
        })
        .collect();
    let results: Vec<Result<(), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs.iter().map(|(_, _, args)| s.spawn(move || run_compiler(compiler, args))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let errors: Vec<String> = jobs.iter().zip(&results).filter_map(|((v, _, _), r)| r.as_ref().err().map(|e| format!("[{v}] {e}"))).collect();
    if !errors.is_empty() {
        return Err(format!("cannot build guest program {name}:\n{}", errors.join("\n")));
    }
    Ok(GuestProgram { name: name.to_owned(), source: source.to_owned(), builds: jobs.into_iter().map(|(v, exe, _)| (v, exe)).collect(), spec })
}

fn parse_spec(text: &str, lang: Lang) -> Result<Spec, String> {
    let mut variants: Option<Vec<&'static str>> = None;
    let mut cflags = Vec::new();
    let mut args: Option<Vec<String>> = None;
    let mut stdin = None;
    let mut expect: Option<Expect> = None;
    for (lineno, line) in text.lines().take(20).enumerate() {
        let t = line.trim_start();
        let Some(body) = ["//", "#", "/*", "*"].iter().find_map(|p| t.strip_prefix(p)) else {
            continue;
        };
        let Some(directive) = body.trim_start().strip_prefix("rtgrind-test:") else {
            continue;
        };
        let directive = directive.trim().trim_end_matches("*/").trim_end();
        let at = format!("line {}", lineno + 1);
        let (key, value) = directive.split_once('=').ok_or_else(|| format!("{at}: directive must be KEY=VALUE: {directive:?}"))?;
        let (key, value) = (key.trim(), value.trim());
        match key {
            "variants" => {
                if variants.is_some() {
                    return Err(format!("{at}: variants given twice"));
                }
                let mut vs = Vec::new();
                for v in value.split(',').map(str::trim).filter(|v| !v.is_empty()) {
                    let known = VARIANTS.iter().find(|k| **k == v).ok_or_else(|| format!("{at}: unknown variant {v:?} (known: {})", VARIANTS.join(", ")))?;
                    vs.push(*known);
                }
                if vs.is_empty() {
                    return Err(format!("{at}: empty variants list"));
                }
                variants = Some(vs);
            }
            "cflags" => cflags.extend(split_words(value).map_err(|e| format!("{at}: {e}"))?),
            "args" => {
                if args.is_some() {
                    return Err(format!("{at}: args given twice"));
                }
                args = Some(split_words(value).map_err(|e| format!("{at}: {e}"))?);
            }
            "stdin" => {
                if stdin.is_some() {
                    return Err(format!("{at}: stdin given twice"));
                }
                stdin = Some(unescape(value).map_err(|e| format!("{at}: {e}"))?);
            }
            "exit" | "signal" => {
                if expect.is_some() {
                    return Err(format!("{at}: give one of exit= or signal=, once"));
                }
                expect = Some(if key == "exit" {
                    Expect::Exit(value.parse().map_err(|_| format!("{at}: exit must be a number: {value:?}"))?)
                } else {
                    Expect::Signal(signal_number(value).ok_or_else(|| format!("{at}: unknown signal {value:?}"))?)
                });
            }
            _ => return Err(format!("{at}: unknown directive key {key:?} (known: variants, cflags, args, stdin, exit, signal)")),
        }
    }
    let variants = variants.unwrap_or_else(|| match lang {
        Lang::C => vec!["pie", "nopie", "static", "static-pie"],
        Lang::Cxx => vec!["pie", "static"],
        Lang::Asm => vec!["nostdlib"],
    });
    Ok(Spec { variants, cflags, args: args.unwrap_or_default(), stdin, expect: expect.unwrap_or(Expect::Exit(0)) })
}

/// Splits on whitespace; double quotes group words (`a "b c"` is two words).
fn split_words(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quoted = false;
    for c in s.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quoted {
        return Err(format!("unbalanced quote in {s:?}"));
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// `\n \t \r \0 \\ \xHH` escapes.
fn unescape(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            let mut buf = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        match it.next() {
            Some('n') => out.push(b'\n'),
            Some('t') => out.push(b'\t'),
            Some('r') => out.push(b'\r'),
            Some('0') => out.push(0),
            Some('\\') => out.push(b'\\'),
            Some('x') => {
                let hex: String = it.by_ref().take(2).collect();
                out.push(u8::from_str_radix(&hex, 16).map_err(|_| format!("bad \\x escape in {s:?}"))?);
            }
            other => return Err(format!("unknown escape \\{} in {s:?}", other.map(String::from).unwrap_or_default())),
        }
    }
    Ok(out)
}

/// Deterministic pseudo-random bytes (xorshift), for generated inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    /// Lines of lowercase pseudo-words, `n` lines, up to 8 words each.
    pub fn text(&mut self, n: usize) -> Vec<u8> {
        const WORDS: &[&str] = &[
            "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa",
            "quebec", "romeo", "sierra", "tango",
        ];
        let mut out = Vec::new();
        for _ in 0..n {
            let words = 1 + self.next() % 8;
            for w in 0..words {
                if w > 0 {
                    out.push(b' ');
                }
                let r = self.next();
                out.extend_from_slice(WORDS[(r % WORDS.len() as u64) as usize].as_bytes());
                if r.is_multiple_of(5) {
                    out.extend_from_slice((r >> 40).to_string().as_bytes());
                }
            }
            out.push(b'\n');
        }
        out
    }
}

#[test]
fn spec_parsing() {
    let s = parse_spec(
        "// rtgrind-test: variants=pie, static\n// rtgrind-test: cflags=-lm\n// rtgrind-test: cflags=-mavx2\n\
         // rtgrind-test: args=a \"b c\"\n// rtgrind-test: stdin=x\\ny\\x41\n/* rtgrind-test: signal=SEGV */\nint main;",
        Lang::C,
    )
    .unwrap();
    assert_eq!(s.variants, ["pie", "static"]);
    assert_eq!(s.cflags, ["-lm", "-mavx2"]);
    assert_eq!(s.args, ["a", "b c"]);
    assert_eq!(s.stdin.as_deref(), Some(&b"x\nyA"[..]));
    assert_eq!(s.expect, Expect::Signal(libc::SIGSEGV));
    let a = parse_spec("# rtgrind-test: exit=7\n", Lang::Asm).unwrap();
    assert_eq!((a.variants, a.expect), (vec!["nostdlib"], Expect::Exit(7)));
    assert!(parse_spec("// rtgrind-test: variant=pie\n", Lang::C).is_err());
    assert!(parse_spec("// rtgrind-test: variants=arm\n", Lang::C).is_err());
    assert!(parse_spec("// rtgrind-test: exit=1\n// rtgrind-test: signal=SIGABRT\n", Lang::C).is_err());
    assert_eq!(parse_spec("int x;\n", Lang::Cxx).unwrap().variants, ["pie", "static"]);
}

#[test]
fn diff_is_readable() {
    let d = diff(b"a\nb\nc\nd\n", b"a\nb\nX\nd\ne");
    assert!(d.contains("    -c\n    +X\n     d\n    +e\\ (no newline at end)\n"), "{d}");
    assert!(d.contains("     a\n     b\n"), "{d}");
}

#[test]
fn report_lines_are_recognized() {
    let (r, rest) = split_report_lines(b"guest\n==123== Process terminating with SIGSEGV at 0x401000\n==x== no\n");
    assert_eq!(r, ["==123== Process terminating with SIGSEGV at 0x401000"]);
    assert_eq!(rest, b"guest\n==x== no\n");
}

/// Asserts `document` is valid SARIF 2.1.0: the OASIS schema in the shared `schemas` directory
/// beside the project (`../shared/schemas/`, which CI has too; read there, never copied in).
pub fn assert_valid_sarif(document: &str) {
    let path = repo_root().join("../shared/schemas/sarif-schema-2.1.0.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("the SARIF schema {}: {e}", path.display()));
    let schema: serde_json::Value = serde_json::from_str(&text).expect("the schema is JSON");
    let validator = jsonschema::draft4::new(&schema).expect("the schema compiles");
    let value: serde_json::Value = serde_json::from_str(document).unwrap_or_else(|e| panic!("{e}: {document}"));
    let errors: Vec<String> = validator.iter_errors(&value).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "not valid SARIF 2.1.0:\n{}\n{document}", errors.join("\n"));
}
