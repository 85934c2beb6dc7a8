//! The interface between the engine and tools: the only way a tool sees and changes a
//! translation.
//!
//! While a block is translated, the tool is shown each guest instruction ([`InsnSite`]: the
//! decoded instruction and iced-x86's `InstructionInfo`) and may add inline code before it (and
//! after it, for instructions that fall through). Inline code is written with iced-x86's
//! `CodeAssembler` into an [`Inline`], which lends the tool scratch registers the guest
//! instruction does not use and saves the guest's flags around the code if the tool says it
//! clobbers them and they are live. The engine spills lent registers and reloads them before
//! the guest next uses them; the guest never sees a register change.
//!
//! Hooks must be true functions of the guest code: the same block always gets the same
//! instrumentation, because blocks are retranslated (after invalidation, or to map a fault
//! back to the guest) and the results must agree. Every hook has an empty default body, so a
//! tool pays only for the hooks it uses.

use crate::context::{
    counter_step, counts_in_registers, ThreadContext, OFF_CALLOUT_ARG, OFF_CALLOUT_FN, OFF_CALLOUT_LIGHT_ROUTINE, OFF_CALLOUT_RET, OFF_CALLOUT_ROUTINE,
    OFF_COUNTER, OFF_COUNTER_STEP, OFF_FLAGS_RAX, OFF_FLAGS_SAVE, OFF_IBL_KEYS, OFF_IBL_MISS, OFF_IBL_VALS, OFF_REDIRECT, OFF_SAVE_RCX, OFF_SAVE_RDX,
    OFF_TOOL_AREA, OFF_TOOL_SPILL,
};
use iced_x86::code_asm::{ax, get_gpr64, qword_bcst, qword_ptr, rax, rcx, rdx, word_ptr, xmm18, AsmMemoryOperand, AsmRegister64, CodeAssembler};
use iced_x86::{Instruction, InstructionInfo, OpKind, Register};

pub use iced_x86::code_asm;

/// The client request sequence: four rotates of rdi that add up to 128 (a no-op natively),
/// then `xchg rcx, rcx`. rax points at the request (`[u64; 6]`: code, arguments); the answer
/// goes to rdx, which natively keeps the default the program put there.
/// `guest-programs/include/rtgrind.h` is the C side.
pub const CLIENT_REQUEST: [u8; 19] = [
    0x48, 0xc1, 0xc7, 0x07, // rol rdi, 7
    0x48, 0xc1, 0xc7, 0x1d, // rol rdi, 29
    0x48, 0xc1, 0xc7, 0x39, // rol rdi, 57
    0x48, 0xc1, 0xc7, 0x23, // rol rdi, 35
    0x48, 0x87, 0xc9, // xchg rcx, rcx
];

/// One guest instruction, as a tool sees it while its block is translated.
pub struct InsnSite<'a> {
    pub ins: &'a Instruction,
    /// Registers and memory read and written, with access kinds.
    pub info: &'a InstructionInfo,
    /// The block's straight-line guest code, decoded once from its start (up to where a block
    /// must end, or past a cut block's end): a tool looking ahead finds the instructions after
    /// `ins` here instead of decoding them again (see [`InsnSite::decoded_at`]).
    pub reach: &'a [Instruction],
    /// `ins` is not the guest's bytes' own: `Tool::rewrite` changed it.
    pub rewritten: bool,
}

impl InsnSite<'_> {
    /// The guest instruction at `pc` if it is in the block's straight-line code.
    pub fn decoded_at(&self, pc: u64) -> Option<&Instruction> {
        // (The reach ascends by address.)
        let k = self.reach.binary_search_by_key(&pc, |i| i.ip()).ok()?;
        Some(&self.reach[k]).filter(|i| !i.is_invalid())
    }
}

/// The straight-line code a block can reach, decoded and analysed once for the engine and
/// the tool (see `Tool::two_versions`).
pub struct BlockCode<'a> {
    pub insns: &'a [Instruction],
    /// Each instruction's registers and memory read and written.
    pub infos: &'a [&'a InstructionInfo],
}

impl BlockCode<'_> {
    /// The instructions with their analyses, up to the first that does not decode.
    pub fn analysed(&self) -> impl Iterator<Item = (&Instruction, &InstructionInfo)> {
        self.insns.iter().zip(self.infos.iter().copied()).take_while(|(ins, _)| !ins.is_invalid())
    }
}

/// Which version of a block code is being added to (see [`Tool::two_versions`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// The block's only version.
    Only,
    /// The first of two: entered first, its code may send the thread on into the full version
    /// at its start or before any instruction (`Inline::full_version_if`); the full version's
    /// start may send it back (`Inline::fast_version_if`).
    Fast,
    /// The second of two.
    Full,
}

/// When a jump to the other version placed in a tool's code is taken (see
/// `Inline::full_version_if`, `Inline::fast_version_if`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// ZF clear at the jump (the tool clobbers flags).
    NotZero,
    /// ZF set at the jump.
    Zero,
    /// rcx, which the tool borrowed (`scratch`), is not zero: flag-free.
    RcxNonZero,
    /// Always (an instruction the fast version does not handle).
    Always,
}

