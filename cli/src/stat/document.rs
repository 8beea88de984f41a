//! `--json`: one JSON document for the whole run, counterhal's own (perf's lines are `-j`):
//! the command, its exit status, its elapsed, user and system times, the number of runs, the
//! note, and per event its reading (value, times enabled and running, the estimate), its
//! spread and metric, or the reason it is not supported; the `-M` metrics (null where an
//! event they read did not count); with `-I` each interval's events,
//! with `-A` or `--per-thread` each place's.

use serde_json::{Value, json};

use super::arguments::StatArgs;
use super::metrics::metric;
use super::named_metrics::{MetricDef, evaluate};
use super::summary::{EventSummary, Summary};

/// The document, on one line.
pub fn json(out: &mut String, args: &StatArgs, summary: &Summary, chosen: &[&'static MetricDef]) {
    let whole = summary
        .events
        .iter()
        .enumerate()
        .map(|(i, entry)| event(entry, &summary.events, i, summary.end.elapsed_ns))
        .collect::<Vec<Value>>();
    let split: Vec<Value> = summary
        .sections
        .iter()
        .flat_map(|section| {
            section.places.iter().map(move |place| {
                let events: Vec<Value> = place
                    .events
                    .iter()
                    .enumerate()
                    .map(|(i, entry)| event(entry, &place.events, i, section.length_ns))
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
        .collect();
    let end = &summary.end;
    let mut document = json!({
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
    });
    let split_by = if args.interval_ms.is_some() {
        Some("intervals")
    } else if args.per_place() {
        Some("places")
    } else {
        None
    };
    if let Some(key) = split_by {
        document[key] = Value::Array(split);
    }
    out.push_str(&document.to_string());
    out.push('\n');
}

/// One event: its reading with spread and metric, or why it is not supported.
fn event(entry: &EventSummary, among: &[EventSummary], index: usize, elapsed_ns: u64) -> Value {
    let mut value = reading(entry, among, index, elapsed_ns);
    if let Some(cgroup) = &entry.cgroup {
        value["cgroup"] = json!(cgroup);
    }
    value
}

/// One event's reading, spread and metric, or why it is not supported.
fn reading(entry: &EventSummary, among: &[EventSummary], index: usize, elapsed_ns: u64) -> Value {
    match &entry.reading {
        Ok(reading) => {
            let metric = metric(among, index, elapsed_ns);
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
