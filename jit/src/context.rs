//! The per-thread context block: guest registers while outside the code cache, engine slots
//! that translated code reaches through `gs`, and the inline indirect-branch lookup table.
//!
//! Translated code addresses every field as `gs:[OFFSET]` with the `gs` base set to the
//! context's own address, so each field's offset is part of the ABI between this struct,
//! `emit.rs` and the assembly in `dispatch.rs`. `tests::offsets` pins them.

use std::mem::offset_of;

/// Guest general-purpose registers in hardware encoding order (rax=0 … r15=15).
pub const NUM_GPRS: usize = 16;
/// log2 of the number of inline indirect-branch table entries.
pub const IBL_BITS: u32 = 16;
pub const IBL_ENTRIES: usize = 1 << IBL_BITS;
/// Size of the xsave area (legacy 512 + header 64 + AVX 256, rounded up).
pub const XSAVE_SIZE: usize = 1024;
/// Size of the per-thread area tools own, in 8-byte words.
pub const TOOL_AREA_WORDS: usize = 256;
/// Components saved across exits to the dispatcher: x87, SSE, AVX.
pub const XSAVE_MASK: u32 = 0b111;

/// Hardware register numbers, as used in ModRM/SIB encodings and in [`ThreadContext::gpr`].
pub mod reg {
    pub const RAX: u8 = 0;
    pub const RCX: u8 = 1;
    pub const RDX: u8 = 2;
    pub const RBX: u8 = 3;
    pub const RSP: u8 = 4;
    pub const RBP: u8 = 5;
    pub const RSI: u8 = 6;
    pub const RDI: u8 = 7;
    pub const R8: u8 = 8;
    pub const R9: u8 = 9;
    pub const R10: u8 = 10;
    pub const R11: u8 = 11;
}

/// Why translated code last returned to the dispatcher; written by exit stubs as a u32 id.
/// Ids below `EXIT_SPECIAL_BASE` index the code cache's exit table.
pub const EXIT_SPECIAL_BASE: u32 = 0xffff_ff00;
/// An indirect branch missed the inline table; `next_rip` holds the guest target.
pub const EXIT_IBL_MISS: u32 = 0xffff_ff01;
/// A synchronous fault in translated code; the signal handler filled the registers.
pub const EXIT_FAULT: u32 = 0xffff_ff02;
/// `rtg_enter` found `pending` set and returned without running guest code.
pub const EXIT_PENDING: u32 = 0xffff_ff03;

/// Reads the current thread's context pointer (the `gs` base); null before `install_context`.
pub fn current_context() -> *mut ThreadContext {
    let v: u64;
    // SAFETY: rdgsbase only reads the gs base (FSGSBASE is required by the engine).
    unsafe { std::arch::asm!("rdgsbase {}", out(reg) v, options(nostack, preserves_flags)) };
    v as *mut ThreadContext
}

/// The xsave instructions need a 64-byte aligned area.
#[repr(C, align(64))]
pub struct XsaveArea(pub [u8; XSAVE_SIZE]);