pub trait Tool {
    /// What this tool's code for a block depends on now besides the guest bytes and the plan:
    /// its options and mode (part of the translation cache's key, asked at each lookup: a
    /// tool may change mode mid-run).
    fn code_key(&self) -> u64 {
        0
    }
    /// A digest of the plan items a block with instructions at `pcs` consults: stored with its
    /// image and computed again at lookup, so a changed plan misses only the blocks it
    /// changes.
    fn plan_digest(&mut self, _pcs: &[u64]) -> u64 {
        0
    }
    /// May change the memory operand of a guest instruction before anything else sees it (a
    /// layout moving the program's variables): only its displacement, never its registers or
    /// its length's meaning (or a `mov r64, rsp` into the `lea` of an address beside rsp). True if it changed; the instruction is then encoded anew, and
    /// every other hook, the fault map and indirect branches see the changed one. Like every
    /// hook, a function of the guest code.
    fn rewrite(&mut self, _ins: &mut Instruction) -> bool {
        false
    }
    /// Whether the block at `pc` gets two versions, fast and full, each instrumented by the
    /// hooks below (`Inline::version` says which). `code` is the straight-line code the
    /// block can reach (it may end before the last one). A tool's fast version runs while
    /// cheap checks show the full one would do nothing, as LIFT's fast path does.
    fn two_versions(&mut self, _pc: u64, _code: &BlockCode) -> bool {
        false
    }
    /// Code that runs whenever a thread goes from a block's fast version to its full one (at
    /// the block start or before an instruction; not on the way back), with every register
    /// and the flags holding guest values: it may use neither scratch registers nor the flags.
    fn full_entry(&mut self, _b: &mut Inline) {}
    /// Called before the instructions of a block starting at `pc` are translated; code added
    /// to `b` runs every time the block is entered.
    fn block_start(&mut self, _pc: u64, _b: &mut Inline) {}
    /// Called where a block goes on past a conditional branch that was not taken, before the
    /// instruction at `pc` (the branch's fall-through): code added to `b` runs only on that
    /// path. A block runs from its start to any of its exits; a tool that counts basic blocks
    /// counts them here too.
    fn fall_through(&mut self, _pc: u64, _b: &mut Inline) {}
    /// Called for each guest instruction: code added to `b` runs just before it.
    fn before_insn(&mut self, _site: &InsnSite, _b: &mut Inline) {}
    /// Called for each guest instruction that falls through to the next one (not for
    /// branches, calls, returns, `syscall`): code added to `b` runs just after it.
    fn after_insn(&mut self, _site: &InsnSite, _b: &mut Inline) {}
    /// Whether the tool's code holds, beside its position-independent code, only values it
    /// gives with a relocation (`Inline::record`, `mov_constant`, `mov_id`, and no plain
    /// `Inline::callout`): then a block's image may be installed in another run
    /// (`CodeCache::image`), its records made again by `revive` and its constants and ids asked
    /// of `constant` and `id`. Only then does the translation cache (`persist`) store and look
    /// up its blocks.
    fn relocatable_code(&self) -> bool {
        false
    }
    /// Makes a record again from the bytes it was given as (`Inline::record`), keeps it as
    /// the records made while translating are kept, and returns its address (None if the
    /// bytes do not make one). Called at each translation and each install of an image.
    fn revive(&mut self, _kind: u32, _bytes: &[u8]) -> Option<u64> {
        None
    }
    /// A block with instructions at `pcs` was installed from an image instead of translated:
    /// what the tool notes of the code it translates (beside its code) it notes here.
    fn installed(&mut self, _pcs: &[u64]) {}
    /// The value of the tool's per-run constant `k` (`Inline::mov_constant`) in this run.
    fn constant(&mut self, _k: u32) -> Option<u64> {
        None
    }
    /// The id the tool gives `pc` for its purpose `kind` in this run (`Inline::mov_id`).
    fn id(&mut self, _kind: u32, _pc: u64) -> Option<u64> {
        None
    }
}

/// An optional pass of a tool (a trace's dependence log, only for some searches): its hooks
/// run when it is there, so the tool that holds it forwards each hook without a test.
impl<T: Tool> Tool for Option<T> {
    fn rewrite(&mut self, ins: &mut Instruction) -> bool {
        self.as_mut().is_some_and(|t| t.rewrite(ins))
    }
    fn two_versions(&mut self, pc: u64, code: &BlockCode) -> bool {
        self.as_mut().is_some_and(|t| t.two_versions(pc, code))
    }
    fn full_entry(&mut self, b: &mut Inline) {
        if let Some(t) = self {
            t.full_entry(b);
        }
    }
    fn block_start(&mut self, pc: u64, b: &mut Inline) {
        if let Some(t) = self {
            t.block_start(pc, b);
        }
    }
    fn fall_through(&mut self, pc: u64, b: &mut Inline) {
        if let Some(t) = self {
            t.fall_through(pc, b);
        }
    }
    fn before_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        if let Some(t) = self {
            t.before_insn(site, b);
        }
    }
    fn after_insn(&mut self, site: &InsnSite, b: &mut Inline) {
        if let Some(t) = self {
            t.after_insn(site, b);
        }
    }
    fn relocatable_code(&self) -> bool {
        self.as_ref().is_none_or(|t| t.relocatable_code())
    }
    fn revive(&mut self, kind: u32, bytes: &[u8]) -> Option<u64> {
        self.as_mut()?.revive(kind, bytes)
    }
    fn constant(&mut self, k: u32) -> Option<u64> {
        self.as_mut()?.constant(k)
    }
    fn id(&mut self, kind: u32, pc: u64) -> Option<u64> {
        self.as_mut()?.id(kind, pc)
    }
}

/// A Rust function translated code calls out to (see [`Inline::callout`]). It runs on the
/// host stack with the host `fs`; the registers at the call are in `ctx.callout_regs`.
pub type Callout = extern "C" fn(ctx: *mut ThreadContext, arg: u64);

/// The tool that adds nothing (Valgrind's `none`).
pub struct NoInstrumentation;
impl Tool for NoInstrumentation {
    fn relocatable_code(&self) -> bool {
        true
    }
}

/// A record of the tool's code at one point (`Inline::record`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordRef(u32);

/// A point's tool records (`Inline::record`) and relocated immediates: (index of the
/// `mov r64, imm64` in the assembler's instructions, its value).
#[derive(Default)]
pub(crate) struct Relocated {
    pub records: Vec<crate::image::ToolRecord>,
    pub imms: Vec<(usize, ToolImm)>,
}

/// A value a tool's `mov r64, imm64` holds that an image relocates (`image::Reloc`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum ToolImm {
    /// The point's record number `.0` (`Inline::records`), plus `.1`.
    Record(u32, u32),
    /// The tool's constant `k`, whose value in this run is `value`.
    Constant { k: u32, value: u64 },
    /// The id of `pc` for `kind`, `value` in this run.
    Id { kind: u32, pc: u64, value: u64 },
}

