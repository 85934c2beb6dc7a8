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

fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `file:line (function)` for each address, None where the module has no line for it.
fn addr2line(module: &str, addrs: impl Iterator<Item = u64>) -> Vec<Option<String>> {
    let addrs: Vec<String> = addrs.map(|a| format!("{a:#x}")).collect();
    let out = Command::new("addr2line").args(["-f", "-C", "-e", module]).args(&addrs).stderr(Stdio::null()).output();
    let Ok(out) = out else { return vec![None; addrs.len()] };
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    (0..addrs.len())
        .map(|i| {
            let (func, place) = (lines.get(2 * i)?, lines.get(2 * i + 1)?);
            let place = place.split(" (discriminator").next().unwrap_or(place);
            if place.starts_with("??") {
                return None;
            }
            let file = place.rsplit('/').next().unwrap_or(place);
            Some(format!("{file} ({func})"))
        })
        .collect()
}
