//! What the driver tells one run (the suppression points) and what the run tells the driver
//! (the crash, the locations it used and their definitions, the points it reached), as
//! tab-separated lines in files.

use super::run::REDZONE_FAILURE;
use crate::report::lines::SourceLines;
use crate::report::symbols::{Mapped, ModuleMap};
use std::collections::HashMap;
use std::path::PathBuf;

/// An instruction instance: guest pc, thread (creation order), which execution (see
/// `instance`), and for a library's instruction the program's call site it ran under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Point {
    pub pc: u64,
    pub thread: u64,
    /// 0: every execution. Else the ordinal (counted from 1, by the thread) of the execution:
    /// of the instruction itself in the program; in a library (and for a call suppressed
    /// whole), of the program's call at `site` it belongs to (`ordinals`). With `BY_BLOCK`
    /// set: the thread's block instance instead, where a traced run could not tell the
    /// ordinal.
    pub instance: u64,
    /// For a library's instruction or a whole call named by ordinal: the return address of
    /// the program's call; else 0.
    pub site: u64,
}

/// `Point::instance` is a block instance.
pub const BY_BLOCK: u64 = 1 << 62;

impl Point {
    /// Every store that the library makes for the program's call at this instance, outside
    /// the call's own frames: the call suppressed whole (pc 0; the instance is the call's).
    pub fn call(&self) -> bool {
        self.pc == 0
    }
    /// Every store that the library makes for every call the program makes at one site,
    /// outside the call's frames: the return address of that site (pc with bit 63 set).
    pub fn call_site(&self) -> Option<u64> {
        (self.pc >> 63 == 1).then_some(self.pc & !(1 << 63))
    }
    /// Named by block instance (`BY_BLOCK`): that instance.
    pub fn block_instance(&self) -> Option<u64> {
        (self.instance & BY_BLOCK != 0).then_some(self.instance & !BY_BLOCK)
    }
    /// The same execution: the same instance, under the same call.
    pub fn same_instance(&self, other: &Point) -> bool {
        self.thread == other.thread && self.instance == other.instance && self.site == other.site
    }
    fn parse(f: &[&str]) -> Option<Point> {
        let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
        let (instance, site) = parse_instance(f.get(2)?)?;
        Some(Point { pc: hex(f.first()?)?, thread: f.get(1)?.parse().ok()?, instance, site })
    }
    fn text(&self) -> String {
        format!("{:#x}\t{}\t{}", self.pc, self.thread, self.instance_text())
    }
    /// The instance as the plan and outcome write it: `N`, `N@0xSITE`, or `bN` (a block
    /// instance).
    pub fn instance_text(&self) -> String {
        match (self.block_instance(), self.site) {
            (Some(b), _) => format!("b{b}"),
            (None, 0) => self.instance.to_string(),
            (None, site) => format!("{}@{site:#x}", self.instance),
        }
    }
}

fn parse_instance(s: &str) -> Option<(u64, u64)> {
    if let Some(b) = s.strip_prefix('b') {
        return Some((b.parse::<u64>().ok()? | BY_BLOCK, 0));
    }
    match s.split_once('@') {
        Some((n, site)) => Some((n.parse().ok()?, u64::from_str_radix(site.trim_start_matches("0x"), 16).ok()?)),
        None => Some((s.parse().ok()?, 0)),
    }
}

#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub points: Vec<Point>,
    /// Functions of the main program whose first instruction is a suppression point (every
    /// instance), by name: `at main` makes a whole run a suppression run (benchmarks).
    pub at_functions: Vec<String>,
    /// A failure other than a crash (`--failure=exit-code|stderr:REGEX|output:FILE`).
    pub failure: Option<String>,
    /// Trace: origins, and on a failure the locations it used with their definitions. A run
    /// that does not trace only says whether and where it failed, at a fraction of the cost.
    pub trace: bool,
    /// Where the run writes its `Outcome`.
    pub out: Option<PathBuf>,
    /// Locations (address, size) whose last store the run watches (`watch`): their
    /// definitions at a finer grain than an origin granule.
    pub watch: Vec<(u64, u64)>,
    /// Heap blocks get redzones (`redzones`): one overwritten is the run's failure.
    pub redzones: bool,
}