/// Inline code a tool adds at one point of a translation.
pub struct Inline {
    /// Made on first use: most points of most translations get no code. (Boxed: a builder
    /// is moved a few times per point, and one of over 128 bytes moves by a call of `memcpy`.)
    asm: Option<Box<CodeAssembler>>,
    /// Registers the guest instruction uses (bit = register number): never lent out.
    guest_uses: u16,
    /// Registers lent to the tool, spilled before its code and restored after.
    lent: u16,
    /// Registers lent at earlier instructions whose guest values still wait in their spill
    /// slots (the engine reloads them lazily).
    stolen: u16,
    /// Lent registers the tool's earlier code is done with (see `release_scratch`).
    reusable: u16,
    /// Lent registers the tool holds across all its code here (see `keep`).
    kept: u16,
    /// Lent registers whose spill slots the tool's code reads (see `spilled`): spilled even if
    /// the code never names them.
    slots_read: u16,
    clobbers_flags: bool,
    flags_live: bool,
    empty: bool,
    outcome: Option<usize>,
    version: Version,
    /// Jumps to the other version in the code: (index of the placeholder in the assembler's
    /// instructions, offset of its rel32 in it).
    to_full: Vec<(usize, usize)>,
    /// Jumps past the guest instruction (`skip_insn`): indices of their placeholders.
    skips: Vec<usize>,
    /// Registers the guest instructions after this point in the block use: lent ones among
    /// them would be reloaded there.
    later: u16,
    /// Registers the guest instruction writes whole without reading them (before it only):
    /// their guest values are dead here, so lending one costs no spill and no reload.
    dead: u16,
    /// The tool's code here names its lent registers only as scratch (see `may_rename`), and
    /// nothing since made their identity matter (a call-out, a way out of the block).
    renamable: bool,
    /// Registers the code names while they are lent (its scratch), and while they are not (the
    /// guest's values, read in place), from the instructions before `scanned`.
    named_lent: u16,
    named_guest: u16,
    scanned: usize,
    /// The tool's records made at this point and its relocated immediates (boxed: most
    /// points have none, and builders are made and moved at every point).
    relocated: Option<Box<Relocated>>,
    /// The code holds a value without a relocation (a plain `callout`'s argument).
    raw: bool,
}

/// A call-out's argument as `callout_through` emits it.
enum CalloutArgument {
    Plain(u64),
    Relocated(ToolImm),
}

impl From<u64> for CalloutArgument {
    fn from(v: u64) -> Self {
        CalloutArgument::Plain(v)
    }
}

impl From<ToolImm> for CalloutArgument {
    fn from(v: ToolImm) -> Self {
        CalloutArgument::Relocated(v)
    }
}

/// What the engine does with a tool's inline code (see `Inline::finish`).
pub(crate) struct Finished {
    /// Registers to spill around the code (lent ones).
    pub lent: u16,
    /// Lent registers whose guest values are dead (see `Inline::scratch_short`): not spilled.
    pub dead: u16,
    pub save_flags: bool,
    pub asm: Box<CodeAssembler>,
    /// `gs` offset of the qword that decides a conditional branch (0 own, 1 taken, 2 not).
    pub outcome: Option<usize>,
    /// Jumps to the other version (out of line): placeholder instruction index and the
    /// offset of the rel32 the engine points at its way there.
    pub to_full: Vec<(usize, usize)>,
    /// Jumps past the guest instruction (`Inline::skip_insn`): placeholder instruction indices
    /// (a `jmp rel32`, its rel32 at offset 1).
    pub skips: Vec<usize>,
    /// Registers the code may be given instead of the ones it names (see `Inline::may_rename`;
    /// 0 where it may not): r8-r15 the guest instruction does not use and the code does not
    /// name.
    pub holes: u16,
    /// Of `lent`, the registers the engine may rename to a hole: not kept, not dead, r8-r15.
    pub movable: u16,
    /// See `Inline::relocated`, `raw`.
    pub relocated: Option<Box<Relocated>>,
    pub raw: bool,
}

