//! `counterhal serve` on a Kubernetes node: a cgroup's series summed over the CPUs (or per
//! CPU with `--per-cpu`), pods' cgroups labelled with their UID and QoS class, the DaemonSet's
//! command line scraped by Prometheus over TLS with a password as
//! examples/prometheus/prometheus-kubernetes.yml scrapes it, and the kube-state-metrics join
//! of examples/prometheus/kubernetes-rules.yml evaluated by promtool.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::serve::{Exporter, get};
use crate::serve_examples::{
    Scratch, after, command_of, daemonset, read, repository, runs, verdict, yaml_documents,
};
use crate::serve_prometheus::{Prometheus, prometheus_installed};
use counterhal_conformance::fixtures::TestCgroup;
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
    let root = match counterhal::cgroup_root() {
        Ok(root) => root,
        Err(e) => skip!(Need::System, "no cgroup mount to count in: {e}"),
    };
    let cgroup = TestCgroup::new(&root, "summed").expect("make a cgroup");
    let event = "syscalls:sys_enter_getppid";
    let args = |more: &'static [&'static str]| {
        let mut args = vec!["-e", event, "--cgroups", cgroup.name.as_str()];
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
    for family in [
        "counterhal_event_enabled_seconds_total",
        "counterhal_event_running_seconds_total",
    ] {
        assert_eq!(samples(&text, family, &label).len(), 1, "{family}: {text}");
    }

    let (_, text) = get(per_cpu.address, "/metrics", None);
    let each = samples(&text, "counterhal_event_total", &label);
    let cpus = counterhal::online_cpus().iter().count();
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

/// A tree of cgroups made as the kubelet's systemd driver makes them (with a container of
/// each pod) below `top`, and a busy loop in the burstable pod's container; the loop ended and
/// the tree removed when dropped (deepest first, before the test's own cgroup).
struct Kubepods {
    dirs: Vec<std::path::PathBuf>,
    busy: Ended,
}

impl Kubepods {
    fn make(top: &Path) -> Kubepods {
        let id = |n: u8| format!("{n:x}").repeat(64);
        let burstable = format!(
            "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice",
            BURSTABLE.replace('-', "_")
        );
        let guaranteed = format!(
            "kubepods.slice/kubepods-pod{}.slice",
            GUARANTEED.replace('-', "_")
        );
        let container = format!("{burstable}/cri-containerd-{}.scope", id(10));
        let paths = [
            "kubepods.slice".to_string(),
            "kubepods.slice/kubepods-burstable.slice".to_string(),
            "kubepods.slice/kubepods-besteffort.slice".to_string(),
            burstable,
            container.clone(),
            guaranteed.clone(),
            format!("{guaranteed}/crio-{}.scope", id(11)),
        ];
        let mut dirs = Vec::new();
        for path in paths {
            let dir = top.join(path);
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
            top.join(container).join("cgroup.procs"),
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

/// The DaemonSet's command line (daemonset.yaml, read here so the two cannot drift), with its
/// paths made the test's: loopback, the web configuration of web-config.yml with the test's
/// certificate and user, and its cgroup pattern and depth one level down, below the test's
/// cgroup `top` (the tree is made there, not at the mount's top).
fn daemonset_args(container: &serde_json::Value, top: &str, web: &Path) -> Vec<String> {
    let command = command_of(container);
    let mut args: Vec<String> = command[1..].to_vec();
    let pattern = after(&args, "--cgroups").expect("--cgroups").to_string();
    let depth: u32 = after(&args, "--cgroup-depth")
        .expect("--cgroup-depth")
        .parse()
        .unwrap();
    let anchored = pattern
        .strip_prefix('^')
        .expect("a pattern anchored at the mount");
    for (option, value) in [
        ("--listen", "127.0.0.1:0".to_string()),
        ("--web.config.file", web.display().to_string()),
        ("--cgroups", format!("^{top}/{anchored}")),
        ("--cgroup-depth", (depth + 1).to_string()),
    ] {
        let at = args.iter().position(|a| a == option).unwrap();
        args[at + 1] = value;
    }
    args
}

/// web-config.yml in `dir` with the test's certificate and key as the names it gives, and the
/// test user's hash (cli/tests/fixtures/tls) for the placeholder, which serve refuses.
fn web_config(dir: &Path) -> std::path::PathBuf {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
    let text = read(&repository("examples/prometheus/web-config.yml"));
    let placeholder = "REPLACE-WITH-THE-BCRYPT-HASH";
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
        "the placeholder is refused: {}",
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
fn scrape_job(target: std::net::SocketAddr, dir: &Path) -> String {
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
/// against a tree of pod cgroups made as the kubelet's systemd driver makes them, scraped by
/// Prometheus over TLS with basic authentication as prometheus-kubernetes.yml's job scrapes
/// it, gives each pod's series its `pod_uid` and `qos_class` (the containers below the
/// `--cgroup-depth` not followed, their counts in their pod's), and the series carry the
/// labels kubernetes-rules.test.yml gives counterhal's series.
///
/// Oracle: Prometheus 2.42 (its scraper over Go's TLS with basic_auth, its PromQL); the
/// kubelet's systemd names (kubernetes' pkg/kubelet/cm/cgroup_manager_linux.go `ToSystemd`);
/// the kernel's cgroup events, which count a cgroup's descendants (kernel/events/core.c,
/// `perf_cgroup_match`: `cgroup_is_descendant`), so the busy container's pod counts it.
#[test]
fn the_daemonsets_command_line_gives_prometheus_pod_labels_over_tls() {
    serve_or_skip!();
    if !running_as_root() {
        skip!(Need::Privilege, "making cgroups takes root");
    }
    let Some((container, _)) = daemonset().filter(|_| prometheus_installed()) else {
        skip!(
            Need::Tools,
            "Debian's prometheus and PyYAML (python3-yaml) are not installed"
        );
    };
    let root = match counterhal::cgroup_root() {
        Ok(root) => root,
        Err(e) => skip!(Need::System, "no cgroup mount to count in: {e}"),
    };
    let top = TestCgroup::new(&root, "kubepods").expect("make a cgroup");
    let _tree = Kubepods::make(&top.path);
    let scratch = Scratch::new("daemonset");
    let web = web_config(&scratch.0);
    let args = daemonset_args(&container, &top.name, &web);
    let mut command = Command::new(bin());
    command.args(&args);
    let exporter = Exporter::spawn(command);

    let job = scrape_job(exporter.address, &scratch.0);
    let prometheus = Prometheus::start_with("daemonset", &job, "");
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

/// The kube-state-metrics join of kubernetes-rules.yml, over counterhal-rules.yml's series:
/// a pod kube_pod_info names (from two replicas) gets its namespace and name, one it does not
/// name gets no joined series.
///
/// Oracle: promtool 2.42's `test rules` (PromQL's `group_left` and `label_replace`) on
/// kube_pod_info as kube-state-metrics 2 writes it; and `promtool check config` on
/// prometheus-kubernetes.yml (its Kubernetes discovery replaced by a target, which Debian's
/// build cannot read), which finds and checks both rules files.
#[test]
fn the_kube_state_metrics_join_evaluates_with_promtool() {
    if !runs("promtool", &["--version"]) {
        skip!(
            Need::Tools,
            "Debian's promtool (prometheus) is not installed"
        );
    }
    let dir = repository("examples/prometheus");
    let (ok, said) = verdict(
        Command::new("promtool")
            .args(["test", "rules", "kubernetes-rules.test.yml"])
            .current_dir(&dir),
    );
    assert!(ok, "promtool test rules kubernetes-rules.test.yml: {said}");
    assert!(said.contains("SUCCESS"), "{said}");

    let text = read(&dir.join("prometheus-kubernetes.yml"));
    let start = text
        .find("    kubernetes_sd_configs:")
        .expect("the discovery");
    let end = text.find("    relabel_configs:").expect("the relabelling");
    let scratch = Scratch::new("kubernetes-config");
    let config = format!(
        "{}    static_configs:\n      - targets: ['node-a:19110']\n{}",
        &text[..start],
        &text[end..]
    );
    std::fs::write(scratch.0.join("prometheus.yml"), config).unwrap();
    for rules in ["counterhal-rules.yml", "kubernetes-rules.yml"] {
        std::fs::copy(dir.join(rules), scratch.0.join(rules)).unwrap();
    }
    let (ok, said) = verdict(
        Command::new("promtool")
            .args(["check", "config"])
            .arg(scratch.0.join("prometheus.yml")),
    );
    assert!(ok, "promtool check config: {said}");
    assert!(said.contains("SUCCESS: 2 rule files found"), "{said}");
}
