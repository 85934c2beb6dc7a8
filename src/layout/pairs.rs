//! The layouts a search tries (the dissertation's §5.3 heuristic): crashes come from corrupt
//! address-related variables (pointers, and integers that may index), and those are corrupted
//! when they lie right after a buffer that overflows. So only the run's accessed buffers and
//! address-related variables are considered, and each layout places different (buffer,
//! address-variable) pairs next to each other, several pairs per layout: among the globals, the
//! k-th layout puts after the i-th buffer the (i+k)-th address variable; in a frame with a
//! buffer, the first layout puts the buffer right below the saved frame pointer and return
//! address (a smash), the next ones each of the frame's address variables right after it.

use super::apply::Accessed;
use super::heap::{HeapPair, Site};
use super::objects::{Frame, FrameBase, Kind, Objects, Var};
use super::{FrameMove, GlobalMove, Layout, LocalMove};

/// What the search considered: buffers and address-related variables among the globals and
/// in the frames, and the frames it could not re-lay.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Considered {
    pub buffers: usize,
    pub address_vars: usize,
    pub globals: usize,
    pub frames: usize,
    pub frames_left: usize,
    pub globals_left: usize,
    /// Allocation sites among the buffers and address-related variables.
    pub sites: usize,
}

impl Considered {
    /// "3 buffers and 5 address-related variables (4 globals, 2 frames)".
    pub fn describe(&self) -> String {
        let sites = if self.sites > 0 { format!(", {} allocation site{}", self.sites, plural(self.sites)) } else { String::new() };
        let mut s = format!(
            "{} buffer{} and {} address-related variable{} ({} global{}, {} frame{}{sites})",
            self.buffers,
            plural(self.buffers),
            self.address_vars,
            plural(self.address_vars),
            self.globals,
            plural(self.globals),
            self.frames,
            plural(self.frames)
        );
        if self.frames_left + self.globals_left > 0 {
            s += &format!(
                "; left where they are: {} frame{} and {} global{} that cannot move",
                self.frames_left,
                plural(self.frames_left),
                self.globals_left,
                plural(self.globals_left)
            );
        }
        s
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn is_buffer(v: &Var) -> bool {
    v.kind == Kind::Buffer || v.kind == Kind::Other && v.size > 8
}

fn is_address(v: &Var) -> bool {
    matches!(v.kind, Kind::Pointer | Kind::Integer)
}

/// Buffers first, then address variables (pointers before integers), each in file order.
fn candidates<'a>(vars: impl Iterator<Item = &'a Var> + Clone) -> (Vec<&'a Var>, Vec<&'a Var>) {
    let buffers = vars.clone().filter(|v| is_buffer(v)).collect();
    let mut address: Vec<&Var> = vars.filter(|v| is_address(v)).collect();
    address.sort_by_key(|v| v.kind != Kind::Pointer);
    (buffers, address)
}

/// The layouts to try for a run that accessed `accessed`, in order, and what was considered.
pub fn layouts(objects: &Objects, accessed: &Accessed, program: &str, max: usize) -> (Vec<Layout>, Considered) {
    let globals: Vec<&Var> = objects.globals.iter().filter(|g| accessed.globals.contains(&g.name)).collect();
    let (gb, ga) = candidates(globals.iter().copied());
    let frames: Vec<&Frame> = objects.frames.iter().filter(|f| accessed.frames.contains(&f.low)).collect();
    let mut considered = Considered {
        buffers: gb.len(),
        address_vars: ga.len(),
        globals: globals.len(),
        frames: frames.len(),
        frames_left: objects.fixed_frames.len(),
        globals_left: objects.fixed_globals.len(),
        sites: 0,
    };
    // Each frame's pairs: its buffers, each below the return address first, then below each of
    // its address variables.
    let frame_pairs: Vec<(&Frame, Vec<Pair>)> = frames
        .iter()
        .map(|f| {
            let (b, a) = candidates(f.locals.iter());
            considered.buffers += b.len();
            considered.address_vars += a.len();
            let pairs = b.iter().flat_map(|&buf| std::iter::once(None).chain(a.iter().map(|&x| Some(x))).map(move |x| (buf, x))).collect();
            (*f, pairs)
        })
        .collect();
    // The heap: blocks that held no pointer are the buffers, those that did the address-related.
    let (hb, ha): (Vec<&Site>, Vec<&Site>) = accessed.heap.iter().partition(|s| !s.pointers);
    considered.buffers += hb.len();
    considered.address_vars += ha.len();
    considered.sites = accessed.heap.len();
    let lines = site_lines(program, &accessed.heap);
    let global_rounds = rotations(gb.len(), ga.len());
    let heap_rounds = rotations(hb.len(), ha.len());
    let rounds = frame_pairs.iter().map(|(_, p)| p.len()).max().unwrap_or(0).max(global_rounds).max(heap_rounds);
    let mut out = Vec::new();
    for k in 0..rounds.min(max) {
        let mut layout = Layout { program: program.to_string(), ..Layout::default() };
        if k < global_rounds {
            let pairs: Vec<(&Var, &Var)> = rotation(gb.len(), ga.len(), k).map(|(i, j)| (gb[i], ga[j])).filter(|(b, a)| b.name != a.name).collect();
            globals_after(&pairs, &mut layout);
        }
        if k < heap_rounds {
            for (i, j) in rotation(hb.len(), ha.len(), k) {
                let (b, a) = (hb[i], ha[j]);
                layout.heap.push(HeapPair { buffer: b.site, buffer_size: b.size, follower: a.site, follower_size: a.size });
                layout.pairs.push(format!("heap block from {} followed by the block from {}", lines[&b.site], lines[&a.site]));
            }
        }
        for (f, pairs) in &frame_pairs {
            if let Some(&(b, after)) = pairs.get(k) {
                frame_with(f, b, after, &mut layout);
            }
        }
        if !layout.is_empty() {
            out.push(layout);
        }
    }
    (out, considered)
}

/// Layouts that pair each of `nb` buffers with each of `na` address variables once.
fn rotations(nb: usize, na: usize) -> usize {
    if nb == 0 || na == 0 {
        0
    } else {
        na * nb.div_ceil(na)
    }
}

/// The pairs (buffer, address variable) of the `k`-th of `rotations(nb, na)` layouts: a group
/// of up to `na` buffers, the i-th followed by the (i + k)-th address variable.
fn rotation(nb: usize, na: usize, k: usize) -> impl Iterator<Item = (usize, usize)> {
    let group = k / na.max(1);
    (group * na..nb.min(group * na + na)).map(move |i| (i, (i + k) % na))
}

/// Each allocation site's `file:line (function)` (of its call), else its address.
fn site_lines(program: &str, sites: &[Site]) -> std::collections::HashMap<u64, String> {
    let lines = crate::report::lines::places(program, sites.iter().map(|s| s.site - 1));
    sites.iter().zip(lines).map(|(s, l)| (s.site, l.unwrap_or_else(|| format!("the call returning to {:#x}", s.site)))).collect()
}

/// A frame's buffer and what follows it (None: the saved frame pointer and return address).
type Pair<'a> = (&'a Var, Option<&'a Var>);

fn align_down(v: i64, a: u64) -> i64 {
    v.div_euclid(a as i64) * a as i64
}

/// The globals of `pairs` in the region: each buffer ending where its address variable starts
/// (as closely as their alignments allow).
fn globals_after(pairs: &[(&Var, &Var)], layout: &mut Layout) {
    let mut cursor = 0i64;
    for (b, a) in pairs {
        let mut at_a = align_down(cursor + b.size as i64 + a.align as i64 - 1, a.align);
        while align_down(at_a - b.size as i64, b.align) < cursor {
            at_a += a.align as i64;
        }
        let at_b = align_down(at_a - b.size as i64, b.align);
        for (v, to) in [(b, at_b), (a, at_a)] {
            layout.globals.push(GlobalMove { name: v.name.clone(), address: v.at as u64, size: v.size, to: to as u64 });
        }
        layout.pairs.push(format!("global buffer '{}' followed by '{}'", b.name, a.name));
        cursor = at_a + a.size as i64 + 16;
    }
}

/// Frame `f` re-laid with buffer `b` right below `after` at the top of the frame (None: right
/// below the saved frame pointer and return address), the other locals below them in their
/// order; nothing if they do not fit in the frame.
fn frame_with(f: &Frame, b: &Var, after: Option<&Var>, layout: &mut Layout) {
    let lowest = f.locals.iter().map(|l| l.at).min().unwrap_or(0);
    let mut placed: Vec<(&Var, i64)> = Vec::new();
    let mut top = f.top;
    if let Some(a) = after {
        top = align_down(f.top - a.size as i64, a.align);
        placed.push((a, top));
    }
    let at_b = align_down(top - b.size as i64, b.align);
    placed.push((b, at_b));
    let mut cursor = at_b;
    let mut rest: Vec<&Var> = f.locals.iter().filter(|l| l.at != b.at && after.is_none_or(|a| a.at != l.at)).collect();
    rest.sort_by_key(|l| std::cmp::Reverse(l.at));
    for l in rest {
        cursor = align_down(cursor - l.size as i64, l.align);
        placed.push((l, cursor));
    }
    if cursor < lowest {
        return;
    }
    let locals = placed.iter().map(|(v, to)| LocalMove { name: v.name.clone(), offset: v.at, size: v.size, to: *to }).collect();
    layout.frames.push(FrameMove { function: f.function.clone(), low_pc: f.low, locals });
    let below = match (&f.base, f.top) {
        (FrameBase::Rbp, 0) => "the saved frame pointer and return address",
        (FrameBase::Rbp, _) => "the registers saved after the frame pointer and return address",
        (FrameBase::Cfa(_), -8) => "the return address",
        (FrameBase::Cfa(_), _) => "the saved registers and return address",
    };
    layout.pairs.push(match after {
        None => format!("buffer '{}' of {} right below {below}", b.name, f.function),
        Some(a) => format!("buffer '{}' of {} followed by '{}'", b.name, f.function, a.name),
    });
}

/// A random layout of everything that can move (`--layout=random:SEED`): every movable
/// global in the region in a shuffled order, every re-laidable frame's locals shuffled, heap
/// blocks placed by rtgrind's allocator at random distances. A
/// correct program runs the same under it (the differential suite checks).
pub fn random(objects: &Objects, program: &str, seed: u64) -> Layout {
    let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut shuffled = |n: usize| {
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            order.swap(i, (crate::kernel::repeat::splitmix(&mut state) % (i as u64 + 1)) as usize);
        }
        order
    };
    let mut layout = Layout { program: program.to_string(), pairs: vec![format!("random layout {seed}")], heap_seed: Some(seed), ..Layout::default() };
    let mut cursor = 0u64;
    for i in shuffled(objects.globals.len()) {
        let g = &objects.globals[i];
        let to = cursor.next_multiple_of(g.align.max(1));
        layout.globals.push(GlobalMove { name: g.name.clone(), address: g.at as u64, size: g.size, to });
        cursor = to + g.size;
    }
    for f in &objects.frames {
        let lowest = f.locals.iter().map(|l| l.at).min().unwrap_or(0);
        let mut top = f.top;
        let mut locals = Vec::new();
        for i in shuffled(f.locals.len()) {
            let l = &f.locals[i];
            top = align_down(top - l.size as i64, l.align);
            locals.push(LocalMove { name: l.name.clone(), offset: l.at, size: l.size, to: top });
        }
        // (A shuffle the alignments do not let fit stays as it was.)
        if top >= lowest {
            layout.frames.push(FrameMove { function: f.function.clone(), low_pc: f.low, locals });
        }
    }
    layout
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(name: &str, at: i64, size: u64, align: u64, kind: Kind) -> Var {
        Var { at, size, align, kind, name: name.into() }
    }

