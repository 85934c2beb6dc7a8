//! Guest block -> host code. Guest instructions are copied byte for byte where their address
//! does not matter, re-encoded where it does (RIP-relative operands), and replaced where they
//! transfer control: direct branches become patchable jumps to exit stubs, indirect branches
//! an inline hash-table lookup, `syscall`/`cpuid` exits to the dispatcher.
//!
//! A translation is a pure function of the guest bytes, the block's host address and the
//! tool's instrumentation, so it can be redone at any time.

use crate::cache::{Block, BlockId, CacheError, CodeCache, ExitKind, Fixup, PcEntry};
use crate::context::{reg, *};
use crate::emit::{Asm, Label};
use crate::image::{ImageExit, Reinstall, Reloc, ToolRecord};
use crate::instrument::{spill_slot, used_registers, BlockCode, Finished, Inline, InsnSite, Tool, ToolImm, Version, CLIENT_REQUEST};
use crate::profile::{Phase, PhaseTimer};
use iced_x86::{
    BlockEncoderOptions, Code, ConditionCode, Decoder, DecoderError, DecoderOptions, Encoder, FlowControl, Formatter, Instruction, InstructionInfo,
    InstructionInfoFactory, MemoryOperand, Mnemonic, NasmFormatter, OpKind, Register,
};
use rustc_hash::FxHashMap;

/// Longest block, in guest instructions.
pub const MAX_BLOCK_INSNS: usize = 64;
/// Conditional branches a block may go on past (`RTGRIND_FOLD_BRANCHES=N` changes it; 0
/// ends every block at its first conditional branch).
pub(crate) fn max_folded() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| std::env::var("RTGRIND_FOLD_BRANCHES").ok().and_then(|v| v.parse().ok()).unwrap_or(MAX_BLOCK_INSNS))
}
/// Guest bytes fetched for one block (longest x86 instruction is 15 bytes).
const FETCH_BYTES: usize = MAX_BLOCK_INSNS * 15;
/// Host bytes reserved in the arena before assembling a block (generous upper bound: 4 KiB
/// per guest instruction). Where a block ends depends on the guest code only, never on how
/// much code a tool adds, so block instances count the same under every tool and plan.
const MAX_HOST_BYTES: usize = 256 * 1024;

/// Block length limit; `RTGRIND_BLOCK_INSNS=N` lowers it (1 = one instruction per block, a
/// debugging aid that isolates block-level translation bugs from instruction-level ones).
pub(crate) fn max_block_insns() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| std::env::var("RTGRIND_BLOCK_INSNS").ok().and_then(|v| v.parse().ok()).map_or(MAX_BLOCK_INSNS, |n: usize| n.clamp(1, MAX_BLOCK_INSNS)))
}

