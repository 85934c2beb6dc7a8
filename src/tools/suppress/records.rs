//! A suppression run's records as plain bytes (issue 29, the translation cache's step 2): what
//! a translation's code points at (a guard, a point's check, a heap hook's site) is given to
//! the engine as bytes without pointers (`Inline::record`) and made again from them
//! (`Tool::revive`) at each translation and wherever the block's image is installed, in this
//! run or another. The run's constants and the ids it gives call sites are relocated too
//! (`Tool::constant`, `Tool::id`), so an untraced run's code holds nothing of the process.

use super::guards::GuardKind;
use super::plan::Point;
use crate::tools::heap::{Hook, Kind};
use rtgrind_jit::iced_x86::{Decoder, DecoderOptions, Instruction};

/// Record kinds.
pub(super) const GUARD: u32 = 0;
pub(super) const POINT_CHECK: u32 = 1;
pub(super) const HEAP_SITE: u32 = 2;

/// The run's own constants (after the propagation's): its flag of the program's entry, and
/// the state its call-outs share (`guards::State`).
pub(super) const RESTARTED: u32 = crate::shadow::propagate::CONSTANTS;
pub(super) const STATE: u32 = crate::shadow::propagate::CONSTANTS + 1;

/// Ids: a call site's counter in the thread's table of executions (`ordinals`), by its return
/// address (the value is its offset in the table, 8 × id).
pub(super) const CALL_SITE: u32 = 0;

const GUARD_KINDS: [GuardKind; 7] =
    [GuardKind::Access, GuardKind::Branch, GuardKind::Ret, GuardKind::IndirectCall, GuardKind::IndirectJump, GuardKind::Divide, GuardKind::FrameLost];
const HEAP_KINDS: [Kind; 9] =
    [Kind::Malloc, Kind::Calloc, Kind::Realloc, Kind::Free, Kind::Memalign, Kind::PosixMemalign, Kind::Valloc, Kind::Pvalloc, Kind::UsableSize];
const HOOK_RETURN: u8 = 0xfe;
const HOOK_JUMP_OUT: u8 = 0xff;

/// A guest instruction as a record holds it: its address, its length in guest code, and bytes
/// that decode to it there.
pub(super) type Code<'a> = (u64, u8, &'a [u8]);

/// The bytes of the guest instruction `ins`: the guest's, read from guest code at translation
/// time (in a hook, where the fault handler catches a bad read), or where a tool changed it
/// (`rewritten`: a layout moved its variable) its encoding.
pub(super) fn code_of(ins: &Instruction, rewritten: bool) -> ([u8; 15], usize) {
    let mut buf = [0u8; 15];
    if rewritten {
        let mut e = rtgrind_jit::iced_x86::Encoder::new(64);
        if let Ok(n) = e.encode(ins, ins.ip()) {
            buf[..n].copy_from_slice(&e.take_buffer());
            return (buf, n);
        }
    }
    let n = crate::kernel::raw::copy_guarded(ins.ip(), &mut buf[..ins.len().min(15)]);
    (buf, n)
}

/// A guard's record: its kind, registers spilled at its call-out, instruction.
pub(super) fn guard(kind: GuardKind, spilled: u16, ins: Code) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(32));
    w.u8(GUARD_KINDS.iter().position(|&k| k == kind).expect("a guard kind") as u8);
    w.u16(spilled);
    w.ins(ins);
    w.0
}

pub(super) fn read_guard(bytes: &[u8]) -> Option<(GuardKind, u16, Instruction)> {
    let mut r = Reader(bytes);
    let kind = *GUARD_KINDS.get(r.u8()? as usize)?;
    Some((kind, r.u16()?, r.ins()?))
}

/// A point's check: the point, what counts its executions, registers spilled, instruction.
pub(super) fn point_check(p: &Point, anchor: Option<u32>, spilled: u16, ins: Code) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(64));
    for v in [p.pc, p.thread, p.instance, p.site] {
        w.u64(v);
    }
    w.u64(anchor.map_or(u64::MAX, u64::from));
    w.u16(spilled);
    w.ins(ins);
    w.0
}

pub(super) fn read_point_check(bytes: &[u8]) -> Option<(Point, Option<u32>, u16, Instruction)> {
    let mut r = Reader(bytes);
    let p = Point { pc: r.u64()?, thread: r.u64()?, instance: r.u64()?, site: r.u64()? };
    let anchor = r.u64()?;
    let anchor = if anchor == u64::MAX { None } else { Some(u32::try_from(anchor).ok()?) };
    Some((p, anchor, r.u16()?, r.ins()?))
}

