#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]

use counterhal_events::Database;
use counterhal_hal::Registration;

// Off openbsd, the backend is its device's model alone: without the `model` feature (the
// facade's `device-models`) the crate is its registration alone there, which says so.
cfg_if::cfg_if! {
    if #[cfg(any(target_os = "openbsd", feature = "model"))] {
        use std::sync::Arc;

        use counterhal_hal::{BoxedBackend, Given, Result};

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
            DriverModel, MODEL_SET_LOG, MODEL_TSC_HZ, ModelConfig, ModelCpu, ModelHandle,
            ResetPolicy, Revision, SetRecord,
        };
        #[cfg(unix)]
        pub use probe::probe_path;
        pub use probe::{CpuFacts, backend_for_device, model_for, probe};

        /// The backend over `/dev/pctr`.
        fn make(given: &Given<'_, Database>) -> Result<BoxedBackend> {
            given.make(probe)
        }

        /// The backend over a model of the driver, for CPU model `id`.
        fn make_model(database: &Arc<Database>, id: &str) -> Result<BoxedBackend> {
            Ok(Box::new(model_for(Arc::clone(database), id)?))
        }
    } else {
        // Off OpenBSD without the model, this build has no backend here: its registration
        // says so.
        use counterhal_hal::{left_out as make, left_out_model as make_model};
    }
}

/// This crate as the facade's registry takes it: `/dev/pctr` on OpenBSD, and a model of its
/// driver anywhere.
pub static REGISTRATION: Registration<Database> = Registration {
    name: "pctr",
    interface: "/dev/pctr",
    reaches: "`/dev/pctr`, every ABI it had, on P5, P6, Intel and AMD CPUs",
    verified: "a model of the driver, written from OpenBSD's `pctr.c`",
    systems: &["openbsd"],
    probe: make,
    model: Some(make_model),
    sysfs: None,
};
