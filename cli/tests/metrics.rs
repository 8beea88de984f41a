//! Metrics from the event database: `list --metrics` for a model, and `stat -M` taking a
//! model's metric beside a portable one that counts software events; a metric whose events
//! cannot count here (no core PMU) is refused naming them, and a group's such metrics are left
//! out and named.

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
    // spr's IPC where its events count; without a core PMU, spr's elapsed time (a tool
    // event), which counts everywhere.
    let (metric, events): (&str, &[&str]) = if has_core_pmu() {
        (
            "Info_Thread_IPC",
            &["INST_RETIRED.ANY", "CPU_CLK_UNHALTED.THREAD"],
        )
    } else {
        ("Info_System_Time", &[])
    };
    let both = format!("CPUs_utilized,{metric}");
    let args = ["-M", both.as_str(), "--cpu-model", "spr"];
    let o = counterhal(&[&["stat", "-x,"][..], &args, &["--", "true"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stderr(&o);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.split(',').nth(2) == Some(name))
            .unwrap_or_else(|| panic!("{name}: {text}"))
            .to_string()
    };
    // The events the model's metric reads were opened, each a line of its own.
    for event in events {
        line(event);
    }
    let value = line(metric);
    assert_eq!(value.split(',').count(), 7, "{value}");
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
    assert_eq!(names, ["CPUs_utilized", metric]);

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
/// PMU's, so with one they open (in a group led by slots) and without one (this project's
/// machines: no `cpu` PMU) `perf_event_open` refuses them (ENOENT), and a group of metrics
/// reading them is refused naming the event and that reason, where it printed `<not
/// supported>` and `<not counted>` and exited 0; before that, `PERF_METRICS.BACKEND_BOUND` was
/// an unknown event and the command exited 2.
#[test]
fn topdown_level_1_on_sapphire_rapids_counts_or_is_refused_naming_its_events() {
    linux_or_skip!();
    for group in ["TopdownL1", "TmaL1"] {
        let o = counterhal(&["stat", "-M", group, "--cpu-model", "spr", "--", "true"]);
        let error = stderr(&o);
        if has_core_pmu() {
            assert!(o.status.success(), "{group}: {error}");
            for name in [
                "PERF_METRICS.BACKEND_BOUND",
                "TOPDOWN.SLOTS",
                "Backend_Bound",
            ] {
                assert!(error.contains(name), "{group} {name}: {error}");
            }
            continue;
        }
        // Refused whole (TopdownL1), or the metrics reading no event run (TmaL1's
        // Info_Thread_Slots_Utilization) and the others are named as left out.
        let refused = error.contains(&format!("no metric of `{group}` can run here"));
        assert_eq!(
            o.status.code(),
            Some(if refused { 1 } else { 0 }),
            "{error}"
        );
        assert!(error.contains("reads `TOPDOWN.SLOTS`"), "{error}");
        assert!(error.contains("event not supported by this PMU"), "{error}");
        assert!(!error.contains("<not"), "{error}");
    }
}

/// Oracle: Intel perfmon's tables: with a core PMU, Emerald Rapids' `Branches` group, which
/// one metric used to refuse whole, runs, and Ice Lake server's `Server` group holds uncore
/// metrics (`UNC_*` events), each named as left out while the others run; without one (the
/// kernel refuses core events, ENOENT), Sapphire Rapids' `Summary` group runs its metric of
/// elapsed time and names each metric reading a core event as left out. An uncore metric
/// named by itself is refused with the reason either way.
#[test]
fn a_group_runs_what_can_run_and_names_the_rest() {
    linux_or_skip!();
    let (whole, mixed, why) = if has_core_pmu() {
        (["Branches", "emr"], ["Server", "icx"], "UNC_")
    } else {
        (
            ["Summary", "spr"],
            ["Summary", "spr"],
            "event not supported by this PMU",
        )
    };
    let stat = |[group, model]: [&str; 2]| {
        counterhal(&["stat", "-M", group, "--cpu-model", model, "--", "true"])
    };
    let o = stat(whole);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = stat(mixed);
    let error = stderr(&o);
    assert!(o.status.success(), "{error}");
    let left_out: Vec<&str> = error.lines().filter(|l| l.contains("left out")).collect();
    assert!(!left_out.is_empty(), "{error}");
    assert!(left_out.iter().all(|l| l.contains(why)), "{error}");
    // An uncore metric by its own name is refused with the reason (its one event, a CHA's).
    let one = "Info_System_Socket_CLKS";
    let o = counterhal(&["stat", "-M", one, "--cpu-model", "icx", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("UNC_CHA_CLOCKTICKS"), "{}", stderr(&o));
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

/// Issue 55, item 17: a metric whose events cannot count here is refused before counting,
/// naming each event by its table's name (the kernel's AMD JSON names the raw event
/// `r100001ea0` `de_no_dispatch_per_slot.backend_stalls`), where it printed `<not
/// supported>`, `<not counted>` and the raw codes and exited 0.
/// Oracle: perf 6.1 counting the same raw event here (`<not supported>`: the kernel refuses
/// it without a core PMU), and the kernel's JSON for the name (events/data/generated/metrics,
/// generated from it).
#[test]
fn a_metric_whose_events_cannot_count_here_is_refused_naming_them() {
    linux_or_skip!();
    perf_or_skip!();
    let perf = perf(&["-x,", "-e", "r100001ea0", "--", "true"]);
    let perf_text = stderr(&perf);
    if !perf_text.contains("<not supported>") {
        skip!(Need::System, "the raw event counts here: {perf_text}");
    }
    let args = [
        "stat",
        "-M",
        "backend_bound",
        "--cpu-model",
        "zen4",
        "--",
        "true",
    ];
    let o = counterhal(&args);
    let error = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{error}");
    assert!(
        error.contains(
            "metric `backend_bound` reads `de_no_dispatch_per_slot.backend_stalls` (r100001ea0)"
        ),
        "{error}"
    );
    assert!(error.contains("event not supported by this PMU"), "{error}");
    assert!(!error.contains("<not"), "{error}");
}
