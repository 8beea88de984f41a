//! The Grafana dashboard, examples/prometheus/grafana-dashboard.json: its queries are PromQL
//! over what the exporter exports and the rules record, per host and per cgroup.
//!
//! Oracles: promtool of Prometheus 2.42 and 3.5 (every query, Grafana's variables given
//! values, as PromQL), each test body run against each release; docs/serve.md's table of metrics (the names and labels the exporter exports); the
//! rules files (the series counterhal-rules.yml, kubernetes-rules.yml and
//! counterhal-totals.yml record, and the
//! `namespace` and `pod` labels the latter joins in).

use std::collections::BTreeSet;
use std::path::Path;

use super::{Scratch, read, recorded, recorded_totals, repository, verdict};
use counterhal_conformance::fixtures::prometheus::Release;
use counterhal_conformance::prometheus_tool_or_skip as tool_or_skip;

/// The metric names and label names of docs/serve.md's table of metrics (the first and third
/// columns' words in backquotes).
fn documented() -> (BTreeSet<String>, BTreeSet<String>) {
    let docs = read(&repository("docs/serve.md"));
    let quoted = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    let mut metrics = BTreeSet::new();
    let mut labels = BTreeSet::new();
    for line in docs.lines().filter(|l| l.starts_with("| `counterhal_")) {
        let cells: Vec<&str> = line.split('|').collect();
        metrics.extend(quoted(cells[1]));
        labels.extend(quoted(cells[3]));
    }
    assert!(
        metrics.contains("counterhal_event_total") && labels.contains("cgroup"),
        "docs/serve.md's table of metrics: {metrics:?} {labels:?}"
    );
    (metrics, labels)
}

/// The metric names and label names a PromQL expression refers to: an identifier before `{`
/// or `[`, or one with a `:` or counterhal's prefix, is a metric; one before `=`, `!=`, `=~`
/// or `!~` in braces, or in the list of `by`, `without`, `on` or `ignoring`, is a label.
fn references(expr: &str) -> (Vec<String>, Vec<String>) {
    let chars: Vec<char> = expr.chars().collect();
    let (mut metrics, mut labels) = (Vec::new(), Vec::new());
    let mut in_braces = false;
    let mut at = 0;
    let next_non_space = |from: usize| chars[from..].iter().copied().find(|c| *c != ' ');
    while at < chars.len() {
        let c = chars[at];
        if c == '"' {
            at += 1;
            while at < chars.len() && chars[at] != '"' {
                at += if chars[at] == '\\' { 2 } else { 1 };
            }
            at += 1;
        } else if c == '[' {
            at += chars[at..].iter().position(|c| *c == ']').unwrap_or(0) + 1;
        } else if c == '{' || c == '}' {
            in_braces = c == '{';
            at += 1;
        } else if c.is_ascii_digit() {
            while at < chars.len() && (chars[at].is_ascii_alphanumeric() || chars[at] == '.') {
                at += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = at;
            while at < chars.len()
                && (chars[at].is_ascii_alphanumeric() || chars[at] == '_' || chars[at] == ':')
            {
                at += 1;
            }
            let word: String = chars[start..at].iter().collect();
            let next = next_non_space(at);
            if in_braces {
                if matches!(next, Some('=' | '!')) {
                    labels.push(word);
                }
            } else if ["by", "without", "on", "ignoring"].contains(&word.as_str())
                && next == Some('(')
            {
                let open = at + chars[at..].iter().position(|c| *c == '(').unwrap();
                let close = open + chars[open..].iter().position(|c| *c == ')').unwrap();
                let list: String = chars[open + 1..close].iter().collect();
                labels.extend(list.split(',').map(|l| l.trim().to_string()));
                at = close + 1;
            } else if matches!(next, Some('{' | '['))
                || word.contains(':')
                || word.starts_with("counterhal")
            {
                metrics.push(word);
            }
        } else {
            at += 1;
        }
    }
    (metrics, labels)
}

/// `promtool check rules` of `release` on a rules file holding each of `exprs` as a
/// recording rule: its verdict and what it said.
fn promtool_checks_promql(release: Release, dir: &Path, exprs: &[String]) -> (bool, String) {
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (n, expr) in exprs.iter().enumerate() {
        rules +=
            &format!("      - record: dashboard:query_{n}\n        expr: |\n          {expr}\n");
    }
    let path = dir.join("dashboard-rules.yml");
    std::fs::write(&path, rules).unwrap();
    verdict(
        release
            .command("promtool")
            .args(["check", "rules"])
            .arg(&path),
    )
}

/// The panels of `list` in order, with those of its rows, the rows left out.
pub(crate) fn panels_in<'a>(list: &'a serde_json::Value, panels: &mut Vec<&'a serde_json::Value>) {
    for panel in list.as_array().into_iter().flatten() {
        if panel["type"] != "row" {
            panels.push(panel);
        }
        panels_in(&panel["panels"], panels);
    }
}