impl Plan {
    pub fn to_text(&self) -> String {
        let mut s: String = self.points.iter().map(|p| format!("point\t{}\n", p.text())).collect();
        if let Some(f) = &self.failure {
            s += &format!("failure\t{f}\n");
        }
        if self.trace {
            s += "trace\n";
        }
        if self.redzones {
            s += "redzones\n";
        }
        for (addr, size) in &self.watch {
            s += &format!("watch\t{addr:#x}\t{size}\n");
        }
        s
    }
    pub fn parse(text: &str) -> Result<Plan, String> {
        let mut plan = Plan::default();
        for (i, line) in text.lines().enumerate() {
            let f: Vec<&str> = line.split('\t').collect();
            match f[0] {
                "point" => plan.points.push(Point::parse(&f[1..]).ok_or(format!("plan line {}: bad point", i + 1))?),
                "failure" => plan.failure = Some(f[1..].join("\t")),
                "trace" => plan.trace = true,
                "redzones" => plan.redzones = true,
                "watch" => plan.watch.push(range(&f[1..]).ok_or(format!("plan line {}: bad watch", i + 1))?),
                "at" => plan.at_functions.push(f.get(1).ok_or(format!("plan line {}: `at` needs a function", i + 1))?.to_string()),
                "" => {}
                other => return Err(format!("plan line {}: unknown entry `{other}`", i + 1)),
            }
        }
        Ok(plan)
    }
}

/// The failure a run ended with.
#[derive(Clone, Debug, PartialEq)]
pub struct Crash {
    /// The fatal signal, or (negative) a named failure's kind (`--failure`).
    pub signal: i32,
    pub pc: u64,
    /// The failing thread's block instance (what the report says of a repeat that differs).
    pub instance: u64,
    /// Its source place (for a named failure, what happened first).
    pub place: String,
    /// The program's calls it happened under: their return addresses, innermost first.
    pub stack: Vec<u64>,
    /// Its call stack: the instruction, then every call it was under (return addresses),
    /// innermost first, for the report to symbolize with `Outcome::modules`.
    pub frames: Vec<u64>,
}

impl Crash {
    /// The same failure at the same place under the same calls (what a repeat of a run must
    /// give). Not the block instance: a run may do more elsewhere first (points are named so
    /// that does not move them, `ordinals`).
    pub fn same(&self, other: &Crash) -> bool {
        (self.signal, self.pc, &self.stack) == (other.signal, other.pc, &other.stack)
    }
}

/// The definition of a location a failure used.
#[derive(Clone, Debug, PartialEq)]
pub struct Def {
    pub point: Point,
    /// The location, as the report says it ("rax (address)", "return address at ...").
    pub location: String,
    /// The definition's source place.
    pub place: String,
    pub instruction: String,
    /// It stored a constant the program wrote in (`x = NULL`), not a value it computed.
    pub constant: bool,
}

/// A suppression point a run reached.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    pub point: Point,
    /// The instruction that reached it (of a call suppressed whole, each that stored).
    pub pc: u64,
    /// The innermost call site in the main program (for a library's point; else empty).
    pub call: String,
    /// Its call stack there, as `Crash::frames`.
    pub frames: Vec<u64>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    pub crash: Option<Crash>,
    /// The definitions of the locations the failure used.
    pub defs: Vec<Def>,
    /// Suppression points reached.
    pub hits: Vec<Hit>,
    /// How often each kind of suppression acted.
    pub suppressed: Vec<(String, u64)>,
    /// The run did not end and was stopped (why): the driver's note, never in the text form.
    pub stopped: Option<String>,
    /// The main program's code range (a point elsewhere is a library's).
    pub main: (u64, u64),
    /// For definitions made in a library: the return address of the program's call they
    /// belong to.
    pub def_sites: Vec<(Point, u64)>,
    /// Locations the failure used that are narrower than an origin granule, whose granule a
    /// narrow store defined last (perhaps of another variable): to watch in a run again.
    pub narrow: Vec<(u64, u64)>,
    /// Where the modules the call stacks are in were mapped.
    pub modules: ModuleMap,
}

