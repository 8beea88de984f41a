//! Intel's hybrid chips (Alder Lake and later): two core PMUs, `cpu_core` (type 4, the raw
//! type) on the Core cores and `cpu_atom` (a dynamic type) on the Atom cores, each with its
//! own `cpus` (arch/x86/events/intel/core.c: `hybrid_big` and `hybrid_small`), and each core
//! with its own event table (Intel perfmon's mapfile gives Alder Lake `adl_glc` for the Core
//! cores, core type 0x40, and `adl_grt` for the Atom cores, 0x20).
//!
//! perf 6.1 gives each core PMU the events of its core's table as aliases and opens an event
//! by name on every core PMU whose table has it, each on that PMU's CPUs. Oracle: perf 6.1
//! under backend-linux's tests/data/machines/adl tree with `PERF_CPUID=GenuineIntel-6-97-2`:
//! `perf stat -vv -a -M IPC` reads `INST_RETIRED.ANY` and `CPU_CLK_UNHALTED.CORE` and opens
//! `INST_RETIRED.ANY -> cpu_core/event=0xc0/` (type 4) on CPUs 0-15 and
//! `INST_RETIRED.ANY -> cpu_atom/event=0xc0/` (type 10) on CPUs 16-23, but
//! `CPU_CLK_UNHALTED.CORE` (an Atom core's name alone) on cpu_atom only. Here a native or raw
//! event of the CPU model becomes one term per such PMU, encoded from that PMU's core's
//! table and given the PMU's type, so that `-a` opens each on its PMU's `cpus`.

use counterhal_events::{Database, HybridCore};
use counterhal_hal::{Accepts, Encoding, EventRequest, PerfAttr, ResolvedEvent, Result, Term};

use counterhal_events::perf::TYPE_RAW;

use crate::pmus::Pmu;

/// The core type of the cores an Intel hybrid core PMU counts on, by the name the kernel
/// gives it (`cpu_core`: [`HybridCore::CORE`], `cpu_atom`: [`HybridCore::ATOM`]).
pub(crate) fn core_type_of(pmu: &str) -> Option<u8> {
    match pmu {
        "cpu_core" => Some(HybridCore::CORE),
        "cpu_atom" => Some(HybridCore::ATOM),
        _ => None,
    }
}

/// The id of the model whose events core PMU `pmu` counts, for CPU model `model`: the
/// table of its core on a hybrid chip (`adl_grt` for `cpu_atom` where `model` is `adl_glc`),
/// `model` itself for the raw-type PMU of a chip with one kind of core (`cpu`); `None` where
/// the database has no such table.
pub(crate) fn model_of_pmu<'d>(database: &'d Database, model: &str, pmu: &Pmu) -> Option<&'d str> {
    match core_type_of(&pmu.name) {
        Some(core_type) => database
            .hybrid_sibling_id(model, core_type)
            // A model of one kind of core named for a hybrid tree: its events are the raw
            // PMU's, as perf reads a table without `Unit`s.
            .or_else(|| {
                (pmu.type_ == TYPE_RAW)
                    .then(|| database.model_id(model))
                    .flatten()
            }),
        None => (pmu.type_ == TYPE_RAW)
            .then(|| database.model_id(model))
            .flatten(),
    }
}

