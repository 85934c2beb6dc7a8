//! Runs of the program under a child rtgrind, for the searches (suppress, switch): output to
//! files, a wall-time limit, and the run's standard input from a file captured once.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// Captures rtgrind's own standard input into `dir/stdin` (nothing from a terminal), so every
/// run reads the same bytes.
/// The file standard input reads, when it is a regular file opened by name (`< FILE`).
pub fn stdin_source() -> Option<PathBuf> {
    let path = std::fs::read_link("/proc/self/fd/0").ok()?;
    let regular = std::fs::metadata("/proc/self/fd/0").is_ok_and(|m| m.is_file());
    (regular && path.is_absolute() && !path.to_string_lossy().ends_with(" (deleted)")).then_some(path)
}

/// Words joined for a POSIX shell: each quoted unless made only of characters the shell
/// takes literally.
pub fn shell_words(words: &[std::ffi::OsString]) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:+,@%".contains(c);
    words
        .iter()
        .map(|w| {
            let w = w.to_string_lossy();
            if !w.is_empty() && w.chars().all(plain) {
                w.into_owned()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn capture_stdin(dir: &Path) -> std::io::Result<PathBuf> {
    let path = dir.join("stdin");
    let mut data = Vec::new();
    // SAFETY: isatty on a descriptor number.
    if unsafe { libc::isatty(0) } == 0 {
        let _ = std::io::stdin().read_to_end(&mut data);
    }
    std::fs::write(&path, data)?;
    Ok(path)
}

/// The process groups of the runs under way (0: a free slot), for `stop_runs`; a batch of a
/// search runs several at once.
static RUNNING: [AtomicI32; 64] = [const { AtomicI32::new(0) }; 64];

/// On SIGINT, SIGTERM or SIGHUP to the search: each run under way is in a process group of its
/// own (so a terminal's Ctrl-C does not reach it), so it is killed here, then the search dies
/// of the signal as it would have.
extern "C" fn stop_runs(sig: libc::c_int) {
    // SAFETY: kill, signal and raise are async-signal-safe; they act on our own processes.
    unsafe {
        for slot in &RUNNING {
            let group = slot.load(Ordering::SeqCst);
            if group > 0 {
                libc::kill(-group, libc::SIGKILL);
            }
        }
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// Copies a run's standard output (the file `path`) to rtgrind's: what the program printed, as
/// it would natively.
pub fn show_output(path: &Path) {
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = std::io::copy(&mut f, &mut std::io::stdout().lock());
    }
}

/// Copies a run's standard error (the file `path`; rtgrind's own messages went to its log) to
/// rtgrind's.
pub fn show_error_output(path: &Path) {
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = std::io::copy(&mut f, &mut std::io::stderr().lock());
    }
}

/// Runs `exe ARGS` (rtgrind itself) with stdout and stderr to the given files; None if it ran longer than
/// `limit` (it is killed), else its status and wall time. It runs in `cwd` if given.
pub fn run(
    exe: &Path,
    args: &[std::ffi::OsString],
    stdout: &Path,
    stderr: &Path,
    limit: Option<Duration>,
    cwd: Option<&Path>,
) -> std::io::Result<Option<(ExitStatus, Duration)>> {
    use std::os::unix::process::CommandExt;
    static HANDLERS: std::sync::Once = std::sync::Once::new();
    HANDLERS.call_once(|| {
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: installs a handler that only calls async-signal-safe functions.
            unsafe { libc::signal(sig, stop_runs as extern "C" fn(libc::c_int) as libc::sighandler_t) };
        }
    });
    let start = Instant::now();
    // A process group of its own: a run killed for its time limit takes every process it made
    // with it (a repeatable run is three: rtgrind, the pid namespace's reaper, the program).
    let mut command = Command::new(exe);
    if let Some(d) = cwd {
        command.current_dir(d);
    }
    if args.iter().any(|a| a == "--repeatable=yes") {
        // SAFETY: personality(2) only, between fork and exec: async-signal-safe. A repeatable
        // run started without randomization does not execute itself again to turn it off.
        unsafe {
            command.pre_exec(|| {
                crate::kernel::repeat::no_aslr_at_exec();
                Ok(())
            })
        };
    }
    let mut child = command
        .args(args)
        .env(crate::cli::CHILD_RUN, "1")
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(stdout)?)
        .stderr(std::fs::File::create(stderr)?)
        .spawn()?;
    // (With every slot taken, which a batch of more than 64 runs at once would need, a run
    // is not killed by a signal to the search; its time limit still ends it.)
    let id = child.id() as i32;
    let slot = RUNNING.iter().find(|s| s.compare_exchange(0, id, Ordering::SeqCst, Ordering::SeqCst).is_ok());
    let ended_at = EndedAt::open(id);
    let ended = loop {
        if let Some(s) = child.try_wait()? {
            break Some((s, start.elapsed()));
        }
        if limit.is_some_and(|l| start.elapsed() > l) {
            // SAFETY: kill(2) of the child's process group.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            break None;
        }
        ended_at.wait(limit.map(|l| l.saturating_sub(start.elapsed())));
    };
    if let Some(s) = slot {
        s.store(0, Ordering::SeqCst);
    }
    Ok(ended)
}

/// Waits for a child's end without polling: its pidfd becomes readable when it ends (a search
/// makes hundreds of short runs; a 2 ms sleep between checks added a millisecond to each).
/// Without pidfds (Linux before 5.3), a 2 ms sleep.
struct EndedAt(Option<std::os::fd::OwnedFd>);

impl EndedAt {
    fn open(pid: i32) -> EndedAt {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open(2) of our own child; the descriptor is owned from here on.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        // SAFETY: a descriptor pidfd_open just returned, owned by nobody else.
        EndedAt((fd >= 0).then(|| unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) }))
    }

    /// Until the child ended or `at_most` passed (or a signal came).
    fn wait(&self, at_most: Option<Duration>) {
        use std::os::fd::AsRawFd;
        let Some(fd) = &self.0 else {
            return std::thread::sleep(Duration::from_millis(2));
        };
        let mut p = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let ms = at_most.map_or(-1, |d| d.as_millis().min(i32::MAX as u128) as i32 + 1);
        // SAFETY: poll(2) of one pollfd on the stack.
        unsafe { libc::poll(&mut p, 1, ms) };
    }
}

