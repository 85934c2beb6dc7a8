//! Guest addresses to source lines (`file:line (function)`) through binutils' `addr2line`,
//! one process per module for all its addresses; without debug info, the nearest symbol.

use super::symbols::SymbolCache;
use crate::kernel::memory::GuestMemory;
use std::collections::BTreeMap;
use std::process::{Command, Stdio};

#[derive(Default)]
pub struct SourceLines {
    syms: SymbolCache,
}

impl SourceLines {
    /// A description of each pc, in order: `file:line (function)`, else `function+0xoff in
    /// module`, else `in module`, else empty.
    pub fn describe(&mut self, pcs: &[u64], mem: &GuestMemory) -> Vec<String> {
        let mut out = vec![String::new(); pcs.len()];
        let mut by_module: BTreeMap<String, Vec<(usize, u64)>> = BTreeMap::new();
        for (i, &pc) in pcs.iter().enumerate() {
            if let Some((path, va)) = self.syms.file_address(pc, mem) {
                by_module.entry(path).or_default().push((i, va));
            }
        }
        for (path, addrs) in by_module {
            let lines = addr2line(&path, addrs.iter().map(|a| a.1));
            for (k, (i, _)) in addrs.iter().enumerate() {
                let line = lines.get(k).cloned().flatten();
                out[*i] = match line {
                    Some(l) => l,
                    None => match self.syms.lookup(pcs[*i], mem) {
                        Some((Some(f), off, m)) => format!("{f}+{off:#x} in {}", short(&m)),
                        Some((None, off, m)) => format!("{off:#x} in {}", short(&m)),
                        None => String::new(),
                    },
                };
            }
        }
        out
    }
}

impl SourceLines {
    /// `file:line (function)` of `pc` in the code its programmer wrote: where code from a
    /// system header was inlined there (glibc's `atoi`, calling `strtol`), the line that used
    /// it, from the frames of inlining (`addr2line -i`); else as `describe`.
    pub fn describe_written(&mut self, pc: u64, mem: &GuestMemory) -> String {
        let written = self.syms.file_address(pc, mem).and_then(|(path, va)| {
            let out = Command::new("addr2line").args(["-f", "-i", "-C", "-e", &path, &format!("{va:#x}")]).stderr(Stdio::null()).output().ok()?;
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let lines: Vec<&str> = text.lines().collect();
            // Pairs (function, place), innermost first; the place of frame k is in the function
            // of frame k + 1 (addr2line names each frame's function with the place inside it).
            let frames: Vec<(&str, &str)> = lines.chunks_exact(2).map(|c| (c[0], c[1])).collect();
            let system = |place: &str| place.starts_with("/usr/include/");
            let pick = frames.iter().filter(|f| !system(f.1)).find_map(|f| line_text(f.0, f.1))?;
            (frames.len() > 1 && system(frames[0].1)).then_some(pick)
        });
        written.unwrap_or_else(|| self.describe(&[pc], mem).pop().unwrap_or_default())
    }
}

/// A message's `(function+0xoff in module)` replaced by the `file:line (function)` it is in,
/// where the module has a line for it ("0x... (main+0x37 in /p/prog): why" from a run's
/// fatal-signal line, read by a search that has no guest memory of its own).
pub fn with_source_line(text: &str, module: &str) -> String {
    let found = text.find(" (").and_then(|i| {
        let inner = &text[i + 2..];
        let end = inner.find(')')?;
        let (sym_off, path) = inner[..end].split_once(" in ")?;
        let (sym, off) = sym_off.rsplit_once("+0x")?;
        let path = if std::path::Path::new(path).is_absolute() { path.to_string() } else { module.to_string() };
        let at = super::symbols::file_symbol(&path, sym)? + u64::from_str_radix(off, 16).ok()?;
        let line = addr2line(&path, std::iter::once(at)).pop().flatten()?;
        Some(format!("{} {line}{}", &text[..i], &inner[end + 1..]))
    });
    found.unwrap_or_else(|| text.to_string())
}

fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `file:line (function)` for each address, None where the module has no line for it.
pub fn addr2line(module: &str, addrs: impl Iterator<Item = u64>) -> Vec<Option<String>> {
    let addrs: Vec<String> = addrs.map(|a| format!("{a:#x}")).collect();
    let out = Command::new("addr2line").args(["-f", "-C", "-e", module]).args(&addrs).stderr(Stdio::null()).output();
    let Ok(out) = out else { return vec![None; addrs.len()] };
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    (0..addrs.len()).map(|i| line_text(lines.get(2 * i)?, lines.get(2 * i + 1)?)).collect()
}

/// `file:line (function)` from one frame of addr2line's output (function, then place); None
/// where it knows no line.
fn line_text(func: &str, place: &str) -> Option<String> {
    let place = place.split(" (discriminator").next().unwrap_or(place);
    if place.starts_with("??") {
        return None;
    }
    let file = place.rsplit('/').next().unwrap_or(place);
    Some(format!("{file} ({func})"))
}
