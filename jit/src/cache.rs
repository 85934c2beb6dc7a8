//! The code cache: where translations live, how guest addresses find them, how blocks are
//! linked to each other and unlinked again.
//!
//! Code memory. Each arena is one memfd mapped twice: read+execute where the code runs and
//! read+write somewhere else for the translator, so no page is ever writable and executable
//! at once and a wild guest store into the executable view faults like any store to
//! read-only memory. Arenas are placed within ±2 GiB of the guest code they hold so that
//! RIP-relative operands and block links stay rel32. After `fork` the memfd would be shared
//! with the child, so the child copies every arena into a private memfd (`after_fork`).
//!
//! Linking. A direct exit first jumps to its stub, which records the exit id and leaves to
//! the dispatcher. The dispatcher then patches the jump's aligned rel32 to point straight at
//! the target's translation (one atomic 4-byte store). Every block keeps the exits linked
//! into it, so invalidating a block sends them back to their stubs.

use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub type BlockId = u32;
pub type ExitId = u32;

const ARENA_SIZE: usize = 64 << 20;
/// Translations are placed at most this far from their guest code.
const NEAR: u64 = 1 << 30;

struct Arena {
    exec: u64,
    rw: *mut u8,
    used: usize,
    /// Bytes from the start whose pages are mapped in both views already (see `populate`).
    populated: usize,
}

/// What the faulting thread's registers look like at a host instruction of a translation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fixup {
    /// Registers are exactly the guest's.
    None,
    /// rcx and rdx are saved in `save_rcx`/`save_rdx` (inside an indirect-branch sequence).
    IblSaved,
    /// This register is saved in `scratch[0]` (a rewritten RIP-relative operand).
    Scratch(u8),
    /// These registers are saved in `scratch[0]` and `scratch[1]` (a `gs`-relative operand
    /// with 32-bit addressing).
    Scratch2(u8, u8),
    /// Inside a tool's code, which saved the guest's status flags in `flags_save`
    /// (`lahf`/`seto` layout: AH in bits 8-15, OF in bit 0).
    FlagsSaved,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcEntry {
    pub host_off: u32,
    pub guest_pc: u64,
    pub guest_len: u8,
    pub fixup: Fixup,
    /// Registers lent to a tool whose guest values are in `tool_spill` here (applied after
    /// `fixup`).
    pub stolen: u16,
    /// In a tool's code before the instruction, whose shadow accesses fault only where the
    /// guest's address is non-canonical: whether the instruction's own access would raise a
    /// stack-segment fault (SIGBUS: its address is based on rsp or rbp) rather than a general
    /// protection fault (SIGSEGV), whatever register the tool's access went through.
    pub tool_stack_segment: Option<bool>,
    /// The bytes here end the block and only raise an exception (`int3`, `int n`, `int1`, a
    /// privileged instruction, the `ud2` that stands for one the guest's CPU lacks): a trap
    /// reports the pc just past them, which is the guest's pc past the instruction.
    pub trap: bool,
}

pub struct Block {
    pub guest_start: u64,
    /// Where forward direct links enter the block (after the lookup prefix and the
    /// preemption count, if any).
    pub body: u64,
    /// Where the dispatcher and backward direct links enter: the preemption count, then the
    /// body (the same as `body` in translations without counting).
    pub check_entry: u64,
    /// One past the last guest byte the block was translated from.
    pub guest_end: u64,
    pub host_start: u64,
    pub host_len: u32,
    pub pc_map: Vec<PcEntry>,
    pub exits: Vec<ExitId>,
    pub incoming: Vec<ExitId>,
    pub valid: bool,
    pub guest_insns: u32,
    /// Built with its fast version only (`CodeCache::eager_full` off): the ways into the full
    /// version leave for the runtime (`ExitKind::FullVersion`), which replaces the block by
    /// one with both versions (`translate::translate_full_version`).
    pub lazy_full: bool,
    /// In a block with both versions: where a thread whose fast version (of this block or of
    /// the lazy one it replaced) went on in the full one enters it, every register and the
    /// flags holding guest values, by point (`None` the block start, `Some(k)` before its
    /// k-th instruction).
    pub full_entries: Vec<(Option<u16>, u64)>,
    /// The fields of the code that depend on where the block is and on the exits before it
    /// (see `image`): where they are in the cache's table (`CodeCache::relocs_of`).
    pub relocs: std::ops::Range<u32>,
    /// Whether the block may be re-used from its image (`CodeCache::image`): not code the
    /// program may change (`CodeSource::fixed_code`), nor a one-instruction translation
    /// that steps over a write to its own page.
    pub reusable: bool,
    /// Whether its tool code holds only values the image relocates (`Tool::relocatable_code`,
    /// and no plain `Inline::callout` argument), so that it may run in another process.
    pub relocatable: bool,
    /// The tool's records its code points into (`image::ToolRecord`): where they are in the
    /// cache's table (`CodeCache::records_of`).
    pub records: std::ops::Range<u32>,
}

