//! The guest's initial stack as the kernel builds it: argc, argv, envp, the auxiliary
//! vector, and the strings and random bytes they point to.

use super::elf::LoadedProgram;
use crate::kernel::memory::{page_down, page_up, GuestMemory};

pub const STACK_SIZE: u64 = 8 << 20;
/// Unmapped guest memory kept on each side of the stack (the kernel keeps at least this much
/// between the stack and its mmap area).
const GUARD_GAP: u64 = 128 << 20;
/// Top of the guest stack (just under where the kernel puts it without ASLR).
const STACK_TOP: u64 = 0x7fff_ffff_f000;

/// The guest's initial stack: its pointer (at argc), and what the kernel shows of it in /proc:
/// the argument and environment strings' areas (`/proc/self/cmdline` and `environ` read them)
/// and the auxiliary vector (`/proc/self/auxv`).
pub struct InitialStack {
    pub rsp: u64,
    pub args: (u64, u64),
    pub env: (u64, u64),
    pub auxv: Vec<(u64, u64)>,
}

/// The area from the first of `strs` (at `at[0]`, the lowest) to the end of the last.
fn area(at: &[u64], strs: &[Vec<u8>]) -> (u64, u64) {
    match (at.first(), at.last(), strs.last()) {
        (Some(&lo), Some(&last), Some(s)) => (lo, last + s.len() as u64 + 1),
        _ => (0, 0),
    }
}

struct Writer {
    sp: u64,
}
impl Writer {
    fn push_bytes(&mut self, b: &[u8]) -> u64 {
        self.sp -= b.len() as u64;
        // SAFETY: sp stays within the freshly mapped guest stack (sizes are bounded by
        // ARG_MAX-like limits checked by the caller).
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), self.sp as *mut u8, b.len()) };
        self.sp
    }
    fn push_str(&mut self, s: &[u8]) -> u64 {
        let mut v = s.to_vec();
        v.push(0);
        self.push_bytes(&v)
    }
    fn push_u64(&mut self, v: u64) {
        self.push_bytes(&v.to_le_bytes());
    }
}

/// How far below the top of the stack a repeatable run's stack pointer starts: room for the
/// command's strings and a usual environment (larger environments move it by whole steps).
const FIXED_RESERVE: u64 = 256 << 10;

struct Strings {
    rand_p: u64,
    platform: u64,
    execfn_p: u64,
    argv_p: Vec<u64>,
    envp_p: Vec<u64>,
}

/// Pushes strings so that the first ends up lowest, as the kernel lays out argv and envp;
/// returns their addresses in the order given.
fn push_strs(w: &mut Writer, strs: &[Vec<u8>]) -> Vec<u64> {
    let mut p: Vec<u64> = strs.iter().rev().map(|s| w.push_str(s)).collect();
    p.reverse();
    p
}