/// Addresses as the outcome writes them: hex, a space between.
fn hex_list(pcs: &[u64]) -> String {
    pcs.iter().map(|p| format!("{p:#x}")).collect::<Vec<_>>().join(" ")
}

fn parse_hex_list(text: &str) -> Vec<u64> {
    text.split_whitespace().filter_map(|r| u64::from_str_radix(r.trim_start_matches("0x"), 16).ok()).collect()
}

impl Outcome {
    /// Names the source places of what the run wrote as addresses (its failure, the
    /// definitions, a library point's call in the program), from `modules`: in the search,
    /// which loads each module's DWARF once for all its runs (a run that crashed in libc paid
    /// for parsing libc's whole DWARF to name one line). A named failure's text, which the run
    /// wrote as the place, comes first.
    pub fn name_places(&mut self, lines: &mut SourceLines) {
        let modules = &self.modules;
        if let Some(c) = self.crash.as_mut() {
            let place = match c.stack.first() {
                Some(ret) if c.signal == REDZONE_FAILURE => lines.describe_written(ret - 1, modules),
                _ => lines.describe(&[c.pc], modules).pop().unwrap_or_default(),
            };
            c.place = if c.signal < 0 { format!("{} {place}", c.place) } else { place };
        }
        for d in self.defs.iter_mut().filter(|d| !d.point.call()) {
            d.place = lines.describe(&[d.point.pc], modules).pop().unwrap_or_default();
        }
        // A library point: the main program's call that led there, once per call site.
        let main = self.main.0..self.main.1;
        let mut call_places: HashMap<u64, String> = HashMap::new();
        for h in &mut self.hits {
            let call = h.frames.iter().skip(1).find(|r| main.contains(*r));
            if let Some(&r) = call.filter(|_| !main.contains(&h.point.pc)) {
                h.call = call_places.entry(r).or_insert_with(|| lines.describe_written(r - 1, modules)).clone();
            }
        }
    }

    pub fn to_text(&self) -> String {
        let mut s = String::new();
        if let Some(c) = &self.crash {
            s += &format!("crash\t{}\t{:#x}\t{}\t{}\n", c.signal, c.pc, c.instance, c.place);
            let stack: Vec<String> = c.stack.iter().map(|r| format!("{r:#x}")).collect();
            s += &format!("stack\t{}\n", stack.join(" "));
            s += &format!("frames\t{}\n", hex_list(&c.frames));
        }
        for d in &self.defs {
            let constant = if d.constant { "constant" } else { "" };
            s += &format!("def\t{}\t{}\t{}\t{}\t{constant}\n", d.point.text(), d.location, d.place, d.instruction);
        }
        for h in &self.hits {
            s += &format!("hit\t{}\t{}\t{:#x}\t{}\n", h.point.text(), h.call, h.pc, hex_list(&h.frames));
        }
        for m in &self.modules.0 {
            s += &format!("module\t{:#x}\t{:#x}\t{:#x}\t{}\n", m.start, m.end, m.base, m.path);
        }
        for (what, n) in &self.suppressed {
            s += &format!("suppressed\t{n}\t{what}\n");
        }
        for (p, ret) in &self.def_sites {
            s += &format!("site\t{}\t{ret:#x}\n", p.text());
        }
        for (addr, size) in &self.narrow {
            s += &format!("narrow\t{addr:#x}\t{size}\n");
        }
        s += &format!("main\t{:#x}\t{:#x}\n", self.main.0, self.main.1);
        s
    }

