//! Relocatable block images (issue 29, `docs/TRANSLATION-CACHE.md` step 1): a translation as
//! bytes and metadata that can be installed at another host address, in another run's cache.
//!
//! A translation's code is a function of the guest bytes, the tool and the engine's modes,
//! except for what depends on where it sits and on what was translated before it: the exit
//! ids its stubs record (the index of the exit in the cache's exit table) and the rel32 of
//! each guest RIP-relative operand re-encoded at its host address. The translator records
//! where those fields are (`Reloc`), and the host addresses kept about a block become offsets
//! from its start. Everything else in a block's code is position-independent: jumps between
//! its own labels, `gs`-relative context accesses, absolute immediates. Direct links are
//! made after a block is committed, and an image puts every exit back at its stub.
//!
//! Blocks must start at the same address modulo 16 (arena blocks always do): patchable rel32
//! fields were aligned to 4 by padding that depends on the address.

use crate::cache::{Block, BlockId, CacheError, CodeCache, Exit, ExitKind, PcEntry};
use crate::instrument::Tool;

/// A field of a block's code that depends on where, or after what, the block is installed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reloc {
    /// The imm32 at offset `at` is the exit id of the block's exit number `exit` (a stub's,
    /// or a way into a lazy full version's, `mov dword gs:[exit_id], id`).
    ExitId { at: u32, exit: u32 },
    /// The rel32 at `at` of a RIP-relative operand of the instruction ending `to_end` bytes
    /// after `at`, which addresses the absolute (guest) address `target`; `eip`: 32-bit
    /// (`[eip+d]`) addressing, which wraps.
    RipRel { at: u32, to_end: u8, eip: bool, target: u64 },
    /// The imm64 at `at` (a tool's `mov r64, imm64`, `Inline::mov_record`, a call-out's
    /// argument) is the address of the block's tool record number `record` (see
    /// `ToolRecord`) plus `offset`: made again by `Tool::revive` from the record's bytes.
    Record { at: u32, record: u32, offset: u32 },
    /// The imm64 at `at` is the tool's per-run constant `k` (`Tool::constant`: a pointer to
    /// its state or shadow memory).
    Constant { at: u32, k: u32 },
    /// The imm64 at `at` is the id the tool gives `pc` for its purpose `kind`
    /// (`Tool::id`: given out in translation order, the same for the same pc in one run).
    Id { at: u32, kind: u32, pc: u64 },
}

impl Reloc {
    /// Where the field is, and how wide.
    fn field(&self) -> (u32, usize) {
        match *self {
            Reloc::ExitId { at, .. } | Reloc::RipRel { at, .. } => (at, 4),
            Reloc::Record { at, .. } | Reloc::Constant { at, .. } | Reloc::Id { at, .. } => (at, 8),
        }
    }
}

/// What a tool keeps for a block's code (a guard, a point's check), as plain bytes the tool
/// makes the record from again (`Tool::revive`): its kind (the tool's own numbering) and
/// contents, without pointers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolRecord {
    pub kind: u32,
    pub bytes: Vec<u8>,
}

/// An exit of an image: `Exit` with offsets from the block's start instead of host addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageExit {
    pub kind: ExitKind,
    pub pc: u64,
    pub target: u64,
    pub patch_site: Option<u32>,
    pub stub: u32,
    pub note: Option<String>,
    pub self_entry: Option<u32>,
}

/// A translation that can be installed anywhere (`CodeCache::install`): its code as it was
/// committed, with every exit at its stub and every relocated field zero (so the images of
/// one block made at two places are equal), and its metadata with offsets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockImage {
    pub guest_start: u64,
    pub guest_end: u64,
    pub guest_insns: u32,
    pub lazy_full: bool,
    pub code: Vec<u8>,
    pub body: u32,
    pub check_entry: u32,
    pub pc_map: Vec<PcEntry>,
    pub exits: Vec<ImageExit>,
    pub full_entries: Vec<(Option<u16>, u32)>,
    pub relocs: Vec<Reloc>,
    /// The tool's records the code's `Reloc::Record`s point into.
    pub records: Vec<ToolRecord>,
}

