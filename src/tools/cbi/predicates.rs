//! The instrumentation run of `--tool=cbi` (`--cbi-out=FILE`, internal): the main program's
//! predicates counted inline, per site a few counters in a table of its own.
//!
//! - A conditional branch counts its executions and how often it was taken (predicates
//!   "taken" and "not taken").
//! - A call's return site counts the sign of the value returned (`< 0`, `== 0`, `> 0`) when
//!   the function called returns an integer or a pointer by its DWARF (`locations`), at the
//!   width and signedness of that type: an unsigned integer or a pointer only `== 0` and `> 0`
//!   (`Kind::UnsignedReturn`); a void function none. A function without DWARF (a library's,
//!   through the PLT) or an indirect call: when the return site's first instruction reads
//!   rax/eax, as a signed value.
//! - Scalar pairs, after an assignment to an integer variable, count how the value assigned
//!   compares (`<`, `==`, `>`) with each of the function's other integer variables (the first
//!   `pair_sites::MAX_PAIRS`). In an rbp-framed function (`-O0`) an assignment is a store to a
//!   local's frame slot, compared with the other locals' slots. Elsewhere (optimized code) it
//!   is an instruction that writes the register or frame slot DWARF's location lists put a
//!   variable in just after it, compared with the other variables of the same scope that have
//!   a place of their own there (a register, read where the engine keeps the guest's value, its
//!   spill slot if lent; or a slot from rsp, rbp or the CFA). Values are sign- or
//!   zero-extended as their types say (`pair_sites`).
//!
//! With `--sample=1/N` each site first decrements a per-thread countdown in the tool area and
//! counts only when it reaches 0, and a call-out draws the next countdown from a geometric
//! distribution of mean N (the paper's sampling); without it every execution counts. At the
//! end the counts go to FILE (`Site` lines), and the basic blocks to FILE.blocks as
//! `--tool=count --coverage-out` writes them (spectra's baseline ranking, and the differential
//! test of the branch counts).

use super::super::count::Count;
use super::super::{cmov_cc, ToolRun};
use super::locations::{Program, Scalar};
use super::pair_sites::{load, Finder};
use crate::kernel::memory::GuestMemory;
use crate::layout::objects::{rbp_integer_locals, Frame};
use crate::report::symbols::{Callees, Modules, SymbolCache};
use crate::report::Reporter;
use rtgrind_jit::iced_x86::{FlowControl, Mnemonic, OpAccess, Register};
use rtgrind_jit::instrument::code_asm::*;
use rtgrind_jit::instrument::{tool_area, Inline, InsnSite, Tool};
use rtgrind_jit::ThreadContext;
use std::collections::HashMap;
use std::path::PathBuf;

/// What a site counts: a branch [executions, taken]; a return [executions, < 0, == 0, > 0];
/// a scalar pair [executions, <, ==, >].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Branch,
    Return,
    /// A return of an unsigned integer or a pointer (DWARF): only `== 0` and `> 0` mean
    /// anything.
    UnsignedReturn,
    Pair,
}

/// One site's counts, as the run writes them and the ranking reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    pub kind: Kind,
    /// The site's file address in the main program: the branch, the return address, the store.
    pub at: u64,
    /// Which pair of the store's (0 for the others).
    pub k: u32,
    /// Executions counted (sampled ones with `--sample`), then the predicates' true counts.
    pub counts: Vec<u64>,
    /// A branch: the file addresses it goes to, taken and not ("to next", hex); a return: the
    /// function called, if known; a pair: the local stored and the one compared ("x y").
    pub detail: String,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Branch => "branch",
            Kind::Return => "return",
            Kind::UnsignedReturn => "return-unsigned",
            Kind::Pair => "pair",
        }
    }
}

impl Site {
    /// One line of the counts file.
    fn line(&self) -> String {
        let counts: Vec<String> = self.counts.iter().map(u64::to_string).collect();
        format!("{}\t{:x}\t{}\t{}\t{}\n", self.kind.name(), self.at, self.k, counts.join("\t"), self.detail)
    }

    /// The sites a counts file holds; an error for a line it cannot read.
    pub fn read(path: &std::path::Path) -> Result<Vec<Site>, String> {
        let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
        text.lines().map(|l| Site::parse(l).ok_or_else(|| format!("{}: a line it cannot read: '{l}'", path.display()))).collect()
    }

    fn parse(line: &str) -> Option<Site> {
        let f: Vec<&str> = line.split('\t').collect();
        let name = *f.first()?;
        let kind = [Kind::Branch, Kind::Return, Kind::UnsignedReturn, Kind::Pair].into_iter().find(|k| k.name() == name)?;
        let n = if kind == Kind::Branch { 2 } else { 4 };
        let at = u64::from_str_radix(f.get(1)?, 16).ok()?;
        let k = f.get(2)?.parse().ok()?;
        let counts = f.get(3..3 + n)?.iter().map(|c| c.parse().ok()).collect::<Option<Vec<u64>>>()?;
        Some(Site { kind, at, k, counts, detail: f.get(3 + n).unwrap_or(&"").to_string() })
    }
}

