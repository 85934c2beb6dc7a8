//! Entry into and exit from the code cache: the only code that switches between host and
//! guest register state.
//!
//! Design. Translated code runs with every guest GPR, the guest's flags, vector registers and
//! `fs` base live in the real machine state; the engine keeps only `gs`, whose base is the
//! thread's [`ThreadContext`]. `rtg_enter` saves the host's callee-saved registers on the host
//! stack, loads the guest state from the context and jumps to a translation. Translations
//! leave through stubs that write an exit id into the context and jump to
//! `rtg_exit`, which stores the guest state back (switching to the host stack before it
//! touches any stack, so the guest's red zone is never written), restores the host `fs` and
//! returns from `rtg_enter`. A synchronous fault in translated code is turned into the same
//! kind of return by the signal handler: it copies the guest registers from the signal frame
//! into the context and resumes at `rtg_fault_resume`, the second half of `rtg_exit`.
//!
//! The host signal handler entry `rtg_signal_entry` is also here because it must restore the
//! host `fs` before any Rust code runs: the kernel does not switch `fs` on signal delivery, so
//! a signal taken inside the cache arrives with the guest's TLS pointer loaded.

use crate::context::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The call-outs' saves of the registers a called function may clobber (and rbx, which the
/// stubs use to keep the stack pointer) to `ThreadContext::callout_regs`, with the guest's
/// stack pointer; and their restores, the stack pointer last, then the jump back to the
/// translated code. The full call-out adds the callee-saved registers (a tool's function may
/// read or change any guest register there).
macro_rules! save_volatile {
    () => {
        concat!(
            "mov gs:[{cregs}+0], rax\n",
            "mov gs:[{cregs}+8], rcx\n",
            "mov gs:[{cregs}+16], rdx\n",
            "mov gs:[{cregs}+24], rbx\n",
            "mov gs:[{cregs}+32], rsp\n",
            "mov gs:[{cregs}+48], rsi\n",
            "mov gs:[{cregs}+56], rdi\n",
            "mov gs:[{cregs}+64], r8\n",
            "mov gs:[{cregs}+72], r9\n",
            "mov gs:[{cregs}+80], r10\n",
            "mov gs:[{cregs}+88], r11",
        )
    };
}
macro_rules! restore_volatile {
    () => {
        concat!(
            "mov rax, gs:[{cregs}+0]\n",
            "mov rcx, gs:[{cregs}+8]\n",
            "mov rdx, gs:[{cregs}+16]\n",
            "mov rbx, gs:[{cregs}+24]\n",
            "mov rsi, gs:[{cregs}+48]\n",
            "mov rdi, gs:[{cregs}+56]\n",
            "mov r8, gs:[{cregs}+64]\n",
            "mov r9, gs:[{cregs}+72]\n",
            "mov r10, gs:[{cregs}+80]\n",
            "mov r11, gs:[{cregs}+88]\n",
            "mov rsp, gs:[{cregs}+32]\n",
            "jmp qword ptr gs:[{cret}]",
        )
    };
}