/// The series kubernetes-rules.yml records (`pod:...`).
fn recorded_per_pod() -> BTreeSet<String> {
    read(&repository("examples/prometheus/kubernetes-rules.yml"))
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- record: "))
        .map(str::to_string)
        .collect()
}

/// The dashboard is JSON with the datasource, host, cgroup, namespace, pod and Slurm job
/// variables (the pods' over kubernetes-rules.yml's `pod:` series); every query of its
/// panels and variables, with Grafana's variables given plausible values, is PromQL the
/// promtool of Prometheus 2.42 and of 3.5 accepts, and names only metrics and labels the exporter exports (docs/serve.md) or the
/// rules files record; and its panels show IPC, CPUs utilized, cache misses, memory
/// bandwidth, power and multiplexing, per host and per cgroup, and the finished pods and
/// Slurm jobs with their whole counts.
#[test]
fn queries_are_promql_over_what_serve_exports() {
    let text = read(&repository("examples/prometheus/grafana-dashboard.json"));
    let dashboard: serde_json::Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let schema = dashboard["schemaVersion"].as_u64().unwrap_or(0);
    assert!((36..=41).contains(&schema), "schemaVersion {schema}");
    let variables = dashboard["templating"]["list"]
        .as_array()
        .expect("variables");
    let variable = |name: &str| {
        variables
            .iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("no variable {name}"))
    };
    let source = variable("DS_PROMETHEUS");
    assert_eq!(source["type"], "datasource");
    assert_eq!(source["query"], "prometheus");
    let datasource = serde_json::json!({"type": "prometheus", "uid": "${DS_PROMETHEUS}"});

    // Each query, and where it is.
    let mut queries: Vec<(String, String)> = Vec::new();
    for name in ["host", "cgroup", "namespace", "pod", "slurm_job"] {
        let v = variable(name);
        assert_eq!(v["datasource"], datasource, "variable {name}");
        let definition = v["definition"].as_str().unwrap_or_default();
        assert_eq!(v["query"]["query"], definition, "variable {name}");
        // Grafana's label_values(SELECTOR, LABEL) and query_result(QUERY).
        let query = match definition.strip_prefix("query_result(") {
            Some(rest) => rest.strip_suffix(')'),
            None => definition
                .strip_prefix("label_values(")
                .and_then(|rest| rest.rsplit_once(','))
                .map(|(selector, _)| selector),
        };
        let query = query.unwrap_or_else(|| panic!("variable {name}: {definition}"));
        queries.push((format!("variable {name}"), query.to_string()));
    }
    let mut panels: Vec<&serde_json::Value> = Vec::new();
    panels_in(&dashboard["panels"], &mut panels);
    assert!(panels.len() >= 10, "{} panels", panels.len());
    for panel in &panels {
        let title = panel["title"].as_str().unwrap_or_default().to_string();
        assert_eq!(panel["datasource"], datasource, "panel {title}");
        let targets = panel["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "panel {title}");
        for target in targets {
            assert_eq!(target["datasource"], datasource, "panel {title}");
            let expr = target["expr"].as_str().unwrap_or_default();
            assert!(!expr.is_empty(), "panel {title}");
            queries.push((format!("panel {title}"), expr.to_string()));
        }
    }

    // Names: the exporter's or the rules'.
    let (mut metrics, mut labels) = documented();
    metrics.extend(recorded());
    metrics.extend(recorded_per_pod());
    metrics.extend(recorded_totals());
    // The scrape's labels; kube_pod_info's, which kubernetes-rules.yml joins in; and the
    // Slurm labels issue 69 names for slurmstepd's cgroups.
    labels.extend(
        [
            "instance",
            "job",
            "namespace",
            "pod",
            "slurm_job_id",
            "slurm_step",
        ]
        .map(str::to_string),
    );
    let mut named = BTreeSet::new();
    for (place, expr) in &queries {
        let (metrics_read, labels_read) = references(expr);
        assert!(!metrics_read.is_empty(), "{place}: no metric in {expr}");
        for metric in metrics_read {
            assert!(
                metrics.contains(&metric),
                "{place}: {metric} is neither exported (docs/serve.md) nor recorded \
                 (counterhal-rules.yml, kubernetes-rules.yml, counterhal-totals.yml): {expr}"
            );
            named.insert(metric);
        }
        for label in labels_read {
            assert!(labels.contains(&label), "{place}: no label {label}: {expr}");
        }
    }
    for metric in [
        "pod:counterhal_CPUs_utilized:rate1m",
        "pod:counterhal_IPC:rate1m",
        "counterhal:IPC:rate1m",
        "counterhal:CPUs_utilized:rate1m",
        "counterhal:cache_miss_rate:rate1m",
        "counterhal_event_joules_total",
        "counterhal_event_running_seconds_total",
        "counterhal_event_enabled_seconds_total",
        "pod:counterhal_event:finished",
        "slurm_job:counterhal_event:finished",
    ] {
        assert!(named.contains(metric), "no panel reads {metric}");
    }
    let all = |text: &str| queries.iter().filter(|(_, e)| e.contains(text)).count();
    assert!(
        all("event=\"cache-misses\"") >= 2,
        "cache misses per host and cgroup"
    );
    assert!(all("uncore_imc") >= 1, "memory bandwidth");
    assert!(all("cgroup=\"\"") >= 4, "panels per host (system-wide)");
    assert!(all("cgroup=~\"$cgroup\"") >= 4, "panels per cgroup");
    assert!(all("pod=~\"$pod\"") >= 2, "panels per pod");
    for label in ["slurm_job_id", "slurm_sluid"] {
        assert!(
            all(&format!("{label}=~\"$slurm_job\"")) >= 1,
            "panels per Slurm job, by {label}"
        );
    }
    assert!(
        all("instance=~\"$host\"") >= queries.len() - 1,
        "panels per host"
    );

    // PromQL, as Grafana sends it: its variables given values of the kind they take (a
    // multi-value variable in a regular expression is an alternation of escaped values).
    let values = [
        ("$__rate_interval", "1m"),
        ("$__interval", "15s"),
        ("$__range", "6h"),
        ("$host", r"(host-a\\.example\\.com|host-b\\.example\\.com)"),
        (
            "$cgroup",
            r"(/system\\.slice/nginx\\.service|/kubepods\\.slice/kubepods-pod1\\.slice)",
        ),
        ("$namespace", r"(kube-system|shop)"),
        ("$pod", r"(web-7d4b9c|coredns-5d78c9869d-2xkqp)"),
        ("$slurm_job", r"(4242|sEKNKTV3WPV500)"),
    ];
    let exprs: Vec<String> = queries
        .iter()
        .map(|(place, expr)| {
            let expr = values.iter().fold(expr.clone(), |e, (variable, value)| {
                e.replace(variable, value)
            });
            assert!(
                !expr.contains('$'),
                "{place}: a variable without a value: {expr}"
            );
            expr
        })
        .collect();
    let places: Vec<String> = queries
        .iter()
        .enumerate()
        .map(|(n, (place, _))| format!("dashboard:query_{n}: {place}"))
        .collect();
    for release in Release::ALL {
        eprintln!("== {}", release.name());
        queries_pass_promtool_of(release, &exprs, &places);
    }
}

