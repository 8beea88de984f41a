//! Timers for measuring regions of code beside the counters, as PAPI's `PAPI_get_real_nsec`,
//! `PAPI_get_virt_nsec` and `PAPI_get_real_cyc` give them:
//!
//! - [`real_ns`]: wall-clock time in nanoseconds from a fixed point (`CLOCK_MONOTONIC`: it
//!   never steps back and does not jump when the date is set);
//! - [`thread_cpu_ns`]: the CPU time the calling thread has used, in nanoseconds
//!   (`CLOCK_THREAD_CPUTIME_ID`), and [`process_cpu_ns`] for the whole process;
//! - [`cycles`]: the time-stamp counter, where it is usable as a clock (x86 with an invariant
//!   TSC: it ticks at a constant rate in every power state and on every core), else `None`.
//!
//! Each is one `clock_gettime` (served by the vDSO on Linux, no system call) or one `rdtsc`.
//!
//! ```
//! let start = counterhal_time::real_ns();
//! let cpu = counterhal_time::thread_cpu_ns();
//! let sum: u64 = (0..1000u64).sum();
//! assert!(counterhal_time::real_ns() >= start);
//! assert!(counterhal_time::thread_cpu_ns() >= cpu);
//! # assert_eq!(sum, 499_500);
//! ```

#![deny(unsafe_code)]

#[allow(unsafe_code)] // the one module with unsafe code (see its `# Safety` note)
mod sys;

/// Wall-clock nanoseconds since a fixed point in the past (the boot, on Linux), never
/// stepping back (PAPI's `PAPI_get_real_nsec`).
pub fn real_ns() -> u64 {
    sys::clock_ns(sys::Clock::Monotonic)
}

/// Nanoseconds of CPU time the calling thread has used, in user and kernel mode (PAPI's
/// `PAPI_get_virt_nsec`).
pub fn thread_cpu_ns() -> u64 {
    sys::clock_ns(sys::Clock::ThreadCpu)
}

/// Nanoseconds of CPU time this process's threads have used together.
pub fn process_cpu_ns() -> u64 {
    sys::clock_ns(sys::Clock::ProcessCpu)
}

/// The time-stamp counter (PAPI's `PAPI_get_real_cyc`), where it is a clock: x86 whose CPUID
/// says the TSC is invariant (leaf 0x8000_0007, EDX bit 8). `None` on other CPUs, where
/// cycles would mean a different rate in each power state; use [`real_ns`] there.
pub fn cycles() -> Option<u64> {
    tsc_is_invariant().then(sys::rdtsc)
}

/// Whether this CPU's time-stamp counter ticks at a constant rate in every power state
/// (CPUID leaf 0x8000_0007, EDX bit 8), so that [`cycles`] is a clock. Asked once.
pub fn tsc_is_invariant() -> bool {
    static INVARIANT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *INVARIANT.get_or_init(sys::invariant_tsc)
}

/// The TSC's rate in Hz, measured against [`real_ns`] over `window` (the longer, the closer);
/// `None` where [`cycles`] is.
pub fn measure_tsc_hz(window: std::time::Duration) -> Option<u64> {
    let (c0, t0) = (cycles()?, real_ns());
    std::thread::sleep(window);
    let (c1, t1) = (cycles()?, real_ns());
    let ns = t1.checked_sub(t0).filter(|&ns| ns > 0)?;
    let hz = u128::from(c1.wrapping_sub(c0)) * 1_000_000_000 / u128::from(ns);
    u64::try_from(hz).ok()
}
