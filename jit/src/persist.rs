//! The translation cache across runs (issue 29, `docs/TRANSLATION-CACHE.md` steps 4 and 5):
//! block images kept in files of a directory, looked up before a block is translated.
//!
//! Key: what the run is (rtgrind's build ID and load address, the tool's name), what the
//! tool's code depends on now (`Tool::code_key`, asked at each lookup: a tool may change mode
//! mid-run), the engine's modes, the variant (lazy fast-only or not), and the block's place
//! as the module's build ID and offset. Check: the module is at the image's base, every guest
//! byte range the translation read (its block, the flags look-ahead's targets, a tool's
//! `decode_code`s) hashes as then, and the tool's digest of the plan items the block's pcs
//! consult (`Tool::plan_digest`) is the same.
//!
//! Files. A run writes the images it made to a file of its own at its end (a temporary file
//! renamed into place, so a run killed mid-write leaves nothing a reader takes), and reads
//! the union of every file in the directory at its start. A file that is not whole, not this
//! format or another rtgrind's is skipped; an entry whose checksum fails is a miss.
//!
//! Placement. Nothing of this lives where the kernel puts mappings (`mmap` without a hint):
//! the guest's own mappings go there after rtgrind's, so a cache that grew rtgrind's heap
//! or mapped its files there would move the libraries of the next runs, and their images
//! would no longer apply. The files, the merged index and the log of this run's images are
//! mapped at a fixed place (`PLACE`).

use crate::cache::{BlockId, CodeCache, ExitKind, Fixup, PcEntry};
use crate::image::{BlockImage, ImageExit, Reloc, ToolRecord};
use crate::instrument::Tool;
use crate::translate::CodeSource;
use std::cell::RefCell;
use std::hash::Hasher;
use std::path::{Path, PathBuf};

/// The format's name and version, first in every file.
const MAGIC: [u8; 8] = *b"RTGCODE\x02";
/// Where the cache's memory goes: above the host stacks (`kernel::threads::HOST_STACKS`,
/// 0x5200_0000_0000), below rtgrind's own text (0x5555_5555_4000 without ASLR).
const PLACE: u64 = 0x5300_0000_0000;
const PLACE_END: u64 = 0x5400_0000_0000;
/// Ranges one translation may read and still be stored (its block and the flag look-ahead
/// at each branch target: a block of 64 instructions rarely has more).
const MAX_READS: usize = 48;
/// Images one run may add (address space reserved for the log, touched as used).
const MAX_MADE: usize = 1 << 18;

/// A module of guest code: where it is and its identity (a hash of its build ID).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Module {
    pub base: u64,
    pub id: u64,
}

/// A guest byte range a translation read: where, how many bytes it asked for, how many it got
/// (fewer where executable memory ends: more there later would change the translation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Read {
    pub at: u64,
    pub asked: u32,
    pub got: u32,
}

thread_local! {
    /// The reads of the translation under way on this thread, while one is recorded.
    static READS: RefCell<Option<Vec<Read>>> = const { RefCell::new(None) };
}

/// Notes that the translation under way read `got` of `asked` guest bytes at `at` (the
/// engine's reads, and a tool's look-ahead through its own decoder).
pub fn note_read(at: u64, asked: usize, got: usize) {
    READS.with(|r| {
        if let Some(v) = r.borrow_mut().as_mut() {
            v.push(Read { at, asked: asked as u32, got: got as u32 });
        }
    });
}

/// Records the reads of one translation until `finish` (or until dropped, on an error path).
pub(crate) struct Recording;

impl Recording {
    pub(crate) fn start() -> Recording {
        READS.with(|r| *r.borrow_mut() = Some(Vec::new()));
        Recording
    }
    pub(crate) fn finish(self) -> Vec<Read> {
        READS.with(|r| r.borrow_mut().take()).unwrap_or_default()
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        READS.with(|r| *r.borrow_mut() = None);
    }
}

/// A hash of the bytes `reads` name as they are now, or None if a read now gets a different
/// number of bytes.
pub fn hash_reads(src: &mut dyn CodeSource, reads: &[Read]) -> Option<u64> {
    let mut buf = [0u8; 1024];
    let mut h = 0;
    for r in reads {
        let got = src.read_code(r.at, buf.get_mut(..r.asked as usize)?);
        if got != r.got as usize {
            return None;
        }
        h = hash_bytes(h ^ r.at, &buf[..got]);
    }
    Some(h)
}

fn hash_of(bytes: &[u8]) -> u64 {
    hash_bytes(0, bytes)
}

/// A fast 64-bit hash of `bytes` from `seed`, a word at a time: each step is a bijection of
/// the state for a given word and injective in the word for a given state, so two inputs of
/// one length that differ in one word always hash differently (a changed instruction, a
/// damaged byte); SipHash was 12% of a warm run.
fn hash_bytes(seed: u64, bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let step = |h: u64, w: u64| (h ^ w).rotate_left(29).wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    let mut h = step(seed, bytes.len() as u64);
    for w in &mut words {
        h = step(h, u64::from_le_bytes(w.try_into().unwrap()));
    }
    let mut last = [0u8; 8];
    last[..words.remainder().len()].copy_from_slice(words.remainder());
    h = step(h, u64::from_le_bytes(last));
    h ^ h >> 32
}

/// Where an image is found: the run's kind and the tool's and engine's modes (`context`), the
/// module and the block's offset in it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
#[repr(C)]
pub struct Key {
    pub context: u64,
    pub module: u64,
    pub offset: u64,
}

/// An entry of the merged index: a key and where its payload is.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct IndexEntry {
    key: Key,
    /// The payload's address (in a mapped file) and length, and its checksum.
    at: u64,
    len: u64,
    sum: u64,
}

