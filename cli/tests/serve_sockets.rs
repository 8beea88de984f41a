//! `counterhal serve --per-socket` and `--per-die`: the system-wide series summed per socket
//! or die instead of per CPU, counting what `stat -a --per-socket` and perf count, and
//! adding up in PromQL to what the per-CPU series add up to.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::serve::{Exporter, get};
use crate::serve_examples::runs;
use crate::serve_prometheus::Prometheus;
use counterhal_conformance::fixtures::prometheus::Release;
use counterhal_conformance::prometheus_tool_or_skip as tool_or_skip;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The tracepoint the first test counts, of a system call few programs make (each test
/// its own: they run at once).
const EVENT: &str = "syscalls:sys_enter_getsid";

/// Calls getsid(2) `CALLS` times from a Python loop.
const CALLER: &str = "import os\nfor i in range(20000):\n    os.getsid(0)\n";

/// The tracepoint the Prometheus test counts.
const PROMETHEUS_EVENT: &str = "syscalls:sys_enter_getpgid";

/// Calls getpgid(2) `CALLS` times from a Python loop.
const PROMETHEUS_CALLER: &str = "import os\nfor i in range(20000):\n    os.getpgid(0)\n";

/// The calls each caller makes.
const CALLS: f64 = 20000.0;

/// Skips a test that counts a tracepoint on every CPU through serve where it cannot: without
/// serve, tracepoints, root or python3 (the caller of the system calls).
macro_rules! every_cpu_or_skip {
    () => {
        serve_or_skip!();
        tracepoints_or_skip!();
        if !running_as_root() || !runs("python3", &["-c", "pass"]) {
            skip!(
                Need::Privilege,
                "counting every CPU takes root, and python3"
            );
        }
    };
}

/// The samples of `family` in the text exposition `text` whose event is `event`: each one's
/// labels as (name, value) pairs and its value.
fn samples(text: &str, family: &str, event: &str) -> Vec<(Vec<(String, String)>, f64)> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(family)?.strip_prefix('{')?;
            let (labels, value) = rest.rsplit_once("} ")?;
            let labels: Vec<(String, String)> = labels
                .split(',')
                .filter_map(|pair| {
                    let (name, value) = pair.split_once("=\"")?;
                    Some((name.to_string(), value.trim_end_matches('"').to_string()))
                })
                .collect();
            let named = labels.iter().find(|(n, _)| n == "event")?;
            (named.1 == event).then_some((labels, value.parse().ok()?))
        })
        .collect()
}

/// The value of label `name` among `labels`.
fn label<'a>(labels: &'a [(String, String)], name: &str) -> Option<&'a str> {
    labels
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// `(socket, die)` of each online CPU as sysfs' `topology/physical_package_id` and
/// `topology/die_id` have them (the die `None` where the kernel numbers none).
fn topology() -> Vec<(String, Option<String>)> {
    counterhal::online_cpus(&counterhal::system::System::host())
        .iter()
        .map(|cpu| {
            let read = |file: &str| {
                std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/topology/{file}"))
                    .ok()
                    .map(|s| s.trim().to_string())
            };
            (
                read("physical_package_id").unwrap_or_default(),
                read("die_id"),
            )
        })
        .collect()
}

/// Each aggregate's count in the CSV (`-x,`) output `text` of `perf stat -a --per-socket`
/// or `--per-die` (as `counterhal stat` writes it too): `S0` or `S0-D0`, and the count.
fn aggregates(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|l| l.contains(EVENT))
        .filter_map(|l| {
            let mut fields = l.split(',');
            let id = fields.next()?.to_string();
            let _cpus = fields.next()?;
            Some((id, fields.next()?.parse().ok()?))
        })
        .collect()
}

