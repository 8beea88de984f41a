//! PAPI 7.0's 108 presets in the order of their codes (`0x80000000 | index`), as the
//! interface defines them; `include/papiStdEventDefs.h` holds the same list.

/// The presets' names; a preset's code is `0x8000_0000 | index`.
pub const PRESETS: [&str; 108] = [
    "PAPI_L1_DCM",
    "PAPI_L1_ICM",
    "PAPI_L2_DCM",
    "PAPI_L2_ICM",
    "PAPI_L3_DCM",
    "PAPI_L3_ICM",
    "PAPI_L1_TCM",
    "PAPI_L2_TCM",
    "PAPI_L3_TCM",
    "PAPI_CA_SNP",
    "PAPI_CA_SHR",
    "PAPI_CA_CLN",
    "PAPI_CA_INV",
    "PAPI_CA_ITV",
    "PAPI_L3_LDM",
    "PAPI_L3_STM",
    "PAPI_BRU_IDL",
    "PAPI_FXU_IDL",
    "PAPI_FPU_IDL",
    "PAPI_LSU_IDL",
    "PAPI_TLB_DM",
    "PAPI_TLB_IM",
    "PAPI_TLB_TL",
    "PAPI_L1_LDM",
    "PAPI_L1_STM",
    "PAPI_L2_LDM",
    "PAPI_L2_STM",
    "PAPI_BTAC_M",
    "PAPI_PRF_DM",
    "PAPI_L3_DCH",
    "PAPI_TLB_SD",
    "PAPI_CSR_FAL",
    "PAPI_CSR_SUC",
    "PAPI_CSR_TOT",
    "PAPI_MEM_SCY",
    "PAPI_MEM_RCY",
    "PAPI_MEM_WCY",
    "PAPI_STL_ICY",
    "PAPI_FUL_ICY",
    "PAPI_STL_CCY",
    "PAPI_FUL_CCY",
    "PAPI_HW_INT",
    "PAPI_BR_UCN",
    "PAPI_BR_CN",
    "PAPI_BR_TKN",
    "PAPI_BR_NTK",
    "PAPI_BR_MSP",
    "PAPI_BR_PRC",
    "PAPI_FMA_INS",
    "PAPI_TOT_IIS",
    "PAPI_TOT_INS",
    "PAPI_INT_INS",
    "PAPI_FP_INS",
    "PAPI_LD_INS",
    "PAPI_SR_INS",
    "PAPI_BR_INS",
    "PAPI_VEC_INS",
    "PAPI_RES_STL",
    "PAPI_FP_STAL",
    "PAPI_TOT_CYC",
    "PAPI_LST_INS",
    "PAPI_SYC_INS",
    "PAPI_L1_DCH",
    "PAPI_L2_DCH",
    "PAPI_L1_DCA",
    "PAPI_L2_DCA",
    "PAPI_L3_DCA",
    "PAPI_L1_DCR",
    "PAPI_L2_DCR",
    "PAPI_L3_DCR",
    "PAPI_L1_DCW",
    "PAPI_L2_DCW",
    "PAPI_L3_DCW",
    "PAPI_L1_ICH",
    "PAPI_L2_ICH",
    "PAPI_L3_ICH",
    "PAPI_L1_ICA",
    "PAPI_L2_ICA",
    "PAPI_L3_ICA",
    "PAPI_L1_ICR",
    "PAPI_L2_ICR",
    "PAPI_L3_ICR",
    "PAPI_L1_ICW",
    "PAPI_L2_ICW",
    "PAPI_L3_ICW",
    "PAPI_L1_TCH",
    "PAPI_L2_TCH",
    "PAPI_L3_TCH",
    "PAPI_L1_TCA",
    "PAPI_L2_TCA",
    "PAPI_L3_TCA",
    "PAPI_L1_TCR",
    "PAPI_L2_TCR",
    "PAPI_L3_TCR",
    "PAPI_L1_TCW",
    "PAPI_L2_TCW",
    "PAPI_L3_TCW",
    "PAPI_FML_INS",
    "PAPI_FAD_INS",
    "PAPI_FDV_INS",
    "PAPI_FSQ_INS",
    "PAPI_FNV_INS",
    "PAPI_FP_OPS",
    "PAPI_SP_OPS",
    "PAPI_DP_OPS",
    "PAPI_VEC_SP",
    "PAPI_VEC_DP",
    "PAPI_REF_CYC",
];

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

/// Each preset's categories, `PAPI_PRESET_BIT_*` (`MSC` 0x8, `INS` 0x10, `IDL` 0x20, `BR` 0x40,
/// `CND` 0x80, `MEM` 0x100, `CACH` 0x200, `L1` 0x400, `L2` 0x800, `L3` 0x1000, `TLB` 0x2000, `FP`
/// 0x4000), in the order of [`PRESETS`]: `PAPI_event_info_t.event_type`, which `papi_avail` filters
/// on. papi/tests/side_by_side.rs compares each with Debian's PAPI 7.0.
pub const CATEGORIES: [u32; 108] = [
    0x0600, 0x0610, 0x0a00, 0x0a10, 0x1200, 0x1210, 0x0600, 0x0a00, 0x1200, 0x0200, 0x0200, 0x0200,
    0x0200, 0x0200, 0x1200, 0x1200, 0x0060, 0x0020, 0x4020, 0x0120, 0x2000, 0x2010, 0x2000, 0x0600,
    0x0600, 0x0a00, 0x0a00, 0x0040, 0x0200, 0x0a00, 0x2000, 0x0180, 0x0180, 0x0180, 0x0100, 0x0100,
    0x0100, 0x0010, 0x0010, 0x0010, 0x0010, 0x0008, 0x00c0, 0x00c0, 0x00c0, 0x00c0, 0x00c0, 0x00c0,
    0x4010, 0x0010, 0x0010, 0x0010, 0x4010, 0x0100, 0x0100, 0x0040, 0x0008, 0x0028, 0x4020, 0x0008,
    0x0110, 0x0018, 0x0600, 0x0a00, 0x0600, 0x0a00, 0x1200, 0x0600, 0x0a00, 0x1200, 0x0600, 0x0a00,
    0x1200, 0x0610, 0x0a10, 0x1210, 0x0610, 0x0a10, 0x1210, 0x0610, 0x0a10, 0x1210, 0x0610, 0x0a10,
    0x1210, 0x0600, 0x0a00, 0x1200, 0x0600, 0x0a00, 0x1200, 0x0600, 0x0a00, 0x1200, 0x0600, 0x0a00,
    0x1200, 0x4010, 0x4010, 0x4010, 0x4010, 0x4010, 0x4010, 0x4010, 0x4010, 0x4010, 0x4010, 0x0008,
];

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal_conformance::skip;
    use counterhal_conformance::skip::Need;
    use std::path::Path;
    use std::process::Command;

    const PAPI_EVENTS: &str = "/usr/share/papi/7.0/papi_events.csv";
    const TARBALL: &str = "/usr/src/linux-source-6.12.tar.xz";

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
        if !Path::new(TARBALL).exists() {
            skip!(
                Need::Tools,
                "{TARBALL} is absent (apt-get install linux-source-6.12)"
            );
        }
        let out = Command::new("tar")
            .args([
                "-xJOf",
                TARBALL,
                "--wildcards",
                "*/drivers/perf/arm_pmuv3.c",
            ])
            .output()
            .expect("tar runs");
        assert!(out.status.success(), "tar -xJOf {TARBALL} failed");
        let source = String::from_utf8_lossy(&out.stdout);
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