impl ImageExit {
    /// The exit of a block whose code starts at `host`, unlinked.
    pub(crate) fn placed(self, host: u64) -> Exit {
        let abs = |off: u32| host + off as u64;
        Exit {
            block: 0,
            kind: self.kind,
            pc: self.pc,
            target: self.target,
            patch_site: self.patch_site.map_or(0, abs),
            stub: abs(self.stub),
            linked_to: None,
            note: self.note,
            self_entry: self.self_entry.map_or(0, abs),
        }
    }
}

fn put32(code: &mut [u8], at: u32, v: u32) {
    code[at as usize..at as usize + 4].copy_from_slice(&v.to_le_bytes());
}

fn put64(code: &mut [u8], at: u32, v: u64) {
    code[at as usize..at as usize + 8].copy_from_slice(&v.to_le_bytes());
}

/// The values of a block's tool relocations for this run: records made again, constants and
/// ids asked for (None if the tool cannot give one: the image is not installed).
pub(crate) fn tool_value(tool: &mut dyn Tool, r: &Reloc, revived: &[u64]) -> Option<u64> {
    match *r {
        Reloc::Record { record, offset, .. } => Some(revived[record as usize] + offset as u64),
        Reloc::Constant { k, .. } => tool.constant(k),
        Reloc::Id { kind, pc, .. } => tool.id(kind, pc),
        Reloc::ExitId { .. } | Reloc::RipRel { .. } => None,
    }
}

impl CodeCache {
    /// The image of block `id`, or None if it may not be re-used (`Block::reusable`: code the
    /// program may change, a one-instruction translation). Made from the code in the arena,
    /// which links may have patched since: every exit goes back to its stub.
    pub fn image(&self, id: BlockId) -> Option<BlockImage> {
        self.image_of(id).filter(|_| self.block(id).relocatable)
    }

    /// `image` of a block whose tool code may hold values without a relocation (pointers
    /// valid in this process only): for a reinstall in the same process.
    fn image_of(&self, id: BlockId) -> Option<BlockImage> {
        let b = self.block(id);
        if !b.reusable {
            return None;
        }
        let start = b.host_start;
        let off = |host: u64| (host - start) as u32;
        let mut code = self.code_of(b).to_vec();
        let exits: Vec<ImageExit> = b
            .exits
            .iter()
            .map(|&e| {
                let e = self.exit(e);
                ImageExit {
                    kind: e.kind,
                    pc: e.pc,
                    target: e.target,
                    patch_site: (e.patch_site != 0).then(|| off(e.patch_site)),
                    stub: off(e.stub),
                    note: e.note.clone(),
                    self_entry: (e.self_entry != 0).then(|| off(e.self_entry)),
                }
            })
            .collect();
        for e in &exits {
            if let Some(site) = e.patch_site {
                put32(&mut code, site, e.stub.wrapping_sub(site + 4));
            }
        }
        let relocs = self.relocs_of(b);
        for r in relocs {
            let (at, width) = r.field();
            code[at as usize..at as usize + width].fill(0);
        }
        Some(BlockImage {
            guest_start: b.guest_start,
            guest_end: b.guest_end,
            guest_insns: b.guest_insns,
            lazy_full: b.lazy_full,
            code,
            body: off(b.body),
            check_entry: off(b.check_entry),
            pc_map: b.pc_map.clone(),
            exits,
            full_entries: b.full_entries.iter().map(|&(at, h)| (at, off(h))).collect(),
            relocs: relocs.to_vec(),
            records: self.records_of(b).to_vec(),
        })
    }

