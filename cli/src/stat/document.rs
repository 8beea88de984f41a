//! `--json`: one JSON document for the whole run, counterhal's own (perf's lines are `-j`):
//! the command, its exit status, its elapsed, user and system times, the number of runs, the
//! note, and per event its reading (value, times enabled and running, the estimate), its
//! spread and metric (and, for a PMU event whose alias says so, its scale, unit and value
//! shown), or the reason it is not supported; the `-M` metrics (null where an
//! event they read did not count); with `-I` each interval's events (written as each interval
//! ends, the rest of the document once the run has), with `-A` or `--per-thread` each place's.

use serde_json::{Value, json};

use super::arguments::StatArgs;
use super::metrics::Beside;
use super::summary::{EventSummary, Summary};
use counterhal::metrics::{MetricDef, evaluate};

/// The document, on one line.
pub fn json(out: &mut String, args: &StatArgs, summary: &Summary, chosen: &[&'static MetricDef]) {
    let mut document = whole_run(args, summary, chosen);
    if args.per_place() {
        document["places"] = Value::Array(split(summary, chosen));
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
pub fn after_intervals(
    out: &mut String,
    args: &StatArgs,
    whole: &Summary,
    chosen: &[&'static MetricDef],
    opened: bool,
) {
    if !opened {
        out.push_str("{\"intervals\":[");
    }
    let rest = whole_run(args, whole, chosen).to_string();
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
                            "value": evaluate(def, &place.events, section.length_ns),
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
fn whole_run(args: &StatArgs, summary: &Summary, chosen: &[&'static MetricDef]) -> Value {
    let beside = Beside::new(&summary.events);
    let whole = summary
        .events
        .iter()
        .enumerate()
        .map(|(i, entry)| event(entry, &beside, i, summary.end.elapsed_ns))
        .collect::<Vec<Value>>();
    let end = &summary.end;
    json!({
        "command": args.command_words(),
        "exit_status": end.exit_code,
        "elapsed_ns": end.elapsed_ns,
        "elapsed_stddev_percent": summary.elapsed_spread.map(|(_, percent)| percent),
        "user_ns": end.user_ns,
        "sys_ns": end.sys_ns,
        "runs": summary.runs,
        "note": end.note,
        "events": whole,
        "metrics": chosen.iter().map(|def| json!({
            "name": def.name,
            "value": evaluate(def, &summary.events, end.elapsed_ns),
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