/// A site's counters. Tables are never freed or moved: translated code holds their addresses.
struct Counted {
    kind: Kind,
    /// Its guest address, and which pair of the store's.
    pc: u64,
    k: u32,
    /// A branch: where it goes (guest addresses); a return: the call's target (0: indirect).
    to: (u64, u64),
    /// A pair: the locals' names.
    names: String,
    table: Box<[u64; 4]>,
}

pub struct Predicates {
    out: PathBuf,
    program: String,
    /// The main program's mapped range (known at `start`) and what to subtract from a guest
    /// address of it for its file address.
    main: (u64, u64),
    bias: u64,
    /// The integer locals of its rbp-framed functions (file addresses, DWARF).
    frames: Vec<Frame>,
    /// Its other functions' integer variables where DWARF locates them, and what its
    /// functions return.
    dwarf: Program,
    /// The main program's file.
    path: String,
    /// `--sample`'s N (None: every execution counts) and the tool-area bytes of the
    /// countdown and of the random state.
    sample: Option<u64>,
    area: usize,
    seed: u64,
    sites: Vec<Counted>,
    by_pc: HashMap<(Kind, u64, u32), usize>,
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
        Ok(Predicates {
            out,
            program,
            main: (0, 0),
            bias: 0,
            frames: Vec::new(),
            dwarf: Program::default(),
            path: String::new(),
            sample,
            area,
            seed,
            sites: Vec::new(),
            by_pc: HashMap::new(),
            returns: HashMap::new(),
            threads: 0,
            count,
        })
    }

    /// The counters of site `k` at `pc` (made on first use; a retranslation keeps them).
    fn table(&mut self, kind: Kind, pc: u64, k: u32, to: (u64, u64), names: String) -> u64 {
        let i = *self.by_pc.entry((kind, pc, k)).or_insert_with(|| {
            self.sites.push(Counted { kind, pc, k, to, names, table: Box::new([0; 4]) });
            self.sites.len() - 1
        });
        self.sites[i].table.as_ptr() as u64
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
        let table = self.table(Kind::Branch, ins.ip(), 0, (ins.near_branch_target(), ins.next_ip()), String::new());
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

    /// At the first instruction of a call's return site: the sign of the value returned, if
    /// the function called returns an integer or a pointer.
    fn returned(&mut self, site: &InsnSite, callee: u64, b: &mut Inline) {
        let typed = if callee == 0 { None } else { self.dwarf.returns.get(&callee.wrapping_sub(self.bias)) };
        let ty = match typed {
            Some(None) => return,
            Some(Some(ty)) => *ty,
            // A function without DWARF (a library's, called through the PLT) or an indirect
            // call: a value is returned if the return site's first instruction reads rax/eax
            // (signed, as C's int and long mostly are).
            None => {
                let reads = |r: Register| {
                    site.info
                        .used_registers()
                        .iter()
                        .any(|u| u.register() == r && matches!(u.access(), OpAccess::Read | OpAccess::ReadWrite | OpAccess::CondRead | OpAccess::ReadCondWrite))
                };
                let size = if reads(Register::RAX) {
                    8
                } else if reads(Register::EAX) {
                    4
                } else {
                    return;
                };
                Scalar { size, signed: true, pointer: false }
            }
        };
        let kind = if ty.signed { Kind::Return } else { Kind::UnsignedReturn };
        let table = self.table(kind, site.ins.ip(), 0, (callee, 0), String::new());
        b.clobber_flags();
        let p = b.scratch();
        b.asm().mov(p, table).unwrap();
        let mut skip = b.asm().create_label();
        self.countdown(b, skip);
        let a = b.asm();
        a.add(qword_ptr(p), 1).unwrap();
        match ty.size {
            8 => a.test(rax, rax),
            4 => a.test(eax, eax),
            2 => a.test(ax, ax),
            _ => a.test(al, al),
        }
        .unwrap();
        three_way(a, p, ty.signed, skip);
        a.set_label(&mut skip).unwrap();
        a.nop().unwrap();
    }

    /// After an assignment to an integer variable: the value assigned compared with each
    /// other variable's.
    fn pairs(&mut self, site: &InsnSite, b: &mut Inline) {
        let finder = Finder { frames: &self.frames, dwarf: &self.dwarf, path: &self.path, bias: self.bias };
        let Some(ps) = finder.site(site.ins, site.info) else { return };
        let tables: Vec<u64> = ps.names.iter().enumerate().map(|(k, n)| self.table(Kind::Pair, site.ins.ip(), k as u32, (0, 0), n.clone())).collect();
        b.clobber_flags();
        let (p, t, u) = (b.scratch(), b.scratch(), b.scratch());
        // Guest registers lent out (now or earlier) are read from their spill slots.
        let spilled = b.spilled();
        let mut skip = b.asm().create_label();
        self.countdown(b, skip);
        let a = b.asm();
        load(a, t, ps.stored, spilled);
        for (&other, table) in ps.others.iter().zip(tables) {
            let mut next = a.create_label();
            load(a, u, other, spilled);
            a.mov(p, table).unwrap();
            a.add(qword_ptr(p), 1).unwrap();
            a.cmp(t, u).unwrap();
            three_way(a, p, true, next);
            a.set_label(&mut next).unwrap();
            a.nop().unwrap();
        }
        a.set_label(&mut skip).unwrap();
        a.nop().unwrap();
    }

    /// The sites reached, as file addresses of the main program.
    fn sites(&self, mem: &GuestMemory) -> Vec<Site> {
        let mut syms = SymbolCache::default();
        let (path, _) = super::super::main_module(mem, &self.program);
        let callees = Callees::of(&path, mem);
        let file = |a: u64| a.wrapping_sub(self.bias);
        let mut out = Vec::new();
        for c in self.sites.iter().filter(|c| c.table[0] > 0) {
            let detail = match c.kind {
                Kind::Branch => format!("{:x} {:x}", file(c.to.0), file(c.to.1)),
                Kind::Return | Kind::UnsignedReturn => callees
                    .as_ref()
                    .and_then(|callees| callees.name(c.pc))
                    .or_else(|| (c.to.0 != 0).then(|| syms.lookup(c.to.0, mem)).flatten().and_then(|(f, _, _)| f))
                    .unwrap_or_default(),
                Kind::Pair => c.names.clone(),
            };
            let n = if c.kind == Kind::Branch { 2 } else { 4 };
            out.push(Site { kind: c.kind, at: file(c.pc), k: c.k, counts: c.table[..n].to_vec(), detail });
        }
        out.sort_by_key(|s| (s.at, s.kind, s.k));
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

/// After a `test` or `cmp`: adds 1 to the table at `p`'s second word if less (signed only),
/// third if equal, fourth if greater (unsigned: not equal); then jumps to `done`.
fn three_way(a: &mut CodeAssembler, p: AsmRegister64, signed: bool, done: CodeLabel) {
    let (mut lt, mut eq) = (a.create_label(), a.create_label());
    if signed {
        a.jl(lt).unwrap();
    }
    a.je(eq).unwrap();
    a.add(qword_ptr(p + 24), 1).unwrap();
    a.jmp(done).unwrap();
    a.set_label(&mut lt).unwrap();
    a.add(qword_ptr(p + 8), 1).unwrap();
    a.jmp(done).unwrap();
    a.set_label(&mut eq).unwrap();
    a.add(qword_ptr(p + 16), 1).unwrap();
    a.jmp(done).unwrap();
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
    crate::tools::callouts::note(crate::tools::callouts::Kind::CbiNextCountdown);
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

    fn after_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        if (self.main.0..self.main.1).contains(&site.ins.ip()) {
            self.pairs(site, b);
        }
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
        let (path, main) = super::super::main_module(mem, &self.program);
        self.main = main;
        if let Some((_, base)) = mem.module_at(main.0) {
            let first = crate::report::symbols::in_file(&path, 0).map_or(0, |(at, _)| at);
            self.bias = base.wrapping_sub(first);
        }
        self.frames = rbp_integer_locals(&path);
        self.dwarf = Program::read(&path);
        self.path = path;
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
        let s = Site { kind: Kind::Return, at: 0x1234, k: 0, counts: vec![5, 1, 2, 2], detail: "atoi".into() };
        assert_eq!(Site::parse(s.line().trim_end()), Some(s));
        let b = Site { kind: Kind::Branch, at: 0x10, k: 0, counts: vec![3, 1], detail: "20 12".into() };
        assert_eq!(Site::parse(b.line().trim_end()), Some(b));
        let p = Site { kind: Kind::Pair, at: 0x10, k: 3, counts: vec![3, 1, 1, 1], detail: "len width".into() };
        assert_eq!(Site::parse(p.line().trim_end()), Some(p));
        let u = Site { kind: Kind::UnsignedReturn, at: 0x20, k: 0, counts: vec![4, 0, 1, 3], detail: "strlen".into() };
        assert_eq!(Site::parse(u.line().trim_end()), Some(u));
        assert_eq!(Site::parse("branch\tzz\t0\t1\t0\t"), None);
        assert_eq!(Site::parse("jump\t10\t0\t1\t0\t"), None);
        assert_eq!(Site::parse("pair\t10\t0\t1\t0\t"), None);
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