/// An image this run made, to be written at its end.
#[derive(Clone, Copy)]
#[repr(C)]
struct Made {
    key: Key,
    block: BlockId,
    reads: u32,
    base: u64,
    plan: u64,
    bytes: u64,
    read: [Read; MAX_READS],
}

/// The engine's modes a translation depends on (besides the tool's): part of every key.
pub(crate) fn engine_modes(cache: &CodeCache, lazy: bool) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for v in [
        cache.preempt as u64,
        cache.count_all as u64,
        cache.virtual_tsc as u64,
        cache.eager_full as u64,
        crate::context::counts_in_registers() as u64,
        crate::translate::max_block_insns() as u64,
        crate::translate::max_folded() as u64,
        lazy as u64,
    ] {
        h.write_u64(v);
    }
    h.finish()
}

/// The instruction pcs of a block, for `Tool::plan_digest`: each once, in order.
fn pcs_of(pc_map: &[PcEntry]) -> Vec<u64> {
    let mut v: Vec<u64> = pc_map.iter().map(|e| e.guest_pc).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// A run's translation cache: the index of the directory's files, and the images this run made.
pub struct DiskCache {
    dir: PathBuf,
    /// rtgrind's identity and the tool's name (in every key's context).
    run: u64,
    index: &'static [IndexEntry],
    made: &'static mut [Made],
    made_len: usize,
    /// In a child of the guest's `fork`: its parent writes the images made before it.
    made_before_fork: usize,
    /// Entries skipped as damaged (a checksum or a decode failed).
    pub damaged: u64,
    /// Cache files read at the start, and skipped (damaged, or another rtgrind's or tool's).
    pub files: (usize, usize),
    /// How long reading them took (their indexes merged).
    pub opening: std::time::Duration,
}

/// Address space at the fixed place, taken in order.
struct Place(u64);

impl Place {
    /// Maps `len` bytes of `fd` (or anonymous memory) at the next free spot of the place.
    fn map(&mut self, len: usize, fd: Option<i32>) -> Option<u64> {
        let len = len.max(1).next_multiple_of(4096);
        let (prot, flags, fd) = match fd {
            Some(fd) => (libc::PROT_READ, libc::MAP_PRIVATE, fd),
            None => (libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE, -1),
        };
        while self.0 + len as u64 <= PLACE_END {
            let at = self.0;
            // SAFETY: MAP_FIXED_NOREPLACE never replaces a mapping; the range is ours if it
            // succeeds at `at`.
            let p = unsafe { libc::mmap(at as *mut libc::c_void, len, prot, flags | libc::MAP_FIXED_NOREPLACE, fd, 0) };
            // (A guard page between mappings.)
            self.0 += len as u64 + 4096;
            if p as u64 == at {
                return Some(at);
            }
            if p != libc::MAP_FAILED {
                // SAFETY: an old kernel placed it elsewhere: our own fresh mapping, undone.
                unsafe { libc::munmap(p, len) };
                return None;
            }
            if std::io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST) {
                return None;
            }
            self.0 = at + (1 << 30);
        }
        None
    }
}

/// rtgrind's own build ID and load address (its text's addresses are in code: call-outs), and
/// its file's size and time (a build without a build ID).
fn rtgrind_identity() -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    if let Ok(m) = std::fs::metadata("/proc/self/exe") {
        h.write_u64(m.len());
        h.write_u128(m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos()));
    }
    // SAFETY: getauxval has no preconditions.
    let (phdr, phnum) = unsafe { (libc::getauxval(libc::AT_PHDR), libc::getauxval(libc::AT_PHNUM)) };
    h.write_u64(phdr);
    if let Some(id) = crate::persist::build_id(
        &mut |at, buf| {
            // SAFETY: rtgrind's own program headers and notes, mapped read-only for the whole run.
            unsafe { std::ptr::copy_nonoverlapping(at as *const u8, buf.as_mut_ptr(), buf.len()) };
            buf.len()
        },
        phdr,
        phnum as usize,
        None,
    ) {
        h.write(&id);
    }
    h.finish()
}

/// The GNU build ID of the ELF image whose program headers (`phnum` of them) are at `phdr`,
/// read through `read`. With `base`, the image is at `base` (a guest module); without, its
/// load bias comes from its PT_PHDR.
pub fn build_id(read: &mut dyn FnMut(u64, &mut [u8]) -> usize, phdr: u64, phnum: usize, base: Option<u64>) -> Option<Vec<u8>> {
    let mut ph = vec![0u8; phnum.min(64) * 56];
    if read(phdr, &mut ph) != ph.len() {
        return None;
    }
    let field = |p: &[u8], at: usize| u64::from_le_bytes(p[at..at + 8].try_into().unwrap());
    let bias = match base {
        Some(b) => b,
        None => {
            let p = ph.chunks(56).find(|p| u32::from_le_bytes(p[..4].try_into().unwrap()) == libc::PT_PHDR)?;
            phdr.wrapping_sub(field(p, 16))
        }
    };
    for p in ph.chunks(56).filter(|p| u32::from_le_bytes(p[..4].try_into().unwrap()) == libc::PT_NOTE) {
        let (vaddr, size) = (field(p, 16), field(p, 32).min(4096) as usize);
        let mut notes = vec![0u8; size];
        if read(bias.wrapping_add(vaddr), &mut notes) != size {
            continue;
        }
        let mut at = 0;
        while at + 12 <= size {
            let word = |k: usize| u32::from_le_bytes(notes[at + 4 * k..at + 4 * k + 4].try_into().unwrap()) as usize;
            let (namesz, descsz, kind) = (word(0), word(1), word(2));
            let desc = at + 12 + namesz.next_multiple_of(4);
            if desc + descsz > size {
                break;
            }
            if kind == 3 && namesz == 4 && &notes[at + 12..at + 16] == b"GNU\0" {
                return Some(notes[desc..desc + descsz].to_vec());
            }
            at = desc + descsz.next_multiple_of(4);
        }
    }
    None
}

