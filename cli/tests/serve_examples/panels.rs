//! The Grafana dashboard on a real Prometheus: every panel's PromQL, as Grafana would send it,
//! evaluated over `counterhal serve` counting a known workload, shows what the panel's title
//! says.
//!
//! Oracles: Prometheus 2.42 and 3.5, the test body run against each (it scrapes the exporter
//! every second, evaluates the recording rules `serve --rules` writes and answers each
//! panel's query through its HTTP API); the
//! busy loop's own time on CPU by the kernel's account (`/proc/PID/schedstat`); the rules
//! file (the events a panel needs, and so whether it can have a value here).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::{Duration, Instant};

use super::dashboard::panels_in;
use super::{read, repository, rules_file, rules_of};
use crate::common::*;
use crate::serve::Exporter;
use crate::serve_prometheus::{LoopClock, Prometheus, unix_now};
use counterhal_conformance::fixtures::TestCgroup;
use counterhal_conformance::fixtures::prometheus::Release;
use counterhal_conformance::prometheus_tool_or_skip as tool_or_skip;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// What one series of a panel must show.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// The busy loop's CPUs: its CPU-seconds per second over the window, by its schedstat.
    LoopShare,
    /// Exactly this (an idle cgroup's rate: 0).
    Exactly(f64),
    /// NaN: a ratio of an idle cgroup's zero rates, a series with no number.
    NoNumber,
    /// A number above 0 (a rate of hardware events, where this host counts them).
    Positive,
    /// A number, 0 or more.
    AtLeastZero,
    /// A share of time, above 0 and at most 1 (1 for an event never multiplexed).
    Share,
    /// Present, whatever its value (a gauge of 1).
    Present,
}

/// A series' key in a panel: its cgroup, else its event, else `host`.
fn key(labels: &str) -> String {
    let labels: serde_json::Value = serde_json::from_str(labels).unwrap_or_default();
    ["cgroup", "event", "group"]
        .iter()
        .find_map(|name| labels[name].as_str().map(str::to_string))
        .unwrap_or_else(|| "host".to_string())
}

/// What the workload is: the busy and idle cgroups' labels, the events that opened and those
/// that did not, and the groups whose times are exported (each by the event leading it).
struct Workload {
    busy: String,
    idle: String,
    opened: BTreeSet<String>,
    failed: BTreeSet<String>,
    groups: BTreeSet<String>,
}

impl Workload {
    /// Whether every one of `events` opened on this host.
    fn counts(&self, events: &[&str]) -> bool {
        events.iter().all(|e| self.opened.contains(*e))
    }

    /// The series the panel titled `title` must show: each one's key and what it must be;
    /// `None` for a title this test has no expectation for.
    fn expected(&self, title: &str) -> Option<BTreeMap<String, Expect>> {
        let host = |expect| BTreeMap::from([("host".to_string(), expect)]);
        let cgroups =
            |busy, idle| BTreeMap::from([(self.busy.clone(), busy), (self.idle.clone(), idle)]);
        let when = |events: &[&str], series: BTreeMap<String, Expect>| {
            if self.counts(events) {
                series
            } else {
                BTreeMap::new()
            }
        };
        let each = |events: &BTreeSet<String>, expect| {
            events.iter().map(|e| (e.clone(), expect)).collect()
        };
        Some(match title {
            "Instructions per cycle" => when(&["instructions", "cycles"], host(Expect::Positive)),
            "CPUs utilized (task-clock of the top-level cgroups)" => host(Expect::LoopShare),
            "Cache misses per second" => when(&["cache-misses"], host(Expect::AtLeastZero)),
            "Cache miss rate" => when(
                &["cache-misses", "cache-references"],
                host(Expect::AtLeastZero),
            ),
            // Neither is asked for here: no uncore_imc event, no energy event.
            "Memory bandwidth (read + write)" | "Power" => BTreeMap::new(),
            "Counters on the PMU (running / enabled)" => each(&self.groups, Expect::Share),
            "Events that do not open" => each(&self.failed, Expect::Present),
            "Instructions per cycle by cgroup" => when(
                &["instructions", "cycles"],
                cgroups(Expect::Positive, Expect::NoNumber),
            ),
            "CPUs utilized by cgroup" => cgroups(Expect::LoopShare, Expect::Exactly(0.0)),
            "Cache misses per second by cgroup" => when(
                &["cache-misses"],
                cgroups(Expect::AtLeastZero, Expect::Exactly(0.0)),
            ),
            // kube_pod_info is not scraped here, so kubernetes-rules.yml's `pod:` series are
            // not recorded (kubernetes-rules.test.yml holds their join); no Slurm job runs.
            "CPUs utilized by pod"
            | "Instructions per cycle by pod"
            | "CPUs utilized by Slurm job"
            // counterhal-totals.yml is not loaded here (counterhal-totals.test.yml and
            // serve_delivery.rs hold it), and the cgroups here are no pod's or job's.
            | "Finished pods (whole counts)"
            | "Finished Slurm jobs (whole counts)" => BTreeMap::new(),
            // The idle cgroup was enabled for no time: no share, no series (not NaN).
            "Counters on the PMU by cgroup (running / enabled)" => {
                BTreeMap::from([(self.busy.clone(), Expect::Share)])
            }
            _ => return None,
        })
    }
}