std::arch::global_asm!(
    ".text",
    ".p2align 4",
    ".globl rtg_enter",
    "rtg_enter:",
    "push rbx", "push rbp", "push r12", "push r13", "push r14", "push r15",
    "mov gs:[{host_rsp}], rsp",
    "cmp qword ptr gs:[{pending}], 0",
    "jne 3f",
    "mov eax, {mask}", "xor edx, edx",
    "xrstor64 gs:[{xsave}]",
    "cmp qword ptr gs:[{qx}], 0",
    "je 4f",
    "vmovq xmm16, qword ptr gs:[{quantum}]",
    "vpternlogq xmm17, xmm17, xmm17, 0xff",
    "vpsrldq xmm17, xmm17, 8",
    "vmovq xmm18, qword ptr gs:[{counter}]",
    "4:",
    "mov rax, gs:[{fs}]",
    "wrfsbase rax",
    "push qword ptr gs:[{rflags}]",
    "popfq",
    "mov rax, gs:[{gpr}+0]",
    "mov rcx, gs:[{gpr}+8]",
    "mov rdx, gs:[{gpr}+16]",
    "mov rbx, gs:[{gpr}+24]",
    "mov rbp, gs:[{gpr}+40]",
    "mov rsi, gs:[{gpr}+48]",
    "mov rdi, gs:[{gpr}+56]",
    "mov r8, gs:[{gpr}+64]",
    "mov r9, gs:[{gpr}+72]",
    "mov r10, gs:[{gpr}+80]",
    "mov r11, gs:[{gpr}+88]",
    "mov r12, gs:[{gpr}+96]",
    "mov r13, gs:[{gpr}+104]",
    "mov r14, gs:[{gpr}+112]",
    "mov r15, gs:[{gpr}+120]",
    "mov rsp, gs:[{gpr}+32]",
    "jmp qword ptr gs:[{entry}]",
    "3:",
    "mov dword ptr gs:[{exit_id}], {pending_id}",
    "pop r15", "pop r14", "pop r13", "pop r12", "pop rbp", "pop rbx",
    "ret",
    "",
    ".p2align 4",
    ".globl rtg_exit",
    "rtg_exit:",
    "mov gs:[{gpr}+0], rax",
    "mov gs:[{gpr}+8], rcx",
    "mov gs:[{gpr}+16], rdx",
    "mov gs:[{gpr}+24], rbx",
    "mov gs:[{gpr}+32], rsp",
    "mov gs:[{gpr}+40], rbp",
    "mov gs:[{gpr}+48], rsi",
    "mov gs:[{gpr}+56], rdi",
    "mov gs:[{gpr}+64], r8",
    "mov gs:[{gpr}+72], r9",
    "mov gs:[{gpr}+80], r10",
    "mov gs:[{gpr}+88], r11",
    "mov gs:[{gpr}+96], r12",
    "mov gs:[{gpr}+104], r13",
    "mov gs:[{gpr}+112], r14",
    "mov gs:[{gpr}+120], r15",
    "mov rsp, gs:[{host_rsp}]",
    "pushfq",
    "pop qword ptr gs:[{rflags}]",
    ".globl rtg_fault_resume",
    "rtg_fault_resume:",
    "mov rsp, gs:[{host_rsp}]",
    "cmp qword ptr gs:[{qx}], 0",
    "je 5f",
    "vmovq qword ptr gs:[{quantum}], xmm16",
    "vmovq qword ptr gs:[{counter}], xmm18",
    "5:",
    "rdfsbase rax",
    "mov gs:[{fs}], rax",
    "mov rax, gs:[{host_fs}]",
    "wrfsbase rax",
    "mov eax, {mask}", "xor edx, edx",
    "xsave64 gs:[{xsave}]",
    "cld",
    "vzeroupper",
    "push 0x1f80",
    "ldmxcsr [rsp]",
    "add rsp, 8",
    "pop r15", "pop r14", "pop r13", "pop r12", "pop rbp", "pop rbx",
    "ret",
    "",
    ".p2align 4",
    ".globl rtg_ibl_miss",
    "rtg_ibl_miss:",
    "mov gs:[{next_rip}], rdx",
    "mov dword ptr gs:[{exit_id}], {ibl_miss_id}",
    "mov rcx, gs:[{save_rcx}]",
    "mov rdx, gs:[{save_rdx}]",
    "jmp rtg_exit",
    "",
    ".p2align 4",
    // An empty slot's value. A lookup lands here with the target still in rdx when its key
    // matched just before a signal handler emptied the table (`ibl_clear`): a miss.
    ".globl rtg_ibl_null",
    "rtg_ibl_null:",
    "jmp rtg_ibl_miss",
    "",
    ".p2align 4",
    ".globl rtg_signal_entry",
    "rtg_signal_entry:",
    "rdfsbase rax",
    "push rax",
    "rdgsbase rcx",
    "test rcx, rcx",
    "jz 2f",
    "mov rcx, gs:[{host_fs}]",
    "wrfsbase rcx",
    "2:",
    "call {handler}",
    "pop rax",
    "wrfsbase rax",
    "ret",
    ".p2align 4",
    ".globl rtg_sigreturn",
    "rtg_sigreturn:",
    "mov eax, 15",
    "syscall",
    "ud2",
    ".p2align 4",
    ".globl rtg_callout",
    "rtg_callout:",
    save_volatile!(),
    "mov gs:[{cregs}+40], rbp",
    "mov gs:[{cregs}+96], r12",
    "mov gs:[{cregs}+104], r13",
    "mov gs:[{cregs}+112], r14",
    "mov gs:[{cregs}+120], r15",
    // Run Rust on the host stack below rtg_enter's frame, with the host fs and default
    // MXCSR; the guest's vector state goes to the context's xsave area, which holds nothing
    // while the thread is inside the cache.
    // Flags first: nothing before the pushfq may change them.
    "mov rsp, gs:[{host_rsp}]",
    "lea rsp, [rsp-256]",
    "pushfq",
    "mov rbx, rsp",
    "and rsp, -16",
    "mov rax, [rbx]",
    "mov gs:[{cflags}], rax",
    "rdfsbase rax",
    "mov gs:[{cfs}], rax",
    "mov rax, gs:[{host_fs}]",
    "wrfsbase rax",
    // The guest's vector registers: only what Rust code and the C library functions it
    // calls may clobber (xmm0-15, with their upper halves where the guest has them in use,
    // and MXCSR), by plain moves: `xsaveopt`/`xrstor` of the x87, SSE and AVX state were
    // about 105 ns of a 150 ns call-out (issue 30). The x87 registers are no callee's (Rust
    // code and the string, memory, allocation and I/O functions of the C library use none);
    // xmm16-31 and the mask registers hold nothing of the guest's (its CPUID hides
    // AVX-512) and the engine's counters are stored below and loaded back.
    "stmxcsr gs:[{cmxcsr}]",
    "mov qword ptr gs:[{cwide}], 1",
    "cmp qword ptr gs:[{xknown}], 0",
    "je 8f",
    "mov ecx, 1",
    "xgetbv",
    "test al, 4",
    "jnz 8f",
    "mov qword ptr gs:[{cwide}], 0",
    "movups gs:[{cvec}+0], xmm0",
    "movups gs:[{cvec}+16], xmm1",
    "movups gs:[{cvec}+32], xmm2",
    "movups gs:[{cvec}+48], xmm3",
    "movups gs:[{cvec}+64], xmm4",
    "movups gs:[{cvec}+80], xmm5",
    "movups gs:[{cvec}+96], xmm6",
    "movups gs:[{cvec}+112], xmm7",
    "movups gs:[{cvec}+128], xmm8",
    "movups gs:[{cvec}+144], xmm9",
    "movups gs:[{cvec}+160], xmm10",
    "movups gs:[{cvec}+176], xmm11",
    "movups gs:[{cvec}+192], xmm12",
    "movups gs:[{cvec}+208], xmm13",
    "movups gs:[{cvec}+224], xmm14",
    "movups gs:[{cvec}+240], xmm15",
    "jmp 9f",
    "8:",
    "vmovdqu gs:[{cvec}+0], ymm0",
    "vmovdqu gs:[{cvec}+32], ymm1",
    "vmovdqu gs:[{cvec}+64], ymm2",
    "vmovdqu gs:[{cvec}+96], ymm3",
    "vmovdqu gs:[{cvec}+128], ymm4",
    "vmovdqu gs:[{cvec}+160], ymm5",
    "vmovdqu gs:[{cvec}+192], ymm6",
    "vmovdqu gs:[{cvec}+224], ymm7",
    "vmovdqu gs:[{cvec}+256], ymm8",
    "vmovdqu gs:[{cvec}+288], ymm9",
    "vmovdqu gs:[{cvec}+320], ymm10",
    "vmovdqu gs:[{cvec}+352], ymm11",
    "vmovdqu gs:[{cvec}+384], ymm12",
    "vmovdqu gs:[{cvec}+416], ymm13",
    "vmovdqu gs:[{cvec}+448], ymm14",
    "vmovdqu gs:[{cvec}+480], ymm15",
    "9:",
    // (Rust's SSE code runs without the upper halves' state in use.)
    "vzeroupper",
    "cld",
    "push 0x1f80",
    "ldmxcsr [rsp]",
    "add rsp, 8",
    "cmp qword ptr gs:[{qx}], 0",
    "je 6f",
    "vmovq qword ptr gs:[{quantum}], xmm16",
    "vmovq qword ptr gs:[{counter}], xmm18",
    "6:",
    "mov rdi, gs:[{self_ptr}]",
    "mov rsi, gs:[{carg}]",
    "call qword ptr gs:[{cfn}]",
    // The upper halves back to their initial state (the guest's were, or are loaded whole).
    "vzeroupper",
    "cmp qword ptr gs:[{cwide}], 0",
    "jne 10f",
    "movups xmm0, gs:[{cvec}+0]",
    "movups xmm1, gs:[{cvec}+16]",
    "movups xmm2, gs:[{cvec}+32]",
    "movups xmm3, gs:[{cvec}+48]",
    "movups xmm4, gs:[{cvec}+64]",
    "movups xmm5, gs:[{cvec}+80]",
    "movups xmm6, gs:[{cvec}+96]",
    "movups xmm7, gs:[{cvec}+112]",
    "movups xmm8, gs:[{cvec}+128]",
    "movups xmm9, gs:[{cvec}+144]",
    "movups xmm10, gs:[{cvec}+160]",
    "movups xmm11, gs:[{cvec}+176]",
    "movups xmm12, gs:[{cvec}+192]",
    "movups xmm13, gs:[{cvec}+208]",
    "movups xmm14, gs:[{cvec}+224]",
    "movups xmm15, gs:[{cvec}+240]",
    "jmp 11f",
    "10:",
    "vmovdqu ymm0, gs:[{cvec}+0]",
    "vmovdqu ymm1, gs:[{cvec}+32]",
    "vmovdqu ymm2, gs:[{cvec}+64]",
    "vmovdqu ymm3, gs:[{cvec}+96]",
    "vmovdqu ymm4, gs:[{cvec}+128]",
    "vmovdqu ymm5, gs:[{cvec}+160]",
    "vmovdqu ymm6, gs:[{cvec}+192]",
    "vmovdqu ymm7, gs:[{cvec}+224]",
    "vmovdqu ymm8, gs:[{cvec}+256]",
    "vmovdqu ymm9, gs:[{cvec}+288]",
    "vmovdqu ymm10, gs:[{cvec}+320]",
    "vmovdqu ymm11, gs:[{cvec}+352]",
    "vmovdqu ymm12, gs:[{cvec}+384]",
    "vmovdqu ymm13, gs:[{cvec}+416]",
    "vmovdqu ymm14, gs:[{cvec}+448]",
    "vmovdqu ymm15, gs:[{cvec}+480]",
    "11:",
    "ldmxcsr gs:[{cmxcsr}]",
    "cmp qword ptr gs:[{qx}], 0",
    "je 7f",
    "vmovq xmm16, qword ptr gs:[{quantum}]",
    "vpternlogq xmm17, xmm17, xmm17, 0xff",
    "vpsrldq xmm17, xmm17, 8",
    "vmovq xmm18, qword ptr gs:[{counter}]",
    "7:",
    "mov rax, gs:[{cfs}]",
    "wrfsbase rax",
    "mov rsp, rbx",
    "popfq",
    "mov rbp, gs:[{cregs}+40]",
    "mov r12, gs:[{cregs}+96]",
    "mov r13, gs:[{cregs}+104]",
    "mov r14, gs:[{cregs}+112]",
    "mov r15, gs:[{cregs}+120]",
    restore_volatile!(),
    "",
    // A light call-out: the function promises to use no vector register beyond xmm0-15, no
    // thread-local and no C library function, so only the registers the ABI lets it clobber,
    // the flags and xmm0-15 are kept (no xsave, no fs switch, no quantum spill).
    ".p2align 4",
    ".globl rtg_callout_light",
    "rtg_callout_light:",
    save_volatile!(),
"mov rsp, gs:[{host_rsp}]",
    "lea rsp, [rsp-256]",
    "pushfq",
    "mov rbx, rsp",
    "and rsp, -16",
    "cld",
    "sub rsp, 256",
    "movaps [rsp+0], xmm0",
    "movaps [rsp+16], xmm1",
    "movaps [rsp+32], xmm2",
    "movaps [rsp+48], xmm3",
    "movaps [rsp+64], xmm4",
    "movaps [rsp+80], xmm5",
    "movaps [rsp+96], xmm6",
    "movaps [rsp+112], xmm7",
    "movaps [rsp+128], xmm8",
    "movaps [rsp+144], xmm9",
    "movaps [rsp+160], xmm10",
    "movaps [rsp+176], xmm11",
    "movaps [rsp+192], xmm12",
    "movaps [rsp+208], xmm13",
    "movaps [rsp+224], xmm14",
    "movaps [rsp+240], xmm15",
    "mov rdi, gs:[{self_ptr}]",
    "mov rsi, gs:[{carg}]",
    "call qword ptr gs:[{cfn}]",
    "movaps xmm0, [rsp+0]",
    "movaps xmm1, [rsp+16]",
    "movaps xmm2, [rsp+32]",
    "movaps xmm3, [rsp+48]",
    "movaps xmm4, [rsp+64]",
    "movaps xmm5, [rsp+80]",
    "movaps xmm6, [rsp+96]",
    "movaps xmm7, [rsp+112]",
    "movaps xmm8, [rsp+128]",
    "movaps xmm9, [rsp+144]",
    "movaps xmm10, [rsp+160]",
    "movaps xmm11, [rsp+176]",
    "movaps xmm12, [rsp+192]",
    "movaps xmm13, [rsp+208]",
    "movaps xmm14, [rsp+224]",
    "movaps xmm15, [rsp+240]",
    "mov rsp, rbx",
    "popfq",
    restore_volatile!(),
    ".globl rtg_code_end",
    "rtg_code_end:",
    host_rsp = const OFF_HOST_RSP,
    host_fs = const OFF_HOST_FS,
    mask = const XSAVE_MASK,
    xsave = const OFF_XSAVE,
    fs = const OFF_FS_BASE,
    rflags = const OFF_RFLAGS,
    gpr = const OFF_GPR,
    entry = const OFF_ENTRY_TARGET,
    next_rip = const OFF_NEXT_RIP,
    exit_id = const OFF_EXIT_ID,
    ibl_miss_id = const EXIT_IBL_MISS,
    save_rcx = const OFF_SAVE_RCX,
    save_rdx = const OFF_SAVE_RDX,
    handler = sym signal_trampoline,
    pending = const OFF_PENDING,
    pending_id = const EXIT_PENDING,
    cregs = const OFF_CALLOUT_REGS,
    cfs = const OFF_CALLOUT_FS,
    cflags = const OFF_CALLOUT_FLAGS,
    cfn = const OFF_CALLOUT_FN,
    carg = const OFF_CALLOUT_ARG,
    cret = const OFF_CALLOUT_RET,
    cvec = const OFF_CALLOUT_VEC,
    cmxcsr = const OFF_CALLOUT_MXCSR,
    cwide = const OFF_CALLOUT_WIDE,
    xknown = const OFF_XINUSE_KNOWN,
    self_ptr = const OFF_SELF_PTR,
    qx = const OFF_COUNTS_IN_REGISTERS,
    quantum = const OFF_QUANTUM,
    counter = const OFF_COUNTER,
);