/// Where the translator reads guest code from. Implemented by the runtime, which knows the
/// guest memory map: only bytes in mapped, executable guest memory are returned.
pub trait CodeSource {
    /// Copies up to `buf.len()` bytes of executable guest code at `addr` into `buf`,
    /// returning how many could be read (0 if `addr` is not executable).
    fn read_code(&mut self, addr: u64, buf: &mut [u8]) -> usize;
    /// Whether the code in `[start, end)` is fixed for the whole run (read-only code of a
    /// mapped file, not code the program makes and may change, as a JIT compiler's): only its
    /// translations may be re-used from their images (`Block::reusable`).
    fn fixed_code(&mut self, _start: u64, _end: u64) -> bool {
        false
    }
    /// The module of fixed code (a mapped file with a build ID) `pc` lies in: only its blocks
    /// go into the translation cache across runs (`persist`), keyed by the module and offset.
    fn module_of(&mut self, _pc: u64) -> Option<crate::persist::Module> {
        None
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TranslateError {
    /// No executable guest code at the address: the guest should get SIGSEGV.
    #[error("no executable code at {0:#x}")]
    NotExecutable(u64),
    /// The bytes at the address are not a valid instruction: the guest should get SIGILL.
    #[error("invalid instruction at {0:#x}")]
    Invalid(u64),
    #[error(transparent)]
    Cache(#[from] CacheError),
}

/// Formats one instruction for messages and traces.
pub fn format_insn(ins: &Instruction) -> String {
    let mut f = NasmFormatter::new();
    let mut s = String::new();
    f.format(ins, &mut s);
    s
}

struct PendingExit {
    kind: ExitKind,
    pc: u64,
    target: u64,
    /// Offset of the patchable rel32 in the block (None if the exit is not linkable).
    site: Option<usize>,
    stub: Label,
    note: Option<String>,
    /// Registers the stub reloads first (a self-loop's exit, see `BlockBuilder::pre_steal`).
    reload: u16,
    /// Where a link of this exit to its own block enters (a self-loop's head).
    self_entry: Option<Label>,
    /// The code at `stub` records the exit's id itself (a way into a lazy full version).
    inline: bool,
}

struct BlockBuilder {
    asm: Asm,
    pc_map: Vec<PcEntry>,
    exits: Vec<PendingExit>,
    first_exit_id: u32,
    /// The fields of the code that depend on its place and on the exits before it, or on
    /// the run (the tool's records, constants and ids).
    relocs: Vec<Reloc>,
    /// The tool's records the code points into (`Reloc::Record`).
    records: Vec<ToolRecord>,
    /// The tool's code holds a value without a relocation (`Inline::callout`).
    raw: bool,
    /// `RTGRIND_REINSTALL=revive`: the tool's relocated values are `POISON`, and no record
    /// is made (the block runs from a copy installed from its image).
    poison: bool,
    /// `Tool::relocatable_code`.
    tool_relocatable: bool,
    /// Registers lent to tool code whose guest values wait in their spill slots. A lent
    /// register stays spilled across instructions that do not use it (as DynamoRIO's drreg
    /// does) and is reloaded only before one that does and before the block ends: spilling and
    /// reloading it around every instruction would chain all of them through store-to-load
    /// forwarding.
    stolen: u16,
    /// Registers whose spill slot holds their guest value now (stolen ones, and ones reloaded
    /// or spilled and not written since): lending one of them again needs no spill.
    slot_current: u16,
    /// The buffers each point's tool code is encoded into (`assemble_at`), kept for the next.
    tool_bytes: Vec<u8>,
    tool_offsets: Vec<u32>,
    /// The version being translated.
    version: Version,
    /// Jumps of the fast version's code to the full version, emitted after the versions.
    to_full: Vec<ToFull>,
    /// Where the full version starts, and where its code for each instruction starts with
    /// the registers stolen there (two versions only).
    full: Option<Label>,
    full_at: Vec<(Label, u16)>,
    /// Whether the full version is left out (see `Block::lazy_full`): the fast version's ways
    /// into it leave for the runtime.
    lazy: bool,
    /// Where the ways into the full version enter it from the runtime (see
    /// `Block::full_entries`).
    full_entries: Vec<(Option<u16>, Label)>,
    /// Where the fast version goes on after its block-start code, with the registers stolen
    /// there.
    fast_body: Option<(Label, u16)>,
    /// 8-byte constants placed after the stubs (calls' return addresses).
    literals: Vec<(Label, u64)>,
    /// Conditional exits taken with registers stolen (see `conditional`): their reloads,
    /// out of line before the stubs.
    taken_with_stolen: Vec<TakenExit>,
    /// The guest address of the block, and whether a `jcc` back to it may link to a loop head
    /// inside it (not with preemption counts, which every loop must pass).
    pc: u64,
    self_loops: bool,
    /// `pause` leaves for the runtime, which lets another thread run (with preemption: more
    /// than one thread).
    pause_yields: bool,
    /// Registers spilled where the fast (or only) version starts, before `loop_head`: a `jcc`
    /// back to the block's start with just these stolen links to the head, so a loop keeps
    /// them stolen (a reload at its end and a spill at its start would chain every iteration
    /// through store-to-load forwarding). Found by a first translation (`wants_pre_steal`).
    pre_steal: u16,
    loop_head: Option<Label>,
    /// Registers stolen at a `jcc` back to the block's start in this translation.
    wants_pre_steal: u16,
    /// The translation's phase timer (`--stats`).
    prof: PhaseTimer,
    /// Jumps past the instruction being translated (`Inline::skip_insn`), whether the flags
    /// were saved around their code: joined after it (`join_skips`).
    pending_skips: Vec<(Label, bool)>,
    /// Ways past skipped instructions, out of line after both versions.
    skips: Vec<Skip>,
}

/// The way past a skipped instruction (`Inline::skip_insn`): the guest's flags back if the
/// tool's code saved them, the registers the instruction would have overwritten while the
/// tool held them reloaded (the code after it takes them for the instruction's), then on.
struct Skip {
    label: Label,
    restore_flags: bool,
    reload: u16,
    join: Label,
}

/// A conditional branch's taken path out of the middle of a block while registers are stolen:
/// the reloads of `stolen` happen there, so the fall-through path keeps the tool's values.
struct TakenExit {
    label: Label,
    stolen: u16,
    pc: u64,
    target: u64,
}

/// Where a tool's code is, for its jumps to the full version.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Point {
    Start,
    /// Before the k-th instruction (from 0), at `pc`, `len` bytes long, whose memory access
    /// goes through the stack segment (based on rsp or rbp; see `PcEntry::tool_stack_segment`).
    Before(usize, u64, u8, bool),
    Elsewhere,
}

impl Point {
    /// The point as `ExitKind::FullVersion` and `Block::full_entries` name it (the block
    /// start, or the instruction's index), and its guest pc (`block_pc` at the start).
    fn full_version_point(self, block_pc: u64) -> (Option<u16>, u64) {
        match self {
            Point::Before(k, pc, ..) => (Some(k as u16), pc),
            _ => (None, block_pc),
        }
    }
}

/// A jump of the fast version to the full one (`Inline::full_version_if`), or back from the
/// full version's start (`Inline::fast_version_if`): the guest state comes back, the other
/// version's stolen registers there get their spill slots filled, then the jump.
struct ToFull {
    label: Label,
    restore_flags: bool,
    /// Registers whose guest values wait in their spill slots at the jump.
    spilled: u16,
    at: Point,
    to_fast: bool,
}

impl BlockBuilder {
    /// A builder for the block at `pc`, its code at `host`.
    fn new(cache: &CodeCache, host: u64, pc: u64, pre_steal: u16, lazy: bool) -> BlockBuilder {
        BlockBuilder {
            asm: Asm::new(host),
            pc_map: Vec::new(),
            exits: Vec::new(),
            first_exit_id: cache.exits.len() as u32,
            relocs: Vec::new(),
            records: Vec::new(),
            raw: false,
            poison: false,
            tool_relocatable: false,
            stolen: 0,
            slot_current: 0,
            tool_bytes: Vec::new(),
            tool_offsets: Vec::new(),
            version: Version::Only,
            to_full: Vec::new(),
            full: None,
            full_at: Vec::new(),
            lazy,
            full_entries: Vec::new(),
            fast_body: None,
            literals: Vec::new(),
            taken_with_stolen: Vec::new(),
            pc,
            self_loops: !cache.preempt,
            pause_yields: cache.preempt,
            pre_steal,
            loop_head: None,
            wants_pre_steal: 0,
            prof: PhaseTimer::default(),
            pending_skips: Vec::new(),
            skips: Vec::new(),
        }
    }

    /// A builder for tool code at the current point.
    fn inline(&self, guest_uses: u16, flags_live: bool, later: u16) -> Inline {
        Inline::new(guest_uses, flags_live, self.stolen, self.version).used_later(later)
    }

    /// Emits the fast version's jumps to the full one, out of line after both versions (or,
    /// without a full version, its ways out to the runtime, which builds it: each records its
    /// exit's id and goes on to the block's one copy of the tool's full-entry code and the
    /// exit routine).
    fn emit_to_full(&mut self, tool: &mut dyn Tool) {
        let mut lazy_tail = None;
        for j in std::mem::take(&mut self.to_full) {
            self.asm.bind(j.label);
            self.guest_state_back(j.restore_flags, j.spilled);
            if !j.to_fast && self.lazy {
                // Every register and the flags hold guest values here.
                let (at, pc) = j.at.full_version_point(self.pc);
                let id = self.first_exit_id + self.exits.len() as u32;
                let kind = ExitKind::FullVersion { at };
                self.exits.push(PendingExit {
                    kind,
                    pc: self.pc,
                    target: pc,
                    site: None,
                    stub: j.label,
                    note: None,
                    reload: 0,
                    self_entry: None,
                    inline: true,
                });
                self.exit_id(id);
                let tail = *lazy_tail.get_or_insert_with(|| self.asm.new_label());
                self.asm.jmp_label(tail);
                continue;
            }
            if !j.to_fast {
                self.full_entry_code(tool);
                // Every register and the flags hold guest values here.
                let (at, _) = j.at.full_version_point(self.pc);
                if self.full_entries.iter().all(|e| e.0 != at) {
                    let entry = self.asm.new_label();
                    self.asm.bind(entry);
                    self.full_entries.push((at, entry));
                }
            }
            let (target, stolen) = match j.at {
                _ if j.to_fast => self.fast_body.expect("a fast version"),
                Point::Before(k, ..) => self.full_at[k],
                _ => (self.full.expect("a full version"), 0),
            };
            // The full version reloads these lazily from their slots.
            for r in 0..16u8 {
                if stolen & (1 << r) != 0 {
                    self.asm.store_gs(spill_slot(r as usize), r);
                }
            }
            self.asm.jmp_label(target);
        }
        if let Some(tail) = lazy_tail {
            self.asm.bind(tail);
            self.full_entry_code(tool);
            self.asm.jmp_gs(OFF_EXIT_ROUTINE);
        }
    }

    /// The tool's code for every way into the full version (`Tool::full_entry`).
    fn full_entry_code(&mut self, tool: &mut dyn Tool) {
        // No register is free here: the tool's code can only be position-independent moves
        // of constants (assembled at 0).
        let mut entry = Inline::new(0xffff, false, 0, Version::Full);
        self.prof.timed(Phase::ToolHooks, || tool.full_entry(&mut entry));
        if let Some(code) = entry.finish_plain() {
            self.asm.bytes(&code);
        }
    }

    /// Right after an instruction the tool's code may have skipped, which overwrote `whole`
    /// (see `written_registers`) and ran with `stolen_before` stolen: the skips join here.
    fn join_skips(&mut self, stolen_before: u16, whole: u16) {
        if self.pending_skips.is_empty() {
            return;
        }
        let join = self.asm.new_label();
        self.asm.bind(join);
        for (label, restore_flags) in std::mem::take(&mut self.pending_skips) {
            self.skips.push(Skip { label, restore_flags, reload: stolen_before & whole, join });
        }
    }

    /// On a way out of a tool's code (out of line): the guest's flags back if the code saved
    /// them, and the registers `regs` from their spill slots.
    fn guest_state_back(&mut self, restore_flags: bool, regs: u16) {
        if restore_flags {
            self.asm.restore_flags_ax(OFF_FLAGS_SAVE);
            self.asm.load_gs(reg::RAX, OFF_FLAGS_RAX);
        }
        self.reload(regs);
    }

    /// Emits the ways past skipped instructions, out of line.
    fn emit_skips(&mut self) {
        assert!(self.pending_skips.is_empty(), "a tool skips only an instruction that falls through");
        for s in std::mem::take(&mut self.skips) {
            self.asm.bind(s.label);
            self.guest_state_back(s.restore_flags, s.reload);
            self.asm.jmp_label(s.join);
        }
    }

    fn map(&mut self, ins: &Instruction, fixup: Fixup) {
        self.pc_map.push(PcEntry {
            host_off: self.asm.pos() as u32,
            guest_pc: ins.ip(),
            guest_len: ins.len() as u8,
            fixup,
            stolen: self.stolen,
            tool_stack_segment: None,
            trap: false,
        });
    }

    /// Reloads the guest values of the stolen registers among `regs`.
    fn restore(&mut self, regs: u16) {
        self.reload(self.stolen & regs);
        self.stolen &= !regs;
    }

    /// Loads the registers `regs` from their spill slots (out-of-line paths: the state of the
    /// code that follows in line does not change).
    fn reload(&mut self, regs: u16) {
        for r in 0..16u8 {
            if regs & (1 << r) != 0 {
                self.asm.load_gs(r, spill_slot(r as usize));
            }
        }
    }

    /// After a guest instruction that wrote `written`, of which it wrote `whole` without
    /// reading them (their stolen values were never reloaded: the instruction replaced them).
    fn wrote(&mut self, written: u16, whole: u16) {
        self.stolen &= !whole;
        self.slot_current &= !written;
    }

    /// `jmp rel32` to a new linkable exit towards `target`.
    fn jmp_exit(&mut self, pc: u64, target: u64) {
        let stub = self.asm.new_label();
        self.asm.align_rel32(1);
        self.asm.jmp_label(stub);
        let site = Some(self.asm.pos() - 4);
        self.exits.push(PendingExit { kind: ExitKind::Direct, pc, target, site, stub, note: None, reload: 0, self_entry: None, inline: false });
    }

    /// `jcc rel32` to a new linkable exit towards `target`.
    fn jcc_exit(&mut self, cc: u8, pc: u64, target: u64) {
        self.linkable_jcc(cc, pc, target, 0, None);
    }

    /// `jcc rel32` back to the block's start from its fast (or only) version with `pre_steal`
    /// stolen: linked to the block itself, it enters at the loop head (the registers stay
    /// stolen); its stub, taken while unlinked, reloads them first.
    fn self_loop_exit(&mut self, cc: u8, pc: u64) {
        self.linkable_jcc(cc, pc, self.pc, self.pre_steal, self.loop_head);
    }

    fn linkable_jcc(&mut self, cc: u8, pc: u64, target: u64, reload: u16, self_entry: Option<Label>) {
        let stub = self.asm.new_label();
        self.asm.align_rel32(2);
        self.asm.jcc_label(cc, stub);
        let site = Some(self.asm.pos() - 4);
        self.exits.push(PendingExit { kind: ExitKind::Direct, pc, target, site, stub, note: None, reload, self_entry, inline: false });
    }

    /// Whether `ins` is a plain `jcc` back to the block's start that could keep registers
    /// stolen across the loop (see `pre_steal`).
    fn closes_self_loop(&self, ins: &Instruction, outcome: Option<usize>) -> bool {
        self.self_loops
            && self.version != Version::Full
            && outcome.is_none()
            && ins.condition_code() != ConditionCode::None
            && !counts_rcx(ins)
            && ins.near_branch_target() == self.pc
    }

    /// At the loop head and before a self-loop's `jcc` (with `pre_steal`): the registers stolen
    /// become exactly `pre_steal` (reloads of others, spills of missing ones).
    fn steal_as_at_head(&mut self) {
        let (want, now) = (self.pre_steal, self.stolen);
        self.restore(now & !want);
        for r in 0..16u8 {
            if want & !now & !self.slot_current & (1 << r) != 0 {
                self.asm.store_gs(spill_slot(r as usize), r);
            }
        }
        self.stolen = want;
        self.slot_current |= want;
    }

    /// An unconditional, unlinkable exit of the given kind (the stub follows inline).
    /// `jcc` (cc: the low nibble of the short opcode) straight to a new exit's stub.
    fn leave_if(&mut self, cc: u8, kind: ExitKind, pc: u64, target: u64) {
        let stub = self.asm.new_label();
        self.asm.jcc_label(cc, stub);
        self.exits.push(PendingExit { kind, pc, target, site: None, stub, note: None, reload: 0, self_entry: None, inline: false });
    }

    fn leave(&mut self, kind: ExitKind, pc: u64, target: u64, note: Option<String>) {
        let stub = self.asm.new_label();
        self.asm.jmp_label(stub);
        self.exits.push(PendingExit { kind, pc, target, site: None, stub, note, reload: 0, self_entry: None, inline: false });
    }

    /// `mov dword gs:[exit_id], id`: exit `id` was taken (relocated: `Reloc::ExitId`).
    fn exit_id(&mut self, id: u32) {
        self.asm.store_gs_imm32(OFF_EXIT_ID, id);
        let (at, exit) = (self.asm.pos() as u32 - 4, id - self.first_exit_id);
        self.relocs.push(Reloc::ExitId { at, exit });
    }

    /// Emits all stubs: record which exit was taken (its entry in the exit table says where
    /// the guest goes on), then leave.
    fn emit_stubs(&mut self) {
        for i in 0..self.exits.len() {
            let id = self.first_exit_id + i as u32;
            let (stub, reload) = (self.exits[i].stub, self.exits[i].reload);
            if self.exits[i].inline {
                continue;
            }
            self.asm.bind(stub);
            self.reload(reload);
            self.exit_id(id);
            self.asm.jmp_gs(OFF_EXIT_ROUTINE);
        }
    }
}

/// The straight-line code decoded from the start of `bytes` (at `pc`), up to where a block
/// must end, with room to look ahead from a block cut at its length limit.
fn decode_reach(bytes: &[u8], pc: u64) -> Vec<Instruction> {
    let mut insns = Vec::new();
    for ins in Decoder::with_ip(64, bytes, pc, DecoderOptions::NONE).iter().take(2 * MAX_BLOCK_INSNS) {
        insns.push(ins);
        let ends = !matches!(ins.flow_control(), FlowControl::Next | FlowControl::ConditionalBranch | FlowControl::XbeginXabortXend);
        if ins.is_invalid() || ends || matches!(ins.mnemonic(), Mnemonic::Syscall | Mnemonic::Cpuid) {
            break;
        }
    }
    insns
}

/// One `InstructionInfoFactory` per instruction of a block's reach, kept from block to block
/// (a factory's analysis reuses its lists): the analyses `used_from` makes point into them.
/// Given back to the thread's pool when dropped.
struct InfoFactories(Vec<InstructionInfoFactory>);

thread_local! {
    static INFO_FACTORIES: std::cell::RefCell<Vec<InstructionInfoFactory>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl InfoFactories {
    /// At least `n` factories.
    fn take(n: usize) -> InfoFactories {
        let mut f = INFO_FACTORIES.with(|p| std::mem::take(&mut *p.borrow_mut()));
        if f.len() < n {
            f.resize_with(n, InstructionInfoFactory::new);
        }
        InfoFactories(f)
    }
}

impl Drop for InfoFactories {
    fn drop(&mut self) {
        let f = std::mem::take(&mut self.0);
        INFO_FACTORIES.with(|p| *p.borrow_mut() = f);
    }
}

/// For each instruction k of `insns` (from `decode_reach`), the general registers the
/// instructions from k up to the next exit use: every exit gives all registers their guest
/// values back, so a register lent after it is reloaded there anyway. Also each
/// instruction's `InstructionInfo`, which every version's translation and the tool's hooks
/// read (made once: iced's analysis is a good part of a translation's time). Each analysis
/// stays in a factory of its own (`InfoFactories`): a copy of one costs two allocations.
fn used_from<'f>(insns: &[Instruction], factories: &'f mut [InstructionInfoFactory]) -> (Vec<u16>, Vec<&'f InstructionInfo>) {
    let infos: Vec<&InstructionInfo> = factories.iter_mut().zip(insns).map(|(f, ins)| f.info(ins)).collect();
    let mut later = vec![0u16; insns.len() + 1];
    for (k, ins) in insns.iter().enumerate().rev() {
        let uses = if ins.is_invalid() { 0xffff } else { used_registers(ins, infos[k]) };
        let exits = ins.flow_control() != FlowControl::Next;
        later[k] = if exits { uses } else { later[k + 1] | uses };
    }
    (later, infos)
}

/// For each instruction of `insns` (from `decode_reach`), whether the six status flags are
/// dead just before it: each of them is written before any instruction reads it. One
/// backward pass, flag by flag; past the last instruction, and on the taken side of a branch,
/// every flag is live.
///
/// A flag an instruction leaves undefined passes through (hardware keeps some: `bt` keeps
/// ZF, a shift by `cl` = 0 keeps them all), except where `overwrites_undefined` knows better.
fn status_flags_dead(insns: &[Instruction], src: &mut dyn CodeSource, flags_read: &mut FxHashMap<u64, (u32, u32)>, prof: &mut PhaseTimer) -> Vec<bool> {
    let was = prof.switch(Phase::FlagLiveness);
    let mut dead = vec![false; insns.len() + 1];
    let mut live = STATUS; // after the last instruction
    for (i, ins) in insns.iter().enumerate().rev() {
        if ins.is_invalid() {
            live = STATUS;
            continue;
        }
        if !straight_on(ins) {
            // The other way out: a direct branch's target or call's callee reads what its
            // first instructions read before writing; anything else (an indirect branch, a
            // return, the kernel) may read any flag.
            let direct = matches!(ins.op0_kind(), OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64);
            let there = if direct {
                let was = prof.switch(Phase::FlagLookahead);
                let target = ins.near_branch_target();
                let (there, got) = *flags_read.entry(target).or_insert_with(|| flags_read_at(src, target, &mut prof.lookahead_decoded));
                // (Read once, but every translation that uses it depends on those bytes.)
                crate::persist::note_read(target, LOOKAHEAD_BYTES, got as usize);
                prof.switch(was);
                there
            } else {
                STATUS
            };
            live = match ins.flow_control() {
                FlowControl::ConditionalBranch if direct => live | there,
                FlowControl::UnconditionalBranch | FlowControl::Call if direct => there,
                _ => STATUS,
            };
        }
        live = (live & !killed_flags(ins) | ins.rflags_read()) & STATUS;
        dead[i] = live == 0;
    }
    prof.switch(was);
    dead
}

/// The six status flags.
const STATUS: u32 = {
    use iced_x86::RflagsBits;
    RflagsBits::OF | RflagsBits::SF | RflagsBits::ZF | RflagsBits::AF | RflagsBits::CF | RflagsBits::PF
};

/// The status flags `ins` gives new values, whatever they were.
fn killed_flags(ins: &Instruction) -> u32 {
    ins.rflags_written() | ins.rflags_cleared() | ins.rflags_set() | overwrites_undefined(ins)
}

/// The status flags the code at `target` may read before it writes them: its straight-line
/// start, up to its first branch (past which any may be read) or 16 instructions. A later
/// change of that code does not revisit blocks that branch there (a program that rewrites a
/// function's first instructions to read flags its callers left is not supported); blocks
/// translated after it look again (`CodeCache::flags_read` is emptied on invalidation).
fn flags_read_at(src: &mut dyn CodeSource, target: u64, decoded: &mut u64) -> (u32, u32) {
    let mut buf = [0u8; LOOKAHEAD_BYTES];
    let n = src.read_code(target, &mut buf);
    (flags_read_in(&buf[..n], target, decoded), n as u32)
}

/// Guest bytes the flags look-ahead reads at a branch target (16 instructions' worth).
const LOOKAHEAD_BYTES: usize = 16 * 15;

/// `flags_read_at` of the bytes `code` at `target`.
fn flags_read_in(code: &[u8], target: u64, decoded: &mut u64) -> u32 {
    let (mut read, mut killed) = (0, 0);
    for ins in Decoder::with_ip(64, code, target, DecoderOptions::NONE).iter().take(16) {
        *decoded += 1;
        if ins.is_invalid() {
            break;
        }
        read |= ins.rflags_read() & !killed;
        killed |= killed_flags(&ins);
        if killed & STATUS == STATUS {
            return read & STATUS;
        }
        if !straight_on(&ins) {
            break;
        }
    }
    (read | !killed) & STATUS
}

/// Whether the code after `ins` is all that can run next (not a branch, a call or a return,
/// and not `syscall` or `cpuid`, which leave to the runtime).
fn straight_on(ins: &Instruction) -> bool {
    ins.flow_control() == FlowControl::Next && !matches!(ins.mnemonic(), Mnemonic::Syscall | Mnemonic::Cpuid)
}

/// The flags `ins` leaves "undefined" that the hardware nonetheless computes afresh, whatever
/// they were before: AF after the logic instructions, SF/ZF/AF/PF after multiplications, OF
/// and AF after a shift by a non-zero immediate. (Checked by the instruction-level
/// differential tests, which compare every flag after every instruction under the tools.)
fn overwrites_undefined(ins: &Instruction) -> u32 {
    use Mnemonic::*;
    let shift_by_imm = matches!(ins.mnemonic(), Shl | Shr | Sar | Sal)
        && ins.op_count() == 2
        && ins.op1_kind() == OpKind::Immediate8
        && (ins.immediate8() & if ins.op0_register().size() == 8 || ins.memory_size().size() == 8 { 63 } else { 31 }) != 0;
    if matches!(ins.mnemonic(), And | Or | Xor | Test | Mul | Imul | Andn) || shift_by_imm {
        ins.rflags_undefined()
    } else {
        0
    }
}

/// Where an instruction that saves the x87 environment puts its last-instruction pointer
/// (FIP), which the CPU fills with the code cache's address of the last x87 instruction: the
/// offset in its memory operand and whether the field is 64 bits wide (else 32). The guest's
/// address goes there: written after the instruction where it is known and the instruction
/// always writes the field (`fnstenv`, `fnsave`; `fxsave` and `xsave` write zero on some
/// CPUs, AMD's without a pending exception), else by the runtime from the cache's address
/// (`ExitKind::X87Saved`). (The 16-bit formats are left as they are.)
pub fn saved_fip(ins: &Instruction) -> Option<(u64, bool)> {
    use Code::*;
    match ins.code() {
        Fnstenv_m28byte | Fstenv_m28byte | Fnsave_m108byte | Fsave_m108byte => Some((12, false)),
        Fxsave_m512byte | Xsave_mem | Xsaveopt_mem | Xsavec_mem => Some((8, false)),
        Fxsave64_m512byte | Xsave64_mem | Xsaveopt64_mem | Xsavec64_mem => Some((8, true)),
        _ => None,
    }
}

/// Whether `ins` (with a `saved_fip`) always writes the last-instruction pointer.
fn always_saves_fip(ins: &Instruction) -> bool {
    matches!(ins.mnemonic(), Mnemonic::Fnstenv | Mnemonic::Fstenv | Mnemonic::Fnsave | Mnemonic::Fsave)
}

/// `mov dword [m + offset], imm`, for `ins`'s memory operand `m` (same pc and length).
fn store_imm32(ins: &Instruction, offset: u64, imm: u32) -> Instruction {
    let disp = ins.memory_displacement64().wrapping_add(offset);
    // (iced's sizes: 1 for a disp8, 8 for a disp32 of 64-bit addressing, 4 of 32-bit.)
    let addr32 = ins.memory_base().size() == 4 || ins.memory_index().size() == 4;
    let displ_size = if addr32 {
        4
    } else if !ins.is_ip_rel_memory_operand() && i8::try_from(disp as i64).is_ok() {
        1
    } else {
        8
    };
    let mem = MemoryOperand::new(ins.memory_base(), ins.memory_index(), ins.memory_index_scale(), disp as i64, displ_size, false, ins.segment_prefix());
    let mut mov = Instruction::with2(Code::Mov_rm32_imm32, mem, imm).expect("mov m32, imm32");
    mov.set_ip(ins.ip());
    mov.set_len(ins.len());
    mov.set_next_ip(ins.next_ip());
    mov
}

/// What the x87 last-instruction pointer holds after `ins`, `before` before it: the
/// non-control x87 instructions set it, `fninit` and the loads of an environment set the
/// guest's own.
fn x87_ip_after(ins: &Instruction, before: X87Ip) -> X87Ip {
    use Mnemonic::*;
    match ins.mnemonic() {
        // (`fnsave` initializes the unit after saving it, as `fninit` does.)
        Fninit | Finit | Fnsave | Fsave | Fldenv | Frstor | Fxrstor | Fxrstor64 | Xrstor | Xrstor64 => X87Ip::Guests,
        Fnstenv | Fstenv | Fxsave | Fxsave64 | Xsave | Xsave64 | Xsaveopt | Xsaveopt64 | Xsavec | Xsavec64 => before,
        Fldcw | Fnstcw | Fstcw | Fnstsw | Fstsw | Fnclex | Fclex | Wait => before,
        _ if ins.cpuid_features().contains(&iced_x86::CpuidFeature::FPU) => X87Ip::At(ins.ip()),
        _ => before,
    }
}

/// How an instruction that can only raise an exception in a user process is run.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Trap {
    /// Its own bytes: the host kernel gives the signal the guest's would (`int3`, `int n`,
    /// which is a general-protection fault but for vectors 3 and 4, `int1`, `ud2`, and the
    /// privileged instructions that end a block: `swapgs`, `sysret`, `sysexit`).
    Own,
    /// `ud2`: an instruction of a feature the guest's CPUID hides, which raises #UD on the
    /// CPU the guest is shown (RTM's `xbegin`, `xend`, `xabort`, `xtest`).
    Undefined,
}

const UD2: [u8; 2] = [0x0f, 0x0b];

/// Whether `ins` is run as a `Trap` (`int 0x80` is a system call: `ExitKind::Int80`).
fn trap_kind(ins: &Instruction) -> Option<Trap> {
    use Mnemonic::*;
    match ins.mnemonic() {
        Xbegin | Xend | Xabort | Xtest | Enclu => Some(Trap::Undefined),
        // (64-bit mode's #UD on AMD CPUs; on Intel's it enters the kernel: `unsupported`.)
        Sysenter => Some(Trap::Undefined),
        Swapgs | Sysret | Sysretq | Sysexit | Sysexitq => Some(Trap::Own),
        _ if matches!(ins.flow_control(), FlowControl::Interrupt | FlowControl::Exception) => Some(Trap::Own),
        _ => None,
    }
}

/// Whether the engine cannot run `ins` at all: `sysenter` where it is the kernel's 32-bit
/// system call entry (Intel CPUs; on AMD's it raises #UD in 64-bit mode, `trap_kind`).
/// Everything else either runs (copied or rewritten) or is emulated (`emulated`).
fn unsupported(ins: &Instruction) -> bool {
    ins.mnemonic() == Mnemonic::Sysenter && !crate::cpuid::host_is_amd()
}

/// A string instruction that reads memory through rsi (its kind), told from the SSE
/// `movsd`/`cmpsd` by its operands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum StringOp {
    Lods,
    Movs,
    Cmps,
}

