//! The binary control-flow graph around a conditional branch, and its immediate
//! post-dominator: where a suppressed branch's two paths meet again.
//!
//! The graph is built forward from the branch by decoding guest code: conditional branches
//! have two successors, direct jumps one, calls fall through (a call into a function that
//! never returns is left by the fall-through leaving the function's symbol, when one is
//! known), and `ret`, indirect jumps, traps and jumps out of the function end at a virtual
//! exit. The post-dominators are computed on the reversed graph (Cooper, Harvey and Kennedy's
//! iterative algorithm). If the branch's immediate post-dominator is the exit, there is no
//! meeting point inside the function.

use rtgrind_jit::iced_x86::{Decoder, DecoderOptions, FlowControl, Instruction};
use std::collections::{BTreeMap, HashMap};

/// Instructions explored from one branch at most (the rest counts as the exit).
const LIMIT: usize = 20_000;

/// The exit node of the graphs below (leaving the function, or the explored part).
const EXIT: u64 = u64::MAX;

/// The immediate post-dominator of the conditional branch at `pc` (where both its paths meet
/// again), if any, and the instructions of its conditional region: those reachable from the
/// branch without passing the post-dominator (what skipping the branch skips). `read` copies
/// guest code; `func` is the enclosing function's range, if known.
pub fn region(pc: u64, read: &dyn Fn(u64, &mut [u8]) -> usize, func: Option<(u64, u64)>) -> (Option<u64>, Vec<Instruction>) {
    let (succ, decoded) = graph(pc, read, func);
    let ipdom = post_dominator(pc, &succ);
    // The region: forward from the branch's successors, stopping at the post-dominator.
    let stop = ipdom.unwrap_or(EXIT);
    let mut inside = std::collections::BTreeSet::new();
    let mut work: Vec<u64> = succ.get(&pc).cloned().unwrap_or_default();
    while let Some(a) = work.pop() {
        if a == stop || a == EXIT || a == pc || !inside.insert(a) {
            continue;
        }
        work.extend(succ.get(&a).into_iter().flatten().copied());
    }
    let insns = inside.iter().filter_map(|a| decoded.get(a).copied()).collect();
    (ipdom, insns)
}

/// The instruction-level graph reachable from `pc` within the function (node: instruction
/// address; its successors, `EXIT` for leaving), and the instructions decoded.
fn graph(pc: u64, read: &dyn Fn(u64, &mut [u8]) -> usize, func: Option<(u64, u64)>) -> (BTreeMap<u64, Vec<u64>>, HashMap<u64, Instruction>) {
    let inside = |a: u64| func.is_none_or(|(s, e)| (s..e).contains(&a));
    let mut succ: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    let mut decoded: HashMap<u64, Instruction> = HashMap::new();
    let mut work = vec![pc];
    let mut code = Pages { read, pages: HashMap::new() };
    while let Some(a) = work.pop() {
        if succ.contains_key(&a) {
            continue;
        }
        if succ.len() >= LIMIT || !inside(a) {
            succ.insert(a, vec![EXIT]);
            continue;
        }
        let mut buf = [0u8; 16];
        let n = code.fetch(a, &mut buf);
        crate::tools::TOOL_DECODES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut d = Decoder::with_ip(64, &buf[..n], a, DecoderOptions::NONE);
        let ins: Instruction = d.decode();
        if ins.is_invalid() {
            succ.insert(a, vec![EXIT]);
            continue;
        }
        decoded.insert(a, ins);
        let next = ins.next_ip();
        let s: Vec<u64> = match ins.flow_control() {
            FlowControl::Next | FlowControl::Call | FlowControl::IndirectCall | FlowControl::XbeginXabortXend => {
                if inside(next) {
                    vec![next]
                } else {
                    vec![EXIT]
                }
            }
            FlowControl::ConditionalBranch => vec![next, ins.near_branch_target()],
            FlowControl::UnconditionalBranch if inside(ins.near_branch_target()) => vec![ins.near_branch_target()],
            _ => vec![EXIT],
        };
        work.extend(s.iter().copied().filter(|&t| t != EXIT));
        succ.insert(a, s);
    }
    (succ, decoded)
}

/// Guest code read a page at a time (each read is a syscall) and kept while a search runs.
struct Pages<'r> {
    read: &'r dyn Fn(u64, &mut [u8]) -> usize,
    pages: HashMap<u64, Vec<u8>>,
}

impl Pages<'_> {
    fn fetch(&mut self, a: u64, buf: &mut [u8]) -> usize {
        let mut n = 0;
        while n < buf.len() {
            let at = a + n as u64;
            let read = self.read;
            let page = self.pages.entry(at & !0xfff).or_insert_with(|| {
                let mut p = vec![0u8; 0x1000];
                let got = read(at & !0xfff, &mut p);
                p.truncate(got);
                p
            });
            let off = (at & 0xfff) as usize;
            if off >= page.len() {
                break;
            }
            let k = (page.len() - off).min(buf.len() - n);
            buf[n..n + k].copy_from_slice(&page[off..off + k]);
            n += k;
        }
        n
    }
}

