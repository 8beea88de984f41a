//! Core events of the CPU model by name inside the core PMU's terms, as perf 6.1 reads its JSON
//! events there: perf gives the core PMU every core event of the model's table as an alias
//! (`pmu_add_cpu_aliases`), so `cpu/OCR.DEMAND_RFO.L3_MISS,offcore_rsp=0x103b800002/` (what
//! Intel perfmon's converter writes for a metric's `:ocr_msr_val=`) or
//! `cpu/de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6/` (AMD's metrics) is the named
//! event's terms followed by the others, each format term setting its bits over the event's
//! without clearing them, as [`pmu_events`] reads an alias and the terms after it.
//!
//! The core PMU is the one that takes raw events (`type` 4: `cpu`, or `cpu_core` on a hybrid
//! chip), or `cpu_atom` on an Intel hybrid chip, whose terms name the events of the Atom
//! cores' table (perf 6.1 under the adl tree, `PERF_CPUID=GenuineIntel-6-97-2`:
//! `cpu_atom/CPU_CLK_UNHALTED.CORE/` is `cpu_atom/event=0x3c/`; see
//! [`crate::intel_hybrid`]); a term is taken for an event of the model only where it is neither a format field
//! nor an `events/` alias of that PMU, and the event is one event select: its config and
//! config1 as [`raw_attr`] programs them (the kernel's codes of the fixed counters, the extra
//! MSR's value in config1).

use counterhal_system::PmuDevices;

use counterhal_events::Database;
use counterhal_hal::{Accepts, Domain, Encoding, Family, Result};

use crate::intel_hybrid::model_of_pmu;
use crate::pmus::{PmuEvent, find_pmus, pmu_events};
use crate::raw::raw_attr;

/// Every open of `event` (`pmu/TERMS/modifiers`) where a bare term of TERMS names a core
/// event of CPU model `model` on a core PMU of `devices` (see the module's documentation): the
/// term replaced by the event's `config` and `config1`, read by [`pmu_events`]; `None` where
/// `event` is not in that form, names no core PMU, or no term of it names such an event (the
/// caller reads it otherwise).
///
/// # Errors
/// As [`pmu_events`] refuses the rewritten terms.
pub fn core_pmu_events(
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
    let (pmu_part, rest) = event.split_once('/')?;
    let (terms, modifiers) = rest.rsplit_once('/')?;
    let accepts = Accepts::new(&[Family::Evtsel], Domain::ALL, Domain::ALL);
    let mut opens = Vec::new();
    let mut first_error = None;
    for pmu in find_pmus(devices, pmu_part) {
        // The raw PMU reads the model's events; an Intel hybrid core PMU, its core's.
        let Some(pmu_model) = model_of_pmu(database, model, &pmu) else {
            continue;
        };
        let mut named = false;
        let written: Vec<String> = terms
            .split(',')
            .map(|term| {
                let plain = term.contains('=')
                    || term.is_empty()
                    || matches!(pmu.format(term), Ok(Some(_)))
                    || !matches!(pmu.alias(term), Ok(None));
                if plain {
                    return term.to_string();
                }
                let Ok(resolved) = database.resolve_exact(Some(pmu_model), term, &accepts) else {
                    return term.to_string();
                };
                let [only] = resolved.terms.as_slice() else {
                    return term.to_string();
                };
                let Encoding::Evtsel(evtsel) = &only.request.encoding else {
                    return term.to_string();
                };
                let Ok(attr) = raw_attr(term, evtsel) else {
                    return term.to_string();
                };
                named = true;
                match attr.config1 {
                    0 => format!("config={:#x}", attr.config),
                    config1 => format!("config={:#x},config1={config1:#x}", attr.config),
                }
            })
            .collect();
        if !named {
            continue;
        }
        let on_pmu = format!("{}/{}/{modifiers}", pmu.name, written.join(","));
        match pmu_events(devices, &on_pmu) {
            Some(Ok(events)) => opens.extend(events),
            Some(Err(error)) => _ = first_error.get_or_insert(error),
            None => {}
        }
    }
    match (opens.is_empty(), first_error) {
        (true, None) => None,
        (true, Some(error)) => Some(Err(error)),
        (false, _) => Some(Ok(opens)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn devices(machine: &str) -> PmuDevices {
        PmuDevices::at(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/machines")
                .join(machine)
                .join("bus/event_source/devices"),
        )
    }

    fn configs(machine: &str, model: &str, event: &str) -> Option<Result<Vec<(u64, u64)>>> {
        let db = Database::shipped().unwrap();
        core_pmu_events(&devices(machine), &db, Some(model), event).map(|opened| {
            opened.map(|events| {
                events
                    .iter()
                    .map(|e| (e.attr.config, e.attr.config1))
                    .collect()
            })
        })
    }

    /// Oracle: perf 6.1 under the Sapphire Rapids tree with `PERF_CPUID=GenuineIntel-6-8F-8`:
    /// `perf stat -e 'cpu/INST_RETIRED.ANY/'` opens config 0xc0 (its JSON's fixed-counter
    /// code), and `cpu/OCR.DEMAND_RFO.L3_MISS,offcore_rsp=0x103b800002/` the alias's
    /// offcore_rsp with the given one's bits set over it; and under the Zen 4 tree
    /// (`AuthenticAMD-25-11-1`), `cpu/ex_ret_instr,cmask=0x1/` event 0xc0 with counter mask 1.
    #[test]
    fn a_core_event_of_the_model_is_an_alias_of_the_core_pmu() {
        assert_eq!(
            configs("spr-2s", "spr", "cpu/INST_RETIRED.ANY/")
                .unwrap()
                .unwrap(),
            [(0xc0, 0)]
        );
        let ocr = configs(
            "spr-2s",
            "spr",
            "cpu/OCR.DEMAND_RFO.L3_MISS,offcore_rsp=0x103b800002/",
        )
        .unwrap()
        .unwrap();
        // The alias's 0x3f3fc00002 holds every bit of the given value already.
        assert_eq!(ocr, [(0x12a, 0x3f3fc00002)]);
        assert_eq!(
            configs("zen4", "amd64_fam19h_zen4", "cpu/ex_ret_instr,cmask=0x1/")
                .unwrap()
                .unwrap(),
            [(0x10000c0, 0)]
        );
        // The PMU's own aliases and fields, and other PMUs, are not the model's events.
        assert!(configs("spr-2s", "spr", "cpu/instructions/").is_none());
        assert!(configs("spr-2s", "spr", "cpu/event=0xc0/").is_none());
        assert!(configs("spr-2s", "spr", "msr/tsc/").is_none());
        assert!(configs("spr-2s", "spr", "cpu/NO_SUCH_EVENT/").is_none());
        assert!(configs("spr-2s", "spr", "INST_RETIRED.ANY").is_none());
        // Alder Lake's Atom cores' PMU reads the Atom cores' table (perf 6.1 under the adl
        // tree with PERF_CPUID=GenuineIntel-6-97-2), whichever core's model is named.
        for model in ["adl_glc", "adl_grt"] {
            assert_eq!(
                configs("adl", model, "cpu_atom/CPU_CLK_UNHALTED.CORE/")
                    .unwrap()
                    .unwrap(),
                [(0x3c, 0)],
                "{model}"
            );
        }
        // A term the event's field cannot hold is refused as perf refuses it.
        assert!(
            configs("spr-2s", "spr", "cpu/INST_RETIRED.ANY,cmask=0x100/")
                .unwrap()
                .is_err()
        );
    }
}