    /// Installs `image` as a block of this cache, as `translate` would have committed it: at
    /// the arena's cursor near its guest code, its exits given ids here, its RIP-relative
    /// operands aimed from there, its tool records made again by `tool` (`Tool::revive`) and
    /// its tool constants and ids asked of it. None (nothing installed) if an operand's
    /// target is out of rel32 reach from there, or the tool cannot give a value.
    pub fn install(&mut self, image: &BlockImage, tool: &mut dyn Tool) -> Result<Option<BlockId>, CacheError> {
        self.install_as(image, tool, true)
    }

    /// `install`; `relocatable`: whether the image's code holds values only this process
    /// may use (a reinstall's, `image_of`).
    fn install_as(&mut self, image: &BlockImage, tool: &mut dyn Tool, relocatable: bool) -> Result<Option<BlockId>, CacheError> {
        let mut code = image.code.clone();
        // (Values first: a record revived for an image that is not installed would only be
        // one more record nothing runs.)
        let Some(revived) = image.records.iter().map(|r| tool.revive(r.kind, &r.bytes)).collect::<Option<Vec<u64>>>() else { return Ok(None) };
        for r in image.relocs.iter().filter(|r| r.field().1 == 8) {
            let Some(v) = tool_value(tool, r, &revived) else { return Ok(None) };
            put64(&mut code, r.field().0, v);
        }
        let (arena, host) = self.reserve(image.guest_start, image.code.len())?;
        debug_assert_eq!(host % 16, 0, "arena blocks start 16-aligned");
        let first = self.exits.len() as u32;
        for r in &image.relocs {
            match *r {
                Reloc::ExitId { at, exit } => put32(&mut code, at, first + exit),
                Reloc::RipRel { at, to_end, eip, target } => {
                    let next = host + at as u64 + to_end as u64;
                    let rel = if eip {
                        (target as u32).wrapping_sub(next as u32)
                    } else {
                        let Ok(rel) = i32::try_from(target.wrapping_sub(next) as i64) else { return Ok(None) };
                        rel as u32
                    };
                    put32(&mut code, at, rel);
                }
                Reloc::Record { .. } | Reloc::Constant { .. } | Reloc::Id { .. } => {}
            }
        }
        let abs = |off: u32| host + off as u64;
        let exits = image.exits.iter().map(|e| e.clone().placed(host)).collect();
        let block = Block {
            guest_start: image.guest_start,
            body: abs(image.body),
            check_entry: abs(image.check_entry),
            guest_end: image.guest_end,
            host_start: host,
            host_len: code.len() as u32,
            pc_map: image.pc_map.clone(),
            exits: Vec::new(),
            incoming: Vec::new(),
            valid: true,
            guest_insns: image.guest_insns,
            lazy_full: image.lazy_full,
            full_entries: image.full_entries.iter().map(|&(at, off)| (at, abs(off))).collect(),
            relocs: self.add_relocs(&image.relocs),
            records: self.add_records(&image.records),
            reusable: true,
            relocatable,
        };
        self.stats.installed += 1;
        tool.installed(&image.pc_map.iter().map(|e| e.guest_pc).collect::<Vec<_>>());
        Ok(Some(self.commit(arena, &code, block, exits)))
    }

    /// Debugging aid (`RTGRIND_REINSTALL`, see `Reinstall`): replaces the block `id` just
    /// translated by a copy installed from its image at the next place in the arena, so
    /// every run exercises the relocations; its tool records are made again by `tool`. The
    /// old copy stays where it is, never entered. The block to run, None if there is no copy
    /// (a block that may not be re-used, or out of reach).
    pub(crate) fn reinstall(&mut self, id: BlockId, tool: &mut dyn Tool) -> Result<Option<BlockId>, CacheError> {
        let Some(image) = self.image_of(id) else { return Ok(None) };
        let relocatable = self.block(id).relocatable;
        let new = self.install_as(&image, tool, relocatable)?;
        if new.is_some() {
            // The new block took the old one's place in the guest-address maps; the old
            // one has no incoming links yet.
            self.blocks[id as usize].valid = false;
        }
        Ok(new)
    }
}