/// What string instruction `ins` is, if it is `lods`, `movs` or `cmps`.
pub fn string_op(ins: &Instruction) -> Option<StringOp> {
    use Mnemonic::*;
    if !(0..ins.op_count()).any(|i| matches!(ins.op_kind(i), OpKind::MemorySegSI | OpKind::MemorySegESI | OpKind::MemorySegRSI)) {
        return None;
    }
    match ins.mnemonic() {
        Lodsb | Lodsw | Lodsd | Lodsq => Some(StringOp::Lods),
        Movsb | Movsw | Movsd | Movsq => Some(StringOp::Movs),
        Cmpsb | Cmpsw | Cmpsd | Cmpsq => Some(StringOp::Cmps),
        _ => None,
    }
}

/// Whether `ins` is a string instruction that reads through the guest's `gs` (`lods`, `movs`,
/// `cmps` with a `gs` prefix), which the runtime emulates: its implicit rsi cannot be
/// rewritten. (`outs` is copied: at CPL 3 it raises #GP before it reads.)
pub fn gs_string(ins: &Instruction) -> bool {
    ins.segment_prefix() == Register::GS
        && string_op(ins).is_some()
        && (0..ins.op_count()).any(|i| matches!(ins.op_kind(i), OpKind::MemorySegSI | OpKind::MemorySegESI | OpKind::MemorySegRSI))
}

/// Whether the runtime emulates `ins` (`ExitKind::Emulate`): far transfers (`iret`, `retf`,
/// `jmp`/`call` through a far pointer), which check the code segment's selector; what reads or
/// writes the guest's `gs` selector (the engine's `gs` is its own); indirect branches
/// through a `gs`-relative operand; `gs_string`.
pub fn emulated(ins: &Instruction) -> bool {
    use Mnemonic::*;
    if matches!(ins.mnemonic(), Iret | Iretd | Iretq | Retf | Lgs) || gs_string(ins) {
        return true;
    }
    if matches!(ins.code(), Code::Jmp_m1664 | Code::Jmp_m1632 | Code::Jmp_m1616 | Code::Call_m1664 | Code::Call_m1632 | Code::Call_m1616) {
        return true;
    }
    if (0..ins.op_count()).any(|i| ins.op_kind(i) == OpKind::Register && ins.op_register(i) == Register::GS) {
        return true;
    }
    gs_operand(ins) && ins.flow_control() != FlowControl::Next
}

/// Whether `ins` has an explicit memory operand relative to the guest's `gs` (`lea` computes
/// no address in a segment).
fn gs_operand(ins: &Instruction) -> bool {
    ins.memory_segment() == Register::GS && has_mem(ins) && ins.mnemonic() != Mnemonic::Lea
}

/// Whether `ins`'s memory operand uses 32-bit addressing (an address-size prefix and 32-bit
/// registers): its address wraps at 4 GiB before a segment base is added.
fn addr32(ins: &Instruction) -> bool {
    !ins.is_ip_rel_memory_operand() && (ins.memory_base().size() == 4 || ins.memory_index().size() == 4)
}

/// `ins` with its `gs`-relative operand addressed through `r` (which will hold the guest's
/// `gs` base plus the operand's base register) and no segment; with 32-bit addressing through
/// `[r + r2]`, `r2` holding the operand's 32-bit address. None where that cannot be written (a
/// RIP-relative target out of disp32's reach).
fn gs_rewritten(ins: &Instruction, r: u8, r2: u8) -> Option<Instruction> {
    let r64 = Register::RAX + r as u32;
    let mut out = *ins;
    if addr32(ins) {
        out.set_memory_base(r64);
        out.set_memory_index(Register::RAX + r2 as u32);
        out.set_memory_index_scale(1);
        out.set_memory_displacement64(0);
        out.set_memory_displ_size(0);
        out.set_segment_prefix(Register::None);
        return Some(out);
    }
    if ins.is_ip_rel_memory_operand() {
        let target = ins.ip_rel_memory_address();
        i32::try_from(target as i64).ok()?;
        out.set_memory_displacement64(target);
        out.set_memory_displ_size(8);
    }
    out.set_memory_base(r64);
    out.set_segment_prefix(Register::None);
    let d = out.memory_displacement64() as i64;
    if i32::try_from(d).is_err() {
        return None;
    }
    out.set_memory_displ_size(if d == 0 {
        0
    } else if i8::try_from(d).is_ok() {
        1
    } else {
        8
    });
    Some(out)
}

/// `rdgsbase`/`wrgsbase`: the guest's `gs` base is the context's `gs_base` (a 32-bit
/// `wrgsbase` also zeroes its upper half, `store_gs_imm32` after it).
fn gs_base_access(ins: &Instruction) -> Option<[Instruction; 1]> {
    let r = ins.op0_register();
    let wide = r.size() == 8;
    let slot = MemoryOperand::new(Register::None, Register::None, 1, OFF_GS_BASE as i64, 4, false, Register::GS);
    let i = match ins.mnemonic() {
        Mnemonic::Rdgsbase => Instruction::with2(if wide { Code::Mov_r64_rm64 } else { Code::Mov_r32_rm32 }, r, slot),
        Mnemonic::Wrgsbase => Instruction::with2(if wide { Code::Mov_rm64_r64 } else { Code::Mov_rm32_r32 }, slot, r),
        _ => return None,
    };
    Some([i.expect("mov between a gpr and a gs slot")])
}

fn has_mem(ins: &Instruction) -> bool {
    (0..ins.op_count()).any(|i| ins.op_kind(i) == OpKind::Memory)
}

