//! The shipped alerting rules, examples/prometheus/counterhal-alerts.yml: promtool checks
//! them and runs their unit tests (counterhal-alerts.test.yml), in which every alert fires
//! once and stays quiet once; each has a `for:`, a severity, a summary, a description and a
//! runbook entry in docs/serve.md, and reads only series the exporter exports.
//!
//! Oracles: promtool of Prometheus 2.42 (Debian 12) and of 3.5 (Debian sid, the
//! current-releases lab), each test body run against each (`check rules`, `test rules`);
//! docs/serve.md's table of metrics (the names the exporter exports).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use counterhal_conformance::fixtures::prometheus::Release;
use counterhal_conformance::prometheus_tool_or_skip as tool_or_skip;
use yaml_rust2::{Yaml, YamlLoader};

/// A file of the repository.
fn repository(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// A file's text.
fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The one YAML document of `path`.
fn yaml(path: &Path) -> Yaml {
    let mut documents = YamlLoader::load_from_str(&read(path))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(documents.len(), 1, "{}", path.display());
    documents.remove(0)
}

/// Whether `command` succeeded, and what it said on both outputs.
fn verdict(command: &mut Command) -> (bool, String) {
    let out = command.output().expect("run promtool");
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), said)
}

/// The alerting rules of counterhal-alerts.yml.
fn alerts() -> Vec<Yaml> {
    let rules = yaml(&repository("examples/prometheus/counterhal-alerts.yml"));
    let groups = rules["groups"].as_vec().expect("groups");
    let alerts: Vec<Yaml> = groups
        .iter()
        .flat_map(|group| group["rules"].as_vec().expect("rules").clone())
        .collect();
    assert!(
        alerts.iter().all(|rule| rule["alert"].as_str().is_some()),
        "a rule that is no alert in counterhal-alerts.yml"
    );
    alerts
}

/// The series names a PromQL expression reads: each identifier followed by `{`, `[` or a
/// space and a comparison, outside quotes, braces, brackets and the label lists of `by`,
/// `without`, `on` and `ignoring`, that is no function, aggregation or keyword.
fn series_read(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let chars: Vec<char> = expr.chars().collect();
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        if c == '"' {
            at += 1;
            while at < chars.len() && chars[at] != '"' {
                at += if chars[at] == '\\' { 2 } else { 1 };
            }
            at += 1;
        } else if c == '{' || c == '[' {
            let close = if c == '{' { '}' } else { ']' };
            at += chars[at..].iter().position(|&d| d == close).unwrap_or(0) + 1;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = at;
            while at < chars.len() && (chars[at].is_ascii_alphanumeric() || chars[at] == '_') {
                at += 1;
            }
            let word: String = chars[start..at].iter().collect();
            let next = chars[at..].iter().copied().find(|c| *c != ' ');
            let grouping = [
                "by",
                "without",
                "on",
                "ignoring",
                "group_left",
                "group_right",
            ];
            let rest: String = chars[at..].iter().collect();
            let aggregates = ["by", "without"]
                .iter()
                .any(|g| rest.trim_start().starts_with(&format!("{g} (")));
            if aggregates {
                // An aggregation (`sum by (...)`), no series.
            } else if grouping.contains(&&*word) && next == Some('(') {
                // Its list of label names, which names no series.
                at += chars[at..].iter().position(|&d| d == ')').unwrap_or(0) + 1;
            } else if next != Some('(') && !["or", "and", "unless", "by", "on"].contains(&&*word) {
                names.insert(word);
            }
        } else if c.is_ascii_digit() {
            while at < chars.len() && (chars[at].is_ascii_alphanumeric() || chars[at] == '.') {
                at += 1;
            }
        } else {
            at += 1;
        }
    }
    names
}

/// The metric names of docs/serve.md's table of metrics (its first column's words in
/// backquotes), each as the text format writes it (counters with `_total`).
fn documented() -> BTreeSet<String> {
    let docs = read(&repository("docs/serve.md"));
    let mut names = BTreeSet::new();
    for line in docs
        .lines()
        .filter(|l| l.starts_with("| `counterhal_") || l.starts_with("| `process_"))
    {
        let cell = line.split('|').nth(1).unwrap_or_default();
        names.extend(cell.split('`').skip(1).step_by(2).map(str::to_string));
    }
    assert!(names.contains("counterhal_places_unopened"), "{names:?}");
    names
}

