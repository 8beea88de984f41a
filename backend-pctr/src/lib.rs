#![doc = include_str!("../README.md")]
// Off openbsd, the backend is its device's model alone: without the `model` feature (the
// facade's `device-models`) the crate is empty there.
#![cfg(any(target_os = "openbsd", feature = "model"))]
#![deny(unsafe_code)]

pub mod abi;
mod backend;
#[cfg(feature = "conformance")]
pub mod conformance;
mod counting;
mod cpu;
mod device;
mod errno;
mod group;
mod model;
mod names;
mod probe;
mod shared;
#[allow(unsafe_code)] // the one module with unsafe code (see its `# Safety` note)
mod sys;

pub use abi::{Abi, IoctlArg};
pub use backend::PctrBackend;
pub use counterhal_x86::{TscFrequency, TscSource};
pub use counting::MAX_EVENTS_PER_CYCLE;
pub use cpu::{CpuKind, function, read_width};
#[cfg(unix)]
pub use device::RealDevice;
pub use device::{PctrDevice, detect_abi, set_function};
pub use errno::{Errno, Operation, map_errno};
pub use group::PctrGroup;
pub use model::{
    DriverModel, MODEL_SET_LOG, MODEL_TSC_HZ, ModelConfig, ModelCpu, ModelHandle, ResetPolicy,
    Revision, SetRecord,
};
#[cfg(unix)]
pub use probe::probe_path;
pub use probe::{CpuFacts, backend_for_device, model_for, probe};