#[repr(C, align(64))]
pub struct ThreadContext {
    /// Guest GPRs while the thread is outside the code cache.
    pub gpr: [u64; NUM_GPRS],
    pub rip: u64,
    pub rflags: u64,
    /// The guest's `fs` base (its TLS pointer), live in the real `fs` inside the cache.
    pub fs_base: u64,
    /// The guest's view of its `gs` base; the real `gs` always points at this context.
    pub gs_base: u64,
    /// rtgrind's own `fs` base (Rust and host glibc thread-locals).
    pub host_fs: u64,
    /// Host stack pointer saved by `rtg_enter`; exits return through it.
    pub host_rsp: u64,
    /// Host address `rtg_enter` jumps to.
    pub entry_target: u64,
    /// Address of `rtg_exit`; stubs leave with `jmp gs:[exit_routine]`.
    pub exit_routine: u64,
    /// Address of the shared indirect-branch miss routine.
    pub ibl_miss: u64,
    /// The guest target of an indirect branch that missed the inline table (`EXIT_IBL_MISS`;
    /// an exit stub's id names its target in the exit table instead).
    pub next_rip: u64,
    /// Exit id (see `EXIT_*`), written as a u32.
    pub exit_id: u64,
    /// Spill slots for instrumentation and the inline lookup.
    pub save_rcx: u64,
    pub save_rdx: u64,
    pub scratch: [u64; 4],
    /// This context's own address (the `gs` base).
    pub self_ptr: u64,
    /// Non-zero when an asynchronous event waits for the next block boundary.
    pub pending: u64,
    /// Blocks left before the next preemption point (counted only in translations made with
    /// preemption checks, see `CodeCache::set_preemption`). While the thread is in the cache
    /// the count lives in xmm16 instead when `counts_in_registers` is set (see below).
    pub quantum: u64,
    /// Non-zero if the host has AVX-512 (F and VL) enabled: while translated code runs, the
    /// quantum is kept in the low lane of xmm16 (the high lane 0), with -1 in the low lane of
    /// xmm17 (the high lane 0), and the tool's `counter` in the low lane of xmm18. The guest
    /// never sees AVX-512 (CPUID hides it), so xmm16-31 and the mask registers are free for
    /// the engine (xmm16-19, k1) and tools (the rest), and a count in a register is not the
    /// loop-carried store-to-load dependency a count in memory is. `rtg_enter` loads them,
    /// every exit and call-out stores them back.
    pub counts_in_registers: u64,
    /// A tool's per-thread counter (`Inline::count`, `Inline::counter_to`), grown by
    /// `counter_step` at each `count`: in xmm18 while the thread runs in the cache if
    /// `counts_in_registers` is set, else here (and here whenever it is outside the cache).
    pub counter: u64,
    /// What `Inline::count` adds: `set_counter_step`'s value, the same in every thread.
    pub counter_step: u64,
    /// Opaque to the engine: the runtime's per-thread data (found from a signal handler
    /// through the `gs` base).
    pub runtime_data: u64,
    /// Spill slots of the registers a tool's inline code borrows (slot = register number),
    /// and the guest's status flags and rax while tool code runs (see `instrument::Inline`).
    pub tool_spill: [u64; NUM_GPRS],
    pub flags_save: u64,
    pub flags_rax: u64,
    /// Where a call-out sends the thread (`instrument::Inline::exit_if_redirected`); zero
    /// when it goes on where it was.
    pub redirect: u64,
    /// Opaque to the engine: per-thread state a tool's inline code addresses through `gs`
    /// (shadow registers, for example).
    pub tool_area: [u64; TOOL_AREA_WORDS],
    /// A call out of translated code into Rust (`instrument::Inline::callout`): the function,
    /// its argument, where to resume, the registers and `fs` base at the call, and the
    /// address of `rtg_callout`.
    pub callout_fn: u64,
    pub callout_arg: u64,
    pub callout_ret: u64,
    pub callout_regs: [u64; NUM_GPRS],
    pub callout_fs: u64,
    pub callout_flags: u64,
    pub callout_routine: u64,
    /// The address of `rtg_callout_light` (`instrument::Inline::callout_light`).
    pub callout_light_routine: u64,
    /// The guest's ymm0-15 (or xmm0-15, where the upper halves were in their initial state)
    /// and MXCSR during a full call-out, whether the upper halves were saved, and whether
    /// the host tells which state components are in use (`xgetbv` 1): without it they always
    /// are.
    pub callout_vec: [u64; 64],
    pub callout_mxcsr: u64,
    pub callout_wide: u64,
    pub xinuse_known: u64,
    /// Guest x87/SSE/AVX state while outside the cache (xsave format, 64-byte aligned).
    pub xsave: XsaveArea,
    /// Inline indirect-branch table: `ibl_keys[h] = -guest_target`, `ibl_vals[h] = host`.
    pub ibl_keys: [u64; IBL_ENTRIES],
    pub ibl_vals: [u64; IBL_ENTRIES],
    /// The slots `ibl_insert` filled since the table was last emptied, the first
    /// `ibl_filled_len` of them (more than fit: `IBL_FILLED_ALL`, every slot must be emptied).
    /// The table is emptied at every asynchronous signal; clearing all its megabyte took longer
    /// than a 50 µs interval timer's period, and a program with one never got further.
    pub ibl_filled: [u32; IBL_FILLED],
    pub ibl_filled_len: u32,
    /// The guest's `gs` selector (loads and reads of it are emulated; the real one is 0).
    pub gs_selector: u16,
}

/// Slots `ibl_filled` remembers.
pub const IBL_FILLED: usize = 4096;
/// `ibl_filled_len` when more slots were filled than it remembers.
const IBL_FILLED_ALL: u32 = u32::MAX;

