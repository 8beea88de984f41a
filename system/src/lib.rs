#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod cgroup;
mod cpus;
mod kernel;
mod mounts;
mod permissions;
mod pmu;
mod powercap;
mod process;
mod roots;
mod rule;
mod stat;
#[cfg(test)]
mod testing;
mod topology;
#[cfg(unix)]
mod tracefs;

pub use cpus::parse_cpu_list;
pub use kernel::CpuInfo;
pub use mounts::Mount;
pub use permissions::{PerfAccess, PerfPermissions};
pub use pmu::{PmuAlias, PmuDevice, PmuDevices};
pub use powercap::{RaplAttribute, RaplZone};
pub use process::{DescriptorDirectory, Mapping, MemorySize, ProcessStatus, StatFile};
pub use roots::{PMU_DEVICES, System};
pub use rule::{PAGE, Refused, Why};
pub use stat::{StatFields, ThreadStat};
pub use topology::{CpuCache, CpuSiblings, CpuTopology};
#[cfg(unix)]
pub use tracefs::{Tracefs, TracefsState};