impl DiskCache {
    /// The cache in `dir` (made if missing) for runs of `tool`: every file there is read. An
    /// error if the directory cannot be made or the place for the cache cannot be mapped.
    pub fn open(dir: &Path, tool: &str) -> std::io::Result<DiskCache> {
        if dir.exists() && !dir.is_dir() {
            return Err(std::io::Error::other("not a directory"));
        }
        let start = std::time::Instant::now();
        std::fs::create_dir_all(dir)?;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        h.write_u64(rtgrind_identity());
        h.write(tool.as_bytes());
        h.write(&MAGIC);
        let run = h.finish();
        let no_place = || std::io::Error::other("no room for the translation cache at its fixed place");
        let mut place = Place(PLACE);
        let mut entries: Vec<(u64, u64)> = Vec::new(); // (file's address, its length)
        let (mut read, mut skipped) = (0, 0);
        let mut names: Vec<PathBuf> = std::fs::read_dir(dir)?.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "rtgc")).collect();
        names.sort();
        for name in names {
            match map_file(&mut place, &name, run) {
                Some(f) => {
                    entries.push(f);
                    read += 1;
                }
                None => skipped += 1,
            }
        }
        let count: usize = entries.iter().map(|&(at, _)| entry_count(at)).sum();
        let index_at = place.map(count * std::mem::size_of::<IndexEntry>(), None).ok_or_else(no_place)?;
        // SAFETY: a fresh mapping of `count` entries' bytes at `index_at`, ours for the run;
        // IndexEntry is plain data for which zero bytes are a value.
        let index = unsafe { std::slice::from_raw_parts_mut(index_at as *mut IndexEntry, count) };
        let mut n = 0;
        for &(at, len) in &entries {
            for k in 0..entry_count(at) {
                // SAFETY: `map_file` checked that the header and the whole index fit in the file.
                let e = unsafe { std::ptr::read_unaligned((at + HEADER as u64 + (k * INDEX_ENTRY) as u64) as *const [u64; 6]) };
                let (off, plen) = (e[3], e[4]);
                if off.checked_add(plen).is_none_or(|end| end > len) {
                    continue;
                }
                index[n] = IndexEntry { key: Key { context: e[0], module: e[1], offset: e[2] }, at: at + off, len: plen, sum: e[5] };
                n += 1;
            }
        }
        let index = &mut index[..n];
        index.sort_unstable_by_key(|e| e.key);
        let made_at = place.map(MAX_MADE * std::mem::size_of::<Made>(), None).ok_or_else(no_place)?;
        // SAFETY: a fresh anonymous mapping of MAX_MADE entries, ours for the run; Made is
        // plain data for which zero bytes are a value.
        let made = unsafe { std::slice::from_raw_parts_mut(made_at as *mut Made, MAX_MADE) };
        Ok(DiskCache {
            dir: dir.to_path_buf(),
            run,
            index,
            made,
            made_len: 0,
            made_before_fork: 0,
            damaged: 0,
            files: (read, skipped),
            opening: start.elapsed(),
        })
    }

    /// The key of the block at `pc` in `module` as `tool` and the engine would translate it now.
    pub(crate) fn key(&self, cache: &CodeCache, tool: &dyn Tool, module: Module, pc: u64, lazy: bool) -> Key {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        h.write_u64(self.run);
        h.write_u64(tool.code_key());
        h.write_u64(engine_modes(cache, lazy));
        Key { context: h.finish(), module: module.id, offset: pc.wrapping_sub(module.base) }
    }

    /// An image stored under `key` that holds here: its module at `base`, the guest bytes it
    /// read unchanged, the plan items it saw the same. Damaged entries count and are skipped.
    pub(crate) fn find(&mut self, key: &Key, base: u64, src: &mut dyn CodeSource, tool: &mut dyn Tool) -> Option<BlockImage> {
        let from = self.index.partition_point(|e| e.key < *key);
        // (The entries of a key are mostly of the same block: its digest is asked once.)
        let mut digest: Option<(Vec<u64>, u64)> = None;
        for e in self.index[from..].iter().take_while(|e| e.key == *key) {
            // SAFETY: the payload lies in a file mapped read-only at the fixed place for the
            // whole run (checked against the file's length at the start).
            let payload = unsafe { std::slice::from_raw_parts(e.at as *const u8, e.len as usize) };
            // The check's data first: an entry of another plan (a key has one for each plan
            // that changed the block) is passed over without its checksum or its image.
            let mut i = In(payload);
            let Some(mut meta) = decode_meta(&mut i) else {
                self.damaged += 1;
                continue;
            };
            if meta.base != base {
                continue;
            }
            let plan = match &digest {
                Some((pcs, d)) if *pcs == meta.pcs => *d,
                _ => {
                    let d = tool.plan_digest(&meta.pcs);
                    digest = Some((std::mem::take(&mut meta.pcs), d));
                    d
                }
            };
            if plan != meta.plan || hash_reads(src, &meta.reads) != Some(meta.bytes) {
                continue;
            }
            let Some(image) = (hash_of(payload) == e.sum).then(|| decode_image(i)).flatten() else {
                self.damaged += 1;
                continue;
            };
            return Some(image);
        }
        None
    }

    /// Notes that block `id` was translated under `key` from the guest bytes `reads`, in
    /// `module`: its image is written at the end of the run.
    pub(crate) fn made(&mut self, cache: &CodeCache, (key, module): (Key, Module), id: BlockId, src: &mut dyn CodeSource, tool: &mut dyn Tool, reads: &[Read]) {
        if reads.len() > MAX_READS || self.made_len == MAX_MADE {
            return;
        }
        let Some(bytes) = hash_reads(src, reads) else { return };
        let plan = tool.plan_digest(&pcs_of(&cache.block(id).pc_map));
        let mut read = [Read::default(); MAX_READS];
        read[..reads.len()].copy_from_slice(reads);
        self.made[self.made_len] = Made { key, block: id, reads: reads.len() as u32, base: module.base, plan, bytes, read };
        self.made_len += 1;
    }

    /// In the child of a `fork` (the guest's, or a checkpoint's): the images made so far are
    /// the parent's to write.
    pub(crate) fn forked(&mut self) {
        self.made_before_fork = self.made_len;
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes the images this run made (those `cache` can still make) to a file of its own
    /// in the directory: a temporary file renamed into place. Returns how many.
    pub fn write(&self, cache: &CodeCache) -> std::io::Result<usize> {
        if self.made_len == self.made_before_fork {
            return Ok(0);
        }
        // The payloads in one buffer, in the order made (the index, sorted by key, points into
        // it): no buffer per entry, nor a copy of them all into the file's.
        let mut payloads = Out(Vec::new());
        let mut index: Vec<(Key, u64, u64, u64)> = Vec::new();
        for m in &self.made[self.made_before_fork..self.made_len] {
            let Some(image) = cache.image(m.block) else { continue };
            let meta = Meta { base: m.base, plan: m.plan, bytes: m.bytes, reads: m.read[..m.reads as usize].to_vec(), pcs: pcs_of(&image.pc_map) };
            let start = payloads.0.len();
            encode_entry_into(&mut payloads, &meta, &image);
            let payload = &payloads.0[start..];
            index.push((m.key, start as u64, payload.len() as u64, hash_of(payload)));
        }
        index.sort_by_key(|e| e.0);
        let mut head = Vec::with_capacity(HEADER + index.len() * INDEX_ENTRY);
        head.extend_from_slice(&MAGIC);
        head.extend_from_slice(&self.run.to_le_bytes());
        head.extend_from_slice(&(index.len() as u64).to_le_bytes());
        let first = (HEADER + index.len() * INDEX_ENTRY) as u64;
        for &(key, start, len, sum) in &index {
            for v in [key.context, key.module, key.offset, first + start, len, sum] {
                head.extend_from_slice(&v.to_le_bytes());
            }
        }
        let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        // (Runs in pid namespaces of their own share pids: the time tells them apart, and a
        // temporary file of the same name is never overwritten.)
        let name = format!("{}-{stamp:x}", std::process::id());
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        std::io::Write::write_all(&mut file, &head).and_then(|()| std::io::Write::write_all(&mut file, &payloads.0))?;
        std::fs::rename(&tmp, self.dir.join(format!("{name}.rtgc"))).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })?;
        Ok(index.len())
    }
}

