//! What a backend and its groups share: the device, and which counters open groups hold.

use std::sync::{Mutex, MutexGuard};

use crate::device::HwpmcDevice;

/// The device and the counters open groups of this process hold (a process may hold each
/// row once: `pmc_can_allocate_rowindex`).
pub(crate) struct Shared {
    pub(crate) device: Box<dyn HwpmcDevice>,
    pub(crate) busy_general: u32,
    pub(crate) busy_fixed: u32,
}

pub(crate) fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