/// Whether `value` is what `expect` says, the loop's share being `share` with `slack` of
/// tolerance.
fn holds(expect: Expect, value: f64, share: f64, slack: f64) -> bool {
    match expect {
        Expect::LoopShare => (value - share).abs() <= slack,
        Expect::Exactly(x) => value == x,
        Expect::NoNumber => value.is_nan(),
        Expect::Positive => value > 0.0 && value.is_finite(),
        Expect::AtLeastZero => value >= 0.0 && value.is_finite(),
        Expect::Share => value > 0.0 && value <= 1.0 + 1e-9,
        Expect::Present => true,
    }
}

/// `expr` as Grafana sends it for this test's exporter: its variables given values (the
/// host's `instance`, escaped as Grafana escapes a regular expression's value, every cgroup,
/// `$__rate_interval` four scrape intervals, `$__range` the dashboard's default hour),
/// and the rules' series of the window `window`.
fn as_grafana_sends(expr: &str, instance: &str, window: &str) -> String {
    let host = instance.replace('.', r"\\.");
    [
        ("$__rate_interval", "4s"),
        ("$host", host.as_str()),
        ("$cgroup", ".+"),
        ("$namespace", ".+"),
        ("$pod", ".+"),
        ("$slurm_job", ".+"),
        ("$__range", "1h"),
        (":rate1m", &format!(":rate{window}")),
    ]
    .iter()
    .fold(expr.to_string(), |e, (variable, value)| {
        e.replace(variable, value)
    })
}

/// Each panel's query evaluated at `time` beside what it must show: the failures, one line
/// each (none where every panel shows what its title says).
fn check_panels(
    prometheus: &Prometheus,
    panels: &[(String, String)],
    workload: &Workload,
    time: f64,
    share: f64,
    slack: f64,
) -> Vec<String> {
    let mut failures = Vec::new();
    for (title, expr) in panels {
        let Some(expected) = workload.expected(title) else {
            failures.push(format!("panel {title}: no expectation here for it: {expr}"));
            continue;
        };
        let seen: BTreeMap<String, f64> = match prometheus.query_at(expr, Some(time)) {
            Ok(seen) => seen.iter().map(|(l, v)| (key(l), *v)).collect(),
            Err(e) => {
                failures.push(format!("panel {title}: {e}"));
                continue;
            }
        };
        let (seen_keys, expected_keys): (Vec<&String>, Vec<&String>) =
            (seen.keys().collect(), expected.keys().collect());
        if seen_keys != expected_keys {
            failures.push(format!(
                "panel {title}: series {seen_keys:?}, expected {expected_keys:?}: {expr}"
            ));
            continue;
        }
        for (key, expect) in &expected {
            let value = seen[key];
            if !holds(*expect, value, share, slack) {
                failures.push(format!(
                    "panel {title}: {key} is {value}, expected {expect:?} (the loop's share \
                     {share:.3}, within {slack:.3}): {expr}"
                ));
            }
        }
    }
    failures
}

/// Each panel's title and query, as Grafana sends it for the exporter at `instance` with the
/// rules of the window `window`.
fn dashboard_panels(instance: &str, window: &str) -> Vec<(String, String)> {
    let dashboard: serde_json::Value = serde_json::from_str(&read(&repository(
        "examples/prometheus/grafana-dashboard.json",
    )))
    .expect("the dashboard is JSON");
    let mut found = Vec::new();
    panels_in(&dashboard["panels"], &mut found);
    found
        .iter()
        .flat_map(|panel| {
            let title = panel["title"].as_str().unwrap_or_default().to_string();
            panel["targets"]
                .as_array()
                .into_iter()
                .flatten()
                .map(move |t| {
                    let expr = t["expr"].as_str().unwrap_or_default();
                    (title.clone(), as_grafana_sends(expr, instance, window))
                })
        })
        .collect()
}

/// Gives every thread of process `pid` nice -10 (`renice`; the threads it makes later
/// inherit it), where this process may.
fn ahead_of_the_machine(pid: u32) {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return;
    };
    for task in tasks.flatten() {
        Command::new("renice")
            .args(["-n", "-10", "-p"])
            .arg(task.file_name())
            .output()
            .ok();
    }
}

