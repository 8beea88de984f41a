//! The numbers of a set's options and of its domain option's values, as counterhal.h defines
//! them.

use facade::Domain;

/// The options of a set (`counterhal_set_option`).
pub mod option {
    /// 1 (the default): the events are one group, counted all together or not at all. 0:
    /// each on its own (time-shared where the counters are too few).
    pub const GROUPED: i32 = 0;
    /// 1: ask the backend to keep the group on its counters always (perf's `pinned`).
    pub const PINNED: i32 = 1;
    /// 1: a thread target also counts the threads and processes it creates from the start.
    pub const INHERIT: i32 = 2;
    /// 1: ask for the counters to the set alone while it runs (perf's `exclusive`): no other
    /// group shares the PMU meanwhile.
    pub const EXCLUSIVE: i32 = 3;
    /// What the events without a modifier of their own count: a `domain` (below)
    /// mask, 0 for the default.
    pub const DOMAIN: i32 = 4;
    /// 1: the events without a modifier of their own are refused where the OS refuses the
    /// default domain to this caller, instead of counting user space only; default 0.
    pub const STRICT_DOMAIN: i32 = 5;
}

/// The values of [`option::DOMAIN`]: privilege levels, or-ed together (`Domain`'s bits).
pub mod domain {
    /// The default: what the backend counts by default (user space and the kernel on Linux),
    /// user space only where the OS refuses the kernel to an unprivileged caller.
    pub const DEFAULT: i32 = 0;
    /// User space.
    pub const USER: i32 = 1;
    /// The kernel.
    pub const KERNEL: i32 = 2;
    /// The hypervisor.
    pub const HYPERVISOR: i32 = 4;
    /// Every bit this version knows.
    pub const ALL: i32 = USER | KERNEL | HYPERVISOR;
}

// The C mask is the face's `Domain` bits for the privilege levels.
const _: () = assert!(
    domain::USER == Domain::USER.bits() as i32
        && domain::KERNEL == Domain::KERNEL.bits() as i32
        && domain::HYPERVISOR == Domain::HYPERVISOR.bits() as i32
);
