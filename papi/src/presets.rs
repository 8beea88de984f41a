//! PAPI 7.0's 108 presets in the order of their codes (`0x80000000 | index`), as the
//! interface defines them: the shipped tables' (`events/data/papi/presets.toml`, generated from
//! PAPI by `papi/gen/presets.c`); `include/papiStdEventDefs.h` holds the same list.

pub use counterhal_events::papi::{Preset, preset, presets};

/// The perf generalized event that counts the same as a preset on every core PAPI maps it
/// on: asked for where the backend maps the preset to nothing (an Arm core whose event table
/// carries no presets, as Neoverse N1's), so that `PAPI_TOT_INS` and `PAPI_TOT_CYC` count
/// wherever the kernel counts `instructions` and `cycles`. On an Arm PMUv3 core PAPI 7.0 maps
/// them to `INST_RETIRED` and `CPU_CYCLES` (its `papi_events.csv`), which the kernel's PMUv3
/// driver counts for `instructions` and `cycles` (`armv8_pmuv3_perf_map`); the tests below
/// check both, and the aarch64 lab counts them (`validation_tests/papi_tot_ins`).
pub fn perf_twin(preset: &str) -> Option<&'static str> {
    match preset {
        "PAPI_TOT_INS" => Some("instructions"),
        "PAPI_TOT_CYC" => Some("cycles"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal_conformance::skip;
    use counterhal_conformance::skip::Need;

    const PAPI_EVENTS: &str = "/usr/share/papi/7.0/papi_events.csv";

    /// The native event each `CPU,arm_*` section of PAPI's preset table maps `preset` to.
    fn arm_mappings(table: &str, preset: &str) -> Vec<(String, String)> {
        let mut cpus: Vec<String> = Vec::new();
        let mut in_presets = false;
        let mut found = Vec::new();
        for line in table.lines() {
            let fields: Vec<&str> = line.split(',').collect();
            match fields.first() {
                Some(&"CPU") if fields.len() > 1 => {
                    if in_presets {
                        cpus.clear();
                        in_presets = false;
                    }
                    cpus.push(fields[1].to_string());
                }
                Some(&"PRESET") if fields.len() > 3 => {
                    in_presets = true;
                    if fields[1] == preset {
                        for cpu in cpus.iter().filter(|c| c.starts_with("arm_")) {
                            found.push((cpu.clone(), fields[3].to_string()));
                        }
                    }
                }
                _ => {}
            }
        }
        found
    }

    /// Oracle: PAPI 7.0's preset table (Debian's `papi_events.csv`): every Arm core with the
    /// PMUv3 event numbering (Cortex-A53, A57, X-Gene, ThunderX2; not the Armv7 A8 and A9, whose
    /// names differ) maps `PAPI_TOT_INS` to `INST_RETIRED` and `PAPI_TOT_CYC` to
    /// `CPU_CYCLES`, the native events [`perf_twin`]'s `instructions` and `cycles` count there.
    /// The HAL's presets (what `counterhal list` and the facade describe, and whose
    /// descriptions libpapi gives as the long ones) are PAPI 7.0's, one to one: oracle, the
    /// table generated from Debian's PAPI 7.0 (papi/tests/side_by_side.rs checks it against
    /// the library; the table writer stops where PAPI's long description of a preset is not
    /// the HAL's, gen/tests/tables.rs).
    #[test]
    fn the_hal_has_each_preset_of_papi_and_no_other() {
        assert_eq!(counterhal_hal::Preset::ALL.len(), presets().len());
        for preset in presets() {
            let name = preset.name();
            let hal = counterhal_hal::Preset::from_name(name).expect(name);
            assert_eq!(hal.name(), name);
            assert!(!preset.long_description().is_empty(), "{name}");
        }
    }

    #[test]
    fn papi_maps_the_twins_to_the_pmuv3_events_on_arm() {
        let Ok(table) = std::fs::read_to_string(PAPI_EVENTS) else {
            skip!(
                Need::Tools,
                "{PAPI_EVENTS} is absent (apt-get install libpapi7.0)"
            );
        };
        for (preset, native) in [
            ("PAPI_TOT_INS", "INST_RETIRED"),
            ("PAPI_TOT_CYC", "CPU_CYCLES"),
        ] {
            assert!(perf_twin(preset).is_some(), "{preset} has a twin");
            let mappings = arm_mappings(&table, preset);
            for cpu in ["arm_ac53", "arm_ac57", "arm_xgene", "arm_thunderx2"] {
                assert!(
                    mappings.contains(&(cpu.to_string(), native.to_string())),
                    "{preset} on {cpu} is {native} in PAPI's table: {mappings:?}"
                );
            }
        }
        assert_eq!(perf_twin("PAPI_L1_DCM"), None);
    }

    /// Oracle: the kernel's PMUv3 driver (`drivers/perf/arm_pmuv3.c` of Debian's
    /// linux-source-6.12): perf's generalized `cycles` and `instructions` are `CPU_CYCLES` and
    /// `INST_RETIRED` on every PMUv3 core.
    #[test]
    fn the_kernel_counts_the_twins_as_the_pmuv3_events() {
        let tree = match counterhal_conformance::fixtures::kernel_source() {
            Ok(tree) => tree,
            Err(why) => skip!(Need::Tools, "{why}"),
        };
        let source = std::fs::read_to_string(tree.join("drivers/perf/arm_pmuv3.c")).unwrap();
        let compact: String = source.split_whitespace().collect();
        for (twin, kernel, native) in [
            ("cycles", "PERF_COUNT_HW_CPU_CYCLES", "CPU_CYCLES"),
            ("instructions", "PERF_COUNT_HW_INSTRUCTIONS", "INST_RETIRED"),
        ] {
            assert!(
                compact.contains(&format!("[{kernel}]=ARMV8_PMUV3_PERFCTR_{native},")),
                "the PMUv3 driver maps {kernel} ({twin}) to {native}"
            );
        }
        assert_eq!(perf_twin("PAPI_TOT_CYC"), Some("cycles"));
        assert_eq!(perf_twin("PAPI_TOT_INS"), Some("instructions"));
    }
}
