//! Where a faulting address came from (issue 21, item 2; the dissertation's Fig. 5.2: "identify
//! the last definitions of both" base and index). Origins follow a computation's most recent
//! source, so `p[k]` with a wild `p` and a `k` set just before carries only `k`'s origin. At the
//! crash, the straight-line code before the faulting instruction is decoded again (from its
//! function's start, so instruction boundaries are sure) and followed backwards from the
//! address registers to the memory loads they were computed from (frame slots, whose addresses
//! the frame and stack pointers still give, and globals). The loaded values then say which part went wrong:
//! a pointer that points nowhere, else the indexes that took a good pointer out of bounds.

use rtgrind_jit::iced_x86::{Decoder, DecoderOptions, FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpAccess, OpKind, Register};

/// A load the address was computed from: its address, its size, the value there now, and
/// whether it was a frame slot (an address from rbp).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Load {
    pub addr: u64,
    pub size: usize,
    pub value: u64,
    pub frame: bool,
}

/// How far back a slice looks (instructions).
const MAX_BACK: usize = 32;

/// The loads the registers `wanted` (full registers) had their values from at `pc`, decoding
/// `func` (its start and end) with `read` and taking rbp and rsp from `regs` (guest values at
/// the crash). Empty where the code before `pc` is not straight-line or is not understood.
pub(super) fn loads_behind(pc: u64, func: (u64, u64), regs: &[u64; 16], wanted: &[Register], read: &dyn Fn(u64, usize) -> Option<Vec<u8>>) -> Vec<Load> {
    let Some(code) = read(func.0, (func.1 - func.0).min(1 << 16) as usize) else { return Vec::new() };
    let mut dec = Decoder::with_ip(64, &code, func.0, DecoderOptions::NONE);
    let mut before: Vec<Instruction> = Vec::new();
    let mut targets: Vec<u64> = Vec::new();
    while dec.can_decode() {
        let ins = dec.decode();
        if ins.ip() >= pc {
            if ins.ip() != pc {
                return Vec::new();
            }
            break;
        }
        if matches!(ins.flow_control(), FlowControl::ConditionalBranch | FlowControl::UnconditionalBranch) && ins.op0_kind() == OpKind::NearBranch64 {
            targets.push(ins.near_branch_target());
        }
        before.push(ins);
    }
    let mut need: Vec<Register> = wanted.iter().map(|r| r.full_register()).filter(|r| r.is_gpr64() && *r != Register::RSP && *r != Register::RBP).collect();
    let mut loads = Vec::new();
    let mut info = InstructionInfoFactory::new();
    for ins in before.iter().rev().take(MAX_BACK) {
        if need.is_empty() || ins.flow_control() != FlowControl::Next {
            break;
        }
        let used = info.info(ins);
        let writes: Vec<Register> = used
            .used_registers()
            .iter()
            .filter(|u| matches!(u.access(), OpAccess::Write | OpAccess::ReadWrite | OpAccess::CondWrite | OpAccess::ReadCondWrite))
            .map(|u| u.register().full_register())
            .collect();
        // The frame or stack pointer moved: addresses from them would be wrong further back.
        if writes.iter().any(|r| matches!(r, Register::RSP | Register::RBP)) {
            break;
        }
        let hit: Vec<Register> = need.iter().copied().filter(|r| writes.contains(r)).collect();
        if !hit.is_empty() {
            need.retain(|r| !hit.contains(r));
            let mem = used.used_memory().iter().find(|m| m.access() == OpAccess::Read).copied();
            match mem {
                // A load from a frame slot: one of the places the address came from.
                Some(m) if matches!(m.base(), Register::RBP | Register::RSP | Register::RIP | Register::None) && m.index() == Register::None => {
                    // (A global's address: iced gives a rip-relative displacement resolved.)
                    let base = if matches!(m.base(), Register::RBP | Register::RSP) { regs[m.base().number() - Register::RAX.number()] } else { 0 };
                    let addr = base.wrapping_add(m.displacement());
                    let size = m.memory_size().size().clamp(1, 8);
                    let value = read(addr, size).map_or(0, |b| b.iter().rev().fold(0u64, |v, &x| v << 8 | u64::from(x)));
                    loads.push(Load { addr, size, value, frame: m.base() == Register::RBP });
                }
                // Another load (through a pointer): not followed further.
                Some(_) => {}
                // A computation: what it read is needed instead.
                None => {
                    if ins.mnemonic() != Mnemonic::Xor || ins.op0_register() != ins.op1_register() {
                        for u in used.used_registers() {
                            let r = u.register().full_register();
                            if matches!(u.access(), OpAccess::Read | OpAccess::ReadWrite | OpAccess::CondRead)
                                && r.is_gpr64()
                                && !matches!(r, Register::RSP | Register::RBP)
                                && !need.contains(&r)
                            {
                                need.push(r);
                            }
                        }
                    }
                }
            }
        }
        // Straight-line code only: an instruction some jump lands on ends the slice.
        if targets.contains(&ins.ip()) {
            break;
        }
    }
    loads
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sum += r.p[k]` as gcc -O0 builds it: `k` at [rbp-4], `r.p` at [rbp-10h].
    #[test]
    fn an_indexed_access_is_traced_to_its_pointer_and_its_index() {
        let code: Vec<u8> = vec![
            0x55, // push rbp
            0x48, 0x89, 0xe5, // mov rbp, rsp
            0x8b, 0x45, 0xfc, // mov eax, [rbp-4]
            0x48, 0x98, // cdqe
            0x48, 0x8d, 0x14, 0x85, 0, 0, 0, 0, // lea rdx, [rax*4]
            0x48, 0x8b, 0x45, 0xf0, // mov rax, [rbp-10h]
            0x48, 0x01, 0xd0, // add rax, rdx
            0x8b, 0x00, // mov eax, [rax]   <- the fault
        ];
        let start = 0x1000u64;
        let fault = start + code.len() as u64 - 2;
        let rbp = 0x7000_0100u64;
        let mut regs = [0u64; 16];
        regs[5] = rbp;
        let read = |a: u64, n: usize| -> Option<Vec<u8>> {
            if (start..start + code.len() as u64).contains(&a) {
                return Some(code[(a - start) as usize..].iter().copied().take(n).collect());
            }
            // The frame: k = 2 at rbp-4, p = 0x700000007 at rbp-16.
            match a {
                a if a == rbp - 4 => Some(2u32.to_le_bytes()[..n.min(4)].to_vec()),
                a if a == rbp - 16 => Some(0x7_0000_0007u64.to_le_bytes()[..n.min(8)].to_vec()),
                _ => None,
            }
        };
        let loads = loads_behind(fault, (start, start + code.len() as u64), &regs, &[Register::RAX], &read);
        assert_eq!(loads, vec![Load { addr: rbp - 16, size: 8, value: 0x7_0000_0007, frame: true }, Load { addr: rbp - 4, size: 4, value: 2, frame: true }]);
    }
}
