//! OS error numbers and the one place they become [`ErrorKind`]s.

use std::fmt;

use counterhal_hal::{Error, ErrorKind};

/// An OS error number as the pctr driver (or `open(2)`) returns it.
///
/// The constants are the values shared by OpenBSD and Linux (the classic numbers 1-34), so the
/// model and the tests speak the same numbers on every host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl Errno {
    /// Operation not permitted: a set on a descriptor not open for writing.
    pub const EPERM: Errno = Errno(1);
    /// No such file: `/dev/pctr` does not exist.
    pub const ENOENT: Errno = Errno(2);
    /// Device not configured: a minor other than 0.
    pub const ENXIO: Errno = Errno(6);
    /// Permission denied: the file mode forbids the open.
    pub const EACCES: Errno = Errno(13);
    /// Device busy.
    pub const EBUSY: Errno = Errno(16);
    /// Operation not supported by device: a CPU without counters.
    pub const ENODEV: Errno = Errno(19);
    /// Invalid argument: a bad counter, a bad function, or an unknown request.
    pub const EINVAL: Errno = Errno(22);
    /// Not a typewriter: the file is not a device that knows the request.
    pub const ENOTTY: Errno = Errno(25);

    /// The symbolic name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Errno::EPERM => "EPERM",
            Errno::ENOENT => "ENOENT",
            Errno::ENXIO => "ENXIO",
            Errno::EACCES => "EACCES",
            Errno::EBUSY => "EBUSY",
            Errno::ENODEV => "ENODEV",
            Errno::EINVAL => "EINVAL",
            Errno::ENOTTY => "ENOTTY",
            _ => "errno",
        }
    }

    /// The number from an I/O error (0 when it carries none).
    pub fn from_io(error: &std::io::Error) -> Errno {
        Errno(error.raw_os_error().unwrap_or(0))
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

/// What the backend was doing when the OS said no: the error's meaning depends on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operation<'a> {
    /// Opening the device file at this path.
    Open(&'a str),
    /// `PCIOCRD`.
    Read,
    /// `PCIOCSn` with this counter and function.
    Set {
        /// The counter index.
        counter: u32,
        /// The function word.
        function: u32,
    },
}

/// Maps an OS error from `operation` onto an [`Error`]: the one documented `match` of this
/// backend.
///
/// | errno | open | PCIOCRD | PCIOCSn |
/// |---|---|---|---|
/// | ENOENT, ENXIO | DeviceMissing | - | - |
/// | ENOTTY | DeviceMissing (not a pctr device) | DeviceMissing | DeviceMissing |
/// | EACCES, EPERM | PermissionDenied | PermissionDenied | PermissionDenied (not open for writing) |
/// | ENODEV | DeviceMissing | Unsupported | Unsupported (CPU without counters) |
/// | EINVAL | InvalidInput | Unsupported (ABI not understood) | InvalidEvent (bad counter or function) |
/// | EBUSY | Busy | Busy | Busy |
/// | other | Other | Other | Other |
pub fn map_errno(operation: &Operation<'_>, errno: Errno) -> Error {
    let what = match operation {
        Operation::Open(path) => format!("opening {path}"),
        Operation::Read => "PCIOCRD".to_string(),
        Operation::Set { counter, function } => {
            format!("PCIOCS{counter} (counter {counter}, function {function:#x})")
        }
    };
    let error = match (operation, errno) {
        (Operation::Open(_), Errno::ENOENT | Errno::ENXIO | Errno::ENODEV) => Error::new(
            ErrorKind::DeviceMissing,
            format!("{what}: the pctr device is not there ({errno})"),
        )
        .with_hint("the kernel needs `pseudo-device pctr 1` and /dev/pctr (cd /dev && sh MAKEDEV pctr)"),
        (_, Errno::ENOTTY) => Error::new(
            ErrorKind::DeviceMissing,
            format!("{what}: the file is not a pctr device ({errno})"),
        )
        .with_hint("use /dev/pctr on OpenBSD/amd64 or OpenBSD/i386"),
        (Operation::Set { .. }, Errno::EPERM) => Error::new(
            ErrorKind::PermissionDenied,
            format!("{what}: the device is not open for writing ({errno})"),
        )
        .with_hint("setting counters needs /dev/pctr opened read-write: run as root"),
        (_, Errno::EACCES | Errno::EPERM) => Error::new(
            ErrorKind::PermissionDenied,
            format!("{what}: permission denied ({errno})"),
        )
        .with_hint("reading needs read access to /dev/pctr, setting needs write access (root)"),
        (Operation::Set { .. }, Errno::ENODEV) => Error::new(
            ErrorKind::Unsupported,
            format!("{what}: this CPU has no performance counters pctr can drive ({errno})"),
        )
        .with_hint("pctr drives Intel P5/P6, Intel CPUs with architectural perfmon, and AMD family 6 and later"),
        (Operation::Read, Errno::ENODEV) => Error::new(
            ErrorKind::Unsupported,
            format!("{what}: the device refused the read ({errno})"),
        ),
        (Operation::Set { .. }, Errno::EINVAL) => Error::new(
            ErrorKind::InvalidEvent,
            format!("{what}: the driver refused the counter or the function ({errno})"),
        )
        .with_hint("the counter must exist on this CPU; P6 and later functions may not set bits 19-21, P5 functions must be below 0x200"),
        (Operation::Read, Errno::EINVAL) => Error::new(
            ErrorKind::Unsupported,
            format!("{what}: the driver does not know this request ({errno})"),
        )
        .with_hint("the kernel's struct pctrst differs from both ABIs counterhal knows"),
        (Operation::Open(_), Errno::EINVAL) => {
            Error::new(ErrorKind::InvalidInput, format!("{what}: invalid argument ({errno})"))
        }
        (_, Errno::EBUSY) => Error::new(ErrorKind::Busy, format!("{what}: busy ({errno})")),
        _ => Error::new(ErrorKind::Other, format!("{what}: failed ({errno})")),
    };
    error.with_errno(errno.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SET: Operation<'static> = Operation::Set {
        counter: 1,
        function: 0x4300c0,
    };

    #[test]
    fn man_page_errors_map_to_kinds() {
        assert_eq!(
            map_errno(&SET, Errno::ENODEV).kind(),
            ErrorKind::Unsupported
        );
        assert_eq!(
            map_errno(&SET, Errno::EINVAL).kind(),
            ErrorKind::InvalidEvent
        );
        assert_eq!(
            map_errno(&SET, Errno::EPERM).kind(),
            ErrorKind::PermissionDenied
        );
        let error = map_errno(&SET, Errno::EPERM);
        assert_eq!(error.errno(), Some(1));
        assert!(error.message().contains("not open for writing"), "{error}");
        assert!(error.message().contains("0x4300c0"), "{error}");
    }

    #[test]
    fn open_errors_map_to_kinds() {
        let open = Operation::Open("/dev/pctr");
        assert_eq!(
            map_errno(&open, Errno::ENOENT).kind(),
            ErrorKind::DeviceMissing
        );
        assert_eq!(
            map_errno(&open, Errno::ENXIO).kind(),
            ErrorKind::DeviceMissing
        );
        assert_eq!(
            map_errno(&open, Errno::EACCES).kind(),
            ErrorKind::PermissionDenied
        );
        assert!(
            map_errno(&open, Errno::ENOENT)
                .hint()
                .unwrap()
                .contains("MAKEDEV")
        );
    }

    #[test]
    fn read_errors_map_to_kinds() {
        assert_eq!(
            map_errno(&Operation::Read, Errno::ENOTTY).kind(),
            ErrorKind::DeviceMissing
        );
        assert_eq!(
            map_errno(&Operation::Read, Errno::EINVAL).kind(),
            ErrorKind::Unsupported
        );
        assert_eq!(
            map_errno(&Operation::Read, Errno(5)).kind(),
            ErrorKind::Other
        );
        assert_eq!(
            map_errno(&Operation::Read, Errno::EBUSY).kind(),
            ErrorKind::Busy
        );
    }
}