/// `resolved`, the database's reading of `event` on `model` with every term a raw perf attr
/// (type 4), as one term per Intel hybrid core PMU of `pmus` whose core's table has `event`
/// (see the module's documentation), each encoded from that table (an event select by
/// `encode`, as the backend programs one) and given the PMU's type and name; unchanged where
/// `pmus` holds no Intel hybrid core PMU, a term is no raw attr, or no PMU's table has the
/// event.
///
/// # Errors
/// As `encode` refuses another core's encoding of the event.
pub(crate) fn place_on_core_pmus(
    event: &str,
    resolved: ResolvedEvent,
    pmus: &[Pmu],
    database: &Database,
    model: Option<&str>,
    accepts: &Accepts,
    encode: impl Fn(&EventRequest) -> Result<PerfAttr>,
) -> Result<ResolvedEvent> {
    let raw = |term: &Term| matches!(&term.request.encoding, Encoding::Perf(attr) if attr.type_ == TYPE_RAW);
    // The cheap answers first: most machines have no Intel hybrid core PMU.
    if !pmus.iter().any(|pmu| core_type_of(&pmu.name).is_some())
        || resolved.terms.is_empty()
        || !resolved.terms.iter().all(raw)
    {
        return Ok(resolved);
    }
    let Some(model) = model.and_then(|m| database.model_id(m)) else {
        return Ok(resolved);
    };
    let mut terms = Vec::new();
    for pmu in pmus {
        let Some(pmu_model) = core_type_of(&pmu.name).and(model_of_pmu(database, model, pmu))
        else {
            continue;
        };
        let own = if pmu_model == model {
            resolved.terms.clone()
        } else {
            // An event the other core's table lacks is not opened there, as perf does not.
            match encoded_on(pmu_model, event, database, accepts, &encode) {
                Some(other) => other?,
                None => continue,
            }
        };
        terms.extend(on_pmu(pmu, own));
    }
    if terms.is_empty() {
        return Ok(resolved);
    }
    let mut resolved = resolved;
    resolved.terms = terms;
    Ok(resolved)
}

/// `event`, which model `model` does not read, on each Intel hybrid core PMU of `pmus` whose
/// core's table does (`CPU_CLK_UNHALTED.CORE`, an Atom core's name, on cpu_atom alone where
/// `model` is `adl_glc`, as perf 6.1 opens it: see the module's documentation), encoded as
/// [`place_on_core_pmus`] encodes it; `None` where no other core's table reads it.
///
/// # Errors
/// As `encode` refuses another core's encoding of the event.
pub(crate) fn on_other_cores(
    event: &str,
    pmus: &[Pmu],
    database: &Database,
    model: Option<&str>,
    accepts: &Accepts,
    encode: impl Fn(&EventRequest) -> Result<PerfAttr>,
) -> Option<Result<ResolvedEvent>> {
    if !pmus.iter().any(|pmu| core_type_of(&pmu.name).is_some()) {
        return None;
    }
    let model = model.and_then(|m| database.model_id(m))?;
    let mut terms = Vec::new();
    for pmu in pmus {
        let Some(pmu_model) = core_type_of(&pmu.name).and(model_of_pmu(database, model, pmu))
        else {
            continue;
        };
        if pmu_model == model {
            continue;
        }
        match encoded_on(pmu_model, event, database, accepts, &encode)? {
            Ok(other) => terms.extend(on_pmu(pmu, other)),
            Err(error) => return Some(Err(error)),
        }
    }
    (!terms.is_empty()).then(|| Ok(ResolvedEvent::new(event, terms, None)))
}

/// The terms of `event` on model `pmu_model`, each a raw perf attr made by `encode`; `None`
/// where the model does not read `event` or a term is no raw attr.
fn encoded_on(
    pmu_model: &str,
    event: &str,
    database: &Database,
    accepts: &Accepts,
    encode: &impl Fn(&EventRequest) -> Result<PerfAttr>,
) -> Option<Result<Vec<Term>>> {
    let resolved = database
        .resolve_exact(Some(pmu_model), event, accepts)
        .ok()?;
    let mut terms = resolved.terms;
    for term in &mut terms {
        match encode(&term.request) {
            Ok(attr) => term.request.encoding = Encoding::Perf(attr),
            Err(error) => return Some(Err(error)),
        }
    }
    let raw = |term: &Term| matches!(&term.request.encoding, Encoding::Perf(attr) if attr.type_ == TYPE_RAW);
    terms.iter().all(raw).then_some(Ok(terms))
}