/// With `--per-socket`, one series per socket, labelled with its socket alone; with
/// `--per-die`, one per die, labelled with its socket and die. Each grows over a run of
/// getsid(2) calls by what `counterhal stat -a --per-socket` (`--per-die`) and perf's counted
/// of the run, within 2% (the exporter's window holds theirs), and by at least the calls.
///
/// Oracle: perf 6.1's `perf stat -a --per-socket` and `--per-die` (tools/perf/util/stat.c's
/// aggregation by `cpu__get_socket_id` and `cpu__get_die_id`, which read the same sysfs
/// topology files); the calls the process made (the tracepoint fires once a call).
#[test]
fn per_socket_and_per_die_series_count_as_stat_and_perf_aggregate() {
    every_cpu_or_skip!();
    let topology = topology();
    for (option, perf_option) in [("--per-socket", "--per-socket"), ("--per-die", "--per-die")] {
        let exporter = Exporter::start(&["-e", EVENT, option]);
        let (status, before) = get(exporter.address, "/metrics", None);
        assert_eq!(status, Some(200), "{before}");
        let series = samples(&before, "counterhal_event_total", EVENT);
        // The aggregates the topology has, each labelled as its option says.
        let mut expected: Vec<String> = topology
            .iter()
            .map(|(socket, die)| match (option, die) {
                ("--per-die", Some(die)) => format!("S{socket}-D{die}"),
                _ => format!("S{socket}"),
            })
            .collect();
        expected.sort();
        expected.dedup();
        let id = |labels: &[(String, String)]| {
            assert_eq!(label(labels, "cpu"), None, "{option}: {labels:?}");
            let socket = label(labels, "socket").unwrap_or_default();
            match (option, label(labels, "die")) {
                ("--per-die", Some(die)) => format!("S{socket}-D{die}"),
                ("--per-socket", Some(die)) => panic!("--per-socket with die {die}"),
                _ => format!("S{socket}"),
            }
        };
        let mut found: Vec<String> = series.iter().map(|(l, _)| id(l)).collect();
        found.sort();
        assert_eq!(found, expected, "{option}: {before}");

        let mut command = match perf_available() {
            true => {
                let mut perf = Command::new("perf");
                perf.args(["stat", "-a", perf_option, "-x,", "-e", EVENT, "--"])
                    .arg(bin());
                perf
            }
            false => Command::new(bin()),
        };
        let run = command
            .args(["stat", "-a", option, "-x,", "-e", EVENT, "--"])
            .args(["python3", "-c", CALLER])
            .output()
            .expect("run the work under stat");
        assert!(run.status.success(), "{}", stderr(&run));
        let (_, after) = get(exporter.address, "/metrics", None);
        // counterhal stat's lines come first (it ends first), then perf's.
        let counted = aggregates(&stderr(&run));
        let ours = &counted[..expected.len()];
        let perfs = &counted[expected.len()..];
        let total: f64 = ours.iter().map(|(_, v)| v).sum();
        assert!(
            total >= CALLS,
            "{option}: stat counted {total} of {CALLS} calls"
        );
        for (labels, now) in samples(&after, "counterhal_event_total", EVENT) {
            let id = id(&labels);
            let then = series
                .iter()
                .find(|(l, _)| *l == labels)
                .map_or(0.0, |s| s.1);
            let grown = now - then;
            let stat = ours.iter().find(|(i, _)| *i == id).map_or(0.0, |c| c.1);
            assert!(
                grown >= stat && grown - stat <= 0.02 * stat.max(100.0),
                "{option} {id}: the exporter's series grew by {grown}, stat counted {stat}"
            );
            if let Some((_, perf)) = perfs.iter().find(|(i, _)| *i == id) {
                assert!(
                    *perf >= stat && perf - stat <= 0.02 * stat.max(100.0),
                    "{option} {id}: perf counted {perf}, stat {stat}"
                );
            }
        }
    }
}

/// Prometheus scraping the exporter three ways, per CPU, `--per-socket` and `--per-die`:
/// PromQL's `sum by (socket)` of the per-CPU series equals the per-socket series (and `sum by
/// (socket, die)` the per-die ones), after getpgid(2) calls that each counted.
///
/// Oracle: Prometheus 2.42 and 3.5 (each one's scraper and PromQL's `sum by`), over the
/// per-CPU series as the exporter wrote them before the option (each CPU's perf event).
#[test]
fn prometheus_sums_per_cpu_series_by_socket_to_the_per_socket_series() {
    every_cpu_or_skip!();
    let exporters = [
        ("cpu", Exporter::start(&["-e", PROMETHEUS_EVENT])),
        (
            "socket",
            Exporter::start(&["-e", PROMETHEUS_EVENT, "--per-socket"]),
        ),
        (
            "die",
            Exporter::start(&["-e", PROMETHEUS_EVENT, "--per-die"]),
        ),
    ];
    let Ok(calls) = Command::new("python3")
        .args(["-c", PROMETHEUS_CALLER])
        .status()
    else {
        skip!(
            Need::Tools,
            "python3 (Debian's python3) is not installed to make the getpgid(2) calls"
        );
    };
    assert!(calls.success());
    for release in Release::ALL {
        eprintln!("== {}", release.name());
        sums_by_socket(release, &exporters);
    }
}

/// The body of the test above for `release`.
fn sums_by_socket(release: Release, exporters: &[(&str, Exporter); 3]) {
    tool_or_skip!(release, "prometheus");
    let jobs: String = exporters
        .iter()
        .map(|(job, e)| {
            format!(
                "  - job_name: {job}\n    static_configs:\n      - targets: ['{}']\n",
                e.address
            )
        })
        .collect();
    let prometheus = Prometheus::start_with(release, "sockets", &jobs, "");
    'each: for (by, job) in [("socket", "socket"), ("socket, die", "die")] {
        let query = |job: &str| {
            format!(
                "sum by ({by}) (counterhal_event_total{{job=\"{job}\",event=\"{PROMETHEUS_EVENT}\"}})"
            )
        };
        let (per_cpu, summed) = (query("cpu"), query(job));
        let started = Instant::now();
        let (mut cpus, mut sums) = (Vec::new(), Vec::new());
        while started.elapsed() < Duration::from_secs(60) {
            // The calls are made: the counts no longer move but for stray calls elsewhere.
            (cpus, sums) = (prometheus.query(&per_cpu), prometheus.query(&summed));
            let agree = !cpus.is_empty()
                && cpus.len() == sums.len()
                && cpus.iter().all(|(labels, v)| {
                    sums.iter()
                        .any(|(l, s)| l == labels && (v - s).abs() <= 0.02 * v.max(*s))
                });
            if agree && cpus.iter().map(|(_, v)| v).sum::<f64>() >= CALLS {
                continue 'each;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!(
            "{per_cpu} = {cpus:?}, {summed} = {sums:?}: never within 2% of each other in \
             60 s; {}",
            prometheus.health()
        );
    }
}
