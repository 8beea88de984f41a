//! The pod and container a cgroup belongs to, read from its path as the kubelet and the
//! container runtimes name them (cgroup v2; on v1 the same paths, made in every controller's
//! hierarchy, the perf_event one included), for the `pod_uid`, `container_id` and
//! `qos_class` labels of its series (their names, `namespace`, `pod` and `container`, come
//! from the kubelet's log directories, read by `kubelet_logs.rs` beside this file).
//!
//! The kubelet names a pod's cgroup `{kubepods, QOS, pod<UID>}` (QOS left out for a
//! guaranteed pod), below its `--cgroup-root` (`/` by default;
//! `pkg/kubelet/cm/container_manager_linux.go` appends `kubepods` to it,
//! `cgroup_manager_linux.go`, `qos_container_manager_linux.go`,
//! `pod_container_manager_linux.go`):
//!
//! - the cgroupfs driver joins the parts as they are (`ToCgroupfs`): `/kubepods/burstable/
//!   pod<UID>`, `/kubepods/pod<UID>`; below the root `/kubelet`, `/kubelet/kubepods/...`;
//! - the systemd driver escapes each part's `-` as `_` (`escapeSystemdCgroupName`) and makes
//!   each level a slice whose name repeats its parents' (`ToSystemd`):
//!   `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<UID with _>.slice`,
//!   `/kubepods.slice/kubepods-pod<UID with _>.slice`; below the root `/kubelet` (kind's
//!   nodes), `/kubelet.slice/kubelet-kubepods.slice/...`.
//!
//! Pods are recognized there only ([`Kubelet`]): a `kubepods` anywhere else is a cgroup that
//! whoever may make cgroups there named so (a user's delegated subtree), not the kubelet's.
//!
//! A container's cgroup is the pod's child: with the systemd driver a scope named after the
//! runtime (`cri-containerd-<ID>.scope`, `crio-<ID>.scope`, `docker-<ID>.scope`), with the
//! cgroupfs driver the bare ID (CRI-O's `crio-<ID>`); the ID is 64 hex digits. Anything
//! below a container's cgroup is that container's.

/// The Kubernetes labels of a pod's (or a container's) cgroup; for a container outside
/// Kubernetes (a runtime's container outside a pod), its ID alone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pod {
    /// The pod's UID in the API's form (`metadata.uid`, with `-`): kube-state-metrics'
    /// `uid` label; empty outside Kubernetes.
    pub uid: String,
    /// The container's ID (64 hex digits, without the API's `containerd://` prefix); empty
    /// for the pod's own cgroup.
    pub container_id: String,
    /// The pod's QoS class as its cgroup names it: `guaranteed`, `burstable` or
    /// `besteffort`; empty outside Kubernetes.
    pub qos_class: &'static str,
    /// The pod's namespace (`metadata.namespace`), where the kubelet's log directories give
    /// it and it is chosen (`--kubelet-logs`, `--kubelet-log-labels`); else empty.
    pub namespace: String,
    /// The pod's name (`metadata.name`), likewise.
    pub name: String,
    /// The container's name (`spec.containers[].name`), on a container's cgroup, likewise.
    pub container: String,
}

/// The QoS classes below `kubepods` that have a level of their own.
const QOS_LEVELS: [&str; 2] = ["burstable", "besteffort"];

/// The longest `--kubelet-cgroup-root` taken (a cgroup path; Linux's `PATH_MAX`).
const MAX_ROOT: usize = 4096;

/// Where the kubelet makes the pods' cgroups: the node's `kubepods` cgroup below its
/// `--cgroup-root`, as each cgroup driver names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kubelet {
    /// The cgroupfs driver's `kubepods`, by its path's parts (`["kubepods"]`).
    cgroupfs: Vec<String>,
    /// The systemd driver's, by its slices (`["kubepods.slice"]`).
    systemd: Vec<String>,
}

impl Default for Kubelet {
    /// The kubelet's default `--cgroup-root`, `/`: `kubepods` at the top of the mount.
    fn default() -> Kubelet {
        Kubelet::new("/").expect("`/` is a cgroup root")
    }
}

