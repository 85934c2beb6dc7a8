//! Guest addresses to source lines (`file:line (function)`, with the function an inlined one
//! was inlined into), from the modules' DWARF read in-process (`debuginfo`); without debug
//! info, the nearest symbol.

use super::debuginfo::{self, Frame};
use super::symbols::{Modules, SymbolCache};
use std::collections::BTreeMap;

#[derive(Default)]
pub struct SourceLines {
    syms: SymbolCache,
}

impl SourceLines {
    /// A description of each pc, in order: `file:line (function)`, else `function+0xoff in
    /// module`, else `in module`, else empty.
    pub fn describe<M: Modules + ?Sized>(&mut self, pcs: &[u64], mem: &M) -> Vec<String> {
        let mut out = vec![String::new(); pcs.len()];
        let mut by_module: BTreeMap<String, Vec<(usize, u64)>> = BTreeMap::new();
        for (i, &pc) in pcs.iter().enumerate() {
            if let Some((path, va)) = self.syms.file_address(pc, mem) {
                by_module.entry(path).or_default().push((i, va));
            }
        }
        for (path, addrs) in by_module {
            let lines = places(&path, addrs.iter().map(|a| a.1));
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
    /// it, from the frames of inlining; else as `describe`.
    pub fn describe_written<M: Modules + ?Sized>(&mut self, pc: u64, mem: &M) -> String {
        let written = self.syms.file_address(pc, mem).and_then(|(path, va)| {
            let frames = debuginfo::frames(&path, va);
            let system = |f: &Frame| f.file.as_deref().is_some_and(|p| p.starts_with("/usr/include/"));
            let pick = frames.iter().position(|f| !system(f)).and_then(|k| place(&frames[k..]))?;
            (frames.len() > 1 && system(&frames[0])).then_some(pick)
        });
        written.unwrap_or_else(|| self.describe(&[pc], mem).pop().unwrap_or_default())
    }
}

/// The deepest call stack said (Valgrind's `--num-callers` goes to 500; a report prints fewer).
pub const MAX_FRAMES: usize = 500;

impl SourceLines {
    /// A call stack as Valgrind prints it, a line per frame, innermost first:
    /// `0x10913D: total (a.c:6)`. `pcs` are the instruction's address and then the return
    /// addresses of the calls it is under; a return address is said less one, at its call, as
    /// Valgrind says it. A function inlined there is a frame of its own at the same address;
    /// a module without lines gives `f (in /path/module)`. It ends at `main`.
    pub fn stack<M: Modules + ?Sized>(&mut self, pcs: &[u64], mem: &M) -> Vec<String> {
        let mut out = Vec::new();
        for (k, &pc) in pcs.iter().enumerate() {
            let at = if k == 0 { pc } else { pc.wrapping_sub(1) };
            let frames = self.syms.file_address(at, mem).map(|(path, va)| debuginfo::frames(&path, va)).unwrap_or_default();
            let names: Vec<String> = if frames.iter().any(|f| f.line.is_some()) {
                frames.iter().map(|f| format!("{} ({})", f.function.as_deref().unwrap_or("???"), line_of(f).unwrap_or_else(|| "??".into()))).collect()
            } else {
                vec![match self.syms.lookup(at, mem) {
                    Some((f, _, m)) => format!("{} (in {m})", f.as_deref().unwrap_or("???")),
                    None => "???".into(),
                }]
            };
            for name in names {
                let last = name.starts_with("main (");
                out.push(format!("0x{at:X}: {name}"));
                if last || out.len() >= MAX_FRAMES {
                    return out;
                }
            }
        }
        out
    }
}

/// `file:line` of a frame.
fn line_of(f: &Frame) -> Option<String> {
    Some(format!("{}:{}", short(f.file.as_deref()?), f.line.filter(|&l| l > 0)?))
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
        let line = places(&path, std::iter::once(at)).pop().flatten()?;
        Some(format!("{} {line}{}", &text[..i], &inner[end + 1..]))
    });
    found.unwrap_or_else(|| text.to_string())
}

fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `file:line (function)` for each file address of the module at `module`, None where it has
/// no line for it.
pub fn places(module: &str, addrs: impl Iterator<Item = u64>) -> Vec<Option<String>> {
    addrs.map(|a| place(&debuginfo::frames(module, a))).collect()
}

/// `file:line (function)` of the innermost of `frames`, and for an inlined function the one it
/// was inlined into and where (`a.c:5 (get), inlined into main at a.c:12`); None without a
/// line.
fn place(frames: &[Frame]) -> Option<String> {
    let name = |f: &Frame| f.function.clone().unwrap_or_else(|| "??".into());
    let inner = frames.first()?;
    let mut text = format!("{} ({})", line_of(inner)?, name(inner));
    if let Some(outer) = frames.get(1) {
        text.push_str(&format!(", inlined into {}", name(outer)));
        if let Some(line) = line_of(outer) {
            text.push_str(&format!(" at {line}"));
        }
    }
    Some(text)
}
