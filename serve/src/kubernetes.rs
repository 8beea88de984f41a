//! The pod and container a cgroup belongs to, read from its path as the kubelet and the
//! container runtimes name them (cgroup v2), for the `pod_uid`, `container_id` and
//! `qos_class` labels of its series.
//!
//! The kubelet names a pod's cgroup `{kubepods, QOS, pod<UID>}` (QOS left out for a
//! guaranteed pod), below its `--cgroup-root` (`pkg/kubelet/cm/cgroup_manager_linux.go`,
//! `qos_container_manager_linux.go`, `pod_container_manager_linux.go`):
//!
//! - the cgroupfs driver joins the parts as they are: `/kubepods/burstable/pod<UID>`,
//!   `/kubepods/pod<UID>`;
//! - the systemd driver escapes each part's `-` as `_` (`escapeSystemdCgroupName`) and makes
//!   each level a slice whose name repeats its parents' (`ToSystemd`):
//!   `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<UID with _>.slice`,
//!   `/kubepods.slice/kubepods-pod<UID with _>.slice`; under a cgroup root (`/kubelet`, as
//!   kind's nodes have) the first level is `kubelet.slice/kubelet-kubepods.slice`.
//!
//! A container's cgroup is the pod's child: with the systemd driver a scope named after the
//! runtime (`cri-containerd-<ID>.scope`, `crio-<ID>.scope`, `docker-<ID>.scope`), with the
//! cgroupfs driver the bare ID (CRI-O's `crio-<ID>`); the ID is 64 hex digits. Anything
//! below a container's cgroup is that container's.

/// The Kubernetes labels of a pod's (or a container's) cgroup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pod {
    /// The pod's UID in the API's form (`metadata.uid`, with `-`): kube-state-metrics'
    /// `uid` label.
    pub uid: String,
    /// The container's ID (64 hex digits, without the API's `containerd://` prefix); empty
    /// for the pod's own cgroup.
    pub container_id: String,
    /// The pod's QoS class as its cgroup names it: `guaranteed`, `burstable` or
    /// `besteffort`.
    pub qos_class: &'static str,
}

/// The QoS classes below `kubepods` that have a level of their own.
const QOS_LEVELS: [&str; 2] = ["burstable", "besteffort"];

/// The runtimes' prefixes of a container's cgroup (containerd's CRI plugin, CRI-O, Docker).
const RUNTIME_PREFIXES: [&str; 3] = ["cri-containerd-", "crio-", "docker-"];

/// The pod whose cgroup (or whose container's cgroup) `path` is, a path below the cgroup
/// mount as `/proc/PID/cgroup` shows it; `None` for a cgroup that is no pod's (the
/// `kubepods` and QoS levels included).
pub fn pod(path: &str) -> Option<Pod> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let top = parts.iter().position(|p| {
        *p == "kubepods" || *p == "kubepods.slice" || p.ends_with("-kubepods.slice")
    })?;
    let (qos_class, pod_at, uid) = match parts[top].strip_suffix(".slice") {
        Some(prefix) => systemd_pod(prefix, &parts[top + 1..])?,
        None => cgroupfs_pod(&parts[top + 1..])?,
    };
    let container_id = parts
        .get(top + 1 + pod_at + 1)
        .and_then(|part| container(part))
        .unwrap_or_default();
    Some(Pod {
        uid,
        container_id,
        qos_class,
    })
}

/// The QoS class, the pod level's index in `below` and the UID, where `below` (the parts
/// after the systemd driver's `<prefix>.slice`) starts with a pod's slices.
fn systemd_pod(prefix: &str, below: &[&str]) -> Option<(&'static str, usize, String)> {
    let first = below.first()?.strip_suffix(".slice")?;
    let first = first.strip_prefix(prefix)?.strip_prefix('-')?;
    if let Some(escaped) = first.strip_prefix("pod") {
        return Some(("guaranteed", 0, uid(&escaped.replace('_', "-"))?));
    }
    let qos = QOS_LEVELS.into_iter().find(|q| *q == first)?;
    let pod = below.get(1)?.strip_suffix(".slice")?;
    let escaped = pod
        .strip_prefix(prefix)?
        .strip_prefix('-')?
        .strip_prefix(qos)?
        .strip_prefix("-pod")?;
    Some((qos, 1, uid(&escaped.replace('_', "-"))?))
}

/// As [`systemd_pod`], for the parts after the cgroupfs driver's `kubepods`.
fn cgroupfs_pod(below: &[&str]) -> Option<(&'static str, usize, String)> {
    let first = *below.first()?;
    if let Some(uid_text) = first.strip_prefix("pod") {
        return Some(("guaranteed", 0, uid(uid_text)?));
    }
    let qos = QOS_LEVELS.into_iter().find(|q| *q == first)?;
    let uid_text = below.get(1)?.strip_prefix("pod")?;
    Some((qos, 1, uid(uid_text)?))
}