/// A 64-bit GPR outside `used` (an instruction's `used_registers`), to use as a scratch
/// register; r8..r15 first (implicit operands are all among rax..rdi).
fn free_gpr(used: u16) -> u8 {
    (8..16u8).find(|&r| used & (1 << r) == 0).expect("an instruction uses at most 4 of r8-r15")
}

fn gpr_num(r: Register) -> u8 {
    (r.full_register().number() - Register::RAX.number()) as u8
}

/// Translates the guest block at `pc` into `cache`.
pub fn translate(cache: &mut CodeCache, src: &mut dyn CodeSource, tool: &mut dyn Tool, pc: u64) -> Result<BlockId, TranslateError> {
    let lazy = !cache.eager_full;
    translate_with(cache, src, tool, pc, max_block_insns(), lazy, true)
}

/// Translates the block `b` was made for, from its guest bytes `code`, up to the finished
/// code in `b.asm`: where direct links enter (body and count), the guest end and how many
/// instructions.
fn build(
    b: &mut BlockBuilder,
    cache: &CodeCache,
    src: &mut dyn CodeSource,
    tool: &mut dyn Tool,
    code: &[u8],
    max_insns: usize,
    flags_read: &mut FxHashMap<u64, (u32, u32)>,
) -> Result<(usize, usize, u64, usize), TranslateError> {
    let pc = b.pc;
    let max_insns = max_insns.clamp(1, MAX_BLOCK_INSNS);
    // The straight-line code the block can reach, decoded once: the flags' liveness and a
    // tool's choice of versions look at it.
    let reach = b.prof.timed(Phase::Decode, || decode_reach(code, pc));
    b.prof.decoded += reach.len() as u64;
    let flags_dead = status_flags_dead(&reach, src, flags_read, &mut b.prof);
    let dead_at = |k: usize| flags_dead.get(k).copied().unwrap_or(false);
    // Indirect-branch lookups arrive here with rcx and rdx still in their save slots.
    b.asm.load_gs(reg::RCX, OFF_SAVE_RCX);
    b.asm.load_gs(reg::RDX, OFF_SAVE_RDX);
    let check_off = b.asm.pos();
    if cache.preempt {
        // Count this block against the quantum; at zero, leave before running it.
        let out = b.asm.new_label();
        let in_registers = counts_in_registers();
        if dead_at(0) {
            // Every status flag is written before it is read in the block: the count may
            // clobber them. The way out is the exit's stub, out of line: a block entered with
            // quantum left falls through into its body with no taken jump.
            if in_registers {
                b.asm.bytes(&count_registers().dec_test);
            } else {
                b.asm.sub_gs_1(OFF_QUANTUM);
            }
            b.leave_if(0x4, ExitKind::Preempt, pc, pc); // jz
        } else {
            // Flag-free: decrement, then `jrcxz` tests a copy in rcx.
            let go = b.asm.new_label();
            b.asm.store_gs(OFF_SAVE_RCX, reg::RCX);
            if in_registers {
                b.asm.bytes(&count_registers().dec_to_rcx);
            } else {
                b.asm.load_gs(reg::RCX, OFF_QUANTUM);
                b.asm.lea_rcx_minus_1();
                b.asm.store_gs(OFF_QUANTUM, reg::RCX);
            }
            b.asm.jrcxz_label(out);
            b.asm.load_gs(reg::RCX, OFF_SAVE_RCX);
            b.asm.jmp_label(go);
            b.asm.bind(out);
            b.asm.load_gs(reg::RCX, OFF_SAVE_RCX);
            b.leave(ExitKind::Preempt, pc, pc, None);
            b.asm.bind(go);
        }
    }
    // Forward direct links skip the count: every cycle in the program passes through a
    // backward (or self) direct branch, an indirect branch or the dispatcher, which all enter
    // at `check_off`, so a thread still reaches a preemption point in every loop.
    let body_off = label_body(b);
    let mut factories = InfoFactories::take(reach.len());
    let (later, infos) = b.prof.timed(Phase::Registers, || used_from(&reach, &mut factories.0));
    let two = b.prof.timed(Phase::ToolHooks, || tool.two_versions(pc, &BlockCode { insns: &reach, infos: &infos }));
    b.lazy &= two;
    let versions: &[Version] = match (two, b.lazy) {
        (false, _) => &[Version::Only],
        (true, true) => &[Version::Fast],
        (true, false) => &[Version::Fast, Version::Full],
    };
    b.prof.two_versions |= two;
    b.prof.lazy_full |= b.lazy;
    let env = BodyEnv { code, pc, reach: &reach, infos: &infos, max_insns, flags_dead: &flags_dead, later: &later, virtual_tsc: cache.virtual_tsc };
    let mut end = pc;
    let mut count = 0;
    for &v in versions {
        b.version = v;
        b.stolen = 0;
        b.slot_current = 0;
        if v == Version::Full {
            let full = b.asm.new_label();
            b.asm.bind(full);
            b.full = Some(full);
        }
        b.prof.bodies += 1;
        (end, count) = body(b, &env, tool)?;
    }
    b.emit_to_full(tool);
    b.emit_skips();
    for e in std::mem::take(&mut b.taken_with_stolen) {
        b.asm.bind(e.label);
        b.reload(e.stolen);
        b.jmp_exit(e.pc, e.target);
    }
    b.emit_stubs();
    for (l, v) in std::mem::take(&mut b.literals) {
        b.asm.literal(l, v);
    }
    b.asm.finish();
    assert!(b.asm.buf.len() <= MAX_HOST_BYTES, "block at {pc:#x} too large");
    Ok((body_off, check_off, end, count))
}

/// Translates a block of at most `max_insns` guest instructions (1 lets the runtime step
/// over an instruction that writes to its own code page), with both versions if it has two
/// (it runs once).
pub fn translate_limited(cache: &mut CodeCache, src: &mut dyn CodeSource, tool: &mut dyn Tool, pc: u64, max_insns: usize) -> Result<BlockId, TranslateError> {
    translate_with(cache, src, tool, pc, max_insns, false, false)
}

/// Translates the block at `pc` with both versions, if it has two: the replacement of a
/// lazily built one whose fast version went on in the full one (`ExitKind::FullVersion`; the
/// caller drops the old block first).
pub fn translate_full_version(cache: &mut CodeCache, src: &mut dyn CodeSource, tool: &mut dyn Tool, pc: u64) -> Result<BlockId, TranslateError> {
    translate_with(cache, src, tool, pc, max_block_insns(), false, true)
}

/// Translates a block of at most `max_insns` guest instructions; `lazy`: without the full
/// version of a block with two (see `Block::lazy_full`); `reusable`: whether it may be
/// re-used from its image if its code is fixed (see `Block::reusable`). With
/// `RTGRIND_REINSTALL` the block runs from a copy installed from its image (`Reinstall`).
fn translate_with(
    cache: &mut CodeCache,
    src: &mut dyn CodeSource,
    tool: &mut dyn Tool,
    pc: u64,
    max_insns: usize,
    lazy: bool,
    reusable: bool,
) -> Result<BlockId, TranslateError> {
    let mode = crate::image::reinstall_mode();
    let poison = mode == Reinstall::Revive && reusable;
    let id = translate_once(cache, src, tool, (pc, max_insns, lazy, reusable), poison)?;
    if mode == Reinstall::Off {
        return Ok(id);
    }
    match cache.reinstall(id, tool)? {
        Some(copy) => Ok(copy),
        // (Code that may change has no image: translated again for itself.)
        None if poison => {
            cache.blocks[id as usize].valid = false;
            translate_once(cache, src, tool, (pc, max_insns, lazy, reusable), false)
        }
        None => Ok(id),
    }
}

/// `translate_with` without the reinstall; `poison`: see `BlockBuilder::poison`.
fn translate_once(
    cache: &mut CodeCache,
    src: &mut dyn CodeSource,
    tool: &mut dyn Tool,
    (pc, max_insns, lazy, reusable): (u64, usize, bool, bool),
    poison: bool,
) -> Result<BlockId, TranslateError> {
    let mut prof = PhaseTimer::start(cache.profile, Phase::Cache);
    // The translation cache across runs: an image that holds here, or the key to store this
    // translation under and the record of the guest bytes it reads.
    let disk = if reusable && !poison { cache.install_cached(src, tool, pc, lazy) } else { None };
    let disk = match disk {
        Some(Ok(id)) => {
            prof.finish(&mut cache.profile_stats);
            return Ok(id);
        }
        Some(Err(key)) => Some((key, crate::persist::Recording::start())),
        None => None,
    };
    prof.switch(Phase::Fetch);
    let mut buf = vec![0u8; FETCH_BYTES];
    let n = src.read_code(pc, &mut buf);
    crate::persist::note_read(pc, FETCH_BYTES, n);
    if n == 0 {
        return Err(TranslateError::NotExecutable(pc));
    }
    prof.switch(Phase::Commit);
    let (arena, host) = cache.reserve(pc, MAX_HOST_BYTES)?;
    prof.switch(Phase::Build);
    // A second translation if the first found a loop back to the start with registers
    // stolen (see `BlockBuilder::pre_steal`).
    let code = &buf[..n];
    let tool_relocatable = tool.relocatable_code();
    let mut b = BlockBuilder::new(cache, host, pc, 0, lazy);
    (b.prof, b.poison, b.tool_relocatable) = (prof, poison, tool_relocatable);
    let mut flags_read = std::mem::take(&mut cache.flags_read);
    let mut built = build(&mut b, cache, src, tool, code, max_insns, &mut flags_read);
    if built.is_ok() && b.wants_pre_steal != 0 {
        let prof = b.prof;
        b = BlockBuilder::new(cache, host, pc, b.wants_pre_steal, lazy);
        (b.prof, b.poison, b.tool_relocatable) = (prof, poison, tool_relocatable);
        b.prof.rebuilt = true;
        built = build(&mut b, cache, src, tool, code, max_insns, &mut flags_read);
    }
    cache.flags_read = flags_read;
    let (body_off, check_off, end, count) = built?;

    let host_start = b.asm.base;
    let exits = b
        .exits
        .iter()
        .map(|e| {
            let at = |l: Label| label_pos(&b.asm, l) as u32;
            let (patch_site, self_entry) = (e.site.map(|s| s as u32), e.self_entry.map(at));
            ImageExit { kind: e.kind, pc: e.pc, target: e.target, patch_site, stub: at(e.stub), note: e.note.clone(), self_entry }.placed(host_start)
        })
        .collect();
    let block = Block {
        guest_start: pc,
        body: host_start + body_off as u64,
        check_entry: host_start + check_off as u64,
        guest_end: end.max(pc + 1),
        host_start,
        host_len: b.asm.buf.len() as u32,
        pc_map: b.pc_map,
        exits: Vec::new(),
        incoming: Vec::new(),
        valid: true,
        guest_insns: count as u32,
        lazy_full: b.lazy,
        full_entries: b.full_entries.iter().map(|&(at, l)| (at, host_start + label_pos(&b.asm, l) as u64)).collect(),
        relocs: cache.add_relocs(&b.relocs),
        records: cache.add_records(&b.records),
        reusable: reusable && src.fixed_code(pc, end.max(pc + 1)),
        relocatable: tool_relocatable && !b.raw,
    };
    let mut prof = b.prof;
    prof.switch(Phase::Commit);
    cache.stats.blocks_translated += 1;
    cache.stats.guest_insns_translated += count as u64;
    let id = cache.commit(arena, &b.asm.buf, block, exits);
    if let Some((key, recording)) = disk {
        prof.switch(Phase::Cache);
        let reads = recording.finish();
        cache.keep_translation(key, id, src, tool, &reads);
        prof.switch(Phase::Commit);
    }
    prof.finish(&mut cache.profile_stats);
    Ok(id)
}

/// What every version of a block is translated from.
struct BodyEnv<'a> {
    /// Guest code from the block's start.
    code: &'a [u8],
    pc: u64,
    /// The code's instructions as `decode_reach` decoded them: every version reads them
    /// from here instead of decoding again, and the tool sees them (`InsnSite::reach`).
    reach: &'a [Instruction],
    /// `reach`'s analyses (see `used_from`).
    infos: &'a [&'a InstructionInfo],
    max_insns: usize,
    flags_dead: &'a [bool],
    /// Per instruction k: the registers instructions k.. use up to the next exit (see
    /// `used_from`).
    later: &'a [u16],
    virtual_tsc: bool,
}

/// Translates the block's instructions once, as version `b.version`, from its block-start
/// hook to its last exit; returns where the block ends and its instruction count (the same
/// for every version).
fn body(b: &mut BlockBuilder, env: &BodyEnv, tool: &mut dyn Tool) -> Result<(u64, usize), TranslateError> {
    let mut t = Body {
        env,
        next: 0,
        decoded: 0,
        encoder: Encoder::new(64),
        info_factory: InstructionInfoFactory::new(),
        ins: Instruction::default(),
        rewritten: false,
        count: 0,
        folded: 0,
        end: env.pc,
        x87_ip: X87Ip::Unknown,
    };
    t.enter(b, tool);
    while b.prof.timed(Phase::Decode, || t.decode())? {
        b.prof.decoded += std::mem::take(&mut t.decoded);
        if t.translate_insn(b, tool) == Goes::Out {
            return Ok((t.end, t.count));
        }
    }
    // The block stops before an instruction it cannot hold (past its bytes, past the
    // instruction limit, or one that does not decode: translated on its own, that one
    // reports its fault precisely).
    b.restore(!0);
    b.jmp_exit(t.end, t.end);
    Ok((t.end, t.count))
}

