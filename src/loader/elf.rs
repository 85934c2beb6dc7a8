//! Maps an ELF executable (and its `PT_INTERP`) into the guest address space, like the
//! kernel's `binfmt_elf`: static, static-pie, PIE and non-PIE programs.
//!
//! What the kernel refuses, rtgrind refuses, and nothing more: the ELF header and program
//! headers are read by hand with the kernel's checks (`load_elf_binary`, `load_elf_phdrs`),
//! so section headers, which the kernel never reads, cannot make a run fail. Past the
//! kernel's point of no return (the old program is gone, the new one is being mapped) a
//! failure kills the program with SIGSEGV instead of failing `execve`: `LoadError::Killed`.

use crate::kernel::memory::GuestMemory;
use goblin::elf::{header, program_header as ph};
use std::path::{Path, PathBuf};

/// Where the kernel (without ASLR) puts a PIE main program; rtgrind does the same.
const PIE_BASE: u64 = 0x5555_5555_4000;
/// The next base tried for a PIE when `PIE_BASE` is taken (1 TiB higher).
const PIE_BASE_STEP: u64 = 0x100_0000_0000;
const PAGE: u64 = 4096;
/// The end of user address space.
const USER_END: u64 = 1 << 47;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot run '{0}': no such file")]
    NotFound(String),
    #[error("cannot run '{0}': is a directory")]
    Directory(String),
    #[error("cannot run '{0}': permission denied (not executable)")]
    Permission(String),
    #[error("cannot run '{0}': not a regular file")]
    NotRegular(String),
    #[error("cannot run '{0}': not an ELF file")]
    NotElf(String),
    #[error("cannot run '{0}': 32-bit ELF files are not supported (only x86-64)")]
    Elf32(String),
    #[error("cannot run '{0}': ELF class {1} is neither 32- nor 64-bit, and the machine is {2}, not x86-64")]
    BadClass(String, u8, String),
    #[error("cannot run '{0}': ELF for {1}, not x86-64")]
    ForeignMachine(String, String),
    #[error("cannot run '{0}': not an executable ELF file (type {1})")]
    NotExecutable(String, u16),
    #[error("cannot run '{0}': interpreter '{1}' not found")]
    MissingInterpreter(String, String),
    #[error("cannot run '{0}': malformed ELF: {1}")]
    Malformed(String, String),
    /// A failure where the kernel has already replaced the calling program: it kills the
    /// process with SIGSEGV.
    #[error("'{0}' cannot be loaded: {1}")]
    Killed(String, String),
}

impl LoadError {
    /// Exit status rtgrind uses for this error (shell conventions: 127 not found, 126 cannot execute).
    pub fn exit_code(&self) -> i32 {
        match self {
            LoadError::NotFound(_) => 127,
            _ => 126,
        }
    }
}

/// One mapped ELF object.
#[derive(Debug, Clone)]
pub struct LoadedObject {
    /// Load bias: runtime address = ELF vaddr + bias.
    pub bias: u64,
    pub entry: u64,
    pub phdr: u64,
    pub phnum: u64,
    /// One past the object's highest mapped byte.
    pub end: u64,
}

#[derive(Debug)]
pub struct LoadedProgram {
    pub main: LoadedObject,
    pub interp: Option<LoadedObject>,
    /// First byte after the main object's bss: where the guest heap (brk) starts.
    pub brk_start: u64,
}

impl LoadedProgram {
    /// Where the guest starts: the interpreter's entry if there is one.
    pub fn start_pc(&self) -> u64 {
        self.interp.as_ref().map_or(self.main.entry, |i| i.entry)
    }
}

/// Checks a path names a runnable x86-64 ELF, with the user-facing error otherwise.
fn read_checked(path: &Path) -> Result<super::file::FileBytes, LoadError> {
    let name = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|_| LoadError::NotFound(name.clone()))?;
    if meta.is_dir() {
        return Err(LoadError::Directory(name));
    }
    // The kernel refuses the rest with EACCES; opening a FIFO to read it would wait for a
    // writer.
    if !meta.is_file() {
        return Err(LoadError::NotRegular(name));
    }
    let cpath = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| LoadError::NotFound(name.clone()))?;
    // SAFETY: access() with a valid NUL-terminated path.
    if unsafe { libc::access(cpath.as_ptr(), libc::X_OK) } != 0 {
        return Err(LoadError::Permission(name));
    }
    let bytes = super::file::map(path).map_err(|_| LoadError::Permission(name.clone()))?;
    check_header(&name, &bytes)?;
    Ok(bytes)
}