pub const OFF_GPR: usize = offset_of!(ThreadContext, gpr);
pub const OFF_COUNTS_IN_REGISTERS: usize = offset_of!(ThreadContext, counts_in_registers);
pub const OFF_COUNTER: usize = offset_of!(ThreadContext, counter);
pub const OFF_COUNTER_STEP: usize = offset_of!(ThreadContext, counter_step);
pub const OFF_RIP: usize = offset_of!(ThreadContext, rip);
pub const OFF_RFLAGS: usize = offset_of!(ThreadContext, rflags);
pub const OFF_FS_BASE: usize = offset_of!(ThreadContext, fs_base);
pub const OFF_GS_BASE: usize = offset_of!(ThreadContext, gs_base);
pub const OFF_HOST_FS: usize = offset_of!(ThreadContext, host_fs);
pub const OFF_HOST_RSP: usize = offset_of!(ThreadContext, host_rsp);
pub const OFF_ENTRY_TARGET: usize = offset_of!(ThreadContext, entry_target);
pub const OFF_EXIT_ROUTINE: usize = offset_of!(ThreadContext, exit_routine);
pub const OFF_IBL_MISS: usize = offset_of!(ThreadContext, ibl_miss);
pub const OFF_NEXT_RIP: usize = offset_of!(ThreadContext, next_rip);
pub const OFF_EXIT_ID: usize = offset_of!(ThreadContext, exit_id);
pub const OFF_SAVE_RCX: usize = offset_of!(ThreadContext, save_rcx);
pub const OFF_SAVE_RDX: usize = offset_of!(ThreadContext, save_rdx);
pub const OFF_SCRATCH: usize = offset_of!(ThreadContext, scratch);
pub const OFF_SELF_PTR: usize = offset_of!(ThreadContext, self_ptr);
pub const OFF_PENDING: usize = offset_of!(ThreadContext, pending);
pub const OFF_QUANTUM: usize = offset_of!(ThreadContext, quantum);
pub const OFF_TOOL_SPILL: usize = offset_of!(ThreadContext, tool_spill);
pub const OFF_FLAGS_SAVE: usize = offset_of!(ThreadContext, flags_save);
pub const OFF_FLAGS_RAX: usize = offset_of!(ThreadContext, flags_rax);
pub const OFF_REDIRECT: usize = offset_of!(ThreadContext, redirect);
pub const OFF_TOOL_AREA: usize = offset_of!(ThreadContext, tool_area);
pub const OFF_CALLOUT_FN: usize = offset_of!(ThreadContext, callout_fn);
pub const OFF_CALLOUT_ARG: usize = offset_of!(ThreadContext, callout_arg);
pub const OFF_CALLOUT_RET: usize = offset_of!(ThreadContext, callout_ret);
pub const OFF_CALLOUT_REGS: usize = offset_of!(ThreadContext, callout_regs);
pub const OFF_CALLOUT_FS: usize = offset_of!(ThreadContext, callout_fs);
pub const OFF_CALLOUT_FLAGS: usize = offset_of!(ThreadContext, callout_flags);
pub const OFF_CALLOUT_ROUTINE: usize = offset_of!(ThreadContext, callout_routine);
pub const OFF_CALLOUT_LIGHT_ROUTINE: usize = offset_of!(ThreadContext, callout_light_routine);
pub const OFF_CALLOUT_VEC: usize = offset_of!(ThreadContext, callout_vec);
pub const OFF_CALLOUT_MXCSR: usize = offset_of!(ThreadContext, callout_mxcsr);
pub const OFF_CALLOUT_WIDE: usize = offset_of!(ThreadContext, callout_wide);
pub const OFF_XINUSE_KNOWN: usize = offset_of!(ThreadContext, xinuse_known);
pub const OFF_XSAVE: usize = offset_of!(ThreadContext, xsave);
pub const OFF_IBL_KEYS: usize = offset_of!(ThreadContext, ibl_keys);
pub const OFF_IBL_VALS: usize = offset_of!(ThreadContext, ibl_vals);

impl ThreadContext {
    /// The guest's general registers at a call-out whose code had the registers `spilled`
    /// lent (`instrument::Inline::spilled`): those hold the tool's values, their guest
    /// values wait in their spill slots.
    pub fn guest_gprs(&self, spilled: u16) -> [u64; NUM_GPRS] {
        std::array::from_fn(|r| if spilled & (1 << r) != 0 { self.tool_spill[r] } else { self.callout_regs[r] })
    }

