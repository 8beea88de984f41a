//! Workloads with known instruction and branch counts, in assembly so the compiler cannot change
//! them (PAPI's validation style).
//!
//! # Safety
//! This and `fixtures::sys` (kill(2)) are the crate's modules allowed `unsafe` code. The loops are
//! defined with `global_asm!` and declared `safe` in an `unsafe extern` block. The declaration is
//! sound because each routine follows its architecture's C calling convention (System V on x86-64,
//! AAPCS64 on aarch64), reads only its integer argument, touches only caller-saved registers
//! (`rdi`, `rax` and flags on x86-64; `x0` to `x2` and the condition flags on aarch64) and no
//! memory, and returns. On Linux, [`refuse_huge_pages`] makes two C calls (`prctl`, `sysconf`)
//! whose arguments are integers only: no pointer reaches the kernel or libc; [`FreshPages`] maps a
//! new private anonymous mapping, writes only inside it, and unmaps it once, on drop.

/// Instructions retired per iteration of [`retire_instructions`]' loop (`dec`, `jnz` on
/// x86-64; `subs`, `b.ne` on aarch64).
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

// The same two loops for aarch64: two instructions per iteration of the first (`subs`,
// `b.ne`), and two conditional branches per iteration of the second (`tbz` on the low bit,
// taken on even counts, and the back edge).
#[cfg(target_arch = "aarch64")]
std::arch::global_asm!(
    ".text",
    ".p2align 4",
    ".globl counterhal_conformance_loop",
    "counterhal_conformance_loop:",
    "    cbz x0, 3f",
    "2:",
    "    subs x0, x0, #1",
    "    b.ne 2b",
    "3:",
    "    ret",
    ".p2align 4",
    ".globl counterhal_conformance_branches",
    "counterhal_conformance_branches:",
    "    mov x1, x0",
    "    mov x0, #0",
    "    cbz x1, 5f",
    "4:",
    "    tbz x1, #0, 6f",
    "    add x0, x0, #1",
    "6:",
    "    subs x1, x1, #1",
    "    b.ne 4b",
    "5:",
    "    ret",
);

// SAFETY: see the module's `# Safety` note: both routines only use x0 to x2 and the condition
// flags, touch no memory, and return normally for every argument.
#[cfg(target_arch = "aarch64")]
unsafe extern "C" {
    safe fn counterhal_conformance_loop(iterations: u64);
    safe fn counterhal_conformance_branches(iterations: u64) -> u64;
}

/// Whether this architecture has the assembly loops.
const HAS_LOOPS: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// Runs a loop of `iterations` x ([`INSTRUCTIONS_PER_ITERATION`]) retired instructions and
/// `iterations` conditional branches (the loop's back edge), plus a handful for the call.
/// Returns `false` (and does nothing) on targets without the assembly.
pub fn retire_instructions(iterations: u64) -> bool {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    counterhal_conformance_loop(iterations);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = iterations;
    HAS_LOOPS
}

/// Where [`retire_instructions`]' loop lies in memory (its first 32 bytes hold the whole
/// routine), for a sampler to find its samples in; `None` on targets without the assembly.
pub fn loop_code() -> Option<std::ops::Range<u64>> {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        let start = counterhal_conformance_loop as *const () as u64;
        Some(start..start + 32)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    None
}

/// Runs a loop of `iterations` iterations with two conditional branches each: one taken on
/// every other iteration, and the back edge (taken on all but the last). Returns how many
/// times the first branch fell through, or `None` on targets without the assembly.
pub fn run_branches(iterations: u64) -> Option<u64> {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    return Some(counterhal_conformance_branches(iterations));
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = iterations;
        None
    }
}

/// Refuses transparent huge pages to this process from now on and returns the base page
/// size, so that writing `n` bytes of fresh anonymous memory takes at least `n / page` page
/// faults, the exact workload of a `page-faults` count; `None` where that cannot be had
/// (another OS, or a kernel that refuses the call).
///
/// Where the kernel's policy is `always` (`/sys/kernel/mm/transparent_hugepage/enabled`; the
/// aarch64 lab's Debian 12 arm64 kernel counted 273 faults for 33 MiB), the first write to an
/// aligned 2 MiB region faults the whole region in at once. `prctl(PR_SET_THP_DISABLE, 1)`
/// (Linux 3.15, man 2 prctl) turns that off for every mapping of the process, multi-size THP
/// included (`vma_thp_disabled`, mm/huge_memory.c).
pub fn refuse_huge_pages() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `prctl` with PR_SET_THP_DISABLE takes integer arguments only and changes only
        // this process's policy for later page faults.
        let refused = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
        // SAFETY: `sysconf` takes an integer and reads nothing of the caller's.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        (refused == 0 && page > 0).then_some(page as u64)
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// Fresh anonymous pages, mapped here and not yet touched, unmapped on drop: the workload of
/// a `page-faults` count or sample, one fault for each page first written
/// ([`touch`](FreshPages::touch)). The mapping is asked not to take huge pages
/// (`MADV_NOHUGEPAGE`), so neither the allocator's reuse nor a transparent huge page (one
/// fault for 512 pages, as arm64 kernels with THP `always` give) changes the count.
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub struct FreshPages {
    base: *mut u8,
    len: usize,
    page: usize,
}

#[cfg(target_os = "linux")]
impl FreshPages {
    /// Maps `pages` pages (at least one) of the system's page size.
    ///
    /// # Panics
    /// When the kernel refuses the mapping (a test's workload, with no way to go on).
    pub fn map(pages: usize) -> FreshPages {
        // SAFETY: `sysconf` takes an integer and reads nothing of the caller's.
        let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
            size if size > 0 => size as usize,
            _ => 4096,
        };
        let len = pages.max(1) * page;
        // SAFETY: a new private anonymous mapping; no existing memory is touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(
            base,
            libc::MAP_FAILED,
            "an anonymous mapping of {len} bytes: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: advice on the mapping just made; it changes no contents.
        unsafe { libc::madvise(base, len, libc::MADV_NOHUGEPAGE) };
        FreshPages {
            base: base.cast(),
            len,
            page,
        }
    }

    /// Writes the first byte of page `k`: its first touch faults once.
    ///
    /// # Panics
    /// When `k` is not one of the mapping's pages.
    pub fn touch(&self, k: usize) {
        let at = k * self.page;
        assert!(at < self.len, "page {k} of {} pages", self.len / self.page);
        // SAFETY: `at < len`: the byte lies inside the live writable mapping.
        unsafe { self.base.wrapping_add(at).write_volatile(1) };
    }

    /// Writes the first byte of every page, in order.
    pub fn touch_all(&self) {
        (0..self.len / self.page).for_each(|k| self.touch(k));
    }

    /// The mapping's addresses.
    pub fn range(&self) -> std::ops::Range<u64> {
        self.base as u64..self.base as u64 + self.len as u64
    }

    /// The page size it is mapped in (the system's).
    pub fn page_size(&self) -> usize {
        self.page
    }
}

#[cfg(target_os = "linux")]
impl Drop for FreshPages {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once; nothing refers to it after.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// Touches `pages` pages of memory never mapped before (at least one), one write each, and
/// unmaps them: a page fault apiece ([`FreshPages`]).
#[cfg(target_os = "linux")]
pub fn touch_fresh_pages(pages: usize) {
    FreshPages::map(pages).touch_all();
}

#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
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