impl Block {
    /// Where the full version is entered at point `at` (see `full_entries`).
    pub fn full_entry(&self, at: Option<u16>) -> Option<u64> {
        self.full_entries.iter().find(|e| e.0 == at).map(|e| e.1)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitKind {
    /// A direct jump, call, conditional or fall-through edge to `target`.
    Direct,
    /// The block ended at `syscall`; `target` is the instruction after it.
    Syscall,
    /// `cpuid` at `pc`; `target` is the instruction after it.
    Cpuid,
    /// An instruction the engine cannot run, at `pc`.
    Unsupported,
    /// An instruction at `pc` the runtime emulates (`translate::emulated`: far transfers,
    /// the guest's `gs` selector); `target` is the instruction after it.
    Emulate,
    /// An instruction at `pc` that saved the x87 environment with its last-instruction
    /// pointer (`translate::saved_fip`), a code-cache address the runtime makes the guest's;
    /// `target` is the instruction after it.
    X87Saved,
    /// `xgetbv` at `pc` (`cpuid::xgetbv`); `target` is the instruction after it.
    Xgetbv,
    /// `int 0x80` at `pc`: the kernel's 32-bit system call; `target` is the instruction after it.
    Int80,
    /// `rdtsc` or `rdtscp` at `pc` with a virtual time-stamp counter; `target` is after it.
    Rdtsc,
    /// `rdrand` or `rdseed` at `pc` in a repeatable run: the runtime writes seeded random bits
    /// of `bits` width into GPR `reg` (and sets CF); `target` is after it.
    Random { reg: u8, bits: u8 },
    /// A client request (`instrument::CLIENT_REQUEST`) at `pc`: the guest asks the tool
    /// something; `target` is after the request sequence.
    ClientRequest,
    /// The thread's quantum ran out at the start of the block at `target` (not yet run).
    Preempt,
    /// `pause` at `pc` with several threads: a spin-wait's hint that the thread waits for
    /// another (Valgrind yields there too); `target` is after it.
    Yield,
    /// The fast version of a lazily built block (`Block::lazy_full`) at `pc` goes on in its
    /// full version at point `at` (see `Block::full_entries`), which is not built yet;
    /// `target` is the guest pc there, every register and the flags hold guest values.
    FullVersion { at: Option<u16> },
}

#[derive(Clone, Debug)]
pub struct Exit {
    pub block: BlockId,
    pub kind: ExitKind,
    /// Guest address of the instruction that caused the exit.
    pub pc: u64,
    /// Guest address execution continues at.
    pub target: u64,
    /// Host address of the patchable rel32 field (0 if not patchable).
    pub patch_site: u64,
    /// Host address of the stub the exit takes while unlinked.
    pub stub: u64,
    pub linked_to: Option<BlockId>,
    /// Text of an unsupported instruction, for the error message.
    pub note: Option<String>,
    /// Non-zero for a loop back to the start of its own block with registers stolen: where a
    /// link to that block enters (past the spills of the block's start). It links to no other
    /// block: its stub reloads the registers first.
    pub self_entry: u64,
}

#[derive(Default, Debug, Clone, Copy)]
pub struct CacheStats {
    pub blocks_translated: u64,
    pub guest_insns_translated: u64,
    pub bytes_used: u64,
    pub links: u64,
    pub invalidated: u64,
    pub arenas: u64,
    /// Blocks installed from images (`CodeCache::install`), not translated.
    pub installed: u64,
    /// Of those, the blocks installed from the translation cache's files (`persist`).
    pub from_disk: u64,
}

#[derive(Default)]
pub struct CodeCache {
    arenas: Vec<Arena>,
    pub(crate) blocks: Vec<Block>,
    /// (Fx hashing: the dispatcher looks a block up at every exit it handles.)
    by_guest: FxHashMap<u64, BlockId>,
    /// Live blocks by guest start, to find the blocks an address range overlaps.
    by_guest_sorted: BTreeMap<u64, BlockId>,
    by_host: BTreeMap<u64, BlockId>,
    pub(crate) exits: Vec<Exit>,
    /// Every block's relocations (`Block::relocs`), in one table: a block's are a few, and
    /// a vector each cost an allocation per translation.
    relocs: Vec<crate::image::Reloc>,
    /// Every block's tool records (`Block::records`), in one table.
    records: Vec<crate::image::ToolRecord>,
    pub stats: CacheStats,
    /// Whether new translations count blocks against the thread's quantum.
    pub(crate) preempt: bool,
    /// Whether `rdtsc`/`rdtscp`, `rdrand` and `rdseed` exit to the runtime (repeatable runs)
    /// instead of running.
    pub virtual_tsc: bool,
    /// Whether every block entry is counted (forward links too), so a thread's count names
    /// each block it executes (instance names for `--stop-at`).
    pub count_all: bool,
    /// Whether translations are timed by phase (`--stats`), and the totals.
    pub profile: bool,
    /// Whether a block with two versions gets both at once; off, its full version is built
    /// when a thread first needs it (`Block::lazy_full`): most blocks never do.
    pub eager_full: bool,
    pub profile_stats: crate::profile::TranslateProfile,
    /// The status flags the code at a branch target reads before writing them
    /// (`translate::flags_read_at`), by target: a function called from many blocks is
    /// decoded for it once. Emptied when any code is invalidated.
    pub(crate) flags_read: FxHashMap<u64, (u32, u32)>,
    /// The translation cache across runs (`persist`): looked up before translating a block
    /// of a tool whose code is relocatable, and told of each block translated.
    pub disk: Option<Box<crate::persist::DiskCache>>,
}

/// Debugging aid: with `RTGRIND_DUMP_CODE=PREFIX`, every translation is also written to the
/// file `PREFIX.ARENA` at its offset in the arena, so a profiler's memfd offsets can be
/// disassembled (`objdump -D -b binary -mi386:x86-64 --start-address=OFF PREFIX.0`), and a
/// line `host-address length guest-pc guest-end` to `PREFIX.index`, so samples can be summed
/// per guest block (`benches/profile-blocks.py`).
fn dump_code(arena: usize, offset: usize, code: &[u8], block: &Block) {
    static PREFIX: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let Some(prefix) = PREFIX.get_or_init(|| std::env::var("RTGRIND_DUMP_CODE").ok()) else { return };
    use std::os::unix::fs::FileExt;
    if let Ok(f) = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(format!("{prefix}.{arena}")) {
        let _ = f.write_all_at(code, offset as u64);
    }
    use std::io::Write;
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(format!("{prefix}.index")) {
        let _ = writeln!(f, "{:#x} {} {:#x} {:#x}", block.host_start, code.len(), block.guest_start, block.guest_end);
    }
}

/// Longest guest byte range one block may cover (bounds invalidation look-ups).
pub const MAX_BLOCK_GUEST_BYTES: u64 = 4096;

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("cannot allocate code cache near {0:#x}: {1}")]
    NoSpace(u64, std::io::Error),
}

