//! FreeBSD's error numbers and the one place they become [`ErrorKind`]s.

use std::fmt;

use counterhal_hal::{Error, ErrorKind};

/// An error number as hwpmc(4), `modfind(2)` or `modstat(2)` return it.
///
/// The constants are FreeBSD's (`sys/sys/errno.h`; the `libc` crate's FreeBSD values, which
/// the FreeBSD build's test compares them with), so the model and the tests speak FreeBSD's
/// numbers on every host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl Errno {
    /// Operation not permitted: a system-mode PMC without `PRIV_PMC_SYSTEM`, an attach
    /// `p_candebug` refuses, a jailed caller.
    pub const EPERM: Errno = Errno(1);
    /// No such file or directory: `modfind("hwpmc")` when the module is not loaded.
    pub const ENOENT: Errno = Errno(2);
    /// No such process: PMCATTACH to a pid that does not exist (or is exiting).
    pub const ESRCH: Errno = Errno(3);
    /// Device not configured: a system-mode PMC on an inactive CPU.
    pub const ENXIO: Errno = Errno(6);
    /// Cannot allocate memory.
    pub const ENOMEM: Errno = Errno(12);
    /// Permission denied.
    pub const EACCES: Errno = Errno(13);
    /// Device busy: PMCATTACH of a running PMC, a target already holding the row, PMCRW
    /// NEWVALUE or PMCSETCOUNT while running.
    pub const EBUSY: Errno = Errno(16);
    /// File exists: PMCATTACH of a PMC already attached to that process.
    pub const EEXIST: Errno = Errno(17);
    /// Invalid argument: a bad mode, CPU, class or flag; no free row (PMCALLOCATE); an unknown
    /// PMC id; an operation the PMC's state does not allow; an unknown operation.
    pub const EINVAL: Errno = Errno(22);
    /// Operation not supported: capabilities the class lacks.
    pub const EOPNOTSUPP: Errno = Errno(45);
    /// Program version wrong: GETMODULEVERSION with a newer major.minor than the kernel's.
    pub const EPROGMISMATCH: Errno = Errno(75);
    /// Function not implemented: a system call number with no system call (the module was
    /// unloaded after `modstat`), or hwpmc shutting down.
    pub const ENOSYS: Errno = Errno(78);

    /// The symbolic name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Errno::EPERM => "EPERM",
            Errno::ENOENT => "ENOENT",
            Errno::ESRCH => "ESRCH",
            Errno::ENXIO => "ENXIO",
            Errno::ENOMEM => "ENOMEM",
            Errno::EACCES => "EACCES",
            Errno::EBUSY => "EBUSY",
            Errno::EEXIST => "EEXIST",
            Errno::EINVAL => "EINVAL",
            Errno::EOPNOTSUPP => "EOPNOTSUPP",
            Errno::EPROGMISMATCH => "EPROGMISMATCH",
            Errno::ENOSYS => "ENOSYS",
            _ => "errno",
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

/// What the backend was doing when the kernel said no: the meaning of an error number
/// depends on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operation<'a> {
    /// `modfind("hwpmc")` and `modstat`.
    FindModule,
    /// PMC_OP_GETMODULEVERSION.
    Handshake,
    /// PMC_OP_GETCPUINFO.
    CpuInfo,
    /// PMC_OP_PMCALLOCATE of this event, in system mode (one CPU) or process mode.
    Allocate {
        /// The event's name.
        event: &'a str,
        /// Whether it is a system-mode (SC) PMC.
        system: bool,
    },
    /// PMC_OP_PMCATTACH to this process.
    Attach {
        /// The target process.
        pid: u32,
    },
    /// PMC_OP_PMCSTART, PMCSTOP, PMCRW or PMCRELEASE of an allocated PMC.
    Control(&'static str),
}

impl fmt::Display for Operation<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operation::FindModule => f.write_str("modfind(\"hwpmc\")"),
            Operation::Handshake => f.write_str("PMC_OP_GETMODULEVERSION"),
            Operation::CpuInfo => f.write_str("PMC_OP_GETCPUINFO"),
            Operation::Allocate { event, system } => write!(
                f,
                "PMC_OP_PMCALLOCATE of `{event}` ({} mode)",
                if *system { "system, SC" } else { "process, TC" }
            ),
            Operation::Attach { pid } => write!(f, "PMC_OP_PMCATTACH to process {pid}"),
            Operation::Control(op) => write!(f, "PMC_OP_{op}"),
        }
    }
}

/// The hint for the privilege a system-mode PMC needs.
pub const SYSTEM_MODE_HINT: &str = "system-mode (per-CPU) counting needs root (PRIV_PMC_SYSTEM) unless `sysctl security.bsd.unprivileged_syspmcs=1`; it is always refused in a jail";