/// A file's header: the magic, the run's identity, the number of entries.
const HEADER: usize = 24;
/// An index entry in a file: key (3 words), payload offset, length, checksum.
const INDEX_ENTRY: usize = 48;

/// The number of entries of the file mapped at `at` (its header checked by `map_file`).
fn entry_count(at: u64) -> usize {
    // SAFETY: `map_file` checked the header lies in the mapping.
    unsafe { std::ptr::read_unaligned((at + 16) as *const u64) as usize }
}

/// Maps the cache file `path` at the place if it is one of this run's kind and whole enough
/// to hold its index: its address and length.
fn map_file(place: &mut Place, path: &Path, run: u64) -> Option<(u64, u64)> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    if len < HEADER as u64 {
        return None;
    }
    let mut head = [0u8; HEADER];
    std::io::Read::read_exact(&mut &f, &mut head).ok()?;
    let word = |k: usize| u64::from_le_bytes(head[8 * k..8 * k + 8].try_into().unwrap());
    let count = word(2);
    if head[..8] != MAGIC || word(1) != run || count.checked_mul(INDEX_ENTRY as u64).and_then(|n| n.checked_add(HEADER as u64)).is_none_or(|n| n > len) {
        return None;
    }
    let at = place.map(len as usize, Some(f.as_raw_fd()))?;
    Some((at, len))
}

/// What is stored with an image to check it: its module's base, the tool's plan digest of it
/// and the instruction pcs it is of, the guest bytes it was translated from (their ranges and
/// hash).
#[derive(Debug, PartialEq, Eq)]
struct Meta {
    base: u64,
    plan: u64,
    bytes: u64,
    reads: Vec<Read>,
    pcs: Vec<u64>,
}

/// Little-endian fields, each list with its length first.
struct Out(Vec<u8>);

impl Out {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn opt32(&mut self, v: Option<u32>) {
        self.u8(v.is_some() as u8);
        self.u32(v.unwrap_or(0));
    }
    fn bytes(&mut self, v: &[u8]) {
        self.u32(v.len() as u32);
        self.0.extend_from_slice(v);
    }
}

/// Reads what `Out` wrote; None at the first field that is not there or not valid.
struct In<'a>(&'a [u8]);