impl Kubelet {
    /// The kubelet whose `--cgroup-root` is `root`, written as the kubelet takes it: a path
    /// below the cgroup mount (`/`, `/kubelet`), whichever its cgroup driver.
    ///
    /// # Errors
    /// `root` is no such path (relative, with an empty, `.` or `..` part, or longer than
    /// 4096 bytes), with what would be one.
    pub fn new(root: &str) -> Result<Kubelet, String> {
        let bad = |why: &str| {
            format!(
                "`{root}` is not a kubelet --cgroup-root ({why}): a path below the cgroup mount \
                 as the kubelet takes it, `/` (its default) or `/NAME[/NAME...]` (kind's nodes: \
                 `/kubelet`)"
            )
        };
        let below = root
            .strip_prefix('/')
            .ok_or_else(|| bad("it does not start with /"))?;
        if root.len() > MAX_ROOT {
            return Err(bad("longer than 4096 bytes"));
        }
        let below = below.strip_suffix('/').unwrap_or(below);
        let mut names: Vec<&str> = match below {
            "" => Vec::new(),
            below => below.split('/').collect(),
        };
        if names
            .iter()
            .any(|n| n.is_empty() || *n == "." || *n == "..")
        {
            return Err(bad("an empty, `.` or `..` part"));
        }
        names.push("kubepods");
        // ToSystemd: the parts escaped and joined by `-`, each level a slice of its prefix.
        let escaped: Vec<String> = names.iter().map(|n| n.replace('-', "_")).collect();
        let systemd = (1..=escaped.len())
            .map(|level| format!("{}.slice", escaped[..level].join("-")))
            .collect();
        Ok(Kubelet {
            cgroupfs: names.iter().map(|n| n.to_string()).collect(),
            systemd,
        })
    }