/// `RTGRIND_REINSTALL`: every translation is run from a copy installed from its image.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reinstall {
    Off,
    /// `1`: the copy's tool records are made again; the translation's stay valid.
    Copy,
    /// `revive`: the translation's tool relocations get values that fault if used
    /// (`translate::POISON`) and no tool record is made for it, so the copy runs only on
    /// records, constants and ids made again for it: a value the tool's code holds
    /// without a relocation shows (a record it cannot have; a constant: `translate` checks).
    Revive,
}

pub(crate) fn reinstall_mode() -> Reinstall {
    static MODE: std::sync::OnceLock<Reinstall> = std::sync::OnceLock::new();
    *MODE.get_or_init(|| match std::env::var_os("RTGRIND_REINSTALL") {
        Some(v) if v == "1" => Reinstall::Copy,
        Some(v) if v == "revive" => Reinstall::Revive,
        _ => Reinstall::Off,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instrument::{Inline, InsnSite, NoInstrumentation, Tool, Version, When};
    use crate::translate::{translate, CodeSource};
    use iced_x86::{Decoder, DecoderOptions, FlowControl, OpKind};

    /// The executable segments of a real program (this test's own binary), at the addresses a
    /// PIE program gets under rtgrind.
    struct Program {
        segments: Vec<(u64, Vec<u8>)>,
    }

    impl Program {
        fn load(path: &std::path::Path) -> Program {
            let f = std::fs::read(path).unwrap();
            let u16_at = |o: usize| u16::from_le_bytes(f[o..o + 2].try_into().unwrap()) as usize;
            let u64_at = |o: usize| u64::from_le_bytes(f[o..o + 8].try_into().unwrap());
            assert_eq!(&f[..4], b"\x7fELF");
            let base = if u16_at(16) == 3 { 0x5655_5555_4000 } else { 0 };
            let (phoff, phentsize, phnum) = (u64_at(0x20) as usize, u16_at(0x36), u16_at(0x38));
            let mut segments = Vec::new();
            for k in 0..phnum {
                let ph = phoff + k * phentsize;
                let (kind, flags) = (u32::from_le_bytes(f[ph..ph + 4].try_into().unwrap()), u32::from_le_bytes(f[ph + 4..ph + 8].try_into().unwrap()));
                if kind == 1 && flags & 1 != 0 {
                    let (off, vaddr, size) = (u64_at(ph + 8) as usize, u64_at(ph + 16), u64_at(ph + 32) as usize);
                    segments.push((base + vaddr, f[off..off + size].to_vec()));
                }
            }
            Program { segments }
        }

        /// Function starts: the targets of the direct calls a linear sweep finds.
        fn callees(&self, max: usize) -> Vec<u64> {
            let mut v = Vec::new();
            for (at, bytes) in &self.segments {
                for i in Decoder::with_ip(64, bytes, *at, DecoderOptions::NONE) {
                    if i.flow_control() == FlowControl::Call && i.op0_kind() == OpKind::NearBranch64 {
                        let t = i.near_branch_target();
                        if self.segments.iter().any(|(a, b)| (*a..*a + b.len() as u64).contains(&t)) && !v.contains(&t) {
                            v.push(t);
                        }
                    }
                    if v.len() == max {
                        return v;
                    }
                }
            }
            v
        }
    }

    impl CodeSource for Program {
        fn read_code(&mut self, addr: u64, buf: &mut [u8]) -> usize {
            let Some((at, bytes)) = self.segments.iter().find(|(at, b)| (*at..*at + b.len() as u64).contains(&addr)) else { return 0 };
            let from = &bytes[(addr - at) as usize..];
            let n = from.len().min(buf.len());
            buf[..n].copy_from_slice(&from[..n]);
            n
        }
        fn fixed_code(&mut self, _: u64, _: u64) -> bool {
            true
        }
    }

    /// Blocks with two versions whose fast one goes on in the full one before every memory
    /// access: lazily built, each such point is an exit with an id of its own.
    struct TwoVersions;
    impl Tool for TwoVersions {
        fn relocatable_code(&self) -> bool {
            true
        }
        fn two_versions(&mut self, _: u64, _: &crate::instrument::BlockCode) -> bool {
            true
        }
        fn before_insn(&mut self, site: &InsnSite, b: &mut Inline) {
            if b.version() == Version::Fast && site.info.used_memory().iter().next().is_some() {
                b.full_version_if(When::Always);
            }
        }
    }

    /// The blocks at `pcs` and at their direct exits' targets, translated into `cache`.
    fn translate_all(cache: &mut CodeCache, src: &mut Program, tool: &mut dyn Tool, pcs: &[u64], max: usize) -> Vec<BlockId> {
        let mut todo: Vec<u64> = pcs.to_vec();
        let mut ids = Vec::new();
        while let Some(pc) = todo.pop() {
            if ids.len() == max || cache.lookup(pc).is_some() {
                continue;
            }
            let Ok(id) = translate(cache, src, tool, pc) else { continue };
            ids.push(id);
            let exits = cache.block(id).exits.clone();
            todo.extend(exits.iter().map(|&e| cache.exit(e)).filter(|e| e.kind == ExitKind::Direct).map(|e| e.target));
        }
        ids
    }

    /// Block `a` of `cache` (its code `cx`: another block took its place since) and block
    /// `b` are the same translation at the same place: the same bytes but for the exit ids,
    /// which are each block's own, and the same metadata.
    fn same_but_exit_ids(cache: &CodeCache, (a, mut cx): (BlockId, Vec<u8>), b: BlockId) {
        let (x, y) = (cache.block(a), cache.block(b));
        let mut cy = cache.code_of(y).to_vec();
        assert_eq!(x.host_start, y.host_start);
        assert_eq!(cache.relocs_of(x), cache.relocs_of(y));
        for r in cache.relocs_of(x) {
            if let Reloc::ExitId { at, exit } = *r {
                let field = |c: &[u8]| u32::from_le_bytes(c[at as usize..at as usize + 4].try_into().unwrap());
                assert_eq!(field(&cx), x.exits[exit as usize], "block at {:#x}: exit {exit}'s id", x.guest_start);
                assert_eq!(field(&cy), y.exits[exit as usize], "block at {:#x}: exit {exit}'s id", y.guest_start);
                put32(&mut cx, at, 0);
                put32(&mut cy, at, 0);
            }
        }
        assert!(cx == cy, "block at {:#x}: installed and translated code differ", x.guest_start);
        assert_eq!((x.body, x.check_entry, x.guest_end, x.guest_insns), (y.body, y.check_entry, y.guest_end, y.guest_insns));
        assert_eq!((&x.pc_map, &x.full_entries, x.lazy_full), (&y.pc_map, &y.full_entries, y.lazy_full));
        for (&e, &f) in x.exits.iter().zip(&y.exits) {
            let (e, f) = (cache.exit(e), cache.exit(f));
            assert_eq!((e.kind, e.pc, e.target, e.patch_site, e.stub, e.self_entry), (f.kind, f.pc, f.target, f.patch_site, f.stub, f.self_entry));
        }
    }

    /// Every block of a real program translated in one cache, installed from its image in
    /// another at another host address, is exactly what translating it there gives; and the
    /// images of the two translations are equal.
    fn installs_as_translated(tool: &mut dyn Tool, preempt: bool) -> (usize, usize) {
        let mut src = Program::load(&std::env::current_exe().unwrap());
        let pcs = src.callees(300);
        let mut first = CodeCache::new();
        first.set_preemption(preempt);
        let ids = translate_all(&mut first, &mut src, tool, &pcs, 800);
        assert!(ids.len() > 500, "only {} blocks", ids.len());
        let mut other = CodeCache::new();
        other.set_preemption(preempt);
        let (mut exit_ids, mut rip_rels) = (0, 0);
        for &id in &ids {
            let image = first.image(id).expect("fixed code has an image");
            let installed = other.install(&image, tool).unwrap().expect("in reach");
            let host = other.block(installed).host_start;
            assert_ne!(host, first.block(id).host_start);
            let code = other.code_of(other.block(installed)).to_vec();
            other.rewind_to(host);
            let translated = translate(&mut other, &mut src, tool, image.guest_start).unwrap();
            same_but_exit_ids(&other, (installed, code), translated);
            assert_eq!(other.image(translated).as_ref(), Some(&image), "block at {:#x}: the image depends on its place", image.guest_start);
            exit_ids += image.relocs.iter().filter(|r| matches!(r, Reloc::ExitId { .. })).count();
            rip_rels += image.relocs.iter().filter(|r| matches!(r, Reloc::RipRel { .. })).count();
        }
        (exit_ids, rip_rels)
    }

    #[test]
    fn images_install_as_translations_at_another_place() {
        let (exit_ids, rip_rels) = installs_as_translated(&mut NoInstrumentation, false);
        assert!(exit_ids > 1000 && rip_rels > 50, "{exit_ids} exit ids, {rip_rels} RIP-relative operands relocated");
        // With preemption counts (their exits), and with lazy full versions (their ways out).
        installs_as_translated(&mut NoInstrumentation, true);
        installs_as_translated(&mut TwoVersions, false);
    }

    /// A tool whose code holds a record (two fields of it), a constant and an id per block,
    /// each of another value in another run (`base`).
    struct Records {
        base: u64,
        // (Boxed: the code holds their addresses.)
        #[allow(clippy::vec_box)]
        revived: Vec<Box<[u64; 2]>>,
    }
    impl Tool for Records {
        fn relocatable_code(&self) -> bool {
            true
        }
        fn block_start(&mut self, pc: u64, b: &mut Inline) {
            let r = b.scratch();
            let rec = b.record(3, pc.to_le_bytes().to_vec());
            b.mov_record(r, rec, 8);
            b.mov_constant(r, 1, self.base);
            b.mov_id(r, 2, pc, self.base ^ pc);
            b.callout_record(dummy_callout, rec, r);
        }
        fn revive(&mut self, kind: u32, bytes: &[u8]) -> Option<u64> {
            assert_eq!(kind, 3);
            self.revived.push(Box::new([u64::from_le_bytes(bytes.try_into().ok()?), self.base]));
            Some(&**self.revived.last().unwrap() as *const [u64; 2] as u64)
        }
        fn constant(&mut self, k: u32) -> Option<u64> {
            (k == 1).then_some(self.base)
        }
        fn id(&mut self, kind: u32, pc: u64) -> Option<u64> {
            (kind == 2).then_some(self.base ^ pc)
        }
    }
    extern "C" fn dummy_callout(_: *mut crate::ThreadContext, _: u64) {}

    /// Installed in another cache for another run of the tool, a block's records are made
    /// again from their bytes and its code holds the new ones' addresses (and fields), the
    /// other run's constant and ids; its image is the translation's.
    #[test]
    fn installed_images_hold_the_tools_values_of_their_run() {
        let mut src = Program::load(&std::env::current_exe().unwrap());
        let pcs = src.callees(50);
        let (mut first, mut other) = (CodeCache::new(), CodeCache::new());
        let mut tool = Records { base: 0x1111_0000_0000, revived: Vec::new() };
        let ids = translate_all(&mut first, &mut src, &mut tool, &pcs, 100);
        // (A block built twice, `wants_pre_steal`, made its record twice.)
        assert!(tool.revived.len() >= ids.len(), "a record per translation");
        let mut run = Records { base: 0x2222_0000_0000, revived: Vec::new() };
        for &id in &ids {
            let image = first.image(id).expect("relocatable");
            assert_eq!(image.records, [ToolRecord { kind: 3, bytes: image.guest_start.to_le_bytes().to_vec() }]);
            let installed = other.install(&image, &mut run).unwrap().unwrap();
            let rec = &**run.revived.last().unwrap();
            assert_eq!(*rec, [image.guest_start, run.base]);
            let code = other.code_of(other.block(installed));
            let field = |at: u32| u64::from_le_bytes(code[at as usize..at as usize + 8].try_into().unwrap());
            let (mut records, mut others) = (0, 0);
            for r in &image.relocs {
                match *r {
                    Reloc::Record { at, record: 0, offset } => {
                        assert_eq!(field(at), rec as *const [u64; 2] as u64 + offset as u64);
                        records += 1;
                    }
                    Reloc::Constant { at, k: 1 } => assert_eq!(field(at), run.base),
                    Reloc::Id { at, kind: 2, pc } => assert_eq!((field(at), pc), (run.base ^ image.guest_start, image.guest_start)),
                    Reloc::ExitId { .. } | Reloc::RipRel { .. } => continue,
                    other => panic!("{other:?}"),
                }
                others += 1;
            }
            assert_eq!((records, others), (2, 4), "the record's field and the call-out's argument, a constant, an id");
            assert_eq!(other.image(installed), Some(image));
        }
    }

    /// A block whose tool code holds a plain call-out's argument has no image.
    #[test]
    fn a_plain_callout_argument_is_not_relocatable() {
        struct Plain;
        impl Tool for Plain {
            fn relocatable_code(&self) -> bool {
                true
            }
            fn block_start(&mut self, _: u64, b: &mut Inline) {
                let r = b.scratch();
                b.callout(dummy_callout, 0x5555_5555_0000, r);
            }
        }
        let mut src = Program::load(&std::env::current_exe().unwrap());
        let pcs = src.callees(3);
        let mut cache = CodeCache::new();
        let plain = translate(&mut cache, &mut src, &mut Plain, pcs[0]).unwrap();
        let none = translate(&mut cache, &mut src, &mut NoInstrumentation, pcs[1]).unwrap();
        assert!(cache.image(plain).is_none() && cache.image(none).is_some());
    }

    /// Code the program may change (a JIT's: the source says it is not fixed) and the
    /// one-instruction steps over a write to their own page have no image.
    #[test]
    fn code_that_may_change_has_no_image() {
        struct Jit(Program);
        impl CodeSource for Jit {
            fn read_code(&mut self, addr: u64, buf: &mut [u8]) -> usize {
                self.0.read_code(addr, buf)
            }
        }
        let mut src = Program::load(&std::env::current_exe().unwrap());
        let pcs = src.callees(3);
        let mut cache = CodeCache::new();
        let fixed = translate(&mut cache, &mut src, &mut NoInstrumentation, pcs[0]).unwrap();
        let step = crate::translate::translate_limited(&mut cache, &mut src, &mut NoInstrumentation, pcs[1], 1).unwrap();
        let jit = translate(&mut cache, &mut Jit(src), &mut NoInstrumentation, pcs[2]).unwrap();
        assert!(cache.image(fixed).is_some());
        assert!(cache.image(step).is_none() && cache.image(jit).is_none());
    }

    #[test]
    fn an_image_is_not_installed_out_of_reach() {
        let mut src = Program::load(&std::env::current_exe().unwrap());
        let mut cache = CodeCache::new();
        let pcs = src.callees(300);
        let ids = translate_all(&mut cache, &mut src, &mut NoInstrumentation, &pcs, 800);
        let mut image = ids.iter().filter_map(|&id| cache.image(id)).find(|i| i.relocs.iter().any(|r| matches!(r, Reloc::RipRel { .. }))).unwrap();
        for r in &mut image.relocs {
            if let Reloc::RipRel { target, .. } = r {
                *target = image.guest_start.wrapping_add(3 << 30);
            }
        }
        let blocks = cache.blocks.len();
        assert_eq!(cache.install(&image, &mut NoInstrumentation).unwrap(), None);
        assert_eq!(cache.blocks.len(), blocks);
    }
}
