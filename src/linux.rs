//! The Linux backend in its own terms, for the faces and tools that need more than counting
//! by name: perf's PMU syntax read from a sysfs tree (this machine's or another's), the
//! backend held as itself (its groups read without dynamic dispatch), its topdown events and
//! its sampler's overflow signal.
//!
//! A program that counts by name never needs this module: [`open_default`](crate::open_default)
//! and [`Setup`](crate::Setup) choose the backend, and [`Chosen`](crate::Chosen) reads the
//! Linux backend's groups as they are. Ask the chosen backend what it can do
//! ([`Chosen::capabilities`](crate::Chosen::capabilities)) before reaching here: a face that
//! tests a backend's name breaks on the next backend.

/// The backend over `perf_event_open`, as itself.
pub use counterhal_linux::LinuxBackend;
/// A PMU event of perf's syntax (`pmu/terms/`, an uncore event of the model by name, a core
/// event in its core PMU's terms): every attr perf opens for it and the CPUs it opens on.
pub use counterhal_linux::PmuEvent;
/// A core event of the CPU model in its core PMU's terms (`cpu/INST_RETIRED.ANY/`), against
/// a sysfs `devices` directory: `None` for a name that is not one.
pub use counterhal_linux::core_pmu_events;
/// perf's PMU syntax against the PMUs of a sysfs `devices` directory: `None` for a name that
/// is not one (no PMU of the tree has its first part).
pub use counterhal_linux::pmu_events;
/// The Linux backend over this system's PMUs and tracepoints, where `perf_event_open` works.
pub use counterhal_linux::probe;
/// An uncore event of the CPU model by name (`UNC_M_CAS_COUNT.RD`, `uncore_imc/cas_count_read/`),
/// on each box of its PMU under a sysfs `devices` directory: `None` for a name that is not one.
pub use counterhal_linux::uncore_pmu_events;

/// The Linux backend's system paths (`/sys`, tracefs) moved under another root.
#[cfg(target_os = "linux")]
pub use counterhal_linux::SystemPaths;
/// The Linux backend over the PMUs and tracepoints of a tree of the caller's choosing, that
/// resolves names against it without probing or opening anything (what encodes offline).
#[cfg(target_os = "linux")]
pub use counterhal_linux::on_sysfs;
/// [`probe`] with PMU and tracefs paths of the caller's choosing.
#[cfg(target_os = "linux")]
pub use counterhal_linux::probe_with;
/// The encodings of Intel's topdown events: `slots` and the metric events perf groups after
/// it.
#[cfg(target_os = "linux")]
pub use counterhal_linux::topdown;
/// The Linux backend's group (what its sets and samplers open), its sampler, and what it
/// knows of this system when an open fails.
#[cfg(target_os = "linux")]
pub use counterhal_linux::{Deliver, LinuxGroup, LinuxSampler, PolledSampler, SystemFacts};

/// The signal the Linux sampler's overflow callbacks come with (a real-time signal: a
/// program that blocks signals should leave it unblocked on the sampler's thread).
#[cfg(target_os = "linux")]
pub fn overflow_signal() -> i32 {
    counterhal_linux::LinuxSampler::overflow_signal()
}
