//! `--cputype TYPE`: on a hybrid CPU, each event counted on one kind of core alone, as perf
//! 7.2's `parse_cputype` (tools/perf/builtin-stat.c) filters the PMUs events are opened on:
//! TYPE names the PMU (`cpu_atom`) or the PMU without its `cpu_` prefix (`atom`,
//! `perf_pmus__pmu_for_pmu_filter` in tools/perf/util/pmus.c). An event counted on a
//! hybrid CPU's core PMUs (`cpu_core`, `cpu_atom`) keeps the part on that PMU; other events
//! (software, tracepoints, uncore) are left as they are.

use counterhal::Error;
use counterhal_hal::Encoding;
use counterhal_system::PmuDevices;

use super::planned::Planned;

/// The hybrid core PMU an event's part is on, if it is on one (`cpu_core`, `cpu_atom`...).
fn core_pmu(encoding: &Encoding) -> Option<&str> {
    match encoding {
        Encoding::Perf(attr) => attr.pmu.as_deref().filter(|p| p.starts_with("cpu_")),
        _ => None,
    }
}

/// Refuses a `cputype` that names no PMU of `devices` (`None`: no sysfs PMUs here, nothing
/// to check), as perf 7.2's `parse_cputype` does (`perf_pmus__pmu_for_pmu_filter`,
/// tools/perf/util/pmus.c: a PMU of that name, or of that name after `uncore_` or `cpu_`):
/// "--cputype 123 is not supported!".
///
/// # Errors
/// No such PMU (bad input).
pub fn named_pmu(devices: Option<&PmuDevices>, cputype: &str) -> Result<(), Error> {
    let Some(devices) = devices else {
        return Ok(());
    };
    let plain = !cputype.is_empty() && !cputype.contains(['/', '\0']) && cputype != "..";
    let exists = |name: String| plain && devices.has(&name);
    if exists(cputype.to_string())
        || exists(format!("uncore_{cputype}"))
        || exists(format!("cpu_{cputype}"))
    {
        return Ok(());
    }
    Err(Error::invalid_input(format!(
        "--cputype {cputype} is not supported! (no PMU `{cputype}`, `cpu_{cputype}` or \
         `uncore_{cputype}` in {})",
        devices.path().display()
    ))
    .with_hint("--cputype atom or core names a hybrid CPU's cpu_atom or cpu_core"))
}

/// Keeps, of each event of `events` counted on hybrid core PMUs, the part on the PMU
/// `cputype` names.
///
/// # Errors
/// No event is on a PMU of that name (perf refuses a name no PMU has: "--cputype TYPE is
/// not supported!"), or one event has no part there (bad input).
pub fn keep(events: &mut [Planned], cputype: &str) -> Result<(), Error> {
    let named = |pmu: &str| pmu == cputype || pmu.strip_prefix("cpu_") == Some(cputype);
    let pmus_of = |planned: &Planned| -> Vec<String> {
        planned.ready().map_or_else(Vec::new, |event| {
            event
                .terms
                .iter()
                .filter_map(|t| core_pmu(&t.request.encoding).map(str::to_string))
                .collect()
        })
    };
    let mut seen: Vec<String> = events.iter().flat_map(pmus_of).collect();
    seen.sort();
    seen.dedup();
    if !seen.is_empty() && !seen.iter().any(|p| named(p)) {
        return Err(Error::invalid_input(format!(
            "--cputype {cputype}: no event here is counted on a PMU of that name (the \
             events' core PMUs: {})",
            seen.join(", ")
        ))
        .with_hint("--cputype atom or core names a hybrid CPU's cpu_atom or cpu_core"));
    }
    for planned in events.iter_mut() {
        let pmus = pmus_of(planned);
        let Planned::Ready(event) = planned else {
            continue;
        };
        if pmus.is_empty() {
            continue;
        }
        event
            .terms
            .retain(|t| core_pmu(&t.request.encoding).is_none_or(named));
        if event.terms.is_empty() {
            return Err(Error::invalid_input(format!(
                "--cputype {cputype}: `{}` is counted on {}, none of them {cputype}",
                event.name,
                pmus.join(", ")
            ))
            .with_hint("leave the event out, or name another --cputype"));
        }
    }
    Ok(())
}

