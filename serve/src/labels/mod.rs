//! Where a followed cgroup's labels come from, one module each: its path ([`cgroup`], the
//! `cgroup` label every cgroup has), the kubelet's layouts ([`kubernetes`]: pod UID, QoS
//! class, container), the names of the kubelet's log directories ([`kubelet_logs`]: the pod's
//! namespace and name, the container's name), the container runtimes' outside Kubernetes
//! ([`containers`]: podman's, Docker's) and slurmstepd's ([`slurm`]: job, step, task). A new
//! source of labels is a module here, asked by the counting's cgroups as these are.

pub(crate) mod cgroup;
pub(crate) mod containers;
pub(crate) mod kubelet_logs;
pub(crate) mod kubernetes;
pub(crate) mod slurm;

/// The prefixes of a container's cgroup: podman's, containerd's CRI plugin's, CRI-O's,
/// Docker's.
const RUNTIME_PREFIXES: [&str; 4] = ["libpod-", "cri-containerd-", "crio-", "docker-"];

/// The container ID `part` names as a runtime names a container's cgroup (`libpod-<ID>`,
/// `docker-<ID>.scope`), lower-case; a bare ID where `bare` (a parent that holds them).
pub(crate) fn container_id(part: &str, bare: bool) -> Option<String> {
    let name = part.strip_suffix(".scope").unwrap_or(part);
    let id = match RUNTIME_PREFIXES.iter().find_map(|p| name.strip_prefix(p)) {
        Some(id) => id,
        None if bare => name,
        None => return None,
    };
    let is_id = id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit());
    is_id.then(|| id.to_ascii_lowercase())
}
