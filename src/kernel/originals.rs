//! The contents of existing files a search's runs change. A program that rewrites its input in
//! place (mp3gain writing a tag into the file it was given, a database updating its file, a
//! crash halfway through either) hands the next run another input: its failure then does not
//! repeat, or the search follows another execution. A run keeps a copy of each existing
//! regular file before its first call that may change or remove it (an open for writing or
//! with `O_TRUNC`, `truncate`, `unlink`, `rename` of or over it), in the search's directory,
//! once per search: the first copy is the file as it was before the first run. After each run
//! the search puts every kept file back (`tools::child::Leftovers`), so each run starts from
//! the files the first one started from; at the end it leaves them as the first run left them,
//! as a native run would have.
//!
//! Not kept: files over `MAX_BYTES`, what is not a regular file, `/proc`, `/sys` and `/dev`.

use sha2::{Digest, Sha256};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Files larger than this are changed for good (a log of gigabytes is not copied per search).
const MAX_BYTES: u64 = 256 << 20;

/// A path a call may change, relative to a directory descriptor, and whether the call follows
/// a symbolic link in its last component (an open does; an unlink removes the link).
pub struct Changed {
    pub dir: i32,
    pub path: u64,
    pub follow: bool,
}

/// The existing files call `nr` with arguments `a` may change or remove.
pub fn changed_by(nr: u64, a: &[u64; 6]) -> Vec<Changed> {
    use libc as l;
    let cwd = l::AT_FDCWD;
    let writes = |flags: u64| flags & (l::O_WRONLY | l::O_RDWR | l::O_TRUNC) as u64 != 0;
    let at = |dir: u64, path: u64, follow: bool| Changed { dir: dir as i32, path, follow };
    let here = |path: u64, follow: bool| Changed { dir: cwd, path, follow };
    match nr as i64 {
        l::SYS_open if writes(a[1]) => vec![here(a[0], true)],
        l::SYS_openat if writes(a[2]) => vec![at(a[0], a[1], true)],
        l::SYS_creat | l::SYS_truncate => vec![here(a[0], true)],
        l::SYS_unlink => vec![here(a[0], false)],
        l::SYS_unlinkat if a[2] & l::AT_REMOVEDIR as u64 == 0 => vec![at(a[0], a[1], false)],
        l::SYS_rename => vec![here(a[0], false), here(a[1], false)],
        l::SYS_renameat | l::SYS_renameat2 => vec![at(a[0], a[1], false), at(a[2], a[3], false)],
        _ => Vec::new(),
    }
}

/// Where a run keeps the files it changes: beside the search's log of created names (the
/// run is told that log's path, `--created-out`).
pub fn dir_beside(log: &Path) -> PathBuf {
    log.with_file_name("originals")
}

/// Copies `from` to `to` with `from`'s modification time (a put-back file keeps it); whether
/// it was copied (a time that cannot be set only makes `put_back` copy it again).
pub fn copy_with_time(from: &Path, to: &Path) -> bool {
    let time = std::fs::metadata(from).and_then(|m| m.modified());
    if std::fs::copy(from, to).is_err() {
        return false;
    }
    if let Ok(t) = time {
        let _ = std::fs::File::open(to).and_then(|f| f.set_modified(t));
    }
    true
}

/// Where the copy of `path` is kept in `dir`: a name of its own for each path.
fn copy_of(dir: &Path, path: &Path) -> PathBuf {
    let h: String = Sha256::digest(path.as_os_str().as_bytes()).iter().take(12).map(|b| format!("{b:02x}")).collect();
    dir.join(h)
}

/// Before the call: keeps a copy of the file `c` names, unless the search has one or the run
/// made the file (a temporary file renamed over the real one is not put back).
pub fn keep(c: &Changed, created: &super::created::CreatedLog) {
    let dir = created.originals();
    let Some(path) = super::created::absolute(c.dir, c.path, c.follow) else { return };
    if created.made(&path) || ["/proc/", "/sys/", "/dev/"].iter().any(|p| path.starts_with(p)) {
        return;
    }
    let Ok(meta) = std::fs::symlink_metadata(&path) else { return };
    if !meta.is_file() || meta.len() > MAX_BYTES {
        return;
    }
    let copy = copy_of(dir, &path);
    if copy.exists() || std::fs::create_dir_all(dir).is_err() {
        return;
    }
    // Made beside it and renamed into place (runs of a batch run at once), its path written
    // first.
    let partial = copy.with_extension(format!("{}.partial", std::process::id()));
    let made = std::fs::write(copy.with_extension("path"), path.as_os_str().as_bytes()).is_ok() && copy_with_time(&path, &partial);
    if !made || std::fs::rename(&partial, &copy).is_err() {
        let _ = std::fs::remove_file(&partial);
    }
}

/// The files kept in `dir`: (the file's path, its copy).
pub fn kept(dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut kept: Vec<(PathBuf, PathBuf)> = entries
        .filter_map(|e| {
            let copy = e.ok()?.path();
            if copy.extension().is_some() {
                return None;
            }
            let path = std::fs::read(copy.with_extension("path")).ok()?;
            Some((PathBuf::from(std::ffi::OsStr::from_bytes(&path)), copy))
        })
        .collect();
    kept.sort();
    kept
}

/// Makes `path` hold what `copy` holds, with its modification time, unless it does already
/// (the same length and time: the run did not change it).
pub fn put_back(copy: &Path, path: &Path) {
    let Ok(want) = std::fs::metadata(copy) else { return };
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() && m.len() == want.len() && m.modified().ok() == want.modified().ok() => return,
        // (A symbolic link the run left there: the file goes back in its place.)
        Ok(m) if !m.is_file() => {
            let _ = std::fs::remove_file(path);
        }
        _ => {}
    }
    copy_with_time(copy, path);
}
