//! A file of a PMU tree that the system's reading rule refused (`counterhal_system::Refused`),
//! as the hal's error.

use counterhal_hal::Error;
use counterhal_system::Refused;

/// A file the system's reading rule refused, as an error of the hal's: the file named by its
/// place in the tree and why (never what it holds).
pub(crate) fn refused(refused: Refused) -> Error {
    Error::invalid_input(refused.to_string()).with_hint(
        "a sysfs tree holds the kernel's attributes: short text in regular files, its links \
         inside the tree",
    )
}
