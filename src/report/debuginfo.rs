//! A module's DWARF, found and read in-process with the `addr2line` crate (gimli underneath):
//! in the module itself, or in a separate debug file found as gdb finds it, by build ID under
//! `/usr/lib/debug/.build-id/` (Debian's `-dbgsym` and `libc6-dbg` packages) or by the
//! `.gnu_debuglink` name beside the module, in its `.debug/` directory, or under
//! `/usr/lib/debug/`. One loader per module, kept for the thread's life: its parsed units and
//! line tables serve every later lookup.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// One frame of the inlining chain at an address, innermost first: the function (demangled)
/// and the place inside it (for an outer frame, where it calls the inner one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub function: Option<String>,
    /// The source file's full path as the DWARF gives it.
    pub file: Option<String>,
    pub line: Option<u32>,
}

thread_local! {
    static LOADERS: RefCell<HashMap<PathBuf, Option<Rc<addr2line::Loader>>>> = RefCell::new(HashMap::new());
}

/// The frames at file address `va` of the module at `path`, innermost first; empty where it
/// has no DWARF for it (or its DWARF cannot be read: that address then has no line, the
/// others keep theirs).
pub fn frames(path: &str, va: u64) -> Vec<Frame> {
    let Some(loader) = loader(Path::new(path)) else { return Vec::new() };
    let Ok(mut iter) = loader.find_frames(va) else { return Vec::new() };
    let mut out = Vec::new();
    while let Ok(Some(f)) = iter.next() {
        let function = f.function.as_ref().and_then(|n| n.demangle().ok()).map(|n| n.into_owned());
        let (file, line) = f.location.map_or((None, None), |l| (l.file.map(str::to_string), l.line));
        out.push(Frame { function, file, line });
    }
    // The function holding the address is named as its mangled symbol says, demangled: the
    // DWARF names a static C++ function without its parameters ("parse"), its symbol with
    // them ("parse(Record&, char const*)"), as binutils and gdb say it. (A C function's
    // symbol may be a clone's, "label.constprop.0": its DWARF name; inlined ones have no
    // symbol.) Code the DWARF describes no function of (assembly) is named by its symbol.
    let mangled = |s: &str| s.starts_with("_Z") || s.starts_with("_R");
    if let (Some(outer), Some(symbol)) = (out.last_mut(), loader.find_symbol(va)) {
        let name = addr2line::demangle_auto(symbol.into(), None).into_owned();
        match &outer.function {
            None => outer.function = Some(name),
            Some(f) if mangled(symbol) && name.contains(f.as_str()) => outer.function = Some(name),
            Some(_) => {}
        }
    }
    out
}

fn loader(path: &Path) -> Option<Rc<addr2line::Loader>> {
    LOADERS.with(|cache| {
        cache
            .borrow_mut()
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                let (file, compressed) = debug_file(path)?;
                let file = if compressed { decompressed(&file).unwrap_or(file) } else { file };
                addr2line::Loader::new(file).ok().map(Rc::new)
            })
            .clone()
    })
}

/// A copy of the debug file `file` whose compressed DWARF sections (`SHF_COMPRESSED`, as
/// Debian's `-dbg` and `-dbgsym` packages ship them) are decompressed, made once by binutils'
/// `objcopy --decompress-debug-sections` into rtgrind's cache directory
/// (`$XDG_CACHE_HOME/rtgrind/dwarf`, else `~/.cache/rtgrind/dwarf`), as debuginfod keeps its
/// downloads. Every later process maps it instead of inflating the sections again: a search's
/// runs that crash in libc each spent about 25 ms in zlib on libc6-dbg's 10 MB of DWARF.
/// None (the file is read as it is) where it has no compressed section, or the copy cannot
/// be made.
fn decompressed(file: &Path) -> Option<PathBuf> {
    use sha2::{Digest, Sha256};
    use std::os::unix::fs::MetadataExt;
    let real = std::fs::canonicalize(file).ok()?;
    let meta = std::fs::metadata(&real).ok()?;
    let key = format!("{}\0{}\0{}.{}", real.display(), meta.len(), meta.mtime(), meta.mtime_nsec());
    let name: String = Sha256::digest(key.as_bytes()).iter().take(16).map(|b| format!("{b:02x}")).collect();
    let home = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache"));
    let dir = std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from).filter(|d| d.is_absolute()).or(home)?.join("rtgrind/dwarf");
    let copy = dir.join(format!("{name}.debug"));
    if copy.is_file() {
        return Some(copy);
    }
    let bytes = crate::loader::file::map(&real).ok()?;
    let elf = goblin::elf::Elf::parse(&bytes).ok()?;
    let compressed = compressed_dwarf(&elf);
    // (A supplementary file named relative to the debug file would not be found from the copy.)
    let relative_sup = elf
        .section_headers
        .iter()
        .any(|s| elf.shdr_strtab.get_at(s.sh_name) == Some(".gnu_debugaltlink") && bytes.get(s.sh_offset as usize).is_some_and(|&c| c != b'/'));
    if !compressed || relative_sup {
        return None;
    }
    std::fs::create_dir_all(&dir).ok()?;
    // Made beside it and renamed into place: runs of a search may make it at the same time.
    let partial = dir.join(format!("{name}.{}.partial", std::process::id()));
    let made = std::process::Command::new("objcopy")
        .arg("--decompress-debug-sections")
        .arg(&real)
        .arg(&partial)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !made || std::fs::rename(&partial, &copy).is_err() {
        let _ = std::fs::remove_file(&partial);
        return None;
    }
    Some(copy)
}

