//! The guest's own `/proc` files: what the kernel would show of the program, not of rtgrind.
//!
//! rtgrind is the process the kernel knows: its `/proc/PID` directory shows rtgrind's command
//! line, auxiliary vector and environment, its mappings (heap, stacks, code cache, shadow
//! memory) and its descriptors. Valgrind answers these for its guest, and so does rtgrind:
//! opening one of the files below in the process's own directory (`/proc/self`,
//! `/proc/thread-self`, `/proc/PID`, or a thread's `task/TID` in any of them) gets a file of
//! what the guest's would hold, made when it is opened (a memfd). `fd` and `fdinfo` lists
//! leave rtgrind's descriptors out (`kernel::fds`), and a name there of one of them is not
//! found. The thread names (`comm`, `stat`, `status`, `PR_GET_NAME`) are the kernel's own:
//! rtgrind names its main thread as the kernel names a program it starts (`name_the_process`).

use super::guest_mem;
use crate::run::Runtime;

/// A file of the process's own `/proc` directory that rtgrind answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnFile {
    Maps,
    Smaps,
    SmapsRollup,
    Cmdline,
    Environ,
    Auxv,
    Exe,
    /// `fd/N` or `fdinfo/N` of one of rtgrind's own descriptors.
    RtgrindFd,
}

/// What the guest's initial stack holds that its `/proc` files show (see `loader::stack`).
#[derive(Default)]
pub struct Own {
    /// Where argv's strings lie in guest memory (`cmdline` reads them there, as the kernel
    /// does: a program that rewrites them sees its new command line).
    pub args: (u64, u64),
    /// Where envp's strings lie (`environ`).
    pub env: (u64, u64),
    /// The auxiliary vector given to the program, AT_NULL included.
    pub auxv: Vec<(u64, u64)>,
}