impl CodeCache {
    pub fn new() -> CodeCache {
        CodeCache::default()
    }

    /// Turns counted preemption points on for all translations (dropping the existing ones,
    /// which were made without them). Callers must also clear every thread's lookup table.
    pub fn set_preemption(&mut self, on: bool) {
        if self.preempt != on {
            self.preempt = on;
            self.invalidate(0, u64::MAX);
        }
    }

    pub fn preemption(&self) -> bool {
        self.preempt
    }

    pub fn lookup(&self, guest: u64) -> Option<BlockId> {
        self.by_guest.get(&guest).copied()
    }
    pub fn block(&self, id: BlockId) -> &Block {
        &self.blocks[id as usize]
    }
    pub fn exit(&self, id: ExitId) -> &Exit {
        &self.exits[id as usize]
    }

    /// Whether `host` is inside an executable arena.
    pub fn contains_host(&self, host: u64) -> bool {
        self.arenas.iter().any(|a| a.holds(host))
    }

    /// Address ranges the engine owns (both views of every arena), for the guest memory map.
    pub fn engine_ranges(&self) -> Vec<(u64, u64)> {
        let mut v = Vec::new();
        for a in &self.arenas {
            v.push((a.exec, ARENA_SIZE as u64));
            v.push((a.rw as u64, ARENA_SIZE as u64));
        }
        v
    }