    /// Sets guest register `r` from a call-out whose code had the registers `spilled` lent
    /// (a lent one is reloaded from its spill slot).
    pub fn set_guest_gpr(&mut self, spilled: u16, r: usize, v: u64) {
        *if spilled & (1 << r) != 0 { &mut self.tool_spill[r] } else { &mut self.callout_regs[r] } = v;
    }

    /// Allocates a zeroed context with mmap (it is about 1 MiB, mostly the lookup table, and
    /// only touched pages are backed) and points the empty lookup entries at `ibl_null`.
    pub fn new_boxed() -> Box<ThreadContext> {
        let layout = std::alloc::Layout::new::<ThreadContext>();
        // SAFETY: the layout is non-zero-sized; all-zero bytes are a valid ThreadContext
        // (plain integers and arrays of integers).
        let mut ctx = unsafe {
            let p = std::alloc::alloc_zeroed(layout) as *mut ThreadContext;
            if p.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            Box::from_raw(p)
        };
        ctx.self_ptr = &*ctx as *const _ as u64;
        ctx.exit_routine = crate::dispatch::exit_routine_addr();
        ctx.ibl_miss = crate::dispatch::ibl_miss_addr();
        ctx.callout_routine = crate::dispatch::callout_addr();
        ctx.callout_light_routine = crate::dispatch::callout_light_addr();
        ctx.xinuse_known = crate::cpuid::xinuse_known() as u64;
        let null = crate::dispatch::ibl_null_addr();
        ctx.ibl_vals.iter_mut().for_each(|v| *v = null);
        // A valid initial x87/SSE state: default control words, all components in init state.
        ctx.xsave.0[0..2].copy_from_slice(&0x037fu16.to_le_bytes()); // FCW
        ctx.xsave.0[24..28].copy_from_slice(&0x1f80u32.to_le_bytes()); // MXCSR
        ctx.xsave.0[28..32].copy_from_slice(&0xffffu32.to_le_bytes()); // MXCSR_MASK
        ctx.rflags = 0x202;
        ctx.host_fs = crate::dispatch::read_fs_base();
        ctx.counts_in_registers = counts_in_registers() as u64;
        ctx.counter_step = counter_step();
        ctx
    }

    /// The context runs on the calling host thread from now on: the host `fs` its Rust code
    /// gets back on every exit from translated code is this thread's own (a context made on
    /// one thread for another, as a new guest thread's is, has its maker's).
    pub fn adopt_host_thread(&mut self) {
        self.host_fs = crate::dispatch::read_fs_base();
    }

    /// Hash slot of a guest indirect-branch target in the inline table.
    #[inline]
    pub fn ibl_slot(target: u64) -> usize {
        // Must match `Asm::ibl_hash_rdx_to_ecx`.
        (target.rotate_right(16).wrapping_add(target) & (IBL_ENTRIES as u64 - 1)) as usize
    }

    /// Records `guest -> host` in the inline table (replacing whatever shared the slot).
    pub fn ibl_insert(&mut self, guest: u64, host: u64) {
        let s = Self::ibl_slot(guest);
        if self.ibl_keys[s] == 0 && self.ibl_vals[s] == crate::dispatch::ibl_null_addr() {
            // Empty until now: remembered for `ibl_clear`.
            match self.ibl_filled.get_mut(self.ibl_filled_len as usize) {
                Some(slot) => {
                    *slot = s as u32;
                    self.ibl_filled_len += 1;
                }
                None => self.ibl_filled_len = IBL_FILLED_ALL,
            }
        }
        self.ibl_keys[s] = guest.wrapping_neg();
        self.ibl_vals[s] = host;
    }

    /// Empties the slot of `guest` if it holds it (its translation was dropped).
    pub fn ibl_forget(&mut self, guest: u64) {
        let s = Self::ibl_slot(guest);
        if self.ibl_keys[s] == guest.wrapping_neg() {
            self.ibl_keys[s] = 0;
            self.ibl_vals[s] = crate::dispatch::ibl_null_addr();
        }
    }

