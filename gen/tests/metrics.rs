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

/// Oracle: perf 7.2's Granite Rapids JSON (linux-source-7.2 7.2.13-1, Debian:
/// tools/perf/pmu-events/arch/x86/graniterapids/frontend.json), whose events carry
/// `RetirementLatencyMean` beside `RetirementLatencyMin` and `Max` (as a number; perfmon's
/// converter has written it as a string too). The directory's events with a mean become the
/// table's `[retire_latency]`, which the events' reader loads; the Atom cores' entries and
/// events without one are left out.
#[test]
fn perfs_retirement_latency_means_become_the_tables() {
    let dir = std::env::temp_dir().join(format!("counterhal-gen-rl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("graniterapids")).unwrap();
    std::fs::write(
        dir.join("graniterapids/frontend.json"),
        r#"[
  {"EventName": "FRONTEND_RETIRED.L2_MISS", "EventCode": "0xc6", "UMask": "0x3",
   "RetirementLatencyMax": 5068, "RetirementLatencyMean": 137.41, "RetirementLatencyMin": 0},
  {"EventName": "FRONTEND_RETIRED.MS_FLOWS", "RetirementLatencyMean": "77.14"},
  {"EventName": "FRONTEND_RETIRED.ATOM", "Unit": "cpu_atom", "RetirementLatencyMean": 9},
  {"EventName": "INST_RETIRED.ANY", "EventCode": "0xc0"},
  {"MetricName": "l2_miss_cost",
   "MetricExpr": "FRONTEND_RETIRED.L2_MISS * FRONTEND_RETIRED.L2_MISS:R / cycles"}
]"#,
    )
    .unwrap();
    let perf = counterhal_gen::perf_metrics::read_dir(&dir, "graniterapids", None).unwrap();
    assert_eq!(
        perf.retire_latency,
        [
            ("FRONTEND_RETIRED.L2_MISS".to_string(), 137.41),
            ("FRONTEND_RETIRED.MS_FLOWS".to_string(), 77.14)
        ]
    );
    let mut tables = metrics::perfmon(&data("perfmon"), COMMIT).unwrap();
    tables[0].model = "gnr".to_string();
    perf_tables::merge_all(
        &mut tables,
        &dir,
        "linux-source-7.2 7.2.13-1 (Debian)",
        None,
    )
    .unwrap();
    let text = metrics_toml(&tables[0]);
    assert!(
        text.contains(
            "\n[retire_latency]\n\"FRONTEND_RETIRED.L2_MISS\" = 137.41\n\
             \"FRONTEND_RETIRED.MS_FLOWS\" = 77.14\n"
        ),
        "{text}"
    );
    let table = counterhal_events::parse_metrics("fixture", &text).unwrap();
    assert_eq!(table.retire_latency["FRONTEND_RETIRED.L2_MISS"], 137.41);
    assert_eq!(table.retire_latency.len(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}
