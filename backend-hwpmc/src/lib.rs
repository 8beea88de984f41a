#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

use counterhal_events::Database;
use counterhal_hal::Registration;

// Off freebsd, the backend is its device's model alone: without the `model` feature (the
// facade's `device-models`) the crate is its registration alone there, which says so.
cfg_if::cfg_if! {
    if #[cfg(any(target_os = "freebsd", feature = "model"))] {
        use std::sync::Arc;

        use counterhal_hal::{BoxedBackend, Given, Result};

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

        /// The backend over hwpmc(4).
        fn make(given: &Given<'_, Database>) -> Result<BoxedBackend> {
            given.make(probe)
        }

        /// The backend over a model of the driver, for CPU model `id`.
        fn make_model(database: &Arc<Database>, id: &str) -> Result<BoxedBackend> {
            Ok(Box::new(model_for(Arc::clone(database), id)?))
        }
    } else {
        // Off FreeBSD without the model, this build has no backend here: its registration
        // says so.
        use counterhal_hal::{left_out as make, left_out_model as make_model};
    }
}

/// This crate as the facade's registry takes it: hwpmc(4) on FreeBSD, and a model of its
/// driver anywhere.
pub static REGISTRATION: Registration<Database> = Registration {
    name: "hwpmc",
    interface: "hwpmc(4) system call",
    reaches: "hwpmc(4)'s system call (V9, V10)",
    verified: "a model of the driver from FreeBSD's source; compiled and linted for FreeBSD",
    systems: &["freebsd"],
    probe: make,
    model: Some(make_model),
    sysfs: None,
};
