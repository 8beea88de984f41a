//! Component 0's description as PAPI 7.0's perf_event component gives it: its names and
//! versions, its capability bits, and the hardware counters it has.

use facade::Chosen;

use crate::info::{ComponentInfo, set_str};

/// Fills component 0's names, description and versions for backend `backend`: for a backend
/// over Linux's `perf_event_open` (`perf_event`), PAPI 7.0's perf_event component's (`perf_event`, short `perf`, "Linux perf_event
/// CPU counters", version 5.0, support version 4.0, as Debian's PAPI 7.0 answers
/// `PAPI_get_component_info(0)`), which tools print and parse; for another backend, its name
/// and counterhal's version.
pub fn describe_component(info: &mut ComponentInfo, backend: &str, perf_event: bool) {
    match backend {
        _ if perf_event => {
            set_str(&mut info.name, "perf_event");
            set_str(&mut info.short_name, "perf");
            set_str(&mut info.description, "Linux perf_event CPU counters");
            set_str(&mut info.version, "5.0");
            set_str(&mut info.support_version, "4.0");
        }
        other => {
            set_str(&mut info.name, other);
            set_str(&mut info.short_name, other);
            set_str(
                &mut info.description,
                &format!("counterhal's {other} backend"),
            );
            set_str(&mut info.version, env!("CARGO_PKG_VERSION"));
        }
    }
}

/// Component 0's capability bits (`PAPI_component_info_t`'s bit fields, `hardware_intr` bit 0
/// to `inherit` bit 12) from what the backend can do, set as PAPI 7.0's perf_event component
/// sets them on Linux (the side-by-side test compares them): overflow interrupts and kernel
/// profiling where the backend samples, attach where it counts another thread, and then
/// `attach_must_ptrace` (PAPI's tests stop and continue an attached child with ptrace only
/// when it is set, and wait for it forever otherwise), unit masks always (the enumeration
/// lists them).
pub fn component_flags(capabilities: &counterhal_hal::Capabilities) -> u32 {
    let targets = &capabilities.targets();
    let bits = [
        (0, capabilities.sampling()),     // hardware_intr
        (3, capabilities.sampling()),     // kernel_profile
        (4, capabilities.multiplexing()), // kernel_multiplex
        (8, targets.attach),              // attach
        (9, targets.attach),              // attach_must_ptrace
        (10, true),                       // cntr_umasks
        (11, targets.cpu),                // cpu
        (12, targets.inherit),            // inherit
    ];
    bits.iter()
        .fold(0, |flags, &(bit, on)| flags | (u32::from(on) << bit))
}

/// The hardware counters component 0 has: the backend's count where it knows it, else (perf
/// schedules its counters itself) the CPU model's from the event database when the core PMU
/// counts here (its cycles open), else none.
pub fn hardware_counters(chosen: &Chosen) -> u32 {
    let capabilities = chosen.backend().dyn_capabilities();
    if let Some(general) = capabilities.general_counters() {
        return general + capabilities.fixed_counters();
    }
    let model = chosen
        .context()
        .model()
        .and_then(|id| chosen.context().database().model(id));
    match model {
        Some(model) if facade::query(chosen.backend(), "cpu-cycles").usable() => {
            model.pmu.general_counters + model.pmu.fixed_counters
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::component_flags;
    use counterhal_hal::{Accepts, Capabilities, Domain, Family, Scope, TargetSupport};

    /// The bits land where `PAPI_component_info_t`'s bit fields are (papi.h: `hardware_intr`
    /// bit 0, `kernel_profile` 3, `kernel_multiplex` 4, `attach` 8, `attach_must_ptrace` 9,
    /// `cntr_umasks` 10, `cpu` 11, `inherit` 12), each from its capability.
    #[test]
    fn component_flags_follow_the_backend() {
        let accepts = Accepts::new(&[Family::Evtsel], Domain::USER, Domain::USER);
        let bare = Capabilities::new(accepts.clone(), Scope::SystemWidePerCpu);
        assert_eq!(component_flags(&bare), 1 << 10);
        let mut linux = Capabilities::new(accepts, Scope::PerProcess);
        linux.set_sampling(true);
        linux.set_multiplexing(true);
        let mut targets = TargetSupport::NONE;
        (targets.attach, targets.cpu, targets.inherit) = (true, true, true);
        linux.set_targets(targets);
        assert_eq!(
            component_flags(&linux),
            (1 << 0)
                | (1 << 3)
                | (1 << 4)
                | (1 << 8)
                | (1 << 9)
                | (1 << 10)
                | (1 << 11)
                | (1 << 12)
        );
    }
}
