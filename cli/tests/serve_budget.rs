//! The series `counterhal serve` spends on a node: a pod counting 8 software events is 8
//! series, their times enabled and running (equal for events that never multiplex) exported
//! only with `--times always`; the shipped DaemonSet's 8 events, 6 of them hardware counted
//! as one group, are 10.

use std::collections::{BTreeMap, BTreeSet};
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
/// by pod UID, then by event (the group, for the times): each one's value.
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
        // A count names its event; times name their group (here each event's own).
        let event = label("event")
            .or_else(|| label("group"))
            .expect("an event or group label");
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
    let mount = match counterhal::cgroups::root(&counterhal::system::System::host()) {
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

/// The shipped DaemonSet's `-M` list (examples/kubernetes/daemonset.yaml: IPC, CPI,
/// CPUs_utilized, page_faults_per_second, branch_miss_rate, cache_miss_rate) on a node whose
/// core PMU has the six hardware events it reads, in both cgroup modes: each pod is 10
/// series, the 8 counts and one pair of times for the group of the six hardware events
/// (leader `instructions`, the first the metrics read), where each event's own pair made it
/// 20. Each hardware count and the times name the group; the software counts name none; a
/// group's time running is at most its time enabled, which is above 0 for the busy pods in the
/// perf-event mode.
/// Where the PMU refuses the group (as x86's `validate_group` refuses one its counters cannot
/// hold), the events count alone, each its own group: 20 series a pod, as before groups.
///
/// Oracle: Linux 6.12's Zen 4 PMU tree (backend-linux/tests/data/machines/zen4, six
/// general-purpose counters and the generic events' aliases) mounted over
/// /sys/bus/event_source/devices in a private mount namespace, each event opened as the
/// kernel's cpu-clock by the perf_tree fixture's preload (as the stat tests under other
/// machines' trees run), so that the group opens and counts as on that machine (or, with
/// the preload's COUNTERHAL_SHIM_NO_GROUPS, is refused with EINVAL); the kubelet's
/// systemd-driver pod cgroups (as the 300 pods above).
#[test]
fn the_daemonsets_metrics_on_six_hardware_events_are_ten_series_a_pod() {
    serve_or_skip!();
    if let Some((need, why)) = counterhal_conformance::fixtures::perf_tree::unready() {
        skip!(need, "{why}");
    }
    let Some((container, _)) = crate::serve_examples::daemonset() else {
        skip!(
            Need::Tools,
            "PyYAML reads the DaemonSet (apt-get install python3-yaml)"
        );
    };
    let command = crate::serve_examples::command_of(&container);
    let metrics = crate::serve_examples::after(&command, "-M").expect("the DaemonSet's -M");
    let mount = match counterhal::cgroups::root(&counterhal::system::System::host()) {
        Ok(root) => root,
        Err(e) => skip!(Need::System, "no cgroup mount to count in: {e}"),
    };
    let shim = counterhal_conformance::fixtures::perf_tree::build_shim("serve-series").unwrap();
    let devices = crate::sysfs_root::machines().join("zen4/bus/event_source/devices");
    let root = format!("counterhal_test_{}_groups", std::process::id());
    let pods = 3;
    let _pods = Pods::make(&mount, &root, pods);
    let pattern = format!("^{root}[.]slice/.*-pod[^/]*[.]slice$");
    let kubelet = format!("/{root}");
    let script = r#"mount --bind "$1" /sys/bus/event_source/devices || exit 97
        shift
        export LD_PRELOAD="$COUNTERHAL_SHIM"
        exec "$@""#;
    let hardware = [
        "instructions",
        "cycles",
        "branch-misses",
        "branches",
        "cache-misses",
        "cache-references",
    ];
    for (mode, grouped) in [("perf-events", true), ("bpf", true), ("perf-events", false)] {
        let mut serve = Command::new("unshare");
        serve
            .args(["-m", "--propagation", "private", "sh", "-c", script, "sh"])
            .arg(&devices)
            .arg(bin())
            .args(["serve", "--listen", "127.0.0.1:0", "-M", metrics])
            .args(["--cgroups", &pattern, "--max-cgroups", "8"])
            .args(["--kubelet-cgroup-root", &kubelet, "--cgroup-mode", mode])
            .env("COUNTERHAL_SHIM", &shim);
        if !grouped {
            serve.env("COUNTERHAL_SHIM_NO_GROUPS", "1");
        }
        let exporter = Exporter::spawn(serve);
        assert_eq!(get(exporter.address, "/metrics", None).0, Some(200));
        // The busy pods' loops run a while on the pods' counters: half a second, longer
        // (10 s at most) where a busy machine has not yet run them on the counted CPU.
        let waited = std::time::Instant::now();
        let text = loop {
            std::thread::sleep(std::time::Duration::from_millis(500));
            let (status, text) = get(exporter.address, "/metrics", None);
            assert_eq!(status, Some(200), "{text}");
            let ran = text.lines().any(|l| {
                l.starts_with("counterhal_event_enabled_seconds_total{")
                    && l.contains("pod_uid=")
                    && !l.ends_with(" 0")
            });
            if mode != "perf-events" || ran || waited.elapsed().as_secs() >= 10 {
                break text;
            }
        };
        let by_pod = by_pod(&text);
        assert_eq!(by_pod.len(), pods, "{mode}: every pod followed: {text}");
        // The group of each hardware event: the leader's, or its own where it counts alone.
        let group_of = |event: &str| if grouped { "instructions" } else { event }.to_string();
        let groups: BTreeSet<String> = hardware.iter().map(|e| group_of(e)).collect();
        for (pod, series) in &by_pod {
            let times: BTreeSet<(String, String)> = series
                .keys()
                .filter(|(family, _)| family.contains("abled") || family.contains("running"))
                .cloned()
                .collect();
            let expected: BTreeSet<(String, String)> = groups
                .iter()
                .flat_map(|g| {
                    ["enabled", "running"]
                        .map(|t| (format!("counterhal_event_{t}_seconds_total"), g.clone()))
                })
                .collect();
            assert_eq!(
                times, expected,
                "{mode} grouped {grouped} {pod}: {series:?}"
            );
            assert_eq!(series.len(), 8 + times.len(), "{mode} {pod}: {series:?}");
            // Each group's times are a pair of counters: running never past enabled. (Under
            // the preload every counter of every CPU counts on CPU 0: in CI's busy run the
            // counters opened alone ran 0.05 s of 2.02 s enabled, so equal times are no claim
            // this world can hold.)
            for group in &groups {
                let time = |t: &str| {
                    series[&(format!("counterhal_event_{t}_seconds_total"), group.clone())]
                };
                let (enabled, running) = (time("enabled"), time("running"));
                assert!(running <= enabled, "{mode} {pod} {group}: {series:?}");
            }
        }
        if mode == "perf-events" {
            let enabled = |series: &BTreeMap<(String, String), f64>| {
                groups
                    .iter()
                    .map(|g| {
                        series[&(
                            "counterhal_event_enabled_seconds_total".to_string(),
                            g.clone(),
                        )]
                    })
                    .sum::<f64>()
            };
            assert!(
                by_pod.values().any(|series| enabled(series) > 0.0),
                "{mode}: a busy pod's counters were enabled: {by_pod:?}"
            );
        }
        // The counts' group labels: the hardware events' their group's, none elsewhere.
        for line in text
            .lines()
            .filter(|l| l.starts_with("counterhal_event_total{"))
        {
            if !line.contains(&format!("cgroup=\"/{root}.slice/")) {
                continue;
            }
            let event = hardware
                .iter()
                .find(|e| line.contains(&format!("event=\"{e}\"")));
            match event {
                Some(e) => {
                    let group = format!(",group=\"{}\"", group_of(e));
                    assert!(line.contains(&group), "{mode} grouped {grouped}: {line}");
                }
                None => assert!(!line.contains(",group="), "{mode}: {line}"),
            }
        }
        eprintln!(
            "{mode}, grouped {grouped}: {} pods, {} series each; {} series in all",
            by_pod.len(),
            by_pod.values().next().map_or(0, BTreeMap::len),
            text.lines().filter(|l| !l.starts_with('#')).count()
        );
    }
    std::fs::remove_dir_all(shim.parent().unwrap()).ok();
}
