//! A pod's namespace and name and its containers' names, read on the node from the names of
//! the directories and links the kubelet makes for their logs, for the `namespace`, `pod` and
//! `container` labels of a pod's series (`--kubelet-logs DIR`, `--kubelet-log-labels`).
//!
//! The kubelet (Kubernetes 1.14 on; 1.31's `pkg/kubelet/kuberuntime` is the source read)
//! makes, when it makes a pod's sandbox, the pod's log directory
//! `pods/<namespace>_<name>_<UID>` below `/var/log` (`BuildPodLogsDirectory` in helpers.go,
//! `/var/log/pods` unless the kubelet's configuration moves it with `podLogsDir`, 1.30 on);
//! and once each container has started, the link
//! `containers/<name>_<namespace>_<container>-<ID>.log` to that container's log
//! (`legacyLogSymlink` in legacy.go, the pod's full name `<name>_<namespace>` of
//! `BuildPodFullName`), cut to 255 bytes (`ext4MaxFileNameLen`). No name holds a `_`: a
//! namespace and a container's name are DNS labels and a pod's name a DNS subdomain (the
//! API's validation), so each name splits at `_` one way. An entry whose parts are not such
//! names, or whose UID or container ID is not one, is passed over, as is a link cut short
//! (its ID no longer whole).
//!
//! Only the names of the two directories' entries are read: no file is opened and no link
//! followed, a directory is opened as one (`O_DIRECTORY`: nothing else in its place is opened,
//! so nothing blocks), and at most [`MAX_ENTRIES`] entries of each are read. They are read
//! again only while a followed pod's cgroup still lacks a name, and only where a directory
//! changed since it was last read (its modification time), since a pod's cgroup is made
//! before its log directory and a container's before its link. A name is taken only from the
//! pod's own directory (by its UID) and, for a container, from its link where the link names
//! the same pod.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::kubernetes::Pod;

/// The most entries read from each directory (a node's pods are its `maxPods`, 110 by default
/// and past 500 on large nodes; its links, a few a pod, exited containers' included).
pub const MAX_ENTRIES: usize = 65_536;

/// How long after a directory's modification time a read of it may have missed a change
/// made in the same tick of the file system's clock (which would leave that time as it was):
/// a read closer than this is made again at the next look.
const RACY: Duration = Duration::from_secs(1);

/// The names `--kubelet-log-labels` lets onto a pod's series.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameLabelArg {
    /// The pod's namespace.
    Namespace,
    /// The pod's name.
    Pod,
    /// The container's name, on a container's cgroup (a pod's holds several).
    Container,
}

impl NameLabelArg {
    /// Every one: `--kubelet-log-labels`' default.
    pub const ALL: [NameLabelArg; 3] = [
        NameLabelArg::Namespace,
        NameLabelArg::Pod,
        NameLabelArg::Container,
    ];
}

/// A pod's names, as its log directory gives them.
#[derive(Clone, Debug, PartialEq, Eq)]
struct PodNames {
    /// The pod's namespace.
    namespace: String,
    /// The pod's name.
    name: String,
}

/// A container's names, as its log link gives them.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ContainerNames {
    /// Its pod's names.
    pod: PodNames,
    /// The container's name.
    container: String,
}

/// What one directory gave at its last read.
struct Listing<T> {
    /// The directory's modification time when it was read, and whether that read was made
    /// [`RACY`] or more after it (`None`: not read, or its read failed).
    read: Option<(SystemTime, bool)>,
    /// Its entries, by UID or container ID.
    entries: HashMap<String, T>,
    /// Why its last read failed, or was cut at [`MAX_ENTRIES`], as last said in the log.
    said: Option<String>,
}

impl<T> Listing<T> {
    /// Nothing read yet.
    fn new() -> Listing<T> {
        Listing {
            read: None,
            entries: HashMap::new(),
            said: None,
        }
    }
}