/// The end of the test above for `release`: its promtool on `exprs`, the queries found at
/// `places`.
fn queries_pass_promtool_of(release: Release, exprs: &[String], places: &[String]) {
    tool_or_skip!(release, "promtool");
    let scratch = Scratch::new(&format!("dashboard-{release:?}"));
    let (ok, said) = promtool_checks_promql(release, &scratch.0, exprs);
    assert!(ok, "{}: {said}\n{}", release.name(), places.join("\n"));
    assert!(
        said.contains(&format!("SUCCESS: {} rules found", exprs.len())),
        "{said}"
    );
}

/// The series of a promtool test: one host's system-wide counters (no cgroup label) and two
/// cgroups' (`/busy`, whose counters were on the PMU half their enabled time, and `/idle`,
/// whose tasks never ran: every counter and time flat at 0), for task-clock and cache-misses,
/// each counted alone (the `group` of its count and times its own name), sampled every 15 s
/// for 5 minutes.
fn idle_and_busy_series() -> String {
    let mut series = String::new();
    for (cgroup, value, enabled, running) in [
        ("", "0+1000x20", "0+15x20", "0+15x20"),
        ("/busy", "0+500x20", "0+15x20", "0+7.5x20"),
        ("/idle", "0+0x20", "0+0x20", "0+0x20"),
    ] {
        let place = match cgroup {
            "" => "cpu=\"0\"".to_string(),
            cgroup => format!("cgroup=\"{cgroup}\""),
        };
        for (event, pmu, family) in [
            ("task-clock", "software", "counterhal_event_seconds_total"),
            ("cache-misses", "cpu", "counterhal_event_total"),
        ] {
            // Each counts alone (its own group), its times labelled with the group alone.
            let group = format!("group=\"{event}\",pmu=\"{pmu}\",{place},instance=\"node-a\"");
            for (name, labels, values) in [
                (family, format!("event=\"{event}\",{group}"), value),
                (
                    "counterhal_event_enabled_seconds_total",
                    group.clone(),
                    enabled,
                ),
                (
                    "counterhal_event_running_seconds_total",
                    group.clone(),
                    running,
                ),
            ] {
                series +=
                    &format!("      - series: '{name}{{{labels}}}'\n        values: '{values}'\n");
            }
        }
    }
    series
}