    /// Empties the inline table, so every indirect branch misses to the dispatcher: the slots
    /// filled since it was last emptied.
    pub fn ibl_clear(&mut self) {
        let null = crate::dispatch::ibl_null_addr();
        if self.ibl_filled_len == IBL_FILLED_ALL {
            self.ibl_keys.iter_mut().for_each(|k| *k = 0);
            self.ibl_vals.iter_mut().for_each(|v| *v = null);
        } else {
            for &s in &self.ibl_filled[..self.ibl_filled_len as usize] {
                self.ibl_keys[s as usize] = 0;
                self.ibl_vals[s as usize] = null;
            }
        }
        self.ibl_filled_len = 0;
    }
}

/// Whether the quantum and the tool's counter live in xmm16 and xmm18 (see
/// `ThreadContext::counts_in_registers`): the CPU has
/// AVX-512F and AVX-512VL and the kernel saves the opmask and upper-16 vector registers
/// (XCR0 bits 5-7), and `count_in_memory` was not called first.
pub fn counts_in_registers() -> bool {
    *COUNTS_IN_REGISTERS.get_or_init(|| {
        use std::arch::x86_64::{__cpuid_count, _xgetbv};
        let leaf1 = __cpuid_count(1, 0);
        let leaf7 = __cpuid_count(7, 0);
        let osxsave = leaf1.ecx & (1 << 27) != 0;
        let (f, vl) = (leaf7.ebx & (1 << 16) != 0, leaf7.ebx & (1 << 31) != 0);
        // SAFETY: xgetbv(0) is available when CPUID says OSXSAVE.
        let xcr0 = if osxsave { unsafe { _xgetbv(0) } } else { 0 };
        osxsave && f && vl && xcr0 & 0xe0 == 0xe0
    })
}

static COUNTS_IN_REGISTERS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// Sets what `Inline::count` adds to a thread's counter (see `ThreadContext::counter`), the
/// same for every thread: call it before the first context is made (0 until then).
pub fn set_counter_step(step: u32) {
    assert!(step <= i32::MAX as u32, "the step is a 32-bit displacement");
    COUNTER_STEP.store(u64::from(step), std::sync::atomic::Ordering::Relaxed);
}

pub(crate) fn counter_step() -> u64 {
    COUNTER_STEP.load(std::sync::atomic::Ordering::Relaxed)
}

static COUNTER_STEP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Keeps block counts in memory even where xmm16 could hold them (to compare the two; must be
/// called before the first context is made).
pub fn count_in_memory() {
    let _ = COUNTS_IN_REGISTERS.set(false);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets() {
        // The emitter and dispatch.rs encode these as disp32 / disp8 constants.
        assert_eq!(OFF_GPR, 0);
        assert_eq!(OFF_RIP, 0x80);
        assert_eq!(OFF_RFLAGS, 0x88);
        assert_eq!(OFF_XSAVE % 64, 0);
        assert!(OFF_IBL_VALS + IBL_ENTRIES * 8 <= std::mem::size_of::<ThreadContext>());
        assert!(std::mem::size_of::<ThreadContext>() < i32::MAX as usize);
    }

    #[test]
    fn ibl_keys_are_negated_targets() {
        let mut c = ThreadContext::new_boxed();
        c.ibl_insert(0x401000, 0x1234);
        let s = ThreadContext::ibl_slot(0x401000);
        assert_eq!(c.ibl_keys[s].wrapping_add(0x401000), 0);
        c.ibl_clear();
        assert_eq!(c.ibl_keys[s], 0);
    }

    /// Emptying the table empties every slot filled since it was last emptied, whether it
    /// remembered them one by one or had more than it remembers.
    #[test]
    fn ibl_clear_empties_every_filled_slot() {
        let null = crate::dispatch::ibl_null_addr();
        let mut c = ThreadContext::new_boxed();
        for n in [10u64, IBL_FILLED as u64 + 10, 3] {
            let targets: Vec<u64> = (0..n).map(|k| 0x400000 + k).collect();
            for &t in &targets {
                c.ibl_insert(t, 0x1000 + t);
                c.ibl_insert(t, 0x2000 + t); // (a slot filled again is remembered once)
            }
            assert!(targets.iter().all(|&t| c.ibl_vals[ThreadContext::ibl_slot(t)] == 0x2000 + t));
            c.ibl_clear();
            assert!(c.ibl_keys.iter().all(|&k| k == 0) && c.ibl_vals.iter().all(|&v| v == null), "{n} targets");
            assert_eq!(c.ibl_filled_len, 0);
        }
    }
}
