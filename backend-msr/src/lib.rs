//! # counterhal-msr: raw x86 MSRs
//!
//! (Skeleton: the backend arrives with the MSR backend work.)

use counterhal_hal::{Error, ErrorKind, Result};

/// Whether the MSR device can be used here; the error says why not.
///
/// # Errors
/// [`ErrorKind::Unsupported`] until the backend lands.
pub fn probe() -> Result<()> {
    Err(Error::new(ErrorKind::Unsupported, "the MSR backend is not built yet"))
}