/// No panel that reads the exported counters shows NaN, for the host or for a cgroup whose
/// tasks did not run (its counters enabled for no time, so every rate 0): a share of 0 s in
/// 0 s is no value, not NaN (Grafana draws NaN as a value); the busy cgroup's share is its
/// running / enabled time. The panels read only through the recorded rules (IPC) are held to
/// what the rules say (docs/serve.md).
///
/// Oracle: the `test rules` of promtool 2.42 and 3.5, evaluating each panel's query
/// (Grafana's variables given values) over the series of a host, a busy and an idle cgroup:
/// a query `q` has a NaN where `q != q` has a sample.
#[test]
fn no_panel_of_the_counters_shows_nan_for_an_idle_cgroup() {
    let text = read(&repository("examples/prometheus/grafana-dashboard.json"));
    let dashboard: serde_json::Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let mut panels: Vec<&serde_json::Value> = Vec::new();
    panels_in(&dashboard["panels"], &mut panels);
    let mut tests = String::new();
    let mut read_counters = 0;
    for panel in &panels {
        let title = panel["title"].as_str().unwrap_or_default();
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap_or_default();
            if !expr.contains("counterhal_event_") || expr.contains("open_failed") {
                continue;
            }
            read_counters += 1;
            let expr = [
                ("$__rate_interval", "1m"),
                ("$host", "node-a"),
                ("$cgroup", ".+"),
            ]
            .iter()
            .fold(expr.to_string(), |e, (variable, value)| {
                e.replace(variable, value)
            });
            tests += &format!(
                "      # {title}\n      - expr: '({expr}) != ({expr})'\n        eval_time: 5m\n        \
                 exp_samples: []\n"
            );
        }
    }
    assert!(
        read_counters >= 5,
        "{read_counters} panels read the counters"
    );
    // The busy cgroup's share: half its enabled time on the PMU.
    let multiplexing = panels
        .iter()
        .find(|p| p["title"] == "Counters on the PMU by cgroup (running / enabled)")
        .and_then(|p| p["targets"][0]["expr"].as_str())
        .expect("the panel of counters on the PMU by cgroup");
    let multiplexing = multiplexing
        .replace("$__rate_interval", "1m")
        .replace("$host", "node-a")
        .replace("$cgroup", ".+");
    tests += &format!(
        "      - expr: '{multiplexing}'\n        eval_time: 5m\n        exp_samples:\n          \
         - labels: '{{cgroup=\"/busy\",instance=\"node-a\"}}'\n            value: 0.5\n"
    );
    let file = format!(
        "rule_files: []\nevaluation_interval: 15s\ntests:\n  - interval: 15s\n    input_series:\n\
         {}    promql_expr_test:\n{tests}",
        idle_and_busy_series()
    );
    let scratch = Scratch::new("dashboard-nan");
    let path = scratch.0.join("nan.test.yml");
    std::fs::write(&path, &file).unwrap();
    for release in Release::ALL {
        eprintln!("== {}", release.name());
        tests_pass_promtool_of(release, &path, &file);
    }
}

/// The end of the test above for `release`: its `promtool test rules` on `path`, whose text
/// is `file`.
fn tests_pass_promtool_of(release: Release, path: &Path, file: &str) {
    tool_or_skip!(release, "promtool");
    let (ok, said) = verdict(
        release
            .command("promtool")
            .args(["test", "rules"])
            .arg(path),
    );
    assert!(
        ok,
        "{}'s promtool test rules: {said}\n{file}",
        release.name()
    );
    assert!(said.contains("SUCCESS"), "{said}");
}

