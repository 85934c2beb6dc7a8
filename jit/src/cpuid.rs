//! CPUID as the guest sees it: the host's answers minus what the engine does not support.
//!
//! Guest code runs natively, so any instruction the host has would execute; what must be
//! hidden is what the engine cannot translate or keep consistent: AVX-512 and AMX state
//! (glibc would pick EVEX string routines from these bits; shadow propagation does not cover
//! them) and transactional memory (`xbegin` has a relative abort target the engine does not
//! rewrite). Valgrind and QEMU hide the same.

/// Emulated `cpuid` for leaf `eax`, subleaf `ecx`: returns `[eax, ebx, ecx, edx]`.
pub fn emulate(leaf: u32, subleaf: u32) -> [u32; 4] {
    let r = std::arch::x86_64::__cpuid_count(leaf, subleaf);
    let (eax, mut ebx, mut ecx, mut edx) = (r.eax, r.ebx, r.ecx, r.edx);
    let mut eax = eax;
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
        // Leaf 0xd (xsave layout) stays the host's: the state components exist in XCR0 and
        // `xsave`/`xsavec` with glibc's fixed masks write them, so the sizes must be real.
        (0x19, _) | (0x1d, _) | (0x1e, _) | (0x24, _) => {
            return [0; 4];
        }
        _ => {}
    }
    [eax, ebx, ecx, edx]
}

#[cfg(test)]
mod tests {
    #[test]
    fn avx512_and_rtm_hidden() {
        let r = super::emulate(7, 0);
        assert_eq!(r[1] & (1 << 16), 0, "AVX512F visible");
        assert_eq!(r[1] & (1 << 11), 0, "RTM visible");
    }
}
