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

/// Whether the running kernel's configuration, where `/boot/config-RELEASE` tells, has
/// `CONFIG_CGROUP_PERF=y`; `None` where it does not tell.
fn kernel_counts_cgroups() -> Option<bool> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    let config = std::fs::read_to_string(format!("/boot/config-{}", release.trim())).ok()?;
    Some(config.lines().any(|line| line == "CONFIG_CGROUP_PERF=y"))
}

/// Why the kernel refused an event in cgroup `path`: EBADF, the directory is no cgroup of
/// the perf_event hierarchy; EINVAL, a kernel without `CONFIG_CGROUP_PERF`. `None` for an
/// EINVAL where the kernel's configuration says it counts by cgroup: the event's own fault,
/// for the usual mapping.
pub(crate) fn cgroup_refused(errno: i32, path: &Path) -> Option<Error> {
    if errno == libc::EINVAL && kernel_counts_cgroups() == Some(true) {
        return None;
    }
    let shown = path.display();
    let (message, hint) = if errno == libc::EBADF {
        (
            format!("{shown} is not a cgroup the kernel counts events in"),
            "name a cgroup of the perf_event controller's hierarchy, or of the cgroup2 one"
                .to_string(),
        )
    } else {
        let configured = match kernel_counts_cgroups() {
            Some(false) => "this kernel was built without it",
            _ => "a kernel built without it refuses every cgroup event",
        };
        (
            format!(
                "the kernel refused to count in cgroup {shown} (EINVAL): it counts by cgroup \
                 only with CONFIG_CGROUP_PERF, and {configured}"
            ),
            "check `zgrep CGROUP_PERF /proc/config.gz` (or /boot/config-$(uname -r)); without \
             it, count every CPU with -a and no -G"
                .to_string(),
        )
    };
    Some(
        Error::new(counterhal_hal::ErrorKind::Unsupported, message)
            .with_errno(errno)
            .with_hint(hint),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_cgroup_and_the_kernel_setting() {
        let path = Path::new("/sys/fs/cgroup/web");
        let not_one = cgroup_refused(libc::EBADF, path).expect("EBADF is the directory's");
        assert_eq!(not_one.kind(), counterhal_hal::ErrorKind::Unsupported);
        assert!(
            not_one.message().contains("/sys/fs/cgroup/web"),
            "{not_one}"
        );
        // EINVAL blames the kernel's configuration unless it says it counts by cgroup.
        match (cgroup_refused(libc::EINVAL, path), kernel_counts_cgroups()) {
            (None, Some(true)) => {}
            (Some(e), Some(false) | None) => {
                assert!(e.message().contains("CONFIG_CGROUP_PERF"), "{e}");
            }
            (refused, config) => panic!("{refused:?} with CONFIG_CGROUP_PERF {config:?}"),
        }
        let missing = open_cgroup(Path::new("/counterhal-no-such-cgroup")).unwrap_err();
        assert_eq!(missing.kind(), counterhal_hal::ErrorKind::NotFound);
        assert!(
            missing
                .message()
                .starts_with("no access to cgroup /counterhal-no-such-cgroup"),
            "{missing}"
        );
    }
}
