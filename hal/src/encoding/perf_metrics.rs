//! Intel's perf-metrics events in perf's encoding (Ice Lake and later cores): `slots` and the
//! metric events (`topdown-retiring` and the others), which the kernel opens only in a group
//! led by slots (`intel_pmu_hw_config`, arch/x86/events/intel/core.c).

use super::PerfAttr;

/// `slots`: event 0x00, unit mask 0x04 (`INTEL_TD_SLOTS`, arch/x86/events/perf_event.h).
const SLOTS: u64 = 0x0400;

/// The metric events' unit masks: 0x80 to 0x87 (`INTEL_TD_METRIC_RETIRING` to
/// `INTEL_TD_METRIC_MEM_BOUND`, arch/x86/events/perf_event.h).
const METRIC_UNIT_MASKS: std::ops::RangeInclusive<u64> = 0x80..=0x87;

/// `PERF_TYPE_RAW`: a core PMU's type where the core is not a hybrid chip's.
const TYPE_RAW: u32 = 4;

impl PerfAttr {
    /// Whether it is Intel's perf-metrics `slots` event (event 0x00, unit mask 0x04) of a
    /// core PMU: the raw type, or one of `core_types` (a hybrid chip's big core's type).
    pub fn is_topdown_slots(&self, core_types: &[u32]) -> bool {
        self.on_core(core_types) && self.config == SLOTS
    }

    /// Whether it is one of Intel's perf-metrics metric events (event 0x00, unit mask 0x80 to
    /// 0x87, nothing else set) of a core PMU (see [`PerfAttr::is_topdown_slots`]).
    pub fn is_topdown_metric(&self, core_types: &[u32]) -> bool {
        let only_unit_mask = self.config & !0xff00 == 0;
        self.on_core(core_types)
            && only_unit_mask
            && METRIC_UNIT_MASKS.contains(&(self.config >> 8))
    }

    /// Whether its type is a core PMU's: raw's, or one of `core_types`.
    fn on_core(&self, core_types: &[u32]) -> bool {
        self.type_ == TYPE_RAW || core_types.contains(&self.type_)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: the kernel's encodings (arch/x86/events/perf_event.h: `INTEL_TD_SLOTS` 0x0400,
    /// `INTEL_TD_METRIC_RETIRING` 0x8000 to `INTEL_TD_METRIC_MEM_BOUND` 0x8700) and perf's
    /// sysfs aliases of them on Alder Lake's `cpu_core` (type 4 there, dynamic on a hybrid
    /// chip: here 10).
    #[test]
    fn slots_and_metric_events_are_the_kernels() {
        let raw = |config| PerfAttr::new(TYPE_RAW, config);
        assert!(raw(0x0400).is_topdown_slots(&[]));
        assert!(!raw(0x0400).is_topdown_metric(&[]));
        for config in [0x8000, 0x8100, 0x8700] {
            assert!(raw(config).is_topdown_metric(&[]), "{config:#x}");
        }
        assert!(!raw(0x8800).is_topdown_metric(&[]));
        assert!(
            !raw(0x8000 | 1 << 16).is_topdown_metric(&[]),
            "a filter bit set"
        );
        let big_core = PerfAttr::new(10, 0x8000);
        assert!(big_core.is_topdown_metric(&[10]) && !big_core.is_topdown_metric(&[]));
        assert!(
            !PerfAttr::new(0, 0x0400).is_topdown_slots(&[]),
            "a generic event"
        );
    }
}
