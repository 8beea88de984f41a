//! Metrics from the event database: `list --metrics` for a model, and `stat -M` taking a
//! model's metric (its events open; without a PMU they are `<not supported>` and the metric has
//! no value) beside a portable one that counts software events.

use crate::common::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

#[test]
fn list_metrics_shows_the_models_and_the_portable_ones_with_their_groups() {
    let o = counterhal(&["list", "--metrics", "--cpu-model", "skl"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("metrics for CPU model skl ("), "{text}");
    for name in [
        "Retiring",
        "Frontend_Bound",
        "Info_Thread_IPC",
        "CPUs_utilized",
    ] {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(name)),
            "{name}: {text}"
        );
    }
    let groups = text.lines().find(|l| l.starts_with("groups (")).unwrap();
    assert!(
        groups.contains("TopdownL1") && groups.contains("Summary"),
        "{groups}"
    );
    // A formula under its metric, with --details (perf list's option for it).
    let o = counterhal(&["list", "--metrics", "--details", "--cpu-model", "skl"]);
    let text = stdout(&o);
    let at = text
        .lines()
        .position(|l| l.trim_start().starts_with("Retiring "))
        .unwrap();
    assert!(
        text.lines()
            .nth(at + 1)
            .unwrap()
            .contains("UOPS_RETIRED.RETIRE_SLOTS")
    );

    let o = counterhal(&["list", "--metrics", "--json", "--cpu-model", "spr", "ipc"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let document: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(document["model"], "spr");
    let metrics = document["metrics"].as_array().unwrap();
    let ipc = metrics
        .iter()
        .find(|m| m["name"] == "Info_Thread_IPC")
        .expect("spr's IPC");
    assert_eq!(ipc["model"], "spr");
    assert!(
        ipc["expression"]
            .as_str()
            .unwrap()
            .contains("INST_RETIRED.ANY")
    );
    let portable = metrics.iter().find(|m| m["name"] == "IPC").unwrap();
    assert!(portable["model"].is_null());
    for metric in metrics {
        let name = metric["name"].as_str().unwrap().to_ascii_lowercase();
        let groups = metric["groups"].as_array().unwrap();
        assert!(
            name.contains("ipc")
                || groups
                    .iter()
                    .any(|g| g.as_str().unwrap().to_ascii_lowercase().contains("ipc")),
            "the pattern filters: {metric}"
        );
    }
    assert!(
        document["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g == "Summary")
    );
}

#[test]
fn dash_m_takes_a_models_metric_and_prints_it_in_every_layout() {
    linux_or_skip!();
    let args = ["-M", "CPUs_utilized,Info_Thread_IPC", "--cpu-model", "spr"];
    let o = counterhal(&[&["stat", "-x,"][..], &args, &["--", "true"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stderr(&o);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.split(',').nth(2) == Some(name))
            .unwrap_or_else(|| panic!("{name}: {text}"))
            .to_string()
    };
    // The events spr's IPC reads were opened, each a line of its own.
    line("INST_RETIRED.ANY");
    line("CPU_CLK_UNHALTED.THREAD");
    let ipc = line("Info_Thread_IPC");
    assert_eq!(ipc.split(',').count(), 7, "{ipc}");
    let utilized: Vec<String> = line("CPUs_utilized").split(',').map(String::from).collect();
    assert!(utilized[5].parse::<f64>().unwrap() > 0.0, "{utilized:?}");

    let o = counterhal(&[&["stat", "--json"][..], &args, &["--", "true"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    // stat writes its results to stderr, as perf does.
    let document: serde_json::Value = serde_json::from_str(&stderr(&o)).unwrap();
    let names: Vec<&str> = document["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["CPUs_utilized", "Info_Thread_IPC"]);

    let o = counterhal(&[&["stat", "-j"][..], &args, &["--", "true"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let units: Vec<String> = stderr(&o)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v.get("event").is_none())
        .map(|v| v["metric-unit"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(units.len(), 2, "one line per metric");
    assert_eq!(units[0], "CPUs utilized");
}

#[test]
fn an_unknown_metric_names_the_nearest_of_the_model() {
    let o = counterhal(&["stat", "-M", "Retirng", "--cpu-model", "skl", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    let error = stderr(&o);
    assert!(
        error.contains("unknown metric or group `Retirng`"),
        "{error}"
    );
    assert!(error.contains("nearest: Retiring"), "{error}");
    assert!(error.contains("list --metrics"), "{error}");
}

#[test]
fn a_metric_reading_an_event_the_model_lacks_is_refused_naming_both() {
    // The event database holds core events only; this metric reads an uncore one.
    let o = counterhal(&[
        "stat",
        "-M",
        "Info_System_Socket_CLKS",
        "--cpu-model",
        "skl",
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let error = stderr(&o);
    assert!(
        error.contains("metric `Info_System_Socket_CLKS` reads `UNC_CLOCK.SOCKET`"),
        "{error}"
    );
}

/// Oracle: the kernel (arch/x86/events/intel/core.c): the perf-metrics events are the core
/// PMU's, so without one (this project's machines: no `cpu` PMU) they open to `<not
/// supported>` like every hardware event, and the metrics reading them have no value; before,
/// `PERF_METRICS.BACKEND_BOUND` was an unknown event and the command exited 2.
#[test]
fn topdown_level_1_on_sapphire_rapids_runs_to_not_supported_events() {
    linux_or_skip!();
    let has_pmu = std::path::Path::new("/sys/bus/event_source/devices/cpu").exists();
    for group in ["TopdownL1", "TmaL1"] {
        let o = counterhal(&["stat", "-M", group, "--cpu-model", "spr", "--", "true"]);
        let error = stderr(&o);
        assert!(o.status.success(), "{group}: {error}");
        for name in [
            "PERF_METRICS.BACKEND_BOUND",
            "TOPDOWN.SLOTS",
            "Backend_Bound",
        ] {
            assert!(error.contains(name), "{group} {name}: {error}");
        }
        if !has_pmu {
            assert!(
                error
                    .lines()
                    .any(|l| l.contains("<not supported>") && l.contains("PERF_METRICS.RETIRING")),
                "{error}"
            );
        }
    }
}

/// Oracle: Intel perfmon's tables: Emerald Rapids' `Branches` group, which one metric used to
/// refuse whole, runs; Ice Lake server's `Server` group holds uncore metrics (`UNC_*`
/// events), each named as left out while the others run.
#[test]
fn a_group_runs_what_can_run_and_names_the_rest() {
    linux_or_skip!();
    let o = counterhal(&["stat", "-M", "Branches", "--cpu-model", "emr", "--", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = counterhal(&["stat", "-M", "Server", "--cpu-model", "icx", "--", "true"]);
    let error = stderr(&o);
    assert!(o.status.success(), "{error}");
    let left_out: Vec<&str> = error.lines().filter(|l| l.contains("left out")).collect();
    assert!(!left_out.is_empty(), "{error}");
    assert!(left_out.iter().all(|l| l.contains("UNC_")), "{error}");
    // The same metric by its own name is refused with the reason.
    let one = left_out[0].split('`').nth(1).unwrap();
    let o = counterhal(&["stat", "-M", one, "--cpu-model", "icx", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // list --metrics marks it.
    let o = counterhal(&["list", "--metrics", "--json", "--cpu-model", "icx", one]);
    let document: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let marked = document["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == one)
        .unwrap();
    assert!(
        marked["cannot_run"]
            .as_str()
            .is_some_and(|why| why.starts_with("uncore PMU")),
        "{marked}"
    );
}
