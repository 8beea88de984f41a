//! Uncore events by name, as perf 6.1 opens its JSON events: `UNC_M_CAS_COUNT.RD` (any case,
//! with `:modifiers`) or `uncore_imc/UNC_M_CAS_COUNT.RD/` resolves, through the CPU model's
//! uncore table ([`Database::uncore_events`]), to its PMU and terms, and opens on every PMU
//! of the tree perf attaches the event to (`pmu_add_cpu_aliases_table`: a PMU with a `cpumask`
//! whose name holds the event's PMU followed by nothing or by `_` and a digit,
//! `pmu_uncore_alias_match`; or the PMU of exactly that name), each as
//! `PMU/terms/modifiers` ([`pmu_events`]): `uncore_imc_0/event=4,umask=3/`, ...

use std::path::Path;

use counterhal_events::{Database, UncoreEvent};
use counterhal_hal::{Error, ErrorKind, Result};

use super::event::{PmuEvent, find_pmus, pmu_events};
#[cfg(test)]
use super::pmu::Pmu;
use super::pmu::list_pmus;

/// Whether perf 6.1 attaches a JSON event of PMU `unit_pmu` to PMU `pmu` (its
/// `pmu_uncore_alias_match`, for names without a comma): `unit_pmu` found in `pmu` and followed
/// there by nothing, or by `_` and a digit.
fn alias_matches(unit_pmu: &str, pmu: &str) -> bool {
    let Some(at) = pmu.find(unit_pmu) else {
        return false;
    };
    let rest = &pmu[at + unit_pmu.len()..];
    rest.is_empty()
        || rest
            .strip_prefix('_')
            .and_then(|r| r.chars().next())
            .is_some_and(|c| c.is_ascii_digit())
}

/// Whether perf 6.1 gives PMU `pmu` of `devices` the events of `unit_pmu`: the PMU of that
/// name, or an uncore one (with a `cpumask`) that [`alias_matches`].
fn carries(devices: &Path, pmu: &str, unit_pmu: &str) -> bool {
    pmu == unit_pmu || (alias_matches(unit_pmu, pmu) && devices.join(pmu).join("cpumask").is_file())
}

/// `event` split into its name and modifiers (`UNC_M_CAS_COUNT.RD:u`).
fn name_and_modifiers(event: &str) -> (&str, &str) {
    event.split_once(':').unwrap_or((event, ""))
}

/// Every PMU under `devices` an uncore event `name` (`UNC_M_CAS_COUNT.RD`, or one of its
/// PMU's terms `uncore_imc/UNC_M_CAS_COUNT.RD,.../`) of CPU model `model` opens on, with its
/// attr, CPUs, scale and unit, as perf 6.1 opens it; `None` where `event` names no uncore
/// event of the model (no model, another kind of event: the caller reads it otherwise).
///
/// Each PMU the terms fit is opened (perf skips the others); where they fit none, the first
/// refusal is the answer. The event's scale and unit (perf's `ScaleUnit`) go with each open
/// whose PMU gives none.
///
/// # Errors
/// [`counterhal_hal::ErrorKind::InvalidEvent`] as [`pmu_events`] refuses the terms on every
/// PMU; [`counterhal_hal::ErrorKind::DeviceMissing`] where the tree has no PMU for the event.
pub fn uncore_pmu_events(
    devices: &Path,
    database: &Database,
    model: Option<&str>,
    event: &str,
) -> Option<Result<Vec<PmuEvent>>> {
    let model = model?;
    if event.contains('/') {
        return named_term(devices, database, model, event);
    }
    let (name, modifiers) = name_and_modifiers(event);
    let found = database.uncore_events(model, name);
    if found.is_empty() {
        return None;
    }
    let mut opens = Vec::new();
    let mut first_error = None;
    let pmus = list_pmus(devices);
    for uncore in &found {
        for pmu in pmus.iter().filter(|p| carries(devices, p, uncore.pmu)) {
            match pmu_events(devices, &uncore.on_pmu(pmu, modifiers)) {
                Some(Ok(events)) => opens.extend(scaled(events, uncore)),
                Some(Err(error)) => _ = first_error.get_or_insert(error),
                None => {}
            }
        }
    }
    Some(match (opens.is_empty(), first_error) {
        (true, Some(error)) => Err(error),
        (true, None) => Err(missing(name, &found)),
        _ => Ok(opens),
    })
}

