//! Shadow state for the tracking tools: a shadow bit per guest byte in memory
//! ([`memory::ShadowMemory`]) and in registers (the tool area of each thread's context), and
//! the inline propagation that keeps them up to date as guest instructions run
//! ([`propagate`]).
//!
//! Register shadows are byte masks: bit i of a general register's shadow says whether byte i
//! of the register is tainted (8 bits), of a vector register's whether byte i of the ymm
//! register is (32 bits). The flags have one shadow for all six status flags.

pub mod fast;
pub mod memory;
pub mod propagate;
pub mod records;

use rtgrind_jit::ThreadContext;

/// Byte offsets of the shadow state in `ThreadContext::tool_area`.
pub mod slot {
    /// 16 general registers, one u64 mask each (rax = 0 … r15 = 15).
    pub const GPR: usize = 0;
    /// The status flags: 0 or 1.
    pub const FLAGS: usize = 128;
    /// 16 vector registers (ymm0-15), one u64 mask each (32 bits used).
    pub const VEC: usize = 136;
    /// 0x0101010101010101: `pext`/`pdep` mask between shadow bytes and mask bits.
    pub const K01: usize = 280;
    /// Arguments and result of the out-of-line shadow accesses.
    pub const TMP_EA: usize = 288;
    pub const TMP_SIZE: usize = 296;
    pub const TMP_MASK: usize = 304;
    /// Guest pc of the instruction a report callout is about.
    pub const SITE: usize = 312;
    /// rcx, rsi, rdi before a string instruction.
    pub const STR_RCX: usize = 320;
    pub const STR_RSI: usize = 328;
    pub const STR_RDI: usize = 336;
    /// What a report callout found (tool-defined).
    pub const WHAT: usize = 344;
    /// Origins: one u64 per general register, for the flags (a vector register's is its lane
    /// 0's, in `ORIGIN_LANES`; 488-639 are free).
    pub const ORIGIN_GPR: usize = 352;
    pub const ORIGIN_FLAGS: usize = 480;
    /// `pext` masks of flag-free code: a guest address's delta-table index (see `memory.rs`),
    /// and the shadow bits of a register part (low byte, high byte, word, dword).
    pub const SLICE_SEL: usize = 640;
    pub const PART_LOW8: usize = 656;
    pub const PART_HIGH8: usize = 664;
    pub const PART_W16: usize = 672;
    pub const PART_W32: usize = 680;
    /// rcx while a flag-free check holds a shadow in it.
    pub const CHECK_RCX: usize = 688;
    /// Set while a register shadow may be tainted (see `fast::select`).
    pub const DIRTY: usize = 696;
    // (704: free; a granule number is a `rorx` since issue 29, see `propagate::granule_number`.)
    /// The `pext` mask of an address's summary index (`memory::SUMMARY_SEL`).
    pub const SUMMARY_SEL: usize = 712;
    pub const END: usize = 720;
    /// Origins of the four 8-byte lanes of each ymm register (16 x 4 u64), so that a vector
    /// copy (memcpy's) keeps each granule's origin: lane k of register n at `+ 32n + 8k`.
    pub const ORIGIN_LANES: usize = 1024;
    pub const LANES_END: usize = 1024 + 16 * 32;
}

/// Claims what the shadow state and its propagation use (`rtgrind_jit::claims`): its
/// tool-area words (`slot`: the shadow registers and their origins, the call-outs' arguments,
/// the constants inline code reads; the vector lanes' origins) and the AVX-512 temporaries
/// (ymm20, k2). Tools that track shadow state claim it before they instrument.
pub fn claim_layout() -> Result<(), rtgrind_jit::claims::ClaimError> {
    use rtgrind_jit::claims::{claim, Resource};
    const OWNER: &str = "the shadow state";
    claim(OWNER, Resource::Area { start: 0, len: slot::END })?;
    claim(OWNER, Resource::Area { start: slot::ORIGIN_LANES, len: slot::LANES_END - slot::ORIGIN_LANES })?;
    claim(OWNER, Resource::Vector(20))?;
    claim(OWNER, Resource::Mask(2))?;
    Ok(())
}

/// The tool-area word at byte offset `off`.
pub fn word(ctx: &mut ThreadContext, off: usize) -> &mut u64 {
    &mut ctx.tool_area[off / 8]
}

