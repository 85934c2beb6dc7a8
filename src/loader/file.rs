//! Files read by mapping them rather than copying them: the loader and the symbol, DWARF and
//! layout readers look at a few pages of ELF files of megabytes (python3 is 6.8 MB), and
//! reading one whole cost a zeroed page and a copy for every page of it, in every run.

use std::path::Path;

/// A file's bytes: mapped private and read-only, or read (an empty file, or `mmap` denied: a
/// guest's seccomp filter applies to rtgrind's own calls too).
pub enum FileBytes {
    Mapped { at: *const u8, len: usize },
    Read(Vec<u8>),
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            // SAFETY: `len` bytes mapped readable at `at` until drop; a private read-only
            // mapping, read as plain bytes (any value is valid). The files are the programs
            // and libraries being run, which nothing writes while they run; a file truncated
            // under us would fault on a page past its new end, as the program would natively.
            FileBytes::Mapped { at, len } => unsafe { std::slice::from_raw_parts(*at, *len) },
            FileBytes::Read(v) => v,
        }
    }
}

impl Drop for FileBytes {
    fn drop(&mut self) {
        if let FileBytes::Mapped { at, len } = *self {
            // SAFETY: the mapping was made by `map` and nothing borrows it past this drop.
            unsafe { libc::munmap(at as *mut libc::c_void, len) };
        }
    }
}

/// The bytes of the file at `path`.
pub fn map(path: impl AsRef<Path>) -> std::io::Result<FileBytes> {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len() as usize;
    if len > 0 {
        if let Ok(at) = crate::kernel::memory::raw_mmap(0, len as u64, libc::PROT_READ, libc::MAP_PRIVATE, file.as_raw_fd(), 0) {
            return Ok(FileBytes::Mapped { at: at as *const u8, len });
        }
    }
    let mut bytes = Vec::with_capacity(len);
    std::io::Read::read_to_end(&mut &file, &mut bytes)?;
    Ok(FileBytes::Read(bytes))
}
