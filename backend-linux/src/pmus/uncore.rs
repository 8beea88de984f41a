//! Uncore events by name, as perf 6.1 opens its JSON events: `UNC_M_CAS_COUNT.RD` (any case,
//! with `:modifiers`) or `uncore_imc/UNC_M_CAS_COUNT.RD/` resolves, through the CPU model's
//! uncore table ([`Database::uncore_events`]), to its PMU and terms, and opens on every PMU
//! of the tree perf attaches the event to (`pmu_add_cpu_aliases_table`: a PMU with a `cpumask`
//! whose name holds the event's PMU followed by nothing or by `_` and a digit,
//! `pmu_uncore_alias_match`; or the PMU of exactly that name), each as
//! `PMU/terms/modifiers` ([`pmu_events`]): `uncore_imc_0/event=4,umask=3/`, ...
//!
//! The modifiers Intel perfmon's metric formulas give uncore events, which perf's tables
//! carry as PMU terms (perfmon's converter, `scripts/create_perf_json.py`, whose fixups
//! perf's JSON holds), are taken too: `:c=N` (perfmon's `:cN`) is the PMU's counter mask,
//! `thresh` where its format has that field (the server boxes:
//! `UNC_CHA_TOR_OCCUPANCY.IA_MISS_DRD@thresh\=1@`), else `cmask` (the client ones:
//! `UNC_ARB_TRK_OCCUPANCY.DATA_READ@cmask\=1@`); `:e=1` is `edge` and `:i=1` `inv`; and
//! `:one_unit` opens the event on the first box alone (`UNC_CHA_CLOCKTICKS:one_unit` is
//! `uncore_cha_0@event\=0x1@`); and the box filters, [`PERFMON_FILTERS`]: `:opc=V` is the
//! kernel's `filter_opc`, `:tid=V` `filter_tid` and `:filter1=V` `config1`
//! (`UNC_C_TOR_INSERTS.MISS_LOCAL_OPCODE:opc=0x182` is
//! `cbox@UNC_C_TOR_INSERTS.MISS_LOCAL_OPCODE\,filter_opc\=0x182@`,
//! `UNC_CHA_TOR_INSERTS.IA_MISS:filter1=0x40431` is
//! `cha@UNC_CHA_TOR_INSERTS.IA_MISS\,config1\=0x40431@`).

use counterhal_system::{PmuDevice, PmuDevices};

use counterhal_events::{Database, UncoreEvent};
use counterhal_hal::{Error, ErrorKind, Result};

use super::event::{PmuEvent, find_pmus, pmu_events};
#[cfg(test)]
use super::pmu::Pmu;
use super::pmu::list_pmus;
use super::pmu::pmu_is;

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
fn carries(devices: &PmuDevices, pmu: &str, unit_pmu: &str) -> bool {
    pmu == unit_pmu
        || (alias_matches(unit_pmu, pmu) && pmu_is(devices, pmu, PmuDevice::has_cpumask))
}

/// `event` split into its name and modifiers (`UNC_M_CAS_COUNT.RD:u`).
fn name_and_modifiers(event: &str) -> (&str, &str) {
    event.split_once(':').unwrap_or((event, ""))
}

/// perfmon's box filters of an uncore event and the kernel's format fields perf's tables
/// write them as (the Linux kernel's perf JSON: `cbox@...\,filter_opc\=0x182\,filter_tid\=0x3e@`
/// on Broadwell-EP, `cha@...\,config1\=0x40431@` on Skylake-SP).
const PERFMON_FILTERS: &[(&str, &str)] = &[
    ("opc", "filter_opc"),
    ("tid", "filter_tid"),
    ("filter1", "config1"),
];

/// perfmon's modifiers of an uncore event (see the module's documentation), and the others.
#[derive(Debug, Default, PartialEq)]
struct PerfmonModifiers {
    /// The counter mask (`c=N`), `edge` (`e=N`) and `inv` (`i=N`) values, as given.
    cmask: Option<String>,
    edge: Option<String>,
    inv: Option<String>,
    /// The box filters ([`PERFMON_FILTERS`]) as the kernel's fields and their values, in order.
    filters: Vec<(&'static str, String)>,
    /// `one_unit`: the first box alone.
    one_unit: bool,
    /// The rest, perf's own (`u`, `k`), joined as given.
    rest: String,
}

impl PerfmonModifiers {
    /// `modifiers` (what follows the event's first `:`) read.
    fn read(modifiers: &str) -> PerfmonModifiers {
        let mut read = PerfmonModifiers::default();
        let mut rest = Vec::new();
        for modifier in modifiers.split(':').filter(|m| !m.is_empty()) {
            let value = |letter: &str| {
                modifier
                    .strip_prefix(letter)
                    .and_then(|m| m.strip_prefix('='))
                    .filter(|v| !v.is_empty())
                    .map(str::to_string)
            };
            let filter = PERFMON_FILTERS
                .iter()
                .find_map(|(perfmon, field)| value(perfmon).map(|v| (*field, v)));
            if modifier.eq_ignore_ascii_case("one_unit") {
                read.one_unit = true;
            } else if let Some(filter) = filter {
                read.filters.push(filter);
            } else if let Some(value) = value("c") {
                read.cmask = Some(value);
            } else if let Some(value) = value("e") {
                read.edge = Some(value);
            } else if let Some(value) = value("i") {
                read.inv = Some(value);
            } else {
                rest.push(modifier);
            }
        }
        read.rest = rest.join(":");
        read
    }

