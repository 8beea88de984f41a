//! perf 7.2's metric names, model by model, taken by `-M`: the oracle is Debian sid's perf
//! 7.2.13 (`linux-perf` 7.2.13-1), in the current-releases lab's root (`scripts/current-lab`
//! makes it under `COUNTERHAL_CURRENT_LAB`, by default /var/cache/counterhal-lab), run from this
//! machine by the root's own loader (no chroot, no root). For each row of perf 7.2's x86
//! mapfile that `tests/data/metrics_perf72.toml` lists (its directory and a `PERF_CPUID` of
//! it), `PERF_CPUID=... perf list --raw-dump metrics` prints the metric names a user of perf
//! 7.2 types on that CPU, perf's default metrics and `lpm_*` among them; every one must be a
//! name `-M` takes for the CPU model the database detects from that signature (the model's
//! metrics and their aliases, and the portable metrics), except at most 2% of them (rounded up
//! to a whole name), each listed in the data file with why. Then `counterhal encode -M` of
//! every name taken opens each metric's events, and an event the model's tables lack (an
//! unknown event, unit mask or modifier) must be listed there too, with why: what this
//! machine lacks (uncore PMUs, the msr PMU's counters) is not the database's and is not
//! counted. A row whose signature detects the model of an earlier row would have no model of
//! its own in the database and is named, not swept (none now: Zen 6's was detected as Zen 5
//! until it had its own table).
//!
//! Before the database read perf 7.2's tables (refused of perf 7.2's names): Skylake 170 of
//! 342, Ice Lake-SP 244 of 453, Sapphire Rapids 252 of 466, Granite Rapids 405 of 464, Alder
//! Lake 423 of 433, Meteor Lake 430 of 439, Lunar Lake 418 of 421, Arrow Lake 424 of 427, Zen 4
//! 67 of 143, Zen 5 81 of 147.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use counterhal_conformance::fixtures::perf_tree::perf_7_2;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use serde_json::Value;

use crate::common::counterhal;

/// The data file: the mapfile's rows, and what is refused or lacking, with why.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Data {
    model: Vec<Row>,
}

/// One row of perf 7.2's mapfile.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    /// perf's directory (`skylakex`).
    dir: String,
    /// A `PERF_CPUID` perf 7.2 takes the directory for.
    cpuid: String,
    /// perf 7.2's names `-M` refuses.
    #[serde(default)]
    refused: Vec<Refused>,
    /// Events the model's tables lack, with the metrics that read them.
    #[serde(default)]
    lacking: Vec<Lacking>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Refused {
    name: String,
    why: String,
}

/// Events the model's tables lack: one event, or every event whose name starts with what
/// comes before a final `*`; the metrics that read it (where given, all that do).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Lacking {
    event: String,
    #[serde(default)]
    metrics: Vec<String>,
    why: String,
}

impl Lacking {
    /// Whether it lists `event` read by `metrics`.
    fn lists(&self, event: &str, metrics: &BTreeSet<String>) -> bool {
        let named = match self.event.strip_suffix('*') {
            Some(prefix) => event.starts_with(prefix),
            None => self.event == event,
        };
        named && (self.metrics.is_empty() || metrics.iter().all(|m| self.metrics.contains(m)))
    }
}

