//! The sweep of every metric and group `list --metrics` offers for every model of the
//! database, planned as `stat -M NAME --cpu-model MODEL -- true` plans it (in process): none
//! is refused but those whose events are an uncore PMU's, and each of those is marked in
//! `list --metrics`.

use std::sync::Arc;

use counterhal::{Error, ErrorKind};
use counterhal_events::{Database, EncoderKind};
use counterhal_hal::Backend;

use super::runnable::{self, is_uncore};
use counterhal::metrics::{self as named_metrics, MetricDef};

/// What `stat -M name` does before it counts, on `backend` for `model`: the metrics it
/// chooses, and each of their events resolved (an event that resolves opens, or opens to
/// `<not supported>` where the machine lacks it; one that does not is refused).
fn plan_as_stat<B: Backend>(backend: &B, model: &str, name: &str) -> Result<usize, Error> {
    let resolve = |event: &str| runnable::unknown_here(backend, event);
    let system = crate::stat::plan::machine_here();
    let (chosen, _left_out) = runnable::plan(&system, &[name.to_string()], Some(model), &resolve)?;
    for event in named_metrics::events_needed(&system, &chosen) {
        if super::tool::Tool::named(&event).is_some() {
            continue;
        }
        if let Err(e) = backend.resolve(&event)
            && e.kind() == ErrorKind::InvalidEvent
        {
            return Err(e);
        }
    }
    Ok(chosen.len())
}

/// Events a model's metrics read that its tables lack, each with why (as
/// cli/tests/data/metrics_perf72.toml lists them for perf 7.2's names).
const LACKING: &[(&str, &str, &str)] = &[
    (
        "bdw_de",
        "L2_LINES_IN.S",
        "Intel perfmon's BDW-DE core table as generated holds L2_LINES_IN.ALL alone; perf 7.2's \
         lpm_l2_totals_out (intel_metrics.py) reads .S",
    ),
    (
        "gnr",
        "PEBS",
        "perf 7.2's own Granite Rapids formulas read `PEBS`, no event of any table (perfmon's \
         marker of a PEBS-sampled event, left in by its converter): perf 7.2 cannot open it",
    ),
];

/// Whether `error` is an event of the kernel's `msr` PMU that this machine's lacks: the
/// kernel lists `aperf`, `mperf`, `smi`... only where the CPU has them
/// (arch/x86/events/msr.c, Linux 6.12); a VM's may list `tsc` alone.
fn msr_lacks(error: &Error) -> bool {
    const MSR_EVENTS: [&str; 8] = [
        "tsc",
        "aperf",
        "mperf",
        "pperf",
        "smi",
        "ptsc",
        "irperf",
        "cpu_thermal_margin",
    ];
    let message = error.message();
    message.contains("for PMU `msr`")
        && MSR_EVENTS
            .iter()
            .any(|event| message.contains(&format!("unknown term `{event}`")))
}