extern "sysv64" {
    fn rtg_enter();
    fn rtg_exit();
    fn rtg_fault_resume();
    fn rtg_ibl_miss();
    fn rtg_ibl_null();
    fn rtg_signal_entry();
    fn rtg_code_end();
    fn rtg_sigreturn();
    fn rtg_callout();
    fn rtg_callout_light();
}

pub(crate) fn callout_addr() -> u64 {
    rtg_callout as *const () as u64
}

pub(crate) fn callout_light_addr() -> u64 {
    rtg_callout_light as *const () as u64
}

/// The `sa_restorer` for handlers installed with the raw syscall (`rt_sigreturn`).
pub fn sigreturn_restorer_addr() -> u64 {
    rtg_sigreturn as *const () as u64
}

pub(crate) fn exit_routine_addr() -> u64 {
    rtg_exit as *const () as u64
}
pub(crate) fn ibl_miss_addr() -> u64 {
    rtg_ibl_miss as *const () as u64
}
pub(crate) fn ibl_null_addr() -> u64 {
    rtg_ibl_null as *const () as u64
}
/// Where a faulting thread resumes after its handler filled the context (`EXIT_FAULT`).
pub fn fault_resume_addr() -> u64 {
    rtg_fault_resume as *const () as u64
}
/// The address to install as `sa_sigaction` for every signal rtgrind handles.
pub fn signal_entry_addr() -> usize {
    rtg_signal_entry as *const () as usize
}
/// Whether a host pc lies in the enter/exit routines (guest state partly live).
pub fn in_dispatch_code(pc: u64) -> bool {
    pc >= rtg_enter as *const () as u64 && pc < rtg_code_end as *const () as u64
}

