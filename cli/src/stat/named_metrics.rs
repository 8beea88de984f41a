//! `-M NAME[,NAME]`: metrics by name or group, each an [`expression`](counterhal::events::expression) over
//! perf's generalized events, the duration (`duration_time`, seconds), the CPUs online
//! (`#num_cpus_online`) and other metrics by name. The metrics here are the portable ones
//! (every CPU with perf's generalized events has them); a model's own metrics belong in the
//! event database.

use counterhal::Error;

use super::summary::EventSummary;
use counterhal::events::expression::{self, Expr};

/// A metric: its name, its group, its formula, and how its value prints.
#[derive(Debug)]
pub struct MetricDef {
    /// The name `-M` takes.
    pub name: &'static str,
    /// The group `-M` also takes (all its metrics).
    pub group: &'static str,
    /// The formula.
    pub expression: &'static str,
    /// What the value is multiplied by to print (100 for a share in percent).
    pub scale: f64,
    /// The unit printed after the value.
    pub unit: &'static str,
}

/// The portable metrics, by group.
pub const METRICS: [MetricDef; 10] = [
    MetricDef {
        name: "IPC",
        group: "Summary",
        expression: "instructions / cycles",
        scale: 1.0,
        unit: "insn per cycle",
    },
    MetricDef {
        name: "CPI",
        group: "Summary",
        expression: "cycles / instructions",
        scale: 1.0,
        unit: "cycles per insn",
    },
    MetricDef {
        name: "CPUs_utilized",
        group: "Summary",
        expression: "task\\-clock / (duration_time * 1e9)",
        scale: 1.0,
        unit: "CPUs utilized",
    },
    MetricDef {
        name: "page_faults_per_second",
        group: "Summary",
        expression: "page\\-faults / duration_time",
        scale: 1.0,
        unit: "faults/sec",
    },
    MetricDef {
        name: "branch_miss_rate",
        group: "Branches",
        expression: "branch\\-misses / branches",
        scale: 100.0,
        unit: "% branch misses",
    },
    MetricDef {
        name: "cache_miss_rate",
        group: "Cache",
        expression: "cache\\-misses / cache\\-references",
        scale: 100.0,
        unit: "% cache misses",
    },
    MetricDef {
        name: "frontend_bound",
        group: "TopdownL1",
        expression: "topdown\\-fetch\\-bubbles / topdown\\-total\\-slots",
        scale: 100.0,
        unit: "% frontend bound",
    },
    MetricDef {
        name: "bad_speculation",
        group: "TopdownL1",
        expression: "(topdown\\-slots\\-issued - topdown\\-slots\\-retired + \
                     topdown\\-recovery\\-bubbles) / topdown\\-total\\-slots",
        scale: 100.0,
        unit: "% bad speculation",
    },
    MetricDef {
        name: "retiring",
        group: "TopdownL1",
        expression: "topdown\\-slots\\-retired / topdown\\-total\\-slots",
        scale: 100.0,
        unit: "% retiring",
    },
    MetricDef {
        name: "backend_bound",
        group: "TopdownL1",
        expression: "1 - (frontend_bound + bad_speculation + retiring)",
        scale: 100.0,
        unit: "% backend bound",
    },
];

/// Names an expression may read that are no events.
const CONSTANTS: [&str; 2] = ["duration_time", "#num_cpus_online"];

/// How deep metrics may refer to metrics (a loop in the table stops here).
const DEPTH: usize = 8;

/// The metrics `-M` names (metric or group names, any case), in the table's order.
///
/// # Errors
/// An unknown name, with the known ones.
pub fn chosen(names: &[String]) -> Result<Vec<&'static MetricDef>, Error> {
    let mut out: Vec<&'static MetricDef> = Vec::new();
    for name in names.iter().flat_map(|list| list.split(',')).map(str::trim) {
        let matching: Vec<&'static MetricDef> = METRICS
            .iter()
            .filter(|m| m.name.eq_ignore_ascii_case(name) || m.group.eq_ignore_ascii_case(name))
            .collect();
        if matching.is_empty() {
            let mut known: Vec<&str> = Vec::new();
            for known_name in METRICS.iter().flat_map(|m| [m.name, m.group]) {
                if !known.contains(&known_name) {
                    known.push(known_name);
                }
            }
            return Err(
                Error::invalid_input(format!("unknown metric or group `{name}`"))
                    .with_hint(format!("-M takes {}", known.join(", "))),
            );
        }
        for metric in matching {
            if !out.iter().any(|m| m.name == metric.name) {
                out.push(metric);
            }
        }
    }
    Ok(out)
}

/// A metric's parsed formula (the table's formulas parse: a test says so).
fn formula(metric: &MetricDef) -> Expr {
    expression::parse(metric.expression).unwrap_or(Expr::Name(metric.expression.to_string()))
}

