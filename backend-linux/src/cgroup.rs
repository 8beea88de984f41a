//! Counting by cgroup (`Target::Cgroup`): the cgroup's directory, opened to be passed as
//! `perf_event_open`'s `pid` under `PERF_FLAG_PID_CGROUP`, and what the kernel's refusals
//! mean there.

use std::os::fd::OwnedFd;
use std::path::Path;

use counterhal_hal::{Error, Result, Target};

/// The directory of a [`Target::Cgroup`], opened for `perf_event_open` (`pid` is its
/// descriptor under `PERF_FLAG_PID_CGROUP`).
///
/// # Errors
/// [`ErrorKind::NotFound`](counterhal_hal::ErrorKind::NotFound) naming the path when it cannot
/// be opened (no such cgroup), [`ErrorKind::PermissionDenied`](counterhal_hal::ErrorKind::PermissionDenied)
/// when it may not be read.
pub(crate) fn open_cgroup(path: &Path) -> Result<OwnedFd> {
    let shown = path.display();
    match std::fs::File::open(path) {
        Ok(dir) => Ok(OwnedFd::from(dir)),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(Error::new(
            counterhal_hal::ErrorKind::PermissionDenied,
            format!("no access to cgroup {shown}"),
        )
        .with_errno(e.raw_os_error().unwrap_or(0))
        .with_hint("the cgroup's directory must be readable by this user")),
        Err(e) => Err(Error::new(
            counterhal_hal::ErrorKind::NotFound,
            format!("no access to cgroup {shown}: {e}"),
        )
        .with_errno(e.raw_os_error().unwrap_or(0))
        .with_hint(
            "name a cgroup that exists: a directory under the perf_event (or cgroup2) mount",
        )),
    }
}

/// The path of a [`Target::Cgroup`] (an empty path for any other target).
pub(crate) fn path_of(target: &Target) -> &Path {
    match target {
        Target::Cgroup { path, .. } => path,
        _ => Path::new(""),
    }
}

/// Why the kernel refused an event in cgroup `path`: EBADF, the directory is no cgroup of
/// the perf_event hierarchy; EINVAL, a kernel without `CONFIG_CGROUP_PERF` (or an event it
/// refuses anyway).
pub(crate) fn cgroup_refused(errno: i32, path: &Path) -> Error {
    let shown = path.display();
    let (message, hint) = if errno == libc::EBADF {
        (
            format!("{shown} is not a cgroup the kernel counts events in"),
            "name a cgroup of the perf_event controller's hierarchy, or of the cgroup2 one",
        )
    } else {
        (
            format!(
                "the kernel refused to count in cgroup {shown} (EINVAL): it counts by cgroup \
                 only when built with CONFIG_CGROUP_PERF"
            ),
            "check `grep CGROUP_PERF /boot/config-$(uname -r)` (or /proc/config.gz); without \
             it, count every CPU with -a and no -G",
        )
    };
    Error::new(counterhal_hal::ErrorKind::Unsupported, message)
        .with_errno(errno)
        .with_hint(hint)
}
