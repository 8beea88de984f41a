//! What a backend and its groups share: the device, and which of its counters open groups
//! hold.

use std::sync::{Mutex, MutexGuard};

use crate::device::PctrDevice;

/// The device and which of its counters open groups hold.
pub(crate) struct Shared {
    pub(crate) device: Box<dyn PctrDevice>,
    pub(crate) in_use: u32,
}

pub(crate) fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
