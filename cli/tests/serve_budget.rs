//! The series `counterhal serve` spends on a node: a pod counting 8 software events is 8
//! series, their times enabled and running (equal for events that never multiplex) exported
//! only with `--times always`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use crate::common::*;
use crate::serve::{Exporter, get};
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// node_exporter 1.5's software profilers but emulation-faults (as `serve_costs`).
const EIGHT: &str = "cpu-clock,task-clock,page-faults,context-switches,cpu-migrations,\
minor-faults,major-faults,alignment-faults";

/// The pods of the fake node.
const PODS: usize = 300;

/// The pods that run a busy loop (the others are empty).
const BUSY: usize = 3;

/// A kubelet's best-effort pods below `<root>.slice` (the systemd driver), the first
/// [`BUSY`] running a busy loop each; ended and removed when dropped.
struct Pods {
    dirs: Vec<PathBuf>,
    busy: Vec<Child>,
}

impl Pods {
    /// `pods` pods below the cgroup mount `mount`, for the kubelet root `/<root>`.
    fn make(mount: &Path, root: &str, pods: usize) -> Pods {
        let qos = format!("{root}.slice/{root}-kubepods.slice/{root}-kubepods-besteffort.slice");
        let mut tree = Pods {
            dirs: Vec::new(),
            busy: Vec::new(),
        };
        let mut levels: Vec<String> = (1..=3)
            .map(|n| qos.split('/').take(n).collect::<Vec<_>>().join("/"))
            .collect();
        levels.extend((0..pods).map(|n| {
            format!(
                "{qos}/{root}-kubepods-besteffort-pod{}.slice",
                uid(n).replace('-', "_")
            )
        }));
        for level in levels {
            let dir = mount.join(level);
            std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            tree.dirs.push(dir);
        }
        for pod in &tree.dirs[3..3 + BUSY] {
            let busy = Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("start a busy loop");
            let moved = std::fs::write(pod.join("cgroup.procs"), busy.id().to_string());
            tree.busy.push(busy);
            moved.unwrap_or_else(|e| panic!("{}: {e}", pod.display()));
        }
        tree
    }
}

impl Drop for Pods {
    fn drop(&mut self) {
        for busy in &mut self.busy {
            busy.kill().ok();
            busy.wait().ok();
        }
        for dir in self.dirs.iter().rev() {
            // A cgroup whose last task has just ended is removable a moment later.
            for _ in 0..50 {
                if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }
}

/// The `n`th pod's UID, as the API writes one (a version 4 UUID).
fn uid(n: usize) -> String {
    format!("{n:08x}-0000-4000-8000-00000000c0de")
}

/// The series of each family (`counterhal_event_total`...) of each pod in the scrape `text`,
/// by pod UID, then by event: each one's value.
type ByPod = BTreeMap<String, BTreeMap<(String, String), f64>>;

fn by_pod(text: &str) -> ByPod {
    let mut pods = ByPod::new();
    for line in text.lines().filter(|l| l.starts_with("counterhal_event")) {
        let Some((name, rest)) = line.split_once('{') else {
            continue;
        };
        let (labels, value) = rest.rsplit_once("} ").expect("a sample");
        let label = |key: &str| {
            labels
                .split(',')
                .find_map(|pair| pair.strip_prefix(&format!("{key}=\"")))
                .map(|v| v.trim_end_matches('"').to_string())
        };
        let Some(pod) = label("pod_uid") else {
            continue;
        };
        let event = label("event").expect("an event label");
        pods.entry(pod)
            .or_default()
            .insert((name.to_string(), event), value.parse().expect("a number"));
    }
    pods
}

/// A node of 300 pods (3 of them busy) counting 8 software events: 8 series a pod by
/// default (the counts), 24 with `--times always`, whose times enabled and running are
/// equal for every pod and event (the busy pods' above 0), so that the series left out
/// carried nothing a rule reads (`rate(value) * rate(enabled) / rate(running)` is
/// `rate(value)`).
///
/// Oracle: Linux's kernel/events/core.c (7.2: a group of software-context events always goes
/// on, `group_can_go_on`), as the kernel's own times show it in each pod's counters; the
/// kubelet's systemd-driver names of best-effort pods (pkg/kubelet/cm/cgroup_manager_linux.go,
/// `ToSystemd`), which give the pods their `pod_uid`.
#[test]
fn three_hundred_pods_of_software_events_are_eight_series_each() {
    serve_or_skip!();
    if !running_as_root() {
        skip!(Need::Privilege, "making cgroups takes root");
    }
    let mount = match counterhal::cgroups::root() {
        Ok(root) => root,
        Err(e) => skip!(Need::System, "no cgroup mount to count in: {e}"),
    };
    let root = format!("counterhal_test_{}_budget", std::process::id());
    let _pods = Pods::make(&mount, &root, PODS);
    let pattern = format!("^{root}[.]slice/.*-pod[^/]*[.]slice$");
    let kubelet = format!("/{root}");
    let max = PODS.to_string();
    let args = [
        "-e",
        EIGHT,
        "--cgroups",
        &pattern,
        "--max-cgroups",
        &max,
        "--kubelet-cgroup-root",
        &kubelet,
    ];
    let lean = Exporter::start(&args);
    let mut always = args.to_vec();
    always.extend(["--times", "always"]);
    let full = Exporter::start(&always);
    // The first scrape follows the pods; the second reads them.
    let scrape = |exporter: &Exporter| {
        assert_eq!(get(exporter.address, "/metrics", None).0, Some(200));
        let (status, text) = get(exporter.address, "/metrics", None);
        assert_eq!(status, Some(200), "{text}");
        text
    };
    let (lean, full) = (scrape(&lean), scrape(&full));
    let (lean_pods, full_pods) = (by_pod(&lean), by_pod(&full));
    assert_eq!(lean_pods.len(), PODS, "every pod followed: {lean}");
    assert_eq!(full_pods.len(), PODS, "every pod followed: {full}");
    for (pod, series) in &lean_pods {
        assert_eq!(series.len(), 8, "{pod}: {series:?}");
        assert!(
            series
                .keys()
                .all(|(name, _)| !name.contains("abled") && !name.contains("running")),
            "{pod}: {series:?}"
        );
    }
    let busy: Vec<String> = (0..BUSY).map(uid).collect();
    for (pod, series) in &full_pods {
        assert_eq!(series.len(), 24, "{pod}: {series:?}");
        let clock = (
            "counterhal_event_enabled_seconds_total".to_string(),
            "task-clock".to_string(),
        );
        if busy.contains(pod) {
            assert!(series[&clock] > 0.0, "{pod} ran: {series:?}");
        }
        for event in EIGHT.split(',') {
            let time = |family: &str| series[&(family.to_string(), event.to_string())];
            assert_eq!(
                time("counterhal_event_enabled_seconds_total"),
                time("counterhal_event_running_seconds_total"),
                "{pod} {event}: {series:?}"
            );
        }
    }
    eprintln!(
        "{PODS} pods x 8 events: {} bytes a scrape, {} series (--times always: {} bytes, {} \
         series)",
        lean.len(),
        lean.lines().filter(|l| !l.starts_with('#')).count(),
        full.len(),
        full.lines().filter(|l| !l.starts_with('#')).count(),
    );
}
