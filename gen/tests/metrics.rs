//! The metrics generator on small fixtures of our own (tests/data/perfmon/TST/metrics and
//! tests/data/kernel): the same snapshot gives the same bytes, whatever the order of its
//! entries; the output is exactly the expected file, holds no description sentence, and loads
//! in the event database's metrics loader.

use std::path::{Path, PathBuf};

use counterhal_gen::metrics::{self, metrics_toml};
use counterhal_gen::perf_tables;
use counterhal_gen::write::GENERATED_MARK;

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

fn data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(path)
}

fn perfmon(root: &Path) -> String {
    let tables = metrics::perfmon(root, COMMIT).unwrap();
    assert_eq!(tables.len(), 1, "one metric file in the fixture");
    metrics_toml(&tables[0])
}

fn kernel(root: &Path) -> String {
    let tables = perf_tables::kernel(root, COMMIT, None).unwrap();
    assert_eq!(tables.len(), 1, "one directory in the fixture");
    metrics_toml(&tables[0])
}

fn check(text: &str, expected: &str, model: &str) {
    let expected = std::fs::read_to_string(data(expected)).unwrap();
    assert_eq!(text, expected);
    assert!(text.starts_with(&format!("# {GENERATED_MARK}")));
    assert!(text.contains(COMMIT));
    assert!(!text.contains("fixture text"), "no description copied");
    let table = counterhal_events::parse_metrics("fixture", text).unwrap();
    assert_eq!(table.model, model);
}

#[test]
fn the_perfmon_fixture_generates_exactly_the_expected_file_twice() {
    let first = perfmon(&data("perfmon"));
    check(&first, "perfmon-metrics-expected.toml", "skl");
    assert_eq!(perfmon(&data("perfmon")), first);
}

#[test]
fn the_kernel_fixture_generates_exactly_the_expected_file_twice() {
    let first = kernel(&data("kernel"));
    check(&first, "kernel-metrics-expected.toml", "amd64_fam19h_zen4");
    // The core event a formula reads by perf's name, as a raw event; none it does not read.
    let table = counterhal_events::parse_metrics("fixture", &first).unwrap();
    assert_eq!(table.events.len(), 1, "{:?}", table.events);
    assert_eq!(table.events["ex_ret_ops"], "rc1");
    assert_eq!(kernel(&data("kernel")), first);
}

#[test]
fn the_order_of_upstream_entries_does_not_change_the_output() {
    let dir = std::env::temp_dir().join(format!("counterhal-gen-metrics-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("TST/metrics")).unwrap();
    let file = "TST/metrics/skylake_metrics.json";
    let text = std::fs::read_to_string(data("perfmon").join(file)).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["Metrics"].as_array_mut().unwrap().reverse();
    std::fs::write(dir.join(file), serde_json::to_string(&json).unwrap()).unwrap();
    assert_eq!(perfmon(&dir), perfmon(&data("perfmon")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_snapshots_say_what_is_wrong() {
    let dir = std::env::temp_dir().join(format!("counterhal-gen-badm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("TST/metrics")).unwrap();
    let file = dir.join("TST/metrics/skylake_metrics.json");
    for (json, needle) in [
        ("{}", "no `Metrics` array"),
        (
            r#"{"Metrics": [{"MetricName": "x"}]}"#,
            "without `MetricName` or `Formula`",
        ),
        (
            r#"{"Metrics": [{"MetricName": "x", "Formula": "a",
                "Constants": [{"Name": "NO_SUCH", "Alias": "a"}]}]}"#,
            "unknown constant `NO_SUCH`",
        ),
        (
            r#"{"Metrics": [{"MetricName": "x", "Formula": "1"},
                            {"MetricName": "x", "Formula": "2"}]}"#,
            "`x` is given twice",
        ),
    ] {
        std::fs::write(&file, json).unwrap();
        let error = metrics::perfmon(&dir, COMMIT).unwrap_err().to_string();
        assert!(error.contains(needle), "{needle}: {error}");
        assert!(error.contains("skylake_metrics.json"), "{error}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
