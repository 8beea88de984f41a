//! Which of the metrics `-M` chose can run on a backend, and why the others cannot.
//!
//! A metric runs when its formula parses, every machine fact it reads is known here and every
//! event it reads resolves on the backend (an event that resolves but that this machine cannot
//! count opens to `<not supported>`, as perf prints it, and the metric has no value). A metric
//! `-M` names by itself that cannot run is refused with the reason; one a group brought in is
//! left out and named on standard error, and the group's others run. (perf refuses a whole
//! `-M` list when one event does not parse, `parse_groups` in tools/perf/util/metricgroup.c;
//! its tables carry only the metrics whose PMUs exist on the machine, which counterhal's,
//! shared by every machine, cannot.)

use counterhal::{Error, ErrorKind};
use counterhal_hal::{Backend, BackendTarget, countable_form};

use counterhal::metrics::Machine;
use counterhal::metrics::{self as named_metrics, MetricDef};

/// Why `metric` cannot run, given `resolve` (why an event cannot be counted, if it cannot:
/// [`unknown_here`] where the metric is listed, [`uncountable_here`] where it is counted): the
/// error naming the metric, the event (by the name its formula reads, with the raw event its
/// table opens for it) or fact and the reason; `None` when it can run.
pub fn why_not(
    machine: &Machine,
    metric: &MetricDef,
    resolve: &dyn Fn(&str) -> Option<Error>,
) -> Option<Error> {
    if let Err(e) = named_metrics::readable(machine, metric) {
        return Some(e);
    }
    let shown = named_metrics::table_names(&[metric]);
    for event in named_metrics::events_needed(machine, &[metric]) {
        if super::tool::Tool::named(&event).is_some() {
            continue;
        }
        if let Some(e) = resolve(&event) {
            if let Some(model) = metric.model
                && e.kind() == ErrorKind::InvalidEvent
                && kernel_uncore_event(model, &event)
            {
                return Some(Error::unsupported(format!(
                    "metric `{}` reads `{event}`, an event of an uncore PMU (not among the core \
                     events of the kernel's table for `{model}`), which the event database does \
                     not hold: count it by its PMU's terms (`PMU/event=...,umask=.../`)",
                    metric.name
                )));
            }
            let read = match shown.get(&event) {
                Some(name) => format!("`{name}` ({event})"),
                None => format!("`{event}`"),
            };
            return Some(e.context(format_args!("metric `{}` reads {read}", metric.name)));
        }
    }
    None
}

/// Why `event` makes a metric unrunnable where the metric is only listed: it is unknown to
/// `backend` (`InvalidEvent`); an event that resolves runs, or opens to `<not supported>`.
pub fn unknown_here<B: Backend + ?Sized>(backend: &B, event: &str) -> Option<Error> {
    backend
        .resolve(event)
        .err()
        .filter(|e| e.kind() == ErrorKind::InvalidEvent)
}

/// Why `event` makes a metric unrunnable where it is about to be counted: unknown (as
/// [`unknown_here`]), or known but not countable by this process here: the backend cannot
/// program it, or this machine has no counter for it (opened once on this thread, in the form
/// this process may count, and closed: `event not supported by this PMU` where there is no
/// core PMU). An event refused for another reason (a permission, an uncore PMU's event, which
/// opens on CPUs only) is left to the measurement, which names it.
pub fn uncountable_here<B: Backend + ?Sized>(backend: &B, event: &str) -> Option<Error> {
    let resolved = match backend.resolve(event) {
        Ok(resolved) => resolved,
        Err(e) => {
            return matches!(e.kind(), ErrorKind::InvalidEvent | ErrorKind::Unsupported)
                .then_some(e);
        }
    };
    countable_form(backend, &resolved, &BackendTarget::ThisThread)
        .err()
        .filter(|e| e.kind() == ErrorKind::Unsupported)
}