/// What a search's runs leave in the directory the program runs in. A run that creates a file
/// there (a crash leaving a lock or a partial output behind) changes what the next run finds
/// (a directory listed at start: more entries, more blocks, other instances), so after each
/// run its new entries are moved into the search's directory; the first run's are put back
/// when the search ends (as a native run would have left them), the others' are discarded with
/// the search's directory. Only entries a run made are moved: the runs log every name their
/// calls create (`--created-out`, `kernel::created`), and anything else new in the directory
/// is somebody else's (an editor's swap file, a build's output written meanwhile) and stays.
/// Entries that cannot be moved (another file system: a directory, or a file that cannot be
/// copied) stay too.
///
/// The files a run changes are put back the same way: each run keeps a copy of an existing
/// file before it first changes it (`kernel::originals`), and after every run the copies go
/// back, so each run starts from the files the first one did; at the end the files are left as
/// the first run left them.
pub struct Leftovers {
    cwd: PathBuf,
    before: std::collections::HashSet<std::ffi::OsString>,
    stash: PathBuf,
    first: Vec<std::ffi::OsString>,
    /// The files the first run changed, and a copy of each as it left it (none: it removed it).
    first_changed: Vec<(PathBuf, Option<PathBuf>)>,
}

fn entries(dir: &Path) -> std::collections::HashSet<std::ffi::OsString> {
    std::fs::read_dir(dir).map(|d| d.filter_map(|e| Some(e.ok()?.file_name())).collect()).unwrap_or_default()
}

