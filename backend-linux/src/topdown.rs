//! Ice Lake's and later Intel cores' perf-metrics events: the kernel's `slots` and `topdown-*`
//! events of the core PMU, under every name they go by, and the group they must be read in.
//!
//! The facts are the kernel's (`arch/x86/events/intel/core.c`, Linux 6.12): `slots` is
//! `event=0x00,umask=0x4` (fixed counter 3) and the metrics `event=0x00,umask=0x80` up to
//! `0x83` on Ice Lake, Tiger Lake and Rocket Lake (`icl_td_events_attrs`,
//! `num_topdown_events = 4`) and up to `0x87` on Golden Cove and later cores
//! (`glc_td_events_attrs`, `adl_hybrid_events_attrs`, `lnl_hybrid_events_attrs`,
//! `num_topdown_events = 8`). A metric event counts nothing itself: the kernel computes it from
//! slots and the PERF_METRICS MSR, and refuses to open it (EINVAL) unless it joins a group led
//! by a non-sampling slots event (`intel_pmu_hw_config`: "The metric events require a slots
//! group leader"). perf (`tools/perf/arch/x86/util/evlist.c`, `arch_evlist__cmp`) therefore
//! sorts slots first, then the topdown events, then the rest.
//!
//! The names: the kernel's (`slots`, `topdown-retiring`), Intel perfmon's metric formulas'
//! (`PERF_METRICS.RETIRING`, mapped to the kernel's by perfmon's
//! `scripts/create_perf_json.py`) and libpfm4's (`TOPDOWN_M.RETIRING`, `TOPDOWN_M:SLOTS`:
//! `intel_icl_events.h`, `intel_spr_events.h`, `ucode` 0x8000 up and 0x0400).

use counterhal_system::PmuDevices;

use counterhal_hal::{Error, PerfAttr, Result};

use crate::pmus;
use crate::sys::TYPE_RAW;

/// The `config` of `slots` (event 0x00, unit mask 0x04).
pub(crate) const SLOTS: u64 = 0x0400;

/// One perf-metrics event: the kernel's name, perfmon's `PERF_METRICS.` unit mask, libpfm4's
/// `TOPDOWN_M` unit mask, and its unit mask (the `config` is the unit mask shifted by 8).
struct Metric {
    kernel: &'static str,
    perfmon: &'static str,
    libpfm4: &'static str,
    umask: u8,
}

/// The metrics in the kernel's order (unit masks 0x80 up); Ice Lake's cores have the first four.
const METRICS: [Metric; 8] = [
    metric("topdown-retiring", "RETIRING", "RETIRING", 0x80),
    metric("topdown-bad-spec", "BAD_SPECULATION", "BAD_SPEC", 0x81),
    metric("topdown-fe-bound", "FRONTEND_BOUND", "FRONTEND_BOUND", 0x82),
    metric("topdown-be-bound", "BACKEND_BOUND", "BACKEND_BOUND", 0x83),
    metric("topdown-heavy-ops", "HEAVY_OPERATIONS", "HEAVY_OPS", 0x84),
    metric(
        "topdown-br-mispredict",
        "BRANCH_MISPREDICTS",
        "BR_MISPREDICT",
        0x85,
    ),
    metric("topdown-fetch-lat", "FETCH_LATENCY", "FETCH_LAT", 0x86),
    metric("topdown-mem-bound", "MEMORY_BOUND", "MEMORY_BOUND", 0x87),
];

const fn metric(
    kernel: &'static str,
    perfmon: &'static str,
    libpfm4: &'static str,
    umask: u8,
) -> Metric {
    Metric {
        kernel,
        perfmon,
        libpfm4,
        umask,
    }
}

/// How many metric events the database model `model` has: 4 on the Ice Lake class, 8 on
/// Golden Cove and later (the kernel's `num_topdown_events`), 0 on every other model.
pub fn metrics_of(model: &str) -> usize {
    match model {
        "icl" | "icx" | "tgl" | "rkl" => 4,
        "spr" | "emr" | "gnr" | "adl_glc" | "mtl_rwc" | "arl_lnc" | "lnl_lnc" => 8,
        _ => 0,
    }
}

