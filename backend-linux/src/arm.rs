//! Arm PMUv3 events on a big.LITTLE system: one core PMU per kind of core
//! (`armv8_cortex_a53`, `armv8_cortex_a72`), each with its own dynamic type and `cpus`. The
//! event database encodes an Arm core's native event as a `PERF_TYPE_RAW` attr, which the
//! kernel gives to the first core PMU that takes it (`perf_init_event` tries them in turn), so
//! that a process's event would count only while it runs on that PMU's CPUs, whatever its
//! table. Here such an event goes to the core PMU whose CPUs are of its table's core (by the
//! MIDR of the PMU's first CPU), as perf opens `armv8_cortex_a53/event=0x8/`: the arm_pmu
//! driver maps an attr of its own type as it maps a raw one (`armpmu_map_event` in
//! `drivers/perf/arm_pmu.c`).

use counterhal_events::{CpuIdentity, Database};
use counterhal_hal::{Encoding, ResolvedEvent};
use counterhal_system::System;

use crate::pmus::Pmu;

/// `PERF_TYPE_RAW`.
const TYPE_RAW: u32 = 4;

/// The database model id of the CPUs `pmu` counts on, by the MIDR of its first CPU (from the
/// database's index: no model is parsed).
fn model_of<'d>(pmu: &Pmu, system: &System, database: &'d Database) -> Option<&'d str> {
    let cpu = *pmu.core_cpus().ok()??.first()?;
    let identity = CpuIdentity::from_midr(system.midr(cpu)?)?;
    database.detect_core_id(&identity, None)
}

/// Gives each raw term of `resolved` the dynamic type of the core PMU (of `pmus`, a hybrid
/// system's) whose CPUs are of model `model` (an Arm core's table: only an Arm CPU has a
/// MIDR); nothing changes elsewhere, or where no PMU's CPUs are of that model. Reads the
/// database's index only, so that no model is parsed for it.
pub(crate) fn place_on_core_pmu(
    resolved: &mut ResolvedEvent,
    pmus: &[Pmu],
    database: &Database,
    model: Option<&str>,
    system: &System,
) {
    let raw = |e: &Encoding| matches!(e, Encoding::Perf(attr) if attr.type_ == TYPE_RAW);
    if pmus.is_empty() || !resolved.terms.iter().any(|t| raw(&t.request.encoding)) {
        return;
    }
    let Some(model) = model.and_then(|id| database.model_id(id)) else {
        return;
    };
    let Some(pmu) = pmus
        .iter()
        .find(|pmu| model_of(pmu, system, database) == Some(model))
    else {
        return;
    };
    for term in &mut resolved.terms {
        if let Encoding::Perf(attr) = &mut term.request.encoding
            && attr.type_ == TYPE_RAW
        {
            attr.type_ = pmu.type_;
            attr.pmu = Some(pmu.name.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal_hal::Accepts;

    /// Oracle: the kernel's arm64 mapfile (Cortex-A53 is part 0xd03, Cortex-A72 0xd08) and the
    /// arm_pmu driver's sysfs layout (one `armv8_<core>` PMU per kind of core, its `type` and
    /// `cpus`; each CPU's `regs/identification/midr_el1`), here a big.LITTLE machine of four
    /// A53 and two A72 cores written out as sysfs shows it.
    #[test]
    fn raw_events_go_to_their_cores_pmu() {
        let root = std::env::temp_dir().join(format!("counterhal-arm-{}", std::process::id()));
        let devices = root.join("pmus");
        let cpus = root.join("devices/system/cpu");
        let system = System::host().with_sysfs(&root);
        for (name, type_, list) in [
            ("armv8_cortex_a53", 8, "0-3"),
            ("armv8_cortex_a72", 9, "4-5"),
        ] {
            std::fs::create_dir_all(devices.join(name)).unwrap();
            std::fs::write(devices.join(name).join("type"), format!("{type_}\n")).unwrap();
            std::fs::write(devices.join(name).join("cpus"), format!("{list}\n")).unwrap();
        }
        for (cpu, midr) in [(0, "0x00000000410fd034"), (4, "0x00000000410fd083")] {
            let dir = cpus.join(format!("cpu{cpu}/regs/identification"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("midr_el1"), format!("{midr}\n")).unwrap();
        }
        let pmus = crate::pmus::core_pmus(&counterhal_system::PmuDevices::at(&devices));
        assert_eq!(pmus.len(), 2);
        let database = Database::shipped().unwrap();
        let accepts = Accepts::new(
            &[counterhal_hal::Family::Perf],
            counterhal_hal::Domain::ALL,
            counterhal_hal::Domain::ALL,
        );
        for (model, type_, pmu) in [
            ("cortex-a53", 8, "armv8_cortex_a53"),
            ("cortex-a57-a72", 9, "armv8_cortex_a72"),
        ] {
            let mut resolved = database
                .resolve(Some(model), "INST_RETIRED:u", &accepts)
                .unwrap();
            place_on_core_pmu(&mut resolved, &pmus, &database, Some(model), &system);
            let Encoding::Perf(attr) = &resolved.terms[0].request.encoding else {
                panic!("{model}: not a perf attr");
            };
            assert_eq!((attr.type_, attr.config), (type_, 0x08), "{model}");
            assert_eq!(attr.pmu.as_deref(), Some(pmu), "{model}");
        }
        // A model no PMU's CPUs are of, and a machine with one core PMU, keep the raw type.
        let mut resolved = database
            .resolve(Some("neoverse-n1"), "INST_RETIRED", &accepts)
            .unwrap();
        place_on_core_pmu(
            &mut resolved,
            &pmus,
            &database,
            Some("neoverse-n1"),
            &system,
        );
        place_on_core_pmu(&mut resolved, &[], &database, Some("cortex-a53"), &system);
        let Encoding::Perf(attr) = &resolved.terms[0].request.encoding else {
            panic!("not a perf attr");
        };
        assert_eq!(attr.type_, TYPE_RAW);
        let _ = std::fs::remove_dir_all(root);
    }
}