    /// The host address the next block near `guest` will be assembled at, making sure
    /// `room` bytes are free there.
    pub(crate) fn reserve(&mut self, guest: u64, room: usize) -> Result<(usize, u64), CacheError> {
        let near = |a: &Arena| a.exec.abs_diff(guest) < NEAR && a.used + room <= ARENA_SIZE;
        if let Some(i) = self.arenas.iter().position(near) {
            let a = &self.arenas[i];
            return Ok((i, a.exec + a.used as u64));
        }
        let taken: Vec<u64> = self.arenas.iter().map(|a| a.exec).collect();
        let a = Arena::new_near(guest, &taken).map_err(|e| CacheError::NoSpace(guest, e))?;
        self.stats.arenas += 1;
        self.arenas.push(a);
        let i = self.arenas.len() - 1;
        Ok((i, self.arenas[i].exec))
    }

    /// Copies finished code into arena `arena` at its cursor and registers the block.
    pub(crate) fn commit(&mut self, arena: usize, code: &[u8], mut block: Block, exits: Vec<Exit>) -> BlockId {
        let a = &mut self.arenas[arena];
        assert_eq!(block.host_start, a.exec + a.used as u64);
        assert!(a.used + code.len() <= ARENA_SIZE);
        a.populate(a.used + code.len());
        // SAFETY: [used, used+len) lies inside the rw view of this arena (checked above), and
        // no translation occupies it yet, so nothing executes these bytes while we write.
        unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), a.rw.add(a.used), code.len()) };
        dump_code(arena, a.used, code, &block);
        a.used += (code.len() + 15) & !15;
        let id = self.blocks.len() as BlockId;
        for mut e in exits {
            e.block = id;
            block.exits.push(self.exits.len() as ExitId);
            self.exits.push(e);
        }
        self.stats.bytes_used += code.len() as u64;
        self.by_guest.insert(block.guest_start, id);
        self.by_guest_sorted.insert(block.guest_start, id);
        self.by_host.insert(block.host_start, id);
        self.blocks.push(block);
        id
    }

    /// Adds a block's relocations to the table; where they are, for `Block::relocs`.
    pub(crate) fn add_relocs(&mut self, r: &[crate::image::Reloc]) -> std::ops::Range<u32> {
        let start = self.relocs.len() as u32;
        self.relocs.extend_from_slice(r);
        start..self.relocs.len() as u32
    }

    /// Adds a block's tool records to the table; where they are, for `Block::records`.
    pub(crate) fn add_records(&mut self, r: &[crate::image::ToolRecord]) -> std::ops::Range<u32> {
        let start = self.records.len() as u32;
        self.records.extend_from_slice(r);
        start..self.records.len() as u32
    }

    /// The tool records of block `b`.
    pub fn records_of(&self, b: &Block) -> &[crate::image::ToolRecord] {
        &self.records[b.records.start as usize..b.records.end as usize]
    }

    /// The relocations of block `b`.
    pub fn relocs_of(&self, b: &Block) -> &[crate::image::Reloc] {
        &self.relocs[b.relocs.start as usize..b.relocs.end as usize]
    }

    /// The code of block `b` as it is now (links patched).
    pub(crate) fn code_of(&self, b: &Block) -> &[u8] {
        let a = self.arenas.iter().find(|a| a.holds(b.host_start)).expect("a block lies in an arena");
        // SAFETY: the block's bytes were copied into this arena's rw view by `commit` and stay
        // mapped; only exits' rel32 fields change, by aligned atomic stores of this thread.
        unsafe { std::slice::from_raw_parts(a.rw.add((b.host_start - a.exec) as usize), b.host_len as usize) }
    }

    /// Moves the cursor of the arena holding `host` back to it (tests: a translation made
    /// again at the place of another).
    #[cfg(test)]
    pub(crate) fn rewind_to(&mut self, host: u64) {
        let a = self.arenas.iter_mut().find(|a| a.holds(host)).expect("an arena");
        a.used = (host - a.exec) as usize;
    }

    fn write_rel32(&mut self, site: u64, target: u64) -> bool {
        let rel = target as i64 - (site as i64 + 4);
        let Ok(rel) = i32::try_from(rel) else { return false };
        let Some(a) = self.arenas.iter().find(|a| a.holds(site) && a.holds(site + 3)) else {
            return false;
        };
        let off = (site - a.exec) as usize;
        debug_assert_eq!(site % 4, 0);
        // SAFETY: `site` is a rel32 field inside this arena's code (an exit's patch site), and
        // it is 4-aligned, so this single aligned store is atomic for any thread executing it.
        unsafe {
            let p = a.rw.add(off) as *const std::sync::atomic::AtomicI32;
            (*p).store(rel, std::sync::atomic::Ordering::Release);
        }
        true
    }

    /// Makes exit `e` jump straight to block `to`. Returns false if they are too far apart.
    pub fn link(&mut self, e: ExitId, to: BlockId) -> bool {
        let ex = &self.exits[e as usize];
        if ex.patch_site == 0 || ex.linked_to.is_some() || !self.blocks[to as usize].valid {
            return false;
        }
        if ex.self_entry != 0 && ex.block != to {
            return false;
        }
        let b = &self.blocks[to as usize];
        let host = if ex.self_entry != 0 {
            ex.self_entry
        } else if ex.target <= ex.pc || self.count_all {
            b.check_entry
        } else {
            b.body
        };
        let site = ex.patch_site;
        if !self.write_rel32(site, host) {
            return false;
        }
        self.exits[e as usize].linked_to = Some(to);
        self.blocks[to as usize].incoming.push(e);
        self.stats.links += 1;
        true
    }

    /// Sends exit `e` back through its stub.
    pub fn unlink(&mut self, e: ExitId) {
        let ex = &self.exits[e as usize];
        if ex.linked_to.is_none() {
            return;
        }
        let (site, stub) = (ex.patch_site, ex.stub);
        self.write_rel32(site, stub);
        self.exits[e as usize].linked_to = None;
    }

    /// Unlinks every exit of `b`, so the thread running it returns to the dispatcher at the
    /// end of the block. Safe to call from a signal handler on the thread that runs `b`.
    pub fn unlink_block_exits(&mut self, b: BlockId) {
        for i in 0..self.blocks[b as usize].exits.len() {
            let e = self.blocks[b as usize].exits[i];
            self.unlink(e);
        }
    }

    /// The block whose code contains host address `host`.
    pub fn block_at_host(&self, host: u64) -> Option<BlockId> {
        let (_, &id) = self.by_host.range(..=host).next_back()?;
        let b = &self.blocks[id as usize];
        (host < b.host_start + b.host_len as u64).then_some(id)
    }

    /// The guest instruction a host pc belongs to, with the register fix-up in force there,
    /// and the host address where that entry starts.
    pub fn guest_pc_at(&self, host: u64) -> Option<(PcEntry, u64)> {
        let b = &self.blocks[self.block_at_host(host)? as usize];
        let off = (host - b.host_start) as u32;
        let i = b.pc_map.partition_point(|e| e.host_off <= off);
        (i > 0).then(|| (b.pc_map[i - 1], b.host_start + b.pc_map[i - 1].host_off as u64))
    }

    /// The guest's address of the instruction at an x87 last-instruction pointer (FIP) the
    /// CPU saved while running translated code: all 64 bits of it (`wide`), or its low 32 (the
    /// 32-bit formats', which the guest's would keep of the guest's address too).
    pub fn guest_fip(&self, fip: u64, wide: bool) -> Option<u64> {
        let at = |host: u64| self.guest_pc_at(host).map(|(e, _)| e.guest_pc);
        if wide {
            return if self.contains_host(fip) { at(fip) } else { None };
        }
        // An arena is 64 MiB: it lies in one or two 4 GiB windows.
        let ends = self.arenas.iter().flat_map(|a| [a.exec, a.exec + ARENA_SIZE as u64 - 1]);
        ends.map(|x| x & !0xffff_ffff | fip & 0xffff_ffff).find(|&h| self.contains_host(h)).and_then(at)
    }

    /// Drops every translation of guest code overlapping `[start, end)`. Returns the number
    /// of blocks dropped; the caller must also flush inline lookup tables that may point at them.
    pub fn invalidate(&mut self, start: u64, end: u64) -> usize {
        self.flags_read.clear();
        let lo = start.saturating_sub(MAX_BLOCK_GUEST_BYTES);
        let ids: Vec<BlockId> = self
            .by_guest_sorted
            .range(lo..end)
            .map(|(_, &id)| id)
            .filter(|&id| {
                let b = &self.blocks[id as usize];
                b.guest_start < end && b.guest_end > start
            })
            .collect();
        for &id in &ids {
            self.drop_block(id);
        }
        self.stats.invalidated += ids.len() as u64;
        ids.len()
    }

    /// Drops the translation `id`: guest addresses no longer find it and the exits linked
    /// into it go back to their stubs. Its code stays where it is (a thread may still be
    /// leaving it); the caller must also flush inline lookup entries naming it.
    pub fn drop_block(&mut self, id: BlockId) {
        let b = &mut self.blocks[id as usize];
        if !b.valid {
            return;
        }
        b.valid = false;
        let gs = b.guest_start;
        let incoming = std::mem::take(&mut b.incoming);
        self.by_guest.remove(&gs);
        self.by_guest_sorted.remove(&gs);
        for e in incoming {
            if self.exits[e as usize].linked_to == Some(id) {
                self.unlink(e);
            }
        }
        // Its own outgoing links stay patched but can no longer be reached.
    }

    /// Snapshots every arena into a fresh memfd before `fork`: after the fork the child
    /// switches to the snapshot ([`CodeCache::after_fork_child`]) while the parent keeps the
    /// original, so neither ever sees the other's later translations or link patches.
    pub fn prepare_fork(&self) -> std::io::Result<ForkSnapshot> {
        let mut arenas = Vec::new();
        for a in &self.arenas {
            let fresh = Arena::alloc_fd()?;
            let rw = rw_view(fresh.as_raw_fd())?;
            // SAFETY: both views are ARENA_SIZE long; `used` bytes of the old view are initialised.
            unsafe { std::ptr::copy_nonoverlapping(a.rw, rw as *mut u8, a.used) };
            arenas.push((fresh, rw as *mut u8));
        }
        Ok(ForkSnapshot { arenas })
    }

    /// In the child: continue on the snapshot, at the same executable addresses.
    pub fn after_fork_child(&mut self, snap: ForkSnapshot) -> std::io::Result<()> {
        if let Some(disk) = self.disk.as_mut() {
            disk.forked();
        }
        for (a, (fd, rw)) in self.arenas.iter_mut().zip(snap.arenas) {
            map(a.exec, fd.as_raw_fd(), libc::PROT_READ | libc::PROT_EXEC, libc::MAP_FIXED)?;
            // SAFETY: the old rw view belongs to the parent's memfd and is no longer used here.
            unsafe { libc::munmap(a.rw as *mut libc::c_void, ARENA_SIZE) };
            a.rw = rw;
            // (Pages past the copied code are the snapshot's to map in.)
            a.populated = a.used;
            // (The memfd stays alive through its mappings: no descriptor is kept, which the
            // guest could close or reuse, and dropping it would then close the guest's file.)
            drop(fd);
        }
        Ok(())
    }

    /// In the parent (or after a failed fork): drop the snapshot.
    pub fn discard_fork(&mut self, snap: ForkSnapshot) {
        for (_fd, rw) in snap.arenas {
            // SAFETY: the snapshot's view is ours alone and nothing refers to it.
            unsafe { libc::munmap(rw as *mut libc::c_void, ARENA_SIZE) };
        }
    }
}