    /// The terms they add on PMU `pmu` of `devices` (`,filter_opc=0x182,thresh=1`): the box
    /// filters, then the counter mask as the PMU's `thresh` where it has that format field,
    /// else as `cmask`.
    fn terms(&self, devices: &PmuDevices, pmu: &str) -> String {
        let counter_mask = match pmu_is(devices, pmu, |pmu| pmu.has_format("thresh")) {
            true => "thresh",
            false => "cmask",
        };
        let filters = self.filters.iter().map(|(field, v)| (*field, Some(v)));
        let masks = [
            (counter_mask, self.cmask.as_ref()),
            ("edge", self.edge.as_ref()),
            ("inv", self.inv.as_ref()),
        ];
        filters
            .chain(masks)
            .filter_map(|(field, value)| value.map(|v| format!(",{field}={v}")))
            .collect()
    }
}

/// A box's number (`uncore_cha_12` is 12; a PMU without one is 0), to find the first box.
fn box_number(pmu: &str) -> u64 {
    pmu.rsplit_once('_')
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(0)
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
    devices: &PmuDevices,
    database: &Database,
    model: Option<&str>,
    event: &str,
) -> Option<Result<Vec<PmuEvent>>> {
    // No model's events to name where the build can hold no CPU model: a constant's branch,
    // folded before the compiler decides what to compile, so such a build compiles none of
    // what follows.
    if !const { Database::may_hold_models() } {
        return None;
    }
    let model = model?;
    if event.contains('/') {
        return named_term(devices, database, model, event);
    }
    let (name, modifiers) = name_and_modifiers(event);
    let found = database.uncore_events(model, name);
    if found.is_empty() {
        return None;
    }
    let perfmon = PerfmonModifiers::read(modifiers);
    let mut opens = Vec::new();
    let mut first_error = None;
    let pmus = list_pmus(devices);
    for uncore in &found {
        let mut carrying: Vec<&String> = pmus
            .iter()
            .filter(|p| carries(devices, p, uncore.pmu))
            .collect();
        if perfmon.one_unit {
            // The box with the lowest number, the first of equals.
            let lowest = carrying.iter().copied().min_by_key(|p| box_number(p));
            carrying = lowest.into_iter().collect();
        }
        for pmu in carrying {
            let terms = format!("{}{}", uncore.terms, perfmon.terms(devices, pmu));
            let on_pmu = format!("{pmu}/{terms}/{}", perfmon.rest);
            match pmu_events(devices, &on_pmu) {
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
    devices: &PmuDevices,
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

    use std::path::Path;

    fn spr() -> PmuDevices {
        PmuDevices::at(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/machines/spr-2s/bus/event_source/devices"),
        )
    }

    #[test]
    fn perfmon_modifiers_are_read_apart_from_perfs() {
        let read = PerfmonModifiers::read("c=1:e=1:u:one_unit");
        assert_eq!(read.cmask.as_deref(), Some("1"));
        assert_eq!(read.edge.as_deref(), Some("1"));
        assert!(read.one_unit && read.inv.is_none());
        assert_eq!(read.rest, "u");
        assert_eq!(read.terms(&spr(), "uncore_cha_0"), ",thresh=1,edge=1");
        assert_eq!(read.terms(&spr(), "uncore_imc_0"), ",thresh=1,edge=1");
        let skl = PmuDevices::at(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/machines/skl-client/bus/event_source/devices"),
        );
        assert_eq!(read.terms(&skl, "uncore_arb"), ",cmask=1,edge=1");
        assert_eq!(PerfmonModifiers::read("k").rest, "k");
        let filtered = PerfmonModifiers::read("opc=0x1c8:tid=0x3e:c=1");
        assert_eq!(
            filtered.terms(&spr(), "uncore_cha_0"),
            ",filter_opc=0x1c8,filter_tid=0x3e,thresh=1"
        );
        let config1 = PerfmonModifiers::read("filter1=0x40431");
        assert_eq!(config1.terms(&skl, "uncore_arb"), ",config1=0x40431");
        assert_eq!(config1.rest, "");
        assert_eq!(box_number("uncore_cha_12"), 12);
        assert_eq!(box_number("uncore_arb"), 0);
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
        // perfmon's modifiers, as perf's tables write them (create_perf_json.py's fixups):
        // `UNC_CHA_CLOCKTICKS:one_unit` is `uncore_cha_0@event\=0x1@`, a counter mask the
        // CHA's `thresh`.
        let one = uncore_pmu_events(&spr(), &db, Some("spr"), "UNC_CHA_CLOCKTICKS:one_unit")
            .unwrap()
            .unwrap();
        let first = pmu_events(&spr(), "uncore_cha_0/event=0x1/")
            .unwrap()
            .unwrap();
        assert_eq!(one, first);
        let masked = uncore_pmu_events(
            &spr(),
            &db,
            Some("spr"),
            "UNC_CHA_TOR_OCCUPANCY.IA_MISS_DRD:c=1",
        )
        .unwrap()
        .unwrap();
        let terms = "uncore_cha/UNC_CHA_TOR_OCCUPANCY.IA_MISS_DRD,thresh=1/";
        assert_eq!(
            masked,
            uncore_pmu_events(&spr(), &db, Some("spr"), terms)
                .unwrap()
                .unwrap()
        );
        assert_eq!(masked[0].attr.config >> 24 & 0xff, 1);
        // A PMU the tree lacks.
        let upi = uncore_pmu_events(&spr(), &db, Some("spr"), "UNC_UPI_CLOCKTICKS").unwrap();
        assert_eq!(
            upi.unwrap_err().kind(),
            counterhal_hal::ErrorKind::DeviceMissing
        );
    }
}
