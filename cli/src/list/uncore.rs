//! `list`'s uncore events: the CPU model's (the kernel's perf JSON, compiled in), per PMU as
//! perf lists them (names in lower case, deprecated ones left out), each with its terms in
//! perf's PMU syntax and its scale, marked usable where the PMU tree has its PMU.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use counterhal_events::{Database, UncoreEvent};
use counterhal_hal::{ErrorKind, PmuTopology};
use serde_json::{Value, json};

/// The model's uncore events whose name holds `pattern` (any case), deprecated ones left
/// out, by PMU (sorted), each PMU with whether the PMU tree `pmus` (the listing backend's,
/// where it reads sysfs PMUs) has it.
pub fn listed(
    database: &Database,
    model: Option<&str>,
    pmus: Option<&dyn PmuTopology>,
    pattern: &str,
) -> Vec<(&'static str, bool, Vec<UncoreEvent>)> {
    let Some(model) = model else {
        return Vec::new();
    };
    let lower = pattern.to_ascii_lowercase();
    let mut by_pmu: BTreeMap<&'static str, Vec<UncoreEvent>> = BTreeMap::new();
    for event in database.uncore_table(model) {
        if !event.deprecated && event.name.to_ascii_lowercase().contains(&lower) {
            by_pmu.entry(event.pmu).or_default().push(event);
        }
    }
    by_pmu
        .into_iter()
        .map(|(pmu, events)| {
            // The PMU is here where its first event finds a PMU to open on.
            let here = pmus.is_some_and(|pmus| {
                let first = &events[0].name;
                !matches!(
                    pmus.opens(first),
                    Some(Err(e)) if e.kind() == ErrorKind::DeviceMissing
                )
            });
            (pmu, here, events)
        })
        .collect()
}

/// The text: a section per PMU, an event a line (`*` where its PMU is here).
pub fn text(out: &mut String, listed: &[(&str, bool, Vec<UncoreEvent>)]) -> usize {
    let mut count = 0;
    for (pmu, here, events) in listed {
        _ = writeln!(out, "\nuncore PMU {pmu} (the kernel's perf JSON):");
        let mark = if *here { "*" } else { " " };
        for event in events {
            let scale = match event.scale {
                Some((scale, unit)) => format!(" ({scale} {unit})"),
                None => String::new(),
            };
            let name = event.name.to_ascii_lowercase();
            _ = writeln!(out, "  {mark} {name:<40} {}{scale}", event.on_pmu(pmu, ""));
            count += 1;
        }
    }
    count
}

/// The JSON objects, in the shape of `list --json`'s other entries: `section` "uncore",
/// `name` (lower case, as perf lists it), `description` (its PMU as perf's list says it, and
/// its scale), `encoding` (perf's PMU syntax), `usable` (its PMU is here) and `reason`.
pub fn json(listed: &[(&str, bool, Vec<UncoreEvent>)], backend: Option<&str>) -> Vec<Value> {
    listed
        .iter()
        .flat_map(|(pmu, here, events)| {
            events.iter().map(move |event| {
                let description = match event.scale {
                    Some((scale, unit)) => format!("Unit: {pmu} (counts scaled by {scale} {unit})"),
                    None => format!("Unit: {pmu}"),
                };
                let reason = (!here).then(|| format!("its PMU {pmu} is not here"));
                json!({
                    "section": "uncore",
                    "name": event.name.to_ascii_lowercase(),
                    "description": description,
                    "encoding": event.on_pmu(pmu, ""),
                    "backend": backend,
                    "usable": here,
                    "reason": reason,
                    "precise": false,
                    "aliases": [],
                    "fields": null,
                    "libpfm4_note": null,
                    "umasks": [],
                })
            })
        })
        .collect()
}
