//! A metric's formula over readings: each name it reads given its value (an event's estimate,
//! a machine fact, the duration, another metric's value).

use super::{
    Counted, DEPTH, Machine, MetricDef, energy_status, event_name, is_retire_latency, machine,
    referenced, retire_latency,
};

/// `metric`'s value unscaled (at `depth` of metrics reading metrics).
pub(super) fn value<C: Counted>(
    facts: &Machine,
    metric: &MetricDef,
    events: &[C],
    length_ns: u64,
    depth: usize,
) -> Option<f64> {
    if depth > DEPTH {
        return None;
    }
    metric
        .formula()
        .ok()?
        .evaluate(&|name| read_name(facts, metric, events, length_ns, depth, name))
}

/// The value a formula of `metric` (at `depth` of metrics reading metrics) reads for `name`.
pub(super) fn read_name<C: Counted>(
    facts: &Machine,
    metric: &MetricDef,
    events: &[C],
    length_ns: u64,
    depth: usize,
    name: &str,
) -> Option<f64> {
    if name == "duration_time" {
        return Some(length_ns as f64 / 1e9);
    }
    if name == "user_time" || name == "system_time" {
        // perf's tool events read as seconds in a formula, as `duration_time` does.
        return events
            .iter()
            .find(|e| e.name() == name)
            .and_then(Counted::estimate)
            .map(|ns| ns as f64 / 1e9);
    }
    if name.starts_with('#') {
        return machine::constant(facts, name);
    }
    if is_retire_latency(name) {
        return Some(retire_latency(metric, name));
    }
    // An energy status counter: the RAPL event's energy (its count times its scale, in
    // Joules) in the units the formula multiplies back, so that the formula gives Joules
    // whatever units the MSR counts in.
    if let Some((_, event, micro_joules)) = energy_status(name) {
        let counted = events.iter().find(|e| e.name() == event)?;
        let joules = counted.joules_per_count()?;
        return Some(counted.estimate()? as f64 * joules * 1e6 / micro_joules);
    }
    match referenced(metric, name) {
        // A referenced metric's own scale is for printing it, not for formulas reading it.
        Some(inner) => value(facts, inner, events, length_ns, depth + 1),
        None => {
            // Counted as the raw event its table opens, printed by its own name.
            let event = event_name(metric, name);
            let is = |counted: &str| counted == event || counted == name;
            events
                .iter()
                .find(|e| is(e.name()) || e.name().split(':').next().is_some_and(is))
                .and_then(Counted::estimate)
                .map(|v| v as f64)
        }
    }
}
