//! Library definitions as the program's calls (issue 21, items 3-5): a library's definitions
//! are named by the program's call they belong to (`Policy::call_word`), and the search widens a
//! library point to the whole call, or to every call made at one site of the program, when the
//! single store is not the unit that corrupted (see ARCHITECTURE, "The suppression tool").

use super::plan::{Def, Outcome, Point};
use std::collections::HashMap;

/// What the search knows of the program's calls: its code range and the call site (return
/// address) of each library definition and point seen.
pub struct Calls {
    main: (u64, u64),
    sites: HashMap<Point, u64>,
}

impl Calls {
    pub fn new() -> Calls {
        Calls { main: (0, 0), sites: HashMap::new() }
    }

    /// Learns from a traced failing run: the program's range and its definitions' call sites.
    pub fn learn(&mut self, o: &Outcome) {
        self.main = o.main;
        self.sites.extend(o.def_sites.iter().copied());
    }

    /// A single point in a library, made for a program's call (not block instance 1: the
    /// library ran before the program's first call, for no call of its).
    pub fn library(&self, p: &Point) -> bool {
        let for_a_call = p.site != 0 || p.block_instance().is_some_and(|b| b > 1);
        !p.call() && p.call_site().is_none() && p.instance != 0 && for_a_call && !(self.main.0..self.main.1).contains(&p.pc)
    }

    fn site(&self, p: &Point) -> Option<u64> {
        self.sites.get(p).copied().or((p.site != 0).then_some(p.site))
    }

    /// The points to suppress for the failure's definitions `defs`, given those suppressed
    /// already:
    /// - a library's definition in another call made at the same site as a call (or a store of
    ///   one) suppressed already (strcat in a loop, each call overflowing): every call made at
    ///   that site, whole;
    /// - one of a call one of whose stores is suppressed already (the same again: the location
    ///   its suppressed store left corrupt; or another: strcpy's loop and its tail), or one that
    ///   wrote a return address, a saved frame pointer or a heap chunk's size (an overflow out
    ///   of the caller's buffer, never a value the program meant; its other stores may have
    ///   overrun the rest): that call, whole;
    /// - anything else as it is.
    pub fn widen(&mut self, defs: &[Def], points: &[Point]) -> Vec<Point> {
        let smashed =
            |what: &str| what.starts_with("return address at") || what.starts_with("size field of the heap") || what.starts_with("the frame pointer rbp");
        let new: Vec<Point> = defs
            .iter()
            .map(|Def { point: d, location: what, .. }| {
                let same_site = self.site(d).filter(|&r| {
                    points.iter().any(|p| (self.library(p) || p.call()) && !p.same_instance(d) && p.thread == d.thread && self.site(p) == Some(r))
                });
                let same_call = points.iter().any(|p| self.library(p) && p.same_instance(d));
                match (self.library(d) || d.call(), same_site) {
                    (true, Some(r)) => Point { pc: r | 1 << 63, instance: 0, ..*d },
                    (true, None) if smashed(what) || same_call => Point { pc: 0, ..*d },
                    _ => *d,
                }
            })
            .collect();
        // What a whole call or a site stands for: its definitions' site.
        for n in &new {
            let site =
                defs.iter().map(|d| d.point).filter(|x| x.same_instance(n) || (x.thread == n.thread && n.call_site().is_some())).find_map(|x| self.site(&x));
            if let Some(r) = site {
                self.sites.entry(*n).or_insert(r);
            }
        }
        new
    }

    /// Whether definition `d` is another call made at the site of call point `p` (a copy in a
    /// loop whose earlier calls overflowed too).
    pub fn another_at_site(&self, p: &Point, d: &Point) -> bool {
        (p.call() || p.call_site().is_some())
            && d.call()
            && p.thread == d.thread
            && !p.same_instance(d)
            && self.site(p).is_some_and(|r| self.site(d) == Some(r))
    }

    /// Every instance of what `d` names: of a whole call, every call made at its site (when
    /// known); of an instruction, its every instance.
    pub fn every(&self, d: &Point) -> Point {
        match (d.call(), self.site(d)) {
            (true, Some(r)) => Point { pc: r | 1 << 63, instance: 0, ..*d },
            _ => Point { instance: 0, ..*d },
        }
    }

    /// Whether point `p` is subsumed by one of `new`: a call suppressed whole its single
    /// stores (whose check would leave the instruction before the call's could see it), a site
    /// its calls.
    pub fn subsumed(&self, p: &Point, new: &[Point]) -> bool {
        new.iter().any(|n| {
            let by_call = n.call() && self.library(p) && p.same_instance(n);
            let by_site = n.call_site().is_some() && (self.library(p) || p.call()) && p.thread == n.thread && self.site(p) == n.call_site();
            by_call || by_site
        })
    }
}