/// Whether any of the ELF's DWARF sections is compressed (`SHF_COMPRESSED`).
fn compressed_dwarf(elf: &goblin::elf::Elf<'_>) -> bool {
    elf.section_headers.iter().any(|s| {
        s.sh_flags & goblin::elf::section_header::SHF_COMPRESSED as u64 != 0 && elf.shdr_strtab.get_at(s.sh_name).is_some_and(|n| n.starts_with(".debug_"))
    })
}

/// The file holding the DWARF of the module at `path`: itself, or its separate debug file;
/// and whether its sections may be compressed (known for the module itself, read already;
/// a separate file is looked at by `decompressed`).
fn debug_file(path: &Path) -> Option<(PathBuf, bool)> {
    let bytes = crate::loader::file::map(path).ok()?;
    let elf = goblin::elf::Elf::parse(&bytes).ok()?;
    let section = |name: &str| elf.section_headers.iter().find(|s| elf.shdr_strtab.get_at(s.sh_name) == Some(name));
    if [".debug_info", ".zdebug_info"].iter().any(|n| section(n).is_some_and(|s| s.sh_type != goblin::elf::section_header::SHT_NOBITS)) {
        return Some((path.to_path_buf(), compressed_dwarf(&elf)));
    }
    let mut candidates = Vec::new();
    if let Some(id) = build_id(&elf, &bytes) {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        if hex.len() > 2 {
            candidates.push(PathBuf::from(format!("/usr/lib/debug/.build-id/{}/{}.debug", &hex[..2], &hex[2..])));
        }
    }
    let link = section(".gnu_debuglink").and_then(|s| bytes.get(s.sh_offset as usize..(s.sh_offset + s.sh_size) as usize));
    if let Some(name) = link.and_then(|d| d.split(|&b| b == 0).next()).and_then(|n| std::str::from_utf8(n).ok()).filter(|n| !n.is_empty()) {
        let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let dir = real.parent().unwrap_or(Path::new("/"));
        candidates.push(dir.join(name));
        candidates.push(dir.join(".debug").join(name));
        candidates.push(Path::new("/usr/lib/debug").join(dir.strip_prefix("/").unwrap_or(dir)).join(name));
    }
    // (Not the module itself: a debuglink naming its own file holds no DWARF either.)
    candidates.into_iter().find(|c| c.is_file() && std::fs::canonicalize(c).ok() != std::fs::canonicalize(path).ok()).map(|c| (c, true))
}

/// The GNU build ID note's bytes.
fn build_id(elf: &goblin::elf::Elf<'_>, bytes: &[u8]) -> Option<Vec<u8>> {
    let notes = elf.iter_note_sections(bytes, Some(".note.gnu.build-id")).or_else(|| elf.iter_note_headers(bytes))?;
    notes.flatten().find(|n| n.n_type == goblin::elf::note::NT_GNU_BUILD_ID && n.name == "GNU").map(|n| n.desc.to_vec())
}

/// Where the prologue of the function at file addresses `[low, high)` of the module at `path`
/// ends: the first instruction of a line other than the entry's. A one-line function (or one
/// without line information) is all prologue: `high`. The prologue's stores (parameters to
/// their slots) are on the function's opening line, which is no statement in the source.
pub fn prologue_end(path: &str, low: u64, high: u64) -> u64 {
    let Some(loader) = loader(Path::new(path)) else { return high };
    let Ok(rows) = loader.find_location_range(low, high) else { return high };
    let mut entry = None;
    for (addr, _, loc) in rows {
        let (Some(file), Some(line)) = (loc.file, loc.line) else { continue };
        if line == 0 {
            continue;
        }
        match entry {
            None => entry = Some((file, line)),
            Some(e) if e != (file, line) => return addr,
            Some(_) => {}
        }
    }
    high
}

/// The source lines of the instructions at file addresses `[start, end)` of the module at
/// `path` ("file", line), each once, in address order; empty without line information.
pub fn lines_in(path: &str, start: u64, end: u64) -> Vec<(String, u32)> {
    let Some(loader) = loader(Path::new(path)) else { return Vec::new() };
    let Ok(rows) = loader.find_location_range(start, end) else { return Vec::new() };
    let mut out: Vec<(String, u32)> = Vec::new();
    for (_, _, loc) in rows {
        if let (Some(file), Some(line)) = (loc.file, loc.line) {
            let l = (file.to_string(), line);
            if line != 0 && !out.contains(&l) {
                out.push(l);
            }
        }
    }
    out
}
