//! `--vr-profile=FILE`, one test's profiling run: at every use site of the main program
//! (`uses`), a call-out records the values each use reads (the value profile, at most
//! `MAX_VALUES` distinct ones a use) and, for each execution, its number among all executions of
//! use sites (the instance the forward runs of `fork` count) and the values it read. Written
//! at the end of the run (`Profiles::read` is the search's side).

use super::uses::{self, Use};
use crate::kernel::memory::GuestMemory;
use crate::report::Reporter;
use crate::tools::ToolRun;
use rtgrind_jit::iced_x86::Instruction;
use rtgrind_jit::instrument::{Inline, InsnSite, Tool};
use rtgrind_jit::ThreadContext;
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Distinct values kept per use (the profile says when a use had more).
pub const MAX_VALUES: usize = 4096;
/// Executions recorded in a run, over all sites (later ones are counted, not recorded).
pub const MAX_INSTANCES: u64 = 2_000_000;

struct Site {
    ins: Instruction,
    uses: Vec<Use>,
    count: u64,
    values: Vec<BTreeSet<i64>>,
    capped: bool,
    /// Each recorded execution: its number among all use-site executions, and its uses' values.
    instances: Vec<(u64, Vec<i64>)>,
}

#[derive(Default)]
struct State {
    /// Use-site executions so far.
    events: u64,
    sites: Vec<Site>,
}

/// What a call-out is given (boxed: translations hold its address).
struct Probe {
    site: usize,
    spilled: u16,
    state: *mut State,
}

pub struct Profile {
    out: PathBuf,
    program: String,
    main: (u64, u64),
    state: Box<State>,
    by_pc: HashMap<u64, usize>,
    /// Boxed: translations hold their addresses, which a growing Vec would move.
    #[allow(clippy::vec_box)]
    probes: Vec<Box<Probe>>,
}

impl Profile {
    pub fn new(out: PathBuf, program: String) -> Profile {
        Profile { out, program, main: (0, 0), state: Box::default(), by_pc: HashMap::new(), probes: Vec::new() }
    }
}

extern "C" fn hit(ctx: *mut ThreadContext, arg: u64) {
    crate::tools::callouts::note(crate::tools::callouts::Kind::VrHit);
    // SAFETY: rtg_callout passes this thread's context; `arg` is a Probe the tool keeps for as
    // long as translations exist, whose state is the tool's boxed State.
    let (ctx, p) = unsafe { (&*ctx, &*(arg as *const Probe)) };
    // SAFETY: as above; call-outs run one at a time (one thread holds the baton).
    let st = unsafe { &mut *p.state };
    let g = st.events;
    st.events += 1;
    let site = &mut st.sites[p.site];
    site.count += 1;
    let vals: Vec<i64> = site.uses.iter().map(|u| uses::read(ctx, p.spilled, &site.ins, u).map_or(0, |s| uses::value(&s, u))).collect();
    for (set, v) in site.values.iter_mut().zip(&vals) {
        if set.len() < MAX_VALUES {
            set.insert(*v);
        } else if !set.contains(v) {
            site.capped = true;
        }
    }
    if g < MAX_INSTANCES {
        site.instances.push((g, vals));
    }
}

impl Tool for Profile {
    fn before_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        let pc = site.ins.ip();
        if !(self.main.0..self.main.1).contains(&pc) {
            return;
        }
        let u = uses::uses(site.ins, site.info);
        if u.is_empty() {
            return;
        }
        let st = &mut self.state;
        let index = *self.by_pc.entry(pc).or_insert_with(|| {
            st.sites.push(Site { ins: *site.ins, values: vec![BTreeSet::new(); u.len()], uses: u, count: 0, capped: false, instances: Vec::new() });
            st.sites.len() - 1
        });
        let t = b.scratch();
        let spilled = b.spilled();
        let probe = Box::new(Probe { site: index, spilled, state: &mut *self.state });
        b.callout(hit, &*probe as *const Probe as u64, t);
        self.probes.push(probe);
    }
}

impl ToolRun for Profile {
    fn start(&mut self, _ctx: &mut ThreadContext, mem: &GuestMemory) {
        self.main = crate::tools::main_module_range(mem, &self.program);
    }

    fn fini(&mut self, _report: &mut Reporter, mem: &GuestMemory) {
        let mut syms = crate::report::symbols::SymbolCache::default();
        let mut out = format!("events\t{}\n", self.state.events);
        for s in &self.state.sites {
            let pc = s.ins.ip();
            let Some((module, fa)) = syms.file_address(pc, mem) else { continue };
            let _ = writeln!(out, "site\t{pc:x}\t{module}\t{fa:x}\t{}\t{}\t{}", s.count, u8::from(s.capped), s.ins);
            for (k, u) in s.uses.iter().enumerate() {
                let values: Vec<String> = s.values[k].iter().map(i64::to_string).collect();
                let _ = writeln!(out, "use\t{k}\t{}\t{}", uses::describe(&s.ins, u), values.join(" "));
            }
            let inst: Vec<String> = s.instances.iter().map(|(g, v)| format!("{g}:{}", v.iter().map(i64::to_string).collect::<Vec<_>>().join(","))).collect();
            let _ = writeln!(out, "inst\t{}", inst.join(" "));
        }
        let _ = std::fs::write(&self.out, out);
    }
}

/// A profile read back (one test's).
#[derive(Default, Debug)]
pub struct RunProfile {
    pub sites: Vec<SiteProfile>,
}

#[derive(Default, Debug, Clone)]
pub struct SiteProfile {
    pub pc: u64,
    pub module: String,
    pub file_addr: u64,
    /// It read more distinct values than the profile keeps.
    pub capped: bool,
    pub insn: String,
    /// Each use: how it is named, its distinct values.
    pub uses: Vec<(String, Vec<i64>)>,
    pub instances: Vec<(u64, Vec<i64>)>,
}

impl RunProfile {
    pub fn read(path: &std::path::Path) -> std::io::Result<RunProfile> {
        let text = std::fs::read_to_string(path)?;
        let mut p = RunProfile::default();
        let bad = || std::io::Error::other(format!("{}: not a value profile", path.display()));
        for line in text.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            match f[0] {
                "site" if f.len() >= 7 => p.sites.push(SiteProfile {
                    pc: u64::from_str_radix(f[1], 16).map_err(|_| bad())?,
                    module: f[2].to_string(),
                    file_addr: u64::from_str_radix(f[3], 16).map_err(|_| bad())?,
                    capped: f[5] == "1",
                    insn: f[6..].join("\t"),
                    ..SiteProfile::default()
                }),
                "use" if f.len() >= 4 => {
                    let s = p.sites.last_mut().ok_or_else(bad)?;
                    s.uses.push((f[2].to_string(), f[3].split_whitespace().filter_map(|v| v.parse().ok()).collect()));
                }
                "inst" => {
                    let s = p.sites.last_mut().ok_or_else(bad)?;
                    for x in f.get(1).unwrap_or(&"").split_whitespace() {
                        let (g, vals) = x.split_once(':').ok_or_else(bad)?;
                        let vals = vals.split(',').filter(|v| !v.is_empty()).filter_map(|v| v.parse().ok()).collect();
                        s.instances.push((g.parse().map_err(|_| bad())?, vals));
                    }
                }
                _ => {}
            }
        }
        Ok(p)
    }
}
