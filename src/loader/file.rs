//! Files read by mapping them rather than copying them: the loader and the symbol, DWARF and
//! layout readers look at a few pages of ELF files of megabytes (python3 is 6.8 MB), and
//! reading one whole cost a zeroed page and a copy for every page of it, in every run.

use std::path::Path;

/// The bytes of the file at `path`, mapped private and read-only.
pub fn map(path: impl AsRef<Path>) -> std::io::Result<memmap2::Mmap> {
    let file = std::fs::File::open(path)?;
    // SAFETY: a private read-only mapping, read as plain bytes (any value is valid). The
    // files are the programs and libraries being run, which nothing writes while they run;
    // a file truncated under us would fault on a page past its new end, as the program
    // using it natively would.
    unsafe { memmap2::Mmap::map(&file) }
}