    /// The pod whose cgroup (or whose container's cgroup) `path` is, a path below the cgroup
    /// mount as `/proc/PID/cgroup` shows it; `None` for a cgroup that is no pod's (the
    /// `kubepods` and QoS levels included, and any cgroup outside this kubelet's `kubepods`).
    pub fn pod(&self, path: &str) -> Option<Pod> {
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        let below = |top: &[String]| {
            let starts = parts.len() > top.len() && parts.iter().zip(top).all(|(p, t)| p == t);
            starts.then(|| &parts[top.len()..])
        };
        let (below, (qos_class, pod_at, uid)) = if let Some(below) = below(&self.cgroupfs) {
            (below, cgroupfs_pod(below)?)
        } else {
            let below = below(&self.systemd)?;
            let prefix = self.systemd.last()?.strip_suffix(".slice")?;
            (below, systemd_pod(prefix, below)?)
        };
        let container_id = below
            .get(pod_at + 1)
            .and_then(|part| container(part))
            .unwrap_or_default();
        Some(Pod {
            uid,
            container_id,
            qos_class,
            ..Pod::default()
        })
    }
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
pub(crate) fn uid(text: &str) -> Option<String> {
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
    super::container_id(part, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
    const ID: &str = "4f5c0c0e3fd7e2a0a0b2f0d3c4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f607";

    /// The labels of `path`'s cgroup, by a kubelet of `root`.
    fn labels_below(root: &str, path: &str) -> Option<(String, String, &'static str)> {
        let kubelet = Kubelet::new(root).unwrap();
        kubelet
            .pod(path)
            .map(|p| (p.uid, p.container_id, p.qos_class))
    }

    /// The labels of `path`'s cgroup, by a kubelet of the default root.
    fn labels(path: &str) -> Option<(String, String, &'static str)> {
        labels_below("/", path)
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
        assert_eq!(
            labels_below("/kubelet", &rooted),
            in_container("besteffort")
        );

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

    /// A `kubepods` the kubelet did not make gets no labels: below the default root, pods are
    /// recognized at the top of the mount only, so a user's delegated subtree that copies the
    /// layout (`.../app/kubepods/pod<a victim's UID>/<ID>`) is not labelled as the victim's
    /// pod; below another root, at that root only.
    ///
    /// Oracle: kubernetes' `pkg/kubelet/cm/container_manager_linux.go` (the pods' root is
    /// `NewCgroupName(ParseCgroupfsToCgroupName(--cgroup-root), "kubepods")`; `NodeAllocatableRoot`
    /// in `helpers_linux.go`), with the kubelet's `--cgroup-root` `/` where none is given
    /// (`cmd/kubelet/app/server.go`, "defaulting to /").
    #[test]
    fn a_kubepods_the_kubelet_did_not_make_gets_no_labels() {
        let escaped = UID.replace('-', "_");
        for path in [
            format!("/user.slice/user-1000.slice/user@1000.service/app/kubepods/pod{UID}/{ID}"),
            format!("/app/kubepods/burstable/pod{UID}"),
            format!("/app/kubepods.slice/kubepods-pod{escaped}.slice/crio-{ID}.scope"),
            format!("/user.slice/kubepods.slice/kubepods-pod{escaped}.slice"),
            format!("/app/x-kubepods.slice/x-kubepods-pod{escaped}.slice"),
            // The layout of the root /kubelet, under the default root.
            format!("/kubelet/kubepods/pod{UID}/{ID}"),
            format!("/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod{escaped}.slice"),
        ] {
            assert_eq!(labels(&path), None, "{path}");
        }
        // Under the root /kubelet, the top-level layouts are no pod's either.
        for path in [
            format!("/kubepods/pod{UID}/{ID}"),
            format!("/kubepods.slice/kubepods-pod{escaped}.slice"),
            format!("/app/kubelet/kubepods/pod{UID}"),
        ] {
            assert_eq!(labels_below("/kubelet", &path), None, "{path}");
        }
    }

    /// Below a `--cgroup-root` other than `/`, each driver's layout is the kubelet's: the
    /// cgroupfs driver's `<root>/kubepods/...`, the systemd driver's slices named by every
    /// level before them, a `-` in the root escaped as `_`.
    ///
    /// Oracle: kubernetes' `pkg/kubelet/cm/cgroup_manager_linux.go` (`ToCgroupfs`;
    /// `ToSystemd` with runc's `ExpandSlice`: `{kubelet, kubepods, burstable, pod1234-abcd}` is
    /// `/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/
    /// kubelet-kubepods-burstable-pod1234_abcd.slice`), kind's node image's
    /// `cgroupRoot: /kubelet`.
    #[test]
    fn pods_below_a_cgroup_root_are_named_as_the_kubelet_names_them() {
        let escaped = UID.replace('-', "_");
        let in_container = |qos| Some((UID.to_string(), ID.to_string(), qos));
        let pod_only = |qos| Some((UID.to_string(), String::new(), qos));
        for (root, path, expected) in [
            (
                "/kubelet",
                format!("/kubelet/kubepods/pod{UID}/{ID}"),
                in_container("guaranteed"),
            ),
            (
                "/kubelet/",
                format!("/kubelet/kubepods/burstable/pod{UID}"),
                pod_only("burstable"),
            ),
            (
                "/kubelet",
                format!(
                    "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod{escaped}.slice"
                ),
                pod_only("guaranteed"),
            ),
            (
                "/nested/node-1",
                format!("/nested/node-1/kubepods/besteffort/pod{UID}/{ID}"),
                in_container("besteffort"),
            ),
            (
                "/nested/node-1",
                format!(
                    "/nested.slice/nested-node_1.slice/nested-node_1-kubepods.slice/\
                     nested-node_1-kubepods-burstable.slice/\
                     nested-node_1-kubepods-burstable-pod{escaped}.slice/docker-{ID}.scope"
                ),
                in_container("burstable"),
            ),
        ] {
            assert_eq!(labels_below(root, &path), expected, "{root}: {path}");
        }
    }

    /// A root that is no cgroup path is refused, naming what would be one.
    #[test]
    fn a_bad_cgroup_root_is_refused_with_what_would_be_one() {
        for root in [
            "",
            "kubelet",
            "/a//b",
            "/a/../b",
            "/./a",
            &format!("/{}", "a".repeat(5000)),
        ] {
            let error = Kubelet::new(root).unwrap_err();
            assert!(error.contains("`/NAME[/NAME...]`"), "{root}: {error}");
        }
        assert_eq!(Kubelet::new("/").unwrap(), Kubelet::default());
    }
}