/// The kubelet's log directories below `--kubelet-logs` (`/var/log` on a node) and what
/// their names gave at their last read.
pub struct KubeletLogs {
    /// `<DIR>/pods`: the pods' log directories.
    pods_dir: PathBuf,
    /// `<DIR>/containers`: the containers' log links.
    containers_dir: PathBuf,
    /// The names put on a pod's series (`--kubelet-log-labels`).
    chosen: Vec<NameLabelArg>,
    /// The pods' directories' names, by UID.
    pods: Listing<PodNames>,
    /// The containers' links' names, by container ID.
    containers: Listing<ContainerNames>,
}

impl KubeletLogs {
    /// The directories below `dir` (`/var/log`), read once now, whose names `chosen` go onto
    /// pods' series.
    pub fn open(dir: &Path, chosen: &[NameLabelArg]) -> KubeletLogs {
        let mut logs = KubeletLogs {
            pods_dir: dir.join("pods"),
            containers_dir: dir.join("containers"),
            chosen: chosen.to_vec(),
            pods: Listing::new(),
            containers: Listing::new(),
        };
        logs.refresh();
        logs
    }

    /// How many pods and containers the last reads named (for the log at start).
    pub fn found(&self) -> (usize, usize) {
        (self.pods.entries.len(), self.containers.entries.len())
    }

    /// Reads each directory again where it may have changed since its last read (its
    /// modification time is another, or the last read was too close to it to be sure):
    /// whether either was read (only then can a name not found before be found now).
    pub fn refresh(&mut self) -> bool {
        let pods = reread(&self.pods_dir, &mut self.pods, pod_directory, true);
        let containers = reread(
            &self.containers_dir,
            &mut self.containers,
            container_link,
            false,
        );
        pods || containers
    }

    /// Puts the chosen names of `pod`'s pod (and container) into it where the directories
    /// read give them: whether every name it can have was found (a cgroup outside Kubernetes
    /// has none to find).
    pub fn name(&self, pod: &mut Pod) -> bool {
        if pod.uid.is_empty() {
            return true;
        }
        let Some(names) = self.pods.entries.get(&pod.uid) else {
            return false;
        };
        if self.chosen.contains(&NameLabelArg::Namespace) {
            pod.namespace.clone_from(&names.namespace);
        }
        if self.chosen.contains(&NameLabelArg::Pod) {
            pod.name.clone_from(&names.name);
        }
        if pod.container_id.is_empty() {
            return true;
        }
        // A link that names another pod than the UID's directory is not taken.
        let link = self.containers.entries.get(&pod.container_id);
        let Some(link) = link.filter(|link| link.pod == *names) else {
            return false;
        };
        if self.chosen.contains(&NameLabelArg::Container) {
            pod.container.clone_from(&link.container);
        }
        true
    }
}

/// Reads `dir` into `listing` again where it may have changed since (its entries that are
/// directories where `directories`, else links, parsed by `parse`): whether it was read. A
/// change in what can be said of it (it cannot be read, or is read in part) is said in the
/// log.
fn reread<T>(
    dir: &Path,
    listing: &mut Listing<T>,
    parse: fn(&str) -> Option<(String, T)>,
    directories: bool,
) -> bool {
    let modified = std::fs::metadata(dir).and_then(|m| m.modified()).ok();
    if let (Some((at, settled)), Some(now)) = (listing.read, modified)
        && settled
        && at == now
    {
        return false;
    }
    let (entries, problem) = match read(dir, parse, directories, MAX_ENTRIES) {
        Ok((entries, false)) => (entries, None),
        Ok((entries, true)) => (
            entries,
            Some(format!(
                "{} holds more than {MAX_ENTRIES} entries: the rest are not read",
                dir.display()
            )),
        ),
        Err(e) => (
            HashMap::new(),
            Some(format!("{} cannot be read: {e}", dir.display())),
        ),
    };
    listing.entries = entries;
    listing.read = match (&problem, modified) {
        (None, Some(at)) => {
            let after = SystemTime::now().duration_since(at).unwrap_or_default();
            Some((at, after >= RACY))
        }
        _ => None,
    };
    if problem != listing.said {
        match &problem {
            Some(why) => {
                crate::log::warn("pods and containers are not all named", &[("reason", why)])
            }
            None => crate::log::info(
                "pods and containers named from the kubelet's log directory again",
                &[("dir", &dir.display())],
            ),
        };
        listing.said = problem;
    }
    true
}

