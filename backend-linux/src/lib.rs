//! # counterhal-linux: Linux `perf_event_open`
//!
//! (Skeleton: the backend arrives with the Linux backend work.)

use counterhal_hal::{Error, ErrorKind, Result};

/// Whether perf_event_open can be used here; the error says why not.
///
/// # Errors
/// [`ErrorKind::Unsupported`] on other OSes and until the backend lands.
pub fn probe() -> Result<()> {
    Err(Error::new(ErrorKind::Unsupported, "the Linux backend is not built yet"))
}
