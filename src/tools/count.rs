//! `--tool=count`: counts executed instructions, blocks, loads, stores, conditional
//! branches (taken / not taken), indirect jumps and calls, and returns, in total (and all but
//! the last two with `--per-function` per function). Like
//! Valgrind's lackey, but the counting is inline: each basic block (a translated block's
//! start, and each fall-through past a conditional branch inside it) adds one to its own
//! counter as it is entered and each conditional branch adds its outcome with a flag-free
//! `cmov`; the per-instruction figures are the basic block's static counts times its
//! executions, summed at the end.
//!
//! Counts are exact for basic blocks that run to their end. A block left early by a fault is still
//! counted whole, and a `rep`-prefixed instruction counts once however often it repeats
//! (lackey counts each repetition).

use super::{cmov_cc, ToolRun};
use crate::kernel::memory::GuestMemory;
use crate::report::symbols::SymbolCache;
use crate::report::Reporter;
use rtgrind_jit::iced_x86::{FlowControl, Mnemonic, OpAccess};
use rtgrind_jit::instrument::code_asm::*;
use rtgrind_jit::instrument::{Inline, InsnSite, Tool};
use rtgrind_jit::ThreadContext;
use std::collections::{BTreeMap, HashMap};

/// Counter pages are never freed or moved: translated code holds their addresses.
const PAGE_SLOTS: usize = 4096;

/// What one basic block contains, counted when it was translated.
#[derive(Default, Clone, Copy)]
struct Static {
    insns: u64,
    loads: u64,
    stores: u64,
    /// Whether the block ends in a conditional branch.
    cond: bool,
    /// Whether it ends in an indirect jump or call, or in a return.
    indirect: bool,
    ret: bool,
    /// Where its last instruction ends, and (if it is a conditional branch) starts.
    end: u64,
    last: u64,
}

#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Totals {
    pub blocks: u64,
    pub insns: u64,
    pub loads: u64,
    pub stores: u64,
    pub cond_taken: u64,
    pub cond_not_taken: u64,
    /// Indirect jumps and calls, and returns (what the engine looks up in its tables).
    pub indirect: u64,
    pub returns: u64,
}

impl Totals {
    fn add(&mut self, s: &Static, runs: u64, taken: u64) {
        self.blocks += runs;
        self.insns += s.insns * runs;
        self.loads += s.loads * runs;
        self.stores += s.stores * runs;
        if s.cond {
            self.cond_taken += taken;
            self.cond_not_taken += runs - taken;
        }
        self.indirect += s.indirect as u64 * runs;
        self.returns += s.ret as u64 * runs;
    }
}

/// `--tool=count`'s options.
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "Options of --tool=count")]
pub struct Options {
    /// Also break the counts down by function.
    #[arg(long)]
    pub per_function: bool,
    /// Write each basic block the run entered, with its counts, to FILE (a test-suite
    /// search's coverage: `Coverage`).
    #[arg(long, value_name = "FILE", hide = true)]
    pub coverage_out: Option<std::path::PathBuf>,
    /// (Benchmark) also call out to an empty function at every basic block's start, through
    /// the full call-out or the light one: the cost of one call-out (benches/callout.sh).
    #[arg(long, value_enum, value_name = "full|light", hide = true)]
    pub callout_bench: Option<CalloutBench>,
}

/// Which call-out `--callout-bench` makes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CalloutBench {
    Full,
    Light,
}

extern "C" fn bench_full(_ctx: *mut ThreadContext, _arg: u64) {
    super::callouts::note(super::callouts::Kind::CountBenchFull);
}

extern "C" fn bench_light(_ctx: *mut ThreadContext, _arg: u64) {
    super::callouts::note(super::callouts::Kind::CountBenchLight);
}

/// `--tool=count`: the run's instrumentation.
pub fn make(cli: &crate::cli::Cli) -> Result<Box<dyn ToolRun>, super::Error> {
    let mut count = Count::new(cli.count.per_function);
    count.coverage_out = cli.count.coverage_out.clone();
    count.callout_bench = cli.count.callout_bench;
    Ok(Box::new(count))
}

pub struct Count {
    per_function: bool,
    pub(super) coverage_out: Option<std::path::PathBuf>,
    /// Each block's (executions, branch taken) counters.
    pages: Vec<Box<[[u64; 2]; PAGE_SLOTS]>>,
    slots: Vec<(u64, Static)>,
    /// Slots by (translated block's start, basic block's start): a basic block inside a
    /// translated block ends where that block does, so it is counted apart from a translated
    /// block that starts at the same address.
    by_pc: HashMap<(u64, u64), usize>,
    /// The translated block and the basic block being translated.
    block: u64,
    current: usize,
    callout_bench: Option<CalloutBench>,
}

impl Count {
    pub fn new(per_function: bool) -> Count {
        Count { per_function, coverage_out: None, pages: Vec::new(), slots: Vec::new(), by_pc: HashMap::new(), block: 0, current: 0, callout_bench: None }
    }