/// The entries of `dir` that `parse` takes (directories where `directories`, else links),
/// by their key, and whether `max` entries read cut the read short.
///
/// # Errors
/// `dir` cannot be opened as a directory or read.
fn read<T>(
    dir: &Path,
    parse: fn(&str) -> Option<(String, T)>,
    directories: bool,
    max: usize,
) -> std::io::Result<(HashMap<String, T>, bool)> {
    let mut entries = HashMap::new();
    // read_dir opens with O_DIRECTORY (glibc's opendir): a FIFO in its place is refused,
    // never waited on.
    for (seen, entry) in std::fs::read_dir(dir)?.enumerate() {
        if seen == max {
            return Ok((entries, true));
        }
        let entry = entry?;
        // The entry's type as the directory gives it (d_type), no link followed.
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let wanted = if directories {
            kind.is_dir()
        } else {
            kind.is_symlink()
        };
        let name = entry.file_name();
        if let (true, Some(name)) = (wanted, name.to_str())
            && let Some((key, value)) = parse(name)
        {
            entries.insert(key, value);
        }
    }
    Ok((entries, false))
}

/// The UID and names that a pod's log directory `name` gives (`<namespace>_<name>_<UID>`,
/// `BuildPodLogsDirectory`); `None` for any other name (the layout before 1.14, `<UID>`,
/// holds no names).
fn pod_directory(name: &str) -> Option<(String, PodNames)> {
    let mut parts = name.split('_');
    let (namespace, pod, uid) = (parts.next()?, parts.next()?, parts.next()?);
    let fits = parts.next().is_none() && dns_label(namespace) && dns_subdomain(pod);
    let uid = super::kubernetes::uid(uid).filter(|_| fits)?;
    Some((
        uid,
        PodNames {
            namespace: namespace.to_string(),
            name: pod.to_string(),
        },
    ))
}

/// The container ID and names that a container's log link `name` gives
/// (`<pod>_<namespace>_<container>-<ID>.log`, `legacyLogSymlink`), the ID in lower case;
/// `None` for any other name, and for a link cut short at 255 bytes (its ID not whole).
fn container_link(name: &str) -> Option<(String, ContainerNames)> {
    let mut parts = name.strip_suffix(".log")?.split('_');
    let (pod, namespace, rest) = (parts.next()?, parts.next()?, parts.next()?);
    let (container, id) = rest.rsplit_once('-')?;
    let fits = parts.next().is_none()
        && dns_subdomain(pod)
        && dns_label(namespace)
        && dns_label(container);
    let whole = id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit());
    if !(fits && whole) {
        return None;
    }
    Some((
        id.to_ascii_lowercase(),
        ContainerNames {
            pod: PodNames {
                namespace: namespace.to_string(),
                name: pod.to_string(),
            },
            container: container.to_string(),
        },
    ))
}

/// Whether `text` is a DNS label as Kubernetes takes one (`IsDNS1123Label`: 1 to 63 of
/// `a-z`, `0-9` and `-`, starting and ending with a letter or digit): a namespace's or a
/// container's name.
fn dns_label(text: &str) -> bool {
    text.len() <= 63 && label_part(text)
}

/// Whether `text` is a DNS subdomain as Kubernetes takes one (`IsDNS1123Subdomain`: at most
/// 253 bytes, parts as a label's split by `.`, each at least one long): a pod's name.
fn dns_subdomain(text: &str) -> bool {
    text.len() <= 253 && text.split('.').all(label_part)
}

