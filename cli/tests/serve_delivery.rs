//! A job's count reaches the person who asked for it: a job shorter than a scrape interval,
//! made and removed between two scrapes, is found whole by PromQL's `increase()` where
//! Prometheus ingests OpenMetrics' created timestamps.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::*;
use crate::serve_bpf::{Served, WORK, cgroup_value, make_parent, run_in, sleeping_child};
use crate::serve_examples::{read, repository, yaml_documents};
use crate::serve_prometheus::{Prometheus, unix_now};
use counterhal_conformance::fixtures::prometheus::Release;
use counterhal_conformance::prometheus_tool_or_skip as tool_or_skip;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// Done when: a job of about a second (its cgroup made, a task's page faults, its cgroup
/// removed), between two scrapes 10 s apart, is found whole by `increase()` in Prometheus 3.5
/// with `created-timestamp-zero-ingestion`: its series' created timestamp (OpenMetrics'
/// `_created`, when the exporter began counting the cgroup) is ingested as a 0 sample, so
/// `increase()` over the job's one sample is its count. The same Prometheus without the
/// feature, scraping the same exporter, finds no increase at all (one sample: no rate), which
/// is what every release found before the exporter wrote `_created`. Where Prometheus does not
/// read created timestamps (3.5 without the feature, 2.42), each `_created` line is a series
/// of its own, which the shipped configuration's relabelling drops.
///
/// Oracle: Prometheus 3.5 (Debian sid's, the current-releases lab's) and 2.42 (Debian 12's),
/// their stored samples and PromQL's `increase()`; the job's count as the exporter exported
/// it.
#[test]
fn a_job_shorter_than_a_scrape_is_counted_whole_by_increase() {
    let _alone = crate::common::bpf_alone();
    let root = crate::unified_or_skip!();
    tool_or_skip!(Release::Sid, "prometheus");
    tool_or_skip!(Release::Debian12, "prometheus");
    let parent = make_parent(&root, "serve-created");
    let pattern = format!("^{}/", parent.name);
    let served = Served::start(&["-e", "page-faults", "--cgroups", &pattern])
        .expect("serve counting the cgroups");
    let target = served.address;
    // The shipped job's metric_relabel_configs (examples/prometheus/prometheus.yml), which
    // drop the `_created` series where Prometheus does not read them as created timestamps.
    let Some(shipped) = yaml_documents(&repository("examples/prometheus/prometheus.yml")) else {
        skip!(
            Need::Tools,
            "PyYAML reads the shipped configuration (apt-get install python3-yaml)"
        );
    };
    let relabel = &shipped[0]["scrape_configs"][0]["metric_relabel_configs"];
    assert!(relabel.is_array(), "{shipped:?}");
    let job = |name: &str, relabelled: bool| {
        let mut job = serde_json::json!({
            "job_name": name,
            "scrape_interval": "10s",
            "scrape_timeout": "5s",
            "static_configs": [{ "targets": [target.to_string()] }],
        });
        if relabelled {
            job["metric_relabel_configs"] = relabel.clone();
        }
        format!("  - {job}\n")
    };
    let ingesting = Prometheus::start_with_args(
        Release::Sid,
        "created",
        &job("created", true),
        "",
        &["--enable-feature=created-timestamp-zero-ingestion"],
    );
    let plain = Prometheus::start_with(Release::Sid, "plain", &job("plain", true), "");
    let bare = Prometheus::start_with(Release::Sid, "bare", &job("bare", false), "");
    let older = Prometheus::start_with(Release::Debian12, "older", &job("older", true), "");
    let all = [&ingesting, &plain, &bare, &older];
    // Each has scraped once before the job.
    let waited = std::time::Instant::now();
    while all.iter().any(|p| p.query("up == 1").is_empty()) {
        let health: Vec<String> = all.iter().map(|p| p.health()).collect();
        assert!(waited.elapsed() < Duration::from_secs(30), "{health:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let cgroup = parent.path.join("job");
    run_a_job(&cgroup);
    let label = format!("/{}/job", parent.name);
    let count = cgroup_value(
        &served.scrape(),
        "counterhal_event_total",
        "page-faults",
        &label,
    )
    .expect("the job's count, kept after its cgroup went");
    assert!(count > 100.0, "the job counted {count} page faults");
    let series = format!("counterhal_event_total{{cgroup=\"{label}\",event=\"page-faults\"}}");
    // Each Prometheus has scraped the job's one sample (the next scrape, 10 s at most).
    let stored = |prometheus: &Prometheus| {
        prometheus
            .query(&format!("max_over_time({series}[5m])"))
            .first()
            .map(|(_, value)| *value)
    };
    let waited = std::time::Instant::now();
    while stored(&ingesting).is_none() || stored(&plain).is_none() {
        let health: Vec<String> = all.iter().map(|p| p.health()).collect();
        assert!(waited.elapsed() < Duration::from_secs(30), "{health:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(stored(&ingesting), Some(count));
    assert_eq!(stored(&plain), Some(count));
    // increase() at the sample's own time (no extrapolation past it).
    let at = ingesting
        .query(&format!("timestamp({series})"))
        .first()
        .map_or_else(unix_now, |(_, time)| *time);
    let increase = |prometheus: &Prometheus| {
        prometheus
            .query_at(&format!("increase({series}[5m])"), Some(at))
            .unwrap_or_default()
            .first()
            .map(|(_, value)| *value)
    };
    let (created, without) = (increase(&ingesting), increase(&plain));
    eprintln!(
        "a job of {count} page faults: increase() {created:?} with created timestamps, \
         {without:?} without"
    );
    assert!(
        created.is_some_and(|found| (found - count).abs() <= 0.01 * count),
        "with created timestamps: increase() {created:?} of {count}"
    );
    assert!(
        without.is_none_or(|found| found == 0.0),
        "without: increase() {without:?}"
    );
    // `_created` lines are no series where created timestamps are read, and where the
    // shipped relabelling drops them; elsewhere (the bare job) each counter has one more.
    let created_series = |prometheus: &Prometheus| {
        let found = prometheus.query("count({__name__=~\".+_created\"})");
        found.first().map_or(0.0, |(_, n)| *n)
    };
    for prometheus in [&ingesting, &plain, &older] {
        assert_eq!(created_series(prometheus), 0.0, "{}", prometheus.health());
    }
    let counters = bare.query("count({__name__=~\"counterhal_.+_total\"})");
    let counters = counters.first().map_or(0.0, |(_, n)| *n);
    eprintln!(
        "without created timestamps or the relabelling: {} `_created` series beside {counters} \
         counter series",
        created_series(&bare)
    );
    assert!(
        created_series(&bare) > 0.0 && created_series(&bare) <= counters,
        "{}",
        bare.health()
    );
    drop(parent);
}

/// How long the HA test keeps a removed cgroup after its first scrape (`--departed-for`).
const DEPARTED_FOR: Duration = Duration::from_secs(40);

/// Done when: a finished job's count reaches every Prometheus that comes back in time. A job of
/// about a second ends with no Prometheus scraping; one started 12 s later (down across the
/// job's end, however long: the count waits for a scrape) finds its whole count; a second,
/// started 2 s after the first read it (an HA twin back from a restart, within
/// `--departed-for 40s`), finds it too; a third, started after `--departed-for` has passed,
/// finds no series of it (the count is let go, as the option says).
///
/// Oracle: Prometheus 3.5 (Debian sid's, the current-releases lab's), its stored samples
/// (`max_over_time`); the job's count as the exporter exported it.
#[test]
fn a_finished_job_reaches_each_prometheus_back_within_departed_for() {
    let _alone = crate::common::bpf_alone();
    let root = crate::unified_or_skip!();
    tool_or_skip!(Release::Sid, "prometheus");
    let parent = make_parent(&root, "serve-departed");
    let pattern = format!("^{}/", parent.name);
    let keep = format!("{}s", DEPARTED_FOR.as_secs());
    let served = Served::start(&[
        "-e",
        "page-faults",
        "--cgroups",
        &pattern,
        "--departed-for",
        &keep,
    ])
    .expect("serve counting the cgroups");
    let cgroup = parent.path.join("job");
    run_a_job(&cgroup);
    std::thread::sleep(Duration::from_secs(12));
    let label = format!("/{}/job", parent.name);
    let series = format!("counterhal_event_total{{cgroup=\"{label}\",event=\"page-faults\"}}");
    let target = served.address;
    let start = |name: &str| {
        let job =
            format!("  - job_name: {name}\n    static_configs:\n      - targets: ['{target}']\n");
        Prometheus::start_with(Release::Sid, name, &job, "")
    };
    // The job's count as a Prometheus stored it, once it has scraped twice (30 s at most: a
    // busy machine starts Prometheus slowly).
    let found = |prometheus: &Prometheus| {
        let waited = std::time::Instant::now();
        while prometheus.query("count_over_time(up[1m]) >= 2").is_empty() {
            assert!(
                waited.elapsed() < Duration::from_secs(30),
                "{}",
                prometheus.health()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        prometheus
            .query(&format!("max_over_time({series}[5m])"))
            .first()
            .map(|(_, value)| *value)
    };
    let first = start("first");
    let count = found(&first);
    let first_read = std::time::Instant::now();
    assert!(
        count.is_some_and(|n| n > 100.0),
        "12 s after the job's end, a Prometheus found {count:?}"
    );
    std::thread::sleep(Duration::from_secs(2));
    let twin = start("twin");
    assert_eq!(
        found(&twin),
        count,
        "an HA twin back 2 s after the first read"
    );
    std::thread::sleep(
        (DEPARTED_FOR + Duration::from_secs(3)).saturating_sub(first_read.elapsed()),
    );
    let late = start("late");
    assert_eq!(
        found(&late),
        None,
        "a Prometheus back after --departed-for {keep}"
    );
    eprintln!("a job of {count:?} page faults: found 12 s after its end, and by a twin 2 s later");
    drop(parent);
}

/// Done when: a Slurm job of about a second, between two scrapes 10 s apart, shows in the
/// shipped rules' finished jobs (examples/prometheus/counterhal-totals.yml) and in the
/// dashboard's table of them with its whole count, the count the exporter exported, where
/// the shipped rates (counterhal-rules.yml, the only rules before) give the job no rate, or 0.
/// The job's cgroup is slurmstepd's (`<slice>/slurmstepd.scope/job_4242`, `--slurm-cgroup-slice`
/// naming the test's cgroup as the slice), so its series carry `slurm_job_id`; serve keeps its
/// last counts for `--departed-for` (10m) after a scrape first reads them, with the departed
/// marker (`counterhal_cgroup_departed_timestamp_seconds`), so the job is finished within a
/// minute of its end, not 10 minutes later when its series go (before the marker the rule
/// waited for them: this test then set `--departed-for 15s`). No created timestamps are read
/// (the shipped relabelling drops `_created`): the totals need none.
///
/// Oracle: Prometheus 3.5 (Debian sid's, the current-releases lab's) and 2.42 (Debian 12's)
/// scraping the exporter and evaluating the shipped rules; the job's count as the exporter
/// exported it.
#[test]
fn a_job_shorter_than_a_scrape_is_finished_with_its_whole_count() {
    let _alone = crate::common::bpf_alone();
    let root = crate::unified_or_skip!();
    tool_or_skip!(Release::Sid, "prometheus");
    tool_or_skip!(Release::Debian12, "prometheus");
    let Some(shipped) = yaml_documents(&repository("examples/prometheus/prometheus.yml")) else {
        skip!(
            Need::Tools,
            "PyYAML reads the shipped configuration (apt-get install python3-yaml)"
        );
    };
    let parent = make_parent(&root, "serve-finished");
    let scope = parent.path.join("slurmstepd.scope");
    std::fs::create_dir(&scope).expect("slurmstepd's scope");
    let pattern = format!("^{}/slurmstepd.scope/", parent.name);
    let served = Served::start(&[
        "-e",
        "page-faults",
        "--cgroups",
        &pattern,
        "--slurm-cgroup-slice",
        &parent.name,
    ])
    .expect("serve counting the cgroups");
    let relabel = &shipped[0]["scrape_configs"][0]["metric_relabel_configs"];
    assert!(relabel.is_array(), "{shipped:?}");
    let job = serde_json::json!({
        "job_name": "counterhal",
        "scrape_interval": "10s",
        "scrape_timeout": "5s",
        "static_configs": [{ "targets": [served.address.to_string()] }],
        "metric_relabel_configs": relabel,
    });
    // The shipped rules files, their groups in one list.
    let rates = read(&repository("examples/prometheus/counterhal-rules.yml"));
    let totals = read(&repository("examples/prometheus/counterhal-totals.yml"));
    let (_, groups) = totals.split_once("\ngroups:\n").expect("its groups");
    let rules = format!("{rates}{groups}");
    let all = [Release::Sid, Release::Debian12].map(|release| {
        Prometheus::start_with(release, "finished", &format!("  - {job}\n"), &rules)
    });
    let waited = std::time::Instant::now();
    while all.iter().any(|p| p.query("up == 1").is_empty()) {
        let health: Vec<String> = all.iter().map(|p| p.health()).collect();
        assert!(waited.elapsed() < Duration::from_secs(30), "{health:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let cgroup = scope.join("job_4242");
    run_a_job(&cgroup);
    let label = format!("cgroup=\"/{}/slurmstepd.scope/job_4242\"", parent.name);
    let body = served.scrape();
    let count: f64 = body
        .lines()
        .filter(|l| l.starts_with("counterhal_event_total{") && l.contains(&label))
        .filter(|l| l.contains("event=\"page-faults\"") && l.contains("slurm_job_id=\"4242\""))
        .find_map(|l| l.rsplit_once(' ').and_then(|(_, v)| v.parse().ok()))
        .unwrap_or_else(|| panic!("no count of the job's page faults, kept after its end: {body}"));
    assert!(count > 100.0, "the job counted {count} page faults");

    // The dashboard's table of finished jobs, as Grafana sends it over the last 5 minutes.
    let dashboard: serde_json::Value = serde_json::from_str(&read(&repository(
        "examples/prometheus/grafana-dashboard.json",
    )))
    .expect("the dashboard is JSON");
    let mut panels = Vec::new();
    crate::serve_examples::dashboard::panels_in(&dashboard["panels"], &mut panels);
    let table = panels
        .iter()
        .find(|p| p["title"] == "Finished Slurm jobs (whole counts)")
        .and_then(|p| p["targets"][0]["expr"].as_str())
        .expect("the table of finished Slurm jobs")
        .replace("$host", ".+")
        .replace("$__range", "5m");
    let finished =
        "slurm_job:counterhal_event:finished{slurm_job_id=\"4242\",event=\"page-faults\"}";
    let rate = "counterhal:page_faults_per_second:rate1m{slurm_job_id=\"4242\"}";
    for prometheus in &all {
        let value = |promql: &str| prometheus.query(promql).first().map(|(_, v)| *v);
        let waited = std::time::Instant::now();
        while value(finished).is_none() {
            assert!(
                waited.elapsed() < Duration::from_secs(60),
                "no finished job: {}",
                prometheus.health()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        let samples = value(
            "count_over_time(counterhal_event_total{slurm_job_id=\"4242\",event=\"page-faults\"}[5m])",
        );
        // The old rules' view: the job's rate at its highest while its series lived.
        let old = value(&format!("max_over_time({rate}[5m])"));
        let shown = prometheus
            .query(&table)
            .into_iter()
            .find(|(labels, _)| labels.contains("\"4242\"") && labels.contains("page-faults"))
            .map(|(_, v)| v);
        eprintln!(
            "a job of {count} page faults, {samples:?} samples: finished {:?}, the table {shown:?}, \
             the old rules' rate {old:?}",
            value(finished)
        );
        assert_eq!(value(finished), Some(count), "{}", prometheus.health());
        assert_eq!(shown, Some(count), "{table}");
        assert!(old.is_none_or(|r| r == 0.0), "the old rate {old:?}");
    }
    drop(served);
    std::fs::remove_dir(&scope).ok();
    drop(parent);
}

/// A job of about a second in the cgroup `cgroup`, made for it: a task placed there as
/// a runtime places it ([`WORK`]'s page faults), and the cgroup removed at its end.
fn run_a_job(cgroup: &std::path::Path) {
    std::fs::create_dir(cgroup).expect("the job's cgroup");
    let mut work = Command::new("sh")
        .args(["-c", WORK])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("the job's work");
    let shell = sleeping_child(work.id(), true);
    run_in(cgroup, shell, work.stdin.take().expect("its input"));
    assert!(work.wait().expect("the work ends").success());
    let removed = std::time::Instant::now();
    while std::fs::remove_dir(cgroup).is_err() && removed.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!cgroup.exists(), "the job's cgroup was not removed");
}