    fn counter(&mut self, slot: usize) -> *mut [u64; 2] {
        while self.pages.len() <= slot / PAGE_SLOTS {
            self.pages.push(Box::new([[0; 2]; PAGE_SLOTS]));
        }
        &mut self.pages[slot / PAGE_SLOTS][slot % PAGE_SLOTS]
    }

    fn runs(&self, slot: usize) -> [u64; 2] {
        self.pages[slot / PAGE_SLOTS][slot % PAGE_SLOTS]
    }

    /// A basic block starts at `pc`: count it in its own slot.
    fn basic_block(&mut self, pc: u64, b: &mut Inline) {
        let slot = *self.by_pc.entry((self.block, pc)).or_insert_with(|| {
            self.slots.push((pc, Static::default()));
            self.slots.len() - 1
        });
        // A retranslation counts its instructions afresh.
        self.slots[slot].1 = Static::default();
        self.current = slot;
        let addr = self.counter(slot) as u64;
        increment(b, addr);
        match self.callout_bench {
            Some(CalloutBench::Full) => {
                let t = b.scratch();
                b.callout(bench_full, 0, t);
            }
            Some(CalloutBench::Light) => {
                let t = b.scratch();
                b.callout_light(bench_light, 0, t);
            }
            None => {}
        }
    }

    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for (i, (_, s)) in self.slots.iter().enumerate() {
            let [runs, taken] = self.runs(i);
            t.add(s, runs, taken);
        }
        t
    }
}

/// `add qword [addr], 1` without touching the flags: load, `lea`, store.
fn increment(b: &mut Inline, addr: u64) {
    let (p, v) = (b.scratch(), b.scratch());
    let a = b.asm();
    a.mov(p, addr).unwrap();
    a.mov(v, qword_ptr(p)).unwrap();
    a.lea(v, qword_ptr(v + 1)).unwrap();
    a.mov(qword_ptr(p), v).unwrap();
}

impl Tool for Count {
    fn block_start(&mut self, pc: u64, b: &mut Inline) {
        self.block = pc;
        self.basic_block(pc, b);
    }

    fn fall_through(&mut self, pc: u64, b: &mut Inline) {
        self.basic_block(pc, b);
    }

    fn before_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        let s = &mut self.slots[self.current].1;
        s.insns += 1;
        s.last = site.ins.ip();
        s.end = site.ins.next_ip();
        for m in site.info.used_memory() {
            match m.access() {
                OpAccess::Read | OpAccess::CondRead => s.loads += 1,
                OpAccess::Write | OpAccess::CondWrite => s.stores += 1,
                OpAccess::ReadWrite | OpAccess::ReadCondWrite => {
                    s.loads += 1;
                    s.stores += 1;
                }
                _ => {}
            }
        }
        match site.ins.flow_control() {
            FlowControl::IndirectBranch | FlowControl::IndirectCall => s.indirect = true,
            FlowControl::Return => s.ret = true,
            _ => {}
        }
        if site.ins.flow_control() != FlowControl::ConditionalBranch {
            return;
        }
        s.cond = true;
        let taken_addr = self.counter(self.current) as u64 + 8;
        let (p, v, w) = (b.scratch(), b.scratch(), b.scratch());
        let ins = site.ins;
        let cc = ins.condition_code();
        let rcx_counted = matches!(ins.mnemonic(), Mnemonic::Jrcxz | Mnemonic::Jecxz | Mnemonic::Loop | Mnemonic::Loope | Mnemonic::Loopne);
        if rcx_counted {
            // Taken when rcx is 0 (jrcxz) or, for loop, when rcx is not 1 before the decrement
            // (loope/loopne are counted as loop).
            b.clobber_flags();
        }
        let a = b.asm();
        a.mov(p, taken_addr).unwrap();
        a.mov(v, qword_ptr(p)).unwrap();
        a.lea(w, qword_ptr(v + 1)).unwrap();
        if rcx_counted {
            if matches!(ins.mnemonic(), Mnemonic::Jrcxz | Mnemonic::Jecxz) {
                a.test(rcx, rcx).unwrap();
                a.cmove(v, w).unwrap();
            } else {
                a.cmp(rcx, 1).unwrap();
                a.cmovne(v, w).unwrap();
            }
        } else {
            cmov_cc(a, cc, v, w);
        }
        a.mov(qword_ptr(p), v).unwrap();
    }
}

impl Count {
    /// `--coverage-out`'s file, if asked for.
    pub(super) fn write_coverage(&self, report: &mut Reporter, mem: &GuestMemory) {
        if let Some(f) = &self.coverage_out {
            if let Err(e) = std::fs::write(f, self.coverage(mem)) {
                report.error(&format!("cannot write {}: {e}", f.display()));
            }
        }
    }