/// The runtime's signal handler, called on the alternate stack with the host `fs` restored.
pub type SignalHandler = extern "sysv64" fn(i32, *mut libc::siginfo_t, *mut libc::c_void);

static HANDLER: AtomicUsize = AtomicUsize::new(0);

/// Registers the runtime's handler that `rtg_signal_entry` calls.
pub fn set_signal_handler(h: SignalHandler) {
    HANDLER.store(h as usize, Ordering::SeqCst);
}

extern "sysv64" fn signal_trampoline(sig: i32, info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    let h = HANDLER.load(Ordering::SeqCst);
    if h != 0 {
        // SAFETY: HANDLER only ever holds a `SignalHandler` stored by `set_signal_handler`.
        let f: SignalHandler = unsafe { std::mem::transmute::<usize, SignalHandler>(h) };
        f(sig, info, uc);
    }
}

/// Points this thread's `gs` base at `ctx`. Must be called once per host thread before
/// `run`; the base stays for the thread's life.
pub fn install_context(ctx: &mut ThreadContext) {
    let p = ctx as *mut ThreadContext as u64;
    // SAFETY: writing the gs base only affects gs-relative accesses, which no host code uses;
    // wrgsbase is available (the engine requires FSGSBASE, checked by `host_supported`).
    unsafe { std::arch::asm!("wrgsbase {}", in(reg) p, options(nostack, preserves_flags)) };
}