/// Whether the block goes on after an instruction.
#[derive(PartialEq, Eq)]
enum Goes {
    On,
    Out,
}

/// The state of one translation of a block's body (`body`).
struct Body<'e, 'a> {
    env: &'e BodyEnv<'a>,
    /// Where in `env.code` the next instruction starts.
    next: usize,
    /// Instructions decoded here, not taken from `env.reach`, since the profile last looked.
    decoded: u64,
    encoder: Encoder,
    info_factory: InstructionInfoFactory,
    /// The instruction being translated, and how many so far (it included).
    ins: Instruction,
    /// Whether the tool changed `ins`'s memory operand (`Tool::rewrite`).
    rewritten: bool,
    count: usize,
    /// Conditional branches inside the block so far (see `conditional`).
    folded: usize,
    /// Where the guest code translated so far ends.
    end: u64,
    /// What the x87 last-instruction pointer holds here (see `saved_fip`).
    x87_ip: X87Ip,
}

/// What the x87 last-instruction pointer (FIP) holds at a point of a block.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum X87Ip {
    /// The cache's address of an x87 instruction before the block, or the guest's loaded
    /// with the environment after the translation's last exit: the runtime looks.
    Unknown,
    /// The cache's address of the x87 instruction at this guest pc, earlier in the block.
    At(u64),
    /// What the guest set (`fninit`, `fldenv`, `frstor`, `fxrstor`, `xrstor`): its own.
    Guests,
}

impl Body<'_, '_> {
    fn dead_at(&self, k: usize) -> bool {
        self.env.flags_dead.get(k).copied().unwrap_or(false)
    }

    fn later(&self, k: usize) -> u16 {
        self.env.later.get(k).copied().unwrap_or(0xffff)
    }

    /// The block's entry: the loop head of a pre-stealing version, the tool's block-start
    /// code, the fast version's body label.
    fn enter(&mut self, b: &mut BlockBuilder, tool: &mut dyn Tool) {
        if b.pre_steal != 0 && b.version != Version::Full {
            // The loop head (see `BlockBuilder::pre_steal`): entered from outside, the registers
            // a loop back here keeps stolen are spilled first.
            b.steal_as_at_head();
            let head = b.asm.new_label();
            b.asm.bind(head);
            b.loop_head = Some(head);
        }
        let mut at_start = b.inline(0, !self.dead_at(0), self.later(0));
        b.prof.timed(Phase::ToolHooks, || tool.block_start(self.env.pc, &mut at_start));
        emit_inline(b, at_start, Point::Start, tool);
        if b.version == Version::Fast {
            let l = b.asm.new_label();
            b.asm.bind(l);
            b.fast_body = Some((l, b.stolen | b.slot_current));
        }
    }

    /// Decodes the next instruction into `ins`: false where the block stops before it; an
    /// error if the block's first instruction cannot be translated.
    fn decode(&mut self) -> Result<bool, TranslateError> {
        let (pc, n) = (self.env.pc, self.env.code.len());
        if self.next >= n || self.count >= self.env.max_insns {
            return Ok(false);
        }
        // `decode_reach` stops at the first instruction that ends a block, which ends the
        // body too; past its end (it never is for a block within its length limit) or at an
        // invalid instruction (for the decoder's reason) decode here.
        let decoder = || Decoder::with_ip(64, &self.env.code[self.next..], pc + self.next as u64, DecoderOptions::NONE);
        match self.env.reach.get(self.count) {
            Some(ins) if !ins.is_invalid() => self.ins = *ins,
            _ => {
                self.ins = decoder().decode();
                self.decoded += 1;
            }
        }
        if self.ins.is_invalid() {
            let truncated = {
                let mut d = decoder();
                let _ = d.decode();
                d.last_error() == DecoderError::NoMoreBytes
            };
            if self.count == 0 {
                return Err(if truncated && n < FETCH_BYTES { TranslateError::NotExecutable(pc) } else { TranslateError::Invalid(pc) });
            }
            return Ok(false);
        }
        let ins = &self.ins;
        self.next += ins.len();
        Ok(ins.ip() == pc || ins.ip().wrapping_add(ins.len() as u64) <= pc + n as u64)
    }

    /// Translates `ins` with the tool's code before and after it.
    fn translate_insn(&mut self, b: &mut BlockBuilder, tool: &mut dyn Tool) -> Goes {
        self.count += 1;
        self.rewritten = b.prof.timed(Phase::ToolHooks, || tool.rewrite(&mut self.ins));
        // A `gs`-relative operand is the guest's `gs` (the real one is the engine's): the
        // instruction addresses it through a scratch register loaded with the guest's base
        // (plus the operand's base register), which the tool's code sees too.
        let mut gs_scratch = None;
        let original = self.ins;
        if gs_operand(&original) && !emulated(&original) && !unsupported(&original) {
            let info = self.info_factory.info(&original).clone();
            let used = used_registers(&original, &info);
            let r = free_gpr(used);
            let r2 = free_gpr(used | 1 << r);
            let fits = gs_rewritten(&original, r, r2).filter(|n| self.encoder.encode(n, 0).is_ok());
            let _ = self.encoder.take_buffer();
            match fits {
                Some(n) => {
                    self.ins = n;
                    self.rewritten = true;
                    gs_scratch = Some((r, addr32(&original).then_some(r2)));
                }
                None => {
                    self.count -= 1;
                    return self.leave_unsupported(b, &original);
                }
            }
        }
        let (ins, count, pc) = (self.ins, self.count, self.env.pc);
        // The block's analysis of the instruction, unless the tool or the `gs` rewrite
        // changed it.
        let env = self.env;
        let fresh;
        let info = match env.infos.get(count - 1) {
            Some(&info) if !self.rewritten => info,
            _ => {
                fresh = b.prof.timed(Phase::Registers, || self.info_factory.info(&ins).clone());
                &fresh
            }
        };
        let uses = used_registers(&ins, info);
        if b.version == Version::Full {
            // Where the fast version's code for this instruction may go on in this one.
            let l = b.asm.new_label();
            b.asm.bind(l);
            b.full_at.push((l, b.stolen | b.slot_current));
        }
        // The instruction (and the tool code around it, which computes its addresses) sees
        // its registers' guest values; those it only overwrites whole stay stolen until it ran
        // (a tool that skips it puts them back).
        let (written, whole) = written_registers(&ins, info);
        b.restore(uses & !whole);
        let code = self.env.code;
        if code[(ins.ip() - pc) as usize..].starts_with(&CLIENT_REQUEST) {
            b.restore(!0);
            b.map(&ins, Fixup::None);
            self.end = ins.ip() + CLIENT_REQUEST.len() as u64;
            b.leave(ExitKind::ClientRequest, ins.ip(), self.end, None);
            return Goes::Out;
        }
        if unsupported(&ins) {
            self.count -= 1;
            return self.leave_unsupported(b, &ins);
        }
        if emulated(&ins) {
            b.restore(!0);
            b.map(&ins, Fixup::None);
            self.end = ins.next_ip();
            b.leave(ExitKind::Emulate, ins.ip(), self.end, None);
            return Goes::Out;
        }
        if let Some((r, r2)) = gs_scratch {
            b.asm.store_gs(OFF_SCRATCH, r);
            if let Some(r2) = r2 {
                // r2 = the operand's address in 32 bits (wrapped, zero-extended), as the CPU
                // forms it before it adds the segment base.
                b.asm.store_gs(OFF_SCRATCH + 8, r2);
                let disp = original.memory_displacement32() as i64;
                let m = MemoryOperand::new(original.memory_base(), original.memory_index(), original.memory_index_scale(), disp, 4, false, Register::None);
                let lea = Instruction::with2(Code::Lea_r32_m, Register::EAX + r2 as u32, m).expect("lea r32, [32-bit address]");
                self.encoder.encode(&lea, b.asm.here()).expect("lea encodes");
                let bytes = self.encoder.take_buffer();
                b.asm.bytes(&bytes);
            }
            b.asm.load_gs(r, OFF_GS_BASE);
            if r2.is_none() && original.memory_base() != Register::None && !original.is_ip_rel_memory_operand() {
                let base = MemoryOperand::new(Register::RAX + r as u32, original.memory_base(), 1, 0, 0, false, Register::None);
                let lea = Instruction::with2(Code::Lea_r64_m, Register::RAX + r as u32, base).expect("lea r64, [r64+r64]");
                self.encoder.encode(&lea, b.asm.here()).expect("lea encodes");
                let bytes = self.encoder.take_buffer();
                b.asm.bytes(&bytes);
            }
        }
        let site = InsnSite { ins: &ins, info, reach: env.reach, rewritten: self.rewritten };
        let stolen_before = b.stolen;
        let mut before = b.inline(uses, !self.dead_at(count - 1), self.later(count)).dead_before(whole);
        b.prof.timed(Phase::ToolHooks, || tool.before_insn(&site, &mut before));
        let stack_segment = info.used_memory().iter().any(|m| matches!(m.base(), Register::RSP | Register::RBP | Register::ESP | Register::EBP));
        let control = emit_inline(b, before, Point::Before(count - 1, ins.ip(), ins.len() as u8, stack_segment), tool);
        let sequential = matches!(ins.flow_control(), FlowControl::Next | FlowControl::XbeginXabortXend);
        // (A conditional branch the block goes on past reloads them on its taken path only.)
        let conditional_branch = ins.flow_control() == FlowControl::ConditionalBranch;
        let yields = ins.mnemonic() == Mnemonic::Pause && b.pause_yields;
        if !(sequential || conditional_branch)
            || yields
            || matches!(
                ins.mnemonic(),
                Mnemonic::Syscall | Mnemonic::Cpuid | Mnemonic::Rdtsc | Mnemonic::Rdtscp | Mnemonic::Rdrand | Mnemonic::Rdseed | Mnemonic::Xgetbv
            )
        {
            // The block ends with this instruction: every register gets its guest value back.
            b.restore(!0);
        }
        self.end = ins.next_ip();
        if self.leaves_for_the_runtime(b) {
            return Goes::Out;
        }
        let raw = &code[(ins.ip() - pc) as usize..][..ins.len()];
        if let Some(trap) = trap_kind(&ins) {
            b.restore(!0);
            b.map(&ins, Fixup::None);
            b.pc_map.last_mut().expect("just mapped").trap = true;
            b.asm.bytes(if trap == Trap::Own { raw } else { &UD2 });
            b.jmp_exit(self.end, self.end);
            return Goes::Out;
        }
        match ins.flow_control() {
            FlowControl::Next | FlowControl::XbeginXabortXend => {
                if let Some((r, r2)) = gs_scratch {
                    b.map(&ins, r2.map_or(Fixup::Scratch(r), |r2| Fixup::Scratch2(r, r2)));
                    self.encoder.encode(&ins, b.asm.here()).expect("checked above");
                    let bytes = self.encoder.take_buffer();
                    b.asm.bytes(&bytes);
                    b.wrote(written, whole);
                } else if let Some(code) = gs_base_access(&ins) {
                    b.map(&ins, Fixup::None);
                    self.encoder.encode(&code[0], b.asm.here()).expect("a gs slot access encodes");
                    let bytes = self.encoder.take_buffer();
                    b.asm.bytes(&bytes);
                    if ins.mnemonic() == Mnemonic::Wrgsbase && ins.op0_register().size() == 4 {
                        b.asm.store_gs_imm32(OFF_GS_BASE + 4, 0);
                    }
                    b.wrote(written, whole);
                } else {
                    self.copy(b, raw, uses, (written, whole));
                }
                b.join_skips(stolen_before, whole);
                let mut after = b.inline(uses, !self.dead_at(count), self.later(count));
                b.prof.timed(Phase::ToolHooks, || tool.after_insn(&site, &mut after));
                emit_inline(b, after, Point::Elsewhere, tool);
                if let Some((r, r2)) = gs_scratch {
                    b.asm.load_gs(r, OFF_SCRATCH);
                    if let Some(r2) = r2 {
                        b.asm.load_gs(r2, OFF_SCRATCH + 8);
                    }
                }
                let patched = matches!(self.x87_ip, X87Ip::At(_)) && always_saves_fip(&ins);
                if saved_fip(&ins).is_some() && self.x87_ip != X87Ip::Guests && !patched {
                    b.restore(!0);
                    b.leave(ExitKind::X87Saved, ins.ip(), self.end, None);
                    return Goes::Out;
                }
                self.x87_ip = x87_ip_after(&ins, self.x87_ip);
                Goes::On
            }
            FlowControl::Interrupt | FlowControl::Exception => unreachable!("a trap (`trap_kind`)"),
            FlowControl::UnconditionalBranch => {
                b.map(&ins, Fixup::None);
                b.jmp_exit(ins.ip(), ins.near_branch_target());
                Goes::Out
            }
            FlowControl::ConditionalBranch => self.branch(b, tool, raw, control),
            FlowControl::Call => {
                b.map(&ins, Fixup::None);
                // One 8-byte store (a push of a literal), so the `ret` that loads it back
                // gets store-to-load forwarding.
                let lit = b.asm.new_label();
                b.literals.push((lit, self.end));
                b.asm.push_rip_label(lit);
                b.jmp_exit(ins.ip(), ins.near_branch_target());
                Goes::Out
            }
            FlowControl::IndirectBranch | FlowControl::IndirectCall | FlowControl::Return => {
                indirect(b, &mut self.encoder, &ins);
                Goes::Out
            }
        }
    }

