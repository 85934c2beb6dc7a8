//! Status-flag origins nobody reads. In a traced run every flag-writing instruction would
//! store the origin of the flags it writes, yet almost always the only reader is the next
//! conditional branch, which in a library uses no origin (only the program's branches are
//! remembered for the crash analysis). Looking a few instructions ahead at translation time
//! finds those cases: a `cmp` or `test` then needs no origin code at all.

use crate::tools::decode_code;
use rtgrind_jit::iced_x86::{ConditionCode, FlowControl, Instruction, Mnemonic, OpKind};
use rtgrind_jit::instrument::InsnSite;

const STATUS: u32 = 0x3f; // iced RflagsBits OF SF ZF AF CF PF

/// Instructions looked at from one flag writer, over all paths.
const LOOKAHEAD: u32 = 16;

fn written(ins: &Instruction) -> u32 {
    (ins.rflags_written() | ins.rflags_cleared() | ins.rflags_set()) & STATUS
}

/// Whether the origin of the status flags `ins` writes is never read: on every path from it
/// the flags are written again before anything reads them, except conditional branches
/// that `uses_origin` says take no origin (followed both ways), through direct jumps, or
/// the path reaches a call or a return (the ABI passes nothing in the flags, and compilers
/// keep nothing in them across a call). A path that leaves the look-ahead otherwise (an
/// indirect jump, a syscall, too far) counts as a reader. The instructions come from the
/// block's decoded code where they are in it, else are decoded here.
pub fn flags_origin_unread(site: &InsnSite, uses_origin: &dyn Fn(&Instruction) -> bool) -> bool {
    let pending = written(site.ins);
    let at = |pc: u64| site.decoded_at(pc).copied().or_else(|| decode_code(pc));
    pending != 0 && unread_from(site.ins.next_ip(), pending, LOOKAHEAD, &Look { at: &at, uses_origin })
}

/// Where the look-ahead gets instructions, and which branches use the flags' origin.
struct Look<'a> {
    at: &'a dyn Fn(u64) -> Option<Instruction>,
    uses_origin: &'a dyn Fn(&Instruction) -> bool,
}

fn unread_from(mut pc: u64, mut pending: u32, mut budget: u32, look: &Look) -> bool {
    let uses_origin = look.uses_origin;
    loop {
        if budget == 0 {
            return false;
        }
        budget -= 1;
        let Some(j) = (look.at)(pc) else { return false };
        let branch = j.flow_control() == FlowControl::ConditionalBranch;
        let reads = j.rflags_read() & pending != 0;
        if reads && (!branch || j.condition_code() == ConditionCode::None || uses_origin(&j)) {
            return false;
        }
        if !reads {
            pending &= !written(&j);
            if pending == 0 {
                return true;
            }
        }
        match j.flow_control() {
            FlowControl::Next if !matches!(j.mnemonic(), Mnemonic::Syscall | Mnemonic::Cpuid) => pc = j.next_ip(),
            FlowControl::UnconditionalBranch if j.op0_kind() == OpKind::NearBranch64 => pc = j.near_branch_target(),
            FlowControl::Call | FlowControl::IndirectCall | FlowControl::Return => return true,
            FlowControl::ConditionalBranch if j.op0_kind() == OpKind::NearBranch64 => {
                let half = budget / 2;
                return unread_from(j.near_branch_target(), pending, half, look) && unread_from(j.next_ip(), pending, half, look);
            }
            _ => return false,
        }
    }
}