/// `terms` given `pmu`'s type and name, each named `pmu/NAME/`.
fn on_pmu(pmu: &Pmu, mut terms: Vec<Term>) -> Vec<Term> {
    for term in &mut terms {
        if let Encoding::Perf(attr) = &mut term.request.encoding {
            attr.type_ = pmu.type_;
            attr.pmu = Some(pmu.name.clone());
        }
        term.request.name = format!("{}/{}/", pmu.name, term.request.name);
    }
    terms
}

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal_hal::{Domain, Family};
    use std::path::Path;

    /// An event select as the backend programs it (a raw perf attr); a perf attr as it is.
    fn encode(request: &EventRequest) -> Result<PerfAttr> {
        match &request.encoding {
            Encoding::Evtsel(evtsel) => crate::raw::raw_attr(&request.name, evtsel),
            Encoding::Perf(attr) => Ok(attr.clone()),
            other => panic!("{other}"),
        }
    }

    fn adl() -> Vec<Pmu> {
        let devices = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/machines/adl/bus/event_source/devices");
        let devices = counterhal_system::PmuDevices::at(&devices);
        crate::pmus::hybrid_of(crate::pmus::core_pmus(&devices))
    }

    /// (PMU, type, config) of each term of `event` on `model` over the adl tree's core PMUs.
    fn placed(model: &str, event: &str) -> Vec<(String, u32, u64)> {
        let database = Database::shipped().unwrap();
        let accepts = Accepts::new(&[Family::Perf, Family::Evtsel], Domain::ALL, Domain::ALL);
        let mut resolved = database
            .resolve_exact(Some(model), event, &accepts)
            .unwrap();
        for term in &mut resolved.terms {
            term.request.encoding = Encoding::Perf(encode(&term.request).unwrap());
        }
        let resolved = place_on_core_pmus(
            event,
            resolved,
            &adl(),
            &database,
            Some(model),
            &accepts,
            encode,
        )
        .unwrap();
        resolved
            .terms
            .iter()
            .map(|term| match &term.request.encoding {
                Encoding::Perf(attr) => (
                    attr.pmu.clone().unwrap_or_default(),
                    attr.type_,
                    attr.config,
                ),
                other => panic!("{event}: {other}"),
            })
            .collect()
    }

    /// Oracle: perf 6.1 under the adl tree (`PERF_CPUID=GenuineIntel-6-97-2`, see the
    /// module's documentation): `INST_RETIRED.ANY` opens event 0xc0 on cpu_core (type 4) and
    /// on cpu_atom (type 10); `CPU_CLK_UNHALTED.CORE`, which only the Atom cores' table
    /// names, event 0x3c on cpu_atom alone.
    #[test]
    fn an_event_opens_on_each_core_pmu_whose_table_has_it() {
        assert_eq!(
            placed("adl_glc", "INST_RETIRED.ANY"),
            [
                ("cpu_atom".to_string(), 10, 0xc0),
                ("cpu_core".to_string(), 4, 0xc0)
            ]
        );
        assert_eq!(
            placed("adl_grt", "CPU_CLK_UNHALTED.CORE"),
            [("cpu_atom".to_string(), 10, 0x3c)]
        );
        // An event only the Atom cores' table reads, named for the Core cores' model, opens
        // on cpu_atom alone; one neither reads, nowhere.
        let database = Database::shipped().unwrap();
        let accepts = Accepts::new(&[Family::Perf, Family::Evtsel], Domain::ALL, Domain::ALL);
        let other = |event: &str| {
            on_other_cores(event, &adl(), &database, Some("adl_glc"), &accepts, encode)
                .map(|r| r.unwrap())
        };
        let atom = other("CPU_CLK_UNHALTED.CORE").unwrap();
        let Encoding::Perf(attr) = &atom.terms[0].request.encoding else {
            panic!("not a perf attr");
        };
        assert_eq!((atom.terms.len(), attr.type_, attr.config), (1, 10, 0x3c));
        assert!(other("NO_SUCH.EVENT").is_none());
        // A machine with one kind of core keeps the raw type.
        let resolved = database
            .resolve_exact(Some("adl_glc"), "r00c0", &accepts)
            .unwrap();
        let kept = place_on_core_pmus(
            "r00c0",
            resolved.clone(),
            &[],
            &database,
            Some("adl_glc"),
            &accepts,
            encode,
        )
        .unwrap();
        assert_eq!(kept, resolved);
        assert_eq!(core_type_of("cpu"), None);
    }
}