    /// The block ends before `ins`, which the engine cannot run: reaching it stops the run
    /// with "unsupported instruction" (exit 125).
    fn leave_unsupported(&mut self, b: &mut BlockBuilder, ins: &Instruction) -> Goes {
        self.count += 1;
        b.restore(!0);
        b.map(ins, Fixup::None);
        b.leave(ExitKind::Unsupported, ins.ip(), ins.ip(), Some(format_insn(ins)));
        self.end = ins.next_ip();
        Goes::Out
    }

    /// A `syscall`, `int 0x80`, `cpuid`, `xgetbv`, (repeatable runs) `rdtsc`, `rdrand` or
    /// `rdseed`, or (several threads) `pause`: the block leaves for the runtime.
    fn leaves_for_the_runtime(&mut self, b: &mut BlockBuilder) -> bool {
        let ins = self.ins;
        let (kind, note) = match ins.mnemonic() {
            Mnemonic::Syscall => (ExitKind::Syscall, None),
            Mnemonic::Pause if b.pause_yields => (ExitKind::Yield, None),
            Mnemonic::Cpuid => (ExitKind::Cpuid, None),
            Mnemonic::Int if ins.immediate8() == 0x80 => (ExitKind::Int80, None),
            Mnemonic::Xgetbv => (ExitKind::Xgetbv, None),
            Mnemonic::Rdtsc | Mnemonic::Rdtscp if self.env.virtual_tsc => (ExitKind::Rdtsc, (ins.mnemonic() == Mnemonic::Rdtscp).then(|| "rdtscp".to_string())),
            Mnemonic::Rdrand | Mnemonic::Rdseed if self.env.virtual_tsc => {
                let r = ins.op0_register();
                (ExitKind::Random { reg: gpr_num(r), bits: (r.size() * 8) as u8 }, None)
            }
            _ => return false,
        };
        b.map(&ins, Fixup::None);
        b.leave(kind, ins.ip(), self.end, note);
        true
    }

    /// A sequential instruction, copied.
    fn copy(&mut self, b: &mut BlockBuilder, raw: &[u8], uses: u16, (written, whole): (u16, u16)) {
        // The guest's `xrstor` (ld.so's lazy-binding trampoline saves and restores every
        // component XCR0 enables, AVX-512's too) would put back an old block count in xmm16
        // and tool counter in xmm18: they step around it.
        let restores = counts_in_registers() && matches!(self.ins.mnemonic(), Mnemonic::Xrstor | Mnemonic::Xrstor64);
        if restores {
            b.asm.bytes(&count_registers().store);
        }
        copy_insn(b, &mut self.encoder, &self.ins, (raw, self.rewritten), uses);
        if let (Some((offset, wide)), X87Ip::At(guest), true) = (saved_fip(&self.ins), self.x87_ip, always_saves_fip(&self.ins)) {
            // The CPU saved the cache's address of the block's last x87 instruction: the
            // guest's goes over it.
            let halves = if wide { &[(0, guest as u32), (4, (guest >> 32) as u32)][..] } else { &[(0, guest as u32)] };
            for &(at, half) in halves {
                let mov = store_imm32(&self.ins, offset + at, half);
                copy_insn(b, &mut self.encoder, &mov, (&[], true), uses);
            }
        }
        b.wrote(written, whole);
        if restores {
            b.asm.bytes(&count_registers().load);
        }
    }

    /// A conditional branch: the block goes on past it with the fall-through path (see
    /// `conditional`), or ends.
    fn branch(&mut self, b: &mut BlockBuilder, tool: &mut dyn Tool, raw: &[u8], control: Control) -> Goes {
        let (ins, count) = (self.ins, self.count);
        b.map(&ins, Fixup::None);
        let go_on = self.folded < max_folded() && count < self.env.max_insns && self.next < self.env.code.len();
        let self_loop = b.closes_self_loop(&ins, control.outcome);
        if self_loop && b.pre_steal == 0 {
            b.wants_pre_steal |= b.stolen;
        }
        // Only a plain `jcc` the block goes on past keeps registers stolen (see
        // `conditional`), and one back to a loop head; every other way out reloads them first.
        if self_loop && b.pre_steal != 0 {
            b.steal_as_at_head();
        } else if !go_on || control.outcome.is_some() || ins.condition_code() == ConditionCode::None || counts_rcx(&ins) {
            b.restore(!0);
        }
        if !conditional(b, &ins, raw, control.outcome, go_on) {
            return Goes::Out;
        }
        self.folded += 1;
        let mut fall = b.inline(0, !self.dead_at(count), self.later(count));
        b.prof.timed(Phase::ToolHooks, || tool.fall_through(self.end, &mut fall));
        emit_inline(b, fall, Point::Elsewhere, tool);
        Goes::On
    }
}

/// What a tool asked the engine to do to the guest instruction itself.
#[derive(Default, Clone, Copy)]
struct Control {
    outcome: Option<usize>,
}

/// Emits a tool's inline code wrapped in the spills of the registers it borrowed and, if it
/// clobbers live status flags, a save and restore of the flags (`lahf`/`seto`, `add`/`sahf`).
/// `at` is where, for a jump to the full version; `tool`'s, the code (for its records).
fn emit_inline(b: &mut BlockBuilder, code: Inline, at: Point, tool: &mut dyn Tool) -> Control {
    if code.is_empty() {
        return Control::default();
    }
    let Finished { mut lent, dead, save_flags, mut asm, outcome, to_full, skips, holes, movable, relocated, raw } = code.finish();
    b.raw |= raw;
    // (A plain call-out keeps a relocatable tool's block from having an image, `Block::relocatable`:
    // the layout's heap hooks hold their arguments as they are; such a block is translated again
    // in each run.)
    let control = Control { outcome };
    // A register the code names that would need a spill now (and a reload at every exit after)
    // becomes one spilled already (reloaded before the guest needs it anyway).
    let (needy, spare) = (movable & !b.stolen & !b.slot_current, holes & b.stolen);
    let mut map = [0u8; 16];
    let renamed = needy != 0 && spare != 0;
    if renamed {
        for (n, m) in map.iter_mut().enumerate() {
            *m = n as u8;
        }
        let (mut needy, mut spare) = (needy, spare);
        while needy != 0 && spare != 0 {
            let (from, to) = (15 - needy.leading_zeros() as u8, spare.trailing_zeros() as u8);
            map[from as usize] = to;
            lent = lent & !(1 << from) | 1 << to;
            needy &= !(1 << from);
            spare &= !(1 << to);
        }
    }
    if save_flags {
        // rax goes back to its guest value at once: tool code may read guest registers.
        b.asm.store_gs(OFF_FLAGS_RAX, reg::RAX);
        b.asm.save_flags_ax(OFF_FLAGS_SAVE);
        b.asm.load_gs(reg::RAX, OFF_FLAGS_RAX);
    }
    // Spill only what is not spilled already, and not into a slot that holds the value, nor
    // what the instruction overwrites unread (`dead`: stolen until it ran, never reloaded);
    // reloads wait (see `BlockBuilder::stolen`).
    for r in 0..16u8 {
        if lent & !dead & !b.stolen & !b.slot_current & (1 << r) != 0 {
            b.asm.store_gs(spill_slot(r as usize), r);
        }
    }
    b.stolen |= lent;
    b.slot_current = (b.slot_current | lent) & !dead;
    if let Point::Before(_, guest_pc, guest_len, stack_segment) = at {
        // A fault in the tool's code (its shadow access for a non-canonical guest address)
        // is the instruction's own: the guest's would fault the same way.
        let fixup = if save_flags { Fixup::FlagsSaved } else { Fixup::None };
        b.pc_map.push(PcEntry {
            host_off: b.asm.pos() as u32,
            guest_pc,
            guest_len,
            fixup,
            stolen: b.stolen,
            tool_stack_segment: Some(stack_segment),
            trap: false,
        });
    }
    let start = b.asm.pos();
    let here = b.asm.here();
    let buffers = (std::mem::take(&mut b.tool_bytes), std::mem::take(&mut b.tool_offsets));
    let map = renamed.then_some(&map);
    let (mut bytes, offsets) = b.prof.timed(Phase::Encode, || assemble_at(&mut asm, here, buffers.0, buffers.1, map));
    let imms = match relocated {
        Some(r) => {
            relocate_tool_values(b, tool, (start, &mut bytes, &offsets), r.records, &r.imms);
            r.imms
        }
        None => Vec::new(),
    };
    if b.poison {
        check_unrelocated(b, &asm, &imms);
    }
    crate::instrument::recycle(asm);
    b.asm.bytes(&bytes);
    for &(index, rel) in &to_full {
        assert!(at != Point::Elsewhere, "the other version is entered at a block start or before an instruction");
        let to_fast = b.version == Version::Full;
        assert!(!to_fast || at == Point::Start, "the fast version is entered after its start only");
        // The placeholder's rel32 points at the way out, out of line.
        let label = b.asm.new_label();
        let offset = offsets[index] as usize;
        b.asm.fixup_rel32(start + offset + rel, label);
        b.to_full.push(ToFull { label, restore_flags: save_flags, spilled: b.stolen, at, to_fast });
    }
    for &index in &skips {
        assert!(matches!(at, Point::Before(..)), "only code before an instruction skips it");
        let label = b.asm.new_label();
        b.asm.fixup_rel32(start + offsets[index] as usize + 1, label);
        b.pending_skips.push((label, save_flags));
    }
    (b.tool_bytes, b.tool_offsets) = (bytes, offsets);
    if save_flags {
        b.asm.restore_flags_ax(OFF_FLAGS_SAVE);
        b.asm.load_gs(reg::RAX, OFF_FLAGS_RAX);
    }
    control
}

/// What a tool's relocated fields hold where `RTGRIND_REINSTALL=revive` runs a block only from
/// a copy installed from its image: a non-canonical address, so code that uses one (a record
/// or a constant without its relocation) faults, and so does an id added to a table's address.
const POISON: u64 = 0xdead_0000_0000_0000;

/// Fills the tool's relocated immediates of the code just assembled (`code`: at `start` in
/// the block, each instruction's offset) with their values in this run, the point's records
/// made by the tool first (`Tool::revive`), and records the relocations (`Reloc::Record`,
/// `Constant`, `Id`). With `poison`, no record is made and every field is `POISON`.
fn relocate_tool_values(
    b: &mut BlockBuilder,
    tool: &mut dyn Tool,
    (start, code, offsets): (usize, &mut [u8], &[u32]),
    records: Vec<ToolRecord>,
    imms: &[(usize, ToolImm)],
) {
    let first = b.records.len() as u32;
    let revived: Vec<u64> = match b.poison {
        true => vec![POISON; records.len()],
        false => records.iter().map(|r| tool.revive(r.kind, &r.bytes).unwrap_or_else(|| panic!("a tool revives the records it makes: {r:?}"))).collect(),
    };
    b.records.extend(records);
    for &(index, imm) in imms {
        // (`mov r64, imm64`: REX.W, B8+r, the imm64.)
        let field = offsets[index] as usize + 2;
        debug_assert!(code[field - 2] & 0xf8 == 0x48 && code[field - 1] & 0xf8 == 0xb8, "a relocated mov r64, imm64");
        let at = (start + field) as u32;
        let (reloc, value) = match imm {
            ToolImm::Record(r, offset) => (Reloc::Record { at, record: first + r, offset }, revived[r as usize] + offset as u64),
            ToolImm::Constant { k, value } => (Reloc::Constant { at, k }, value),
            ToolImm::Id { kind, pc, value } => (Reloc::Id { at, kind, pc }, value),
        };
        b.relocs.push(reloc);
        let value = if b.poison { POISON } else { value };
        code[field..field + 8].copy_from_slice(&value.to_le_bytes());
    }
}