/// The kernel's first checks: the magic, and the machine, read as x86-64 reads it (the class
/// and data bytes are not looked at: a 64-bit x86-64 header with any class byte runs).
fn check_header(name: &str, b: &[u8]) -> Result<(), LoadError> {
    if b.len() < 20 || &b[0..4] != b"\x7fELF" {
        return Err(LoadError::NotElf(name.into()));
    }
    let machine = u16::from_le_bytes([b[18], b[19]]);
    if machine == header::EM_X86_64 {
        return Ok(());
    }
    let m = if b[5] == header::ELFDATA2MSB { u16::from_be_bytes([b[18], b[19]]) } else { machine };
    let m = header::machine_to_str(m).to_lowercase().replace("em_", "");
    Err(match b[4] {
        header::ELFCLASS32 => LoadError::Elf32(name.into()),
        header::ELFCLASS64 => LoadError::ForeignMachine(name.into(), m),
        class => LoadError::BadClass(name.into(), class, m),
    })
}

/// The header fields the kernel uses.
struct Ehdr {
    e_type: u16,
    entry: u64,
    phoff: u64,
}

/// A program header.
#[derive(Clone, Copy)]
struct Phdr {
    p_type: u32,
    p_flags: u32,
    p_offset: u64,
    p_vaddr: u64,
    p_filesz: u64,
    p_memsz: u64,
}

/// The little-endian field of `size` bytes at `at` (bytes past the end read as zero, as in
/// the kernel's buffer of the file's first bytes).
fn field(b: &[u8], at: u64, size: usize) -> u64 {
    (0..size).rev().fold(0, |v, i| (v << 8) | usize::try_from(at).ok().and_then(|a| b.get(a + i)).copied().unwrap_or(0) as u64)
}

/// The header and program headers, refused where `load_elf_phdrs` refuses them: entries not
/// 56 bytes, none or more than a page of them, or not all in the file.
fn headers(name: &str, b: &[u8]) -> Result<(Ehdr, Vec<Phdr>), LoadError> {
    let malformed = |why: String| LoadError::Malformed(name.into(), why);
    let (phoff, phentsize, phnum) = (field(b, 32, 8), field(b, 54, 2), field(b, 56, 2));
    if phentsize != 56 {
        return Err(malformed(format!("program header entries of {phentsize} bytes, not 56")));
    }
    let size = phnum * 56;
    if size == 0 || size > PAGE {
        return Err(malformed(format!("{phnum} program headers")));
    }
    if phoff.checked_add(size).is_none_or(|end| end > b.len() as u64) {
        return Err(malformed(format!("program headers at {phoff:#x} past the end of the file")));
    }
    let phdrs = (0..phnum)
        .map(|i| phoff + i * 56)
        .map(|at| Phdr {
            p_type: field(b, at, 4) as u32,
            p_flags: field(b, at + 4, 4) as u32,
            p_offset: field(b, at + 8, 8),
            p_vaddr: field(b, at + 16, 8),
            p_filesz: field(b, at + 32, 8),
            p_memsz: field(b, at + 40, 8),
        })
        .collect();
    Ok((Ehdr { e_type: field(b, 16, 2) as u16, entry: field(b, 24, 8), phoff }, phdrs))
}

fn executable_type(t: u16) -> bool {
    t == header::ET_EXEC || t == header::ET_DYN
}

/// The interpreter the first `PT_INTERP` names, checked as the kernel checks it: 2 to 4096
/// bytes, all in the file, the last one NUL (the name ends at the first NUL).
fn interpreter(name: &str, b: &[u8], phdrs: &[Phdr]) -> Result<Option<PathBuf>, LoadError> {
    let Some(p) = phdrs.iter().find(|p| p.p_type == ph::PT_INTERP) else { return Ok(None) };
    let malformed = |why: &str| LoadError::Malformed(name.into(), format!("PT_INTERP {why}"));
    if p.p_filesz < 2 || p.p_filesz > 4096 {
        return Err(malformed(&format!("of {} bytes", p.p_filesz)));
    }
    let Some(path) = p.p_offset.checked_add(p.p_filesz).filter(|&end| end <= b.len() as u64).map(|end| &b[p.p_offset as usize..end as usize]) else {
        return Err(malformed("past the end of the file"));
    };
    if path.last() != Some(&0) {
        return Err(malformed("not NUL-terminated"));
    }
    let path = &path[..path.iter().position(|&c| c == 0).unwrap_or(0)];
    use std::os::unix::ffi::OsStrExt;
    Ok(Some(PathBuf::from(std::ffi::OsStr::from_bytes(path))))
}

