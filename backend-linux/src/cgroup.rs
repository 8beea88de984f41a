//! Counting by cgroup (`BackendTarget::Cgroup`): the cgroup's directory, opened to be passed as
//! `perf_event_open`'s `pid` under `PERF_FLAG_PID_CGROUP`, and what the kernel's refusals
//! mean there.

use std::os::fd::OwnedFd;
use std::path::Path;

use counterhal_hal::{BackendTarget, Error, Result};
use counterhal_system::{Mount, System};

/// The directory of a [`BackendTarget::Cgroup`], opened for `perf_event_open` (`pid` is its
/// descriptor under `PERF_FLAG_PID_CGROUP`).
///
/// # Errors
/// [`ErrorKind::NotFound`](counterhal_hal::ErrorKind::NotFound) naming the path when it cannot
/// be opened (no such cgroup), [`ErrorKind::PermissionDenied`](counterhal_hal::ErrorKind::PermissionDenied)
/// when it may not be read.
pub(crate) fn open_cgroup(system: &System, path: &Path) -> Result<OwnedFd> {
    let shown = path.display();
    match system.open_cgroup(path) {
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

/// Where the `perf_event` controller is bound to a cgroup v1 hierarchy (a hybrid host), that
/// hierarchy in words; `None` where it is on the cgroup v2 one. Read from the mounts
/// (`/proc/self/mountinfo`: a v1 mount with `perf_event` among its options) and the
/// controller's hierarchy (`/proc/cgroups`: 0 is v2's), either of which says so.
pub(crate) fn perf_event_on_v1(system: &System) -> Option<String> {
    let mounts = system.mounts().unwrap_or_default();
    perf_event_v1_in(&mounts, system.controller_hierarchy("perf_event"))
}

/// [`perf_event_on_v1`] from the mounts and the `perf_event` controller's hierarchy.
fn perf_event_v1_in(mounts: &[Mount], hierarchy: Option<u32>) -> Option<String> {
    if let Some(v1) = mounts.iter().find(|m| m.is_cgroup_v1_with("perf_event")) {
        return Some(format!(
            "the cgroup v1 hierarchy mounted at {} (/proc/self/mountinfo)",
            v1.mount_point.display()
        ));
    }
    let hierarchy = hierarchy?;
    (hierarchy != 0).then(|| format!("cgroup v1 hierarchy {hierarchy} (/proc/cgroups)"))
}

/// Whether the running kernel's configuration, where `/boot/config-RELEASE` tells, has
/// `CONFIG_CGROUP_PERF=y`; `None` where it does not tell.
fn kernel_counts_cgroups(system: &System) -> Option<bool> {
    system.kernel_built_with("CONFIG_CGROUP_PERF")
}

/// Why the kernel refused an event in cgroup `path`, where the errno says it is the cgroup's
/// doing: EBADF, the directory is no cgroup directory; ENOENT, a cgroup of a hierarchy
/// without the perf_event controller (or one being removed); EINVAL on a kernel whose
/// configuration says it was built without `CONFIG_CGROUP_PERF`. `None` for every other
/// errno (permissions, limits, the event's own fault), for the usual mapping.
pub(crate) fn cgroup_refused(system: &System, errno: i32, path: &Path) -> Option<Error> {
    let shown = path.display();
    let (message, hint) = if errno == libc::EBADF {
        (
            format!("{shown} is not a cgroup the kernel counts events in"),
            "name a cgroup of the perf_event controller's hierarchy, or of the cgroup2 one"
                .to_string(),
        )
    } else if errno == libc::ENOENT {
        match perf_event_on_v1(system) {
            // A hybrid host: the cgroup2 cgroups count no perf event.
            Some(hierarchy) => (
                format!(
                    "the kernel found no perf_event controller for cgroup {shown} (ENOENT): \
                     the perf_event controller is bound to {hierarchy}"
                ),
                "count cgroup2 cgroups in the BPF mode (serve --cgroup-mode bpf, stat -b), \
                 whose program reads each task's cgroup2 cgroup, or name a cgroup of \
                 perf_event's v1 hierarchy"
                    .to_string(),
            ),
            None => (
                format!(
                    "the kernel found no perf_event controller for cgroup {shown} (ENOENT): \
                     its hierarchy does not count events, or the cgroup is being removed"
                ),
                "name a cgroup of the perf_event controller's hierarchy, or of the cgroup2 one"
                    .to_string(),
            ),
        }
    } else if errno == libc::EINVAL && kernel_counts_cgroups(system) == Some(false) {
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

    /// A hybrid host's files (Debian 11's systemd in its default hybrid layout: cgroup v1
    /// hierarchies under /sys/fs/cgroup, perf_event among them, cgroup2 at
    /// /sys/fs/cgroup/unified) say perf_event is on v1; a host all on cgroup v2 (this
    /// project's VMs: v1 hierarchies for other controllers, perf_event on none) does not.
    ///
    /// Oracle: the kernel's `/proc/cgroups` (`proc_cgroupstats_show`, kernel/cgroup/cgroup-v1.c:
    /// the default hierarchy's id is 0) and mountinfo's layout (proc(5)).
    #[test]
    fn perf_event_on_a_v1_hierarchy_is_found() {
        let hybrid_mounts = "\
35 25 0:30 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
43 34 0:38 / /sys/fs/cgroup/perf_event rw,nosuid,nodev,noexec,relatime shared:21 - cgroup cgroup rw,perf_event
44 34 0:39 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:22 - cgroup cgroup rw,cpu,cpuacct
";
        let hybrid_cgroups = "#subsys_name\thierarchy\tnum_cgroups\tenabled\n\
cpu\t5\t80\t1\nperf_event\t9\t1\t1\n";
        let mounts = |text: &str| -> Vec<Mount> { text.lines().filter_map(Mount::parse).collect() };
        let said = perf_event_v1_in(&mounts(hybrid_mounts), None).expect("the perf_event mount");
        assert!(said.contains("/sys/fs/cgroup/perf_event"), "{said}");
        let hierarchy = perf_event_hierarchy(hybrid_cgroups);
        let said = perf_event_v1_in(&[], hierarchy).expect("hierarchy 9");
        assert!(said.contains("hierarchy 9"), "{said}");
        let unified_mounts = "\
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
        let unified_cgroups = "#subsys_name\thierarchy\tnum_cgroups\tenabled\n\
cpu\t1\t1\t1\nperf_event\t0\t1\t1\n";
        let hierarchy = perf_event_hierarchy(unified_cgroups);
        assert_eq!(hierarchy, Some(0));
        assert_eq!(perf_event_v1_in(&mounts(unified_mounts), hierarchy), None);
        assert_eq!(perf_event_v1_in(&[], None), None);
    }

    /// The `perf_event` controller's hierarchy as a system reads it from a procfs tree of the
    /// test's own whose `cgroups` holds `text`.
    fn perf_event_hierarchy(text: &str) -> Option<u32> {
        let root = std::env::temp_dir().join(format!(
            "counterhal-cgroups-{}-{}",
            std::process::id(),
            text.len()
        ));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("cgroups"), text).unwrap();
        let hierarchy = System::host()
            .with_procfs(&root)
            .controller_hierarchy("perf_event");
        std::fs::remove_dir_all(&root).unwrap();
        hierarchy
    }

    #[test]
    fn refusals_name_the_cgroup_and_the_kernel_setting() {
        let path = Path::new("/sys/fs/cgroup/web");
        let not_one =
            cgroup_refused(&System::host(), libc::EBADF, path).expect("EBADF is the directory's");
        assert_eq!(not_one.kind(), counterhal_hal::ErrorKind::Unsupported);
        assert!(
            not_one.message().contains("/sys/fs/cgroup/web"),
            "{not_one}"
        );
        let no_controller =
            cgroup_refused(&System::host(), libc::ENOENT, path).expect("ENOENT is the cgroup's");
        assert!(
            no_controller.message().contains("perf_event controller"),
            "{no_controller}"
        );
        // EINVAL blames the kernel's configuration only where it says it was built without.
        match (
            cgroup_refused(&System::host(), libc::EINVAL, path),
            kernel_counts_cgroups(&System::host()),
        ) {
            (None, Some(true) | None) => {}
            (Some(e), Some(false)) => {
                assert!(e.message().contains("CONFIG_CGROUP_PERF"), "{e}");
            }
            (refused, config) => panic!("{refused:?} with CONFIG_CGROUP_PERF {config:?}"),
        }
        // Permissions and limits are not the cgroup's: the usual mapping names them.
        for errno in [libc::EACCES, libc::EPERM, libc::EMFILE, libc::ENODEV] {
            assert!(
                cgroup_refused(&System::host(), errno, path).is_none(),
                "errno {errno}"
            );
        }
        let missing =
            open_cgroup(&System::host(), Path::new("/counterhal-no-such-cgroup")).unwrap_err();
        assert_eq!(missing.kind(), counterhal_hal::ErrorKind::NotFound);
        assert!(
            missing
                .message()
                .starts_with("no access to cgroup /counterhal-no-such-cgroup"),
            "{missing}"
        );
    }
}