/// `RTGRIND_REINSTALL=revive`: a tool that says its code is relocatable holds no constant of
/// its own without a relocation (no record can be held: none is made for the translation).
/// The constants are the ones its relocated fields were given so far.
fn check_unrelocated(b: &mut BlockBuilder, asm: &iced_x86::code_asm::CodeAssembler, imms: &[(usize, ToolImm)]) {
    thread_local! {
        static CONSTANTS: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    CONSTANTS.with(|c| {
        let mut c = c.borrow_mut();
        for (_, imm) in imms {
            // (Pointers: a small value may be any immediate's.)
            if let ToolImm::Constant { value, .. } = *imm {
                if value >> 32 != 0 && !c.contains(&value) {
                    c.push(value);
                }
            }
        }
        for (k, i) in asm.instructions().iter().enumerate() {
            let imm = (0..i.op_count()).any(|n| matches!(i.op_kind(n), OpKind::Immediate64 | OpKind::Immediate32to64) && c.contains(&i.immediate(n)));
            let disp = i.op_kinds().any(|k| k == OpKind::Memory) && i.memory_base() == Register::None && c.contains(&i.memory_displacement64());
            assert!(
                !b.tool_relocatable || imms.iter().any(|m| m.0 == k) || !(imm || disp),
                "block at {:#x}: the tool's code holds one of its constants without a relocation: {}",
                b.pc,
                format_insn(i)
            );
        }
    });
}

/// A tool's code assembled at `ip`, with each instruction's offset, encoded instruction by
/// instruction: iced's block encoder, which also resolves labels, costs allocations per
/// instruction and was most of translation time. Jumps to labels (the tool's short forward
/// skips) take their near form (`jrcxz` its only, rel8) and are patched once the labels'
/// offsets are known; anything else that names a label (RIP-relative constants) goes to the
/// block encoder.
/// (`code` and `offsets` are emptied and filled: buffers a block's points reuse.) With `map`,
/// the registers are renamed as they are encoded (`instrument::rename_registers`).
fn assemble_at(asm: &mut iced_x86::code_asm::CodeAssembler, ip: u64, mut code: Vec<u8>, mut offsets: Vec<u32>, map: Option<&[u8; 16]>) -> (Vec<u8>, Vec<u32>) {
    let label_branch = |i: &Instruction| (0..i.op_count()).any(|k| matches!(i.op_kind(k), OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64));
    // (Made for the first instruction no template has: most code needs none.)
    let mut encoder: Option<Encoder> = None;
    code.clear();
    offsets.clear();
    // (label id, offset), and (offset of the rel field, its size, label id).
    let mut labels: Vec<(u64, u32)> = Vec::new();
    let mut fixups: Vec<(u32, u8, u64)> = Vec::new();
    let mut at = ip;
    let mut copy;
    for i in asm.instructions() {
        let i = match map {
            Some(map) => {
                copy = *i;
                crate::instrument::rename_registers(&mut copy, map);
                &copy
            }
            None => i,
        };
        let off = (at - ip) as u32;
        offsets.push(off);
        if i.ip() != 0 {
            labels.push((i.ip(), off));
        }
        // (A RIP-relative operand in tool code names a label: a call-out's return address,
        // `lea r64, [label]`, here; a constant placed after the code goes to the block encoder.)
        if i.is_ip_rel_memory_operand() {
            if i.code() != iced_x86::Code::Lea_r64_m {
                return assemble_with_labels(asm, ip, map);
            }
            let r = i.op0_register().number() as u8;
            code.extend_from_slice(&[0x48 | (r >> 3) << 2, 0x8d, (r & 7) << 3 | 5, 0, 0, 0, 0]);
            at = ip + code.len() as u64;
            fixups.push(((at - ip) as u32 - 4, 4, i.memory_displacement64()));
            continue;
        }
        // (A template first: no template takes a branch, and most tool code is templates.)
        if crate::templates::encode(i, &mut code) {
            at = ip + code.len() as u64;
            continue;
        }
        if !label_branch(i) {
            let encoder = encoder.get_or_insert_with(|| Encoder::new(64));
            encoder.set_buffer(std::mem::take(&mut code));
            encoder.encode(i, at).expect("tool code encodes");
            code = encoder.take_buffer();
            at = ip + code.len() as u64;
            continue;
        }
        let target = i.near_branch_target();
        let bytes: &[u8] = match i.mnemonic() {
            Mnemonic::Jmp => &[0xe9, 0, 0, 0, 0],
            Mnemonic::Jrcxz => &[0xe3, 0],
            // (iced's `ConditionCode` lists o, no, b, ... g after `None`: the encoding's order.)
            _ if i.is_jcc_short_or_near() => &[0x0f, 0x80 | (i.condition_code() as u8 - 1), 0, 0, 0, 0],
            _ => return assemble_with_labels(asm, ip, map),
        };
        code.extend_from_slice(bytes);
        at += bytes.len() as u64;
        let size = if bytes.len() == 2 { 1 } else { 4 };
        fixups.push(((at - ip) as u32 - size as u32, size, target));
    }
    for (pos, size, label) in fixups {
        let Some(&(_, to)) = labels.iter().find(|l| l.0 == label) else { return assemble_with_labels(asm, ip, map) };
        let rel = to as i64 - (pos as i64 + size as i64);
        if size == 1 {
            let Ok(r) = i8::try_from(rel) else { return assemble_with_labels(asm, ip, map) };
            code[pos as usize] = r as u8;
        } else {
            code[pos as usize..pos as usize + 4].copy_from_slice(&(rel as i32).to_le_bytes());
        }
    }
    (code, offsets)
}

/// `assemble_at` through iced's block encoder, for code its own pass does not handle.
fn assemble_with_labels(asm: &mut iced_x86::code_asm::CodeAssembler, ip: u64, map: Option<&[u8; 16]>) -> (Vec<u8>, Vec<u32>) {
    if let Some(map) = map {
        let mut code = asm.take_instructions();
        code.iter_mut().for_each(|i| crate::instrument::rename_registers(i, map));
        // (Each instruction keeps its label: its ip.)
        code.into_iter().for_each(|i| asm.add_instruction(i).expect("a renamed instruction"));
    }
    let result = asm.assemble_options(ip, BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS).expect("tool code assembles");
    (result.inner.code_buffer, result.inner.new_instruction_offsets)
}

/// `rcx = gs:[off]` with the guest's rcx saved, then a flag-free `jrcxz` to `zero`; both paths
/// must reload rcx with `restore_rcx`.
fn test_slot(b: &mut BlockBuilder, off: usize, zero: Label) {
    b.asm.store_gs(OFF_SAVE_RCX, reg::RCX);
    b.asm.load_gs(reg::RCX, off);
    b.asm.jrcxz_label(zero);
}

fn restore_rcx(b: &mut BlockBuilder) {
    b.asm.load_gs(reg::RCX, OFF_SAVE_RCX);
}

/// The general registers an instruction writes (bit = number), and among them those it
/// writes whole (64 or 32 bits, zero-extending) without reading them. The second set only for
/// instructions known to write their destination always (`rdssp`, `bsf`, `bsr` may leave it
/// as it was).
fn written_registers(ins: &Instruction, info: &iced_x86::InstructionInfo) -> (u16, u16) {
    use iced_x86::OpAccess;
    use Mnemonic::*;
    let always = matches!(
        ins.mnemonic(),
        Mov | Movzx
            | Movsx
            | Movsxd
            | Lea
            | Pop
            | Movd
            | Movq
            | Vmovd
            | Vmovq
            | Imul
            | Pext
            | Pdep
            | Shlx
            | Shrx
            | Sarx
            | Rorx
            | Andn
            | Popcnt
            | Lzcnt
            | Tzcnt
            | Pmovmskb
            | Vpmovmskb
            | Movmskps
            | Movmskpd
            | Vmovmskps
            | Vmovmskpd
            | Cvttsd2si
            | Cvttss2si
            | Cvtsd2si
            | Cvtss2si
            | Vcvttsd2si
            | Vcvttss2si
            | Vcvtsd2si
            | Vcvtss2si
            | Pextrb
            | Pextrw
            | Pextrd
            | Pextrq
            | Vpextrb
            | Vpextrw
            | Vpextrd
            | Vpextrq
    );
    let (mut written, mut read, mut whole) = (0u16, 0u16, 0u16);
    for u in info.used_registers() {
        let r = u.register();
        if !r.is_gpr() {
            continue;
        }
        let bit = 1u16 << (r.full_register().number() - Register::RAX.number());
        match u.access() {
            OpAccess::Write if always && matches!(r.size(), 4 | 8) => {
                written |= bit;
                whole |= bit;
            }
            OpAccess::Write | OpAccess::CondWrite => written |= bit,
            OpAccess::ReadWrite | OpAccess::ReadCondWrite => {
                written |= bit;
                read |= bit;
            }
            _ => read |= bit,
        }
    }
    (written, whole & !read)
}

/// Binds and returns the body offset: where forward direct links enter.
fn label_body(b: &mut BlockBuilder) -> usize {
    let l = b.asm.new_label();
    b.asm.bind(l);
    b.asm.label_pos(l)
}

fn label_pos(asm: &Asm, l: Label) -> usize {
    asm.label_pos(l)
}

/// Copies an instruction whose control flow is sequential (encoded anew if the tool rewrote it).
fn copy_insn(b: &mut BlockBuilder, encoder: &mut Encoder, ins: &Instruction, (raw, rewritten): (&[u8], bool), uses: u16) {
    if rewritten && !ins.is_ip_rel_memory_operand() {
        let mut ins = *ins;
        let d = ins.memory_displacement64() as i64;
        if matches!(ins.memory_displ_size(), 0 | 1) && i8::try_from(d).is_err() {
            ins.set_memory_displ_size(8);
        } else if ins.memory_displ_size() == 0 && d != 0 {
            ins.set_memory_displ_size(1);
        }
        let here = b.asm.here();
        b.prof.timed(Phase::Encode, || encoder.encode(&ins, here)).expect("a rewritten displacement encodes");
        b.map(&ins, Fixup::None);
        let bytes = encoder.take_buffer();
        b.asm.bytes(&bytes);
        return;
    }
    if !ins.is_ip_rel_memory_operand() {
        b.map(ins, Fixup::None);
        b.asm.bytes(raw);
        return;
    }
    let target = ins.ip_rel_memory_address();
    if ins.mnemonic() == Mnemonic::Lea && ins.op0_register().is_gpr64() {
        // `lea r, [rip+d]` only computes a constant.
        b.map(ins, Fixup::None);
        b.asm.mov_imm64(gpr_num(ins.op0_register()), target);
        return;
    }
    let here = b.asm.here();
    if b.prof.timed(Phase::Encode, || encoder.encode(ins, here)).is_ok() {
        b.map(ins, Fixup::None);
        let bytes = encoder.take_buffer();
        // The rel32 from here to the target (a RIP-relative operand has one displacement).
        let offsets = encoder.get_constant_offsets();
        debug_assert_eq!(offsets.displacement_size(), 4);
        let (at, to_end) = (b.asm.pos() + offsets.displacement_offset(), bytes.len() - offsets.displacement_offset());
        b.relocs.push(Reloc::RipRel { at: at as u32, to_end: to_end as u8, eip: ins.memory_base() == Register::EIP, target });
        b.asm.bytes(&bytes);
        return;
    }
    // Out of rel32 range from the cache: address through a scratch register instead.
    let _ = encoder.take_buffer();
    let r = free_gpr(uses);
    b.map(ins, Fixup::None);
    b.asm.store_gs(OFF_SCRATCH, r);
    b.asm.mov_imm64(r, target);
    let mut rewritten = *ins;
    let r64 = Register::RAX + r as u32;
    rewritten.set_memory_base(r64);
    rewritten.set_memory_index(Register::None);
    rewritten.set_memory_index_scale(1);
    rewritten.set_memory_displacement64(0);
    rewritten.set_memory_displ_size(0);
    b.map(ins, Fixup::Scratch(r));
    encoder.encode(&rewritten, b.asm.here()).expect("register-based operand always encodes");
    let bytes = encoder.take_buffer();
    b.asm.bytes(&bytes);
    b.asm.load_gs(r, OFF_SCRATCH);
}

/// `loop`, `loopcc`, `jrcxz`/`jecxz`: branches on rcx, with rel8 forms only.
fn counts_rcx(ins: &Instruction) -> bool {
    matches!(ins.mnemonic(), Mnemonic::Loop | Mnemonic::Loope | Mnemonic::Loopne | Mnemonic::Jrcxz | Mnemonic::Jecxz)
}

/// jcc, loop, loopcc, jrcxz/jecxz. With `go_on`, a `jcc` leaves the block only when taken and
/// the block goes on with the fall-through path (returns true): a not-taken branch costs what
/// it costs natively, where a block ending at it would take a jump to the next block.
fn conditional(b: &mut BlockBuilder, ins: &Instruction, raw: &[u8], outcome: Option<usize>, go_on: bool) -> bool {
    let (taken, fall) = (ins.near_branch_target(), ins.next_ip());
    let cc = ins.condition_code();
    let counted = counts_rcx(ins);
    let go_on = go_on && cc != ConditionCode::None && !counted;
    let fall_label = b.asm.new_label();
    if let (Some(slot), false, false) = (outcome, counted, cc == ConditionCode::None) {
        // A tool decides: 0 the branch's own outcome, 1 taken, 2 not taken (flag-free tests).
        let (own, force_taken) = (b.asm.new_label(), b.asm.new_label());
        test_slot(b, slot, own);
        b.asm.lea_rcx_minus_1();
        b.asm.jrcxz_label(force_taken);
        restore_rcx(b);
        if go_on {
            b.asm.jmp_label(fall_label);
        } else {
            b.jmp_exit(ins.ip(), fall);
        }
        b.asm.bind(force_taken);
        restore_rcx(b);
        b.jmp_exit(ins.ip(), taken);
        b.asm.bind(own);
        restore_rcx(b);
    }
    if b.closes_self_loop(ins, outcome) && b.pre_steal != 0 {
        b.self_loop_exit(cc as u8 - 1, ins.ip());
        if go_on {
            b.asm.bind(fall_label);
            return true;
        }
        b.restore(!0);
        b.jmp_exit(ins.ip(), fall);
        return false;
    }
    if cc != ConditionCode::None && !counted {
        if go_on && b.stolen != 0 {
            // Tool values in stolen registers live on past the branch; its taken path gets
            // the guest values back out of line.
            let label = b.asm.new_label();
            b.asm.jcc_label(cc as u8 - 1, label);
            b.taken_with_stolen.push(TakenExit { label, stolen: b.stolen, pc: ins.ip(), target: taken });
        } else {
            b.jcc_exit(cc as u8 - 1, ins.ip(), taken);
        }
        if go_on {
            b.asm.bind(fall_label);
            return true;
        }
        b.jmp_exit(ins.ip(), fall);
        return false;
    }
    // loop/jrcxz only have rel8 forms: `op L; jmp fall; L: jmp taken`.
    let l = b.asm.new_label();
    b.asm.bytes(&raw[..raw.len() - 1]);
    b.asm.rel8_label(l);
    b.jmp_exit(ins.ip(), fall);
    b.asm.bind(l);
    b.jmp_exit(ins.ip(), taken);
    false
}

/// ret, jmp/call through a register or memory: compute the guest target in rdx and look it
/// up in the thread's inline table (`ibl_keys[t & mask] == -t` on a hit). Table values are
/// the targets' block starts, whose prefix reloads rcx and rdx.
fn indirect(b: &mut BlockBuilder, encoder: &mut Encoder, ins: &Instruction) {
    b.map(ins, Fixup::None);
    b.asm.store_gs(OFF_SAVE_RCX, reg::RCX);
    b.asm.store_gs(OFF_SAVE_RDX, reg::RDX);
    b.map(ins, Fixup::IblSaved);
    match ins.flow_control() {
        FlowControl::Return => {
            b.asm.pop(reg::RDX);
            if ins.op_count() == 1 && ins.op0_kind() == OpKind::Immediate16 {
                b.asm.lea_rsp(ins.immediate16() as i32);
            }
        }
        _ => {
            if ins.op0_kind() == OpKind::Register {
                b.asm.mov_rr(reg::RDX, gpr_num(ins.op0_register()));
            } else if ins.is_ip_rel_memory_operand() {
                b.asm.mov_imm64(reg::RDX, ins.ip_rel_memory_address());
                b.asm.load_ind(reg::RDX, reg::RDX);
            } else {
                let mem = MemoryOperand::new(
                    ins.memory_base(),
                    ins.memory_index(),
                    ins.memory_index_scale(),
                    ins.memory_displacement64() as i64,
                    ins.memory_displ_size(),
                    false,
                    ins.segment_prefix(),
                );
                let load = Instruction::with2(Code::Mov_r64_rm64, Register::RDX, mem).expect("valid mov");
                encoder.encode(&load, b.asm.here()).expect("mov rdx, mem encodes");
                let bytes = encoder.take_buffer();
                b.asm.bytes(&bytes);
            }
            if ins.flow_control() == FlowControl::IndirectCall {
                let lit = b.asm.new_label();
                b.literals.push((lit, ins.next_ip()));
                b.asm.push_rip_label(lit);
            }
        }
    }
    let hit = b.asm.new_label();
    b.asm.ibl_hash_rdx_to_ecx();
    b.asm.load_gs_rcx_index(OFF_IBL_KEYS);
    b.asm.lea_rcx_rcx_rdx();
    b.asm.jrcxz_label(hit);
    b.asm.jmp_gs(OFF_IBL_MISS);
    // A hit jumps to the target's lookup prefix, which restores rcx and rdx.
    b.asm.bind(hit);
    b.asm.ibl_hash_rdx_to_ecx();
    b.asm.jmp_gs_rcx_index(OFF_IBL_VALS);
}

/// The quantum in xmm16 and the tool's counter in xmm18 (see
/// `ThreadContext::counts_in_registers`), encoded once.
struct CountRegisters {
    /// `vpaddq xmm16, xmm16, xmm17; vptestmq k1, xmm16, xmm16; kortestw k1, k1`: ZF set at zero.
    dec_test: Vec<u8>,
    /// `vpaddq xmm16, xmm16, xmm17; vmovq rcx, xmm16`: flags untouched.
    dec_to_rcx: Vec<u8>,
    /// `vmovq gs:[quantum], xmm16; vmovq gs:[counter], xmm18`.
    store: Vec<u8>,
    /// `vmovq xmm16, gs:[quantum]`, xmm17 = (-1, 0) and `vmovq xmm18, gs:[counter]`, as
    /// `rtg_enter` does.
    load: Vec<u8>,
}

fn count_registers() -> &'static CountRegisters {
    static SEQ: std::sync::OnceLock<CountRegisters> = std::sync::OnceLock::new();
    SEQ.get_or_init(|| {
        let encode = |list: &[Instruction]| -> Vec<u8> {
            let mut e = Encoder::new(64);
            for i in list {
                e.encode(i, 0).expect("AVX-512 count instruction encodes");
            }
            e.take_buffer()
        };
        let dec = Instruction::with3(Code::EVEX_Vpaddq_xmm_k1z_xmm_xmmm128b64, Register::XMM16, Register::XMM16, Register::XMM17).expect("vpaddq");
        let test = Instruction::with3(Code::EVEX_Vptestmq_kr_k1_xmm_xmmm128b64, Register::K1, Register::XMM16, Register::XMM16).expect("vptestmq");
        let kor = Instruction::with2(Code::VEX_Kortestw_kr_kr, Register::K1, Register::K1).expect("kortestw");
        let to_rcx = Instruction::with2(Code::EVEX_Vmovq_rm64_xmm, Register::RCX, Register::XMM16).expect("vmovq");
        let slot = |off: usize| MemoryOperand::new(Register::None, Register::None, 1, off as i64, 4, false, Register::GS);
        let store = Instruction::with2(Code::EVEX_Vmovq_xmmm64_xmm, slot(OFF_QUANTUM), Register::XMM16).expect("vmovq store");
        let load = Instruction::with2(Code::EVEX_Vmovq_xmm_xmmm64, Register::XMM16, slot(OFF_QUANTUM)).expect("vmovq load");
        let store_counter = Instruction::with2(Code::EVEX_Vmovq_xmmm64_xmm, slot(OFF_COUNTER), Register::XMM18).expect("vmovq store");
        let load_counter = Instruction::with2(Code::EVEX_Vmovq_xmm_xmmm64, Register::XMM18, slot(OFF_COUNTER)).expect("vmovq load");
        let ones =
            Instruction::with4(Code::EVEX_Vpternlogq_xmm_k1z_xmm_xmmm128b64_imm8, Register::XMM17, Register::XMM17, Register::XMM17, 0xff).expect("vpternlogq");
        let low = Instruction::with3(Code::EVEX_Vpsrldq_xmm_xmmm128_imm8, Register::XMM17, Register::XMM17, 8).expect("vpsrldq");
        CountRegisters {
            dec_test: encode(&[dec, test, kor]),
            dec_to_rcx: encode(&[dec, to_rcx]),
            store: encode(&[store, store_counter]),
            load: encode(&[load, ones, low, load_counter]),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Guest code at fixed addresses.
    struct Code(Vec<(u64, Vec<u8>)>);
    impl CodeSource for Code {
        fn read_code(&mut self, addr: u64, buf: &mut [u8]) -> usize {
            let Some((at, bytes)) = self.0.iter().find(|(at, b)| (*at..*at + b.len() as u64).contains(&addr)) else { return 0 };
            let from = &bytes[(addr - at) as usize..];
            let n = from.len().min(buf.len());
            buf[..n].copy_from_slice(&from[..n]);
            n
        }
    }

    #[test]
    fn tool_code_jumps_to_its_labels() {
        use iced_x86::code_asm::*;
        let mut a = CodeAssembler::new(64).unwrap();
        let (mut skip, mut end) = (a.create_label(), a.create_label());
        a.jrcxz(skip).unwrap();
        a.je(end).unwrap();
        a.mov(rax, qword_ptr(rbx + 8)).unwrap();
        a.set_label(&mut skip).unwrap();
        a.jmp(end).unwrap();
        a.db(&[0x0f, 0x85, 0, 0, 0, 0]).unwrap();
        a.set_label(&mut end).unwrap();
        a.zero_bytes().unwrap();
        // A call-out's return address (`lea r, [label]`), before and after its label.
        let mut back = a.create_label();
        a.lea(r13, qword_ptr(back)).unwrap();
        a.lea(rcx, qword_ptr(end)).unwrap();
        a.set_label(&mut back).unwrap();
        a.zero_bytes().unwrap();
        let ip = 0x7000_1000;
        let (code, offsets) = assemble_at(&mut a, ip, Vec::new(), Vec::new(), None);
        // The `lea`s as iced's block encoder makes them (its jumps before them are shorter).
        let (theirs, _) = assemble_with_labels(&mut a, ip, None);
        assert_eq!(code[code.len() - 14..], theirs[theirs.len() - 14..]);
        let insns: Vec<Instruction> = Decoder::with_ip(64, &code, ip, DecoderOptions::NONE).into_iter().collect();
        let at = |k: usize| ip + offsets[k] as u64;
        assert_eq!(insns[0].mnemonic(), Mnemonic::Jrcxz);
        assert_eq!(insns[0].near_branch_target(), at(3));
        assert_eq!((insns[1].mnemonic(), insns[1].near_branch_target()), (Mnemonic::Je, at(5)));
        assert_eq!(insns[2].mnemonic(), Mnemonic::Mov);
        assert_eq!((insns[3].mnemonic(), insns[3].near_branch_target()), (Mnemonic::Jmp, at(5)));
        // The placeholder's bytes are kept where its offset says.
        assert_eq!(&code[offsets[4] as usize..offsets[4] as usize + 2], &[0x0f, 0x85]);
        assert_eq!((insns[5].mnemonic(), insns[5].memory_displacement64()), (Mnemonic::Lea, at(8)));
        assert_eq!((insns[6].mnemonic(), insns[6].memory_displacement64()), (Mnemonic::Lea, at(5)));
        assert_eq!(offsets[8] as usize, code.len());
    }

    /// A tool's rewrite of a memory operand is what the translation runs: a frame-relative
    /// displacement that no longer fits in 8 bits, and a RIP-relative one, both moved.
    #[test]
    fn a_rewritten_operand_is_encoded_anew() {
        struct Move;
        impl Tool for Move {
            fn rewrite(&mut self, ins: &mut Instruction) -> bool {
                match ins.memory_base() {
                    Register::RBP => ins.set_memory_displacement64((-0x200i64) as u64),
                    Register::RIP => ins.set_memory_displacement64(0x9000),
                    _ => return false,
                }
                true
            }
        }
        // 0x1000: mov eax, [rbp-8]; mov ecx, [rip+0x100]; int3
        let code = vec![0x8b, 0x45, 0xf8, 0x8b, 0x0d, 0x00, 0x01, 0x00, 0x00, 0xcc];
        let mut cache = CodeCache::new();
        let id = translate(&mut cache, &mut Code(vec![(0x1000, code)]), &mut Move, 0x1000).unwrap();
        let block = cache.block(id);
        // SAFETY: the block's host code, just written to the cache and not freed.
        let host = unsafe { std::slice::from_raw_parts(block.host_start as *const u8, block.host_len as usize) };
        let insns: Vec<Instruction> = Decoder::with_ip(64, host, block.host_start, DecoderOptions::NONE).into_iter().collect();
        let frame = insns.iter().find(|i| i.memory_base() == Register::RBP).expect("the frame load");
        assert_eq!(frame.memory_displacement64() as i64, -0x200);
        let moved = insns.iter().any(|i| i.is_ip_rel_memory_operand() && i.ip_rel_memory_address() == 0x9000 && i.op0_register() == Register::ECX);
        let mov_abs = insns.iter().any(|i| i.code() == iced_x86::Code::Mov_r64_imm64 && i.immediate64() == 0x9000);
        assert!(moved || mov_abs, "the RIP-relative load reads 0x9000: {insns:?}");
    }

    #[test]
    fn flags_are_dead_before_a_call_whose_callee_writes_them_first() {
        // 0x1000: cmp edi, 1; call 0x2000          0x2000: xor eax, eax; ret
        // 0x3000: cmp edi, 1; call 0x4000          0x4000: jb 0x4010 (reads CF first)
        let block = |at: u64, callee: u64| {
            let rel = (callee as i64 - (at as i64 + 8)) as i32;
            let mut b = vec![0x83, 0xff, 0x01, 0xe8];
            b.extend_from_slice(&rel.to_le_bytes());
            b.push(0xcc);
            (at, b)
        };
        let mut code = Code(vec![block(0x1000, 0x2000), (0x2000, vec![0x31, 0xc0, 0xc3]), block(0x3000, 0x4000), (0x4000, vec![0x72, 0x0e, 0xc3])]);
        for (at, dead_at_call) in [(0x1000, true), (0x3000, false)] {
            let bytes = code.0.iter().find(|c| c.0 == at).unwrap().1.clone();
            let reach = decode_reach(&bytes, at);
            let dead = status_flags_dead(&reach, &mut code, &mut FxHashMap::default(), &mut PhaseTimer::default());
            // Before the cmp every flag is dead (it writes all six); before the call, only if
            // the callee writes them before reading any.
            assert!(dead[0], "{at:#x}");
            assert_eq!(dead[1], dead_at_call, "{at:#x}");
        }
    }
}