    /// The pairing: a frame's buffer goes below the return address first, then below each
    /// address variable; globals pair each buffer with a different pointer in each layout;
    /// what the run did not access is not considered.
    #[test]
    fn buffers_are_paired_with_address_variables() {
        let frame = Frame {
            function: "f".into(),
            low: 0x1000,
            high: 0x1100,
            locals: vec![
                var("name", -40, 8, 8, Kind::Pointer),
                var("buf", -32, 24, 1, Kind::Buffer),
                var("n", -8, 4, 4, Kind::Integer),
                var("m", -4, 4, 4, Kind::Integer),
            ],
            top: 0,
            base: FrameBase::Rbp,
        };
        let globals = vec![
            var("a", 0x4000, 40, 16, Kind::Buffer),
            var("b", 0x4040, 10, 1, Kind::Buffer),
            var("p", 0x4050, 8, 8, Kind::Pointer),
            var("q", 0x4058, 8, 8, Kind::Pointer),
            var("unused", 0x4060, 8, 8, Kind::Pointer),
        ];
        let objects = Objects { globals, frames: vec![frame], ..Objects::default() };
        let accessed = Accessed { globals: ["a", "b", "p", "q"].iter().map(|s| s.to_string()).collect(), frames: [0x1000].into(), heap: Vec::new() };
        let (layouts, considered) = layouts(&objects, &accessed, "prog", 200);
        assert_eq!((considered.buffers, considered.address_vars), (3, 5));
        // The frame: 1 buffer x (return address + 3 address variables) = 4 layouts.
        assert_eq!(layouts.len(), 4);
        let f0 = &layouts[0].frames[0].locals;
        assert_eq!((f0[0].name.as_str(), f0[0].to), ("buf", -24));
        assert!(f0.iter().all(|l| l.to >= -40), "{f0:?}");
        let f1 = &layouts[1].frames[0].locals;
        assert_eq!((f1[0].name.as_str(), f1[0].to, f1[1].name.as_str(), f1[1].to), ("name", -8, "buf", -32));
        // The globals: layout 0 pairs a with p and b with q, layout 1 a with q and b with p.
        let after = |l: &Layout, b: &str| {
            let g = |n: &str| l.globals.iter().find(|g| g.name == n).unwrap().clone();
            let end = g(b).to + g(b).size;
            l.globals.iter().find(|x| x.to == end).map(|x| x.name.clone())
        };
        assert_eq!((after(&layouts[0], "a"), after(&layouts[0], "b")), (Some("p".into()), Some("q".into())));
        assert_eq!((after(&layouts[1], "a"), after(&layouts[1], "b")), (Some("q".into()), Some("p".into())));
        assert!(layouts.iter().all(|l| l.globals.iter().all(|g| g.name != "unused")));
        for l in &layouts {
            l.check(&objects).unwrap();
        }
        // No more layouts than asked for.
        assert_eq!(super::layouts(&objects, &accessed, "prog", 2).0.len(), 2);
        // Heap sites: those whose blocks held no pointer are the buffers, each followed by
        // another pointer site in each layout.
        let site = |site, size, pointers| Site { site, size, pointers };
        let heap = vec![site(0x10, 8, true), site(0x20, 24, false), site(0x30, 16, true), site(0x40, 4, false)];
        let accessed = Accessed { heap, ..Accessed::default() };
        let (layouts, considered) = super::layouts(&Objects::default(), &accessed, "prog", 200);
        assert_eq!((considered.buffers, considered.address_vars, considered.sites), (2, 2, 4));
        let pairs = |l: &Layout| l.heap.iter().map(|p| (p.buffer, p.follower)).collect::<Vec<_>>();
        assert_eq!(layouts.iter().map(pairs).collect::<Vec<_>>(), [vec![(0x20, 0x10), (0x40, 0x30)], vec![(0x20, 0x30), (0x40, 0x10)]]);
        assert_eq!((layouts[0].heap[0].buffer_size, layouts[0].heap[0].follower_size), (24, 8));
        assert!(considered.describe().ends_with("(0 globals, 0 frames, 4 allocation sites)"), "{}", considered.describe());
    }
}
