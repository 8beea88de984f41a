//! The CPUID instruction, which the memory hierarchy and hypervisor detection read as PAPI
//! 7.0's `x86_cpuid_info.c` and sysdetect's `x86_cpu_utils.c` do. The decoding lives in
//! [`crate::memory`], over any source of answers, so recorded answers test it.

/// The four registers of CPUID `leaf` with `subleaf` in ECX, on the CPU the calling thread
/// runs on; `None` where the instruction does not exist.
pub fn cpuid(leaf: u32, subleaf: u32) -> Option<[u32; 4]> {
    #[cfg(target_arch = "x86_64")]
    {
        let r = core::arch::x86_64::__cpuid_count(leaf, subleaf);
        Some([r.eax, r.ebx, r.ecx, r.edx])
    }
    #[cfg(target_arch = "x86")]
    {
        let r = core::arch::x86::__cpuid_count(leaf, subleaf);
        Some([r.eax, r.ebx, r.ecx, r.edx])
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    {
        let _ = (leaf, subleaf);
        None
    }
}
