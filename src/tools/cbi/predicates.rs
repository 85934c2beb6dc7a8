//! The instrumentation run of `--tool=cbi` (`--cbi-out=FILE`, internal): the main program's
//! predicates counted inline, per site a few counters in a table of its own. A conditional
//! branch counts its executions and how often it was taken (predicates "taken" and "not
//! taken"); the return site of a call whose first instruction reads rax/eax counts the sign of
//! the value returned (`< 0`, `== 0`, `> 0`). With `--sample=1/N` each site first decrements a
//! per-thread countdown in the tool area and counts only when it reaches 0, and a call-out
//! draws the next countdown from a geometric distribution of mean N (the paper's sampling);
//! without it every execution counts. At the end the counts go to FILE (`Site` lines), and
//! the basic blocks to FILE.blocks as `--tool=count --coverage-out` writes them (spectra's
//! baseline ranking, and the differential test of the branch counts).

use super::super::count::Count;
use super::super::{cmov_cc, ToolRun};
use crate::kernel::memory::GuestMemory;
use crate::report::symbols::{Callees, SymbolCache};
use crate::report::Reporter;
use rtgrind_jit::iced_x86::{FlowControl, Mnemonic, OpAccess, Register};
use rtgrind_jit::instrument::code_asm::*;
use rtgrind_jit::instrument::{tool_area, Inline, InsnSite, Tool};
use rtgrind_jit::ThreadContext;
use std::collections::HashMap;
use std::path::PathBuf;

/// What a site counts: a branch [executions, taken]; a return [executions, < 0, == 0, > 0].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Branch,
    Return,
}

/// One site's counts, as the run writes them and the ranking reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    pub kind: Kind,
    /// The site's file address in the main program: the branch, or the return address.
    pub at: u64,
    /// Executions counted (sampled ones with `--sample`), then the predicates' true counts.
    pub counts: Vec<u64>,
    /// For a return site: the function called, if known.
    pub callee: String,
}

impl Site {
    /// One line of the counts file.
    fn line(&self) -> String {
        let kind = if self.kind == Kind::Branch { "branch" } else { "return" };
        let counts: Vec<String> = self.counts.iter().map(u64::to_string).collect();
        format!("{kind}\t{:x}\t{}\t{}\n", self.at, counts.join("\t"), self.callee)
    }

    /// The sites a counts file holds; an error for a line it cannot read.
    pub fn read(path: &std::path::Path) -> Result<Vec<Site>, String> {
        let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
        text.lines().map(|l| Site::parse(l).ok_or_else(|| format!("{}: a line it cannot read: '{l}'", path.display()))).collect()
    }

    fn parse(line: &str) -> Option<Site> {
        let f: Vec<&str> = line.split('\t').collect();
        let (kind, n) = match *f.first()? {
            "branch" => (Kind::Branch, 2),
            "return" => (Kind::Return, 4),
            _ => return None,
        };
        let at = u64::from_str_radix(f.get(1)?, 16).ok()?;
        let counts = f.get(2..2 + n)?.iter().map(|c| c.parse().ok()).collect::<Option<Vec<u64>>>()?;
        Some(Site { kind, at, counts, callee: f.get(2 + n).unwrap_or(&"").to_string() })
    }
}

/// Counter tables are never freed or moved: translated code holds their addresses.
type Table = Box<[u64; 4]>;

pub struct Predicates {
    out: PathBuf,
    program: String,
    /// The main program's mapped range (known at `start`).
    main: (u64, u64),
    /// `--sample`'s N (None: every execution counts) and the tool-area bytes of the
    /// countdown and of the random state.
    sample: Option<u64>,
    area: usize,
    seed: u64,
    sites: Vec<(Kind, u64, u64, Table)>,
    by_pc: HashMap<u64, usize>,
    /// Return addresses of the calls translated, with the call's target (0: indirect).
    returns: HashMap<u64, u64>,
    /// Threads given a random state so far.
    threads: u64,
    count: Count,
}

impl Predicates {
    pub fn new(out: PathBuf, program: String, sample: Option<u64>, seed: u64) -> Result<Predicates, super::super::Error> {
        let area = rtgrind_jit::claims::claim_area("cbi's sampling countdown", 16).map_err(|e| super::super::Error::internal(e.to_string()))?;
        let mut count = Count::new(false);
        count.coverage_out = Some(blocks_file(&out));
        Ok(Predicates { out, program, main: (0, 0), sample, area, seed, sites: Vec::new(), by_pc: HashMap::new(), returns: HashMap::new(), threads: 0, count })
    }

    /// The counters of the site at `pc` (made on first use; a retranslation keeps them).
    fn table(&mut self, kind: Kind, pc: u64, callee: u64) -> u64 {
        let i = *self.by_pc.entry(pc).or_insert_with(|| {
            self.sites.push((kind, pc, callee, Box::new([0; 4])));
            self.sites.len() - 1
        });
        self.sites[i].3.as_ptr() as u64
    }