/// Private copies of the code arenas made just before `fork` (see `prepare_fork`).
pub struct ForkSnapshot {
    arenas: Vec<(OwnedFd, *mut u8)>,
}

/// Where the writable views of the arenas go: a slice of the address space no guest has
/// anything in (below PIE programs and their heaps at 0x55..., above non-PIE ones, apart from
/// the shadow slices and the tools' buffers), so that a wild guest store, which natively
/// faults, cannot land in translated code. Left to the kernel, the views went beside the
/// guest's own mappings (a store 100 MB past a malloc'd buffer overwrote one).
const RW_PLACE: u64 = 0x5100_0000_0000;

/// A read-write view of the arena memfd `fd`, at `RW_PLACE` or above it (the kernel's choice
/// if that whole slice is taken).
fn rw_view(fd: i32) -> std::io::Result<u64> {
    let step = ARENA_SIZE as u64;
    for k in 0..(1u64 << 40) / step {
        match map(RW_PLACE + k * step, fd, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_FIXED_NOREPLACE) {
            Ok(p) => return Ok(p),
            // Only a place taken is worth another try (not a seccomp filter's denial).
            Err(e) if e.raw_os_error() != Some(libc::EEXIST) => return Err(e),
            Err(_) => {}
        }
    }
    map(0, fd, libc::PROT_READ | libc::PROT_WRITE, 0)
}

