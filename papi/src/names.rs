//! Event names and codes: PAPI's presets (`0x80000000 | index`) and native events
//! (`0x40000000 | index` into a table filled as names are enumerated or looked up), and the
//! translation of PAPI's `perf::` names into the backend's.

use counterhal_hal::GeneralizedEvent;

use crate::libpfm4::HypervisorLevel;
use crate::perf_natives::{self, Placement, strip_perf};
use crate::presets::presets;
use crate::sys::pfm::Libpfm;

/// The preset bit of an event code.
pub const PRESET_MASK: u32 = 0x8000_0000;
/// The native bit of an event code.
pub const NATIVE_MASK: u32 = 0x4000_0000;

/// One native event the library has given a code.
#[derive(Clone, Debug)]
pub struct Native {
    /// The name PAPI's callers see (`perf::TASK-CLOCK`, `INST_RETIRED:ANY_P`).
    pub name: String,
    /// The name the backend resolves (`task-clock`).
    pub backend_name: String,
    /// Its description.
    pub description: String,
    /// Where its set must run (`perf::` qualifiers `pinned`, `excl`, `cpu`).
    pub placement: Placement,
    /// libsde's id of the counter, for an event of the `sde` component
    /// (`sde:::LIBRARY::COUNTER`); `None` for the backend's events.
    pub sde: Option<u32>,
    /// The event's index in the `powercap` component's (`powercap:::ENERGY_UJ:ZONE0`);
    /// `None` for other events.
    pub powercap: Option<u32>,
    /// Whether it is an event of the `perf_event_uncore` component
    /// (`skx_unc_imc0::UNC_M_CAS_COUNT:RD`).
    pub uncore: bool,
}

/// Whether a backend name gives its privilege levels itself (`u`, `k`, `h` in any form):
/// then the set's domain does not apply to it, as PAPI 7.0 lets an event's qualifiers win.
pub fn gives_levels(backend_name: &str) -> bool {
    match counterhal_events::parse_event(backend_name) {
        Ok(counterhal_events::ParsedEvent::Named(spec)) => spec.modifiers.has_levels(),
        Ok(
            counterhal_events::ParsedEvent::Raw { modifiers, .. }
            | counterhal_events::ParsedEvent::PmuTerms { modifiers, .. },
        ) => modifiers.has_levels(),
        Err(_) => false,
    }
}

/// The software PMUs the kernel lists beside the hardware ones; they filter privilege levels
/// as the core PMU does.
const SOFTWARE_PMUS: [&str; 5] = ["software", "tracepoint", "breakpoint", "kprobe", "uprobe"];

/// Whether a backend name in perf's PMU syntax (`msr/tsc/`, `uncore_imc_0/event=0x4/`) names a
/// PMU that filters no privilege level: one in the kernel's PMU directory that is neither a
/// core PMU (`cpu`, or one with a `cpus` file, as perf's `is_pmu_core` finds them) nor a
/// software one. The kernel's msr, power (RAPL) and uncore drivers declare
/// `PERF_PMU_CAP_NO_EXCLUDE` (arch/x86/events/msr.c, rapl.c, intel/uncore.c) and refuse any
/// `exclude_*` bit, so the set's domain does not apply to such a name, as PAPI 7.0's
/// perf_event_uncore component opens every event at all levels.
pub fn counts_every_level(system: &counterhal_system::System, backend_name: &str) -> bool {
    match counterhal_events::parse_event(backend_name) {
        Ok(counterhal_events::ParsedEvent::PmuTerms { pmu, .. }) => {
            pmu_filters_no_level(system, &pmu)
        }
        _ => false,
    }
}

/// Whether PMU `pmu` of `system`'s PMU directory filters no privilege level (see
/// [`counts_every_level`]).
pub fn pmu_filters_no_level(system: &counterhal_system::System, pmu: &str) -> bool {
    pmu != "cpu"
        && !SOFTWARE_PMUS.contains(&pmu)
        && system
            .pmu(pmu)
            .is_some_and(|device| !device.lists_core_cpus())
}

/// The preset index of `name`, if it is one of PAPI 7.0's 108: `PAPI_` as written, the rest
/// in any case (papi.c `PAPI_event_name_to_code`: `strncmp` of the prefix, then `strcasecmp`;
/// `PAPI_tot_ins` is a preset there, `papi_tot_ins` is not).
pub fn preset_index(name: &str) -> Option<usize> {
    if !name.starts_with("PAPI_") {
        return None;
    }
    presets().position(|p| p.name().eq_ignore_ascii_case(name))
}

/// What PAPI's event code means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// A preset, by index.
    Preset(usize),
    /// A native event, by index in the table.
    Native(usize),
}