/// Maps an error number from `operation` onto an [`Error`]: the one documented `match` of
/// this backend.
///
/// | errno | modfind | GETMODULEVERSION | PMCALLOCATE | PMCATTACH | others |
/// |---|---|---|---|---|---|
/// | ENOENT | DeviceMissing (module not loaded) | - | - | - | - |
/// | ENOSYS | DeviceMissing | DeviceMissing | DeviceMissing | DeviceMissing | DeviceMissing |
/// | EPROGMISMATCH | - | Unsupported | - | - | - |
/// | EINVAL | - | Unsupported | NoCounterAvailable (no free row, or the event fits none) | InvalidInput | InvalidInput |
/// | EPERM | - | - | PermissionDenied (`security.bsd.unprivileged_syspmcs`) | PermissionDenied (`security.bsd.unprivileged_proc_debug`, `p_candebug`) | PermissionDenied |
/// | EOPNOTSUPP | - | - | Unsupported | - | Unsupported |
/// | ENXIO | - | - | DeviceMissing (CPU not active) | - | DeviceMissing |
/// | EBUSY, EEXIST | - | - | Busy | Busy (the PMC runs, or the process holds the row) | Busy |
/// | ESRCH | - | - | - | NotFound | NotFound |
/// | other | Other | Other | Other | Other | Other |
pub fn map_errno(operation: &Operation<'_>, errno: Errno) -> Error {
    let (kind, hint): (ErrorKind, Option<&str>) = match (operation, errno) {
        (Operation::FindModule, Errno::ENOENT) => (
            ErrorKind::DeviceMissing,
            Some("load hwpmc(4): `kldload hwpmc` (or hwpmc_load=\"YES\" in /boot/loader.conf)"),
        ),
        (_, Errno::ENOSYS) => (
            ErrorKind::DeviceMissing,
            Some("hwpmc(4) is not (or no longer) loaded: `kldload hwpmc`"),
        ),
        (Operation::Handshake, Errno::EPROGMISMATCH | Errno::EINVAL) => (
            ErrorKind::Unsupported,
            Some("this hwpmc(4) speaks neither API V9 nor V10"),
        ),
        (Operation::Allocate { .. }, Errno::EINVAL) => (
            ErrorKind::NoCounterAvailable,
            Some(
                "hwpmc found no free row for the event: rows this process holds, rows other processes hold in the other mode, or an event the class cannot count on any free row",
            ),
        ),
        (Operation::Allocate { system: true, .. }, Errno::EPERM) => {
            (ErrorKind::PermissionDenied, Some(SYSTEM_MODE_HINT))
        }
        (Operation::Attach { .. }, Errno::EPERM) => (
            ErrorKind::PermissionDenied,
            Some(
                "attaching needs the right to debug the process (p_candebug): the same user and `sysctl security.bsd.unprivileged_proc_debug=1`, or root; `security.bsd.see_other_uids` and jails limit it too",
            ),
        ),
        (_, Errno::EPERM | Errno::EACCES) => (ErrorKind::PermissionDenied, None),
        (_, Errno::EOPNOTSUPP) => (
            ErrorKind::Unsupported,
            Some("the PMC class lacks a capability the event needs"),
        ),
        (_, Errno::ENXIO) => (
            ErrorKind::DeviceMissing,
            Some("the CPU is not active (offline, or disabled for hwpmc)"),
        ),
        (Operation::Attach { .. }, Errno::EBUSY | Errno::EEXIST) => (
            ErrorKind::Busy,
            Some(
                "the process already has a PMC on that row (another tool measures it), or the PMC is running",
            ),
        ),
        (_, Errno::EBUSY | Errno::EEXIST) => (ErrorKind::Busy, None),
        (_, Errno::ESRCH) => (
            ErrorKind::NotFound,
            Some("the process does not exist or is exiting"),
        ),
        (_, Errno::EINVAL) => (ErrorKind::InvalidInput, None),
        _ => (ErrorKind::Other, None),
    };
    let mut error = Error::new(kind, format!("{operation}: {errno}")).with_errno(errno.0);
    if let Some(hint) = hint {
        error = error.with_hint(hint);
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: `pmc_do_op_pmcallocate` in `sys/dev/hwpmc/hwpmc_mod.c` returns EINVAL when no
    /// row takes the event (`n == md->pmd_npmc`), and EPERM from `priv_check(td,
    /// PRIV_PMC_SYSTEM)` unless `pmc_unprivileged_syspmcs` (the sysctl
    /// `security.bsd.unprivileged_syspmcs`).
    #[test]
    fn allocation_errors_name_their_cause() {
        let full = map_errno(
            &Operation::Allocate {
                event: "instructions",
                system: false,
            },
            Errno::EINVAL,
        );
        assert_eq!(full.kind(), ErrorKind::NoCounterAvailable);
        assert!(full.hint().unwrap().contains("row"), "{full}");
        let system = map_errno(
            &Operation::Allocate {
                event: "cycles",
                system: true,
            },
            Errno::EPERM,
        );
        assert_eq!(system.kind(), ErrorKind::PermissionDenied);
        assert!(
            system
                .hint()
                .unwrap()
                .contains("security.bsd.unprivileged_syspmcs")
        );
        assert_eq!(system.errno(), Some(1));
    }

    /// Oracle: libpmc's `pmc_init` (`lib/libpmc/libpmc.c`) fails when `modfind` does (errno
    /// ENOENT when no module has the name); `pmc_do_op_pmcattach` returns `p_candebug`'s
    /// error and EBUSY for a running PMC.
    #[test]
    fn module_and_attach_errors_carry_hints() {
        let missing = map_errno(&Operation::FindModule, Errno::ENOENT);
        assert_eq!(missing.kind(), ErrorKind::DeviceMissing);
        assert!(missing.hint().unwrap().contains("kldload hwpmc"));
        let denied = map_errno(&Operation::Attach { pid: 7 }, Errno::EPERM);
        assert_eq!(denied.kind(), ErrorKind::PermissionDenied);
        assert!(denied.hint().unwrap().contains("unprivileged_proc_debug"));
        let busy = map_errno(&Operation::Attach { pid: 7 }, Errno::EBUSY);
        assert_eq!(busy.kind(), ErrorKind::Busy);
        assert_eq!(
            map_errno(&Operation::Attach { pid: 7 }, Errno::ESRCH).kind(),
            ErrorKind::NotFound
        );
        let old = map_errno(&Operation::Handshake, Errno::EPROGMISMATCH);
        assert_eq!(old.kind(), ErrorKind::Unsupported);
        assert!(old.to_string().contains("EPROGMISMATCH (75)"), "{old}");
    }
}