fn map(addr: u64, fd: i32, prot: i32, extra: i32) -> std::io::Result<u64> {
    // SAFETY: mapping a memfd we own; with MAP_FIXED the caller replaces only its own arena,
    // otherwise MAP_FIXED_NOREPLACE or a kernel-chosen address cannot clobber anything.
    let p = unsafe { libc::mmap(addr as *mut libc::c_void, ARENA_SIZE, prot, libc::MAP_SHARED | extra, fd, 0) };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    if p as u64 & 0xfff != 0 {
        // A seccomp filter's SECCOMP_RET_TRAP skipped the call, which then "returns" its own
        // number (the kernel rolls rax back to it) and raises SIGSYS.
        return Err(std::io::Error::from_raw_os_error(libc::ENOSYS));
    }
    if extra & libc::MAP_FIXED_NOREPLACE != 0 && p as u64 != addr {
        // SAFETY: an old kernel ignored the hint; undo our own fresh mapping.
        unsafe { libc::munmap(p, ARENA_SIZE) };
        return Err(std::io::Error::from_raw_os_error(libc::EEXIST));
    }
    Ok(p as u64)
}

impl Arena {
    /// Whether the executable view holds `host`.
    fn holds(&self, host: u64) -> bool {
        host >= self.exec && host < self.exec + ARENA_SIZE as u64
    }