pub fn build(
    prog: &LoadedProgram,
    mem: &mut GuestMemory,
    execfn: &[u8],
    argv: &[Vec<u8>],
    envp: &[Vec<u8>],
    random: [u8; 16],
    fixed: bool,
) -> std::io::Result<InitialStack> {
    let total: usize = argv.iter().chain(envp).map(|a| a.len() + 1).sum();
    if total > (STACK_SIZE / 4) as usize {
        return Err(std::io::Error::from_raw_os_error(libc::E2BIG));
    }
    let lo = match mem.reserve(STACK_TOP - STACK_SIZE, STACK_SIZE, true) {
        Ok(a) => {
            // (Below it, where the kernel leaves a gap before its mmap area, best effort.)
            let _ = mem.keep_free(a - GUARD_GAP, GUARD_GAP, true);
            a
        }
        // rtgrind's own stack has that place (a repeatable run re-executes rtgrind without
        // ASLR): the guest's goes where the kernel puts it, between gaps of guest memory that
        // nothing is mapped in, so an access far past either end of it faults as it would
        // natively instead of reaching rtgrind's code cache or heap next to it.
        Err(_) => mem.keep_free(0, GUARD_GAP + STACK_SIZE + GUARD_GAP, false)? + GUARD_GAP,
    };
    mem.map_anon_fixed(lo, STACK_SIZE, libc::PROT_READ | libc::PROT_WRITE, "[stack]")?;
    let top = lo + STACK_SIZE;
    let mut w = Writer { sp: top };
    w.push_u64(0);
    let strings = if fixed {
        // A repeatable run must not depend on the environment's size (a longer PWD, one more
        // variable): what the program computes from are placed first, at addresses fixed by the
        // command alone, and the stack pointer at a fixed distance below them; the environment's
        // strings fill the gap from above and its pointer array sits above the stack pointer.
        let rand_p = w.push_bytes(&random);
        let platform = w.push_str(b"x86_64");
        let execfn_p = w.push_str(execfn);
        let argv_p = push_strs(&mut w, argv);
        let envp_p = push_strs(&mut w, envp);
        Strings { rand_p, platform, execfn_p, argv_p, envp_p }
    } else {
        let execfn_p = w.push_str(execfn);
        let envp_p = push_strs(&mut w, envp);
        let argv_p = push_strs(&mut w, argv);
        let platform = w.push_str(b"x86_64");
        let rand_p = w.push_bytes(&random);
        Strings { rand_p, platform, execfn_p, argv_p, envp_p }
    };
    let Strings { rand_p, platform, execfn_p, argv_p, envp_p } = strings;
    w.sp &= !15;
    let auxv = auxiliary_vector(prog, rand_p, execfn_p, platform);

    let words = 1 + argv_p.len() + 1 + envp_p.len() + 1 + auxv.len() * 2;
    if fixed {
        // The arrays end where they must so that the stack pointer lands on the fixed spot; a
        // gap between them and the strings is allowed (the ABI only orders the arrays).
        let mut rsp = (top - FIXED_RESERVE) & !15;
        while rsp + (words as u64) * 8 > w.sp && rsp > lo + STACK_SIZE / 2 {
            rsp -= FIXED_RESERVE;
        }
        unmap_the_gap(mem, rsp + (words as u64) * 8, w.sp, top)?;
        w.sp = rsp + (words as u64) * 8;
    } else if words % 2 == 1 {
        w.push_u64(0);
    }
    for &(k, v) in auxv.iter().rev() {
        w.push_u64(v);
        w.push_u64(k);
    }
    w.push_u64(0);
    for &p in envp_p.iter().rev() {
        w.push_u64(p);
    }
    w.push_u64(0);
    for &p in argv_p.iter().rev() {
        w.push_u64(p);
    }
    w.push_u64(argv.len() as u64);
    debug_assert_eq!(w.sp % 16, 0);
    if fixed && w.sp < lo + STACK_SIZE / 2 {
        return Err(std::io::Error::from_raw_os_error(libc::E2BIG));
    }
    Ok(InitialStack { rsp: w.sp, args: area(&argv_p, argv), env: area(&envp_p, envp), auxv })
}

/// A repeatable run's gap between the arrays (ending at `arrays_end`) and the strings (from
/// `strings`) is left unmapped, but for as many bytes above the arrays as the strings take:
/// natively the stack ends right above the strings, so a store running up the stack past the
/// arrays faults that far above them (in the copy that overflows), not 256 KiB further.
fn unmap_the_gap(mem: &mut GuestMemory, arrays_end: u64, strings: u64, top: u64) -> std::io::Result<()> {
    let (from, to) = (page_up(arrays_end + (top - strings)), page_down(strings));
    if from < to {
        mem.guest_munmap(from, to - from);
        mem.keep_free(from, to - from, true)?;
    }
    Ok(())
}

/// The auxiliary vector the kernel would give the program (the host's values where they are
/// the machine's), the vDSO hidden and the gs base the engine's.
fn auxiliary_vector(prog: &LoadedProgram, rand_p: u64, execfn_p: u64, platform: u64) -> Vec<(u64, u64)> {
    // SAFETY: getauxval has no preconditions.
    let aux = |t| unsafe { libc::getauxval(t) };
    const HWCAP2_FSGSBASE: u64 = 1 << 1;
    let mut auxv: Vec<(u64, u64)> = vec![
        (libc::AT_HWCAP, aux(libc::AT_HWCAP)),
        (libc::AT_PAGESZ, 4096),
        (libc::AT_CLKTCK, aux(libc::AT_CLKTCK)),
        (libc::AT_PHDR, prog.main.phdr),
        (libc::AT_PHENT, 56),
        (libc::AT_PHNUM, prog.main.phnum),
        (libc::AT_BASE, prog.interp.as_ref().map_or(0, |i| i.bias)),
        (libc::AT_FLAGS, 0),
        (libc::AT_ENTRY, prog.main.entry),
        (libc::AT_UID, aux(libc::AT_UID)),
        (libc::AT_EUID, aux(libc::AT_EUID)),
        (libc::AT_GID, aux(libc::AT_GID)),
        (libc::AT_EGID, aux(libc::AT_EGID)),
        (libc::AT_SECURE, 0),
        (libc::AT_RANDOM, rand_p),
        // The guest must not think it may write the gs base: the engine owns gs.
        (libc::AT_HWCAP2, aux(libc::AT_HWCAP2) & !HWCAP2_FSGSBASE),
        (libc::AT_EXECFN, execfn_p),
        (libc::AT_PLATFORM, platform),
    ];
    let minsig = aux(51); // AT_MINSIGSTKSZ
    if minsig != 0 {
        auxv.push((51, minsig));
    }
    // No AT_SYSINFO_EHDR: the vDSO is hidden, so glibc makes real (visible) syscalls.
    auxv.push((libc::AT_NULL, 0));
    auxv
}
