#![doc = include_str!("../README.md")]
// Off freebsd, the backend is its device's model alone: without the `model` feature (the
// facade's `device-models`) the crate is empty there.
#![cfg(any(target_os = "freebsd", feature = "model"))]
#![deny(unsafe_code)]

pub mod abi;
mod backend;
#[cfg(feature = "conformance")]
pub mod conformance;
mod device;
mod errno;
mod event;
mod group;
mod model;
mod probe;
mod shared;
#[cfg(target_os = "freebsd")]
#[allow(unsafe_code)] // the one module with unsafe code (see its `# Safety` note)
mod sys;

pub use backend::HwpmcBackend;
#[cfg(target_os = "freebsd")]
pub use device::RealDevice;
pub use device::{HwpmcDevice, OpArg, cpu_info, handshake};
pub use errno::{Errno, Operation, map_errno};
pub use event::{PmcEvent, Pmu};
pub use group::HwpmcGroup;
pub use model::{ModelConfig, ModelDevice, ModelEvent, ModelHandle, ModelVendor};
pub use probe::{missing_module_error, model_for, probe};