    fn alloc_fd() -> std::io::Result<OwnedFd> {
        // SAFETY: memfd_create with a static name; the fd is owned below.
        let fd = unsafe { libc::memfd_create(c"rtgrind-code".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sizing our own memfd.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), ARENA_SIZE as i64) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(fd)
    }

    /// Maps an arena whose executable view is within `NEAR` of `guest`: first below it
    /// (leaving room above a non-PIE program for its heap), then above; never at the low 32
    /// bits of an arena in `taken`. (An x87 save's 32-bit last-instruction pointer names a
    /// cache address by its low 32 bits, `guest_fip`: two arenas in the same place of their 4
    /// GiB windows made it name both, and with ASLR one run in about 60 found the other.)
    fn new_near(guest: u64, taken: &[u64]) -> std::io::Result<Arena> {
        let fd = Arena::alloc_fd()?;
        let step = ARENA_SIZE as u64;
        let g = guest & !(step - 1);
        let below = (2..14u64).filter_map(|k| g.checked_sub(k * step + (128 << 20)));
        let above = (0..12u64).map(|k| g + (256 << 20) + k * step);
        let mut exec = None;
        for cand in below.chain(above) {
            // Keep clear of low memory, where non-PIE programs and their heaps live.
            if cand < 0x1000_0000 || cand + step > 0x7fff_ffff_f000 || taken.iter().any(|&t| t as u32 == cand as u32) {
                continue;
            }
            match map(cand, fd.as_raw_fd(), libc::PROT_READ | libc::PROT_EXEC, libc::MAP_FIXED_NOREPLACE) {
                Ok(p) => {
                    exec = Some(p);
                    break;
                }
                Err(e) if e.raw_os_error() != Some(libc::EEXIST) => return Err(e),
                Err(_) => {}
            }
        }
        let exec = exec.ok_or_else(|| std::io::Error::from_raw_os_error(libc::ENOMEM))?;
        let rw = rw_view(fd.as_raw_fd())?;
        // (The descriptor closes here; the mappings keep the memfd.)
        Ok(Arena { exec, rw: rw as *mut u8, used: 0, populated: 0 })
    }