    /// The basic blocks entered, for `--coverage-out`: one line each, `module`, then in hex
    /// its file addresses (start, end, and its conditional branch or 0) and in decimal its
    /// executions and branches taken. Blocks outside a module file (generated code) are left out.
    fn coverage(&self, mem: &GuestMemory) -> String {
        use crate::report::symbols::Modules;
        let mut out = String::new();
        // Each module's first virtual address, read from its file once.
        let mut first_vaddr: HashMap<String, Option<u64>> = HashMap::new();
        for (i, (pc, s)) in self.slots.iter().enumerate() {
            let [runs, taken] = self.runs(i);
            let Some((path, base)) = (runs > 0).then(|| mem.module_at(*pc)).flatten() else { continue };
            let first = *first_vaddr.entry(path.clone()).or_insert_with(|| crate::report::symbols::in_file(&path, 0).map(|(at, _)| at));
            let Some(start) = first.map(|f| f + (pc - base)) else { continue };
            let file = |a: u64| start + (a - pc);
            let branch = if s.cond { file(s.last) } else { 0 };
            out.push_str(&format!("{path}\t{start:x}\t{:x}\t{branch:x}\t{runs}\t{taken}\n", file(s.end.max(*pc))));
        }
        out
    }
}

/// A run's `--coverage-out` file, read back: the basic blocks it entered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Covered {
    pub module: String,
    /// File addresses: `[start, end)`, and the conditional branch that ends it (0: none).
    pub start: u64,
    pub end: u64,
    pub branch: u64,
    pub runs: u64,
    pub taken: u64,
}

impl Covered {
    pub fn read(path: &std::path::Path) -> std::io::Result<Vec<Covered>> {
        let text = std::fs::read_to_string(path)?;
        Ok(text
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                let [module, start, end, branch, runs, taken] = f[..] else { return None };
                let hex = |s: &str| u64::from_str_radix(s, 16).ok();
                Some(Covered {
                    module: module.to_string(),
                    start: hex(start)?,
                    end: hex(end)?,
                    branch: hex(branch)?,
                    runs: runs.parse().ok()?,
                    taken: taken.parse().ok()?,
                })
            })
            .collect())
    }
}

impl ToolRun for Count {
    fn fini(&mut self, report: &mut Reporter, mem: &GuestMemory) {
        self.write_coverage(report, mem);
        let t = self.totals();
        let pct = |n: u64, d: u64| if d == 0 { 0.0 } else { 100.0 * n as f64 / d as f64 };
        let cond = t.cond_taken + t.cond_not_taken;
        report.line(&format!("count: instructions:         {:>15}", t.insns));
        report.line(&format!("count: blocks:               {:>15}", t.blocks));
        report.line(&format!("count: loads:                {:>15}", t.loads));
        report.line(&format!("count: stores:               {:>15}", t.stores));
        report.line(&format!("count: conditional branches: {:>15}", cond));
        report.line(&format!("count:   taken:              {:>15} ({:.1}%)", t.cond_taken, pct(t.cond_taken, cond)));
        report.line(&format!("count:   not taken:          {:>15} ({:.1}%)", t.cond_not_taken, pct(t.cond_not_taken, cond)));
        report.line(&format!("count: indirect jumps, calls: {:>14}", t.indirect));
        report.line(&format!("count: returns:              {:>15}", t.returns));
        if !self.per_function {
            return;
        }
        let mut syms = SymbolCache::default();
        let mut by_fn: BTreeMap<String, Totals> = BTreeMap::new();
        for (i, (pc, s)) in self.slots.iter().enumerate() {
            let [runs, taken] = self.runs(i);
            if runs == 0 {
                continue;
            }
            let name = match syms.lookup(*pc, mem) {
                Some((Some(f), _, module)) => format!("{f} ({})", short(&module)),
                Some((None, _, module)) => format!("??? ({})", short(&module)),
                None => format!("??? ({pc:#x})"),
            };
            by_fn.entry(name).or_default().add(s, runs, taken);
        }
        let mut rows: Vec<_> = by_fn.into_iter().collect();
        rows.sort_by(|a, b| b.1.insns.cmp(&a.1.insns).then(a.0.cmp(&b.0)));
        report.line(&format!("count: {:>14} {:>12} {:>12} {:>12} {:>12}  function", "instructions", "loads", "stores", "taken", "not taken"));
        for (name, t) in rows {
            report.line(&format!("count: {:>14} {:>12} {:>12} {:>12} {:>12}  {name}", t.insns, t.loads, t.stores, t.cond_taken, t.cond_not_taken));
        }
    }
}

fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    /// `--callout-bench=light`'s function keeps to the light call-out's contract, counting
    /// included (`tools::light_check`).
    #[test]
    fn the_light_bench_call_out_keeps_its_contract() {
        crate::tools::callouts::enable();
        let breaches = crate::tools::light_check::breaches(super::bench_light as *const () as usize);
        assert!(breaches.is_empty(), "{}", breaches.join("\n"));
    }
}
