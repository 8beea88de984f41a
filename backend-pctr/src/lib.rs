#![doc = include_str!("../README.md")]

mod assign;
mod backend;
#[cfg(feature = "conformance")]
pub mod conformance;
mod cpu;
mod device;
mod errno;
mod model;
mod probe;
mod sys;

pub use backend::{MAX_EVENTS_PER_CYCLE, PctrBackend, PctrGroup};
pub use cpu::{Abi, CpuKind, function, kernel_mask_bits, read_width, set_request, width_mask};
#[cfg(unix)]
pub use device::RealDevice;
pub use device::{IoctlArg, PctrDevice, Snapshot, detect_abi, read_snapshot, set_function};
pub use errno::{Errno, Operation, map_errno};
pub use model::{
    DriverModel, MODEL_IOCTL_CYCLES, MODEL_SET_LOG, MODEL_TSC_HZ, ModelConfig, ModelCpu,
    ModelHandle, ResetPolicy, SetRecord,
};
#[cfg(unix)]
pub use probe::probe_path;
pub use probe::{CpuFacts, model_for, probe};

/// The kernel ABI: both `struct pctrst` layouts and the BSD ioctl request formula, as
/// `machine/pctr.h` and `sys/ioccom.h` define them.
pub mod abi {
    pub use crate::sys::{
        IOC_DIRMASK, IOC_IN, IOC_OUT, IOC_VOID, IOCPARM_MASK, PCIOCRD_CURRENT, PCIOCRD_LEGACY,
        PCIOCS0, PCIOCS1, PCIOCS2, PCIOCS3, PCTR_GROUP, PctrStCurrent, PctrStLegacy, ioc,
        ioc_group, ioc_num, iocparm_len, ior, iow,
    };
}