thread_local! {
    /// Assemblers done with (`recycle`): tool code is built at every instruction, and a new
    /// assembler costs allocations. (In their boxes: `Inline` holds one boxed, and unboxing
    /// and boxing again would allocate at every point.)
    #[allow(clippy::vec_box)]
    static ASSEMBLERS: std::cell::RefCell<Vec<Box<CodeAssembler>>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn assembler() -> Box<CodeAssembler> {
    ASSEMBLERS.with(|p| p.borrow_mut().pop()).unwrap_or_else(|| Box::new(CodeAssembler::new(64).expect("64-bit assembler")))
}

/// Gives back an assembler whose code was emitted, for the next tool code.
pub(crate) fn recycle(mut asm: Box<CodeAssembler>) {
    asm.reset();
    ASSEMBLERS.with(|p| p.borrow_mut().push(asm));
}

impl Inline {
    /// A builder for code next to a guest instruction that uses the registers `guest_uses`
    /// (see `used_registers`; 0 at a block start), where the guest's status flags are live or
    /// not.
    pub(crate) fn new(guest_uses: u16, flags_live: bool, stolen: u16, version: Version) -> Inline {
        Inline {
            asm: None,
            guest_uses: guest_uses | 1 << 4, // rsp: the guest's stack is never scratch.
            lent: 0,
            stolen,
            reusable: 0,
            kept: 0,
            slots_read: 0,
            clobbers_flags: false,
            flags_live,
            empty: true,
            outcome: None,
            version,
            to_full: Vec::new(),
            skips: Vec::new(),
            later: 0xffff,
            dead: 0,
            renamable: false,
            named_lent: 0,
            named_guest: 0,
            scanned: 0,
            relocated: None,
            raw: false,
        }
    }

    /// Tells the engine that the tool's code at this point holds nothing in its lent registers
    /// that outlives the point, but in the ones it `keep`s, and that nothing it keeps from an
    /// earlier point is left unlent here (it `reuse`s and keeps it, or forgets it): the engine
    /// may then rename a lent register the code names to another one the guest instruction
    /// does not use, spilled at an earlier instruction (no spill now, and no more reloads at
    /// the block's exits than before; see `translate::emit_inline`). Code that makes a call-out
    /// or leaves the block (which name registers by number, or their spill slots) is never
    /// renamed.
    pub fn may_rename(&mut self) {
        self.renamable = true;
    }

    /// Tells which registers the guest instruction after this code writes whole without
    /// reading them (see `scratch_short`).
    pub(crate) fn dead_before(mut self, dead: u16) -> Inline {
        self.dead = dead & !(1 << 0 | 1 << 4);
        self
    }

    /// Tells which registers the rest of the block uses (see `scratch`).
    pub(crate) fn used_later(mut self, later: u16) -> Inline {
        self.later = later;
        self
    }

    /// The assembler the tool writes its code with.
    pub fn asm(&mut self) -> &mut CodeAssembler {
        self.empty = false;
        self.asm.get_or_insert_with(assembler)
    }

    /// Borrows a 64-bit register the guest instruction does not use. Its guest value is
    /// restored after the tool's code; reading it before writing it gives garbage. Registers
    /// the rest of the block does not use come first (they stay borrowed until it ends), and
    /// among them those already spilled at earlier instructions (no spill).
    pub fn scratch(&mut self) -> AsmRegister64 {
        self.scan_names();
        // rax is kept for the flag save (`lahf`), so a tool may always clobber flags.
        let free = !(self.guest_uses | self.lent);
        // Spilled already and not needed by the rest of the block, then not needed by it
        // (one spill, no reload before the block ends), then spilled already.
        let (stolen, unused) = (self.stolen, !self.later);
        // (Dead registers given back go to `scratch_short` only: the tool may keep this one.)
        let n = match first_to_lend(self.reusable & !self.dead) {
            Some(n) => {
                self.reusable &= !(1 << n);
                n
            }
            None => [stolen & unused, unused, stolen, 0xffff]
                .into_iter()
                .find_map(|pick| first_to_lend(pick & free))
                .expect("an instruction leaves a scratch register"),
        };
        self.lent |= 1 << n;
        get_gpr64(Register::RAX + n as u32).expect("gpr")
    }

    /// Borrows a register for code that holds nothing past this point (neither kept nor
    /// read after the guest instruction): one given back, else one the guest instruction
    /// overwrites without reading it (its guest value is dead: no spill, and no reload after),
    /// else as `scratch` does. Guest code that faults at the instruction leaves such a
    /// register's old value unknown to a signal handler (the instruction would replace it).
    pub fn scratch_short(&mut self) -> AsmRegister64 {
        self.scan_names();
        let n = if let Some(n) = first_to_lend(self.reusable) {
            self.reusable &= !(1 << n);
            n
        } else if let Some(n) = first_to_lend(self.dead & !self.lent) {
            self.lent |= 1 << n;
            n
        } else {
            return self.scratch();
        };
        get_gpr64(Register::RAX + n as u32).expect("gpr")
    }

    /// Borrows `r` again if the tool's code at an earlier instruction of the block borrowed it
    /// and it still holds what that code left in it (the guest has not needed it since).
    pub fn reuse(&mut self, r: AsmRegister64) -> bool {
        self.scan_names();
        let bit = 1u16 << (Register::from(r).number() - Register::RAX.number());
        let ok = self.stolen & bit != 0 && (self.guest_uses | self.lent) & bit == 0;
        if ok {
            self.lent |= bit;
            self.reusable &= !bit;
        }
        ok
    }

    /// Sorts the registers the instructions added since the last call name into the tool's
    /// (lent now) and the guest's (read in place): called before the lent set grows.
    fn scan_names(&mut self) {
        let Some(asm) = &self.asm else { return };
        let added = &asm.instructions()[self.scanned..];
        let named = added.iter().fold(0, |m, i| m | named_registers(i));
        self.named_lent |= named & self.lent;
        self.named_guest |= named & !self.lent;
        self.scanned += added.len();
    }

    /// How many registers `scratch` can still hand out.
    pub fn free_registers(&self) -> u32 {
        // (rax is never lent.)
        (!((self.guest_uses | self.lent) & !self.reusable) & 0xfffe).count_ones()
    }

    /// Keeps the lent register `r` out of `release_scratch`: the tool holds a value in it
    /// across all its code at this point (a per-block cache, to `reuse` at later instructions).
    /// Code the tool adds elsewhere in the block (after an instruction, at a fall-through) may
    /// be lent the register: the tool must forget the value there.
    pub fn keep(&mut self, r: AsmRegister64) {
        let bit = 1u16 << (Register::from(r).number() - Register::RAX.number());
        assert!(self.lent & bit != 0 && self.dead & bit == 0, "only a lent register the guest instruction does not write is kept");
        self.kept |= bit;
        self.reusable &= !bit;
    }

    /// The tool's code is done with the lent register `r`: later `scratch` calls may hand it
    /// out again (it stays spilled).
    pub fn give_back(&mut self, r: AsmRegister64) {
        let bit = 1u16 << (Register::from(r).number() - Register::RAX.number());
        assert!(self.lent & bit != 0 && self.kept & bit == 0, "only a lent register that is not kept is given back");
        self.reusable |= bit;
    }

    /// Borrows rcx (for flag-free tests with `jrcxz`), if the guest instruction does not use
    /// it and it is not lent already.
    pub fn scratch_rcx(&mut self) -> Option<AsmRegister64> {
        self.scan_names();
        if (self.guest_uses | self.lent) & 2 != 0 {
            return None;
        }
        self.reusable &= !2;
        self.lent |= 2;
        Some(rcx)
    }

    /// The tool's code so far is done with every register it borrowed but the kept ones: later
    /// `scratch` calls may hand them out again (they stay spilled). Code after this point must not expect
    /// them to keep their values.
    pub fn release_scratch(&mut self) {
        self.reusable = self.lent & !self.kept;
    }

    /// Registers (bit = number) whose guest values are in their spill slots (`spill_slot`)
    /// rather than in the register at this point: the ones lent so far and the ones lent at
    /// earlier instructions and not yet reloaded.
    pub fn spilled(&mut self) -> u16 {
        self.renamable = false;
        self.slots_read |= self.lent;
        self.lent | self.stolen
    }

    /// Whether the guest's status flags may be read before they are next written here: code
    /// that clobbers them costs a save and a restore (about ten instructions), which a
    /// flag-free form avoids.
    pub fn flags_live(&self) -> bool {
        self.flags_live
    }

    /// Which version of the block this code is for.
    pub fn version(&self) -> Version {
        self.version
    }

    /// In the fast version, at the block start or before an instruction: if `when` holds at
    /// this point of the tool's code, the thread goes on in the full version at the same point
    /// (its block start, or its code before the same instruction): registers and flags get
    /// their guest values back first. The shadow state must be what the full version would
    /// have made of it up to there. Out of line: the path where `when` does not hold falls
    /// through to the tool's code that follows.
    pub fn full_version_if(&mut self, when: When) {
        assert_eq!(self.version, Version::Fast, "only a fast version goes on in the full one");
        self.switch_if(when);
    }

    /// In the full version's block-start code: if `when` holds at this point of the tool's
    /// code, the thread goes on in the fast version after its block-start code (registers and
    /// flags first get their guest values back).
    pub fn fast_version_if(&mut self, when: When) {
        assert_eq!(self.version, Version::Full, "only a full version goes back to the fast one");
        self.switch_if(when);
    }

    fn switch_if(&mut self, when: When) {
        assert!(when != When::RcxNonZero || self.lent & 2 != 0, "RcxNonZero needs rcx lent");
        if matches!(when, When::NotZero | When::Zero) {
            self.clobbers_flags = true;
        }
        // A placeholder whose rel32 the engine points at the way out (see `translate`).
        let (bytes, rel): (&[u8], usize) = match when {
            When::NotZero => (&[0x0f, 0x85, 0, 0, 0, 0], 2),
            When::Zero => (&[0x0f, 0x84, 0, 0, 0, 0], 2),
            // jrcxz over a jmp rel32
            When::RcxNonZero => (&[0xe3, 0x05, 0xe9, 0, 0, 0, 0], 3),
            When::Always => (&[0xe9, 0, 0, 0, 0], 1),
        };
        let a = self.asm();
        let index = a.instructions().len();
        a.db(bytes).unwrap();
        self.to_full.push((index, rel));
    }

    /// Adds the counter step to the thread's counter (`ThreadContext::counter`), flag-free:
    /// one register add where AVX-512 holds the counter in xmm18, else a read-modify-write.
    pub fn count(&mut self) {
        if counts_in_registers() {
            let step = qword_bcst(OFF_COUNTER_STEP as u64).gs();
            self.asm().evex().vpaddq(xmm18, xmm18, step).unwrap();
        } else {
            let t = self.scratch_short();
            let step = counter_step() as i32;
            let a = self.asm();
            a.mov(t, qword_ptr(OFF_COUNTER as u64).gs()).unwrap();
            a.lea(t, qword_ptr(t + step)).unwrap();
            a.mov(qword_ptr(OFF_COUNTER as u64).gs(), t).unwrap();
        }
    }

    /// `r` = the thread's counter (`ThreadContext::counter`), flag-free.
    pub fn counter_to(&mut self, r: AsmRegister64) {
        if counts_in_registers() {
            self.asm().evex().vmovq(r, xmm18).unwrap();
        } else {
            self.asm().mov(r, qword_ptr(OFF_COUNTER as u64).gs()).unwrap();
        }
    }

    /// Stores the thread's counter at `m`, flag-free: one store where AVX-512 holds it in
    /// xmm18 (else through a register of the builder's).
    pub fn counter_to_memory(&mut self, m: AsmMemoryOperand) {
        if counts_in_registers() {
            self.asm().evex().vmovq(m, xmm18).unwrap();
        } else {
            let t = self.scratch_short();
            let a = self.asm();
            a.mov(t, qword_ptr(OFF_COUNTER as u64).gs()).unwrap();
            a.mov(m, t).unwrap();
        }
    }

    /// The tool's code writes the status flags; the engine preserves the guest's if live.
    pub fn clobber_flags(&mut self) {
        self.clobbers_flags = true;
    }

    /// Calls `f(ctx, arg)` from this point of the tool's code. Every general register, the
    /// flags, the guest's vector registers (xmm0-15 and their upper halves) and MXCSR survive
    /// the call (it costs a state save: keep it off hot paths); the function may use the C
    /// library and thread-locals, but not the x87 registers (Rust code, and the C library's
    /// string, memory, allocation and I/O functions, never do). `scratch` is a register this
    /// builder lent, which the call clobbers.
    /// The block's code then holds `arg` as it is: not in another process (see
    /// `Tool::relocatable_code`; `callout_record`, `callout_constant` relocate it).
    pub fn callout(&mut self, f: Callout, arg: u64, scratch: AsmRegister64) {
        self.raw = true;
        self.callout_through(OFF_CALLOUT_ROUTINE, f, arg, scratch);
    }

    /// A record of the tool's, which the code here refers to (`callout_record`,
    /// `mov_record`): the engine has the tool make it from `bytes` (`Tool::revive`) when the
    /// hook returns and wherever the block's image is installed, and puts its address into
    /// the code.
    pub fn record(&mut self, kind: u32, bytes: Vec<u8>) -> RecordRef {
        let records = &mut self.relocated.get_or_insert_default().records;
        records.push(crate::image::ToolRecord { kind, bytes });
        RecordRef(records.len() as u32 - 1)
    }

    /// `r` = the address of record `rec` plus `offset` (a field of it).
    pub fn mov_record(&mut self, r: AsmRegister64, rec: RecordRef, offset: u32) {
        self.mov_relocated(r, ToolImm::Record(rec.0, offset));
    }

    /// `r` = the tool's per-run constant `k`, `value` in this run (`Tool::constant`).
    pub fn mov_constant(&mut self, r: AsmRegister64, k: u32, value: u64) {
        self.mov_relocated(r, ToolImm::Constant { k, value });
    }

    /// `r` = the id the tool gives `pc` for `kind`, `value` in this run (`Tool::id`).
    pub fn mov_id(&mut self, r: AsmRegister64, kind: u32, pc: u64, value: u64) {
        self.mov_relocated(r, ToolImm::Id { kind, pc, value });
    }

    /// `callout` with the address of record `rec` as its argument.
    pub fn callout_record(&mut self, f: Callout, rec: RecordRef, scratch: AsmRegister64) {
        self.callout_relocated(f, ToolImm::Record(rec.0, 0), scratch);
    }

    /// `callout` with the tool's constant `k` (`value` in this run) as its argument.
    pub fn callout_constant(&mut self, f: Callout, k: u32, value: u64, scratch: AsmRegister64) {
        self.callout_relocated(f, ToolImm::Constant { k, value }, scratch);
    }

    fn callout_relocated(&mut self, f: Callout, arg: ToolImm, scratch: AsmRegister64) {
        self.callout_through(OFF_CALLOUT_ROUTINE, f, arg, scratch);
    }

    /// A `mov r, imm64` of the 10-byte form whose field the engine fills (a placeholder
    /// of 64 bits keeps it from the short forms of a 32-bit constant).
    fn mov_relocated(&mut self, r: AsmRegister64, value: ToolImm) {
        let ins = Instruction::with2(iced_x86::Code::Mov_r64_imm64, Register::from(r), u64::MAX).expect("mov r64, imm64");
        let a = self.asm();
        let index = a.instructions().len();
        a.add_instruction(ins).unwrap();
        self.relocated.get_or_insert_default().imms.push((index, value));
    }

    /// As `callout`, at a fraction of its cost, for a function that touches no vector
    /// register beyond xmm0-15 (Rust code built for the baseline x86-64 never does), calls no
    /// C library function (`memcpy` and its kin use the wider ones), allocates nothing, uses
    /// no thread-local (`fs` stays the guest's), never switches threads and never unwinds.
    /// Only the general registers, the flags and xmm0-15 are kept; the function runs on the
    /// host stack.
    pub fn callout_light(&mut self, f: Callout, arg: u64, scratch: AsmRegister64) {
        self.raw = true;
        self.callout_through(OFF_CALLOUT_LIGHT_ROUTINE, f, arg, scratch);
    }

    /// (`arg`: a plain value, or one relocated.)
    fn callout_through(&mut self, routine: usize, f: Callout, arg: impl Into<CalloutArgument>, scratch: AsmRegister64) {
        self.renamable = false;
        let a = self.asm();
        a.mov(scratch, f as usize as u64).unwrap();
        a.mov(qword_ptr(OFF_CALLOUT_FN as u64).gs(), scratch).unwrap();
        match arg.into() {
            CalloutArgument::Plain(v) => a.mov(scratch, v).unwrap(),
            CalloutArgument::Relocated(v) => self.mov_relocated(scratch, v),
        }
        let a = self.asm();
        let mut back = a.create_label();
        a.mov(qword_ptr(OFF_CALLOUT_ARG as u64).gs(), scratch).unwrap();
        a.lea(scratch, qword_ptr(back)).unwrap();
        a.mov(qword_ptr(OFF_CALLOUT_RET as u64).gs(), scratch).unwrap();
        a.jmp(qword_ptr(routine as u64).gs()).unwrap();
        a.set_label(&mut back).unwrap();
        a.zero_bytes().unwrap();
    }

    /// For a conditional branch with a condition code (`jcc`; not `loop`/`jrcxz`): once the
    /// tool's code has run, the qword at `gs:[off]` decides the outcome: 0 the branch's own, 1
    /// taken, 2 not taken.
    pub fn branch_outcome_from(&mut self, off: u64) {
        self.outcome = Some(off as usize);
    }

    /// Leaves the block from this point of the tool's code and goes on with the guest
    /// instruction at the address in the tool-area qword `gs:[off]` (which is zeroed): the
    /// current instruction and the rest of the block do not run. Every register and (if the
    /// tool clobbers them, which it must have said before) the flags get their guest values
    /// back first.
    pub fn exit_to(&mut self, off: u64) {
        assert!(self.lent & self.dead == 0, "code that skips the instruction borrowed no register it would overwrite");
        self.renamable = false;
        // Registers lent after this point still hold their guest values here.
        let spilled = self.lent | self.stolen;
        let restore_flags = self.clobbers_flags && self.flags_live;
        let a = self.asm();
        let gs = |off: usize| qword_ptr(off as u64).gs();
        if restore_flags {
            a.mov(gs(OFF_FLAGS_RAX), rax).unwrap();
            a.mov(ax, word_ptr(OFF_FLAGS_SAVE as u64).gs()).unwrap();
            a.add(iced_x86::code_asm::al, 0x7f).unwrap();
            a.sahf().unwrap();
            a.mov(rax, gs(OFF_FLAGS_RAX)).unwrap();
        }
        for n in 0..16usize {
            if spilled & (1 << n) != 0 {
                a.mov(get_gpr64(Register::RAX + n as u32).unwrap(), gs(spill_slot(n))).unwrap();
            }
        }
        // The inline indirect-branch lookup (see translate::indirect): target in rdx, guest
        // rcx and rdx in their save slots; every instruction here is flag-free.
        a.mov(gs(OFF_SAVE_RCX), rcx).unwrap();
        a.mov(gs(OFF_SAVE_RDX), rdx).unwrap();
        a.mov(rdx, gs(off as usize)).unwrap();
        a.mov(gs(off as usize), 0).unwrap();
        let mut hit = a.create_label();
        // The engine's own hash, byte for byte: both sides must agree on the table's slots.
        let hash = |a: &mut CodeAssembler| a.db(&crate::emit::IBL_HASH_RDX_TO_ECX).unwrap();
        hash(a);
        a.mov(rcx, qword_ptr(rcx * 8 + OFF_IBL_KEYS as u64).gs()).unwrap();
        a.lea(rcx, qword_ptr(rcx + rdx)).unwrap();
        a.jrcxz(hit).unwrap();
        a.jmp(gs(OFF_IBL_MISS)).unwrap();
        a.set_label(&mut hit).unwrap();
        hash(a);
        a.jmp(qword_ptr(rcx * 8 + OFF_IBL_VALS as u64).gs()).unwrap();
    }

    /// Jumps past the guest instruction from this point of the tool's code, staying in the
    /// block: neither the instruction nor the rest of the tool's code before it runs; the code
    /// after it (`Tool::after_insn`'s) does. Registers and flags have their guest values there
    /// (the ones the instruction would have written keep their old ones). Only before an
    /// instruction that falls through, in code that has borrowed no register the instruction
    /// overwrites (`scratch_short`) so far; a value the tool keeps for the block (`keep`) that
    /// its code after this point would have set must be forgotten. The way out of the block
    /// without a dispatch (`exit_to` the next instruction) at the cost of one taken jump.
    pub fn skip_insn(&mut self) {
        assert!(self.lent & self.dead == 0, "code that skips the instruction borrowed no register it would overwrite");
        let a = self.asm();
        let index = a.instructions().len();
        // A placeholder whose rel32 the engine points at the way past (see `translate`).
        a.db(&[0xe9, 0, 0, 0, 0]).unwrap();
        self.skips.push(index);
    }

    /// After a call-out: leaves the block for the guest pc the call-out put in
    /// `ctx.redirect` (which is zeroed), as `exit_to` does, if it put one there; else the code
    /// goes on here. Clobbers the flags.
    pub fn exit_if_redirected(&mut self) {
        self.clobber_flags();
        let a = self.asm();
        let mut stay = a.create_label();
        a.cmp(qword_ptr(OFF_REDIRECT as u64).gs(), 0).unwrap();
        a.je(stay).unwrap();
        self.exit_to(OFF_REDIRECT as u64);
        let a = self.asm();
        a.set_label(&mut stay).unwrap();
        a.zero_bytes().unwrap();
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.empty && self.outcome.is_none()
    }

    /// The code of a `Tool::full_entry`, which may neither borrow registers nor clobber flags.
    pub(crate) fn finish_plain(self) -> Option<Vec<u8>> {
        assert!(self.lent == 0 && !self.clobbers_flags && self.to_full.is_empty() && self.skips.is_empty(), "full-entry code needs no register and no flags");
        let asm = self.asm?;
        // Position-independent (no label, no RIP-relative operand): encoded one by one, without
        // the block encoder's allocations (this code is emitted at every way into a full version).
        let mut encoder = iced_x86::Encoder::new(64);
        let mut code = Vec::new();
        for i in asm.instructions() {
            assert!(
                !i.is_ip_rel_memory_operand() && i.op_kinds().all(|k| !matches!(k, iced_x86::OpKind::NearBranch64)),
                "full-entry code is position-independent"
            );
            if !crate::templates::encode(i, &mut code) {
                encoder.encode(i, 0).expect("full-entry code encodes");
                code.append(&mut encoder.take_buffer());
            }
        }
        Some(code)
    }

    pub(crate) fn finish(mut self) -> Finished {
        self.scan_names();
        let save_flags = self.clobbers_flags && self.flags_live && !self.empty;
        let asm = self.asm.unwrap_or_else(assembler);
        // A register lent but never named by the code (a tool borrows a fixed set up front)
        // needs no spill; rcx stays, for the `jrcxz` of a jump to the other version.
        // (Operands suffice: the only implicit register tool code uses is rcx, of `jrcxz`;
        // rax, of `lahf`, and rsp are never lent.)
        // A lent register the code names only before it was lent (a guest value read in place)
        // needs none either.
        let named = 1u16 << 1 | self.slots_read | self.named_lent;
        // (Raw bytes may name registers the renaming would not see.)
        let renamable = self.renamable && !asm.instructions().iter().any(|i| i.code() == iced_x86::Code::DeclareByte);
        const R8_R15: u16 = 0xff00;
        let (holes, movable) = match renamable {
            // (Not one the guest instruction uses, the code names or keeps: whatever holds a
            // value the tool keeps for a later point is lent and kept here, see `may_rename`.)
            true => (
                !self.guest_uses & !self.named_guest & !(self.lent & named) & !self.kept & R8_R15,
                self.lent & named & !self.named_guest & !self.kept & !self.dead & !self.slots_read & R8_R15,
            ),
            false => (0, 0),
        };
        Finished {
            lent: self.lent & named,
            dead: self.lent & named & self.dead,
            holes,
            movable,
            save_flags,
            asm,
            outcome: self.outcome,
            to_full: self.to_full,
            skips: self.skips,
            relocated: self.relocated,
            raw: self.raw,
        }
    }
}

/// The general registers `Inline` lends, in the order it prefers them: r8-r15 first (compiled
/// code uses them least), rdx and rcx last: they carry every indirect branch's save and reload
/// (a block entered by a `ret` has just loaded them), and rcx is the one register
/// `scratch_rcx` can give a flag-free test (`jrcxz`). Never rax (the flag save's) or rsp.
/// The first of the registers in `m` (bit = number) in that order, by bit tests (called for
/// every register a tool borrows).
fn first_to_lend(m: u16) -> Option<usize> {
    // r8-r15, then rbx, rbp, rsi, rdi (bits 3, 5, 6, 7), then rdx, then rcx.
    [m & 0xff00, m & 0xe8, m & 4, m & 2].into_iter().find(|&part| part != 0).map(|part| part.trailing_zeros() as usize)
}

/// `gs`-relative offset of byte `off` of the tool's per-thread area (`ThreadContext::tool_area`).
pub const fn tool_area(off: usize) -> u64 {
    (OFF_TOOL_AREA + off) as u64
}

/// `gs`-relative offset of the spill slot of register `n` while it is lent to a tool.
pub const fn spill_slot(n: usize) -> usize {
    OFF_TOOL_SPILL + 8 * n
}

/// Renames the general registers `i` names: register number n becomes `map[n]` (r8-r15 only,
/// in every size; see `Inline::may_rename`).
pub(crate) fn rename_registers(i: &mut Instruction, map: &[u8; 16]) {
    // r8-r15 in each size are consecutive, and a size's first one is its r8. (By the enum's
    // order, not `Register::size`/`number`: their tables cost a cache line each.)
    let renamed = |r: Register| -> Register {
        for first in [Register::R8, Register::R8D, Register::R8W, Register::R8L] {
            let k = (r as u32).wrapping_sub(first as u32);
            if k < 8 {
                let to = map[8 + k as usize] as u32;
                return if to >= 8 { first + (to - 8) } else { r };
            }
        }
        r
    };
    for k in 0..i.op_count() {
        if i.op_kind(k) == OpKind::Register {
            i.set_op_register(k, renamed(i.op_register(k)));
        }
    }
    i.set_memory_base(renamed(i.memory_base()));
    i.set_memory_index(renamed(i.memory_index()));
}

/// The general registers (bit = number, rax = 0) an instruction names as operands.
fn named_registers(ins: &Instruction) -> u16 {
    // (By a table: this runs for every instruction of tool code, several times.)
    static BITS: std::sync::LazyLock<[u16; 256]> = std::sync::LazyLock::new(|| {
        let mut bits = [0u16; 256];
        for r in Register::values().filter(|r| r.is_gpr()) {
            bits[r as usize] = 1 << (r.full_register().number() - Register::RAX.number());
        }
        bits
    });
    let bits = &*BITS;
    let mut used = bits[ins.memory_base() as usize] | bits[ins.memory_index() as usize];
    for i in 0..ins.op_count() {
        if ins.op_kind(i) == OpKind::Register {
            used |= bits[ins.op_register(i) as usize];
        }
    }
    used
}

/// The general registers (bit = number, rax = 0) an instruction reads or writes, explicitly or
/// implicitly, from its `InstructionInfo`.
pub(crate) fn used_registers(ins: &Instruction, info: &InstructionInfo) -> u16 {
    info.used_registers()
        .iter()
        .map(|u| u.register())
        .filter(|r| r.is_gpr())
        .fold(named_registers(ins), |m, r| m | 1 << (r.full_register().number() - Register::RAX.number()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use iced_x86::code_asm::{r8, rdx};

    /// Renaming by the enum's order gives the register of the same size with the new number,
    /// for every operand and both address registers, and leaves rax-rdi and renamings to them
    /// alone.
    #[test]
    fn renaming_keeps_each_register_size() {
        let mut map = [0u8; 16];
        for (n, m) in map.iter_mut().enumerate() {
            *m = n as u8;
        }
        (map[8], map[9], map[13], map[11]) = (12, 15, 10, 3);
        let named = |n: usize| -> Vec<Register> {
            let r = Register::RAX + n as u32;
            // (The 8-bit ones by number: iced lists ah-bh among them.)
            let low8 = [Register::AL, Register::CL, Register::DL, Register::BL, Register::SPL, Register::BPL, Register::SIL, Register::DIL];
            let byte = if n < 8 { low8[n] } else { Register::R8L + (n as u32 - 8) };
            vec![r, Register::EAX + n as u32, Register::AX + n as u32, byte]
        };
        for from in 0..16 {
            let to = if from >= 8 && map[from] >= 8 { map[from] as usize } else { from };
            for (size, r) in named(from).into_iter().enumerate() {
                let mut i = Instruction::with2(iced_x86::Code::Mov_r64_rm64, Register::RAX, Register::RAX).unwrap();
                i.set_op0_register(r);
                i.set_op1_kind(OpKind::Memory);
                i.set_memory_base(Register::RAX + from as u32);
                i.set_memory_index(Register::RAX + from as u32);
                rename_registers(&mut i, &map);
                assert_eq!(i.op0_register(), named(to)[size], "{r:?}");
                assert_eq!((i.memory_base(), i.memory_index()), (Register::RAX + to as u32, Register::RAX + to as u32), "{r:?}");
            }
        }
    }

    #[test]
    fn registers_are_lent_r8_to_r15_then_rbx_rbp_rsi_rdi_rdx_rcx() {
        for m in 0..=u16::MAX {
            let first = (8..16usize).chain([3, 5, 6, 7, 2, 1]).find(|&r| m & (1 << r) != 0);
            assert_eq!(first_to_lend(m), first, "{m:#06x}");
        }
    }

    #[test]
    fn a_short_scratch_is_a_register_the_instruction_overwrites() {
        // Before `movzx edx, byte [r13]`: rdx is the instruction's (dead here), r13 its address.
        const RDX: u16 = 1 << 2;
        const R13: u16 = 1 << 13;
        let mut b = Inline::new(RDX | R13, false, 0, Version::Fast).dead_before(RDX);
        assert_eq!(b.scratch(), r8, "a register the tool may keep is never a dead one");
        let d = b.scratch_short();
        assert_eq!(d, rdx);
        b.asm().mov(d, 1u64).unwrap();
        b.asm().mov(r8, d).unwrap();
        let done = b.finish();
        // Both lent; rdx needs no spill (nothing reloads it: the instruction replaces it).
        assert_eq!(done.lent, RDX | 1 << 8);
        assert_eq!(done.dead, RDX);
        recycle(done.asm);
        // Given back, a dead register goes to short uses only.
        let mut b = Inline::new(RDX | R13, false, 0, Version::Fast).dead_before(RDX);
        let d = b.scratch_short();
        b.give_back(d);
        assert_ne!(b.scratch(), rdx);
        assert_eq!(b.scratch_short(), rdx);
    }
}
