//! `counterhal serve` on a Kubernetes node: a cgroup's series summed over the CPUs (or per
//! CPU with `--per-cpu`), pods' cgroups labelled with their UID and QoS class, and with their
//! namespace, pod and container names from the kubelet's log directories (`--kubelet-logs`),
//! the DaemonSet's command line scraped by Prometheus over TLS with a password as
//! examples/prometheus/prometheus-kubernetes.yml scrapes it, and the kube-state-metrics join
//! of examples/prometheus/kubernetes-rules.yml evaluated by promtool and by that Prometheus;
//! Prometheus and promtool of 2.42 and of 3.5, each test body run against each.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::serve::{Exporter, get};
use crate::serve_examples::{
    Scratch, after, command_of, daemonset, read, repository, runs, verdict, yaml_documents,
};
use crate::serve_prometheus::Prometheus;
use counterhal_conformance::fixtures::TestCgroup;
use counterhal_conformance::fixtures::prometheus::Release;
use counterhal_conformance::prometheus_tool_or_skip as tool_or_skip;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// A Python process that says `ready` once started (then it joins a cgroup), then at a word
/// on its standard input calls
/// getppid(2) `CALLS` times, moving onto each CPU it may run on in turn, says `done` and
/// waits for another word to end.
const CALLER: &str = "import os, sys
print('ready', flush=True)
sys.stdin.readline()
cpus = sorted(os.sched_getaffinity(0))
for i in range(1000):
    if i % 100 == 0:
        os.sched_setaffinity(0, [cpus[(i // 100) % len(cpus)]])
    os.getppid()
print('done', flush=True)
sys.stdin.readline()
";

/// The calls [`CALLER`] makes.
const CALLS: u64 = 1000;

/// A process that ends when dropped.
struct Ended(Child);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// The samples of `family` in the text exposition `text` whose labels contain `holding`:
/// each one's labels (the text between the braces) and value.
fn samples(text: &str, family: &str, holding: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(family)?.strip_prefix('{')?;
            let (labels, value) = rest.rsplit_once("} ")?;
            if !labels.contains(holding) {
                return None;
            }
            Some((labels.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// A cgroup's tracepoint count is one series summed over the CPUs, without a `cpu` label;
/// with `--per-cpu` one per CPU, which add up to the same; both are the calls made, spread
/// over every CPU.
///
/// Oracle: the calls the process made (getppid's tracepoint fires once a call) and perf 6.1's
/// `perf stat -a -G CGROUP`, whose default aggregation sums the CPUs' counts as the exporter
/// does (tools/perf/util/stat.c; `-A` keeps them apart as `--per-cpu` does).
#[test]
fn a_cgroups_counts_are_summed_over_the_cpus_unless_per_cpu() {
    serve_or_skip!();
    tracepoints_or_skip!();
    if !running_as_root() || !runs("python3", &["-c", "pass"]) {
        skip!(Need::Privilege, "making cgroups takes root, and python3");
    }
    let root = match counterhal::cgroups::root(&counterhal::system::System::host()) {
        Ok(root) => root,
        Err(e) => skip!(Need::System, "no cgroup mount to count in: {e}"),
    };
    let cgroup = TestCgroup::new(&root, "summed").expect("make a cgroup");
    let event = "syscalls:sys_enter_getppid";
    // The perf-event mode, exact on every CPU: the sum is the exposition's, whatever the
    // mode, and the BPF mode misses the switches some kernels hide on a secondary CPU
    // (docs/serve.md, "The BPF mode needs every context switch"), where this work runs too.
    let args = |more: &'static [&'static str]| {
        let mut args = vec![
            "-e",
            event,
            "--cgroup-mode",
            "perf-events",
            "--cgroups",
            cgroup.name.as_str(),
        ];
        args.extend(more);
        args
    };
    let summed = Exporter::start(&args(&[]));
    let per_cpu = Exporter::start(&args(&["--per-cpu"]));
    // A scrape each: the cgroup's counters are open once one is answered.
    for exporter in [&summed, &per_cpu] {
        assert_eq!(get(exporter.address, "/metrics", None).0, Some(200));
    }
    let mut perf = perf_available().then(|| {
        let mut child = Command::new("perf")
            .args(["stat", "-x,", "-e", event, "-a", "-G", &cgroup.name])
            .args(["--", "sh", "-c", "echo counting; read x"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run perf");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(
            line.trim(),
            "counting",
            "perf stat's workload did not start"
        );
        child
    });

    let mut caller = Ended(
        Command::new("python3")
            .args(["-c", CALLER])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start python3"),
    );
    let mut said = BufReader::new(caller.0.stdout.take().unwrap()).lines();
    let mut next = || said.next().and_then(Result::ok).unwrap_or_default();
    assert_eq!(next(), "ready");
    std::fs::write(cgroup.path.join("cgroup.procs"), caller.0.id().to_string()).unwrap();
    let mut stdin = caller.0.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    assert_eq!(next(), "done");

    let label = format!("cgroup=\"/{}\"", cgroup.name);
    let (_, text) = get(summed.address, "/metrics", None);
    let one = samples(&text, "counterhal_event_total", &label);
    assert_eq!(one.len(), 1, "one series for the cgroup: {one:?}\n{text}");
    assert!(!one[0].0.contains("cpu="), "summed, no cpu label: {one:?}");
    assert_eq!(one[0].1, CALLS as f64, "the calls made: {one:?}");
    // A tracepoint never multiplexes: its times, equal, are not exported by default.
    for family in [
        "counterhal_event_enabled_seconds_total",
        "counterhal_event_running_seconds_total",
    ] {
        assert_eq!(samples(&text, family, &label).len(), 0, "{family}: {text}");
    }

    let (_, text) = get(per_cpu.address, "/metrics", None);
    let each = samples(&text, "counterhal_event_total", &label);
    let cpus = counterhal::online_cpus(&counterhal::system::System::host())
        .iter()
        .count();
    assert_eq!(each.len(), cpus, "one series per CPU: {each:?}");
    assert!(each.iter().all(|(labels, _)| labels.contains("cpu=\"")));
    let total: f64 = each.iter().map(|(_, v)| v).sum();
    assert_eq!(
        total, CALLS as f64,
        "the CPUs' counts add up to the calls: {each:?}"
    );
    if cpus > 1 {
        assert!(
            each.iter().filter(|(_, v)| *v > 0.0).count() > 1,
            "the calls were spread over the CPUs: {each:?}"
        );
    }

    if let Some(mut perf) = perf.take() {
        drop(perf.stdin.take());
        let out = perf.wait_with_output().unwrap();
        let counted = stderr(&out)
            .lines()
            .find_map(|l| l.split(',').next()?.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("perf stat counted nothing: {}", stderr(&out)));
        assert_eq!(counted, CALLS, "perf stat -a -G: {}", stderr(&out));
    }
    stdin.write_all(b"end\n").ok();
}

/// A pod's UID with the systemd driver's escape (`-` as `_`).
const BURSTABLE: &str = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
const GUARANTEED: &str = "9a8b7c6d-5e4f-3a2b-1c0d-e9f8a7b6c5d4";

/// The container ID of [`Kubepods`]' container `n` (10: the burstable pod's, 11: the
/// guaranteed pod's).
fn container_id(n: u8) -> String {
    format!("{n:x}").repeat(64)
}

/// The kubelet's log directories below a directory of the test's (the `/var/log` of
/// `--kubelet-logs`), laid out for [`Kubepods`]' pods as the kubelet lays them out: for a
/// pod, `pods/<namespace>_<name>_<UID>/` with a directory per container holding its log
/// (`0.log`, in the CRI's format, which serve never reads); for a started container, the link
/// `containers/<name>_<namespace>_<container>-<ID>.log` to that log, as the node's path.
/// Kubernetes 1.31's `pkg/kubelet/kuberuntime` makes them (`BuildPodLogsDirectory`,
/// `buildContainerLogsPath`, `legacyLogSymlink`). No real kubelet runs here (it needs an API
/// server and a container runtime it drives, which this machine has not), so the layout is
/// made by hand from the kubelet's source; serve/src/labels/kubelet_logs.rs holds its names
/// to that source's functions.
struct KubeletLogDirs(std::path::PathBuf);

impl KubeletLogDirs {
    /// The two directories, empty, below `dir`.
    fn make(dir: &Path) -> KubeletLogDirs {
        for sub in ["pods", "containers"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        KubeletLogDirs(dir.to_path_buf())
    }

    /// The pod `namespace`/`name` of `uid`, as made with its sandbox, and its `container`
    /// of ID `id` with its log and link, as made once it started.
    fn pod(&self, namespace: &str, name: &str, uid: &str, container: &str, id: &str) {
        let pod = format!("{namespace}_{name}_{uid}");
        let logs = self.0.join("pods").join(&pod).join(container);
        std::fs::create_dir_all(&logs).unwrap();
        std::fs::write(
            logs.join("0.log"),
            "2026-11-28T08:00:00.000000000Z stdout F started\n",
        )
        .unwrap();
        let link = format!("{name}_{namespace}_{container}-{id}.log");
        std::os::unix::fs::symlink(
            format!("/var/log/pods/{pod}/{container}/0.log"),
            self.0.join("containers").join(link),
        )
        .unwrap();
    }
}

/// A tree of cgroups made as the kubelet's systemd driver makes them below its
/// `--cgroup-root` `/<root>` (a top-level slice, as kind's `/kubelet` is
/// `/kubelet.slice/kubelet-kubepods.slice/...`), with a container of each pod, below the
/// cgroup mount `mount`; and a busy loop in the burstable pod's container; the loop ended and
/// the tree removed when dropped (deepest first).
struct Kubepods {
    dirs: Vec<std::path::PathBuf>,
    busy: Ended,
}

impl Kubepods {
    /// The tree below `mount` for the kubelet root `/<root>` (`root` without `-`, which the
    /// systemd driver would escape).
    fn make(mount: &Path, root: &str) -> Kubepods {
        assert!(!root.contains('-'), "{root}");
        let id = |n: u8| format!("{n:x}").repeat(64);
        let kubepods = format!("{root}.slice/{root}-kubepods.slice");
        let burstable = format!(
            "{kubepods}/{root}-kubepods-burstable.slice/{root}-kubepods-burstable-pod{}.slice",
            BURSTABLE.replace('-', "_")
        );
        let guaranteed = format!(
            "{kubepods}/{root}-kubepods-pod{}.slice",
            GUARANTEED.replace('-', "_")
        );
        let container = format!("{burstable}/cri-containerd-{}.scope", id(10));
        let paths = [
            format!("{root}.slice"),
            kubepods.clone(),
            format!("{kubepods}/{root}-kubepods-burstable.slice"),
            format!("{kubepods}/{root}-kubepods-besteffort.slice"),
            burstable,
            container.clone(),
            guaranteed.clone(),
            format!("{guaranteed}/crio-{}.scope", id(11)),
        ];
        let mut dirs = Vec::new();
        for path in paths {
            let dir = mount.join(path);
            std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            dirs.push(dir);
        }
        let busy = Ended(
            Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("start a busy loop"),
        );
        std::fs::write(
            mount.join(container).join("cgroup.procs"),
            busy.0.id().to_string(),
        )
        .unwrap();
        Kubepods { dirs, busy }
    }
}

impl Drop for Kubepods {
    fn drop(&mut self) {
        // The loop ends before its cgroup goes (the fields drop after this).
        self.busy.0.kill().ok();
        self.busy.0.wait().ok();
        for dir in self.dirs.iter().rev() {
            for _ in 0..50 {
                if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// The cgroups below `dir` and `dir` itself, removed deepest first (after the test).
struct Tree(std::path::PathBuf);

impl Drop for Tree {
    fn drop(&mut self) {
        fn below(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
            found.push(dir.to_path_buf());
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    below(&entry.path(), found);
                }
            }
        }
        let mut found = Vec::new();
        below(&self.0, &mut found);
        for dir in found.iter().rev() {
            std::fs::remove_dir(dir).ok();
        }
    }
}

/// A user's delegated cgroup subtree that copies the kubelet's layouts with another pod's UID
/// and a container ID (`.../app/kubepods/burstable/pod<UID>/<ID>`, `.../app/kubepods.slice/
/// kubepods-pod<UID>.slice/cri-containerd-<ID>.scope`), made by `nobody`, gets no pod
/// labels: the kubelet makes its `kubepods` at its `--cgroup-root` only (`/` by default),
/// so a sum by `pod_uid` holds only the kubelet's pods. Told that the kubelet's root is that
/// user's `app` (`--kubelet-cgroup-root`), the cgroupfs driver's layout there is a pod's.
///
/// Oracle: the kubelet's cgroup naming (kubernetes' `pkg/kubelet/cm/container_manager_linux.go`:
/// the pods' root is its `--cgroup-root` and `kubepods`; `cgroup_manager_linux.go`'s
/// `ToCgroupfs` and `ToSystemd`), and the kernel's cgroup delegation (a directory `nobody`
/// owns is one it may make cgroups in, cgroup-v2.rst "Delegation").
#[test]
fn a_users_copy_of_the_kubepods_layout_gets_no_pod_labels() {
    serve_or_skip!();
    if !running_as_root() {
        skip!(Need::Privilege, "making and delegating cgroups takes root");
    }
    let Some(mut mkdir) = unprivileged_program("mkdir") else {
        skip!(
            Need::Tools,
            "cannot run mkdir as nobody: no setpriv (util-linux)"
        );
    };
    let mount = match counterhal::cgroups::root(&counterhal::system::System::host()) {
        Ok(mount) => mount,
        Err(e) => skip!(Need::System, "no cgroup mount to count in: {e}"),
    };
    let top = TestCgroup::new(&mount, "delegated").expect("make a cgroup");
    let _tree = Tree(top.path.join("app"));
    std::os::unix::fs::chown(&top.path, Some(NOBODY), Some(NOBODY)).unwrap();
    let id = "c".repeat(64);
    let escaped = BURSTABLE.replace('-', "_");
    let copies = [
        format!("app/kubepods/burstable/pod{BURSTABLE}/{id}"),
        format!("app/kubepods.slice/kubepods-pod{escaped}.slice/cri-containerd-{id}.scope"),
    ];
    let made = mkdir
        .arg("-p")
        .args(copies.iter().map(|c| top.path.join(c)))
        .output()
        .expect("run mkdir as nobody");
    assert!(made.status.success(), "mkdir as nobody: {}", stderr(&made));

    let scrape = |more: &[&str]| {
        let pattern = format!("^{}/app/", top.name);
        let mut args = vec![
            "-e",
            "task-clock",
            "--cgroups",
            &pattern,
            "--cgroup-depth",
            "8",
        ];
        args.extend(more);
        let exporter = Exporter::start(&args);
        let (status, text) = get(exporter.address, "/metrics", None);
        assert_eq!(status, Some(200));
        samples(&text, "counterhal_event_seconds_total", "cgroup=\"/")
    };
    let series = scrape(&[]);
    for copy in &copies {
        let label = format!("cgroup=\"/{}/{copy}\"", top.name);
        assert!(
            series.iter().any(|(labels, _)| labels.contains(&label)),
            "{copy} is followed: {series:?}"
        );
    }
    assert!(
        series.iter().all(|(labels, _)| !labels.contains("pod_uid")
            && !labels.contains("container_id")
            && !labels.contains("qos_class")),
        "a user's copy of the layout was labelled as a pod's: {series:?}"
    );

    // The kubelet's root declared there: its cgroupfs layout is a pod's and its container's.
    let root = format!("/{}/app", top.name);
    let series = scrape(&["--kubelet-cgroup-root", &root]);
    let pod_label = format!("cgroup=\"/{}/{}\"", top.name, copies[0]);
    let (labels, _) = series
        .iter()
        .find(|(labels, _)| labels.contains(&pod_label))
        .unwrap_or_else(|| panic!("{pod_label}: {series:?}"));
    for label in [
        format!("pod_uid=\"{BURSTABLE}\""),
        format!("container_id=\"{id}\""),
        "qos_class=\"burstable\"".to_string(),
    ] {
        assert!(labels.contains(&label), "{label} not in {labels}");
    }
    let systemd_copy = format!("cgroup=\"/{}/{}\"", top.name, copies[1]);
    assert!(
        series
            .iter()
            .filter(|(labels, _)| labels.contains(&systemd_copy))
            .all(|(labels, _)| !labels.contains("pod_uid")),
        "the systemd driver's layout of that root is app.slice/app-kubepods.slice: {series:?}"
    );
}

/// A container's cgroup gets its `container` name with its pod's `namespace` and `pod`, read
/// from the kubelet's log directories (`--kubelet-logs`: a pod's directory and the container's
/// link), beside its `container_id` and `pod_uid`; a pod whose directory is not there gets
/// none of them; and `--kubelet-log-labels` chooses which of the three a series carries. No
/// real kubelet runs here: the directories are laid out as its source lays them
/// ([`KubeletLogDirs`]).
///
/// Oracle: kubernetes 1.31's pkg/kubelet/kuberuntime (`BuildPodLogsDirectory` and
/// `legacyLogSymlink`: the names the kubelet gives a pod's log directory and a container's
/// link), and the containers' scopes as containerd's and CRI-O's systemd cgroups name them
/// (`cri-containerd-<ID>.scope`, `crio-<ID>.scope`) below the kubelet's systemd driver's pods.
#[test]
fn containers_are_named_from_the_kubelets_links_as_chosen() {
    serve_or_skip!();
    if !running_as_root() {
        skip!(Need::Privilege, "making cgroups takes root");
    }
    let mount = match counterhal::cgroups::root(&counterhal::system::System::host()) {
        Ok(mount) => mount,
        Err(e) => skip!(Need::System, "no cgroup mount to count in: {e}"),
    };
    let kubelet_root = format!("counterhal_test_{}_names", std::process::id());
    let _tree = Kubepods::make(&mount, &kubelet_root);
    let scratch = Scratch::new("kubelet-names");
    let logs = KubeletLogDirs::make(&scratch.0);
    logs.pod("shop", "web-7d4b9c", BURSTABLE, "web", &container_id(10));
    let pattern = format!("^{kubelet_root}[.]slice/.*[.]scope$");
    let root = format!("/{kubelet_root}");
    let dir = logs.0.display().to_string();
    // The two containers' series (the burstable pod's, the guaranteed pod's) in a scrape.
    let scrape = |more: &[&str]| {
        let mut args = vec![
            "-e",
            "task-clock",
            "--cgroups",
            &pattern,
            "--cgroup-depth",
            "5",
        ];
        args.extend(["--kubelet-cgroup-root", &root, "--kubelet-logs", &dir]);
        args.extend(more);
        let exporter = Exporter::start(&args);
        let (status, text) = get(exporter.address, "/metrics", None);
        assert_eq!(status, Some(200));
        let series = samples(&text, "counterhal_event_seconds_total", "cgroup=\"/");
        let of = |scope: String| {
            let found: Vec<&(String, f64)> =
                series.iter().filter(|(l, _)| l.contains(&scope)).collect();
            assert_eq!(found.len(), 1, "{scope}: {series:?}");
            found[0].0.clone()
        };
        (
            of(format!("/cri-containerd-{}.scope\"", container_id(10))),
            of(format!("/crio-{}.scope\"", container_id(11))),
        )
    };
    let (named, unnamed) = scrape(&[]);
    for label in [
        "namespace=\"shop\"".to_string(),
        "pod=\"web-7d4b9c\"".to_string(),
        "container=\"web\"".to_string(),
        format!("pod_uid=\"{BURSTABLE}\""),
        format!("container_id=\"{}\"", container_id(10)),
    ] {
        assert!(named.contains(&label), "{label} not in {named}");
    }
    for label in ["namespace=", "pod=", "container="] {
        assert!(
            !unnamed.contains(&format!(",{label}")),
            "a pod without its log directory has no {label}: {unnamed}"
        );
    }
    assert!(
        unnamed.contains(&format!("pod_uid=\"{GUARANTEED}\"")),
        "{unnamed}"
    );

    let (only_container, _) = scrape(&["--kubelet-log-labels", "container"]);
    assert!(
        only_container.contains("container=\"web\""),
        "{only_container}"
    );
    assert!(
        !only_container.contains(",namespace=") && !only_container.contains(",pod="),
        "{only_container}"
    );
    let (no_container, _) = scrape(&["--kubelet-log-labels", "namespace,pod"]);
    assert!(
        no_container.contains("namespace=\"shop\"") && no_container.contains("pod=\"web-7d4b9c\""),
        "{no_container}"
    );
    assert!(!no_container.contains(",container="), "{no_container}");
}

/// The DaemonSet's command line (daemonset.yaml, read here so the two cannot drift), with its
/// paths made the test's: loopback, the web configuration of web-config.yml with the test's
/// certificate and user, the kubelet's log directories below `logs`, and the kubelet's
/// `--cgroup-root` `/<root>` (the tree is made there, not at the mount's top): its cgroup
/// pattern below the root's slice, one level down.
fn daemonset_args(
    container: &serde_json::Value,
    root: &str,
    web: &Path,
    logs: &Path,
) -> Vec<String> {
    let command = command_of(container);
    let mut args: Vec<String> = command[1..].to_vec();
    let pattern = after(&args, "--cgroups").expect("--cgroups").to_string();
    let depth: u32 = after(&args, "--cgroup-depth")
        .expect("--cgroup-depth")
        .parse()
        .unwrap();
    let anchored = pattern
        .strip_prefix("^kubepods.slice/")
        .expect("a pattern anchored at the systemd driver's kubepods.slice");
    for (option, value) in [
        ("--listen", "127.0.0.1:0".to_string()),
        ("--web.config.file", web.display().to_string()),
        (
            "--cgroups",
            format!("^{root}[.]slice/{root}-kubepods[.]slice/{anchored}"),
        ),
        ("--cgroup-depth", (depth + 1).to_string()),
        ("--kubelet-logs", logs.display().to_string()),
    ] {
        let at = args.iter().position(|a| a == option).unwrap();
        args[at + 1] = value;
    }
    args.extend(["--kubelet-cgroup-root".to_string(), format!("/{root}")]);
    args
}

/// web-config.yml in `dir` with the test's certificate and key as the names it gives, and the
/// test user's hash (cli/tests/fixtures/tls) for the example's, which serve refuses.
pub fn web_config(dir: &Path) -> std::path::PathBuf {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
    let text = read(&repository("examples/prometheus/web-config.yml"));
    let placeholder = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("prometheus: "))
        .expect("the user prometheus");
    let path = dir.join("web-config.yml");
    std::fs::write(&path, &text).unwrap();
    std::fs::copy(fixtures.join("server.crt"), dir.join("tls.crt")).unwrap();
    std::fs::copy(fixtures.join("server.key"), dir.join("tls.key")).unwrap();
    let refused = counterhal(&[
        "serve",
        "-e",
        "task-clock",
        "--web.config.file",
        path.to_str().unwrap(),
    ]);
    assert_eq!(
        refused.status.code(),
        Some(2),
        "the example's hash is refused: {}",
        stderr(&refused)
    );
    assert!(
        stderr(&refused).contains("basic_auth_users.prometheus"),
        "{}",
        stderr(&refused)
    );
    let users = read(&fixtures.join("users.txt"));
    let hash = users.split_whitespace().nth(1).unwrap();
    assert!(text.contains(placeholder), "{text}");
    std::fs::write(&path, text.replace(placeholder, &format!("'{hash}'"))).unwrap();
    path
}

/// prometheus-kubernetes.yml's job for the DaemonSet, as a scrape_configs item: its TLS and
/// basic authentication as written, with the test's CA, password file and certificate name
/// (the fixture's is `localhost`) for its paths, and `target` for its Kubernetes discovery,
/// which Debian's Prometheus is built without.
pub fn scrape_job(target: std::net::SocketAddr, dir: &Path) -> String {
    let path = repository("examples/prometheus/prometheus-kubernetes.yml");
    let config = yaml_documents(&path).expect("PyYAML").remove(0);
    let mut job = config["scrape_configs"][0].clone();
    assert_eq!(job["scheme"], "https", "{job}");
    assert!(job["kubernetes_sd_configs"].is_array(), "{job}");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
    let object = job.as_object_mut().unwrap();
    object.remove("kubernetes_sd_configs");
    object.remove("relabel_configs");
    object.insert(
        "static_configs".into(),
        serde_json::json!([{ "targets": [target.to_string()] }]),
    );
    job["tls_config"]["ca_file"] = fixtures.join("ca.crt").display().to_string().into();
    job["tls_config"]["server_name"] = "localhost".into();
    let password = dir.join("password");
    std::fs::write(&password, "scrape-me").unwrap();
    job["basic_auth"]["password_file"] = password.display().to_string().into();
    assert_eq!(job["basic_auth"]["username"], "prometheus", "{job}");
    format!("  - {job}\n")
}

/// Done when: the DaemonSet's command line (its arguments read from daemonset.yaml), run
/// against a tree of pod cgroups made as the kubelet's systemd driver makes them below a
/// `--cgroup-root` of the test's (as kind's `/kubelet`), told with `--kubelet-cgroup-root`
/// and its pattern written below that root's slices, scraped by
/// Prometheus over TLS with basic authentication as prometheus-kubernetes.yml's job scrapes
/// it, gives each pod's series its `pod_uid` and `qos_class` (the containers below the
/// `--cgroup-depth` not followed, their counts in their pod's), and its `namespace` and `pod`
/// read from the kubelet's log directories (the DaemonSet's `--kubelet-logs`, a tree of the
/// test's: [`KubeletLogDirs`]), a pod whose directory is made after its cgroup was followed
/// included; the series carry the labels kubernetes-rules.test.yml gives counterhal's series,
/// and kubernetes-rules.yml, evaluated by that Prometheus with no kube-state-metrics, names
/// the busy pod's `pod:` series from them.
///
/// Oracle: Prometheus 2.42 and 3.5 (each one's scraper over Go's TLS with basic_auth, its
/// PromQL and rule evaluation); the kubelet's systemd names (kubernetes'
/// pkg/kubelet/cm/cgroup_manager_linux.go `ToSystemd`) and its log directories' names
/// (kubernetes 1.31's pkg/kubelet/kuberuntime `BuildPodLogsDirectory`, `legacyLogSymlink`);
/// the kernel's cgroup events, which count a cgroup's descendants (kernel/events/core.c,
/// `perf_cgroup_match`: `cgroup_is_descendant`), so the busy container's pod counts it.
#[test]
fn the_daemonsets_command_line_gives_prometheus_pod_labels_over_tls() {
    serve_or_skip!();
    if !running_as_root() {
        skip!(Need::Privilege, "making cgroups takes root");
    }
    let Some((container, _)) = daemonset() else {
        skip!(
            Need::Tools,
            "python3 with PyYAML (Debian's python3-yaml) is not installed to read the DaemonSet"
        );
    };
    let root = match counterhal::cgroups::root(&counterhal::system::System::host()) {
        Ok(root) => root,
        Err(e) => skip!(Need::System, "no cgroup mount to count in: {e}"),
    };
    let kubelet_root = format!("counterhal_test_{}_kubelet", std::process::id());
    let _tree = Kubepods::make(&root, &kubelet_root);
    let scratch = Scratch::new("daemonset");
    let web = web_config(&scratch.0);
    // The burstable pod's directory and link are there before serve starts; the guaranteed
    // pod's are made later (by the first body run), after its cgroup is followed.
    let logs = KubeletLogDirs::make(&scratch.0.join("log"));
    logs.pod("shop", "web-7d4b9c", BURSTABLE, "web", &container_id(10));
    let args = daemonset_args(&container, &kubelet_root, &web, &logs.0);
    let mut command = Command::new(bin());
    command.args(&args);
    let exporter = Exporter::spawn(command);
    for release in Release::ALL {
        eprintln!("== {}", release.name());
        pod_labels_over_tls_on(release, &exporter, &scratch.0, &logs);
    }
}

/// counterhal-rules.yml and kubernetes-rules.yml as one rules file's text (their groups in
/// one list).
fn kubernetes_rules() -> String {
    let dir = repository("examples/prometheus");
    let counterhal = read(&dir.join("counterhal-rules.yml"));
    let kubernetes = read(&dir.join("kubernetes-rules.yml"));
    let (_, groups) = kubernetes
        .split_once("\ngroups:\n")
        .expect("kubernetes-rules.yml's groups");
    assert!(counterhal.contains("\ngroups:\n"), "{counterhal}");
    format!("{counterhal}{groups}")
}

/// The body of the test above for `release`: its Prometheus scraping `exporter` as
/// prometheus-kubernetes.yml's job does, with the files of `dir`, and evaluating
/// kubernetes-rules.yml; the guaranteed pod's log directory made in `logs` where it is not
/// there yet.
fn pod_labels_over_tls_on(
    release: Release,
    exporter: &Exporter,
    dir: &Path,
    logs: &KubeletLogDirs,
) {
    tool_or_skip!(release, "prometheus");
    let job = scrape_job(exporter.address, dir);
    let prometheus = Prometheus::start_with(release, "daemonset", &job, &kubernetes_rules());
    let query = "counterhal_event_seconds_total{event=\"task-clock\",pod_uid!=\"\"}";
    let start = Instant::now();
    let pods = loop {
        let pods = prometheus.query(query);
        if pods.len() >= 2 {
            break pods;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no pod_uid series in 60 s: {pods:?}; {}",
            prometheus.health()
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(pods.len(), 2, "the two pods, no container: {pods:?}");
    let find = |uid: &str| {
        pods.iter()
            .find(|(labels, _)| labels.contains(&format!("\"pod_uid\":\"{uid}\"")))
            .unwrap_or_else(|| panic!("no series of pod {uid}: {pods:?}"))
    };
    let (burstable, busy) = find(BURSTABLE);
    assert!(
        burstable.contains("\"qos_class\":\"burstable\""),
        "{burstable}"
    );
    for name in ["\"namespace\":\"shop\"", "\"pod\":\"web-7d4b9c\""] {
        assert!(burstable.contains(name), "{name} not in {burstable}");
    }
    assert!(
        !burstable.contains("\"container\""),
        "a pod's cgroup, no container's: {burstable}"
    );
    assert!(
        burstable.contains("\"job\":\"counterhal-kubernetes\""),
        "{burstable}"
    );
    assert!(
        !burstable.contains("\"cpu\""),
        "summed over the CPUs: {burstable}"
    );
    assert!(!burstable.contains("container_id"), "{burstable}");
    assert!(
        *busy > 0.0,
        "the container's busy loop counted in its pod: {pods:?}"
    );
    let (guaranteed, _) = find(GUARANTEED);
    assert!(
        guaranteed.contains("\"qos_class\":\"guaranteed\""),
        "{guaranteed}"
    );
    named_later(&prometheus, guaranteed, logs);
    pods_named_without_kube_state_metrics(&prometheus);

    // The labels the promtool test gives counterhal's series are the ones served.
    let served: std::collections::BTreeSet<String> =
        serde_json::from_str::<serde_json::Value>(burstable)
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| *k != "__name__")
            .cloned()
            .collect();
    let test_file = read(&repository("examples/prometheus/kubernetes-rules.test.yml"));
    let line = test_file
        .lines()
        .find(|l| {
            l.contains("counterhal_event_seconds_total{event=\"task-clock\"")
                && l.contains("burstable")
        })
        .expect("the burstable pod's task-clock in the promtool test");
    for label in &served {
        assert!(
            line.contains(&format!("{label}=\"")),
            "{label} not in {line}"
        );
    }
}

/// The guaranteed pod, whose series `guaranteed` has no name while its log directory is not
/// there, is named once the directory and its container's link are made, as the kubelet
/// makes them after the pod's cgroup: Prometheus scraping every second finds the names within
/// 30 s.
fn named_later(prometheus: &Prometheus, guaranteed: &str, logs: &KubeletLogDirs) {
    let pod = "etcd-node-a";
    if !logs
        .0
        .join("pods")
        .join(format!("kube-system_{pod}_{GUARANTEED}"))
        .exists()
    {
        assert!(
            !guaranteed.contains("\"namespace\"") && !guaranteed.contains("\"pod\""),
            "named before its log directory was made: {guaranteed}"
        );
        logs.pod("kube-system", pod, GUARANTEED, "etcd", &container_id(11));
    }
    let query = format!(
        "counterhal_event_seconds_total{{event=\"task-clock\",pod_uid=\"{GUARANTEED}\",\
         namespace=\"kube-system\",pod=\"{pod}\"}}"
    );
    let start = Instant::now();
    while prometheus.query(&query).len() != 1 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the guaranteed pod not named in 30 s: {:?}",
            prometheus.query("counterhal_event_seconds_total{event=\"task-clock\",pod_uid!=\"\"}")
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// kubernetes-rules.yml's `pod:` series, with no kube_pod_info in this Prometheus, name the
/// busy pod from the names serve read, its CPUs utilized above 0 (the busy loop's; its
/// rate1m is small until a minute of samples, rate() dividing by the whole window).
fn pods_named_without_kube_state_metrics(prometheus: &Prometheus) {
    let query = "pod:counterhal_CPUs_utilized:rate1m{namespace=\"shop\",pod=\"web-7d4b9c\"}";
    let start = Instant::now();
    let named = loop {
        let named = prometheus.query(query);
        if !named.is_empty() {
            break named;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no pod: series of the busy pod in 60 s: {}",
            prometheus.health()
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(named.len(), 1, "{named:?}");
    assert!(named[0].0.contains(BURSTABLE), "{named:?}");
    assert!(named[0].1 > 0.0, "the busy loop's CPUs utilized: {named:?}");
}

/// The kube-state-metrics join of kubernetes-rules.yml, over counterhal-rules.yml's series:
/// a pod kube_pod_info names (from two replicas) and serve names too (`--kubelet-logs`) gets
/// one series with its namespace and name, one serve alone names gets serve's names, one
/// neither names gets no `pod:` series.
///
/// Oracle: the `test rules` of promtool 2.42 and 3.5 (PromQL's `group_left`, `or` and
/// `label_replace`) on kube_pod_info as kube-state-metrics 2 writes it; and their `check
/// config` on prometheus-kubernetes.yml, which finds and checks both rules files: as shipped
/// where the build reads Kubernetes discovery (Debian sid's), else with the discovery
/// replaced by a target (Debian 12's build cannot read it).
#[test]
fn the_kube_state_metrics_join_evaluates_with_promtool() {
    for release in Release::ALL {
        eprintln!("== {}", release.name());
        the_join_evaluates_with_promtool_of(release);
    }
}

/// The body of the test above for `release`.
fn the_join_evaluates_with_promtool_of(release: Release) {
    tool_or_skip!(release, "promtool");
    let dir = repository("examples/prometheus");
    let (ok, said) = verdict(
        release
            .command("promtool")
            .args(["test", "rules", "kubernetes-rules.test.yml"])
            .current_dir(&dir),
    );
    assert!(
        ok,
        "{}'s promtool test rules kubernetes-rules.test.yml: {said}",
        release.name()
    );
    assert!(said.contains("SUCCESS"), "{said}");

    let text = read(&dir.join("prometheus-kubernetes.yml"));
    let scratch = Scratch::new(&format!("kubernetes-config-{release:?}"));
    for rules in [
        "counterhal-rules.yml",
        "counterhal-totals.yml",
        "kubernetes-rules.yml",
    ] {
        std::fs::copy(dir.join(rules), scratch.0.join(rules)).unwrap();
    }
    let check = |config: &str| {
        std::fs::write(scratch.0.join("prometheus.yml"), config).unwrap();
        verdict(
            release
                .command("promtool")
                .args(["check", "config"])
                .arg(scratch.0.join("prometheus.yml")),
        )
    };
    let (mut ok, mut said) = check(&text);
    if !ok && said.contains("field kubernetes_sd_configs not found") {
        let start = text
            .find("    kubernetes_sd_configs:")
            .expect("the discovery");
        let end = text.find("    relabel_configs:").expect("the relabelling");
        (ok, said) = check(&format!(
            "{}    static_configs:\n      - targets: ['node-a:19110']\n{}",
            &text[..start],
            &text[end..]
        ));
    }
    assert!(ok, "{}'s promtool check config: {said}", release.name());
    assert!(said.contains("SUCCESS: 3 rule files found"), "{said}");
}