    /// With sampling: the countdown decremented, and a jump to `skip` unless it reached 0 (then
    /// the call-out draws the next one). Clobbers the flags.
    fn countdown(&self, b: &mut Inline, skip: CodeLabel) {
        let Some(n) = self.sample else { return };
        b.clobber_flags();
        let t = b.scratch();
        let a = b.asm();
        a.dec(qword_ptr(tool_area(self.area)).gs()).unwrap();
        a.jnz(skip).unwrap();
        b.callout(next_countdown, n | (self.area as u64) << 48, t);
    }

    fn branch(&mut self, site: &InsnSite, b: &mut Inline) {
        let ins = site.ins;
        let table = self.table(Kind::Branch, ins.ip(), 0);
        let (p, v, w) = (b.scratch(), b.scratch(), b.scratch());
        let rcx_counted = matches!(ins.mnemonic(), Mnemonic::Jrcxz | Mnemonic::Jecxz | Mnemonic::Loop | Mnemonic::Loope | Mnemonic::Loopne);
        if rcx_counted {
            b.clobber_flags();
        }
        // The taken count's new value first, while the flags are the guest's.
        let a = b.asm();
        a.mov(p, table).unwrap();
        a.mov(v, qword_ptr(p + 8)).unwrap();
        a.lea(w, qword_ptr(v + 1)).unwrap();
        match ins.mnemonic() {
            Mnemonic::Jrcxz | Mnemonic::Jecxz => {
                a.test(rcx, rcx).unwrap();
                a.cmove(v, w).unwrap();
            }
            // (loope/loopne are counted as loop: taken when rcx is not 1 before it.)
            Mnemonic::Loop | Mnemonic::Loope | Mnemonic::Loopne => {
                a.cmp(rcx, 1).unwrap();
                a.cmovne(v, w).unwrap();
            }
            _ => cmov_cc(a, ins.condition_code(), v, w),
        }
        let mut skip = b.asm().create_label();
        self.countdown(b, skip);
        let a = b.asm();
        a.mov(qword_ptr(p + 8), v).unwrap();
        a.mov(v, qword_ptr(p)).unwrap();
        a.lea(v, qword_ptr(v + 1)).unwrap();
        a.mov(qword_ptr(p), v).unwrap();
        a.set_label(&mut skip).unwrap();
        a.nop().unwrap();
    }

    /// At the first instruction of a call's return site, if it reads the value returned.
    fn returned(&mut self, site: &InsnSite, callee: u64, b: &mut Inline) {
        let read = |r: Register| {
            site.info
                .used_registers()
                .iter()
                .any(|u| u.register() == r && matches!(u.access(), OpAccess::Read | OpAccess::ReadWrite | OpAccess::CondRead | OpAccess::ReadCondWrite))
        };
        let wide = read(Register::RAX);
        if !wide && !read(Register::EAX) {
            return;
        }
        let table = self.table(Kind::Return, site.ins.ip(), callee);
        b.clobber_flags();
        let p = b.scratch();
        b.asm().mov(p, table).unwrap();
        let mut skip = b.asm().create_label();
        self.countdown(b, skip);
        let a = b.asm();
        let (mut neg, mut zero) = (a.create_label(), a.create_label());
        a.add(qword_ptr(p), 1).unwrap();
        if wide {
            a.test(rax, rax).unwrap();
        } else {
            a.test(eax, eax).unwrap();
        }
        a.js(neg).unwrap();
        a.jz(zero).unwrap();
        a.add(qword_ptr(p + 24), 1).unwrap();
        a.jmp(skip).unwrap();
        a.set_label(&mut neg).unwrap();
        a.add(qword_ptr(p + 8), 1).unwrap();
        a.jmp(skip).unwrap();
        a.set_label(&mut zero).unwrap();
        a.add(qword_ptr(p + 16), 1).unwrap();
        a.set_label(&mut skip).unwrap();
        a.nop().unwrap();
    }

    /// The sites reached, as file addresses of the main program.
    fn sites(&self, mem: &GuestMemory) -> Vec<Site> {
        let mut syms = SymbolCache::default();
        let (path, _) = super::super::main_module(mem, &self.program);
        let callees = Callees::of(&path, mem);
        let mut out = Vec::new();
        for (kind, pc, callee, t) in &self.sites {
            if t[0] == 0 {
                continue;
            }
            let Some((_, at)) = syms.file_address(*pc, mem) else { continue };
            let n = if *kind == Kind::Branch { 2 } else { 4 };
            let name = match kind {
                Kind::Branch => String::new(),
                Kind::Return => callees
                    .as_ref()
                    .and_then(|c| c.name(*pc))
                    .or_else(|| (*callee != 0).then(|| syms.lookup(*callee, mem)).flatten().and_then(|(f, _, _)| f))
                    .unwrap_or_default(),
            };
            out.push(Site { kind: *kind, at, counts: t[..n].to_vec(), callee: name });
        }
        out.sort_by_key(|s| (s.at, s.kind == Kind::Return));
        out
    }