/// Decodes an event code (`None` for neither a preset nor a native code).
pub fn decode(code: i32) -> Option<Code> {
    let code = code as u32;
    if code & PRESET_MASK != 0 && code & NATIVE_MASK == 0 {
        let index = (code & !PRESET_MASK) as usize;
        return (index < presets().len()).then_some(Code::Preset(index));
    }
    if code & NATIVE_MASK != 0 && code & PRESET_MASK == 0 {
        return Some(Code::Native((code & !NATIVE_MASK) as usize));
    }
    None
}

/// The code of preset `index`.
pub fn preset_code(index: usize) -> i32 {
    (PRESET_MASK | index as u32) as i32
}

/// The code of native `index`.
pub fn native_code(index: usize) -> i32 {
    (NATIVE_MASK | index as u32) as i32
}

/// The backend's name for a PAPI native name: libpfm4's `perf::` events (`perf::TASK-CLOCK`,
/// `perf::PERF_COUNT_SW_PAGE_FAULTS`, `perf::CYCLES`) are perf's generalized events by
/// their perf names; other names are passed on as given.
pub fn backend_name(name: &str) -> String {
    let Some(rest) = strip_perf(name) else {
        return name.to_string();
    };
    let upper = rest.to_ascii_uppercase();
    let bare = upper
        .strip_prefix("PERF_COUNT_SW_")
        .or_else(|| upper.strip_prefix("PERF_COUNT_HW_"))
        .unwrap_or(&upper);
    let perf = bare.replace('_', "-").to_ascii_lowercase();
    match perf.as_str() {
        "cycles" => "cpu-cycles".to_string(),
        _ => perf,
    }
}

/// The native events listed for enumeration: perf's software and hardware generalized events
/// under their libpfm4 `perf::` names, then the CPU model's native events, each only where
/// this process can count it (asked by opening it once and closing it at once), so that a
/// machine whose PMU the kernel does not expose lists its software events alone.
pub fn listed(chosen: &facade::Chosen, hypervisor: &HypervisorLevel) -> Vec<Native> {
    let mut natives = Vec::new();
    if chosen.capabilities().programs(counterhal_hal::Family::Perf) {
        // libpfm4's perf_event PMU, whole, then its perf_raw PMU's one pseudo-event, as PAPI
        // 7.0 lists them whether or not the kernel has a PMU for their hardware events (their
        // adds then fail).
        for event in perf_natives::perf_natives().chain(perf_natives::perf_raw()) {
            natives.push(Native {
                name: event.name().to_string(),
                backend_name: perf_natives::read(event.name(), hypervisor)
                    .and_then(Result::ok)
                    .map_or_else(|| event.name().to_string(), |n| n.backend_name),
                description: event.description().to_string(),
                placement: Placement::default(),
                sde: None,
                powercap: None,
                uncore: false,
            });
        }
    } else {
        for event in GeneralizedEvent::all() {
            let description = match event {
                GeneralizedEvent::Software(_) => "perf software event",
                GeneralizedEvent::Hardware(_) => "perf generalized hardware event",
                _ => continue,
            };
            let perf = event.name().into_owned();
            if facade::query(chosen.backend(), &perf).usable() {
                natives.push(Native {
                    name: format!("perf::{}", perf.to_ascii_uppercase()),
                    backend_name: perf,
                    description: description.to_string(),
                    placement: Placement::default(),
                    sde: None,
                    powercap: None,
                    uncore: false,
                });
            }
        }
    }
    let context = chosen.context();
    if let Some(model) = context.model().and_then(|id| context.database().model(id)) {
        for event in model.events() {
            if event.flags.deprecated || !facade::query(chosen.backend(), &event.name).usable() {
                continue;
            }
            natives.push(Native {
                name: event.name.clone(),
                backend_name: event.name.clone(),
                description: event.description.clone(),
                placement: Placement::default(),
                sde: None,
                powercap: None,
                uncore: false,
            });
        }
    }
    natives
}

/// Splits `pmu::EVENT:UMASK` (the PMU prefix optional) into `pmu::EVENT` and the unit mask.
pub fn split_unit_mask(name: &str) -> (&str, Option<&str>) {
    let start = name.rfind("::").map_or(0, |p| p + 2);
    match name[start..].find(':') {
        Some(at) => (&name[..start + at], Some(&name[start + at + 1..])),
        None => (name, None),
    }
}

