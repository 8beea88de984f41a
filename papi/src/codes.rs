//! PAPI 7.0's return codes, their messages, and the mapping from counterhal's error kinds.

use facade::{Error, ErrorKind};

/// Success.
pub const OK: i32 = 0;
/// Invalid argument.
pub const EINVAL: i32 = -1;
/// Insufficient memory.
pub const ENOMEM: i32 = -2;
/// A system or C library call failed.
pub const ESYS: i32 = -3;
/// Not supported by the component.
pub const ECMP: i32 = -4;
/// Internal error.
pub const EBUG: i32 = -6;
/// The event does not exist.
pub const ENOEVNT: i32 = -7;
/// The event exists but cannot be counted beside the others (counters).
pub const ECNFLCT: i32 = -8;
/// The event set is not running.
pub const ENOTRUN: i32 = -9;
/// The event set is counting.
pub const EISRUN: i32 = -10;
/// No such event set.
pub const ENOEVST: i32 = -11;
/// Not a valid preset.
pub const ENOTPRESET: i32 = -12;
/// No counters.
pub const ENOCNTR: i32 = -13;
/// Unknown error.
pub const EMISC: i32 = -14;
/// Permission denied.
pub const EPERM: i32 = -15;
/// The library is not initialised.
pub const ENOINIT: i32 = -16;
/// No such component.
pub const ENOCMP: i32 = -17;
/// Not supported.
pub const ENOSUPP: i32 = -18;
/// Not implemented.
pub const ENOIMPL: i32 = -19;
/// Buffer too small.
pub const EBUF: i32 = -20;

/// The messages of `PAPI_strerror`, indexed by `-code` (PAPI 7.0's 28 codes), as the C
/// strings it hands out.
pub const MESSAGES: [&std::ffi::CStr; 28] = [
    c"No error",
    c"Invalid argument",
    c"Insufficient memory",
    c"A System/C library call failed",
    c"Not supported by component",
    c"Access to the counters was lost or interrupted",
    c"Internal error, please send mail to the developers",
    c"Event does not exist",
    c"Event exists, but cannot be counted due to hardware resource limits",
    c"EventSet is currently not running",
    c"EventSet is currently counting",
    c"No such EventSet available",
    c"Event in argument is not a valid preset",
    c"Hardware does not support performance counters",
    c"Unknown error code",
    c"Permission level does not permit operation",
    c"PAPI hasn't been initialized yet",
    c"Component Index isn't set",
    c"Not supported",
    c"Not implemented",
    c"Buffer size exceeded",
    c"EventSet domain is not supported for the operation",
    c"Invalid or missing event attributes",
    c"Too many events or attributes",
    c"Bad combination of features",
    c"Component containing event is disabled",
    c"Delayed initialization component",
    c"Event exists, but cannot be counted due to multiple passes required by hardware",
];

/// The message of `code`, or `None` for a code PAPI does not define.
pub fn message(code: i32) -> Option<&'static str> {
    usize::try_from(code.checked_neg()?)
        .ok()
        .and_then(|i| MESSAGES.get(i)?.to_str().ok())
}

/// PAPI's code for an error of counterhal's, when adding or counting an event.
pub fn from_error(error: &Error) -> i32 {
    // No such thread or process (one attached to is gone, or never was): PAPI 7.0's
    // perf_event component answers PAPI_ESYS for the kernel's ESRCH
    // (`map_perf_event_errors_to_papi`), not that the event does not exist.
    if error.errno() == Some(libc::ESRCH) {
        return ESYS;
    }
    match error.kind() {
        ErrorKind::InvalidEvent | ErrorKind::NotFound => ENOEVNT,
        ErrorKind::NoCounterAvailable | ErrorKind::Busy => ECNFLCT,
        ErrorKind::PermissionDenied => EPERM,
        ErrorKind::Unsupported | ErrorKind::NotCounted => ENOEVNT,
        ErrorKind::InvalidInput => EINVAL,
        ErrorKind::DeviceMissing => ENOCNTR,
        ErrorKind::LimitReached => ECOUNT,
        _ => ESYS,
    }
}

/// The event set's domain is not supported for the operation.
pub const EINVAL_DOM: i32 = -21;

/// Too many events.
pub const ECOUNT: i32 = -23;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code from 0 to -27 has a message and none past it (PAPI 7.0's `PAPI_NUM_ERRORS`
    /// is 28; the header test compares the codes with PAPI's papi.h).
    #[test]
    fn every_code_has_a_message() {
        for code in 0..28 {
            assert!(message(-code).is_some(), "{code}");
        }
        assert_eq!(message(-28), None);
        assert_eq!(message(1), None);
        assert_eq!(message(ENOSUPP), Some("Not supported"));
    }
}
