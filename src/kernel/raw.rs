//! The raw `syscall` instruction: results as the kernel returns them (negative errno), with
//! none of libc's errno handling, so they can be handed to the guest unchanged.

/// # Safety
/// The caller must have checked that the syscall cannot touch rtgrind's own memory or state
/// in ways the runtime does not expect (pass-through syscalls act on guest memory only).
pub unsafe fn syscall6(nr: u64, a: [u64; 6]) -> i64 {
    let ret: i64;
    // SAFETY: per the function contract.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") nr as i64 => ret,
            in("rdi") a[0], in("rsi") a[1], in("rdx") a[2],
            in("r10") a[3], in("r8") a[4], in("r9") a[5],
            lateout("rcx") _, lateout("r11") _,
            options(nostack),
        );
    }
    ret
}