/// Clears a thread's shadow registers and sets the constants its inline code reads.
pub fn init_thread(ctx: &mut ThreadContext) {
    ctx.tool_area[..slot::LANES_END / 8].iter_mut().for_each(|w| *w = 0);
    *word(ctx, slot::K01) = 0x0101_0101_0101_0101;
    *word(ctx, slot::SLICE_SEL) = memory::INDEX_BITS;
    *word(ctx, slot::SUMMARY_SEL) = memory::SUMMARY_SEL;
    for (s, m) in [(slot::PART_LOW8, 1), (slot::PART_HIGH8, 2), (slot::PART_W16, 3), (slot::PART_W32, 0xf)] {
        *word(ctx, s) = m;
    }
    ctx.counter = origin::thread_bits(0);
}

/// Shadow state of a new thread (`thread_start`), whose context is a copy of its creator's:
/// clean rax (clone returned 0 in it), rcx and r11 (the `syscall` clobbered them), its own
/// origin thread bits (`n`: its index) and block count.
pub fn start_thread(child: &mut ThreadContext, n: u64) {
    for r in [0, 1, 11] {
        *gpr(child, r) = 0;
    }
    child.counter = origin::thread_bits(n);
}

/// Origins: which instance defined a value. Bit 63: a real definition (clear for a constant,
/// see `propagate::Policy`); bits 62-29: the thread's block instance at the definition; 28-21:
/// the thread; 20-1: the static site (an index into the tool's `Sites`); bit 0: the value
/// crossed a call as an argument. Real definitions outrank constants, and among them the most
/// recent of one thread is the larger. 0 is "no definition" (memory nobody wrote under
/// rtgrind). A thread's instance word, the engine's per-thread counter (`ThreadContext::counter`,
/// grown by `BLOCK_STEP` per block entered), is the origin of site 0 in its current block:
/// the instance, the thread and the real-definition bit.
pub mod origin {
    pub const INCOMING: u64 = 1;
    pub const REAL: u64 = 1 << 63;
    pub const SITE_SHIFT: u32 = 1;
    pub const THREAD_SHIFT: u32 = 21;
    pub const INSTANCE_SHIFT: u32 = 29;
    /// What the instance word grows by per block.
    pub const BLOCK_STEP: u64 = 1 << INSTANCE_SHIFT;

    /// Whether the origin's site is in the main program (`Sites` numbers those apart).
    pub fn in_main(o: u64) -> bool {
        site(o) as u32 & super::MAIN_SITE != 0
    }

    pub fn site(o: u64) -> usize {
        ((o >> SITE_SHIFT) & 0xf_ffff) as usize
    }
    pub fn thread(o: u64) -> usize {
        ((o >> THREAD_SHIFT) & 0xff) as usize
    }
    pub fn instance(o: u64) -> u64 {
        (o & !REAL) >> INSTANCE_SHIFT
    }
    /// A constant's origin (an immediate, a zeroing idiom), not a real definition.
    pub fn is_constant(o: u64) -> bool {
        o & !INCOMING != 0 && o & REAL == 0
    }
    /// The instance word an origin was made from (the thread's block instance and thread,
    /// `REAL`): the origin without its site and its call-boundary mark.
    pub fn instance_word(o: u64) -> u64 {
        o & !(INCOMING | 0xf_ffff << SITE_SHIFT)
    }
    /// The thread part of an instance word (`REAL` and the thread).
    pub fn thread_part(w: u64) -> u64 {
        w & (REAL | 0xff << THREAD_SHIFT)
    }
    /// `THREAD_BITS` of thread `n`.
    pub fn thread_bits(n: u64) -> u64 {
        REAL | (n & 0xff) << THREAD_SHIFT
    }
    /// The bits of which an origin has one set unless the loader made it: another thread's
    /// (a thread the program started counts its instances from 1), or the main thread's at or
    /// after `first_instance` (a power of two), the program's entry.
    pub fn not_loaders_mask(first_instance: u64) -> u64 {
        let instances_from_entry = !REAL & !((first_instance << INSTANCE_SHIFT) - 1);
        instances_from_entry | 0xff << THREAD_SHIFT
    }
    /// The origin of site `site` now, from the thread's instance word.
    pub fn here(site: u32, instance_word: u64) -> u64 {
        instance_word | (u64::from(site) << SITE_SHIFT)
    }
}

