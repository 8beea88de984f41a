//! `perf list`'s own layouts, for scripts written against perf (perf 7.2's
//! tools/perf/tests/shell/stat_all_*.sh and list.sh): `--raw-dump [WHAT]`, the names alone,
//! each followed by a space (no newline, as perf's); and `-j`, perf 7.2's JSON array (builtin-list.c's
//! `json_print_event` and `json_print_metric` keys: `Unit`, `Topic`, `EventName`,
//! `EventAlias`, `ScaleUnit`, `EventType`, `BriefDescription`, `Encoding`; `MetricGroup`,
//! `MetricName`, `MetricExpr`, `MetricThreshold`, `ScaleUnit`, `Unit`).

use counterhal::metrics::MetricDef;
use counterhal_events::UncoreEvent;
use counterhal_events::listing::{Listed, Section};
use serde_json::json;

/// What `--raw-dump WHAT` names, as perf's `cmd_list` reads its words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dump {
    /// No word: every event's name, then the metric groups and the metrics.
    #[default]
    Everything,
    /// `hw`, `hardware`.
    Hardware,
    /// `sw`, `software`.
    Software,
    /// `cache`, `hwcache`.
    Cache,
    /// `tracepoint`.
    Tracepoint,
    /// `pmu`: the events of PMUs (sysfs aliases, tool events, the CPU model's events and
    /// the uncore PMUs' where they count here).
    Pmu,
    /// `metric`, `metrics`.
    Metrics,
    /// `metricgroup`, `metricgroups`.
    MetricGroups,
}

impl Dump {
    /// The selection perf's word names; `None` for any other word (a pattern).
    pub fn of(word: Option<&str>) -> Option<Dump> {
        Some(match word {
            None => Dump::Everything,
            Some("hw" | "hardware") => Dump::Hardware,
            Some("sw" | "software") => Dump::Software,
            Some("cache" | "hwcache") => Dump::Cache,
            Some("tracepoint") => Dump::Tracepoint,
            Some("pmu") => Dump::Pmu,
            Some("metric" | "metrics") => Dump::Metrics,
            Some("metricgroup" | "metricgroups") => Dump::MetricGroups,
            Some(_) => return None,
        })
    }
}

/// One event as perf's list callbacks see it.
#[derive(Debug, Default)]
pub struct PerfEvent {
    /// The PMU (`Unit`): `msr`, `tracepoint`, `software`, `tool`, `cpu`, an uncore PMU.
    unit: Option<String>,
    /// The topic perf prints it under (`software`, `tool`, a JSON topic).
    topic: Option<&'static str>,
    name: String,
    alias: Option<String>,
    scale_unit: Option<String>,
    /// perf's `event_type_desc`.
    event_type: &'static str,
    description: Option<String>,
    encoding: Option<String>,
    /// Which `--raw-dump` word lists it (besides none).
    kind: Dump,
    /// Whether it counts here (a CPU model's or uncore event is in `pmu` only then, as perf
    /// lists the JSON events of the PMUs it finds).
    here: bool,
}

/// The events listed, in perf's terms: `entries` (the backend's and the database's),
/// `extra` (the tool events and breakpoints: section, name, description) and `uncore`.
pub fn events(
    entries: &[Listed],
    extra: &[(&str, &str, &str)],
    uncore: &[(&str, bool, Vec<UncoreEvent>)],
) -> Vec<PerfEvent> {
    let mut events: Vec<PerfEvent> = entries
        .iter()
        .filter(|e| e.section != Section::Deprecated)
        .map(|e| {
            let description = (!e.description.is_empty()).then(|| e.description.clone());
            let base = PerfEvent {
                name: e.name.clone(),
                alias: (e.section != Section::Software)
                    .then(|| e.aliases.first().cloned())
                    .flatten(),
                description,
                encoding: e.encoding.clone(),
                here: e.usable,
                ..PerfEvent::default()
            };
            let (unit, topic, event_type, kind) = match e.section {
                Section::Hardware => (None, None, "Hardware event", Dump::Hardware),
                Section::Cache => (None, None, "Hardware cache event", Dump::Cache),
                Section::Software => (
                    Some("software".to_string()),
                    Some("software"),
                    "Kernel PMU event",
                    Dump::Software,
                ),
                Section::Backend if e.name.contains('/') => (
                    e.name.split('/').next().map(str::to_string),
                    None,
                    "Kernel PMU event",
                    Dump::Pmu,
                ),
                Section::Backend if e.name.contains(':') => (
                    Some("tracepoint".to_string()),
                    None,
                    "Tracepoint event",
                    Dump::Tracepoint,
                ),
                Section::Native => (Some("cpu".to_string()), None, "Kernel PMU event", Dump::Pmu),
                // Presets and the backend's other names: listed with no perf word.
                _ => (None, None, "Kernel PMU event", Dump::Everything),
            };
            PerfEvent {
                unit,
                topic,
                event_type,
                kind,
                ..base
            }
        })
        .collect();
    // perf 7.2 lists a software event's other names as events of their own (`cs`, `faults`).
    let aliases: Vec<PerfEvent> = entries
        .iter()
        .filter(|e| e.section == Section::Software)
        .flat_map(|e| {
            e.aliases.iter().map(|alias| PerfEvent {
                unit: Some("software".to_string()),
                topic: Some("software"),
                name: alias.clone(),
                event_type: "Kernel PMU event",
                description: (!e.description.is_empty()).then(|| e.description.clone()),
                encoding: e.encoding.clone(),
                kind: Dump::Software,
                here: e.usable,
                ..PerfEvent::default()
            })
        })
        .collect();
    events.extend(aliases);
    for (section, name, about) in extra {
        events.push(match *section {
            "tool" => PerfEvent {
                unit: Some("tool".to_string()),
                topic: Some("tool"),
                name: name.to_string(),
                event_type: "Kernel PMU event",
                description: Some(about.to_string()),
                kind: Dump::Pmu,
                here: true,
                ..PerfEvent::default()
            },
            _ => PerfEvent {
                name: name.to_string(),
                event_type: "Hardware breakpoint",
                description: Some(about.to_string()),
                ..PerfEvent::default()
            },
        });
    }
    for (pmu, here, listed) in uncore {
        for event in listed {
            events.push(PerfEvent {
                unit: Some(pmu.to_string()),
                name: event.name.to_ascii_lowercase(),
                scale_unit: event.scale.map(|(scale, unit)| format!("{scale}{unit}")),
                event_type: "Kernel PMU event",
                encoding: Some(event.on_pmu(pmu, "")),
                kind: Dump::Pmu,
                here: *here,
                ..PerfEvent::default()
            });
        }
    }
    events
}

