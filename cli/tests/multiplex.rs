//! `stat` prints the share of time each multiplexed event ran, as perf does, on the backends
//! that multiplex in software: every backend the registry gives a fed model, counted on its
//! device models (`--model`, fed a steady synthetic workload while the command runs) with more
//! events than counters.

use crate::common::*;

/// More copies of the models' counter-limited event (branches, fed by the synthetic work and
/// on no fixed counter) than any model has counters (at most 6).
const COPIES: usize = 8;

/// `counterhal stat --backend BACKEND --model --cpu-model CPU` over `sleep 0.1` (25 turns of
/// 4 ms), with `format` (none: the table), counting `events`; the results (standard error).
fn stat_on_model(backend: &str, cpu: &str, events: &str, format: &[&str]) -> String {
    let mut args = vec![
        "stat",
        "--backend",
        backend,
        "--model",
        "--cpu-model",
        cpu,
        "-e",
        events,
    ];
    args.extend_from_slice(format);
    args.extend_from_slice(&["--", "sleep", "0.1"]);
    let out = counterhal(&args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stderr(&out)
}

fn branches() -> String {
    ["branches"; COPIES].join(",")
}

/// The CPU models every backend with a fed model is counted on: Skylake (architectural v4: 4
/// general counters) and Zen 4 (6).
const CPUS: [&str; 2] = ["skl", "amd64_fam19h_zen4"];

/// (backend, CPU model): every backend the registry gives a fed model on each of [`CPUS`],
/// and the OpenBSD driver's model on its older CPUs too, a P6 (2 counters) and an AMD K8 (4).
fn setups() -> Vec<(&'static str, &'static str)> {
    let mut setups: Vec<(&str, &str)> = counterhal::REGISTRY
        .iter()
        .filter(|r| r.fed_model.is_some())
        .flat_map(|r| CPUS.map(|cpu| (r.name, cpu)))
        .collect();
    assert!(!setups.is_empty(), "no backend has a fed model");
    setups.extend(["p6", "k8"].map(|cpu| ("pctr", cpu)));
    setups
}

fn assert_share(percent: f64, what: &str) {
    assert!(
        percent > 0.0 && percent < 100.0,
        "{what}: {percent}% is not a share of a multiplexed event's time"
    );
}

#[test]
fn the_table_shows_each_multiplexed_event_s_share_and_says_it_is_a_model() {
    for (backend, cpu) in setups() {
        let what = format!("{backend} on {cpu}");
        let text = stat_on_model(backend, cpu, &branches(), &[]);
        let lines: Vec<&str> = text
            .lines()
            .filter(|line| line.contains(" branches "))
            .collect();
        assert_eq!(lines.len(), COPIES, "{what}: {text}");
        for line in lines {
            let share = line
                .trim_end()
                .strip_suffix("%)")
                .and_then(|rest| rest.rsplit_once('('))
                .unwrap_or_else(|| panic!("{what}: no (xx.xx%) in {line}"))
                .1;
            assert_eq!(
                share.split_once('.').map(|(_, d)| d.len()),
                Some(2),
                "{line}"
            );
            assert_share(share.parse().unwrap(), &what);
        }
        assert!(
            text.contains("a device model, not this machine"),
            "{what}: the table does not say the counts are a model's: {text}"
        );
    }
}

#[test]
fn csv_s_fifth_field_is_the_share() {
    for (backend, cpu) in setups() {
        let what = format!("{backend} on {cpu}");
        let text = stat_on_model(backend, cpu, &branches(), &["-x,"]);
        let lines: Vec<&str> = text.lines().filter(|l| l.contains(",branches,")).collect();
        assert_eq!(lines.len(), COPIES, "{what}: {text}");
        for line in lines {
            let fields: Vec<&str> = line.split(',').collect();
            let running: u64 = fields[3].parse().unwrap();
            assert!(running > 0, "{what}: {line}");
            assert_share(fields[4].parse().unwrap(), &what);
        }
    }
}

#[test]
fn json_lines_say_the_share_as_pcnt_running() {
    for (backend, cpu) in setups() {
        let what = format!("{backend} on {cpu}");
        let text = stat_on_model(backend, cpu, &branches(), &["-j"]);
        let mut seen = 0;
        for line in text.lines().filter(|l| l.starts_with('{')) {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(value["event"], "branches", "{what}: {line}");
            assert_share(value["pcnt-running"].as_f64().unwrap(), &what);
            seen += 1;
        }
        assert_eq!(seen, COPIES, "{what}: {text}");
    }
}

#[test]
fn events_that_fit_are_not_marked() {
    // Two events on the P6's two counters run all the time: no share is printed.
    let text = stat_on_model("pctr", "p6", "instructions,branches", &[]);
    for line in text
        .lines()
        .filter(|l| l.contains("instructions") || l.contains("branches"))
    {
        assert!(!line.trim_end().ends_with("%)"), "{line}");
    }
    let text = stat_on_model("pctr", "p6", "instructions,branches", &["-x,"]);
    for line in text.lines().filter(|l| l.contains(',')) {
        assert_eq!(line.split(',').nth(4), Some("100.00"), "{line}");
    }
}

#[test]
fn model_takes_only_a_backend_with_device_models() {
    let out = counterhal(&["stat", "--backend", "linux", "--model", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let with_models: Vec<&str> = counterhal::REGISTRY
        .iter()
        .filter(|r| r.fed_model.is_some())
        .map(|r| r.name)
        .collect();
    let hint = format!("--model takes --backend {}", with_models.join(", "));
    assert!(stderr(&out).contains(&hint), "{}", stderr(&out));
    // Without --backend it is refused by the parser: which model would it be?
    let out = counterhal(&["stat", "--model", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--backend"), "{}", stderr(&out));
}