/// `text` where it is a pod UID: lower-case hex digits and dashes (a UUID, or a static
/// pod's 32-digit hash), at most 64 characters.
fn uid(text: &str) -> Option<String> {
    let fits = !text.is_empty()
        && text.len() <= 64
        && text.bytes().any(|b| b.is_ascii_hexdigit())
        && text
            .bytes()
            .all(|b| b == b'-' || b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    fits.then(|| text.to_string())
}

/// The container ID that a pod's child cgroup `part` names (a runtime's scope or the bare
/// ID), if it names one.
fn container(part: &str) -> Option<String> {
    let name = part.strip_suffix(".scope").unwrap_or(part);
    let id = RUNTIME_PREFIXES
        .iter()
        .find_map(|prefix| name.strip_prefix(prefix))
        .unwrap_or(name);
    let is_id = id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit());
    is_id.then(|| id.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
    const ID: &str = "4f5c0c0e3fd7e2a0a0b2f0d3c4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f607";

    fn labels(path: &str) -> Option<(String, String, &'static str)> {
        pod(path).map(|p| (p.uid, p.container_id, p.qos_class))
    }

    /// Every layout of the kubelet's two drivers and the three runtimes' scopes.
    ///
    /// Oracle: kubernetes' `pkg/kubelet/cm/cgroup_manager_linux.go` (`ToSystemd` and
    /// `escapeSystemdCgroupName`: `{kubepods, burstable, pod1234-abcd}` is
    /// `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd.slice`;
    /// `ToCgroupfs` joins the parts), `qos_container_manager_linux.go` (guaranteed pods sit
    /// under `kubepods` itself) and `SystemdPathPrefixOfRuntime` (`cri-containerd`, `crio`),
    /// with Docker's `docker-<ID>.scope`.
    #[test]
    fn pods_and_containers_are_named_in_every_layout() {
        let escaped = UID.replace('-', "_");
        let systemd_burstable = format!(
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{escaped}.slice"
        );
        let pod_only = |qos| Some((UID.to_string(), String::new(), qos));
        let in_container = |qos| Some((UID.to_string(), ID.to_string(), qos));
        assert_eq!(labels(&systemd_burstable), pod_only("burstable"));
        for scope in ["cri-containerd", "crio", "docker"] {
            let path = format!("{systemd_burstable}/{scope}-{ID}.scope");
            assert_eq!(labels(&path), in_container("burstable"), "{path}");
        }
        let besteffort = format!(
            "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{escaped}.slice/\
             cri-containerd-{ID}.scope"
        );
        assert_eq!(labels(&besteffort), in_container("besteffort"));
        let guaranteed = format!("/kubepods.slice/kubepods-pod{escaped}.slice");
        assert_eq!(labels(&guaranteed), pod_only("guaranteed"));
        let guaranteed_crio = format!("{guaranteed}/crio-{ID}.scope");
        assert_eq!(labels(&guaranteed_crio), in_container("guaranteed"));
        // Below a --cgroup-root (kind's nodes: /kubelet), and a container's own children.
        let rooted = format!(
            "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/\
             kubelet-kubepods-besteffort-pod{escaped}.slice/cri-containerd-{ID}.scope/init"
        );
        assert_eq!(labels(&rooted), in_container("besteffort"));

        // The cgroupfs driver: the UID as the API writes it, the container's bare ID.
        assert_eq!(
            labels(&format!("/kubepods/burstable/pod{UID}")),
            pod_only("burstable")
        );
        assert_eq!(
            labels(&format!("/kubepods/besteffort/pod{UID}/{ID}")),
            in_container("besteffort")
        );
        assert_eq!(
            labels(&format!("/kubepods/pod{UID}/{ID}")),
            in_container("guaranteed")
        );
        assert_eq!(
            labels(&format!("/kubepods/pod{UID}/crio-{ID}")),
            in_container("guaranteed")
        );
        // A static pod's UID is the kubelet's 32-digit hash of its file.
        let hash = "a1b2c3d4e5f60718293a4b5c6d7e8f90";
        assert_eq!(
            labels(&format!("/kubepods.slice/kubepods-pod{hash}.slice")),
            Some((hash.to_string(), String::new(), "guaranteed"))
        );
    }

    /// Cgroups that are no pod's get no labels; a pod's child that is no container (CRI-O's
    /// conmon, a sandbox of another kind) gets the pod's labels alone.
    ///
    /// Oracle: the same kubelet sources (the `kubepods` and QoS levels hold pods; the UID is
    /// the API's `types.UID`, hex digits and dashes).
    #[test]
    fn cgroups_that_are_no_pods_get_no_labels() {
        for path in [
            "/",
            "",
            "/system.slice/kubelet.service",
            "/kubepods.slice",
            "/kubepods.slice/kubepods-burstable.slice",
            "/kubepods/besteffort",
            "/kubepods",
            "/kubepods.slice/kubepods-podnothex.slice",
            "/kubepods.slice/kubepods-pod.slice",
            "/kubepods.slice/kubepods-guaranteed.slice/kubepods-guaranteed-pod0f1e.slice",
            "/kubepods.slice/kubepods-burstable.slice/kubepods-besteffort-pod0f1e.slice",
            "/kubepods/burstable/0f1e",
            "/user.slice/user-1000.slice/session-2.scope",
        ] {
            assert_eq!(labels(path), None, "{path}");
        }
        let conmon = format!(
            "/kubepods.slice/kubepods-pod{}.slice/crio-conmon-{ID}.scope",
            UID.replace('-', "_")
        );
        assert_eq!(
            labels(&conmon),
            Some((UID.to_string(), String::new(), "guaranteed"))
        );
        let short = format!("/kubepods/pod{UID}/{}", &ID[..12]);
        assert_eq!(
            labels(&short),
            Some((UID.to_string(), String::new(), "guaranteed"))
        );
    }
}