/// The Slurm job panel and its variable show a job whose cgroup slurmstepd names by its SLUID
/// (Slurm 26.05's default: `slurm_sluid`) as they show one named by its ID (`job_<ID>`:
/// `slurm_job_id`): the job's own cgroup, its CPUs utilized recorded by counterhal-rules.yml,
/// and not its steps'; the variable lists the one's ID and the other's SLUID.
///
/// Oracle: the `test rules` of promtool 2.42 and 3.5, loading counterhal-rules.yml, over the
/// series serve writes for slurmstepd's cgroups (src/plugins/cgroup/v2/cgroup_v2.c of Slurm
/// 25.11 and 26.05, docs/serve.md), the panel's and the variable's queries as Grafana sends
/// them.
#[test]
fn slurm_panel_shows_a_job_named_by_its_sluid_as_one_named_by_its_id() {
    let text = read(&repository("examples/prometheus/grafana-dashboard.json"));
    let dashboard: serde_json::Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let mut panels: Vec<&serde_json::Value> = Vec::new();
    panels_in(&dashboard["panels"], &mut panels);
    let panel = panels
        .iter()
        .find(|p| p["title"] == "CPUs utilized by Slurm job")
        .and_then(|p| p["targets"][0]["expr"].as_str())
        .expect("the panel of CPUs utilized by Slurm job");
    let variable = dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == "slurm_job")
        .expect("the slurm_job variable");
    // Grafana takes each result's label value, of either label, as the variable's value.
    assert_eq!(variable["regex"], r#"/slurm_(?:job_id|sluid)="([^"]+)"/"#);
    let query = variable["definition"]
        .as_str()
        .and_then(|d| d.strip_prefix("query_result("))
        .and_then(|d| d.strip_suffix(')'))
        .expect("a query_result variable");
    let as_sent = |expr: &str| {
        [
            ("$host", "node-a"),
            ("$slurm_job", ".+"),
            ("$__range", "5m"),
        ]
        .iter()
        .fold(expr.to_string(), |e, (variable, value)| {
            e.replace(variable, value)
        })
    };
    let scope = "/system.slice/slurmstepd.scope";
    let mut series = String::new();
    // Each cgroup's task-clock, in seconds per 15 s: the jobs' and a step of each.
    for (cgroup, labels, per_interval) in [
        ("job_4242", r#"slurm_job_id="4242""#, "1.5"),
        (
            "job_4242/step_0",
            r#"slurm_job_id="4242",slurm_step="0""#,
            "1.2",
        ),
        ("sEKNKTV3WPV500", r#"slurm_sluid="sEKNKTV3WPV500""#, "3"),
        (
            "sEKNKTV3WPV500/step_batch",
            r#"slurm_sluid="sEKNKTV3WPV500",slurm_step="batch""#,
            "2.4",
        ),
    ] {
        series += &format!(
            "      - series: 'counterhal_event_seconds_total{{event=\"task-clock\",pmu=\"software\",\
             cgroup=\"{scope}/{cgroup}\",{labels},instance=\"node-a\",job=\"counterhal\"}}'\n        \
             values: '0+{per_interval}x20'\n"
        );
    }
    let job = |cgroup: &str, labels: &str, value: &str| {
        format!(
            "          - labels: '{{cgroup=\"{scope}/{cgroup}\",{labels},instance=\"node-a\",\
             job=\"counterhal\"}}'\n            value: {value}\n"
        )
    };
    let file = format!(
        "rule_files:\n  - {}\nevaluation_interval: 15s\ntests:\n  - interval: 15s\n    \
         input_series:\n{series}    promql_expr_test:\n      - expr: 'round({}, 1e-6)'\n        \
         eval_time: 4m\n        exp_samples:\n{}{}      - expr: '{}'\n        eval_time: 4m\n        \
         exp_samples:\n          - labels: '{{slurm_job_id=\"4242\"}}'\n            value: 1\n          \
         - labels: '{{slurm_sluid=\"sEKNKTV3WPV500\"}}'\n            value: 1\n",
        repository("examples/prometheus/counterhal-rules.yml").display(),
        as_sent(panel),
        job("job_4242", r#"slurm_job_id="4242""#, "0.1"),
        job("sEKNKTV3WPV500", r#"slurm_sluid="sEKNKTV3WPV500""#, "0.2"),
        as_sent(query),
    );
    let scratch = Scratch::new("dashboard-slurm");
    let path = scratch.0.join("slurm.test.yml");
    std::fs::write(&path, &file).unwrap();
    for release in Release::ALL {
        eprintln!("== {}", release.name());
        tests_pass_promtool_of(release, &path, &file);
    }
}
