//! The container a cgroup belongs to outside Kubernetes, read from its path as container
//! runtimes name a container's cgroup (cgroup v2, and runc's in each v1 hierarchy), for the
//! `container_id` label of its series: podman with runc (`libpod_parent/libpod-<ID>` with its
//! cgroupfs manager, as podman 4.3 places a container on Debian 12 here;
//! `machine.slice/libpod-<ID>.scope` with systemd's), Docker (`system.slice/docker-<ID>.scope`, `docker/<ID>` with cgroupfs), containerd's CRI
//! plugin and CRI-O (`cri-containerd-<ID>.scope`, `crio-<ID>.scope`). The ID is 64 hex
//! digits. A cgroup below a container's is that container's.

use super::kubernetes::Pod;

/// Where the runtimes put a container's cgroup outside Kubernetes, at the top of the cgroup
/// mount, and whether a bare ID names one there: podman's cgroupfs manager
/// (`libpod_parent/libpod-<ID>`, `libpod_parent/<ID>`), Docker's (`docker/<ID>`), and the
/// systemd managers' scopes (`machine.slice/libpod-<ID>.scope`,
/// `system.slice/docker-<ID>.scope`). Only there: the same names in a user's delegated subtree
/// are that user's cgroups, not a runtime's.
const PARENTS: [(&str, bool); 4] = [
    ("libpod_parent", true),
    ("docker", true),
    ("machine.slice", false),
    ("system.slice", false),
];

/// The labels of the container whose cgroup `path` is (or lies below), where a runtime made
/// it outside a pod: its `container_id`, no pod UID or QoS class.
pub(crate) fn outside_pod(path: &str) -> Option<Pod> {
    let mut parts = path.split('/').filter(|p| !p.is_empty());
    let (parent, part) = (parts.next()?, parts.next()?);
    let (_, bare) = PARENTS.iter().find(|(name, _)| *name == parent)?;
    let container_id = super::container_id(part, *bare)?;
    Some(Pod {
        container_id,
        ..Pod::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "7900dd1d8986b4e669faa9023deac1229f44ebb5217cd940b98de33f15ff0ff5";

    /// Oracle: podman 4.3.1 with runc 1.1.5 (Debian 12), its cgroupfs manager: a container's
    /// `/proc/PID/cgroup` reads `0::/libpod_parent/libpod-<ID>`; and the names the runtimes'
    /// systemd managers give (`libpod-<ID>.scope`, `docker-<ID>.scope`).
    #[test]
    fn a_runtimes_container_cgroup_names_its_container() {
        for path in [
            format!("/libpod_parent/libpod-{ID}"),
            format!("/machine.slice/libpod-{ID}.scope"),
            format!("/system.slice/docker-{ID}.scope"),
            format!("/docker/{ID}"),
            format!("/libpod_parent/{ID}"),
            format!("/libpod_parent/libpod-{ID}/inner"),
        ] {
            let pod = outside_pod(&path).unwrap_or_else(|| panic!("{path}"));
            assert_eq!(pod.container_id, ID, "{path}");
            assert!(pod.uid.is_empty() && pod.qos_class.is_empty());
        }
        for path in [
            "/libpod_parent".to_string(),
            format!("/user.slice/{ID}"),
            format!("/app/libpod_parent/libpod-{ID}"),
            format!("/delegated/docker-{ID}.scope"),
            format!("/libpod_parent/libpod-{}", &ID[1..]),
            "/system.slice/docker.service".to_string(),
        ] {
            assert_eq!(outside_pod(&path), None, "{path}");
        }
    }
}