    pub fn parse(text: &str) -> Outcome {
        let mut o = Outcome::default();
        for line in text.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            let field = |i: usize| f.get(i).copied().unwrap_or("").to_string();
            match f[0] {
                "crash" => {
                    let pc = u64::from_str_radix(field(2).trim_start_matches("0x"), 16).unwrap_or(0);
                    o.crash = Some(Crash {
                        signal: field(1).parse().unwrap_or(0),
                        pc,
                        instance: field(3).parse().unwrap_or(0),
                        place: field(4),
                        stack: Vec::new(),
                        frames: Vec::new(),
                    });
                }
                "def" => {
                    if let Some(p) = Point::parse(&f[1..]) {
                        o.defs.push(Def { point: p, location: field(4), place: field(5), instruction: field(6), constant: field(7) == "constant" });
                    }
                }
                "hit" => {
                    if let Some(p) = Point::parse(&f[1..]) {
                        let pc = u64::from_str_radix(field(5).trim_start_matches("0x"), 16).unwrap_or(p.pc);
                        o.hits.push(Hit { point: p, pc, call: field(4), frames: parse_hex_list(&field(6)) });
                    }
                }
                "frames" => o.crash.iter_mut().for_each(|c| c.frames = parse_hex_list(&field(1))),
                "module" => {
                    if let [start, end, base] = parse_hex_list(&f[1..4.min(f.len())].join(" "))[..] {
                        o.modules.0.push(Mapped { start, end, base, path: field(4) });
                    }
                }
                "suppressed" => o.suppressed.push((field(2), field(1).parse().unwrap_or(0))),
                "site" => {
                    if let Some(p) = Point::parse(&f[1..]) {
                        o.def_sites.push((p, u64::from_str_radix(field(4).trim_start_matches("0x"), 16).unwrap_or(0)));
                    }
                }
                "narrow" => o.narrow.extend(range(&f[1..])),
                "stack" => {
                    if let Some(c) = o.crash.as_mut() {
                        c.stack = field(1).split_whitespace().filter_map(|r| u64::from_str_radix(r.trim_start_matches("0x"), 16).ok()).collect();
                    }
                }
                "main" => {
                    let hex = |s: String| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or(0);
                    o.main = (hex(field(1)), hex(field(2)));
                }
                _ => {}
            }
        }
        o
    }
}

/// `ADDR\tSIZE` (hex address, decimal size).
fn range(f: &[&str]) -> Option<(u64, u64)> {
    Some((u64::from_str_radix(f.first()?.trim_start_matches("0x"), 16).ok()?, f.get(1)?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_and_outcome_round_trip() {
        let p = Point { pc: 0x401000, thread: 0, instance: 42, site: 0 };
        for q in [p, Point { instance: 3, site: 0x401234, ..p }, Point { instance: 42 | BY_BLOCK, ..p }] {
            assert_eq!(Plan::parse(&Plan { points: vec![q], ..Plan::default() }.to_text()).unwrap().points, vec![q]);
        }
        let plan = Plan {
            points: vec![p],
            out: None,
            at_functions: vec![],
            failure: Some("stderr:a\tb".into()),
            trace: true,
            watch: vec![(0x7ffc_0010, 4)],
            redzones: true,
        };
        assert_eq!(Plan::parse(&plan.to_text()).unwrap().failure, plan.failure);
        assert!(Plan::parse(&plan.to_text()).unwrap().trace);
        assert!(Plan::parse(&plan.to_text()).unwrap().redzones && !Plan::parse("trace\n").unwrap().redzones);
        assert_eq!(Plan::parse(&plan.to_text()).unwrap().points, vec![p]);
        assert_eq!(Plan::parse(&plan.to_text()).unwrap().watch, plan.watch);
        let o = Outcome {
            crash: Some(Crash {
                signal: 11,
                pc: 0x401234,
                instance: 7,
                place: "a.c:3 (main)".into(),
                stack: vec![0x401500, 0x401800],
                frames: vec![0x401234, 0x401800],
            }),
            defs: vec![Def { point: p, location: "rax (address)".into(), place: "a.c:2 (main)".into(), instruction: "mov [rbp-8],rax".into(), constant: true }],
            hits: vec![Hit { point: p, pc: 0x401000, call: "a.c:9 (main)".into(), frames: vec![0x401000, 0x401234] }],
            suppressed: vec![("stores of a corrupt value".into(), 3)],
            stopped: None,
            main: (0x400000, 0x402000),
            def_sites: vec![(p, 0x401234)],
            narrow: vec![(0x7ffc_0014, 4)],
            modules: ModuleMap(vec![Mapped { start: 0x400000, end: 0x402000, base: 0x400000, path: "/a b/prog".into() }]),
        };
        assert_eq!(Outcome::parse(&o.to_text()), o);
    }
}