/// Whether `text` is one part of a DNS name as Kubernetes' patterns write it
/// (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`).
fn label_part(text: &str) -> bool {
    let bytes = text.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    bytes.first().is_some_and(alnum)
        && bytes.last().is_some_and(alnum)
        && bytes.iter().all(|b| alnum(b) || *b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
    const ID: &str = "4f5c0c0e3fd7e2a0a0b2f0d3c4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f607";

    /// The pod's log directory as the kubelet names it: `BuildPodLogsDirectory`
    /// (kubernetes 1.31, `pkg/kubelet/kuberuntime/helpers.go`) joins the namespace, the name
    /// and the UID with `logPathDelimiter`, `_`.
    fn build_pod_logs_directory(namespace: &str, name: &str, uid: &str) -> String {
        [namespace, name, uid].join("_")
    }

    /// The container's log link as the kubelet names it: `legacyLogSymlink` and `logSymlink`
    /// (kubernetes 1.31, `pkg/kubelet/kuberuntime/legacy.go`): the pod's full name
    /// (`BuildPodFullName`, `<name>_<namespace>`), `_`, the container's name, `-`, its ID,
    /// cut to `ext4MaxFileNameLen` (255) less the suffix `.log`, then `.log`.
    fn legacy_log_symlink(id: &str, container: &str, pod: &str, namespace: &str) -> String {
        let mut path = format!("{pod}_{namespace}_{container}-{id}");
        path.truncate(255 - ".log".len());
        path + ".log"
    }

    /// The names a pod's directory gives, as (UID, namespace, name).
    fn pod_of(name: &str) -> Option<(String, String, String)> {
        pod_directory(name).map(|(uid, n)| (uid, n.namespace, n.name))
    }

    /// The names a container's link gives, as (ID, namespace, pod, container).
    fn container_of(name: &str) -> Option<(String, String, String, String)> {
        container_link(name).map(|(id, n)| (id, n.pod.namespace, n.pod.name, n.container))
    }

    /// Every name the kubelet gives a pod's directory and a container's link is read back
    /// into the names it was made of: the longest names the API takes (a 63-byte namespace
    /// and container, a 253-byte pod name with dots), a static pod's UID (32 hex digits, no
    /// dash), and a link as long as fits whole; a link cut short (its ID not whole) is no
    /// container's.
    ///
    /// Oracle: kubernetes 1.31's `BuildPodLogsDirectory` and `legacyLogSymlink` (above, as
    /// written there), and the API's validation of the names (a namespace and a container's
    /// name `IsDNS1123Label`, a pod's name `IsDNS1123Subdomain`, in
    /// `k8s.io/apimachinery/pkg/util/validation`).
    #[test]
    fn the_kubelets_names_are_read_back() {
        let long_pod = format!("{}.{}.{}", "a".repeat(100), "b".repeat(100), "c".repeat(51));
        assert_eq!(long_pod.len(), 253);
        let long_label = "n".repeat(62) + "1";
        let static_uid = "6c34f4ff84f6d30d2bd4fb6e79b71c2b";
        for (namespace, name, uid) in [
            ("shop", "web-7d4b9c-x2x9q", UID),
            ("kube-system", "kube-apiserver-node-a", static_uid),
            (long_label.as_str(), long_pod.as_str(), UID),
            ("a", "b", "0"),
        ] {
            let dir = build_pod_logs_directory(namespace, name, uid);
            assert_eq!(
                pod_of(&dir),
                Some((uid.to_string(), namespace.to_string(), name.to_string())),
                "{dir}"
            );
        }
        for (namespace, pod, container) in [
            ("shop", "web-7d4b9c-x2x9q", "web"),
            ("kube-system", "coredns-5d78c9869d-4xk2p", "coredns"),
            ("default", "a.b-c", "side-car-2"),
        ] {
            let link = legacy_log_symlink(ID, container, pod, namespace);
            let names = (namespace.into(), pod.into(), container.into());
            assert_eq!(
                container_of(&link),
                Some((ID.into(), names.0, names.1, names.2)),
                "{link}"
            );
        }
        // The longest link kept whole (251 bytes before `.log`), and one byte more: cut.
        let pod = "p".repeat(251 - "_ns_c-".len() - 64);
        let whole = legacy_log_symlink(ID, "c", &pod, "ns");
        assert_eq!(whole.len(), 255);
        assert_eq!(container_of(&whole).map(|c| c.3), Some("c".to_string()));
        let cut = legacy_log_symlink(ID, "c", &format!("{pod}p"), "ns");
        assert_eq!(cut.len(), 255);
        assert_eq!(container_of(&cut), None, "{cut}");
        let longest = legacy_log_symlink(ID, &long_label, &long_pod, &long_label);
        assert_eq!(container_of(&longest), None, "{longest}");
        // An ID in upper case is the runtime's in lower case, as the cgroup's is read.
        let upper = legacy_log_symlink(&ID.to_uppercase(), "c", "p", "ns");
        assert_eq!(container_of(&upper).map(|c| c.0), Some(ID.to_string()));
    }

    /// Names that are no Kubernetes names, or not in the kubelet's layouts, give nothing: the
    /// layout before 1.14 (`<UID>` alone), a part too many or too few, upper case, a name
    /// starting or ending with `-`, an empty part or label, a namespace of 64 bytes, a UID or
    /// ID that is not one, a link without `.log`.
    ///
    /// Oracle: the same kubelet sources and the API's validation (`IsDNS1123Label`: at most
    /// 63 bytes of `[a-z0-9]([-a-z0-9]*[a-z0-9])?`; `IsDNS1123Subdomain`: at most 253, such
    /// parts joined by `.`).
    #[test]
    fn what_is_no_kubelets_name_gives_nothing() {
        for dir in [
            UID.to_string(),
            format!("shop_web_{UID}_x"),
            format!("shop_{UID}"),
            format!("Shop_web_{UID}"),
            format!("shop_Web_{UID}"),
            format!("-shop_web_{UID}"),
            format!("shop_web-_{UID}"),
            format!("_web_{UID}"),
            format!("shop__{UID}"),
            format!("shop_web..x_{UID}"),
            format!("shop_.web_{UID}"),
            format!("{}_web_{UID}", "n".repeat(64)),
            format!("shop_{}_{UID}", "p".repeat(254)),
            format!("shop.x_web_{UID}"),
            "shop_web_not-a-uid".to_string(),
            "shop_web_".to_string(),
        ] {
            assert_eq!(pod_of(&dir), None, "{dir}");
        }
        for link in [
            format!("web_shop_c-{ID}"),
            format!("web_shop_c-{ID}.log.1"),
            format!("web_shop_c_{ID}.log"),
            format!("web_shop_c-{}.log", &ID[1..]),
            format!("web_shop_c-{}x.log", &ID[1..]),
            format!("web_shop_-{ID}.log"),
            format!("web_shop_C-{ID}.log"),
            format!("web_shop_c--{ID}.log"),
            format!("web_shop.x_c-{ID}.log"),
            format!("web_shop_x_c-{ID}.log"),
            format!("web_c-{ID}.log"),
            format!("web_shop_c{ID}.log"),
        ] {
            assert_eq!(container_of(&link), None, "{link}");
        }
    }

    /// A scratch directory holding `pods` and `containers`, removed when dropped.
    struct Logs(PathBuf);

    impl Logs {
        fn new(name: &str) -> Logs {
            let dir = std::env::temp_dir().join(format!(
                "counterhal-kubelet-logs-{name}-{}",
                std::process::id()
            ));
            std::fs::remove_dir_all(&dir).ok();
            for sub in ["pods", "containers"] {
                std::fs::create_dir_all(dir.join(sub)).unwrap();
            }
            Logs(dir)
        }

        /// The pod's directory and its container's, as the kubelet makes them.
        fn pod(&self, namespace: &str, name: &str, uid: &str, container: &str) {
            let dir = self
                .0
                .join("pods")
                .join(build_pod_logs_directory(namespace, name, uid));
            std::fs::create_dir_all(dir.join(container)).unwrap();
        }

        /// The container's link, as the kubelet makes it once the container has started (to
        /// the node's path of its log, which is never followed).
        fn link(&self, id: &str, container: &str, pod: &str, namespace: &str) {
            let name = legacy_log_symlink(id, container, pod, namespace);
            let target = format!("/var/log/pods/{namespace}_{pod}_{UID}/{container}/0.log");
            std::os::unix::fs::symlink(target, self.0.join("containers").join(name)).unwrap();
        }

        /// Sets both directories' modification time 10 s back: a read now is sure of them.
        fn settle(&self) {
            let back = SystemTime::now() - Duration::from_secs(10);
            for sub in ["pods", "containers"] {
                std::fs::File::open(self.0.join(sub))
                    .and_then(|dir| dir.set_modified(back))
                    .unwrap();
            }
        }
    }

    impl Drop for Logs {
        fn drop(&mut self) {
            std::fs::remove_dir_all(&self.0).ok();
        }
    }

    /// A pod's cgroup labels, by its UID and container ID.
    fn pod(uid: &str, container_id: &str) -> Pod {
        Pod {
            uid: uid.to_string(),
            container_id: container_id.to_string(),
            qos_class: "burstable",
            ..Pod::default()
        }
    }

    /// In a tree laid out as the kubelet lays out its log directories, a pod's cgroup is named
    /// by its UID's directory and a container's by its link; what the chosen labels leave out
    /// stays empty; an entry of the wrong kind (a file named as a pod's directory, a directory
    /// named as a link) and a link naming another pod than the UID's directory name nothing.
    ///
    /// Oracle: the kubelet's layout (its `BuildPodLogsDirectory`, a directory, made with the
    /// pod's sandbox; its `legacyLogSymlink`, a link, made once the container started).
    #[test]
    fn pods_and_containers_are_named_from_the_directories() {
        let logs = Logs::new("named");
        logs.pod("shop", "web-7d4b9c", UID, "web");
        logs.link(ID, "web", "web-7d4b9c", "shop");
        let other = "9a8b7c6d-5e4f-3a2b-1c0d-e9f8a7b6c5d4";
        let other_id = "b".repeat(64);
        std::fs::write(
            logs.0
                .join("pods")
                .join(build_pod_logs_directory("x", "y", other)),
            "",
        )
        .unwrap();
        std::fs::create_dir(
            logs.0
                .join("containers")
                .join(legacy_log_symlink(&other_id, "c", "y", "x")),
        )
        .unwrap();
        let forged = "c".repeat(64);
        logs.link(&forged, "evil", "db-0", "shop");

        let read = KubeletLogs::open(&logs.0, &NameLabelArg::ALL);
        assert_eq!(read.found(), (1, 2));
        let mut of_pod = pod(UID, "");
        assert!(read.name(&mut of_pod));
        assert_eq!(
            (of_pod.namespace.as_str(), of_pod.name.as_str()),
            ("shop", "web-7d4b9c")
        );
        assert_eq!(of_pod.container, "");
        let mut of_container = pod(UID, ID);
        assert!(read.name(&mut of_container));
        assert_eq!(of_container.container, "web");
        assert_eq!(of_container.name, "web-7d4b9c");
        let mut unknown = pod(other, "");
        assert!(!read.name(&mut unknown), "a file is no pod's directory");
        assert_eq!(unknown.namespace, "");
        let mut forged_pod = pod(UID, &forged);
        assert!(!read.name(&mut forged_pod), "the link names pod db-0");
        assert_eq!(forged_pod.container, "");
        let mut outside = Pod {
            container_id: ID.to_string(),
            ..Pod::default()
        };
        assert!(
            read.name(&mut outside),
            "a container outside a pod has no names to find"
        );
        assert_eq!(outside.container, "");

        let some = KubeletLogs::open(&logs.0, &[NameLabelArg::Pod, NameLabelArg::Container]);
        let mut chosen = pod(UID, ID);
        assert!(some.name(&mut chosen));
        assert_eq!(
            (
                chosen.namespace.as_str(),
                chosen.name.as_str(),
                chosen.container.as_str()
            ),
            ("", "web-7d4b9c", "web")
        );
    }

    /// A pod whose directory is made after it was looked for (as the kubelet makes a pod's
    /// cgroup before its sandbox and log directory) is named at the next read; a directory
    /// that has not changed since a read sure of it is not read again; and one changed in the
    /// same second as the read is read again until a read is sure of it.
    ///
    /// Oracle: the kernel's directory modification time (set at each entry made or removed),
    /// and the kubelet's order (kubernetes 1.31 `pkg/kubelet/kubelet.go` `SyncPod` makes the
    /// pod's cgroup, `kuberuntime_sandbox.go` `createPodSandbox` its log directory after).
    #[test]
    fn a_pods_directory_made_later_names_it_at_the_next_read() {
        let logs = Logs::new("later");
        logs.settle();
        let mut read = KubeletLogs::open(&logs.0, &NameLabelArg::ALL);
        let mut later = pod(UID, "");
        assert!(!read.name(&mut later));
        assert!(!read.refresh(), "nothing changed since a read sure of it");
        logs.pod("shop", "web-7d4b9c", UID, "web");
        assert!(read.refresh(), "pods/ changed");
        assert!(read.name(&mut later));
        assert_eq!(later.name, "web-7d4b9c");
        // Read within a second of its change: not sure of it, read again.
        assert!(read.refresh());
        logs.settle();
        assert!(read.refresh(), "its time changed (set back)");
        assert!(!read.refresh(), "and is now sure of it");
    }

    /// A directory cannot be read (missing, or a FIFO in its place, which a reader opening it
    /// for reading would wait on): nothing is named and nothing waits; a read stops at its
    /// bound and says so.
    ///
    /// Oracle: the kernel's `open` with `O_DIRECTORY` (fs/namei.c, `do_open`: `ENOTDIR` for
    /// anything but a directory, before the file is opened), which glibc's `opendir` asks for.
    #[test]
    fn a_directory_that_cannot_be_read_names_nothing_and_waits_for_nothing() {
        let logs = Logs::new("fifo");
        std::fs::remove_dir(logs.0.join("pods")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(logs.0.join("pods"))
            .status()
            .expect("coreutils' mkfifo");
        assert!(made.success());
        std::fs::remove_dir(logs.0.join("containers")).unwrap();
        let dir = logs.0.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let read = KubeletLogs::open(&dir, &NameLabelArg::ALL);
            tx.send(read.found()).ok();
        });
        let found = rx.recv_timeout(Duration::from_secs(5));
        assert_eq!(found, Ok((0, 0)), "the read waited on the FIFO");

        let bounded = Logs::new("bounded");
        for n in 0..5 {
            bounded.pod("ns", &format!("p{n}"), &format!("{n}"), "c");
        }
        let (entries, cut) = read(&bounded.0.join("pods"), pod_directory, true, 3).unwrap();
        assert!(cut);
        assert_eq!(entries.len(), 3);
        let (entries, cut) = read(&bounded.0.join("pods"), pod_directory, true, 5).unwrap();
        assert!(!cut);
        assert_eq!(entries.len(), 5);
    }
}