/// A heap hook's site: the hook, registers spilled at its call-out.
pub(super) fn heap_site(hook: Hook, spilled: u16) -> Vec<u8> {
    let code = match hook {
        Hook::Enter(k) => HEAP_KINDS.iter().position(|&h| h == k).expect("an allocation function") as u8,
        Hook::Return => HOOK_RETURN,
        Hook::JumpOut => HOOK_JUMP_OUT,
    };
    let mut w = Writer(vec![code]);
    w.u16(spilled);
    w.0
}

pub(super) fn read_heap_site(bytes: &[u8]) -> Option<(Hook, u16)> {
    let mut r = Reader(bytes);
    let hook = match r.u8()? {
        HOOK_RETURN => Hook::Return,
        HOOK_JUMP_OUT => Hook::JumpOut,
        k => Hook::Enter(*HEAP_KINDS.get(k as usize)?),
    };
    Some((hook, r.u16()?))
}

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn ins(&mut self, (ip, len, bytes): Code) {
        self.u64(ip);
        self.u8(len);
        self.u8(bytes.len() as u8);
        self.0.extend_from_slice(bytes);
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>()?;
        self.0 = rest;
        Some(*head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take::<1>().map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take().map(u16::from_le_bytes)
    }
    fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_le_bytes)
    }
    /// The instruction `ins` wrote, decoded at its address, with its length in guest code
    /// (None if its bytes do not make one whole instruction).
    fn ins(&mut self) -> Option<Instruction> {
        let (ip, len) = (self.u64()?, self.u8()?);
        let n = self.u8()? as usize;
        let bytes = self.0.get(..n)?;
        self.0 = &self.0[n..];
        let mut ins = Decoder::with_ip(64, bytes, ip, DecoderOptions::NONE).decode();
        let whole = !ins.is_invalid() && ins.len() == n;
        // (iced keeps the next ip: the ip after the length.)
        ins.set_len(len as usize);
        ins.set_ip(ip);
        whole.then_some(ins)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_as_written() {
        // `lock add [rbx+8], eax` at a library's address.
        let bytes = [0xf0, 0x01, 0x43, 0x08];
        let code = (0x7fff_f7a0_1234, 4, &bytes[..]);
        let ins = Decoder::with_ip(64, &bytes, code.0, DecoderOptions::NONE).decode();
        for k in GUARD_KINDS {
            assert_eq!(read_guard(&guard(k, 0x8102, code)), Some((k, 0x8102, ins)));
        }
        let p = Point { pc: 0x5655_5555_5129, thread: 1, instance: 7, site: 0x5655_5555_5300 };
        for anchor in [None, Some(3)] {
            let (q, a, s, i) = read_point_check(&point_check(&p, anchor, 0x30, code)).unwrap();
            assert_eq!((q.pc, q.thread, q.instance, q.site, a, s, i), (p.pc, p.thread, p.instance, p.site, anchor, 0x30, ins));
        }
        for hook in HEAP_KINDS.map(Hook::Enter).into_iter().chain([Hook::Return, Hook::JumpOut]) {
            assert_eq!(read_heap_site(&heap_site(hook, 0x100)), Some((hook, 0x100)));
        }
        assert_eq!(read_guard(&[9, 0, 0]), None, "an unknown kind");
        assert_eq!(read_guard(&guard(GuardKind::Ret, 0, (code.0, 4, &bytes[..3]))), None, "an instruction cut short");
    }

    /// An instruction a layout changed (`mov rax, [rip+d]` of a moved global; `mov rbx, rsp`
    /// into a `lea` beside rsp, longer) is its encoding, with the guest's address and length:
    /// the guard skips the guest's instruction.
    #[test]
    fn a_rewritten_instruction_keeps_its_change_and_its_length() {
        use rtgrind_jit::iced_x86::{Code, MemoryOperand, Mnemonic, Register};
        let (ip, to) = (0x40_1000u64, 0x40_4020u64);
        let guest = [0x48, 0x8b, 0x05, 0x10, 0x30, 0x00, 0x00];
        let mut ins = Decoder::with_ip(64, &guest, ip, DecoderOptions::NONE).decode();
        ins.set_memory_displacement64(to);
        let mut lea = Instruction::with2(Code::Lea_r64_m, Register::RBX, MemoryOperand::with_base_displ(Register::RSP, 8)).unwrap();
        lea.set_len(3);
        lea.set_ip(ip);
        for (ins, mnemonic, len) in [(ins, Mnemonic::Mov, 7), (lea, Mnemonic::Lea, 3)] {
            let (bytes, n) = code_of(&ins, true);
            let (_, _, back) = read_guard(&guard(GuardKind::Access, 0, (ip, ins.len() as u8, &bytes[..n]))).unwrap();
            assert_eq!((back.mnemonic(), back.ip(), back.next_ip()), (mnemonic, ip, ip + len));
            assert_eq!(back.memory_displacement64(), ins.memory_displacement64());
        }
    }
}
