//! `--json`: one JSON document for the whole run, counterhal's own (perf's lines are `-j`):
//! the command, its exit status, its elapsed, user and system times, the number of runs, the
//! note, and per event its reading (value, times enabled and running, the estimate), its
//! spread and metric (and, for a PMU event whose alias says so, its scale, unit and value
//! shown), or the reason it is not supported; the `-M` metrics (null where an
//! event they read did not count); with `-I` each interval's events (written as each interval
//! ends, the rest of the document once the run has), with `-A` or `--per-thread` each place's.

use serde_json::{Value, json};

use super::metrics::Beside;
use super::summary::{EventSummary, Summary};
use crate::stat::report::Report;
use counterhal::metrics::{MetricDef, evaluate};

/// The document, on one line.
pub fn json(out: &mut String, report: &Report, summary: &Summary) {
    let mut document = whole_run(report, summary);
    if report.per_place {
        document["places"] = Value::Array(split(summary, &report.metrics));
    }
    out.push_str(&document.to_string());
    out.push('\n');
}

/// One interval of `-I` (a summary of that interval alone) as the document's `intervals`
/// hold it, written as it ends: the document's start before the first object (`written`: how
/// many were written before, counted on), a comma before the others.
pub fn interval(
    out: &mut String,
    interval: &Summary,
    chosen: &[&'static MetricDef],
    written: &mut usize,
) {
    for object in split(interval, chosen) {
        out.push_str(if *written == 0 {
            "{\"intervals\":["
        } else {
            ","
        });
        out.push_str(&object.to_string());
        *written += 1;
    }
}

/// The rest of the document `-I`'s intervals began (`opened`: whether any object was
/// written), once the run has ended: the whole run's fields.
pub fn after_intervals(out: &mut String, report: &Report, whole: &Summary, opened: bool) {
    if !opened {
        out.push_str("{\"intervals\":[");
    }
    let rest = whole_run(report, whole).to_string();
    let fields = rest.strip_prefix('{').unwrap_or(&rest);
    out.push_str("],");
    out.push_str(fields);
    out.push('\n');
}

/// Each section's places (an interval's, or the run's with `-A` and `--per-thread`) as
/// objects of their own.
fn split(summary: &Summary, chosen: &[&'static MetricDef]) -> Vec<Value> {
    summary
        .sections
        .iter()
        .flat_map(|section| {
            section.places.iter().map(move |place| {
                let beside = Beside::new(&place.events);
                let events: Vec<Value> = place
                    .events
                    .iter()
                    .enumerate()
                    .map(|(i, entry)| event(entry, &beside, i, section.length_ns))
                    .collect();
                let metrics: Vec<Value> = chosen
                    .iter()
                    .map(|def| {
                        json!({
                            "name": def.name,
                            "value": evaluate(&summary.system, def, &place.events, section.length_ns),
                            "unit": def.unit,
                        })
                    })
                    .collect();
                let mut object = json!({ "events": events, "metrics": metrics });
                if let Some(at_ns) = section.at_ns {
                    object["time_ns"] = json!(at_ns);
                    object["length_ns"] = json!(section.length_ns);
                }
                if let Some(place) = &place.place {
                    let (key, value) = place.json_field();
                    object[key] = json!(value);
                }
                object
            })
        })
        .collect()
}

/// The whole run's fields.
fn whole_run(report: &Report, summary: &Summary) -> Value {
    let beside = Beside::new(&summary.events);
    let whole = summary
        .events
        .iter()
        .enumerate()
        .map(|(i, entry)| event(entry, &beside, i, summary.end.elapsed_ns))
        .collect::<Vec<Value>>();
    let end = &summary.end;
    json!({
        "command": report.command,
        "exit_status": end.exit_code,
        "elapsed_ns": end.elapsed_ns,
        "elapsed_stddev_percent": summary.elapsed_spread.map(|(_, percent)| percent),
        "user_ns": end.user_ns,
        "sys_ns": end.sys_ns,
        "runs": summary.runs,
        "note": end.note,
        "events": whole,
        "metrics": report.metrics.iter().map(|def| json!({
            "name": def.name,
            "value": evaluate(&summary.system, def, &summary.events, end.elapsed_ns),
            "unit": def.unit,
        })).collect::<Vec<Value>>(),
    })
}

/// One event: its reading with spread and metric, or why it is not supported; where its PMU's
/// alias says how to show it, its `scale`, `unit` and the `shown` value (the estimate times
/// the scale: Joules, MiB).
fn event(entry: &EventSummary, among: &Beside<'_>, index: usize, elapsed_ns: u64) -> Value {
    let mut value = reading(entry, among, index, elapsed_ns);
    if let Some(cgroup) = &entry.cgroup {
        value["cgroup"] = json!(cgroup);
    }
    if let Some(scale) = &entry.scale {
        value["scale"] = json!(scale.scale);
        value["unit"] = json!(scale.name);
        value["shown"] = json!(entry.shown_value().map(|(shown, _)| shown));
    }
    value
}

/// One event's reading, spread and metric, or why it is not supported.
fn reading(entry: &EventSummary, among: &Beside<'_>, index: usize, elapsed_ns: u64) -> Value {
    match &entry.reading {
        Ok(reading) => {
            let metric = among.metric(index, elapsed_ns);
            json!({
                "name": entry.name,
                "backend": entry.backend,
                "value": reading.value,
                "time_enabled": reading.time_enabled,
                "time_running": reading.time_running,
                "scaled": reading.scaled(),
                "supported": true,
                "reason": null,
                "stddev_percent": entry.stddev_percent,
                "metric_value": metric.as_ref().map(|m| m.value),
                "metric_unit": metric.as_ref().map(|m| m.unit.clone()),
            })
        }
        Err(reason) => json!({
            "name": entry.name,
            "backend": entry.backend,
            "value": null,
            "time_enabled": null,
            "time_running": null,
            "scaled": null,
            "supported": false,
            "reason": reason,
        }),
    }
}

#[cfg(all(test, feature = "serve"))]
mod tests {
    use std::fmt::Write as _;

    use counterhal::metrics::{NamedReading, chosen};
    use counterhal_conformance::skip;
    use counterhal_conformance::skip::Need;
    use counterhal_hal::Reading;

    use super::*;
    use crate::stat::report::summary::{PlaceSummary, Section};

    /// One minute, in nanoseconds: the readings' stretch, `stat`'s elapsed time and the rules'
    /// rate window.
    const MINUTE_NS: u64 = 60_000_000_000;
    /// The same minute in seconds (`duration_time`).
    const MINUTE_S: f64 = 60.0;

    /// Three events over one minute, two of them multiplexed (running a third and a half of
    /// the time they were enabled): name, value, seconds enabled, seconds running.
    const READINGS: [(&str, u64, u64, u64); 3] = [
        ("INST_RETIRED.ANY", 3_000_000, 60, 20),
        ("CPU_CLK_UNHALTED.THREAD", 6_000_000, 60, 60),
        ("LONGEST_LAT_CACHE.MISS", 468_750_000, 60, 30),
    ];

    /// The metrics, with their values by the formulas as Intel perfmon writes them
    /// (SPR/metrics/sapphirerapids_metrics.json: `Info_Thread_IPC` is `INST_RETIRED.ANY / (
    /// CPU_CLK_UNHALTED.THREAD )`, `Info_Memory_L3_Cache_Fill_BW` is `64 *
    /// LONGEST_LAT_CACHE.MISS / ( 1000000000 ) / ( ( (duration_time * 1000) / 1000 ) )`), on
    /// the counts perf scales (value x enabled / running: 9e6 instructions, 6e6 cycles,
    /// 937.5e6 misses over 60 s).
    const EXPECTED: [(&str, f64); 2] = [
        ("Info_Thread_IPC", 9e6 / 6e6),
        (
            "Info_Memory_L3_Cache_Fill_BW",
            64.0 * 937.5e6 / 1e9 / MINUTE_S,
        ),
    ];

    fn reading(value: u64, enabled_s: u64, running_s: u64) -> Reading {
        Reading::new(value, enabled_s * 1_000_000_000, running_s * 1_000_000_000)
    }

    /// `stat -M`'s JSON for the readings: each metric's value by name.
    fn stat_values(metrics: &[&'static MetricDef]) -> Vec<(String, f64)> {
        let names: Vec<&str> = metrics.iter().map(|m| m.name).collect();
        let args = crate::stat::arguments::parse(&[
            "--json",
            "--cpu-model",
            "spr",
            "-M",
            &names.join(","),
            "--",
            "true",
        ])
        .unwrap();
        let events: Vec<EventSummary> = READINGS
            .iter()
            .map(|&(name, value, enabled, running)| EventSummary {
                name: name.to_string(),
                backend: "linux".to_string(),
                reading: Ok(reading(value, enabled, running)),
                stddev_percent: None,
                cgroup: None,
                scale: None,
            })
            .collect();
        let section = Section {
            at_ns: None,
            length_ns: MINUTE_NS,
            places: vec![PlaceSummary {
                place: None,
                events: events.clone(),
            }],
        };
        let mut out = String::new();
        let report = Report::of(&args, metrics);
        json(
            &mut out,
            &report,
            &Summary::of_interval(crate::stat::plan::machine_here(), &events, section),
        );
        let document: Value = serde_json::from_str(&out).unwrap();
        document["metrics"]
            .as_array()
            .unwrap_or_else(|| panic!("no metrics in {out}"))
            .iter()
            .map(|m| {
                let value = m["value"].as_f64();
                let name = m["name"].as_str().unwrap_or_default().to_string();
                (name, value.unwrap_or_else(|| panic!("no value: {out}")))
            })
            .collect()
    }

    /// One set of readings, with multiplexing scale, gives each metric the same value through
    /// the library's evaluator (the path of `examples/metrics.rs`, `Chosen::open_metrics` and
    /// the C API's `counterhal_metrics_read`), `counterhal stat -M`'s JSON, and the recording
    /// rules of `counterhal serve --rules` evaluated by Prometheus on the exporter's counters
    /// for the same minute (value, seconds enabled and running per event, each its own group).
    ///
    /// Oracle: the formulas as Intel perfmon writes them (SPR/metrics/
    /// sapphirerapids_metrics.json, [`EXPECTED`]) on perf's scaling of a multiplexed count
    /// (value x enabled / running, tools/perf/util/stat.c), and promtool 2.42's `test rules`
    /// (Prometheus' engine) for the rules.
    #[test]
    fn stat_serve_rules_and_the_library_give_one_value_for_one_set_of_readings() {
        let context = counterhal::Context::new(None, Some("spr")).unwrap();
        let names: Vec<String> = EXPECTED.iter().map(|(n, _)| n.to_string()).collect();
        let metrics = chosen(&names, context.model()).unwrap();
        let library: Vec<NamedReading> = READINGS
            .iter()
            .map(|&(name, v, e, r)| NamedReading::new(name, Some(reading(v, e, r))))
            .collect();
        let stat = stat_values(&metrics);
        for ((metric, (name, expected)), (stat_name, from_stat)) in
            metrics.iter().zip(EXPECTED).zip(&stat)
        {
            assert_eq!((metric.name, stat_name.as_str()), (name, name));
            let value = counterhal::metrics::evaluate(
                &crate::stat::plan::machine_here(),
                metric,
                &library,
                MINUTE_NS,
            )
            .unwrap();
            assert!(
                (value - expected).abs() < 1e-12 * expected,
                "{name}: the library gives {value}, perfmon's formula {expected}"
            );
            assert_eq!(*from_stat, value, "{name}: stat -M against the library");
        }
        let promtool_runs = std::process::Command::new("promtool")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !promtool_runs {
            skip!(
                Need::Tools,
                "Debian's prometheus (promtool) is not installed"
            );
        }
        let names = names.join(",");
        let words = ["--rules", "--rules-window", "1m", "-M", names.as_str()];
        let serve = crate::args::read_for_test::<crate::serve::ServeCommand>(&words);
        let rules = counterhal_serve::rules(&serve.serve, &context).unwrap();
        // The exporter's counters over the minute: from 0 to each reading.
        let mut test = String::from(
            "rule_files: [rules.yml]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    \
             input_series:\n",
        );
        // Each event counted alone (times of its own: its own group), as serve exports it: the
        // count names its event and group, the times the group.
        for (name, value, enabled, running) in READINGS {
            let event = format!("event=\"{name}\",");
            for (series, labels, end) in [
                ("counterhal_event_total", event.as_str(), value),
                ("counterhal_event_enabled_seconds_total", "", enabled),
                ("counterhal_event_running_seconds_total", "", running),
            ] {
                _ = write!(
                    test,
                    "      - series: '{series}{{{labels}group=\"{name}\",cpu=\"0\",pmu=\"cpu\",\
                     instance=\"h\",job=\"counterhal\"}}'\n        values: '0 {end}'\n"
                );
            }
        }
        test.push_str("    promql_expr_test:\n");
        for (metric, (_, value)) in metrics.iter().zip(&stat) {
            let record = format!("counterhal:{}:rate1m", metric.name);
            _ = write!(
                test,
                "      - expr: 'abs({record} - {value:e}) < bool {:e}'\n        eval_time: 1m\n        \
                 exp_samples:\n          - labels: '{{instance=\"h\",job=\"counterhal\"}}'\n            \
                 value: 1\n",
                value * 1e-9
            );
        }
        let dir =
            std::env::temp_dir().join(format!("counterhal-same-value-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("rules.yml"), &rules).unwrap();
        std::fs::write(dir.join("test.yml"), &test).unwrap();
        let out = std::process::Command::new("promtool")
            .args(["test", "rules", "test.yml"])
            .current_dir(&dir)
            .output()
            .unwrap();
        std::fs::remove_dir_all(&dir).ok();
        assert!(
            out.status.success(),
            "promtool test rules: the rules' values differ from the library's ({stat:?}):\n{}{}\n{rules}\n{test}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
