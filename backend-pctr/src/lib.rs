//! # counterhal-pctr: OpenBSD `/dev/pctr`
//!
//! (Skeleton: the backend arrives with the pctr backend work.)

use counterhal_hal::{Error, ErrorKind, Result};

/// Whether /dev/pctr can be used here; the error says why not.
///
/// # Errors
/// [`ErrorKind::Unsupported`] off OpenBSD and until the backend lands.
pub fn probe() -> Result<()> {
    Err(Error::new(ErrorKind::Unsupported, "the pctr backend is not built yet"))
}
