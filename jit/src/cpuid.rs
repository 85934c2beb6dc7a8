//! CPUID as the guest sees it: the host's answers minus what the engine does not support.
//!
//! Guest code runs natively, so any instruction the host has would execute; what must be
//! hidden is what the engine cannot translate or keep consistent: AVX-512 and AMX state
//! (glibc would pick EVEX string routines from these bits; shadow propagation does not cover
//! them) and transactional memory (`xbegin` has a relative abort target the engine does not
//! rewrite). Valgrind and QEMU hide the same.
//!
//! The state components follow: `xgetbv` shows XCR0 with only x87, SSE and AVX enabled, and
//! leaf 0xd's list of supported components says the same. The sizes leaf 0xd reports stay
//! the host's, for everything XCR0 really enables: the guest's `xsave`/`xsavec` run natively
//! and write every component the real XCR0 enables that their mask asks for (glibc's
//! lazy-binding trampoline asks for AVX-512's and sizes its area from leaf 0xd's
//! sub-leaves; the engine's own AVX-512 registers are in use), so a size shown smaller than
//! what they write would be an overflow.

/// The XCR0 bits (enabled state components) the guest is shown: x87, SSE and AVX. Any other
/// the host enables belongs to a feature hidden above (MPX, AVX-512, PKRU, AMX, APX).
pub const XCR0_SHOWN: u64 = 0b111;

/// Emulated `cpuid` for leaf `eax`, subleaf `ecx`: returns `[eax, ebx, ecx, edx]`.
pub fn emulate(leaf: u32, subleaf: u32) -> [u32; 4] {
    let r = std::arch::x86_64::__cpuid_count(leaf, subleaf);
    shown(leaf, subleaf, [r.eax, r.ebx, r.ecx, r.edx])
}

/// What the guest is shown of leaf `leaf`, subleaf `subleaf`, whose host answer is `host`.
fn shown(leaf: u32, subleaf: u32, host: [u32; 4]) -> [u32; 4] {
    let [mut eax, mut ebx, mut ecx, mut edx] = host;
    match (leaf, subleaf) {
        (7, 0) => {
            const EBX_HIDE: u32 = (1 << 2) // SGX
                | (1 << 4) // HLE
                | (1 << 11) // RTM
                | (1 << 14) // MPX
                | (1 << 16) | (1 << 17) | (1 << 21) | (1 << 26) | (1 << 27) | (1 << 28) | (1 << 30) | (1 << 31); // AVX-512
            const ECX_HIDE: u32 = (1 << 1) | (1 << 6) | (1 << 11) | (1 << 12) | (1 << 14) // AVX-512 VBMI/VBMI2/VNNI/BITALG/VPOPCNTDQ
                | (1 << 3) | (1 << 4) // PKU, OSPKE
                | (1 << 7); // CET shadow stack
            const EDX_HIDE: u32 = (1 << 2) | (1 << 3) | (1 << 8) | (1 << 23) // AVX-512 4VNNIW/4FMAPS/VP2INTERSECT/FP16
                | (1 << 20) // CET IBT
                | (1 << 22) | (1 << 24) | (1 << 25); // AMX
            ebx &= !EBX_HIDE;
            ecx &= !ECX_HIDE;
            edx &= !EDX_HIDE;
        }
        (7, 1) => {
            eax &= !((1 << 5) | (1 << 21)); // AVX512_BF16, AMX-FP16
            edx &= !(1 << 19); // AVX10
        }
        // The supported user components are those shown enabled; the sizes (EBX: of what
        // XCR0 enables, ECX: of every supported component) and the sub-leaves of each
        // component stay the host's (see above).
        (0xd, 0) => {
            eax &= XCR0_SHOWN as u32;
            edx &= (XCR0_SHOWN >> 32) as u32;
        }
        (0x19, _) | (0x1d, _) | (0x1e, _) | (0x24, _) => {
            return [0; 4];
        }
        _ => {}
    }
    [eax, ebx, ecx, edx]
}

/// Whether the host CPU is AMD's (or Hygon's): `sysenter` raises #UD in 64-bit mode there,
/// and a far pointer with REX.W is still 16:32.
pub fn host_is_amd() -> bool {
    let r = std::arch::x86_64::__cpuid(0);
    let vendor: Vec<u8> = [r.ebx, r.edx, r.ecx].iter().flat_map(|w| w.to_le_bytes()).collect();
    vendor == b"AuthenticAMD" || vendor == b"HygonGenuine"
}

/// `xgetbv` as the guest sees it, for `ecx` and the guest's state components in use
/// (`xinuse`, its xsave area's XSTATE_BV): XCR0 (0) or the components in use (1, where the
/// host has it), only those shown enabled. None where the CPU raises #GP.
pub fn xgetbv(ecx: u32, xinuse: u64) -> Option<u64> {
    let leaf1 = std::arch::x86_64::__cpuid_count(1, 0);
    if leaf1.ecx & (1 << 27) == 0 {
        return None; // no OSXSAVE: #UD natively, and no guest reaches here
    }
    match ecx {
        // SAFETY: the OS enabled xsave (OSXSAVE), so xgetbv(0) is defined.
        0 => Some(unsafe { std::arch::x86_64::_xgetbv(0) } & XCR0_SHOWN),
        1 if std::arch::x86_64::__cpuid_count(0xd, 1).eax & (1 << 2) != 0 => Some(xinuse & XCR0_SHOWN),
        _ => None,
    }
}

/// Whether `xgetbv` with ecx = 1 tells the state components in use (XINUSE), on this host.
pub(crate) fn xinuse_known() -> bool {
    std::arch::x86_64::__cpuid_count(0xd, 1).eax & (1 << 2) != 0
}

#[cfg(test)]
mod tests {
    #[test]
    fn avx512_and_rtm_hidden() {
        let r = super::emulate(7, 0);
        assert_eq!(r[1] & (1 << 16), 0, "AVX512F visible");
        assert_eq!(r[1] & (1 << 11), 0, "RTM visible");
    }

    /// On a host with AVX-512 and PKRU enabled (XCR0 0x2e7), leaf 0xd lists only x87, SSE
    /// and AVX, and keeps the sizes of everything enabled (2696 bytes with PKRU's).
    #[test]
    fn leaf_0xd_lists_only_the_components_shown() {
        assert_eq!(super::shown(0xd, 0, [0x2e7, 2696, 2696, 0]), [0x7, 2696, 2696, 0]);
        assert_eq!(super::shown(0xd, 6, [512, 1152, 0, 0]), [512, 1152, 0, 0]);
        assert_eq!(super::xgetbv(0, 0).map(|x| x & !super::XCR0_SHOWN), Some(0));
    }
}