/// Oracles: the kernel's perf-metrics events (arch/x86/events/intel/core.c), perf's TSC
/// derivation (tools/perf/arch/x86/util/tsc.c), Intel perfmon's own rewriting of its formulas
/// for perf (scripts/create_perf_json.py), and the kernel's AMD tables, whose metrics read
/// uncore PMUs' events (the ones with a `Unit`): what stays refused must be an uncore PMU's.
#[test]
fn every_metric_and_group_of_every_model_runs_but_the_uncore_ones() {
    let db = Arc::new(Database::shipped().unwrap());
    let ids: Vec<String> = db.models().map(|m| m.id.clone()).collect();
    let (mut total, mut uncore, mut metrics_marked, mut arm_elsewhere) = (0, 0, 0, 0);
    let (mut msr_elsewhere, mut lacking) = (0, 0);
    let pmus = counterhal_system::System::host().pmus().names();
    let arm_pmu_absent = !pmus.iter().any(|name| name.starts_with("armv8"));
    let mut refused: Vec<String> = Vec::new();
    for id in &ids {
        let Ok(linux) =
            crate::stat::plan::backend::the_backend_over_perf_event_open(Arc::clone(&db), id)
        else {
            counterhal_conformance::skip!(
                counterhal_conformance::skip::Need::System,
                "perf_event_open is not available here"
            );
        };
        let resolve = |event: &str| linux.resolve(event).err();
        let (offered, _hidden) =
            runnable::offered(&crate::stat::plan::machine_here(), Some(id), &resolve).unwrap();
        let marked = |m: &MetricDef| {
            offered
                .iter()
                .any(|(o, why)| std::ptr::eq(*o, m) && why.as_ref().is_some_and(is_uncore))
        };
        metrics_marked += offered.iter().filter(|(m, _)| marked(m)).count();
        let mut names: Vec<&str> = offered.iter().map(|(m, _)| m.name).collect();
        for (metric, _) in &offered {
            names.extend(metric.groups.iter().copied());
        }
        names.sort_unstable();
        names.dedup();
        for name in names {
            total += 1;
            match plan_as_stat(&linux, id, name) {
                Ok(count) => assert!(count > 0, "{id} {name}"),
                Err(e) if is_uncore(&e) => {
                    uncore += 1;
                    // Named in `list --metrics`: the metric (or every metric of the group)
                    // is marked as an uncore PMU's.
                    let members: Vec<&&MetricDef> = offered
                        .iter()
                        .map(|(m, _)| m)
                        .filter(|m| m.name == name || m.groups.contains(&name))
                        .collect();
                    assert!(
                        !members.is_empty() && members.iter().all(|m| marked(m)),
                        "{id} {name}: refused ({e}) but not marked in list --metrics"
                    );
                }
                // An Arm core's formulas read its PMU's facts (`#slots`, its caps/slots) and
                // events of its PMU by name (`armv8_pmuv3_0@event=...@`): refused where no
                // Arm PMU exists.
                Err(e)
                    if arm_pmu_absent
                        && db
                            .model(id)
                            .is_some_and(|m| m.encoder == EncoderKind::Armv8)
                        && (e.to_string().contains("#slots")
                            || e.to_string().contains("armv8_pmuv3")) =>
                {
                    arm_elsewhere += 1;
                }
                Err(e) if msr_lacks(&e) => msr_elsewhere += 1,
                Err(e)
                    if LACKING.iter().any(|(model, event, _)| {
                        model == id && e.message().contains(&format!("reads `{event}`"))
                    }) =>
                {
                    lacking += 1;
                }
                Err(e) => refused.push(format!("{id} {name}: {e}")),
            }
        }
    }
    eprintln!(
        "metric sweep: {total} names over {} models; {uncore} refused for uncore PMUs \
         ({metrics_marked} metrics marked in list --metrics); {arm_elsewhere} Arm formulas \
         refused for want of an Arm PMU here; {msr_elsewhere} for events this msr PMU lacks; \
         {lacking} for events the tables lack, listed; {} refused otherwise",
        ids.len(),
        refused.len()
    );
    assert!(total > 5_000, "{total} names");
    assert!(
        refused.is_empty(),
        "{} refused:\n{}",
        refused.len(),
        refused.join("\n")
    );
}

/// Oracle: the three cases, each a refusal before: `TopdownL1` on Sapphire Rapids
/// (perf metrics), `Summary` on Rocket Lake (the TSC), `Branches` on Emerald Rapids (one
/// metric that cannot run refused the group).
#[test]
fn topdown_summary_and_branches_plan_on_their_models() {
    let db = Arc::new(Database::shipped().unwrap());
    for (model, name) in [
        ("spr", "TopdownL1"),
        ("icx", "TmaL1"),
        ("emr", "TopdownL1"),
        ("rkl", "Summary"),
        ("emr", "Branches"),
    ] {
        let Ok(linux) =
            crate::stat::plan::backend::the_backend_over_perf_event_open(Arc::clone(&db), model)
        else {
            counterhal_conformance::skip!(
                counterhal_conformance::skip::Need::System,
                "perf_event_open is not available here"
            );
        };
        let planned = plan_as_stat(&linux, model, name);
        assert!(
            matches!(planned, Ok(n) if n > 0),
            "{model} {name}: {planned:?}"
        );
    }
}
