//! Maps an ELF executable (and its `PT_INTERP`) into the guest address space, like the
//! kernel's `binfmt_elf`: static, static-pie, PIE and non-PIE programs.

use crate::kernel::memory::GuestMemory;
use goblin::elf::{header, program_header as ph, Elf};
use std::path::{Path, PathBuf};

/// Where the kernel (without ASLR) puts a PIE main program; rtgrind does the same.
const PIE_BASE: u64 = 0x5555_5555_4000;
/// The next base tried for a PIE when `PIE_BASE` is taken (1 TiB higher).
const PIE_BASE_STEP: u64 = 0x100_0000_0000;
const PAGE: u64 = 4096;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot run '{0}': no such file")]
    NotFound(String),
    #[error("cannot run '{0}': is a directory")]
    Directory(String),
    #[error("cannot run '{0}': permission denied (not executable)")]
    Permission(String),
    #[error("cannot run '{0}': not an ELF file")]
    NotElf(String),
    #[error("cannot run '{0}': 32-bit ELF files are not supported (only x86-64)")]
    Elf32(String),
    #[error("cannot run '{0}': ELF for {1}, not x86-64")]
    ForeignMachine(String, String),
    #[error("cannot run '{0}': not an executable ELF file (type {1})")]
    NotExecutable(String, u16),
    #[error("cannot run '{0}': interpreter '{1}' not found")]
    MissingInterpreter(String, String),
    #[error("cannot run '{0}': malformed ELF: {1}")]
    Malformed(String, String),
    #[error("cannot map '{0}': {1}")]
    Map(String, std::io::Error),
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
fn read_checked(path: &Path) -> Result<Vec<u8>, LoadError> {
    let name = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|_| LoadError::NotFound(name.clone()))?;
    if meta.is_dir() {
        return Err(LoadError::Directory(name));
    }
    let cpath = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| LoadError::NotFound(name.clone()))?;
    // SAFETY: access() with a valid NUL-terminated path.
    if unsafe { libc::access(cpath.as_ptr(), libc::X_OK) } != 0 {
        return Err(LoadError::Permission(name));
    }
    let bytes = std::fs::read(path).map_err(|_| LoadError::Permission(name.clone()))?;
    check_header(&name, &bytes)?;
    Ok(bytes)
}

fn check_header(name: &str, b: &[u8]) -> Result<(), LoadError> {
    if b.len() < 20 || &b[0..4] != b"\x7fELF" {
        return Err(LoadError::NotElf(name.into()));
    }
    if b[4] == header::ELFCLASS32 {
        return Err(LoadError::Elf32(name.into()));
    }
    let machine = u16::from_le_bytes([b[18], b[19]]);
    if b[4] != header::ELFCLASS64 || b[5] != header::ELFDATA2LSB || machine != header::EM_X86_64 {
        let m = if b[5] == header::ELFDATA2LSB { machine } else { u16::from_be_bytes([b[18], b[19]]) };
        return Err(LoadError::ForeignMachine(name.into(), header::machine_to_str(m).to_lowercase().replace("em_", "")));
    }
    Ok(())
}