pub(crate) fn read_fs_base() -> u64 {
    let v: u64;
    // SAFETY: rdfsbase only reads the fs base.
    unsafe { std::arch::asm!("rdfsbase {}", out(reg) v, options(nostack, preserves_flags)) };
    v
}

/// Whether the kernel lets user code use rdfsbase/wrgsbase (Linux 5.9+ on FSGSBASE CPUs).
pub fn host_supported() -> bool {
    const HWCAP2_FSGSBASE: u64 = 1 << 1;
    // SAFETY: getauxval has no preconditions.
    (unsafe { libc::getauxval(libc::AT_HWCAP2) } & HWCAP2_FSGSBASE) != 0
}

/// Whether the CPU has BMI2 (`rorx` in the inline lookup; Haswell and later).
pub fn host_has_bmi2() -> bool {
    std::arch::x86_64::__cpuid_count(7, 0).ebx & (1 << 8) != 0
}

/// Runs translated code at host address `target` with the guest state in `ctx` until an exit.
/// On return `ctx` holds the guest state and `ctx.exit_id` says why (the exit table where to
/// go, or `ctx.next_rip` after an indirect-branch miss).
///
/// # Safety
/// `ctx` must be the context installed on this thread with `install_context`, and `target`
/// the host address of a live translation.
pub unsafe fn run(ctx: &mut ThreadContext, target: u64) {
    ctx.entry_target = target;
    // SAFETY: per this function's contract; rtg_enter saves and restores every callee-saved
    // register and returns here once translated code exits through rtg_exit.
    unsafe {
        std::arch::asm!(
            "call {enter}",
            enter = sym rtg_enter,
            inout("rdi") ctx as *mut ThreadContext => _,
            clobber_abi("sysv64"),
        );
    }
}
