//! Layouts of the program's variables (variable re-ordering, the dissertation's §5.3): which
//! globals move to a region rtgrind lays out, and where each local of a re-laid frame goes. A
//! layout is a JSON file (`--layout=FILE`, written by `--tool=reorder`) that every tool reads:
//! the run's instructions that name a moved variable are rewritten as they are translated
//! (`apply`), so the same program runs with its variables in another order.

pub mod apply;
pub mod cfa;
pub mod frames;
pub mod heap;
pub mod objects;
pub mod pairs;

use serde::{Deserialize, Serialize};
use std::path::Path;

/// A layout, as its file holds it. Addresses are the program file's own (link-time).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// The program it was made for.
    pub program: String,
    /// What it was made to try, for the reader: "buffer 'b' followed by 'p'".
    #[serde(default)]
    pub pairs: Vec<String>,
    #[serde(default)]
    pub globals: Vec<GlobalMove>,
    #[serde(default)]
    pub frames: Vec<FrameMove>,
    /// Heap blocks placed after others, by allocation site (rtgrind's allocator then
    /// replaces the library's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub heap: Vec<heap::HeapPair>,
    /// A random layout's seed: rtgrind's allocator places every block a random distance on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heap_seed: Option<u64>,
}

/// A global moved to `to`, an offset in the layout's region.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalMove {
    pub name: String,
    pub address: u64,
    pub size: u64,
    pub to: u64,
}

/// A function's frame re-laid: each local from its offset from the frame's base (rbp where
/// the function sets it up, else the CFA) to another.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameMove {
    pub function: String,
    pub low_pc: u64,
    pub locals: Vec<LocalMove>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalMove {
    pub name: String,
    pub offset: i64,
    pub size: u64,
    pub to: i64,
}

/// At most this many of a layout's pairs are named in a report line; its file has them all.
const PAIRS_NAMED: usize = 3;

impl Layout {
    /// What the layout tries, for a report line: its first pairs, and how many more there are
    /// (a layout of a large program pairs a hundred buffers).
    pub fn summary(&self) -> String {
        let named = self.pairs.iter().take(PAIRS_NAMED).cloned().collect::<Vec<_>>().join("; ");
        match self.pairs.len().saturating_sub(PAIRS_NAMED) {
            0 => named,
            1 => format!("{named}; and 1 more pair"),
            n => format!("{named}; and {n} more pairs"),
        }
    }

    pub fn read(path: &Path) -> Result<Layout, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("--layout: cannot read '{}': {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("--layout: '{}' is not a layout: {e}", path.display()))
    }

    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, serde_json::to_string_pretty(self).expect("a layout serializes") + "\n")
    }

    /// Whether it moves nothing.
    pub fn is_empty(&self) -> bool {
        self.globals.is_empty() && self.frames.is_empty() && self.heap.is_empty() && self.heap_seed.is_none()
    }

    /// Whether rtgrind's allocator places the heap's blocks under it.
    pub fn places_heap(&self) -> bool {
        !self.heap.is_empty() || self.heap_seed.is_some()
    }

    /// Checks it against what the program's file can move: every moved variable one the file
    /// has, where it says, and no two destinations overlapping (a layout edited by hand, or
    /// made for another build of the program).
    pub fn check(&self, objects: &objects::Objects) -> Result<(), String> {
        let mut placed = Vec::new();
        for g in &self.globals {
            if !objects.globals.iter().any(|v| v.at == g.address as i64 && v.size == g.size) {
                return Err(format!("no movable global '{}' of {} bytes at {:#x} in the program", g.name, g.size, g.address));
            }
            placed.push((g.to as i64, g.size, &g.name));
        }
        overlap(&mut placed)?;
        for f in &self.frames {
            let Some(frame) = objects.frames.iter().find(|fr| fr.low == f.low_pc) else {
                return Err(format!("no frame that can be re-laid for function '{}' at {:#x}", f.function, f.low_pc));
            };
            let lowest = frame.locals.iter().map(|l| l.at).min().unwrap_or(0);
            let mut placed = Vec::new();
            for l in &f.locals {
                if !frame.locals.iter().any(|v| v.at == l.offset && v.size == l.size) {
                    return Err(format!("no local '{}' of {} bytes at {} in '{}'", l.name, l.size, frame.place(l.offset), f.function));
                }
                if l.to < lowest || l.to + l.size as i64 > frame.top {
                    return Err(format!("local '{}' of '{}' placed outside its frame", l.name, f.function));
                }
                placed.push((l.to, l.size, &l.name));
            }
            // The locals that stay keep their slots.
            placed.extend(frame.locals.iter().filter(|v| !f.locals.iter().any(|l| l.offset == v.at)).map(|v| (v.at, v.size, &v.name)));
            overlap(&mut placed)?;
        }
        Ok(())
    }
}

/// Where a layout a search found is saved: `given` (never a file that exists), else a new
/// `rtgrind-layout[-N].json` in the current directory.
pub fn new_file(given: Option<&Path>) -> Result<std::path::PathBuf, String> {
    if let Some(p) = given {
        if p.exists() {
            return Err(format!("--layout-out: '{}' exists; not overwriting it", p.display()));
        }
        return Ok(p.to_path_buf());
    }
    let name = |n: u32| if n == 1 { "rtgrind-layout.json".to_string() } else { format!("rtgrind-layout-{n}.json") };
    Ok((1..).map(|n| std::path::PathBuf::from(name(n))).find(|p| !p.exists()).expect("a free name"))
}

/// An error naming two variables whose places overlap.
fn overlap(placed: &mut [(i64, u64, &String)]) -> Result<(), String> {
    placed.sort();
    match placed.windows(2).find(|w| w[0].0 + w[0].1 as i64 > w[1].0) {
        Some(w) => Err(format!("'{}' and '{}' overlap in the layout", w[0].2, w[1].2)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::Layout;

    #[test]
    fn a_reports_line_names_three_pairs_and_counts_the_rest() {
        let with = |n: usize| Layout { pairs: (0..n).map(|i| format!("p{i}")).collect(), ..Layout::default() }.summary();
        assert_eq!(with(1), "p0");
        assert_eq!(with(3), "p0; p1; p2");
        assert_eq!(with(4), "p0; p1; p2; and 1 more pair");
        assert_eq!(with(90), "p0; p1; p2; and 87 more pairs");
    }
}
