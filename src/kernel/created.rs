//! The names a run creates (`--created-out=FILE`, a search's runs): each file, directory, node
//! or link the program's calls bring into existence, one absolute path a line. A search moves
//! away what its runs leave in the working directory so that the next run finds it as the
//! first did (`tools::child::Leftovers`); with this log it moves only what a run made, never a
//! file the user (an editor's swap file, a build) created there meanwhile.

use super::guest_mem;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A call that may create a name: the directory descriptor and the guest address of the path
/// it creates, if `nr` with arguments `a` is one.
pub fn target(nr: u64, a: &[u64; 6]) -> Option<(i32, u64)> {
    use libc as l;
    let cwd = l::AT_FDCWD;
    let creates = |flags: u64| flags & l::O_CREAT as u64 != 0;
    Some(match nr as i64 {
        l::SYS_open if creates(a[1]) => (cwd, a[0]),
        l::SYS_openat if creates(a[2]) => (a[0] as i32, a[1]),
        l::SYS_creat | l::SYS_mkdir | l::SYS_mknod => (cwd, a[0]),
        l::SYS_mkdirat | l::SYS_mknodat => (a[0] as i32, a[1]),
        l::SYS_symlink | l::SYS_link | l::SYS_rename => (cwd, a[1]),
        l::SYS_symlinkat => (a[1] as i32, a[2]),
        l::SYS_linkat | l::SYS_renameat | l::SYS_renameat2 => (a[2] as i32, a[3]),
        _ => return None,
    })
}

/// Whether `path` (relative to `dir`) names something now.
pub fn exists(dir: i32, path: u64) -> bool {
    let Some(p) = guest_mem::read_cstr(path, 4096).and_then(|p| std::ffi::CString::new(p).ok()) else { return false };
    // SAFETY: fstatat of a NUL-terminated path into a local buffer; it changes nothing.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstatat(dir, p.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) == 0
    }
}

/// The absolute path of what `path` (relative to `dir`) names: its directory resolved, its
/// last component as written (a symbolic link is the link), or resolved too with `follow`.
pub(super) fn absolute(dir: i32, path: u64, follow: bool) -> Option<PathBuf> {
    let raw = guest_mem::read_cstr(path, 4096)?;
    let p = Path::new(std::ffi::OsStr::from_bytes(&raw));
    let base = if p.is_absolute() {
        PathBuf::from("/")
    } else if dir == libc::AT_FDCWD {
        std::env::current_dir().ok()?
    } else {
        std::fs::read_link(format!("/proc/self/fd/{dir}")).ok()?
    };
    let full = base.join(p);
    if follow {
        return full.canonicalize().ok();
    }
    let parent = full.parent()?.canonicalize().ok()?;
    Some(parent.join(full.file_name()?))
}

/// A run's log of the names it creates, and those names (a file the run made is not one to
/// put back: `kernel::originals`).
pub struct CreatedLog {
    file: std::fs::File,
    made: std::collections::HashSet<PathBuf>,
    originals: PathBuf,
}

impl CreatedLog {
    /// The log at `path`, opened for appending (the lines of the run's processes do not mix).
    pub fn open(path: &Path) -> Option<CreatedLog> {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path).ok()?;
        Some(CreatedLog { file: super::fds::own(file), made: Default::default(), originals: super::originals::dir_beside(path) })
    }

    /// Where the run keeps the existing files it changes (`kernel::originals`).
    pub fn originals(&self) -> &Path {
        &self.originals
    }

    /// Appends what the call made to the log.
    pub fn record(&mut self, dir: i32, path: u64) {
        if let Some(p) = absolute(dir, path, false) {
            let mut line = p.as_os_str().as_bytes().to_vec();
            line.push(b'\n');
            let _ = self.file.write_all(&line);
            self.made.insert(p);
        }
    }

    /// Whether this process of the run made `path`.
    pub fn made(&self, path: &Path) -> bool {
        self.made.contains(path)
    }
}

/// The paths a log holds.
pub fn read(log: &Path) -> std::collections::HashSet<PathBuf> {
    let text = std::fs::read(log).unwrap_or_default();
    text.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| PathBuf::from(std::ffi::OsStr::from_bytes(l))).collect()
}