/// `command args...` with `PERF_CPUID` set where given: its standard output.
fn run(command: &[PathBuf], args: &[&str], cpuid: Option<&str>) -> Result<String, String> {
    let mut process = Command::new(&command[0]);
    process.args(&command[1..]).args(args).env("LC_ALL", "C");
    if let Some(cpuid) = cpuid {
        process.env("PERF_CPUID", cpuid);
    }
    let output = process.output().map_err(|e| format!("perf: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "perf {args:?}: {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Whether an error of `encode` for a metric's event is the database's (the model's tables
/// lack the event, a unit mask or a modifier of it) rather than this machine's.
fn is_lacking(error: &str) -> bool {
    error.contains("unknown event `")
        || error.contains("` is unknown (")
        || error.contains("unknown modifier `")
        // An event's own name taken for a PMU's: an event with terms not written ours.
        || error.split("no PMU `").nth(1).is_some_and(|rest| {
            let pmu = rest.split('`').next().unwrap_or_default();
            pmu.contains(|c: char| c.is_ascii_uppercase() || c == '.')
        })
}

/// The events of `model`'s metrics `names` that `encode -M` finds lacking: event -> metrics.
fn lacking(cpuid: &str, names: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let out = counterhal(&[
        "encode",
        "--json",
        "--cpu-model",
        cpuid,
        "-M",
        &names.join(","),
    ]);
    let objects: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{cpuid}: encode -M: {e}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for object in &objects {
        let (Some(error), Some(event), Some(metric)) = (
            object["error"].as_str(),
            object["event"].as_str(),
            object["metric"].as_str(),
        ) else {
            continue;
        };
        if is_lacking(error) {
            found
                .entry(event.to_string())
                .or_default()
                .insert(metric.to_string());
        }
    }
    found
}

/// Oracle: perf 7.2.13 (Debian sid's), `perf list --raw-dump metrics` under each row's
/// `PERF_CPUID`. Every name it prints is taken by `-M` on the model detected from the same
/// signature, but for at most 2% (rounded up to a whole name) of a model's, each listed in
/// tests/data/metrics_perf72.toml with why; every event `encode -M` finds the model's tables
/// lack is listed there with the metrics reading it. Before the event database read perf
/// 7.2's tables, Skylake's refused 170 of 342.
#[test]
fn every_metric_name_perf_7_2_prints_is_taken() {
    let perf = match perf_7_2() {
        Ok(perf) => perf,
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/metrics_perf72.toml");
    let data: Data = toml::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let database = counterhal_events::Database::shipped().unwrap();
    let mut models_seen: Vec<(String, String)> = Vec::new();
    let (mut swept, mut names_total, mut refused_total) = (0, 0, 0);
    let mut faults: Vec<String> = Vec::new();
    let mut stale: Vec<String> = Vec::new();
    for row in &data.model {
        let cpu = counterhal_events::CpuIdentity::from_signature(&row.cpuid)
            .unwrap_or_else(|| panic!("{}: `{}` is no signature", row.dir, row.cpuid));
        let Some(model) = database.detect(&cpu).map(|m| m.id.to_string()) else {
            println!(
                "{}: the database detects no model for {}",
                row.dir, row.cpuid
            );
            continue;
        };
        if let Some((dir, _)) = models_seen.iter().find(|(_, m)| *m == model) {
            println!(
                "{}: {} detects as {model}, {dir}'s model: the database has no model of its own",
                row.dir, row.cpuid
            );
            continue;
        }
        models_seen.push((row.dir.clone(), model.clone()));
        let listed = run(&perf, &["list", "--raw-dump", "metrics"], Some(&row.cpuid))
            .unwrap_or_else(|e| panic!("{}: {e}", row.dir));
        let names: BTreeSet<&str> = listed.split_whitespace().collect();
        assert!(!names.is_empty(), "{}: perf 7.2 lists no metric", row.dir);
        let refused: Vec<&str> = names
            .iter()
            .copied()
            .filter(|name| counterhal::metrics::chosen(&[name.to_string()], Some(&model)).is_err())
            .collect();
        for name in &refused {
            if !row.refused.iter().any(|r| r.name == *name) {
                faults.push(format!(
                    "{} ({model}): `-M {name}` refused, not listed: {}",
                    row.dir,
                    counterhal::metrics::chosen(&[name.to_string()], Some(&model))
                        .err()
                        .map(|e| e.to_string())
                        .unwrap_or_default()
                ));
            }
        }
        for listed in &row.refused {
            assert!(
                !listed.why.trim().is_empty(),
                "{}: {} has no why",
                row.dir,
                listed.name
            );
            if !refused.contains(&listed.name.as_str()) {
                stale.push(format!("{}: `{}` is taken now", row.dir, listed.name));
            }
        }
        let allowed = names.len().div_ceil(50);
        if refused.len() > allowed {
            faults.push(format!(
                "{} ({model}): {} of {} refused, over 2% ({allowed})",
                row.dir,
                refused.len(),
                names.len()
            ));
        }
        let taken: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !refused.contains(n))
            .collect();
        let found = lacking(&row.cpuid, &taken);
        for (event, metrics) in &found {
            match row.lacking.iter().find(|l| l.lists(event, metrics)) {
                Some(listed) => {
                    assert!(
                        !listed.why.trim().is_empty(),
                        "{}: {event}: no why",
                        row.dir
                    );
                }
                None => faults.push(format!(
                    "{} ({model}): lacks `{event}`, read by {metrics:?}: not listed",
                    row.dir
                )),
            }
        }
        for listed in &row.lacking {
            if !found
                .iter()
                .any(|(event, metrics)| listed.lists(event, metrics))
            {
                stale.push(format!("{}: `{}` is found now", row.dir, listed.event));
            }
        }
        println!(
            "{} ({model}, PERF_CPUID={}): {} of perf 7.2's {} metric names refused",
            row.dir,
            row.cpuid,
            refused.len(),
            names.len()
        );
        swept += 1;
        names_total += names.len();
        refused_total += refused.len();
    }
    println!("{swept} models: {refused_total} of perf 7.2's {names_total} metric names refused");
    for line in &stale {
        println!("listed but no longer so (the data file may drop it): {line}");
    }
    assert!(swept >= 40, "only {swept} models swept");
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}