/// Every name of the perf-metrics events of `model`, with what each is, for `list`.
pub fn names(model: &str) -> Vec<(String, String)> {
    let count = metrics_of(model);
    if count == 0 {
        return Vec::new();
    }
    let mut out = vec![(
        "slots".to_string(),
        "topdown slots (fixed counter 3; leads the group the topdown events are read in)"
            .to_string(),
    )];
    for m in &METRICS[..count] {
        let what = format!(
            "perf metrics: {} (read in a group led by slots; also PERF_METRICS.{}, TOPDOWN_M.{})",
            m.kernel, m.perfmon, m.libpfm4
        );
        out.push((m.kernel.to_string(), what));
    }
    out
}

/// The `config` (event 0x00, unit mask 0x04 or 0x80 up) `event` names on `model`, under any
/// of its names (any case), or `None` when it is none of them there. `TOPDOWN_M.X` and
/// `TOPDOWN_M:X` are libpfm4's spellings; no modifier is taken (libpfm4 gives the metrics
/// `INTEL_X86_NO_MODS`, and the kernel refuses filters on them).
pub fn config_of(model: &str, event: &str) -> Option<u64> {
    let count = metrics_of(model);
    if count == 0 {
        return None;
    }
    let upper = event.trim().to_ascii_uppercase();
    if upper == "SLOTS" || upper == "TOPDOWN_M.SLOTS" || upper == "TOPDOWN_M:SLOTS" {
        return Some(SLOTS);
    }
    let libpfm4 = upper
        .strip_prefix("TOPDOWN_M.")
        .or_else(|| upper.strip_prefix("TOPDOWN_M:"));
    let perfmon = upper.strip_prefix("PERF_METRICS.");
    METRICS[..count]
        .iter()
        .find(|m| {
            m.kernel.eq_ignore_ascii_case(&upper)
                || perfmon == Some(m.perfmon)
                || libpfm4 == Some(m.libpfm4)
        })
        .map(|m| u64::from(m.umask) << 8)
}

/// The perf attr for `event` on `model` (see [`config_of`]): a raw event of the core PMU,
/// `pmu` where that is a hybrid chip's big-core PMU (`cpu_core`, its dynamic `type_`).
///
/// # Errors
/// [`ErrorKind::Unsupported`](counterhal_hal::ErrorKind::Unsupported) when a core PMU is
/// present (`has_slots` is `Some`) without the kernel's `slots` event: that kernel or CPU has
/// no perf metrics, and the raw code would count something else.
pub fn resolve(
    model: &str,
    event: &str,
    has_slots: Option<bool>,
    pmu: Option<(&str, u32)>,
) -> Option<Result<PerfAttr>> {
    let config = config_of(model, event)?;
    if has_slots == Some(false) {
        return Some(Err(Error::unsupported(format!(
            "`{event}` is a perf-metrics event, and this kernel's core PMU has no `slots` event \
             (no perf-metrics support: the CPU or kernel predates it)"
        ))
        .with_hint(
            "the TMA metrics of older cores read counters instead (choose that model's metrics)",
        )));
    }
    let attr = match pmu {
        Some((name, type_)) => {
            let mut attr = PerfAttr::new(type_, config);
            attr.pmu = Some(name.to_string());
            attr
        }
        None => PerfAttr::new(TYPE_RAW, config),
    };
    Some(Ok(attr))
}

/// [`resolve`] on the PMUs under `devices`: the core PMU whose `slots` event says whether the
/// kernel has perf metrics is `cpu_core` on a hybrid chip (which then names the PMU), else
/// the raw-event PMU; without one (no hardware PMU) the raw encoding stands.
pub(crate) fn resolve_here(
    devices: &PmuDevices,
    model: &str,
    event: &str,
) -> Option<Result<PerfAttr>> {
    config_of(model, event)?;
    let cores = pmus::core_pmus(devices);
    let big = cores.iter().find(|p| p.name == "cpu_core");
    let core = big.or_else(|| cores.iter().find(|p| p.type_ == TYPE_RAW));
    let has_slots = core.map(|p| p.has_alias("slots"));
    let pmu = big.map(|p| (p.name.as_str(), p.type_));
    resolve(model, event, has_slots, pmu)
}