fn number(s: &[u8]) -> Option<u32> {
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// Whether `/proc/N` is this process or one of its threads.
fn is_own(n: u32) -> bool {
    n == std::process::id() || std::path::Path::new(&format!("/proc/self/task/{n}")).exists()
}

/// What an absolute `path` names in this process's own `/proc` directory, if rtgrind answers it.
pub fn own_file(path: &[u8]) -> Option<OwnFile> {
    let rest = path.strip_prefix(b"/proc/")?;
    let mut parts = rest.split(|&c| c == b'/').filter(|p| !p.is_empty() && *p != b".");
    let who = parts.next()?;
    if who != b"self" && who != b"thread-self" && !number(who).is_some_and(is_own) {
        return None;
    }
    let mut file = parts.next()?;
    if file == b"task" {
        if !number(parts.next()?).is_some_and(is_own) {
            return None;
        }
        file = parts.next()?;
    }
    let (sub, more) = (parts.next(), parts.next());
    if more.is_some() {
        return None;
    }
    Some(match (file, sub) {
        (b"maps", None) => OwnFile::Maps,
        (b"smaps", None) => OwnFile::Smaps,
        (b"smaps_rollup", None) => OwnFile::SmapsRollup,
        (b"cmdline", None) => OwnFile::Cmdline,
        (b"environ", None) => OwnFile::Environ,
        (b"auxv", None) => OwnFile::Auxv,
        (b"exe", None) => OwnFile::Exe,
        (b"fd" | b"fdinfo", Some(n)) if number(n).is_some_and(|n| super::fds::is_reserved(n as u64)) => OwnFile::RtgrindFd,
        _ => return None,
    })
}

/// The absolute path a guest path at `path` names relative to `dirfd` (`AT_FDCWD`: the working
/// directory; another descriptor: the directory it is open on), when it may name one of the
/// files `own_file` answers: an absolute path as it is; a relative one only when its last
/// name is one of those files (or it is `fd/N`, `fdinfo/N`), so that other relative opens
/// cost no extra call. None for a relative path from one of rtgrind's descriptors (EBADF
/// follows from the kernel's call).
pub fn proc_path(dirfd: u64, path: u64) -> Option<Vec<u8>> {
    let path = guest_mem::read_cstr(path, 4096)?;
    if path.starts_with(b"/") {
        return normalise(b"", &path).filter(|p| p.starts_with(b"/proc/"));
    }
    let names: Vec<&[u8]> = path.split(|&c| c == b'/').filter(|p| !p.is_empty() && *p != b".").collect();
    let own_name = match names.as_slice() {
        [.., dir, n] if (*dir == b"fd" || *dir == b"fdinfo") && number(n).is_some() => true,
        // (A number alone: `N` from a descriptor of an `fd` directory.)
        [.., last] => number(last).is_some() || matches!(*last, b"maps" | b"smaps" | b"smaps_rollup" | b"cmdline" | b"environ" | b"auxv" | b"exe"),
        [] => false,
    };
    if !own_name {
        return None;
    }
    let base = if dirfd as i32 == libc::AT_FDCWD {
        std::env::current_dir().ok()?
    } else if super::fds::is_reserved(dirfd) {
        return None;
    } else {
        std::fs::read_link(format!("/proc/self/fd/{}", dirfd as i32)).ok()?
    };
    normalise(base.as_os_str().as_encoded_bytes(), &path).filter(|p| p.starts_with(b"/proc/"))
}

/// `path` (absolute, or relative to the canonical directory `base`) without `.` and `..`, as
/// the kernel resolves it, when that can be told from the names alone: a `..` after a name of
/// `base` (a directory, no link) or after one of `/proc`'s own directories below (`/proc`,
/// `PID` or `self`, `task`, `TID`, `fd`, `fdinfo`; `thread-self` is `self/task/TID`) goes up
/// one; after any other name (a link such as `exe`, `cwd` or `fd/N`, a file, a name that may
/// not exist) None: the path is not taken for one of the files rtgrind answers.
fn normalise(base: &[u8], path: &[u8]) -> Option<Vec<u8>> {
    let names = |p: &[u8]| p.split(|&c| c == b'/').filter(|n| !n.is_empty() && *n != b".").map(<[u8]>::to_vec).collect::<Vec<_>>();
    let mut stack = if path.starts_with(b"/") { Vec::new() } else { names(base) };
    // How many names of `stack` are `base`'s (real directories).
    let mut trusted = stack.len();
    for name in names(path) {
        if name != b".." {
            stack.push(name);
            continue;
        }
        let Some(top) = stack.last() else { continue };
        let depth = stack.len() - 1;
        let task_below = depth >= 3 && stack[2] == b"task";
        let dir = stack.len() <= trusted
            || (stack[0] == b"proc"
                && match depth {
                    0 => true,
                    1 => top == b"self" || number(top).is_some_and(|n| std::path::Path::new(&format!("/proc/{n}")).exists()),
                    2 => matches!(top.as_slice(), b"task" | b"fd" | b"fdinfo"),
                    3 => task_below && number(top).is_some_and(|n| std::path::Path::new(&format!("/proc/self/task/{n}")).exists()),
                    4 => task_below && matches!(top.as_slice(), b"fd" | b"fdinfo"),
                    _ => false,
                });
        if depth == 1 && stack[0] == b"proc" && top == b"thread-self" {
            // (`/proc/thread-self/..` is the process's `task` directory.)
            stack.pop();
            stack.extend([b"self".to_vec(), b"task".to_vec()]);
            continue;
        }
        if !dir {
            return None;
        }
        stack.pop();
        trusted = trusted.min(stack.len());
    }
    let mut out = Vec::new();
    for n in &stack {
        out.push(b'/');
        out.extend_from_slice(n);
    }
    Some(if out.is_empty() { b"/".to_vec() } else { out })
}

/// `lo-hi` of a maps or smaps header line.
fn range(line: &str) -> Option<(u64, u64)> {
    let (lo, hi) = line.split_once(' ')?.0.split_once('-')?;
    Some((u64::from_str_radix(lo, 16).ok()?, u64::from_str_radix(hi, 16).ok()?))
}

/// The guest's copy of `/proc/self/smaps_rollup`: the host's lines, each value the sum over
/// the guest's mappings (`entries`: smaps entries, header first); the Pss split by kind
/// (anonymous, file, shared memory) from each mapping's name.
fn rollup(entries: &[Vec<&str>]) -> String {
    let host = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    let lo = entries.first().and_then(|e| range(e[0])).map_or(0, |r| r.0);
    let hi = entries.last().and_then(|e| range(e[0])).map_or(0, |r| r.1);
    let value = |line: &str| -> Option<(String, u64)> {
        let (key, v) = line.split_once(':')?;
        Some((key.to_string(), v.trim().trim_end_matches(" kB").trim().parse().ok()?))
    };
    let kind = |header: &str| {
        let name = header.split_whitespace().nth(5).unwrap_or("");
        if name.starts_with("/dev/shm") || name.starts_with("/memfd:") || name.starts_with("/SYSV") {
            "Pss_Shmem"
        } else if name.starts_with('/') {
            "Pss_File"
        } else {
            "Pss_Anon"
        }
    };
    let mut sums = std::collections::HashMap::<String, u64>::new();
    for e in entries {
        for (k, v) in e[1..].iter().filter_map(|l| value(l)) {
            if k == "Pss" {
                *sums.entry(kind(e[0]).to_string()).or_default() += v;
            }
            *sums.entry(k).or_default() += v;
        }
    }
    let mut text = String::new();
    for line in host.lines() {
        match (range(line), value(line)) {
            (Some(_), _) => text += &format!("{lo:08x}-{hi:08x}{}", &line[line.find(' ').unwrap_or(line.len())..]),
            (None, Some((k, _))) => {
                let width = line.len().saturating_sub(k.len() + 1 + 3);
                text += &format!("{k}:{:>width$} kB", sums.get(&k).copied().unwrap_or(0));
            }
            _ => text += line,
        }
        text.push('\n');
    }
    text
}

impl Runtime {
    /// An open of a file of the process's own `/proc` directory that rtgrind answers: a new
    /// descriptor of the guest's version, an error, or None to let the kernel open it
    /// (another file, or opened for writing).
    pub fn proc_open(&mut self, dirfd: u64, path: u64, flags: u64) -> Option<i64> {
        let file = own_file(&proc_path(dirfd, path)?)?;
        if file == OwnFile::RtgrindFd {
            return Some(-(libc::ENOENT as i64));
        }
        if flags & libc::O_ACCMODE as u64 != libc::O_RDONLY as u64 {
            return None;
        }
        let text = match file {
            OwnFile::Exe | OwnFile::RtgrindFd => return None,
            OwnFile::Maps | OwnFile::Smaps | OwnFile::SmapsRollup => self.guest_maps(file).into_bytes(),
            OwnFile::Cmdline => self.guest_area(self.p().own.args),
            OwnFile::Environ => self.guest_area(self.p().own.env),
            OwnFile::Auxv => self.p().own.auxv.iter().flat_map(|&(k, v)| [k.to_le_bytes(), v.to_le_bytes()]).flatten().collect(),
        };
        if flags & libc::O_DIRECTORY as u64 != 0 {
            return Some(-(libc::ENOTDIR as i64));
        }
        let cloexec = if flags & libc::O_CLOEXEC as u64 != 0 { libc::MFD_CLOEXEC } else { 0 };
        // SAFETY: memfd_create with a static name; the descriptor is handed to the guest.
        let fd = unsafe { libc::memfd_create(c"proc".as_ptr(), cloexec) };
        if fd < 0 {
            return Some(-(libc::EMFILE as i64));
        }
        // SAFETY: writing our own buffer to our own memfd, then rewinding it.
        unsafe {
            libc::write(fd, text.as_ptr() as *const libc::c_void, text.len());
            libc::lseek(fd, 0, libc::SEEK_SET);
        }
        Some(fd as i64)
    }

    /// The bytes of guest memory `[lo, hi)` (what is readable of it).
    fn guest_area(&self, (lo, hi): (u64, u64)) -> Vec<u8> {
        let mut buf = vec![0u8; (hi - lo) as usize];
        if !guest_mem::read(lo, &mut buf) {
            buf.clear();
        }
        buf
    }

    /// The process's maps, smaps or smaps_rollup, of the guest's mappings only (rtgrind's own
    /// heap, stacks, code cache and shadow memory left out, the guest's stack and heap named
    /// as the kernel names a process's). Programs read maps to find their stack (glibc's
    /// pthread_getattr_np, gnulib's c-stack), some write to what they find there (a
    /// conservative collector scanning its roots); what they find must not depend on
    /// rtgrind, nor on which tool runs (a tool's shadow memory changed what grep parsed
    /// there, and so its branches).
    fn guest_maps(&mut self, file: OwnFile) -> String {
        let name = if file == OwnFile::Maps { "/proc/self/maps" } else { "/proc/self/smaps" };
        let host = std::fs::read_to_string(name).unwrap_or_default();
        let mem = &self.p().mem;
        // Entries: a header line, then (smaps) its "Key: value" lines.
        let mut entries: Vec<Vec<&str>> = Vec::new();
        let mut keep = false;
        for line in host.lines() {
            match range(line) {
                Some((lo, hi)) => {
                    keep = !mem.pieces(lo, hi).is_empty();
                    if keep {
                        entries.push(vec![line]);
                    }
                }
                None if keep => entries.last_mut().into_iter().for_each(|e| e.push(line)),
                None => {}
            }
        }
        if file == OwnFile::SmapsRollup {
            return rollup(&entries);
        }
        let mut text = String::new();
        for e in &entries {
            let header = e[0];
            text += header;
            // An anonymous mapping the guest knows as its stack or heap gets that name.
            let (lo, hi) = range(header).unwrap_or_default();
            let region = mem.pieces(lo, hi).into_iter().next().map(|(_, _, r)| r);
            let fields = header.split_whitespace().count();
            if let (5, Some(name)) = (fields, region.and_then(|r| r.name).filter(|n| n.starts_with('['))) {
                text += &format!("{:>width$}{name}", "", width = 73usize.saturating_sub(header.len()).max(1));
            }
            text.push('\n');
            for l in &e[1..] {
                text += l;
                text.push('\n');
            }
        }
        text
    }

    /// getdents64 of a directory listing descriptors (`/proc/.../fd`, `fdinfo`): rtgrind's own
    /// entries taken out of the `len` bytes just read into `buf`. Returns the guest's length.
    pub fn fd_dir_entries(&mut self, dirfd: u64, buf: u64, len: i64) -> i64 {
        if len <= 0 {
            return len;
        }
        let Ok(dir) = std::fs::read_link(format!("/proc/self/fd/{}", dirfd as u32)) else { return len };
        let dir = dir.as_os_str().as_encoded_bytes();
        let Some(of) = dir.strip_suffix(b"/fd").or_else(|| dir.strip_suffix(b"/fdinfo")) else { return len };
        if own_file(&[of, b"/maps"].concat()) != Some(OwnFile::Maps) {
            return len;
        }
        let mut raw = vec![0u8; len as usize];
        if !guest_mem::read(buf, &mut raw) {
            return len;
        }
        let mut kept = Vec::with_capacity(raw.len());
        let mut at = 0;
        while at + 19 <= raw.len() {
            let reclen = u16::from_le_bytes([raw[at + 16], raw[at + 17]]) as usize;
            if reclen == 0 || at + reclen > raw.len() {
                return len;
            }
            let name = &raw[at + 19..at + reclen];
            let name = &name[..name.iter().position(|&c| c == 0).unwrap_or(name.len())];
            if !number(name).is_some_and(|n| super::fds::is_reserved(n as u64)) {
                kept.extend_from_slice(&raw[at..at + reclen]);
            }
            at += reclen;
        }
        if kept.len() < raw.len() && guest_mem::write(buf, &kept) {
            kept.len() as i64
        } else {
            len
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{own_file, OwnFile};

    #[test]
    fn dot_dot_goes_up_only_from_a_directory() {
        let pid = std::process::id();
        for (path, want) in [
            ("/proc/self/../self/maps", Some("/proc/self/maps".to_string())),
            ("/proc/./self/fd/../maps", Some("/proc/self/maps".into())),
            (&format!("/proc/self/task/{pid}/../{pid}/maps"), Some(format!("/proc/self/task/{pid}/maps"))),
            ("/proc/thread-self/../x", Some("/proc/self/task/x".into())),
            ("/proc/../proc/self/auxv", Some("/proc/self/auxv".into())),
            ("/proc/self/exe/../maps", None),
            ("/proc/self/cwd/../maps", None),
            ("/proc/self/fd/3/../maps", None),
            ("/usr/../proc/self/maps", None),
            ("/proc/999999999/../self/maps", None),
        ] {
            assert_eq!(super::normalise(b"/home", path.as_bytes()), want.map(String::into_bytes), "{path}");
        }
        assert_eq!(super::normalise(b"/home/x", b"../../proc/self/maps"), Some(b"/proc/self/maps".to_vec()));
        assert_eq!(super::normalise(b"/proc/1", b"../self/fd/../cmdline"), Some(b"/proc/self/cmdline".to_vec()));
    }

    #[test]
    fn the_process_own_directory_is_named_every_way() {
        let pid = std::process::id();
        for dir in
            ["/proc/self".to_string(), "/proc/thread-self".into(), format!("/proc/{pid}"), format!("/proc/self/task/{pid}"), format!("/proc/{pid}/task/{pid}/")]
        {
            assert_eq!(own_file(format!("{dir}/maps").as_bytes()), Some(OwnFile::Maps), "{dir}");
            assert_eq!(own_file(format!("{dir}//smaps").as_bytes()), Some(OwnFile::Smaps), "{dir}");
            assert_eq!(own_file(format!("{dir}/cmdline").as_bytes()), Some(OwnFile::Cmdline), "{dir}");
            assert_eq!(own_file(format!("{dir}/status").as_bytes()), None, "{dir}");
            assert_eq!(own_file(format!("{dir}/fd/1").as_bytes()), None, "{dir}: not one of rtgrind's");
        }
        // Another process, a thread of another, a file deeper down, not /proc.
        for other in ["/proc/1/maps", "/proc/self/task/1/maps", "/proc/self/maps/x", "/tmp/proc/self/maps", "/proc/self"] {
            assert_eq!(own_file(other.as_bytes()), None, "{other}");
        }
    }
}