    /// Maps the pages up to `end` (and the rest of their chunk of `POPULATE` bytes) in both
    /// views at once: each page of code was otherwise two page faults, its first write (which
    /// allocates it) and its first execution (issue 29: a traced `python3 -c pass` writes 25 MB
    /// of code, 12,000 of its 45,000 faults). A kernel without `MADV_POPULATE_*` (before 5.14)
    /// faults them in one by one as before.
    fn populate(&mut self, end: usize) {
        const POPULATE: usize = 256 << 10;
        if end <= self.populated {
            return;
        }
        let (from, to) = (self.populated & !4095, end.next_multiple_of(POPULATE).min(ARENA_SIZE));
        let len = to - from;
        // SAFETY: both ranges lie inside this arena's two mappings (`to` <= ARENA_SIZE); the
        // advice only maps pages in (their contents do not change), and a failure is harmless.
        unsafe {
            libc::madvise(self.rw.add(from) as *mut libc::c_void, len, libc::MADV_POPULATE_WRITE);
            libc::madvise((self.exec + from as u64) as *mut libc::c_void, len, libc::MADV_POPULATE_READ);
        }
        self.populated = to;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Arenas near guest code 4 GiB apart are not at the same low 32 bits, so a 32-bit
    /// last-instruction pointer names one of them (`guest_fip`).
    #[test]
    fn no_two_arenas_share_their_low_32_bits() {
        let mut cache = CodeCache::new();
        let guest = 0x3000_0000_0000u64;
        let hosts: Vec<u64> = (0..3).map(|k| cache.reserve(guest + (k << 32), 16).unwrap().1).collect();
        assert_eq!(cache.arenas.len(), 3);
        for (i, a) in hosts.iter().enumerate() {
            assert!(a.abs_diff(guest + ((i as u64) << 32)) < NEAR);
            for b in &hosts[..i] {
                assert_ne!(*a as u32, *b as u32, "{a:#x} {b:#x}");
            }
        }
    }
}