/// Loads the program at `path` and its interpreter.
pub fn load(path: &Path, mem: &mut GuestMemory) -> Result<LoadedProgram, LoadError> {
    let name = path.display().to_string();
    let bytes = read_checked(path)?;
    let t = field(&bytes, 16, 2) as u16;
    if !executable_type(t) {
        return Err(LoadError::NotExecutable(name, t));
    }
    let (ehdr, phdrs) = headers(&name, &bytes)?;
    let interp = match interpreter(&name, &bytes, &phdrs)? {
        Some(ip) => {
            let missing = || LoadError::MissingInterpreter(name.clone(), ip.display().to_string());
            if ip.as_os_str().is_empty() || !ip.exists() {
                return Err(missing());
            }
            let ib = read_checked(&ip).map_err(|e| if matches!(e, LoadError::NotFound(_)) { missing() } else { e })?;
            let (ih, iph) = headers(&ip.display().to_string(), &ib)?;
            Some((ip, ih, iph))
        }
        None => None,
    };
    // Past this point the kernel has replaced the calling program: what fails kills it.
    let main = map_object(path, &ehdr, &phdrs, Some(PIE_BASE), mem)?;
    let brk_start = (main.end + PAGE - 1) & !(PAGE - 1);
    let interp = match interp {
        Some((ip, ih, _)) if !executable_type(ih.e_type) => {
            return Err(LoadError::Killed(ip.display().to_string(), format!("not an executable ELF file (type {})", ih.e_type)));
        }
        Some((ip, ih, iph)) => Some(map_object(&ip, &ih, &iph, None, mem)?),
        None => None,
    };
    Ok(LoadedProgram { main, interp, brk_start })
}

fn prot_of(flags: u32) -> i32 {
    let mut p = 0;
    if flags & ph::PF_R != 0 {
        p |= libc::PROT_READ;
    }
    if flags & ph::PF_W != 0 {
        p |= libc::PROT_WRITE;
    }
    if flags & ph::PF_X != 0 {
        p |= libc::PROT_EXEC;
    }
    p
}

