//! The clocks as the OS and the CPU give them: `clock_gettime` and `rdtsc`. Everything
//! `unsafe` in this crate is here.
//!
//! # Safety
//!
//! The invariants every `unsafe` block here relies on:
//! - `clock_gettime` is passed a pointer to a live local `timespec`, written for the call only.
//! - `rdtsc` reads a register and touches no memory; it exists on every x86-64 CPU.

/// Which clock.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Clock {
    /// Wall-clock time that never steps back.
    Monotonic,
    /// The calling thread's CPU time.
    ThreadCpu,
    /// The process's CPU time.
    ProcessCpu,
}

/// The clock's time in nanoseconds (0 if the OS refuses it, which POSIX systems do not for
/// these clocks).
#[cfg(unix)]
pub(crate) fn clock_ns(clock: Clock) -> u64 {
    let id = match clock {
        Clock::Monotonic => libc::CLOCK_MONOTONIC,
        Clock::ThreadCpu => libc::CLOCK_THREAD_CPUTIME_ID,
        Clock::ProcessCpu => libc::CLOCK_PROCESS_CPUTIME_ID,
    };
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a live local the call writes (module note).
    let rc = unsafe { libc::clock_gettime(id, &mut now) };
    if rc != 0 {
        return 0;
    }
    let secs = u64::try_from(now.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(now.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

/// No POSIX clocks: wall-clock time from the first call, and no CPU time.
#[cfg(not(unix))]
pub(crate) fn clock_ns(clock: Clock) -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    match clock {
        Clock::Monotonic => {
            let start = START.get_or_init(std::time::Instant::now);
            u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
        }
        Clock::ThreadCpu | Clock::ProcessCpu => 0,
    }
}

/// The time-stamp counter.
#[cfg(target_arch = "x86_64")]
pub(crate) fn rdtsc() -> u64 {
    // SAFETY: rdtsc reads a register and touches no memory (module note).
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// No time-stamp counter on this architecture ([`invariant_tsc`] is false, so this is never
/// asked).
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn rdtsc() -> u64 {
    0
}

/// CPUID leaf 0x8000_0007, EDX bit 8: the TSC is invariant.
#[cfg(target_arch = "x86_64")]
pub(crate) fn invariant_tsc() -> bool {
    use core::arch::x86_64::__cpuid;
    let highest = __cpuid(0x8000_0000).eax;
    highest >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
}

/// Not x86-64: no TSC.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn invariant_tsc() -> bool {
    false
}
