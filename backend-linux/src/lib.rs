#![doc = include_str!("../README.md")]

pub mod conformance;

cfg_if::cfg_if! {
    if #[cfg(target_os = "linux")] {
        mod backend;
        mod breakpoint;
        mod command;
        mod errno;
        mod group;
        pub mod rdpmc;
        mod sysfs;
        #[allow(dead_code)] // the whole ABI is pinned, including what the backend does not use yet
        mod sys;
        mod tracefs;

        pub use backend::{LinuxBackend, SystemPaths, probe, probe_with};
        pub use command::{ChildExit, CommandRun, EventOutcome, WaitingChild};
        pub use errno::{EventClass, OpenAttempt, Operation, SystemFacts, map_errno};
        pub use group::LinuxGroup;
        pub use sysfs::{FormatField, ConfigWord};
    } else {
        mod other;
        pub use other::{LinuxBackend, LinuxGroup, probe};
    }
}
