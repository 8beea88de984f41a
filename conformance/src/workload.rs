//! Workloads with known instruction and branch counts, in assembly so the compiler cannot change
//! them (PAPI's validation style).
//!
//! # Safety
//! This is the crate's only module allowed `unsafe` code, and it holds none at call sites: the
//! loops are defined with `global_asm!` and declared `safe` in an `unsafe extern` block. The
//! declaration is sound because each routine follows the System V calling convention, reads
//! only its integer argument, touches only caller-saved registers (`rdi`, `rax`, flags) and no
//! memory, and returns.

/// Instructions retired per iteration of [`retire_instructions`]' loop (`dec`, `jnz`).
pub const INSTRUCTIONS_PER_ITERATION: u64 = 2;

#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    ".text",
    ".p2align 4",
    ".globl counterhal_conformance_loop",
    "counterhal_conformance_loop:",
    "    test rdi, rdi",
    "    jz 3f",
    "2:",
    "    dec rdi",
    "    jnz 2b",
    "3:",
    "    ret",
    ".p2align 4",
    ".globl counterhal_conformance_branches",
    "counterhal_conformance_branches:",
    "    xor eax, eax",
    "    test rdi, rdi",
    "    jz 5f",
    "4:",
    "    test edi, 1",
    "    jz 6f",
    "    inc rax",
    "6:",
    "    dec rdi",
    "    jnz 4b",
    "5:",
    "    ret",
);

// SAFETY: see the module's `# Safety` note: both routines only use rdi, rax and flags,
// touch no memory, and return normally for every argument.
#[cfg(target_arch = "x86_64")]
unsafe extern "sysv64" {
    safe fn counterhal_conformance_loop(iterations: u64);
    safe fn counterhal_conformance_branches(iterations: u64) -> u64;
}

/// Runs a loop of `iterations` x ([`INSTRUCTIONS_PER_ITERATION`]) retired instructions and
/// `iterations` conditional branches (the loop's back edge), plus a handful for the call.
/// Returns `false` (and does nothing) on targets without the assembly.
pub fn retire_instructions(iterations: u64) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        counterhal_conformance_loop(iterations);
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = iterations;
        false
    }
}

/// Runs a loop of `iterations` iterations with two conditional branches each: one taken on
/// every other iteration, and the back edge (taken on all but the last). Returns how many
/// times the first branch fell through, or `None` on targets without the assembly.
pub fn run_branches(iterations: u64) -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        Some(counterhal_conformance_branches(iterations))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = iterations;
        None
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn loops_run_and_return() {
        assert!(retire_instructions(0));
        assert!(retire_instructions(1000));
        assert_eq!(run_branches(0), Some(0));
        assert_eq!(run_branches(10), Some(5));
        assert_eq!(run_branches(11), Some(6));
    }
}