/// `--raw-dump WHAT`: each name followed by a space, and no newline, as perf prints them
/// (`default_print_event` and `default_print_metric` with `name_only`); metric groups in
/// perf's (byte) order, each once, each metric once.
pub fn raw_dump(which: Dump, events: &[PerfEvent], metrics: &[&MetricDef]) -> String {
    let mut names: Vec<String> = events
        .iter()
        .filter(|e| match which {
            Dump::Everything => true,
            // perf lists the core PMU's events (legacy and JSON) where it finds one.
            Dump::Pmu | Dump::Hardware | Dump::Cache => e.kind == which && e.here,
            // perf 7.2's `sw` is the software and tool PMUs'.
            Dump::Software => e.kind == which || e.topic == Some("tool"),
            Dump::Metrics | Dump::MetricGroups => false,
            _ => e.kind == which,
        })
        .map(|e| e.name.clone())
        .collect();
    if matches!(which, Dump::Everything | Dump::MetricGroups) {
        let mut groups: Vec<&str> = metrics.iter().flat_map(|m| m.groups.clone()).collect();
        groups.sort_unstable();
        groups.dedup();
        names.extend(groups.into_iter().map(str::to_string));
    }
    if matches!(which, Dump::Everything | Dump::Metrics) {
        let mut seen = std::collections::BTreeSet::new();
        names.extend(
            metrics
                .iter()
                .filter(|m| seen.insert(m.name))
                .map(|m| m.name.to_string()),
        );
    }
    names.iter().map(|name| format!("{name} ")).collect()
}

/// `-j`: perf 7.2's array, one object per event and one per metric, each with perf's keys
/// in perf's order (the keys without a value left out, as perf leaves them).
pub fn json(events: &[PerfEvent], metrics: &[&MetricDef]) -> String {
    type Object = Vec<(&'static str, Option<String>)>;
    let mut objects: Vec<Object> = events
        .iter()
        .map(|e| {
            vec![
                ("Unit", e.unit.clone()),
                ("Topic", e.topic.map(str::to_string)),
                ("EventName", Some(e.name.clone())),
                ("EventAlias", e.alias.clone()),
                ("ScaleUnit", e.scale_unit.clone()),
                ("EventType", Some(e.event_type.to_string())),
                ("BriefDescription", e.description.clone()),
                ("Encoding", e.encoding.clone()),
            ]
        })
        .collect();
    objects.extend(metrics.iter().map(|m| {
        let scale_unit = match (m.scale, m.unit) {
            (_, "") => None,
            (scale, unit) => Some(format!("{scale}{unit}")),
        };
        vec![
            (
                "MetricGroup",
                (!m.groups.is_empty()).then(|| m.groups.join(";")),
            ),
            ("MetricName", Some(m.name.to_string())),
            ("MetricExpr", Some(m.expression().into_owned())),
            ("MetricThreshold", m.threshold().map(ToString::to_string)),
            ("ScaleUnit", scale_unit),
            ("Unit", Some("cpu".to_string())),
        ]
    }));
    // Written as perf writes it: a tab before each key, in perf's order.
    let written: Vec<String> = objects
        .iter()
        .map(|object| {
            let fields: Vec<String> = object
                .iter()
                .filter_map(|(key, value)| Some(format!("\t\"{key}\": {}", json!(value.as_ref()?))))
                .collect();
            format!("{{\n{}\n}}", fields.join(",\n"))
        })
        .collect();
    match written.is_empty() {
        true => "[\n]\n".to_string(),
        false => format!("[\n{}\n]\n", written.join(",\n")),
    }
}
