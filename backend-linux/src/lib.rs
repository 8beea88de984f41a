#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

#[cfg(feature = "conformance")]
pub mod conformance;

// Reading a sysfs tree is plain file reading: another machine's PMUs encode on any system.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
mod pmus;
pub use pmus::{Alias, ConfigWord, FormatField, PmuEvent, pmu_events, uncore_pmu_events};
// An event select as a raw perf event is arithmetic, and so are the core PMU's aliases of the
// model's events built on it: both serve any system's encodings of another machine's tree.
mod core_events;
// Which core's table an Intel hybrid core PMU's events come from: core_events reads it on
// any system; the placements on both core PMUs are the Linux backend's alone.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
mod intel_hybrid;
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
mod raw;
pub use core_events::core_pmu_events;

cfg_if::cfg_if! {
    if #[cfg(target_os = "linux")] {
        mod arm;
        mod attr;
        mod backend;
        #[cfg(feature = "cgroup-counter")]
        mod bpf_cgroup;
        mod breakpoint;
        mod cgroup;
        mod errno;
        mod exec;
        mod group;
        #[cfg(not(all(feature = "sampling", feature = "cgroup-counter", feature = "command")))]
        mod left_out;
        pub mod rdpmc;
        #[cfg(feature = "sampling")]
        mod polled;
        #[cfg(feature = "sampling")]
        mod sampler;
        #[allow(unsafe_code)] // the one module with unsafe code (see its `# Safety` note)
        mod sys;
        mod tracepoints;
        pub mod topdown;

        pub use backend::LinuxBackend;
        #[cfg(feature = "cgroup-counter")]
        pub use bpf_cgroup::shared;
        #[cfg(feature = "cgroup-counter")]
        pub use bpf_cgroup::{
            LinuxCgroupCounter, MAX_EVENTS as CGROUP_MAX_EVENTS, MAX_LEVELS as CGROUP_MAX_LEVELS,
        };
        pub use backend::assemble::{on_sysfs, probe};
        pub use raw::{RawFormat, raw_attr};
        #[cfg(feature = "command")]
        pub use counterhal_process::{ChildExit, ForwardSignals, WaitingChild};
        pub use errno::{EventClass, OpenAttempt, Operation, SystemFacts, map_errno};
        pub use group::LinuxGroup;
        #[cfg(feature = "sampling")]
        pub use polled::{Deliver, PolledSampler};
        #[cfg(feature = "sampling")]
        pub use sampler::LinuxSampler;

    } else {
        mod other;
        pub use other::{LinuxBackend, LinuxGroup, probe};
    }
}

use std::sync::Arc;

use counterhal_events::Database;
use counterhal_hal::Registration;

/// This crate as the facade's registry takes it: `perf_event_open`, on Linux.
pub static REGISTRATION: Registration<Database> = Registration {
    name: "linux",
    interface: "perf_event_open",
    reaches: "`perf_event_open`: every PMU in sysfs, tracepoints, breakpoints, sampling",
    verified: "the real kernel (software events, tracepoints, breakpoints, equal to perf's counts); hardware counters on a real PMU driver in the aarch64 lab (QEMU's PMUv3)",
    systems: &["linux"],
    probe: |given| {
        let mut backend = probe(
            Arc::clone(given.database),
            given.cpu_model.map(str::to_owned),
            given.system.clone(),
        )?;
        backend.set_mount_tracefs(given.mount_tracefs);
        Ok(Box::new(backend))
    },
    model: None,
    #[cfg(target_os = "linux")]
    sysfs: Some(over_sysfs),
    #[cfg(not(target_os = "linux"))]
    sysfs: None,
};

/// The backend over the tree under `root`.
#[cfg(target_os = "linux")]
fn over_sysfs(
    given: &counterhal_hal::Given<'_, Database>,
    root: &std::path::Path,
) -> counterhal_hal::BoxedBackend {
    Box::new(on_sysfs(
        Arc::clone(given.database),
        given.cpu_model.map(str::to_owned),
        given.system.clone().with_sysfs(root),
    ))
}