/// The CPU model's native event named in `name` (its PMU prefix and unit mask aside): its
/// description and its unit masks (name, description) in the table's order. The shipped
/// data holds no prose: where the database has none, the descriptions are libpfm4's, read
/// from the libpfm4 installed here as PAPI 7.0 shows them (`papi/src/sys/pfm.rs`).
pub fn model_event(
    chosen: &facade::Chosen,
    libpfm: &Libpfm,
    name: &str,
) -> Option<(String, Vec<(String, String)>)> {
    let context = chosen.context();
    let model = context
        .model()
        .and_then(|id| context.database().model(id))?;
    let (event, _) = split_unit_mask(name);
    let base = event.rsplit("::").next().unwrap_or(event);
    let found = model
        .events()
        .iter()
        .find(|e| e.name.eq_ignore_ascii_case(base))?;
    let mut masks: Vec<(String, String)> = found
        .unit_masks()
        .iter()
        .map(|u| (u.name.clone(), u.description.clone()))
        .collect();
    let mut description = found.description.clone();
    if description.is_empty()
        && let Some((text, theirs)) = crate::libpfm4::core_pmu(model)
            .and_then(|pmu| crate::sys::pfm::describe(libpfm, pmu, &found.name))
    {
        description = text;
        for (mask, text) in masks.iter_mut().filter(|(_, t)| t.is_empty()) {
            if let Some((_, theirs)) = theirs.iter().find(|(m, _)| m.eq_ignore_ascii_case(mask)) {
                text.clone_from(theirs);
            }
        }
    }
    Some((description, masks))
}

/// A native event's description as PAPI's perf_event component gives it: the event's, then
/// `, masks:` and the unit mask's when one is named (papi_native_avail prints what follows
/// `masks:` as the unit mask's description).
pub fn describe(
    chosen: &facade::Chosen,
    libpfm: &Libpfm,
    hypervisor: &HypervisorLevel,
    name: &str,
) -> String {
    if let Some((event, after)) = perf_natives::event_of(name) {
        return describe_perf(&event, after, hypervisor);
    }
    let Some((description, masks)) = model_event(chosen, libpfm, name) else {
        return String::new();
    };
    match split_unit_mask(name)
        .1
        .and_then(|u| masks.iter().find(|(m, _)| m.eq_ignore_ascii_case(u)))
    {
        Some((_, mask)) => format!("{description}, masks:{mask}"),
        None => description,
    }
}

/// A `perf::` or `perf_raw::` event's description: libpfm4's, then `, masks:` and the
/// descriptions of the unit masks and qualifiers named after the event (`after`), joined by
/// `:`, as PAPI 7.0 describes `perf::TASK-CLOCK:u=1:period=10` ("PERF_COUNT_SW_TASK_CLOCK,
/// masks:monitor at user level:sampling period").
fn describe_perf(
    event: &perf_natives::PerfNative,
    after: Option<&str>,
    hypervisor: &HypervisorLevel,
) -> String {
    let described: Vec<&str> = after
        .into_iter()
        .flat_map(|after| after.split(':'))
        .filter_map(|part| {
            let key = part.split('=').next().unwrap_or(part);
            event
                .unit_masks()
                .chain(perf_natives::qualifiers(event, hypervisor))
                .find(|(m, _)| *m == key)
                .map(|(_, description)| description)
        })
        .collect();
    if described.is_empty() {
        event.description().to_string()
    } else {
        format!("{}, masks:{}", event.description(), described.join(":"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// libpfm4's perf PMU names (`perf::TASK-CLOCK`, `perf::PERF_COUNT_SW_PAGE_FAULTS`) reach
    /// perf's names (the oracle: perf's own event list, `perf list sw`).
    #[test]
    fn perf_names_become_perf_events() {
        assert_eq!(backend_name("perf::TASK-CLOCK"), "task-clock");
        assert_eq!(backend_name("perf::PAGE-FAULTS"), "page-faults");
        assert_eq!(
            backend_name("perf::PERF_COUNT_SW_PAGE_FAULTS"),
            "page-faults"
        );
        assert_eq!(
            backend_name("perf::PERF_COUNT_HW_INSTRUCTIONS"),
            "instructions"
        );
        assert_eq!(backend_name("perf::CYCLES"), "cpu-cycles");
        assert_eq!(backend_name("INST_RETIRED:ANY_P"), "INST_RETIRED:ANY_P");
    }

    /// PAPI's native names: an optional `pmu::` prefix, the event, an optional `:UMASK`.
    #[test]
    fn unit_masks_split_from_names() {
        assert_eq!(
            split_unit_mask("INST_RETIRED:ANY_P"),
            ("INST_RETIRED", Some("ANY_P"))
        );
        assert_eq!(
            split_unit_mask("icl::INST_RETIRED:ANY_P"),
            ("icl::INST_RETIRED", Some("ANY_P"))
        );
        assert_eq!(
            split_unit_mask("perf::TASK-CLOCK"),
            ("perf::TASK-CLOCK", None)
        );
        assert_eq!(
            split_unit_mask("BR_INST_RETIRED"),
            ("BR_INST_RETIRED", None)
        );
    }

    /// Codes round-trip, and codes of neither kind are refused.
    #[test]
    fn codes_decode() {
        assert_eq!(decode(preset_code(0x32)), Some(Code::Preset(0x32)));
        assert_eq!(preset_code(0x32) as u32, 0x8000_0032);
        assert_eq!(decode(native_code(5)), Some(Code::Native(5)));
        assert_eq!(decode(preset_code(108)), None);
        assert_eq!(decode(0), None);
        assert_eq!(decode(-1), None);
    }
}
