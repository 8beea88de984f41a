//! What component 0's description says of the CPU model, as PAPI 7.0's perf_event component
//! says it: how many presets its table maps for the model (`num_preset_events`, whether or
//! not they count here: PAPI counts the presets whose native events libpfm4 knows on the
//! model), and the PMUs it programs (`pmu_names`): `perf` (the kernel's generalized and
//! software events) and the core PMU libpfm4 detects for the CPU model, under libpfm4's name
//! (`amd64_fam17h_zen2`; `icl` on a Rocket Lake, whose events counterhal's `rkl` model
//! holds), with libpfm4's `perf_raw` PMU (perf's raw syntax, `perf_raw::rc0`) between them,
//! as PAPI lists it.

use counterhal_hal::GeneralizedEvent;

use crate::library;
use crate::presets::presets;

/// The presets the event database maps for the chosen CPU model, and libpfm4's name for the
/// model's core PMU.
fn model_facts(chosen: &facade::Chosen) -> (i32, Option<String>) {
    let Some(model) = chosen
        .context()
        .model()
        .and_then(|id| chosen.context().database().model(id))
    else {
        return (0, None);
    };
    let presets = model
        .mappings()
        .iter()
        .filter(|m| match &m.event {
            GeneralizedEvent::Preset(_) => {
                let name = m.event.name();
                presets().any(|p| p.name() == name)
            }
            _ => false,
        })
        .count();
    (
        presets as i32,
        crate::libpfm4::core_pmu(model).map(str::to_string),
    )
}

/// Fills component 0's preset count and PMU names once the library is initialised (a no-op
/// before, and once filled).
pub fn fill_component_zero() {
    if crate::unlocked::init_state() == 0 {
        return;
    }
    let _ = library::with_kept(|library, kept| {
        fill_zero(library, kept);
        Ok(())
    });
}

/// Fills component 0's preset count and PMU names in `library` (at `PAPI_library_init`'s
/// set-up, under the library's lock), keeping the names in `kept`; once filled, or for a
/// disabled component, nothing.
pub fn fill_zero(library: &mut library::Library, kept: &mut crate::kept::Kept) {
    if library.component.pmu_names[0] != 0 || library.component.disabled != 0 {
        return;
    }
    let (presets, model) = model_facts(&library.chosen);
    library.component.num_preset_events = presets;
    // The PMU names, as C strings that live as long as the process.
    let names = ["perf", "perf_raw"].into_iter().chain(model.as_deref());
    for (slot, name) in library.component.pmu_names.iter_mut().zip(names) {
        *slot = kept.name(name).as_ptr() as usize;
    }
}
