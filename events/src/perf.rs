//! Linux perf's numeric encodings of the generalized events (`include/uapi/linux/perf_event.h`).

use counterhal_hal::{
    CacheEvent, CacheLevel, CacheOp, CacheResult, Domain, GeneralizedEvent, HardwareEvent,
    PerfAttr, SoftwareEvent,
};

/// The events perf stat counts when none is named (perf 6.1's `add_default_attributes` in
/// tools/perf/builtin-stat.c; perf 7.2 names the same events through its Default metric
/// group): what `counterhal stat` and `counterhal serve` count without `-e`.
pub const STAT_DEFAULT_EVENTS: [&str; 8] = [
    "task-clock",
    "context-switches",
    "cpu-migrations",
    "page-faults",
    "cycles",
    "instructions",
    "branches",
    "branch-misses",
];

/// `PERF_TYPE_HARDWARE`.
pub const TYPE_HARDWARE: u32 = 0;
/// `PERF_TYPE_SOFTWARE`.
pub const TYPE_SOFTWARE: u32 = 1;
/// `PERF_TYPE_TRACEPOINT`.
pub const TYPE_TRACEPOINT: u32 = 2;
/// `PERF_TYPE_HW_CACHE`.
pub const TYPE_HW_CACHE: u32 = 3;
/// `PERF_TYPE_RAW`.
pub const TYPE_RAW: u32 = 4;
/// `PERF_TYPE_BREAKPOINT`.
pub const TYPE_BREAKPOINT: u32 = 5;

/// `PERF_COUNT_HW_*` for a hardware event.
pub const fn hardware_config(event: HardwareEvent) -> u64 {
    match event {
        HardwareEvent::Cycles => 0,
        HardwareEvent::Instructions => 1,
        HardwareEvent::CacheReferences => 2,
        HardwareEvent::CacheMisses => 3,
        HardwareEvent::Branches => 4,
        HardwareEvent::BranchMisses => 5,
        HardwareEvent::BusCycles => 6,
        HardwareEvent::StalledCyclesFrontend => 7,
        HardwareEvent::StalledCyclesBackend => 8,
        HardwareEvent::RefCycles => 9,
    }
}

/// `PERF_COUNT_SW_*` for a software event.
pub const fn software_config(event: SoftwareEvent) -> u64 {
    match event {
        SoftwareEvent::CpuClock => 0,
        SoftwareEvent::TaskClock => 1,
        SoftwareEvent::PageFaults => 2,
        SoftwareEvent::ContextSwitches => 3,
        SoftwareEvent::CpuMigrations => 4,
        SoftwareEvent::MinorFaults => 5,
        SoftwareEvent::MajorFaults => 6,
        SoftwareEvent::AlignmentFaults => 7,
        SoftwareEvent::EmulationFaults => 8,
        SoftwareEvent::Dummy => 9,
        SoftwareEvent::BpfOutput => 10,
        SoftwareEvent::CgroupSwitches => 11,
    }
}

/// The `PERF_TYPE_HW_CACHE` config: `id | op << 8 | result << 16`.
pub const fn cache_config(event: CacheEvent) -> u64 {
    let id = match event.level {
        CacheLevel::L1Data => 0,
        CacheLevel::L1Instruction => 1,
        CacheLevel::LastLevel => 2,
        CacheLevel::DataTlb => 3,
        CacheLevel::InstructionTlb => 4,
        CacheLevel::Branch => 5,
        CacheLevel::Node => 6,
    };
    let op = match event.op {
        CacheOp::Load => 0,
        CacheOp::Store => 1,
        CacheOp::Prefetch => 2,
    };
    let result = match event.result {
        CacheResult::Access => 0,
        CacheResult::Miss => 1,
    };
    id | (op << 8) | (result << 16)
}

/// perf's generic encoding of a hardware, software or cache event; `None` for presets (they
/// need a CPU model).
pub fn generic_encoding(event: GeneralizedEvent, domain: Domain) -> Option<PerfAttr> {
    let (type_, config) = match event {
        GeneralizedEvent::Hardware(e) => (TYPE_HARDWARE, hardware_config(e)),
        GeneralizedEvent::Software(e) => (TYPE_SOFTWARE, software_config(e)),
        GeneralizedEvent::Cache(e) => (TYPE_HW_CACHE, cache_config(e)),
        GeneralizedEvent::Preset(_) => return None,
    };
    let mut encoding = PerfAttr::new(type_, config);
    encoding.domain = domain;
    Some(encoding)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_config_matches_perf() {
        // L1-dcache-load-misses: L1D(0) | READ(0) << 8 | MISS(1) << 16.
        let e = CacheEvent::from_name("L1-dcache-load-misses").unwrap();
        assert_eq!(cache_config(e), 0x10000);
        // dTLB-store-misses: DTLB(3) | WRITE(1) << 8 | MISS(1) << 16.
        let e = CacheEvent::from_name("dTLB-store-misses").unwrap();
        assert_eq!(cache_config(e), 0x10103);
        let e = CacheEvent::from_name("node-prefetches").unwrap();
        assert_eq!(cache_config(e), 0x206);
    }

    #[test]
    fn generic() {
        let e = generic_encoding(
            GeneralizedEvent::from_name("page-faults").unwrap(),
            Domain::USER,
        )
        .unwrap();
        assert_eq!(
            (e.type_, e.config, e.domain),
            (TYPE_SOFTWARE, 2, Domain::USER)
        );
        assert!(
            generic_encoding(
                GeneralizedEvent::from_name("PAPI_TOT_INS").unwrap(),
                Domain::USER
            )
            .is_none()
        );
    }
}
