//! Test support: whether a function a tool runs in a light call-out
//! (`rtgrind_jit::instrument::Inline::callout_light`) keeps to what that call-out preserves.
//! It saves only the general registers a function may clobber, the flags and xmm0-15, and
//! leaves the guest's `fs` base in place; so the function, and everything it calls, must not
//! touch the upper halves of the vector registers, zmm16-31, mask or x87 registers, nor
//! thread-local storage (`fs:`), nor call the C library (its `memcpy` uses the wide registers,
//! its allocator thread-local storage) or make system calls. The check reads the test
//! process's own code (its symbol table for function bounds) and follows every direct call and
//! tail jump.

use goblin::elf::{program_header::PT_PHDR, Elf};
use rtgrind_jit::iced_x86::{Decoder, DecoderOptions, FlowControl, Instruction, Mnemonic, OpKind, Register};
use std::collections::{BTreeSet, HashMap};

/// Core's diverging failure paths (index out of bounds, a failed `unwrap`): they never return
/// to the guest (the process aborts: `panic = "abort"`), so what they use does not matter.
fn diverges(name: &str) -> bool {
    // (Both manglings: legacy `_ZN4core9panicking...`, v0 `_RNvNtCs..._4core9panicking...`.)
    ["4core9panicking", "4core5slice5index", "4core6option13expect_failed", "4core6option13unwrap_failed", "4core6result13unwrap_failed"]
        .iter()
        .any(|p| name.contains(p))
}

/// What the register does to the contract, if anything.
fn forbidden(r: Register) -> Option<&'static str> {
    if r.is_ymm() || r.is_zmm() {
        Some("a wide vector register")
    } else if r.is_xmm() && r.number() - Register::XMM0.number() >= 16 {
        Some("xmm16-31")
    } else if r.is_k() {
        Some("a mask register")
    } else if r.is_st() {
        Some("an x87 register")
    } else {
        None
    }
}

/// The contract's breaches in `f` and what it calls, each "function: what" (none: it keeps it).
pub fn breaches(f: usize) -> Vec<String> {
    let bytes = std::fs::read("/proc/self/exe").expect("the test binary");
    let elf = Elf::parse(&bytes).expect("an ELF test binary");
    // The load bias: where the program headers are against where the file says.
    let phdr = elf.program_headers.iter().find(|p| p.p_type == PT_PHDR).map_or(0, |p| p.p_vaddr);
    // SAFETY: getauxval reads the process's auxiliary vector.
    let bias = (unsafe { libc::getauxval(libc::AT_PHDR) } as u64).wrapping_sub(phdr);
    let functions: HashMap<u64, (u64, String)> = elf
        .syms
        .iter()
        .filter(|s| s.is_function() && s.st_size > 0)
        .map(|s| (s.st_value.wrapping_add(bias), (s.st_size, elf.strtab.get_at(s.st_name).unwrap_or("?").to_string())))
        .collect();
    // The names of the slots calls through the GOT go by (the functions of shared libraries).
    let slots: HashMap<u64, String> = elf
        .dynrelas
        .iter()
        .chain(elf.pltrelocs.iter())
        .filter_map(|r| Some((r.r_offset.wrapping_add(bias), elf.dynstrtab.get_at(elf.dynsyms.get(r.r_sym)?.st_name)?.to_string())))
        .collect();
    let mut todo = vec![(f as u64, None)];
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    while let Some((at, slot)) = todo.pop() {
        if !seen.insert(at) {
            continue;
        }
        let Some((size, name)) = functions.get(&at) else {
            let callee = slot.and_then(|s| slots.get(&s)).map_or("a PLT stub", String::as_str);
            out.push(format!("{at:#x}: called, and not a function of rtgrind's ({callee}: the C library or another shared object)"));
            continue;
        };
        if diverges(name) {
            continue;
        }
        // SAFETY: the function's code, in this process's mapped text (read and execute).
        let code = unsafe { std::slice::from_raw_parts(at as *const u8, *size as usize) };
        let mut decoder = Decoder::with_ip(64, code, at, DecoderOptions::NONE);
        let mut ins = Instruction::default();
        while decoder.can_decode() {
            decoder.decode_out(&mut ins);
            let mut breach = |what: String| out.push(format!("{name}: {what} at {:#x}", ins.ip()));
            match ins.flow_control() {
                FlowControl::Call | FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch if matches!(ins.op0_kind(), OpKind::NearBranch64) => {
                    let target = ins.near_branch_target();
                    // (A jump out of the function is a tail call.)
                    if ins.flow_control() == FlowControl::Call || !(at..at + size).contains(&target) {
                        todo.push((target, None));
                    }
                }
                FlowControl::IndirectCall | FlowControl::IndirectBranch if ins.is_ip_rel_memory_operand() => {
                    // Through a GOT slot (resolved: the test process has run).
                    let slot = ins.ip_rel_memory_address();
                    // SAFETY: a GOT slot of this process, mapped and read-only or read-write.
                    todo.push((unsafe { *(slot as *const u64) }, Some(slot)));
                }
                FlowControl::IndirectCall => breach(format!("an indirect call (cannot be followed): {ins}")),
                _ => {}
            }
            if matches!(ins.mnemonic(), Mnemonic::Syscall | Mnemonic::Xsave | Mnemonic::Xrstor | Mnemonic::Vzeroupper) {
                breach(format!("`{:?}`", ins.mnemonic()));
            }
            if ins.memory_segment() == Register::FS && (0..ins.op_count()).any(|i| ins.op_kind(i) == OpKind::Memory) {
                breach("thread-local storage (fs:)".into());
            }
            for i in 0..ins.op_count() {
                if ins.op_kind(i) == OpKind::Register {
                    if let Some(what) = forbidden(ins.op_register(i)) {
                        breach(what.into());
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check finds what it looks for: a function that calls the C library, and one that
    /// allocates (thread-local storage and the C library, through Rust's allocator).
    #[test]
    fn the_check_sees_a_library_call_and_an_allocation() {
        extern "C" fn copies(a: *mut u8, b: *const u8, n: usize) {
            // SAFETY: never called (only its code is read).
            unsafe { libc::memcpy(a.cast(), b.cast(), n) };
        }
        extern "C" fn allocates(n: usize) -> usize {
            std::hint::black_box(vec![1u8; n]).len()
        }
        assert!(!breaches(copies as *const () as usize).is_empty());
        assert!(!breaches(allocates as *const () as usize).is_empty());
    }
}