/// The events that opened (those with counters) and those reported as not opening, as
/// Prometheus has them; together they are at least every event the rules `rules_text` read.
fn events_accounted(
    prometheus: &Prometheus,
    rules_text: &str,
) -> (BTreeSet<String>, BTreeSet<String>) {
    // Over the last 10 s, not at the instant: on a busy machine a scrape can outlast the 1 s
    // scrape timeout, and the staleness markers of the scrape that failed hide every series
    // at the instant after it.
    let events = |query: &str| -> BTreeSet<String> {
        let over = format!("count by (event) (last_over_time({query}[10s]))");
        match prometheus.query_at(&over, None) {
            Ok(result) => result.iter().map(|(l, _)| key(l)).collect(),
            Err(e) => panic!("{e}; {}", prometheus.health()),
        }
    };
    // Each event counted: its count, in whichever unit (its times are its group's).
    let opened = events(r#"{__name__=~"counterhal_event(_seconds|_joules)?_total"}"#);
    let failed = events("counterhal_event_open_failed");
    let read_by_rules: BTreeSet<String> = rules_text
        .split("event=\\\"")
        .skip(1)
        .filter_map(|rest| rest.split('\\').next())
        .map(str::to_string)
        .collect();
    assert!(opened.is_disjoint(&failed), "{opened:?} {failed:?}");
    let accounted: BTreeSet<String> = opened.union(&failed).cloned().collect();
    assert!(
        accounted.is_superset(&read_by_rules) && opened.contains("task-clock"),
        "the rules read {read_by_rules:?}; counted {opened:?}, reported {failed:?}; {}",
        prometheus.health()
    );
    (opened, failed)
}

/// Every panel of examples/prometheus/grafana-dashboard.json, its query given Grafana's
/// variables, on Prometheus 2.42 and on 3.5 scraping `serve -M` (the rules file's metrics) every second,
/// with the rules made for a 5 s window: a busy loop in one top-level cgroup and an idle
/// top-level cgroup, both followed. The CPUs utilized panels show the loop's CPUs by its
/// schedstat (the host's, summed over its top-level cgroups, too, where the system-wide
/// task-clock would be the number of CPUs); the idle cgroup is 0, not missing, its ratios
/// of rates have no number, and its share of time on the PMU no series; each event's counters ran all their enabled time (software events
/// are never multiplexed); the events that do not open are the rules' events that have no
/// counters; a panel of events this host cannot count (hardware, uncore, energy) shows
/// nothing. A panel with no expectation here fails the test.
///
/// Oracle: Prometheus 2.42 and 3.5 (the scrapes, the rules, each panel's PromQL through its
/// HTTP API) and the loop's schedstat.
#[test]
fn every_panel_shows_what_its_title_says_of_a_known_workload() {
    linux_or_skip!();
    if !running_as_root() {
        skip!(
            Need::Privilege,
            "making cgroups and counting every CPU takes root"
        );
    }
    let root = match counterhal::cgroups::root(&counterhal::system::System::host()) {
        Ok(root) => root,
        Err(e) => skip!(Need::System, "no cgroup mount to count in: {e}"),
    };
    let mut busy = TestCgroup::new(&root, "panels-busy").expect("make a cgroup");
    let idle = TestCgroup::new(&root, "panels-idle").expect("make a cgroup");
    busy.spin();
    let loop_pid = busy.busy_pids().next().expect("the busy loop");
    // Ahead of whatever else this machine runs, so that it has a CPU nearly to itself.
    Command::new("renice")
        .args(["-n", "-20", "-p", &loop_pid.to_string()])
        .output()
        .ok();
    let clock = LoopClock::start(loop_pid);

    // The exporter as the fleet's files run it (the rules file's -M list), following the two
    // cgroups, and the rules of the same list for a 5 s window; with every event's times, so
    // that the panels of the time on the PMU have series where no PMU event opens (software
    // events have none by default).
    let (made_by, rules_text) = rules_file();
    let metrics = super::after(&made_by, "-M").expect("the rules file's -M");
    let pattern = format!("^counterhal-test-{}-panels-", std::process::id());
    let exporter = Exporter::start(&["-M", metrics, "--cgroups", &pattern, "--times", "always"]);
    // The exporter and Prometheus ahead of the machine's other work too (behind the loop): on
    // a busy machine (load 25-30, two builds beside) a scrape outlasted Prometheus' 1 s
    // timeout, and no 5 s of scrapes came in 60 s.
    ahead_of_the_machine(exporter.pid());
    let window = "5s";
    let rules = rules_of(&["serve", "-M", metrics, "--rules-window", window].map(String::from));
    let cgroup = |t: &TestCgroup| format!("/{}", t.name);
    let known = Known {
        exporter: &exporter,
        clock: &clock,
        busy: cgroup(&busy),
        idle: cgroup(&idle),
        rules: &rules,
        rules_text: &rules_text,
        window,
    };
    for release in Release::ALL {
        eprintln!("== {}", release.name());
        panels_on(release, &known);
    }
}

/// The known workload of the test above: the exporter counting it, the busy loop's clock,
/// the busy and the idle cgroup, the rules for `window` (and the rules file they are made
/// like).
struct Known<'a> {
    exporter: &'a Exporter,
    clock: &'a LoopClock,
    busy: String,
    idle: String,
    rules: &'a str,
    rules_text: &'a str,
    window: &'a str,
}

