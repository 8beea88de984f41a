#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

#[cfg(feature = "conformance")]
pub mod conformance;

cfg_if::cfg_if! {
    if #[cfg(target_os = "linux")] {
        mod arm;
        mod attr;
        mod backend;
        mod breakpoint;
        mod cgroup;
        mod errno;
        mod exec;
        mod group;
        mod raw;
        pub mod rdpmc;
        mod polled;
        mod sampler;
        mod sysfs;
        #[allow(unsafe_code)] // the one module with unsafe code (see its `# Safety` note)
        mod sys;
        mod tracefs;
        pub mod topdown;

        pub use backend::{LinuxBackend, SystemPaths, probe, probe_with};
        pub use raw::{RawFormat, raw_attr};
        pub use counterhal_process::{ChildExit, ForwardSignals, WaitingChild};
        pub use errno::{EventClass, OpenAttempt, Operation, SystemFacts, map_errno};
        pub use group::LinuxGroup;
        pub use polled::{Deliver, PolledSampler};
        pub use sampler::LinuxSampler;
        pub use sysfs::{FormatField, ConfigWord};

    } else {
        mod other;
        pub use other::{LinuxBackend, LinuxGroup, probe};
    }
}