/// Each alert has a `for:`, a `severity` of critical, warning or info, a summary and a
/// description, a runbook entry in docs/serve.md's "Alerts" (a line that begins with its name
/// in backquotes), and reads only `up` and `scrape_duration_seconds` (Prometheus' own series
/// of each target) and series that docs/serve.md's table says the exporter exports.
#[test]
fn every_alert_is_complete_and_reads_what_serve_exports() {
    let docs = read(&repository("docs/serve.md"));
    let runbook = docs
        .split_once("\n## Alerts\n")
        .map(|(_, rest)| rest.split("\n## ").next().unwrap_or_default())
        .expect("docs/serve.md has a section \"Alerts\"");
    let mut exported = documented();
    exported.insert("up".to_string());
    exported.insert("scrape_duration_seconds".to_string());
    let alerts = alerts();
    assert!(alerts.len() >= 8, "{} alerts", alerts.len());
    for alert in &alerts {
        let name = alert["alert"].as_str().unwrap_or_default();
        assert!(alert["for"].as_str().is_some(), "{name}: no `for:`");
        let severity = alert["labels"]["severity"].as_str().unwrap_or_default();
        assert!(
            ["critical", "warning", "info"].contains(&severity),
            "{name}: severity {severity:?}"
        );
        for annotation in ["summary", "description"] {
            assert!(
                alert["annotations"][annotation]
                    .as_str()
                    .is_some_and(|text| !text.is_empty()),
                "{name}: no {annotation}"
            );
        }
        assert!(
            runbook.contains(&format!("\n- `{name}`")),
            "{name}: no runbook entry in docs/serve.md's \"Alerts\""
        );
        let expr = alert["expr"].as_str().unwrap_or_default();
        let read = series_read(expr);
        assert!(!read.is_empty(), "{name}: reads no series: {expr}");
        for series in read {
            assert!(
                exported.contains(&series),
                "{name}: {series} is not in docs/serve.md's table of metrics: {expr}"
            );
        }
    }
}

/// The unit tests hold each alert both ways: for each alert an `alert_rule_test` that
/// expects it firing and one that expects it quiet.
#[test]
fn every_alert_has_a_test_that_fires_it_and_one_that_does_not() {
    let tests = yaml(&repository(
        "examples/prometheus/counterhal-alerts.test.yml",
    ));
    let mut fired = BTreeSet::new();
    let mut quiet = BTreeSet::new();
    for test in tests["tests"].as_vec().expect("tests") {
        for check in test["alert_rule_test"].as_vec().into_iter().flatten() {
            let name = check["alertname"].as_str().expect("alertname").to_string();
            match check["exp_alerts"].as_vec().map(Vec::len) {
                Some(0) => quiet.insert(name),
                Some(_) => fired.insert(name),
                None => panic!("{name}: an alert_rule_test without exp_alerts"),
            };
        }
    }
    for alert in alerts() {
        let name = alert["alert"].as_str().unwrap_or_default();
        assert!(fired.contains(name), "no test fires {name}");
        assert!(quiet.contains(name), "no test holds {name} quiet");
    }
}

/// `promtool check rules` takes counterhal-alerts.yml and `promtool test rules` passes
/// counterhal-alerts.test.yml, with the promtool of Prometheus 2.42 (Debian 12's package
/// `prometheus`) and of 3.5 (Debian sid's, in the current-releases lab).
#[test]
fn alerts_pass_promtool() {
    for release in Release::ALL {
        eprintln!("== {}", release.name());
        alerts_pass_promtool_of(release);
    }
}

/// The body of the test above for `release`.
fn alerts_pass_promtool_of(release: Release) {
    tool_or_skip!(release, "promtool");
    let dir = repository("examples/prometheus");
    let count = alerts().len();
    let (ok, said) = verdict(
        release
            .command("promtool")
            .args(["check", "rules", "counterhal-alerts.yml"])
            .current_dir(&dir),
    );
    eprintln!("promtool check rules counterhal-alerts.yml:\n{said}");
    assert!(ok, "{}: {said}", release.name());
    assert!(
        said.contains(&format!("SUCCESS: {count} rules found")),
        "{said}"
    );
    let (ok, said) = verdict(
        release
            .command("promtool")
            .args(["test", "rules", "counterhal-alerts.test.yml"])
            .current_dir(&dir),
    );
    eprintln!("promtool test rules counterhal-alerts.test.yml:\n{said}");
    assert!(ok, "{}: {said}", release.name());
    assert!(said.contains("SUCCESS"), "{said}");
}