/// Whether `event`, which a metric of `model` reads and no backend resolves, is one of the
/// kernel's uncore events: the model's table comes from the kernel's JSON (it lists the core
/// events its metrics read, with their raw codes, under `[events]`), and `event` is not one
/// of those core events. The generator lists every event without a `Unit` that a metric reads
/// (`read_events` in gen/src/metrics.rs); the others carry a `Unit` (`DFPMC`, `L3PMC`,
/// `UMCPMC`): the data fabric, L3 and memory-controller PMUs.
fn kernel_uncore_event(model: &str, event: &str) -> bool {
    let Ok(Some(table)) = counterhal_events::shipped_metrics(model) else {
        return false;
    };
    !table.events.is_empty()
        && !table.events.contains_key(event)
        && !table.events.values().any(|raw| raw == event)
        && event
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// Whether an event or fact a metric cannot read belongs to an uncore PMU (a socket's caching,
/// memory, power or interconnect agents) that this system lacks or counterhal does not
/// program: Intel's `UNC_*` and `FREERUN_*` events, the facts that count their units
/// (`#chas_per_socket`), the AMD data-fabric, L3 and memory-controller events of the kernel's
/// tables, and the RAPL `power` PMU's energy events the power metrics read (absent, or a
/// domain its `power` PMU does not have: a VM's may list `energy-psys` alone).
pub fn is_uncore(error: &Error) -> bool {
    let message = error.message();
    [
        "`UNC_",
        "`FREERUN_",
        "`#chas_per_socket`",
        "`uncore_",
        "an event of an uncore PMU",
        "no PMU `power`",
        "for PMU `power`",
    ]
    .iter()
    .any(|needle| message.contains(needle))
}

/// The metrics of `chosen` that can run (see [`why_not`]), and a note for each one a group
/// brought in that cannot.
///
/// # Errors
/// A metric `names` name by itself that cannot run, or a list of which none can run.
pub fn keep(
    machine: &Machine,
    names: &[String],
    chosen: Vec<&'static MetricDef>,
    resolve: &dyn Fn(&str) -> Option<Error>,
) -> Result<(Vec<&'static MetricDef>, Vec<String>), Error> {
    let mut kept = Vec::with_capacity(chosen.len());
    let mut notes = Vec::new();
    let mut first_refusal = None;
    for metric in chosen {
        match why_not(machine, metric, resolve) {
            None => kept.push(metric),
            Some(e) if named_metrics::named_by_itself(names, metric) => return Err(e),
            Some(e) => {
                notes.push(format!("metric `{}` left out: {e}", metric.name));
                first_refusal.get_or_insert(e);
            }
        }
    }
    match (kept.is_empty(), first_refusal) {
        (true, Some(e)) => Err(e.context(format_args!(
            "no metric of `{}` can run here",
            names.join(",")
        ))),
        _ => Ok((kept, notes)),
    }
}

/// The metrics `-M` arguments `names` choose for the database model `model`
/// ([`named_metrics::chosen`]) that can run given `resolve` ([`keep`]), and the notes naming
/// the others: what `stat -M` counts.
///
/// # Errors
/// An unknown name; a metric named by itself that cannot run; a list of which none can.
pub fn plan(
    machine: &Machine,
    names: &[String],
    model: Option<&str>,
    resolve: &dyn Fn(&str) -> Option<Error>,
) -> Result<(Vec<&'static MetricDef>, Vec<String>), Error> {
    keep(
        machine,
        names,
        named_metrics::chosen(names, model)?,
        resolve,
    )
}

/// What `list --metrics` offers for the database model `model`: every metric of the model,
/// each with why it cannot run here (`None`: it can), and the portable metrics that can run
/// with it; then the portable ones that cannot, with why (not offered: their events are
/// perf's kernel names of other cores, `topdown-fetch-bubbles` on Skylake's kernel tables).
///
/// # Errors
/// The model's shipped table is malformed.
#[allow(clippy::type_complexity)]
pub fn offered(
    machine: &Machine,
    model: Option<&str>,
    resolve: &dyn Fn(&str) -> Option<Error>,
) -> Result<
    (
        Vec<(&'static MetricDef, Option<Error>)>,
        Vec<(&'static MetricDef, Error)>,
    ),
    Error,
> {
    let mut offered = Vec::new();
    let mut hidden = Vec::new();
    for metric in named_metrics::catalogue(model)? {
        let why = why_not(machine, metric, resolve);
        match (metric.model, why) {
            (None, Some(e)) => hidden.push((metric, e)),
            (_, why) => offered.push((metric, why)),
        }
    }
    Ok((offered, hidden))
}

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal::metrics::{chosen, of_model};

    fn unknown_uncore(event: &str) -> Option<Error> {
        event
            .starts_with("UNC_")
            .then(|| Error::invalid_event(format!("unknown event `{event}`")))
    }

    /// Oracle: the kernel's AMD JSON (tools/perf/pmu-events/arch/x86/amdzen*/ of Debian's
    /// linux-source-6.12): every event the AMD metrics read that [`kernel_uncore_event`] calls
    /// uncore has a `Unit` there (`DFPMC`, `L3PMC`, `UMCPMC`), and every such event they read
    /// is called uncore: each event that JSON names (perf 7.2's metrics, from Linux 7.2's
    /// tables, read some it does not).
    #[test]
    #[cfg(target_os = "linux")]
    fn amd_uncore_events_are_those_with_a_unit_in_the_kernels_json() {
        let tree = match counterhal_conformance::fixtures::kernel_source() {
            Ok(tree) => tree,
            Err(why) => {
                counterhal_conformance::skip!(counterhal_conformance::skip::Need::Tools, "{why}")
            }
        };
        let arch = tree.join("tools/perf/pmu-events/arch/x86");
        let mut checked = 0;
        for (kernel_dir, model) in [
            ("amdzen1", "amd64_fam17h_zen1"),
            ("amdzen2", "amd64_fam17h_zen2"),
            ("amdzen3", "amd64_fam19h_zen3"),
            ("amdzen4", "amd64_fam19h_zen4"),
            ("amdzen5", "amd64_fam1ah_zen5"),
        ] {
            let (mut unit, mut known) = (
                std::collections::HashSet::new(),
                std::collections::HashSet::new(),
            );
            for file in std::fs::read_dir(arch.join(kernel_dir)).unwrap() {
                let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
                let json: serde_json::Value = serde_json::from_str(&text).unwrap();
                for entry in json.as_array().unwrap() {
                    let Some(name) = entry.get("EventName").and_then(|n| n.as_str()) else {
                        continue;
                    };
                    known.insert(name.to_string());
                    if entry.get("Unit").is_some() {
                        unit.insert(name.to_string());
                    }
                }
            }
            // What the classification is asked about: names no backend here resolves.
            let db = std::sync::Arc::new(counterhal_events::Database::shipped().unwrap());
            let Ok(linux) = crate::stat::plan::backend::the_backend_over_perf_event_open(db, model)
            else {
                continue;
            };
            let metrics = of_model(model).unwrap();
            for metric in metrics {
                let formula = counterhal_events::expression::parse(&metric.expression()).unwrap();
                // The words of the formula that are events (not metrics, facts or terms).
                for event in formula.names().into_iter().filter(|name| {
                    !name.starts_with('#')
                        && !name.contains('@')
                        && name != "duration_time"
                        && !metrics.iter().any(|m| m.name == name.as_str())
                        && counterhal_hal::Backend::resolve(&linux, name).is_err()
                        // What Linux 6.12's JSON names (the metrics of perf 7.2's tables
                        // read events of Linux 7.2's, which this oracle does not know).
                        && known.contains(name.as_str())
                }) {
                    let called = kernel_uncore_event(model, &event);
                    assert_eq!(
                        called,
                        unit.contains(&event),
                        "{model} {}: {event}",
                        metric.name
                    );
                    checked += usize::from(called);
                }
            }
        }
        assert!(checked > 100, "{checked} uncore reads");
    }

    /// Oracle: Intel perfmon's Ice Lake server metric table, as shipped: its `Info_System_*`
    /// group mixes core metrics with uncore ones (`UNC_*` events).
    #[test]
    fn a_group_keeps_what_runs_and_names_the_rest() {
        let names = vec!["Server".to_string()];
        let group = chosen(&names, Some("icx")).unwrap();
        let uncore = group
            .iter()
            .filter(|m| m.expression().contains("UNC_"))
            .count();
        assert!(
            uncore > 0 && uncore < group.len(),
            "{uncore} of {}",
            group.len()
        );
        let (kept, notes) = keep(
            &crate::stat::plan::machine_here(),
            &names,
            group.clone(),
            &unknown_uncore,
        )
        .unwrap();
        assert_eq!(kept.len() + notes.len(), group.len());
        // What is kept opens no uncore event: a formula reading one only where a fact of
        // this machine holds (`... if #has_pmem > 0 else 0`, perf 7.2's) is kept where it
        // does not, as perf 7.2 keeps it (the fact decided before the events are opened).
        assert!(
            counterhal::metrics::events_needed(&crate::stat::plan::machine_here(), &kept)
                .iter()
                .all(|e| !e.starts_with("UNC_")),
            "{:?}",
            counterhal::metrics::events_needed(&crate::stat::plan::machine_here(), &kept)
        );
        assert!(
            notes
                .iter()
                .all(|n| n.contains("left out") && n.contains("UNC_"))
        );
        // By its own name, an uncore metric is refused with the reason.
        let one = group
            .iter()
            .find(|m| m.expression().contains("UNC_"))
            .unwrap();
        let by_name = vec![one.name.to_string()];
        let e = keep(
            &crate::stat::plan::machine_here(),
            &by_name,
            vec![*one],
            &unknown_uncore,
        )
        .unwrap_err();
        assert!(is_uncore(&e), "{e}");
        assert!(e.message().contains(one.name), "{e}");
        assert!(!of_model("icx").unwrap().is_empty());
    }
}