impl Leftovers {
    pub fn new(stash: PathBuf) -> Option<Leftovers> {
        let cwd = std::env::current_dir().ok()?;
        let before = entries(&cwd);
        Some(Leftovers { cwd, before, stash, first: Vec::new(), first_changed: Vec::new() })
    }

    /// The log the runs write the names they create to.
    pub fn log(&self) -> PathBuf {
        self.stash.join("created")
    }

    /// After run `n` (from 1): moves what it created away and puts back what it changed.
    pub fn clear(&mut self, n: u32) {
        self.put_back_changed(n);
        let made = crate::kernel::created::read(&self.log());
        let new: Vec<std::ffi::OsString> = entries(&self.cwd).into_iter().filter(|e| !self.before.contains(e) && made.contains(&self.cwd.join(e))).collect();
        if new.is_empty() {
            return;
        }
        let to = self.stash.join(format!("left-by-run-{n}"));
        if std::fs::create_dir_all(&to).is_err() {
            return;
        }
        for name in new {
            let (from, dest) = (self.cwd.join(&name), to.join(&name));
            let moved = std::fs::rename(&from, &dest).is_ok() || (from.is_file() && std::fs::copy(&from, &dest).is_ok() && std::fs::remove_file(&from).is_ok());
            if moved && n == 1 {
                self.first.push(name);
            }
        }
    }

    /// Puts back every file a run changed as it was before the first run (the first run's
    /// versions are kept for the end).
    fn put_back_changed(&mut self, n: u32) {
        use crate::kernel::originals;
        let left_by_first = self.stash.join("changed-by-run-1");
        for (path, copy) in originals::kept(&originals::dir_beside(&self.log())) {
            if n == 1 {
                let as_left = left_by_first.join(copy.file_name().unwrap_or_default());
                let kept = path.is_file() && std::fs::create_dir_all(&left_by_first).is_ok() && originals::copy_with_time(&path, &as_left);
                self.first_changed.push((path.clone(), kept.then_some(as_left)));
            }
            originals::put_back(&copy, &path);
        }
    }
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        for (path, as_left) in &self.first_changed {
            match as_left {
                Some(copy) => crate::kernel::originals::put_back(copy, path),
                None => {
                    let _ = std::fs::remove_file(path);
                }
            }
        }
        let from = self.stash.join("left-by-run-1");
        for name in &self.first {
            let dest = self.cwd.join(name);
            if !dest.exists() && std::fs::rename(from.join(name), &dest).is_err() {
                let _ = std::fs::copy(from.join(name), &dest);
            }
        }
    }
}

/// A temporary directory for one search, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tool: &str) -> std::io::Result<TempDir> {
        let d = std::env::temp_dir().join(format!("rtgrind-{tool}-{}", std::process::id()));
        // A directory of this name was left by a dead process that had our pid (a killed search,
        // or one kept by RTGRIND_KEEP_RUNS): its runs' files must not be read as ours.
        if d.exists() {
            std::fs::remove_dir_all(&d)?;
        }
        std::fs::create_dir(&d)?;
        Ok(TempDir(d))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // RTGRIND_KEEP_RUNS=1 keeps the runs' plans, outcomes and output (for debugging).
        if std::env::var_os("RTGRIND_KEEP_RUNS").is_some() {
            eprintln!("rtgrind: the runs' files are kept in {}", self.0.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::TempDir;

    /// A dead process with our pid left its search directory: a new search starts empty (a stale
    /// trace there was once read as the new search's).
    #[test]
    fn a_search_directory_left_by_an_earlier_process_is_not_reused() {
        let stale = std::env::temp_dir().join(format!("rtgrind-unit-{}", std::process::id()));
        std::fs::create_dir_all(stale.join("run-1")).unwrap();
        std::fs::write(stale.join("run-1/outcome.json"), "{}").unwrap();
        let dir = TempDir::new("unit").unwrap();
        assert_eq!(dir.0, stale);
        assert_eq!(std::fs::read_dir(&dir.0).unwrap().count(), 0, "the earlier process's files are still there");
    }
}