fn map_object(path: &Path, ehdr: &Ehdr, phdrs: &[Phdr], pie_base: Option<u64>, mem: &mut GuestMemory) -> Result<LoadedObject, LoadError> {
    let name = path.display().to_string();
    let killed = |why: String| LoadError::Killed(name.clone(), why);
    // (An empty segment maps nothing, wherever it says it is.)
    let loads: Vec<&Phdr> = phdrs.iter().filter(|p| p.p_type == ph::PT_LOAD && p.p_memsz > 0).collect();
    if loads.is_empty() {
        return Err(killed("no PT_LOAD segment".into()));
    }
    for p in &loads {
        if p.p_filesz > p.p_memsz || p.p_vaddr.checked_add(p.p_memsz).is_none_or(|end| end > USER_END) {
            return Err(killed(format!("a PT_LOAD segment at {:#x} of {:#x} bytes ({:#x} in the file)", p.p_vaddr, p.p_memsz, p.p_filesz)));
        }
    }
    let lo = loads.iter().map(|p| p.p_vaddr).min().unwrap_or(0) & !(PAGE - 1);
    let hi = loads.iter().map(|p| p.p_vaddr + p.p_memsz).max().unwrap_or(0);
    let span = ((hi - lo) + PAGE - 1) & !(PAGE - 1);
    let map_err = |e: std::io::Error| LoadError::Killed(name.clone(), format!("cannot map it: {e}"));
    let file = std::fs::File::open(path).map_err(map_err)?;
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();

    // Reserve the whole span first so the segments land together (and nothing else is there).
    let bias = if ehdr.e_type == header::ET_EXEC {
        mem.reserve(lo, span, true).map_err(map_err)?;
        0
    } else if let Some(base) = pie_base {
        // Where the kernel puts a PIE without ASLR, else (rtgrind itself is there when
        // repeatable runs turned ASLR off) a fixed base with the same free space above it, so
        // the program's brk heap grows right after it as natively (a program loaded just
        // below other mappings has no room for brk, and glibc's malloc then falls back to
        // mapped, non-contiguous memory, whose heap checks fail differently).
        let at = [base, base + PIE_BASE_STEP]
            .into_iter()
            .find_map(|b| mem.reserve(b, span, true).ok())
            .map_or_else(|| mem.reserve(0, span, false), Ok)
            .map_err(map_err)?;
        at - lo
    } else {
        let at = mem.reserve(0, span, false).map_err(map_err)?;
        at - lo
    };
    for p in &loads {
        map_segment(p, bias, fd, &name, mem).map_err(map_err)?;
    }
    // The kernel leaves nothing mapped between segments.
    let mut segments: Vec<(u64, u64)> =
        loads.iter().map(|p| ((p.p_vaddr + bias) & !(PAGE - 1), (p.p_vaddr + p.p_memsz + bias + PAGE - 1) & !(PAGE - 1))).collect();
    segments.sort_unstable();
    let mut cur = lo + bias;
    for (s, e) in segments {
        if s > cur {
            mem.guest_munmap(cur, s - cur);
        }
        cur = cur.max(e);
    }
    // As the kernel: the program headers' address is where the segment holding them is mapped
    // (a PT_PHDR naming another address is the program's own business; ld.so then fails),
    // the load bias itself if none holds them; the last segment that holds them wins.
    let phdr = loads
        .iter()
        .rev()
        .find(|p| p.p_offset <= ehdr.phoff && ehdr.phoff - p.p_offset < p.p_filesz)
        .map_or(0, |p| ehdr.phoff - p.p_offset + p.p_vaddr)
        .wrapping_add(bias);
    let phnum = phdrs.len() as u64;
    Ok(LoadedObject { bias, entry: ehdr.entry.wrapping_add(bias), phdr, phnum, end: hi + bias })
}

/// Maps one PT_LOAD segment at its address plus `bias`: its file pages, the zeroed rest of
/// the last one and anonymous pages up to its memory size.
fn map_segment(p: &Phdr, bias: u64, fd: i32, name: &str, mem: &mut GuestMemory) -> std::io::Result<()> {
    let invalid = || std::io::Error::from_raw_os_error(libc::EINVAL);
    let va = p.p_vaddr + bias;
    let page = va & !(PAGE - 1);
    let delta = va - page;
    let prot = prot_of(p.p_flags);
    let file_end = va + p.p_filesz;
    let mem_end = va + p.p_memsz;
    // The kernel zeroes the rest of the last file page of a writable segment only (the
    // start of .bss, and past it memory that ld.so's early allocator assumes is zero).
    let zero = p.p_memsz > p.p_filesz && prot & libc::PROT_WRITE != 0;
    if p.p_filesz > 0 {
        let len = ((delta + p.p_filesz) + PAGE - 1) & !(PAGE - 1);
        let off = p.p_offset.checked_sub(delta).filter(|o| o % PAGE == 0).ok_or_else(invalid)?;
        mem.map_file_fixed(page, len, prot, fd, off, name)?;
        let zero_end = (file_end + PAGE - 1) & !(PAGE - 1);
        // Past the file's end the page cannot be written (SIGBUS): the kernel's clearing
        // fails there too, and kills the program.
        if zero && zero_end > file_end && !crate::kernel::guest_mem::write(file_end, &vec![0; (zero_end - file_end) as usize]) {
            return Err(std::io::Error::from_raw_os_error(libc::EFAULT));
        }
    }
    let anon_start = if p.p_filesz > 0 { (file_end + PAGE - 1) & !(PAGE - 1) } else { page };
    let anon_end = (mem_end + PAGE - 1) & !(PAGE - 1);
    if anon_end > anon_start {
        // Mapped writable first: the kernel's `vm_brk_flags` counts the pages against the
        // commit limit whatever their protection (512 GiB of .bss is refused).
        mem.map_anon_fixed(anon_start, anon_end - anon_start, libc::PROT_READ | libc::PROT_WRITE, name)?;
        mem.protect_fixed(anon_start, anon_end - anon_start, prot);
    }
    Ok(())
}