/// The body of the test above for `release`: its Prometheus scraping the exporter of
/// `known`, evaluating the rules and each panel's query.
fn panels_on(release: Release, known: &Known<'_>) {
    tool_or_skip!(release, "prometheus");
    let began = Instant::now();
    let (exporter, clock, window) = (known.exporter, known.clock, known.window);
    let jobs = format!(
        "  - job_name: panels\n    static_configs:\n      - targets: ['{}']\n",
        exporter.address
    );
    let prometheus = Prometheus::start_with(release, "panels", &jobs, known.rules);
    ahead_of_the_machine(prometheus.pid());

    let panels = dashboard_panels(&exporter.address.to_string(), window);

    // Ready: five seconds of scrapes, and the rule's value of the busy cgroup.
    let ready = format!(
        "count_over_time(up{{job=\"panels\"}}[5s]) >= 4 and on () \
         count(counterhal:CPUs_utilized:rate{window}{{cgroup=\"{}\"}})",
        known.busy
    );
    let start = Instant::now();
    while prometheus.query(&ready).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "Prometheus had no 5 s of scrapes and rules in 60 s: {}",
            prometheus.health()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let ready_after = began.elapsed();

    let (opened, failed) = events_accounted(&prometheus, known.rules_text);
    let over = "count by (group) (last_over_time(counterhal_event_enabled_seconds_total[10s]))";
    let groups: BTreeSet<String> = match prometheus.query_at(over, None) {
        Ok(result) => result.iter().map(|(l, _)| key(l)).collect(),
        Err(e) => panic!("{e}; {}", prometheus.health()),
    };
    assert!(
        opened.iter().any(|e| groups.contains(e)),
        "a group is led by an event that opened: {groups:?} {opened:?}"
    );
    let workload = Workload {
        busy: known.busy.clone(),
        idle: known.idle.clone(),
        opened,
        failed,
        groups,
    };

    // Each second, up to ten tries, the panels evaluated when the rules were last evaluated
    // (the rules' window then ends where the panels' does) beside the loop's share over that
    // window. The loop's share moves with the machine's load: as much as it moved over a
    // second is tolerated more, and a scrape's lag (its counters read up to a scrape's
    // duration after its timestamp) at each end of the window.
    let latest = format!(
        "timestamp(counterhal:CPUs_utilized:rate{window}{{cgroup=\"{}\"}})",
        workload.busy
    );
    let mut tries = Vec::new();
    for _ in 0..10 {
        let seen = |query: &str, time: Option<f64>| {
            prometheus
                .query_at(query, time)
                .ok()
                .and_then(|r| r.first().map(|(_, v)| *v))
        };
        let now = unix_now();
        let at = seen(&latest, None).unwrap_or(now);
        let slowest = seen(
            "max_over_time(scrape_duration_seconds{job=\"panels\"}[6s])",
            Some(at),
        )
        .unwrap_or(0.0);
        let share = clock.share(at - 5.0, at);
        let moved = (share - clock.share(at - 6.0, at - 1.0)).abs();
        let slack = 0.1 * share.max(0.5) + moved + 2.0 * slowest / 5.0 + 0.05;
        let failures = check_panels(&prometheus, &panels, &workload, at, share, slack);
        if failures.is_empty() {
            for (n, failed) in tries.iter().enumerate() {
                eprintln!("try {}:\n{failed}", n + 1);
            }
            eprintln!(
                "{} panels show what their titles say (the loop's share {share:.3}; {} tries; \
                 data and rules after {:.1} s, the panels {:.1} s later)",
                panels.len(),
                tries.len() + 1,
                ready_after.as_secs_f64(),
                began.elapsed().as_secs_f64() - ready_after.as_secs_f64()
            );
            return;
        }
        tries.push(failures.join("\n"));
        std::thread::sleep(Duration::from_secs(1));
    }
    panic!(
        "{}: panels that do not show what their titles say, each try:\n{}\n{}",
        release.name(),
        tries.join("\n--\n"),
        prometheus.health()
    );
}