/// Loads the program at `path` and its interpreter.
pub fn load(path: &Path, mem: &mut GuestMemory) -> Result<LoadedProgram, LoadError> {
    let name = path.display().to_string();
    let bytes = read_checked(path)?;
    let elf = Elf::parse(&bytes).map_err(|e| LoadError::Malformed(name.clone(), e.to_string()))?;
    let interp_path = elf.interpreter.map(PathBuf::from);
    if let Some(ip) = &interp_path {
        if !ip.exists() {
            return Err(LoadError::MissingInterpreter(name, ip.display().to_string()));
        }
    }
    let main = map_object(path, &bytes, &elf, Some(PIE_BASE), mem)?;
    let brk_start = (main.end + PAGE - 1) & !(PAGE - 1);
    let interp = match interp_path {
        Some(ip) => {
            let ib = read_checked(&ip).map_err(|e| match e {
                LoadError::NotFound(_) => LoadError::MissingInterpreter(name.clone(), ip.display().to_string()),
                other => other,
            })?;
            let ielf = Elf::parse(&ib).map_err(|e| LoadError::Malformed(ip.display().to_string(), e.to_string()))?;
            Some(map_object(&ip, &ib, &ielf, None, mem)?)
        }
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

fn map_object(path: &Path, bytes: &[u8], elf: &Elf, pie_base: Option<u64>, mem: &mut GuestMemory) -> Result<LoadedObject, LoadError> {
    let name = path.display().to_string();
    let loads: Vec<_> = elf.program_headers.iter().filter(|p| p.p_type == ph::PT_LOAD).collect();
    if loads.is_empty() {
        return Err(LoadError::Malformed(name, "no PT_LOAD segment".into()));
    }
    match elf.header.e_type {
        header::ET_EXEC | header::ET_DYN => {}
        t => return Err(LoadError::NotExecutable(name, t)),
    }
    let lo = loads.iter().map(|p| p.p_vaddr).min().unwrap() & !(PAGE - 1);
    let hi = loads.iter().map(|p| p.p_vaddr + p.p_memsz).max().unwrap();
    let span = ((hi - lo) + PAGE - 1) & !(PAGE - 1);
    let file = std::fs::File::open(path).map_err(|e| LoadError::Map(name.clone(), e))?;
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();

    // Reserve the whole span first so the segments land together (and nothing else is there).
    let bias = if elf.header.e_type == header::ET_EXEC {
        mem.reserve(lo, span, true).map_err(|e| LoadError::Map(name.clone(), e))?;
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
            .map_err(|e| LoadError::Map(name.clone(), e))?;
        at - lo
    } else {
        let at = mem.reserve(0, span, false).map_err(|e| LoadError::Map(name.clone(), e))?;
        at - lo
    };
    for p in &loads {
        let va = p.p_vaddr + bias;
        let page = va & !(PAGE - 1);
        let delta = va - page;
        let prot = prot_of(p.p_flags);
        let file_end = va + p.p_filesz;
        let mem_end = va + p.p_memsz;
        if p.p_filesz > 0 {
            let len = ((delta + p.p_filesz) + PAGE - 1) & !(PAGE - 1);
            mem.map_file_fixed(page, len, prot | (libc::PROT_WRITE * ((p.p_memsz > p.p_filesz) as i32)), fd, p.p_offset - delta, &name)
                .map_err(|e| LoadError::Map(name.clone(), e))?;
            if p.p_memsz > p.p_filesz {
                // Zero the rest of the last file page, like the kernel: the start of .bss, and
                // past it memory that ld.so's early allocator assumes is zero.
                let zero_end = (file_end + PAGE - 1) & !(PAGE - 1);
                if zero_end > file_end {
                    // SAFETY: [file_end, zero_end) lies in the writable mapping made just above.
                    unsafe { std::ptr::write_bytes(file_end as *mut u8, 0, (zero_end - file_end) as usize) };
                }
                mem.protect_fixed(page, len, prot);
            }
        }
        let anon_start = if p.p_filesz > 0 { (file_end + PAGE - 1) & !(PAGE - 1) } else { page };
        let anon_end = (mem_end + PAGE - 1) & !(PAGE - 1);
        if anon_end > anon_start {
            mem.map_anon_fixed(anon_start, anon_end - anon_start, prot, &name).map_err(|e| LoadError::Map(name.clone(), e))?;
        }
    }
    let _ = bytes;
    let phdr = elf.program_headers.iter().find(|p| p.p_type == ph::PT_PHDR).map(|p| p.p_vaddr).unwrap_or_else(|| {
        let first = loads[0];
        first.p_vaddr - first.p_offset + elf.header.e_phoff
    }) + bias;
    Ok(LoadedObject { bias, entry: elf.header.e_entry + bias, phdr, phnum: elf.header.e_phnum as u64, end: hi + bias })
}