/// The events `metrics` read (through the metrics they name, too), in order, each once.
pub fn events_needed(metrics: &[&MetricDef]) -> Vec<String> {
    let mut events = Vec::new();
    let mut todo: Vec<&MetricDef> = metrics.to_vec();
    let mut next = 0;
    while let Some(&metric) = todo.get(next) {
        next += 1;
        for name in formula(metric).names() {
            match METRICS.iter().find(|m| m.name == name) {
                Some(inner) if todo.len() < METRICS.len() * DEPTH => todo.push(inner),
                Some(_) => {}
                None if CONSTANTS.contains(&name.as_str()) => {}
                None if !events.contains(&name) => events.push(name),
                None => {}
            }
        }
    }
    events
}

/// One metric's value over one place and stretch (`None`: an event it reads did not count).
pub fn evaluate(metric: &MetricDef, events: &[EventSummary], length_ns: u64) -> Option<f64> {
    value(metric, events, length_ns, 0).map(|v| v * metric.scale)
}

fn value(metric: &MetricDef, events: &[EventSummary], length_ns: u64, depth: usize) -> Option<f64> {
    if depth > DEPTH {
        return None;
    }
    let cpus = counterhal::online_cpus().len() as f64;
    let value_of = |name: &str| -> Option<f64> {
        match name {
            "duration_time" => Some(length_ns as f64 / 1e9),
            "#num_cpus_online" => Some(cpus),
            _ => match METRICS.iter().find(|m| m.name == name) {
                Some(inner) => value(inner, events, length_ns, depth + 1),
                None => events
                    .iter()
                    .find(|e| e.name == name || e.name.split(':').next() == Some(name))
                    .and_then(EventSummary::estimate)
                    .map(|v| v as f64),
            },
        }
    };
    formula(metric).evaluate(&value_of)
}

#[cfg(test)]
mod tests {
    use counterhal::hal::Reading;

    use super::*;

    fn events(values: &[(&str, u64)]) -> Vec<EventSummary> {
        values
            .iter()
            .map(|&(name, v)| EventSummary {
                name: name.to_string(),
                backend: "test".to_string(),
                reading: Ok(Reading::new(v, 1, 1)),
                stddev_percent: None,
            })
            .collect()
    }

    fn by_name(name: &str) -> &'static MetricDef {
        METRICS.iter().find(|m| m.name == name).unwrap()
    }

    #[test]
    fn every_formula_parses_and_reads_known_names() {
        for metric in &METRICS {
            let expr = expression::parse(metric.expression)
                .unwrap_or_else(|e| panic!("{}: {e}", metric.name));
            assert!(!expr.names().is_empty(), "{}", metric.name);
        }
    }

    #[test]
    fn names_and_groups_choose_metrics() {
        let top = chosen(&["topdownl1".to_string()]).unwrap();
        assert_eq!(top.len(), 4);
        let two = chosen(&["IPC,cpi".to_string(), "IPC".to_string()]).unwrap();
        let names: Vec<&str> = two.iter().map(|m| m.name).collect();
        assert_eq!(names, ["IPC", "CPI"]);
        let e = chosen(&["nosuch".to_string()]).unwrap_err();
        assert!(e.message().contains("`nosuch`"), "{e}");
        let hint = e.hint().unwrap();
        assert!(hint.contains("TopdownL1"), "{e}");
        assert_eq!(hint.matches("Summary").count(), 1, "each name once: {e}");
    }

    #[test]
    fn events_come_through_metrics_named_in_metrics() {
        assert_eq!(
            events_needed(&[by_name("IPC"), by_name("CPI")]),
            ["instructions", "cycles"]
        );
        let backend = events_needed(&[by_name("backend_bound")]);
        assert_eq!(backend.len(), 5, "{backend:?}");
        assert!(backend.contains(&"topdown-total-slots".to_string()));
        assert_eq!(events_needed(&[by_name("CPUs_utilized")]), ["task-clock"]);
    }

    #[test]
    fn values_over_synthetic_readings() {
        let counted = events(&[
            ("instructions", 3_000),
            ("cycles:u", 2_000),
            ("task-clock", 500_000_000),
            ("topdown-total-slots", 4_000),
            ("topdown-slots-issued", 3_000),
            ("topdown-slots-retired", 2_000),
            ("topdown-fetch-bubbles", 800),
            ("topdown-recovery-bubbles", 200),
        ]);
        let second = 1_000_000_000;
        assert_eq!(evaluate(by_name("IPC"), &counted, second), Some(1.5));
        assert_eq!(
            evaluate(by_name("CPUs_utilized"), &counted, second),
            Some(0.5)
        );
        let share = |name| evaluate(by_name(name), &counted, second).unwrap();
        assert!((share("frontend_bound") - 20.0).abs() < 1e-9);
        assert!((share("bad_speculation") - 30.0).abs() < 1e-9);
        assert!((share("retiring") - 50.0).abs() < 1e-9);
        assert!(share("backend_bound").abs() < 1e-9);
        // An event not counted: no value.
        assert_eq!(
            evaluate(by_name("branch_miss_rate"), &counted, second),
            None
        );
    }
}
