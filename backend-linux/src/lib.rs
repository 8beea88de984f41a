#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

#[cfg(feature = "conformance")]
pub mod conformance;

// Reading a sysfs tree is plain file reading: another machine's PMUs encode on any system.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
mod sysfs;
pub use sysfs::{
    Alias, ConfigWord, FormatField, PmuEvent, pmu_devices_under, pmu_events, read_tree_file,
    uncore_pmu_events,
};
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
        mod bpf_cgroup;
        mod breakpoint;
        mod cgroup;
        mod errno;
        mod exec;
        mod group;
        mod paths;
        pub mod rdpmc;
        mod polled;
        mod sampler;
        #[allow(unsafe_code)] // the one module with unsafe code (see its `# Safety` note)
        mod sys;
        mod tracefs;
        pub mod topdown;

        pub use backend::{LinuxBackend, probe, probe_with};
        pub use bpf_cgroup::{
            LinuxCgroupCounter, MAX_EVENTS as CGROUP_MAX_EVENTS, MAX_LEVELS as CGROUP_MAX_LEVELS,
        };
        pub use backend::assemble::on_sysfs;
        pub use paths::SystemPaths;
        pub use raw::{RawFormat, raw_attr};
        pub use counterhal_process::{ChildExit, ForwardSignals, WaitingChild};
        pub use errno::{EventClass, OpenAttempt, Operation, SystemFacts, map_errno};
        pub use group::LinuxGroup;
        pub use polled::{Deliver, PolledSampler};
        pub use sampler::LinuxSampler;

    } else {
        mod other;
        pub use other::{LinuxBackend, LinuxGroup, probe};
    }
}