/// perf's order of a group that holds a metric event (`arch_evlist__cmp`): slots first, then
/// the topdown events, then the others, each kind in the order given. `members` are indices
/// into `attrs`; a group without a metric event keeps its order.
pub(crate) fn order(members: &mut [usize], attrs: &[&PerfAttr], core_types: &[u32]) {
    if !members
        .iter()
        .any(|&i| attrs[i].is_topdown_metric(core_types))
    {
        return;
    }
    // Three kinds, each kept in its order: one pass a kind (a stable sort with this key
    // inlined in its comparisons compiled to 25 KB).
    let kind = |i: usize| {
        if attrs[i].is_topdown_slots(core_types) {
            0
        } else if attrs[i].is_topdown_metric(core_types) {
            1
        } else {
            2
        }
    };
    let ordered: Vec<usize> = (0..3)
        .flat_map(|k| members.iter().copied().filter(move |&i| kind(i) == k))
        .collect();
    members.copy_from_slice(&ordered);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: the kernel's `EVENT_ATTR_STR(topdown-*)` lines of
    /// `arch/x86/events/intel/core.c` (Linux 6.12), and libpfm4's `intel_spr_topdown_m` and
    /// `intel_icl_topdown_m` unit masks (ucode 0x8000 to 0x8700, SLOTS 0x0400).
    #[test]
    fn names_encode_as_the_kernel_and_libpfm4_do() {
        for (name, config) in [
            ("slots", 0x0400),
            ("TOPDOWN_M:SLOTS", 0x0400),
            ("topdown-retiring", 0x8000),
            ("PERF_METRICS.RETIRING", 0x8000),
            ("topdown-bad-spec", 0x8100),
            ("PERF_METRICS.BAD_SPECULATION", 0x8100),
            ("TOPDOWN_M.BAD_SPEC", 0x8100),
            ("topdown-fe-bound", 0x8200),
            ("TOPDOWN_M:FRONTEND_BOUND", 0x8200),
            ("PERF_METRICS.BACKEND_BOUND", 0x8300),
            ("topdown-heavy-ops", 0x8400),
            ("TOPDOWN_M.HEAVY_OPS", 0x8400),
            ("PERF_METRICS.BRANCH_MISPREDICTS", 0x8500),
            ("topdown-fetch-lat", 0x8600),
            ("perf_metrics.memory_bound", 0x8700),
            ("TOPDOWN_M.MEMORY_BOUND", 0x8700),
        ] {
            assert_eq!(config_of("spr", name), Some(config), "{name}");
        }
        // Ice Lake's cores have the first four (`num_topdown_events = 4`).
        assert_eq!(config_of("icx", "PERF_METRICS.BACKEND_BOUND"), Some(0x8300));
        assert_eq!(config_of("icx", "PERF_METRICS.MEMORY_BOUND"), None);
        assert_eq!(
            config_of("skl", "slots"),
            None,
            "Skylake has no perf metrics"
        );
        assert_eq!(config_of("spr", "topdown-retiring:u"), None, "no modifier");
        assert_eq!(names("icx").len(), 5);
        assert_eq!(names("gnr").len(), 9);
        assert!(names("skl").is_empty());
    }

    #[test]
    fn a_core_pmu_without_slots_refuses_them() {
        let e = resolve("spr", "slots", Some(false), None)
            .unwrap()
            .unwrap_err();
        assert!(e.message().contains("slots"), "{e}");
        let attr = resolve("spr", "PERF_METRICS.RETIRING", None, None)
            .unwrap()
            .unwrap();
        assert_eq!((attr.type_, attr.config), (TYPE_RAW, 0x8000));
        let hybrid = resolve("adl_glc", "slots", Some(true), Some(("cpu_core", 8)))
            .unwrap()
            .unwrap();
        assert_eq!((hybrid.type_, hybrid.pmu.as_deref()), (8, Some("cpu_core")));
    }

    /// Oracle: perf's `arch_evlist__cmp` (`tools/perf/arch/x86/util/evlist.c`): slots first,
    /// then topdown events, then the rest in their order.
    #[test]
    fn groups_with_a_metric_put_slots_first_as_perf_does() {
        let raw = |config| PerfAttr::new(TYPE_RAW, config);
        let attrs = [raw(0x8300), raw(0x3c), raw(0x8000), raw(SLOTS)];
        let refs: Vec<&PerfAttr> = attrs.iter().collect();
        let mut members = vec![0, 1, 2, 3];
        order(&mut members, &refs, &[]);
        assert_eq!(members, [3, 0, 2, 1]);
        // No metric: the order stays.
        let mut plain = vec![1, 3];
        order(&mut plain, &refs, &[]);
        assert_eq!(plain, [1, 3]);
        assert!(
            !raw(0x8000 | 1 << 16).is_topdown_metric(&[]),
            "a filter bit set"
        );
    }
}
