//! Counting by cgroup (`BackendTarget::Cgroup`): the cgroup's directory, opened to be passed as
//! `perf_event_open`'s `pid` under `PERF_FLAG_PID_CGROUP`, and what the kernel's refusals
//! mean there.

use std::os::fd::OwnedFd;
use std::path::Path;

use counterhal_hal::{BackendTarget, Error, Result};

/// The directory of a [`BackendTarget::Cgroup`], opened for `perf_event_open` (`pid` is its
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

/// The path of a [`BackendTarget::Cgroup`] (an empty path for any other target).
pub(crate) fn path_of(target: &BackendTarget) -> &Path {
    match target {
        BackendTarget::Cgroup { path, .. } => path,
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

/// Why the kernel refused an event in cgroup `path`, where the errno says it is the cgroup's
/// doing: EBADF, the directory is no cgroup directory; ENOENT, a cgroup of a hierarchy
/// without the perf_event controller (or one being removed); EINVAL on a kernel whose
/// configuration says it was built without `CONFIG_CGROUP_PERF`. `None` for every other
/// errno (permissions, limits, the event's own fault), for the usual mapping.
pub(crate) fn cgroup_refused(errno: i32, path: &Path) -> Option<Error> {
    let shown = path.display();
    let (message, hint) = if errno == libc::EBADF {
        (
            format!("{shown} is not a cgroup the kernel counts events in"),
            "name a cgroup of the perf_event controller's hierarchy, or of the cgroup2 one"
                .to_string(),
        )
    } else if errno == libc::ENOENT {
        (
            format!(
                "the kernel found no perf_event controller for cgroup {shown} (ENOENT): its \
                 hierarchy does not count events, or the cgroup is being removed"
            ),
            "name a cgroup of the perf_event controller's hierarchy, or of the cgroup2 one"
                .to_string(),
        )
    } else if errno == libc::EINVAL && kernel_counts_cgroups() == Some(false) {
        (
            format!(
                "the kernel refused to count in cgroup {shown} (EINVAL): it counts by cgroup \
                 only with CONFIG_CGROUP_PERF, and this kernel was built without it"
            ),
            "check `zgrep CGROUP_PERF /proc/config.gz` (or /boot/config-$(uname -r)); without \
             it, count every CPU with -a and no -G"
                .to_string(),
        )
    } else {
        return None;
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
        let no_controller = cgroup_refused(libc::ENOENT, path).expect("ENOENT is the cgroup's");
        assert!(
            no_controller.message().contains("perf_event controller"),
            "{no_controller}"
        );
        // EINVAL blames the kernel's configuration only where it says it was built without.
        match (cgroup_refused(libc::EINVAL, path), kernel_counts_cgroups()) {
            (None, Some(true) | None) => {}
            (Some(e), Some(false)) => {
                assert!(e.message().contains("CONFIG_CGROUP_PERF"), "{e}");
            }
            (refused, config) => panic!("{refused:?} with CONFIG_CGROUP_PERF {config:?}"),
        }
        // Permissions and limits are not the cgroup's: the usual mapping names them.
        for errno in [libc::EACCES, libc::EPERM, libc::EMFILE, libc::ENODEV] {
            assert!(cgroup_refused(errno, path).is_none(), "errno {errno}");
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