/// The immediate post-dominator of `pc` in graph `succ`: its immediate dominator in the
/// reversed graph (Cooper, Harvey and Kennedy's iteration over a reverse post-order from the
/// exit); None if it is the exit.
fn post_dominator(pc: u64, succ: &BTreeMap<u64, Vec<u64>>) -> Option<u64> {
    // Reverse post-order of the reversed graph, from the exit.
    let mut pred: HashMap<u64, Vec<u64>> = HashMap::new();
    for (&a, ss) in succ {
        for &t in ss {
            pred.entry(t).or_default().push(a);
        }
    }
    let mut order = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![(EXIT, 0usize)];
    seen.insert(EXIT);
    while let Some((n, i)) = stack.pop() {
        let ps = pred.get(&n).map(|v| v.as_slice()).unwrap_or(&[]);
        if i < ps.len() {
            stack.push((n, i + 1));
            if seen.insert(ps[i]) {
                stack.push((ps[i], 0));
            }
        } else {
            order.push(n);
        }
    }
    order.reverse(); // EXIT first
    let index: HashMap<u64, usize> = order.iter().enumerate().map(|(i, &n)| (n, i)).collect();
    let mut idom: Vec<Option<usize>> = vec![None; order.len()];
    idom[0] = Some(0);
    let intersect = |idom: &[Option<usize>], mut a: usize, mut b: usize| {
        while a != b {
            while a > b {
                a = idom[a].unwrap();
            }
            while b > a {
                b = idom[b].unwrap();
            }
        }
        a
    };
    let mut changed = true;
    while changed {
        changed = false;
        for i in 1..order.len() {
            // In the reversed graph, a node's predecessors are its successors.
            let mut new: Option<usize> = None;
            for s in &succ[&order[i]] {
                let Some(&j) = index.get(s) else { continue };
                if idom[j].is_none() {
                    continue;
                }
                new = Some(match new {
                    None => j,
                    Some(k) => intersect(&idom, j, k),
                });
            }
            if new.is_some() && idom[i] != new {
                idom[i] = new;
                changed = true;
            }
        }
    }
    index.get(&pc).and_then(|&i| idom[i]).map(|d| order[d]).filter(|&d| d != EXIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipdom_of(code: &[u8], base: u64) -> Option<u64> {
        let read = |a: u64, buf: &mut [u8]| {
            let off = (a - base) as usize;
            let n = buf.len().min(code.len().saturating_sub(off));
            buf[..n].copy_from_slice(&code[off..off + n]);
            n
        };
        region(base, &read, Some((base, base + code.len() as u64))).0
    }

    #[test]
    fn if_then_meets_after_the_then_part() {
        // 0: je 4; 2: inc eax (2 bytes: ff c0); 4: ret
        let code = [0x74, 0x02, 0xff, 0xc0, 0xc3];
        assert_eq!(ipdom_of(&code, 0x1000), Some(0x1004));
    }

    #[test]
    fn if_else_meets_at_the_join() {
        // 0: je 6; 2: inc eax; 4: jmp 8; 6: dec eax; 8: ret
        let code = [0x74, 0x04, 0xff, 0xc0, 0xeb, 0x02, 0xff, 0xc8, 0xc3];
        assert_eq!(ipdom_of(&code, 0x1000), Some(0x1008));
    }

    #[test]
    fn the_region_is_what_lies_between() {
        // 0: je 6; 2: inc eax; 4: jmp 8; 6: dec eax; 8: ret
        let code = [0x74, 0x04, 0xff, 0xc0, 0xeb, 0x02, 0xff, 0xc8, 0xc3];
        let read = |a: u64, buf: &mut [u8]| {
            let off = (a - 0x1000) as usize;
            let n = buf.len().min(code.len().saturating_sub(off));
            buf[..n].copy_from_slice(&code[off..off + n]);
            n
        };
        let (ipdom, insns) = region(0x1000, &read, Some((0x1000, 0x1009)));
        assert_eq!(ipdom, Some(0x1008));
        assert_eq!(insns.iter().map(|i| i.ip()).collect::<Vec<_>>(), vec![0x1002, 0x1004, 0x1006]);
    }

    #[test]
    fn two_returns_have_no_meeting_point() {
        // 0: je 3; 2: ret; 3: ret
        let code = [0x74, 0x01, 0xc3, 0xc3];
        assert_eq!(ipdom_of(&code, 0x1000), None);
    }
}