    /// A thread's first countdown, from its own random state.
    fn seed_thread(&mut self, ctx: &mut ThreadContext) {
        let Some(n) = self.sample else { return };
        let k = self.threads;
        self.threads += 1;
        let w = self.area / 8;
        ctx.tool_area[w + 1] = splitmix(self.seed ^ k.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1;
        ctx.tool_area[w] = geometric(&mut ctx.tool_area[w + 1], n);
    }
}

/// The file of basic blocks beside the counts file `out`.
pub fn blocks_file(out: &std::path::Path) -> PathBuf {
    let mut p = out.as_os_str().to_owned();
    p.push(".blocks");
    PathBuf::from(p)
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The next countdown: geometric of mean `n` (the executions until the next one sampled,
/// that one included), from the xorshift state `state`.
pub fn geometric(state: &mut u64, n: u64) -> u64 {
    if n <= 1 {
        return 1;
    }
    let mut x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    // u uniform in (0, 1].
    let u = ((x >> 11) + 1) as f64 / (1u64 << 53) as f64;
    let k = (u.ln() / (1.0 - 1.0 / n as f64).ln()).floor();
    1 + k.min(1e15) as u64
}

/// The call-out when a countdown reaches 0: the next one. `arg` is N, and in its top 16 bits
/// the tool-area offset of the countdown.
extern "C" fn next_countdown(ctx: *mut ThreadContext, arg: u64) {
    // SAFETY: the engine calls out with the running thread's own context, which nothing else
    // touches while its code runs.
    let ctx = unsafe { &mut *ctx };
    let w = (arg >> 48) as usize / 8;
    let n = arg & ((1 << 48) - 1);
    let mut state = ctx.tool_area[w + 1];
    ctx.tool_area[w] = geometric(&mut state, n);
    ctx.tool_area[w + 1] = state;
}

impl Tool for Predicates {
    fn block_start(&mut self, pc: u64, b: &mut Inline) {
        self.count.block_start(pc, b);
    }

    fn fall_through(&mut self, pc: u64, b: &mut Inline) {
        self.count.fall_through(pc, b);
    }

    fn before_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        self.count.before_insn(site, b);
        let ins = site.ins;
        if !(self.main.0..self.main.1).contains(&ins.ip()) {
            return;
        }
        b.release_scratch();
        if let Some(&callee) = self.returns.get(&ins.ip()) {
            self.returned(site, callee, b);
            b.release_scratch();
        }
        match ins.flow_control() {
            FlowControl::ConditionalBranch => self.branch(site, b),
            FlowControl::Call => {
                self.returns.insert(ins.next_ip(), ins.near_branch_target());
            }
            FlowControl::IndirectCall => {
                self.returns.insert(ins.next_ip(), 0);
            }
            _ => {}
        }
    }
}

impl ToolRun for Predicates {
    fn start(&mut self, ctx: &mut ThreadContext, mem: &GuestMemory) {
        self.main = super::super::main_module(mem, &self.program).1;
        self.seed_thread(ctx);
    }

    fn thread_start(&mut self, child: &mut ThreadContext) {
        self.seed_thread(child);
    }

    fn fini(&mut self, report: &mut Reporter, mem: &GuestMemory) {
        let text: String = self.sites(mem).iter().map(Site::line).collect();
        if let Err(e) = std::fs::write(&self.out, text) {
            report.error(&format!("cannot write {}: {e}", self.out.display()));
        }
        self.count.write_coverage(report, mem);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_round_trip_and_bad_lines_are_refused() {
        let s = Site { kind: Kind::Return, at: 0x1234, counts: vec![5, 1, 2, 2], callee: "atoi".into() };
        assert_eq!(Site::parse(s.line().trim_end()), Some(s));
        let b = Site { kind: Kind::Branch, at: 0x10, counts: vec![3, 1], callee: String::new() };
        assert_eq!(Site::parse(b.line().trim_end()), Some(b));
        assert_eq!(Site::parse("branch\tzz\t1\t0\t"), None);
        assert_eq!(Site::parse("jump\t10\t1\t0\t"), None);
    }

    #[test]
    fn countdowns_are_geometric_with_the_mean_asked() {
        let mut state = 88172645463325252u64;
        assert!((0..100).all(|_| geometric(&mut state, 1) == 1));
        let n = 20_000;
        let sum: u64 = (0..n).map(|_| geometric(&mut state, 100)).sum();
        let mean = sum as f64 / n as f64;
        assert!((mean - 100.0).abs() < 5.0, "{mean}");
    }
}