/// `pmu/TERMS/modifiers` where a bare term of TERMS is an uncore event of the model: the term
/// replaced by the event's terms on each PMU the PMU part names that carries the event.
fn named_term(
    devices: &Path,
    database: &Database,
    model: &str,
    event: &str,
) -> Option<Result<Vec<PmuEvent>>> {
    let (pmu_part, rest) = event.split_once('/')?;
    let (terms, modifiers) = rest.rsplit_once('/')?;
    let named: Vec<(usize, Vec<UncoreEvent>)> = terms
        .split(',')
        .enumerate()
        .filter(|(_, term)| !term.contains('=') && !term.is_empty())
        .map(|(at, term)| (at, database.uncore_events(model, term)))
        .filter(|(_, found)| !found.is_empty())
        .collect();
    if named.is_empty() {
        return None;
    }
    let mut opens = Vec::new();
    let mut first_error = None;
    for pmu in find_pmus(devices, pmu_part) {
        // Each named term as the event its PMU carries here; a PMU that carries none of them
        // is left out, as perf finds no alias there.
        let mut written: Vec<String> = terms.split(',').map(str::to_string).collect();
        let mut scale_of = None;
        let carried = named.iter().all(|(at, found)| {
            let uncore = found.iter().find(|u| carries(devices, &pmu.name, u.pmu));
            if let Some(uncore) = uncore {
                written[*at] = uncore.terms.clone();
                scale_of.get_or_insert(uncore);
            }
            uncore.is_some()
        });
        if !carried {
            continue;
        }
        let on_pmu = format!("{}/{}/{modifiers}", pmu.name, written.join(","));
        match pmu_events(devices, &on_pmu) {
            Some(Ok(events)) => match scale_of {
                Some(uncore) => opens.extend(scaled(events, uncore)),
                None => opens.extend(events),
            },
            Some(Err(error)) => _ = first_error.get_or_insert(error),
            None => {}
        }
    }
    Some(match (opens.is_empty(), first_error) {
        (true, Some(error)) => Err(error),
        (true, None) => Err(missing(event, &named[0].1)),
        _ => Ok(opens),
    })
}

/// The opens with the uncore event's scale and unit where the PMU's alias gave none.
fn scaled(events: Vec<PmuEvent>, uncore: &UncoreEvent) -> impl Iterator<Item = PmuEvent> + '_ {
    events.into_iter().map(move |mut event| {
        if let Some((scale, unit)) = uncore.scale
            && event.scale.is_none()
            && event.unit.is_none()
        {
            event.scale = Some(scale);
            event.unit = Some(unit.to_string());
        }
        event
    })
}

/// The error for an uncore event whose PMU the tree lacks.
fn missing(name: &str, found: &[UncoreEvent]) -> Error {
    let pmus: Vec<&str> = found.iter().map(|u| u.pmu).collect();
    Error::new(
        ErrorKind::DeviceMissing,
        format!(
            "{name} is an uncore event of PMU {}, which this system does not have",
            pmus.join(" and ")
        ),
    )
    .with_hint("list the PMUs with `ls /sys/bus/event_source/devices` (or the --sysfs tree's)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spr() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/machines/spr-2s/bus/event_source/devices")
    }

    #[test]
    fn perfs_alias_match_takes_boxes_not_other_kinds() {
        assert!(alias_matches("uncore_imc", "uncore_imc_0"));
        assert!(alias_matches("uncore_imc", "uncore_imc"));
        assert!(!alias_matches("uncore_imc", "uncore_imc_free_running_0"));
        assert!(alias_matches(
            "uncore_imc_free_running",
            "uncore_imc_free_running_1"
        ));
        assert!(alias_matches("amd_umc", "amd_umc_3"));
        assert!(!alias_matches("uncore_cha", "uncore_chacms_0"));
        assert!(Pmu::open(&spr(), "uncore_imc_0").is_ok());
    }

    #[test]
    fn a_name_opens_on_every_box_and_cpu() {
        let db = Database::shipped().unwrap();
        let events = uncore_pmu_events(&spr(), &db, Some("spr"), "unc_m_cas_count.rd")
            .unwrap()
            .unwrap();
        let pmus: Vec<&str> = events.iter().map(|e| e.pmu.as_str()).collect();
        assert_eq!(
            pmus,
            [
                "uncore_imc_0",
                "uncore_imc_1",
                "uncore_imc_2",
                "uncore_imc_3"
            ]
        );
        assert!(events.iter().all(|e| e.attr.config == 0xcf05));
        let prefixed =
            uncore_pmu_events(&spr(), &db, Some("spr"), "uncore_imc/UNC_M_CAS_COUNT.RD/")
                .unwrap()
                .unwrap();
        assert_eq!(prefixed, events);
        let one = uncore_pmu_events(&spr(), &db, Some("spr"), "uncore_imc_1/UNC_M_CAS_COUNT.RD/")
            .unwrap()
            .unwrap();
        assert_eq!(one, events[1..2]);
        assert!(uncore_pmu_events(&spr(), &db, Some("spr"), "cycles").is_none());
        assert!(uncore_pmu_events(&spr(), &db, None, "UNC_M_CAS_COUNT.RD").is_none());
        assert!(
            uncore_pmu_events(&spr(), &db, Some("spr"), "uncore_imc/cas_count_read/").is_none()
        );
        // A PMU the tree lacks.
        let upi = uncore_pmu_events(&spr(), &db, Some("spr"), "UNC_UPI_CLOCKTICKS").unwrap();
        assert_eq!(
            upi.unwrap_err().kind(),
            counterhal_hal::ErrorKind::DeviceMissing
        );
    }
}
