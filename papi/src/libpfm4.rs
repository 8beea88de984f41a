//! What libpfm4 detects on this machine, which PAPI 7.0 shows through it: the core PMU it
//! programs the CPU model through (component 0's "PMUs supported"), and whether its `perf::`
//! events take the hypervisor level. Derived from the event database's model and facts of
//! libpfm4's sources, each named; nothing here calls libpfm4.

use std::cell::OnceCell;

/// CPU models that libpfm4 programs through a core PMU of another name, each with the
/// evidence: libpfm4's `icl_models` (lib/pfmlib_intel_icl.c) lists Tiger Lake (140, 141) and
/// Rocket Lake (167).
const LIBPFM4_PMU_OF: [(&str, &str); 2] = [("rkl", "icl"), ("tgl", "icl")];

/// The core PMU libpfm4 detects on a CPU of model `model` (a database id), by libpfm4's
/// name: the model's own where libpfm4 has a PMU of its id or of one of its aliases, else the
/// PMU libpfm4 programs it through; `None` where libpfm4 knows no core PMU for it.
pub fn core_pmu(model: &counterhal_events::CpuModel) -> Option<&'static str> {
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
/// do not. Decided at the first question, for the CPU this process runs on, and kept by its
/// holder (the library's value).
#[derive(Default)]
pub struct HypervisorLevel(OnceCell<bool>);

impl HypervisorLevel {
    /// Whether the hypervisor level is filtered here (the type's note).
    pub fn filtered(&self) -> bool {
        *self.0.get_or_init(decide)
    }
}

/// Whether libpfm4's perf PMU takes the hypervisor level on this machine ([`HypervisorLevel`]).
fn decide() -> bool {
    let Ok(context) = facade::Context::new(None, None) else {
        return true;
    };
    let pmu = context
        .model()
        .and_then(|id| context.database().model(id))
        .and_then(core_pmu);
    match pmu {
        None => true,
        Some(name) => name.starts_with("amd64_fam"),
    }
}