/// Guest pcs of the instructions origins name, by site number (0 is reserved: no site).
/// Sites in the main program can be numbered apart (`MAIN_SITE` set), so an origin tells at
/// run time whether the program or a library defined a value.
#[derive(Default)]
pub struct Sites {
    pcs: Vec<u64>,
    main_pcs: Vec<u64>,
    /// Site numbers by 256 bytes of code, then by offset in them (0: none yet). Translation
    /// asks for every instruction's, block by block: a small map and a dense table each, not a
    /// map of 200,000 pcs that missed the cache twice a look-up (6% of a traced run).
    pages: std::collections::HashMap<u64, Box<[u32]>, crate::tools::address_hash::Fast>,
    /// The main program's code range, if its sites are numbered apart.
    pub main: Option<(u64, u64)>,
}

/// The site-number bit of the main program's sites.
pub const MAIN_SITE: u32 = 1 << 19;

impl Sites {
    /// The site number of `pc`, assigned on first use.
    pub fn id(&mut self, pc: u64) -> u32 {
        if self.pcs.is_empty() {
            self.pcs.push(0);
        }
        let in_main = self.main.is_some_and(|(s, e)| (s..e).contains(&pc));
        let page = self.pages.entry(pc >> 8).or_insert_with(|| vec![0; 256].into_boxed_slice());
        let id = &mut page[(pc & 0xff) as usize];
        if *id == 0 {
            // (Never 0: the other sites' numbers start at 1, the main program's have MAIN_SITE.)
            *id = if in_main {
                self.main_pcs.push(pc);
                (self.main_pcs.len() - 1) as u32 | MAIN_SITE
            } else {
                self.pcs.push(pc);
                (self.pcs.len() - 1) as u32
            };
        }
        *id
    }
    pub fn pc(&self, id: usize) -> Option<u64> {
        if id as u32 & MAIN_SITE != 0 {
            return self.main_pcs.get(id & (MAIN_SITE as usize - 1)).copied();
        }
        self.pcs.get(id).copied().filter(|&p| p != 0)
    }
}

/// The guest memory a tool's shadows must cover when the program starts: every mapping, and
/// room for the stack to grow down from `sp`.
pub fn initial_ranges(sp: u64, mem: &crate::kernel::memory::GuestMemory) -> Vec<(u64, u64)> {
    let mut r: Vec<(u64, u64)> = mem.ranges().collect();
    r.push((sp.saturating_sub(64 << 20), sp));
    r
}

/// The guest range a successful syscall `nr` (arguments `a`, result `ret`) mapped, which
/// shadows must cover from then on: mmap, mremap and brk.
pub fn mapped_by(nr: i64, a: &[u64; 6], ret: i64, mem: &crate::kernel::memory::GuestMemory) -> Option<(u64, u64)> {
    let r = ret as u64;
    match nr {
        _ if ret < 0 => None,
        libc::SYS_mmap => Some((r, r.saturating_add(a[1]))),
        libc::SYS_mremap => Some((r, r.saturating_add(a[2]))),
        libc::SYS_brk => Some((mem.brk_start, r)),
        _ => None,
    }
}

/// The number of general register `r` (rax = 0), if it is one.
pub fn gpr_number(r: rtgrind_jit::iced_x86::Register) -> Option<usize> {
    use rtgrind_jit::iced_x86::Register;
    r.is_gpr().then(|| r.full_register().number() - Register::RAX.number())
}

/// Tool-area offset of general register `n`'s taint mask.
pub fn gpr_slot(n: usize) -> usize {
    slot::GPR + 8 * n
}

/// The shadow mask of general register `n`.
pub fn gpr(ctx: &mut ThreadContext, n: usize) -> &mut u64 {
    word(ctx, gpr_slot(n))
}

#[cfg(test)]
mod tests {
    use super::origin::*;

    /// The loader's origins are the main thread's before the entry; a worker's low instances
    /// are the program's (a value a worker computed and the main thread printed).
    #[test]
    fn only_the_main_threads_origins_before_the_entry_are_the_loaders() {
        let entry = 1 << 24;
        let mask = not_loaders_mask(entry);
        let origin = |instance: u64, thread: u64, site: u64| REAL | instance << INSTANCE_SHIFT | thread << THREAD_SHIFT | site << SITE_SHIFT | INCOMING;
        assert_eq!(origin(entry - 1, 0, 0xf_ffff) & mask, 0);
        assert_ne!(origin(entry, 0, 0) & mask, 0);
        assert_ne!(origin(3, 2, 0) & mask, 0);
        assert_ne!(origin(1, 255, 0) & mask, 0);
    }
}