/// `context` with its CPU model made the table of the kind of core `cputype` names, where the
/// model is one core's table of a hybrid chip (`adl_grt` for `--cputype atom` on `adl_glc`):
/// the metrics (`-M`, `--topdown`) perf 7.2 computes on that PMU are that core's (`Unit`
/// `cpu_atom` in its JSON). Unchanged where the model is no hybrid core's, already that
/// core's, or the chip has no table for it (the events then say so in [`keep`]).
pub fn with_model(context: counterhal::Context, cputype: &str) -> counterhal::Context {
    let kind = cputype.strip_prefix("cpu_").unwrap_or(cputype);
    let Some(core) = counterhal_events::HybridCore::from_name(kind) else {
        return context;
    };
    let Some(model) = context.model() else {
        return context;
    };
    let database = context.database().clone();
    match database.hybrid_sibling_id(model, core.core_type) {
        Some(sibling) if sibling != model => {
            let sibling = sibling.to_string();
            let mounts = context.mounts_tracefs();
            let mut switched = counterhal::Context::from_parts(
                context.system().clone(),
                database,
                context.cpu().cloned(),
                Some(sibling),
            );
            switched.set_mount_tracefs(mounts);
            switched
        }
        _ => context,
    }
}

/// The core PMU of the kind of core whose table the database model `model` is, where it is
/// one kind of a hybrid chip's (`cpu_core` for `adl_glc`, `cpu_atom` for `adl_grt`).
fn core_pmu_of(database: &counterhal_events::Database, model: &str) -> Option<&'static str> {
    use counterhal_events::HybridCore;
    [
        (HybridCore::CORE, "cpu_core"),
        (HybridCore::ATOM, "cpu_atom"),
    ]
    .into_iter()
    .find(|(core_type, _)| database.hybrid_sibling_id(model, *core_type) == Some(model))
    .map(|(_, pmu)| pmu)
}

/// The tables of each kind of core of the chip whose table `context`'s model is, each with
/// its core PMU, the Core cores' first (`adl_glc` on `cpu_core`, `adl_grt` on `cpu_atom`),
/// where the model is one core's of a hybrid chip: what perf 7.2 computes `--topdown` on
/// without `--cputype` (each core PMU's metrics). The model alone otherwise, with its core
/// PMU where it has one.
pub fn every_core(context: &counterhal::Context) -> Vec<(String, Option<&'static str>)> {
    let Some(model) = context.model() else {
        return Vec::new();
    };
    let database = context.database();
    let mut models: Vec<(String, Option<&'static str>)> = Vec::new();
    for core_type in [
        counterhal_events::HybridCore::CORE,
        counterhal_events::HybridCore::ATOM,
    ] {
        if let Some(id) = database.hybrid_sibling_id(model, core_type)
            && !models.iter().any(|(m, _)| m == id)
        {
            models.push((id.to_string(), core_pmu_of(database, id)));
        }
    }
    if models.is_empty() {
        models.push((model.to_string(), None));
    }
    models
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: perf 7.2.13's `perf_pmus__pmu_for_pmu_filter` (tools/perf/util/pmus.c): a PMU
    /// named so, or so after `uncore_` or `cpu_`; perf 7.2's stat.sh: `perf stat
    /// --cputype="123" -e instructions true` fails.
    #[test]
    fn a_cputype_names_a_pmu_as_perf_finds_it() {
        let dir = std::env::temp_dir().join(format!("counterhal-cputype-{}", std::process::id()));
        for pmu in ["cpu_atom", "software", "uncore_imc"] {
            std::fs::create_dir_all(dir.join(pmu)).unwrap();
        }
        let pmus = PmuDevices::at(&dir);
        for name in ["atom", "cpu_atom", "software", "imc", "uncore_imc"] {
            assert!(named_pmu(Some(&pmus), name).is_ok(), "{name}");
        }
        for name in ["123", "core", "", "..", "../counterhal", "atom/x"] {
            let refused = named_pmu(Some(&pmus), name).unwrap_err();
            assert!(refused.message().contains("is not supported!"), "{refused}");
        }
        assert!(named_pmu(None, "123").is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