impl<'a> In<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn bool(&mut self) -> Option<bool> {
        match self.u8()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
    fn opt32(&mut self) -> Option<Option<u32>> {
        let some = self.bool()?;
        let v = self.u32()?;
        Some(some.then_some(v))
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    /// A list's length, bounded by the bytes left (each element takes at least `min` bytes),
    /// so a damaged length cannot ask for a huge allocation.
    fn len(&mut self, min: usize) -> Option<usize> {
        let n = self.u32()? as usize;
        (n.checked_mul(min)? <= self.0.len()).then_some(n)
    }
    fn list<T>(&mut self, min: usize, mut f: impl FnMut(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        let n = self.len(min)?;
        (0..n).map(|_| f(self)).collect()
    }
}

fn put_fixup(o: &mut Out, f: Fixup) {
    let (tag, a, b) = match f {
        Fixup::None => (0, 0, 0),
        Fixup::IblSaved => (1, 0, 0),
        Fixup::Scratch(r) => (2, r, 0),
        Fixup::Scratch2(r, s) => (3, r, s),
        Fixup::FlagsSaved => (4, 0, 0),
    };
    o.0.extend_from_slice(&[tag, a, b]);
}

fn get_fixup(i: &mut In) -> Option<Fixup> {
    let (tag, a, b) = (i.u8()?, i.u8()?, i.u8()?);
    Some(match tag {
        0 => Fixup::None,
        1 => Fixup::IblSaved,
        2 => Fixup::Scratch(a),
        3 => Fixup::Scratch2(a, b),
        4 => Fixup::FlagsSaved,
        _ => return None,
    })
}

fn put_kind(o: &mut Out, k: ExitKind) {
    use ExitKind::*;
    let (tag, a, b): (u8, u16, u16) = match k {
        Direct => (0, 0, 0),
        Syscall => (1, 0, 0),
        Cpuid => (2, 0, 0),
        Unsupported => (3, 0, 0),
        Emulate => (4, 0, 0),
        X87Saved => (5, 0, 0),
        Xgetbv => (6, 0, 0),
        Int80 => (7, 0, 0),
        Rdtsc => (8, 0, 0),
        Random { reg, bits } => (9, reg as u16, bits as u16),
        ClientRequest => (10, 0, 0),
        Preempt => (11, 0, 0),
        Yield => (12, 0, 0),
        FullVersion { at } => (13, at.is_some() as u16, at.unwrap_or(0)),
    };
    o.u8(tag);
    o.u16(a);
    o.u16(b);
}

fn get_kind(i: &mut In) -> Option<ExitKind> {
    use ExitKind::*;
    let (tag, a, b) = (i.u8()?, i.u16()?, i.u16()?);
    Some(match tag {
        0 => Direct,
        1 => Syscall,
        2 => Cpuid,
        3 => Unsupported,
        4 => Emulate,
        5 => X87Saved,
        6 => Xgetbv,
        7 => Int80,
        8 => Rdtsc,
        9 => Random { reg: a as u8, bits: b as u8 },
        10 => ClientRequest,
        11 => Preempt,
        12 => Yield,
        13 => FullVersion { at: (a != 0).then_some(b) },
        _ => return None,
    })
}

fn put_reloc(o: &mut Out, r: &Reloc) {
    match *r {
        Reloc::ExitId { at, exit } => {
            o.u8(0);
            o.u32(at);
            o.u32(exit);
        }
        Reloc::RipRel { at, to_end, eip, target } => {
            o.u8(1);
            o.u32(at);
            o.u8(to_end);
            o.u8(eip as u8);
            o.u64(target);
        }
        Reloc::Record { at, record, offset } => {
            o.u8(2);
            o.u32(at);
            o.u32(record);
            o.u32(offset);
        }
        Reloc::Constant { at, k } => {
            o.u8(3);
            o.u32(at);
            o.u32(k);
        }
        Reloc::Id { at, kind, pc } => {
            o.u8(4);
            o.u32(at);
            o.u32(kind);
            o.u64(pc);
        }
    }
}

fn get_reloc(i: &mut In) -> Option<Reloc> {
    Some(match i.u8()? {
        0 => Reloc::ExitId { at: i.u32()?, exit: i.u32()? },
        1 => Reloc::RipRel { at: i.u32()?, to_end: i.u8()?, eip: i.bool()?, target: i.u64()? },
        2 => Reloc::Record { at: i.u32()?, record: i.u32()?, offset: i.u32()? },
        3 => Reloc::Constant { at: i.u32()?, k: i.u32()? },
        4 => Reloc::Id { at: i.u32()?, kind: i.u32()?, pc: i.u64()? },
        _ => return None,
    })
}

/// An entry's payload: the check's data, then the image.
#[cfg(test)]
fn encode_entry(meta: &Meta, image: &BlockImage) -> Vec<u8> {
    let mut o = Out(Vec::new());
    encode_entry_into(&mut o, meta, image);
    o.0
}

/// `encode_entry`, appended to `o`.
fn encode_entry_into(o: &mut Out, meta: &Meta, image: &BlockImage) {
    o.u64(meta.base);
    o.u64(meta.plan);
    o.u64(meta.bytes);
    o.u32(meta.reads.len() as u32);
    for r in &meta.reads {
        o.u64(r.at);
        o.u32(r.asked);
        o.u32(r.got);
    }
    o.u32(meta.pcs.len() as u32);
    for &pc in &meta.pcs {
        o.u64(pc);
    }
    o.u64(image.guest_start);
    o.u64(image.guest_end);
    o.u32(image.guest_insns);
    o.u8(image.lazy_full as u8);
    o.bytes(&image.code);
    o.u32(image.body);
    o.u32(image.check_entry);
    o.u32(image.pc_map.len() as u32);
    for e in &image.pc_map {
        o.u32(e.host_off);
        o.u64(e.guest_pc);
        o.u8(e.guest_len);
        put_fixup(o, e.fixup);
        o.u16(e.stolen);
        o.u8(e.tool_stack_segment.map_or(2, |s| s as u8));
        o.u8(e.trap as u8);
    }
    o.u32(image.exits.len() as u32);
    for e in &image.exits {
        put_kind(o, e.kind);
        o.u64(e.pc);
        o.u64(e.target);
        o.opt32(e.patch_site);
        o.u32(e.stub);
        o.bytes(e.note.as_deref().unwrap_or("").as_bytes());
        o.u8(e.note.is_some() as u8);
        o.opt32(e.self_entry);
    }
    o.u32(image.full_entries.len() as u32);
    for &(at, off) in &image.full_entries {
        o.opt32(at.map(u32::from));
        o.u32(off);
    }
    o.u32(image.relocs.len() as u32);
    for r in &image.relocs {
        put_reloc(o, r);
    }
    o.u32(image.records.len() as u32);
    for r in &image.records {
        o.u32(r.kind);
        o.bytes(&r.bytes);
    }
}

/// The inverse of `encode_entry`; None if the bytes are not a whole, valid entry.
#[cfg(test)]
fn decode_entry(bytes: &[u8]) -> Option<(Meta, BlockImage)> {
    let mut i = In(bytes);
    let meta = decode_meta(&mut i)?;
    Some((meta, decode_image(i)?))
}

/// An entry's check data (`encode_entry`), the image left in `i`.
fn decode_meta(i: &mut In) -> Option<Meta> {
    let (base, plan, bytes) = (i.u64()?, i.u64()?, i.u64()?);
    let reads = i.list(16, |i| Some(Read { at: i.u64()?, asked: i.u32()?, got: i.u32()? }))?;
    let pcs = i.list(8, |i| i.u64())?;
    Some(Meta { base, plan, bytes, reads, pcs })
}

/// An entry's image, the rest of its bytes after its check data; None unless they are a
/// whole, valid image.
fn decode_image(mut i: In) -> Option<BlockImage> {
    let (guest_start, guest_end, guest_insns, lazy_full) = (i.u64()?, i.u64()?, i.u32()?, i.bool()?);
    let code = i.bytes()?.to_vec();
    let (body, check_entry) = (i.u32()?, i.u32()?);
    let pc_map = i.list(19, |i| {
        Some(PcEntry {
            host_off: i.u32()?,
            guest_pc: i.u64()?,
            guest_len: i.u8()?,
            fixup: get_fixup(i)?,
            stolen: i.u16()?,
            tool_stack_segment: match i.u8()? {
                2 => None,
                s => Some(s != 0),
            },
            trap: i.bool()?,
        })
    })?;
    let exits = i.list(40, |i| {
        let (kind, pc, target, patch_site, stub) = (get_kind(i)?, i.u64()?, i.u64()?, i.opt32()?, i.u32()?);
        let note = String::from_utf8(i.bytes()?.to_vec()).ok();
        let note = if i.bool()? { Some(note?) } else { None };
        Some(ImageExit { kind, pc, target, patch_site, stub, note, self_entry: i.opt32()? })
    })?;
    let full_entries = i.list(9, |i| Some((i.opt32()?.map(|a| a as u16), i.u32()?)))?;
    let relocs = i.list(9, get_reloc)?;
    let records = i.list(8, |i| Some(ToolRecord { kind: i.u32()?, bytes: i.bytes()?.to_vec() }))?;
    let image = BlockImage { guest_start, guest_end, guest_insns, lazy_full, code, body, check_entry, pc_map, exits, full_entries, relocs, records };
    // Every field the installer writes must lie in the code: a damaged entry is not installed.
    let len = image.code.len() as u64;
    let inside = |at: u32, n: u64| at as u64 + n <= len;
    let sound = i.0.is_empty()
        && inside(image.body, 0)
        && inside(image.check_entry, 0)
        && image.exits.iter().all(|e| inside(e.stub, 0) && e.patch_site.is_none_or(|s| inside(s, 4)) && e.self_entry.is_none_or(|s| inside(s, 0)))
        && image.full_entries.iter().all(|&(_, off)| inside(off, 0))
        && image.relocs.iter().all(|r| match *r {
            Reloc::ExitId { at, exit } => inside(at, 4) && (exit as usize) < image.exits.len(),
            Reloc::RipRel { at, .. } => inside(at, 4),
            Reloc::Record { at, record, .. } => inside(at, 8) && (record as usize) < image.records.len(),
            Reloc::Constant { at, .. } | Reloc::Id { at, .. } => inside(at, 8),
        });
    sound.then_some(image)
}

impl CodeCache {
    /// Looks the block at `pc` up in the translation cache (`disk`) before it is translated,
    /// and installs what it finds: the block, or None and how to note its translation.
    pub(crate) fn install_cached(&mut self, src: &mut dyn CodeSource, tool: &mut dyn Tool, pc: u64, lazy: bool) -> Option<Result<BlockId, (Key, Module)>> {
        if self.disk.is_none() || !tool.relocatable_code() {
            return None;
        }
        let module = src.module_of(pc)?;
        let disk = self.disk.as_ref()?;
        let key = disk.key(self, tool, module, pc, lazy);
        let image = self.disk.as_mut()?.find(&key, module.base, src, tool);
        if let Some(image) = image {
            if let Ok(Some(id)) = self.install(&image, tool) {
                self.stats.from_disk += 1;
                return Some(Ok(id));
            }
        }
        Some(Err((key, module)))
    }

    /// Notes block `id`, just translated under `key`, for the translation cache.
    pub(crate) fn keep_translation(&mut self, (key, module): (Key, Module), id: BlockId, src: &mut dyn CodeSource, tool: &mut dyn Tool, reads: &[Read]) {
        if !self.block(id).reusable {
            return;
        }
        let Some(mut disk) = self.disk.take() else { return };
        disk.made(self, (key, module), id, src, tool, reads);
        self.disk = Some(disk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image() -> BlockImage {
        BlockImage {
            guest_start: 0x7fff_0000_1000,
            guest_end: 0x7fff_0000_1020,
            guest_insns: 7,
            lazy_full: true,
            code: (0..64).collect(),
            body: 16,
            check_entry: 8,
            pc_map: vec![
                PcEntry {
                    host_off: 8,
                    guest_pc: 0x7fff_0000_1000,
                    guest_len: 3,
                    fixup: Fixup::Scratch2(1, 2),
                    stolen: 5,
                    tool_stack_segment: Some(true),
                    trap: false,
                },
                PcEntry { host_off: 20, guest_pc: 0x7fff_0000_1003, guest_len: 5, fixup: Fixup::None, stolen: 0, tool_stack_segment: None, trap: true },
            ],
            exits: vec![
                ImageExit {
                    kind: ExitKind::Direct,
                    pc: 0x7fff_0000_1003,
                    target: 0x7fff_0000_2000,
                    patch_site: Some(32),
                    stub: 40,
                    note: None,
                    self_entry: None,
                },
                ImageExit {
                    kind: ExitKind::FullVersion { at: Some(3) },
                    pc: 1,
                    target: 2,
                    patch_site: None,
                    stub: 48,
                    note: Some("ud2".into()),
                    self_entry: Some(16),
                },
                ImageExit {
                    kind: ExitKind::Random { reg: 3, bits: 64 },
                    pc: 1,
                    target: 2,
                    patch_site: None,
                    stub: 56,
                    note: Some(String::new()),
                    self_entry: None,
                },
            ],
            full_entries: vec![(None, 24), (Some(2), 28)],
            relocs: vec![
                Reloc::ExitId { at: 44, exit: 1 },
                Reloc::RipRel { at: 10, to_end: 4, eip: true, target: 0x1234 },
                Reloc::Record { at: 20, record: 1, offset: 8 },
                Reloc::Constant { at: 28, k: 2 },
                Reloc::Id { at: 36, kind: 1, pc: 0x7fff_0000_1003 },
            ],
            records: vec![ToolRecord { kind: 3, bytes: vec![1, 2, 3] }, ToolRecord { kind: 0, bytes: Vec::new() }],
        }
    }

    fn meta() -> Meta {
        Meta {
            base: 0x7fff_0000_0000,
            plan: 9,
            bytes: 77,
            reads: vec![Read { at: 0x7fff_0000_1000, asked: 960, got: 900 }],
            pcs: vec![0x7fff_0000_1000, 0x7fff_0000_1003],
        }
    }

    #[test]
    fn an_entry_decodes_as_it_was_encoded() {
        let bytes = encode_entry(&meta(), &image());
        assert_eq!(decode_entry(&bytes), Some((meta(), image())));
        // Every shorter prefix, and anything more, is not an entry.
        for n in 0..bytes.len() {
            assert_eq!(decode_entry(&bytes[..n]), None, "{n} of {} bytes", bytes.len());
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode_entry(&longer), None);
    }

    #[test]
    fn an_entry_whose_fields_leave_its_code_is_refused() {
        let mut bad = image();
        bad.relocs.push(Reloc::ExitId { at: 62, exit: 0 });
        assert_eq!(decode_entry(&encode_entry(&meta(), &bad)), None);
        let mut bad = image();
        bad.relocs.push(Reloc::ExitId { at: 0, exit: 3 });
        assert_eq!(decode_entry(&encode_entry(&meta(), &bad)), None);
    }

    /// A source whose bytes at 0x1000.. are `code` and nothing else is executable.
    struct Bytes(Vec<u8>);
    impl CodeSource for Bytes {
        fn read_code(&mut self, addr: u64, buf: &mut [u8]) -> usize {
            let Some(off) = addr.checked_sub(0x1000).filter(|&o| o < self.0.len() as u64) else { return 0 };
            let n = buf.len().min(self.0.len() - off as usize);
            buf[..n].copy_from_slice(&self.0[off as usize..off as usize + n]);
            n
        }
    }

    /// Code at `Bytes::AT`, fixed and in a module with a build ID.
    struct Fixed(Bytes);
    impl Bytes {
        const AT: u64 = 0x7000_1000;
    }
    impl CodeSource for Fixed {
        fn read_code(&mut self, addr: u64, buf: &mut [u8]) -> usize {
            self.0.read_code(addr - Bytes::AT + 0x1000, buf)
        }
        fn fixed_code(&mut self, _: u64, _: u64) -> bool {
            true
        }
        fn module_of(&mut self, _: u64) -> Option<Module> {
            Some(Module { base: Bytes::AT - 0x1000, id: 7 })
        }
    }

    /// A run translates a block and writes its image; the next run's cache finds it in the
    /// file and installs it instead of translating, unless the guest bytes changed.
    #[test]
    fn a_translation_is_installed_from_the_file_in_the_next_run() {
        use crate::instrument::NoInstrumentation;
        let dir = std::env::temp_dir().join(format!("rtgrind-persist-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // mov eax, 1; add eax, ecx; jmp back to the start.
        let code = vec![0xb8, 1, 0, 0, 0, 0x01, 0xc8, 0xeb, 0xf7];
        let run = |code: &[u8]| {
            let mut cache = CodeCache::new();
            cache.disk = Some(Box::new(DiskCache::open(&dir, "none").unwrap()));
            let id = crate::translate::translate(&mut cache, &mut Fixed(Bytes(code.to_vec())), &mut NoInstrumentation, Bytes::AT).unwrap();
            let disk = cache.disk.take().unwrap();
            assert_eq!(disk.write(&cache).unwrap(), cache.stats.blocks_translated as usize);
            (cache.stats.from_disk, cache.code_of(cache.block(id)).to_vec())
        };
        let (first, code_first) = run(&code);
        let (second, code_second) = run(&code);
        assert_eq!((first, second), (0, 1));
        assert_eq!(code_first.len(), code_second.len());
        let mut changed = code.clone();
        changed[1] = 2;
        assert_eq!(run(&changed).0, 0, "changed guest bytes");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A cache of no file, whose index is `index` (entries in memory).
    fn cache_of(index: &'static [IndexEntry]) -> DiskCache {
        DiskCache {
            dir: PathBuf::new(),
            run: 1,
            index,
            made: &mut [],
            made_len: 0,
            made_before_fork: 0,
            damaged: 0,
            files: (0, 0),
            opening: Default::default(),
        }
    }

    /// An entry of plan digest `plan` translated from `src`'s first 16 bytes (at 0x1000, in a
    /// module there), and the same with a byte of its code changed after it was written.
    fn good_and_damaged(src: &mut Bytes, plan: u64) -> (&'static [u8], &'static [u8]) {
        let reads = vec![Read { at: 0x1000, asked: 16, got: 16 }];
        let meta = Meta { base: 0x1000, plan, bytes: hash_reads(src, &reads).unwrap(), reads, pcs: vec![0x1000] };
        let good: &'static [u8] = Vec::leak(encode_entry(&meta, &image()));
        let mut bad = good.to_vec();
        let code_at = good.windows(8).position(|w| w == [0, 1, 2, 3, 4, 5, 6, 7]).unwrap();
        bad[code_at + 9] ^= 0xff;
        (good, Vec::leak(bad))
    }

    /// An entry whose bytes changed after it was written is not installed, even where it
    /// still decodes (a byte of its code).
    #[test]
    fn a_damaged_image_is_not_found() {
        let mut src = Bytes(vec![0x90; 100]);
        let (good, bad) = good_and_damaged(&mut src, 0);
        let key = Key { context: 1, module: 2, offset: 0 };
        let entry = |p: &'static [u8]| IndexEntry { key, at: p.as_ptr() as u64, len: p.len() as u64, sum: hash_of(good) };
        let mut disk = cache_of(Vec::leak(vec![entry(bad)]));
        assert!(decode_entry(bad).is_some());
        assert_eq!(disk.find(&key, 0x1000, &mut src, &mut Mode(0)), None);
        assert_eq!(disk.damaged, 1);
        disk.index = Vec::leak(vec![entry(bad), entry(good)]);
        assert_eq!(disk.find(&key, 0x1000, &mut src, &mut Mode(0)), Some(image()));
        assert_eq!(disk.find(&key, 0x2000, &mut src, &mut Mode(0)), None, "the module elsewhere");
    }

    /// A tool whose plan digest of every block is its number.
    struct Digest(u64);
    impl Tool for Digest {
        fn plan_digest(&mut self, _: &[u64]) -> u64 {
            self.0
        }
    }

    /// An entry made for another plan is passed over on its check data, before its checksum
    /// and its image are read: a damaged one there is not even seen.
    #[test]
    fn an_entry_of_another_plan_is_passed_over_before_its_image() {
        let mut src = Bytes(vec![0x90; 100]);
        let (good, bad) = good_and_damaged(&mut src, 5);
        let key = Key { context: 1, module: 2, offset: 0 };
        let mut disk = cache_of(Vec::leak(vec![IndexEntry { key, at: bad.as_ptr() as u64, len: bad.len() as u64, sum: hash_of(good) }]));
        assert_eq!(disk.find(&key, 0x1000, &mut src, &mut Digest(6)), None);
        assert_eq!(disk.damaged, 0, "another plan's entry: its image not read");
        assert_eq!(disk.find(&key, 0x1000, &mut src, &mut Digest(5)), None);
        assert_eq!(disk.damaged, 1, "this plan's: read, and damaged");
    }

    #[test]
    fn the_check_sees_every_byte_read_and_where_code_ends() {
        let mut src = Bytes(vec![0x90; 100]);
        let reads = [Read { at: 0x1000, asked: 16, got: 16 }, Read { at: 0x1050, asked: 40, got: 20 }];
        let h = hash_reads(&mut src, &reads).unwrap();
        src.0[0x5f] = 0xcc;
        assert_ne!(hash_reads(&mut src, &reads), Some(h), "a changed byte in the second range");
        src.0[0x5f] = 0x90;
        assert_eq!(hash_reads(&mut src, &reads), Some(h));
        src.0.push(0x90);
        assert_eq!(hash_reads(&mut src, &reads), None, "more code where the read ended");
    }

    struct Mode(u64);
    impl Tool for Mode {
        fn code_key(&self) -> u64 {
            self.0
        }
    }

    #[test]
    fn the_key_holds_the_tool_mode_the_engine_modes_the_variant_and_the_offset() {
        let disk = cache_of(&[]);
        let mut cache = CodeCache::new();
        let m = Module { base: 0x7000_0000, id: 42 };
        let k = disk.key(&cache, &Mode(0), m, 0x7000_1234, true);
        assert_eq!((k.module, k.offset), (42, 0x1234));
        assert_eq!(k, disk.key(&cache, &Mode(0), Module { base: 0x7100_0000, id: 42 }, 0x7100_1234, true), "the same block elsewhere");
        assert_ne!(k, disk.key(&cache, &Mode(1), m, 0x7000_1234, true), "the tool's mode");
        assert_ne!(k, disk.key(&cache, &Mode(0), m, 0x7000_1234, false), "the variant");
        cache.preempt = true;
        assert_ne!(k, disk.key(&cache, &Mode(0), m, 0x7000_1234, true), "preemption counts");
        cache.preempt = false;
        cache.virtual_tsc = true;
        assert_ne!(k, disk.key(&cache, &Mode(0), m, 0x7000_1234, true), "virtual time-stamp counter");
        let other = DiskCache { run: 2, ..disk };
        assert_ne!(k, other.key(&CodeCache::new(), &Mode(0), m, 0x7000_1234, true), "another rtgrind or tool");
    }
}
