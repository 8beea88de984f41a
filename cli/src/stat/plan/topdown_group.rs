//! perf's forced group for the perf-metrics events of Ice Lake and later Intel cores: the
//! kernel opens a metric event (`topdown-retiring`, `PERF_METRICS.RETIRING`, ...) only in a
//! group led by slots (`intel_pmu_hw_config`, arch/x86/events/intel/core.c), so perf puts every
//! ungrouped slots and topdown event of a command line in one group, at the first one's place,
//! slots first, then the topdown events (`parse_events__sort_events_and_fix_groups` in
//! tools/perf/util/parse-events.c, `arch_evlist__cmp` in tools/perf/arch/x86/util/evlist.c).

use counterhal_hal::Backend;
#[cfg(target_os = "linux")]
use counterhal_hal::Encoding;

/// Where an event stands in the forced group: slots leads, metric events follow. (Only Linux
/// has the events: elsewhere no event is of either kind.)
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
enum Kind {
    Slots,
    Metric,
}

/// The kind of the resolved event `name`, if it is one of the two.
fn kind<B: Backend>(backend: &B, name: &str) -> Option<Kind> {
    let resolved = backend.resolve(name).ok()?;
    let [term] = resolved.terms.as_slice() else {
        return None;
    };
    kind_of_encoding(&term.request.encoding)
}

#[cfg(target_os = "linux")]
fn kind_of_encoding(encoding: &Encoding) -> Option<Kind> {
    let Encoding::Perf(attr) = encoding else {
        return None;
    };
    // A hybrid chip's big-core PMU has a dynamic type, named in `pmu`.
    let core_types: &[u32] = if attr.pmu.is_some() {
        std::slice::from_ref(&attr.type_)
    } else {
        &[]
    };
    if attr.is_topdown_slots(core_types) {
        Some(Kind::Slots)
    } else if attr.is_topdown_metric(core_types) {
        Some(Kind::Metric)
    } else {
        None
    }
}

#[cfg(not(target_os = "linux"))]
fn kind_of_encoding(_: &counterhal_hal::Encoding) -> Option<Kind> {
    None
}

/// Whether `name` may be one of them, by perf's test of the name
/// (`arch_evsel__must_be_in_group`: it holds `topdown` or `slots`, and is not
/// `uops_retired.slots`), with perfmon's `PERF_METRICS.` and libpfm4's `TOPDOWN_M` spellings:
/// only those are resolved again, so a stat without them pays nothing.
fn may_be_topdown(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    (lower.contains("topdown") || lower.contains("slots") || lower.contains("perf_metrics"))
        && !lower.contains("uops_retired.slots")
}

/// Adds to `groups` (indices into `names`) one group of the ungrouped slots and metric events
/// of `names`, slots first, when there is a metric event among them; the others stay as they
/// are.
pub fn force<B: Backend>(backend: &B, names: &[String], groups: &mut Vec<Vec<usize>>) {
    let grouped: Vec<usize> = groups.iter().flatten().copied().collect();
    let mut members: Vec<(Kind, usize)> = (0..names.len())
        .filter(|i| !grouped.contains(i) && may_be_topdown(&names[*i]))
        .filter_map(|i| kind(backend, &names[i]).map(|k| (k, i)))
        .collect();
    if !members.iter().any(|(k, _)| *k == Kind::Metric) {
        return;
    }
    members.sort();
    groups.push(members.into_iter().map(|(_, i)| i).collect());
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::sync::Arc;

    use super::*;
    use counterhal_events::Database;

    /// Oracle: perf's `arch_evlist__cmp` order (slots, then topdown events) and the kernel's
    /// encodings of `slots` (0x0400) and the metrics (0x8000 up).
    #[test]
    fn slots_leads_the_metric_events_and_others_stay_out() {
        let db = Arc::new(Database::shipped().unwrap());
        let Ok(linux) = crate::stat::plan::backend::the_backend_over_perf_event_open(db, "spr")
        else {
            counterhal_conformance::skip!(
                counterhal_conformance::skip::Need::System,
                "perf_event_open is not available here"
            );
        };
        let names: Vec<String> = [
            "INST_RETIRED.ANY",
            "PERF_METRICS.RETIRING",
            "TOPDOWN.SLOTS",
            "topdown-be-bound",
        ]
        .map(String::from)
        .to_vec();
        let mut groups = Vec::new();
        force(&linux, &names, &mut groups);
        assert_eq!(groups, [vec![2, 1, 3]]);
        assert!(!may_be_topdown("UOPS_RETIRED.SLOTS") && !may_be_topdown("cycles"));
        // Slots alone is not grouped.
        let mut none = Vec::new();
        force(&linux, &names[2..3], &mut none);
        assert!(none.is_empty());
    }
}
