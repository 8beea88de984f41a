//! What component 0's description says of the CPU model, as PAPI 7.0's perf_event component
//! says it: how many presets its table maps for the model (`num_preset_events`, whether or
//! not they count here: PAPI counts the presets whose native events libpfm4 knows on the
//! model), and the PMUs it programs (`pmu_names`): `perf` (the kernel's generalized and
//! software events) and the core PMU libpfm4 detects for the CPU model, under libpfm4's name
//! (`amd64_fam17h_zen2`; `icl` on a Rocket Lake, whose events counterhal's `rkl` model
//! holds). PAPI also lists libpfm4's `perf_raw` PMU; `perf_raw::` names are not taken here,
//! so it is not listed.

use std::ffi::CString;
use std::sync::OnceLock;
use std::sync::atomic::Ordering;

use counterhal_hal::GeneralizedEvent;

use crate::library;
use crate::presets::PRESETS;

/// CPU models that libpfm4 programs through a core PMU of another name, each with the
/// evidence: libpfm4's `icl_models` (lib/pfmlib_intel_icl.c) lists Tiger Lake (140, 141) and
/// Rocket Lake (167).
const LIBPFM4_PMU_OF: [(&str, &str); 2] = [("rkl", "icl"), ("tgl", "icl")];

/// The core PMU libpfm4 detects on a CPU of model `model` (a database id), by libpfm4's
/// name: the model's own where libpfm4 has a PMU of its id or of one of its aliases, else the
/// PMU libpfm4 programs it through; `None` where libpfm4 knows no core PMU for it.
pub fn libpfm4_core_pmu(model: &counterhal_events::CpuModel) -> Option<&'static str> {
    let names =
        || std::iter::once(model.id.as_str()).chain(model.aliases.iter().map(String::as_str));
    counterhal_events::Database::libpfm4_pmus()
        .find(|pmu| names().any(|n| n == *pmu))
        .or_else(|| {
            LIBPFM4_PMU_OF
                .iter()
                .find(|(id, _)| *id == model.id)
                .map(|(_, pmu)| *pmu)
        })
}

/// Whether libpfm4's perf PMU takes the hypervisor level here: it takes the levels of the
/// core PMU libpfm4 detects (`pfm_perf_pmu_supported_plm`), and its own (user, kernel and
/// hypervisor) where it detects none. AMD's PMUs from family 10h on filter the hypervisor
/// (`AMD64_FAM10H_PLM`); K7 and K8 (`AMD64_K7_PLM`) and Intel's x86 PMUs (`INTEL_X86_PLM`)
/// do not. Decided once, for the CPU this process runs on.
pub fn hypervisor_level_filtered() -> bool {
    static FILTERED: OnceLock<bool> = OnceLock::new();
    *FILTERED.get_or_init(|| {
        let Ok(context) = facade::Context::new(None, None) else {
            return true;
        };
        let pmu = context
            .model
            .as_deref()
            .and_then(|id| context.database.model(id))
            .and_then(libpfm4_core_pmu);
        match pmu {
            None => true,
            Some(name) => name.starts_with("amd64_fam"),
        }
    })
}

/// The presets the event database maps for the chosen CPU model, and libpfm4's name for the
/// model's core PMU.
fn model_facts(chosen: &facade::Chosen) -> (i32, Option<String>) {
    let Some(model) = chosen
        .context
        .model
        .as_deref()
        .and_then(|id| chosen.context.database.model(id))
    else {
        return (0, None);
    };
    let presets = model
        .mappings()
        .iter()
        .filter(|m| match &m.event {
            GeneralizedEvent::Preset(_) => PRESETS.contains(&m.event.name().as_ref()),
            _ => false,
        })
        .count();
    (presets as i32, libpfm4_core_pmu(model).map(str::to_string))
}

/// The PMU names, as C strings that live as long as the process.
fn pmu_names(model: Option<String>) -> &'static [CString] {
    static NAMES: OnceLock<Vec<CString>> = OnceLock::new();
    NAMES.get_or_init(|| {
        std::iter::once("perf".to_string())
            .chain(model)
            .filter_map(|n| CString::new(n).ok())
            .collect()
    })
}

/// Fills component 0's preset count and PMU names once the library is initialised (a no-op
/// before, and once filled).
pub fn fill_component_zero() {
    if library::INIT_STATE.load(Ordering::SeqCst) == 0 {
        return;
    }
    let _ = library::with(|library| {
        if library.component.pmu_names[0] != 0 || library.component.disabled != 0 {
            return Ok(());
        }
        let (presets, model) = model_facts(&library.chosen);
        library.component.num_preset_events = presets;
        for (slot, name) in library.component.pmu_names.iter_mut().zip(pmu_names(model)) {
            *slot = name.as_ptr() as usize;
        }
        Ok(())
    });
}
