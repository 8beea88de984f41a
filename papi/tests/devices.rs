//! The sysdetect component, the device interface, and what component 0 says of its PMUs and
//! presets; oracle: Debian's PAPI 7.0, running the same program (tests/c/devices.c, built
//! against its papi.h) on the same machine.
//!
//! Differences allowed, each by design (papi/src/devices.rs and components.rs say why):
//! - components PAPI 7.0 has and ours has not (`perf_event_uncore`, `rocm_smi`), and their
//!   indices;
//! - the L3 cache's line count (PAPI 7.0's AMD decoder copies the L2's);
//! - `PAPI_DEV_ATTR__CPU_UINT_NUMA_MEM_SIZE` (PAPI 7.0 answers `PAPI_ENOSUPP`; ours the
//!   node's memory, as PAPI 7.1) is not asked;
//! - component 0's PMUs: ours lists `perf`, `perf_raw` and the core PMU, each of which PAPI
//!   lists too (ours names the core PMU where the kernel has it); its preset count is what our event database maps for the model,
//!   at least the presets PAPI's table maps there (PAPI's count, equal to what PAPI calls
//!   available).

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::collections::BTreeMap;

fn facts(output: &std::process::Output) -> BTreeMap<String, String> {
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Oracle: Debian's PAPI 7.0 (see the module's note).
#[test]
fn devices_read_as_on_papi() {
    system_papi_or_skip!();
    let program = crate::common::c_program(
        "devices",
        "papi",
        std::path::Path::new("/usr/include"),
        true,
    );
    let theirs = facts(&crate::common::run(&program, &[], false));
    let ours = facts(&crate::common::run(&program, &[], true));
    // Components and their indices, PAPI's L3 line count (attribute 12, its L2's) and
    // component 0's PMUs and presets differ by design (see the module's note); its names,
    // description and versions are PAPI's (tools print and parse them).
    let skipped = |k: &str| {
        k.starts_with("component.")
            || k == "index.sysdetect"
            || k == "cpu.attr12"
            || k == "zero.presets"
            || k == "zero.available"
            || k.starts_with("zero.pmu.")
    };
    for (key, value) in theirs.iter().filter(|(k, _)| !skipped(k)) {
        assert_eq!(ours.get(key), Some(value), "{key}");
    }
    for (key, value) in ours.iter().filter(|(k, _)| !skipped(k)) {
        assert_eq!(theirs.get(key), Some(value), "{key}");
    }
    assert!(ours.contains_key("component.sysdetect"), "{ours:?}");
    assert_eq!(ours["index.sysdetect"], ours["component.sysdetect"]);
    // Where Debian 12's libpfm4 (4.13) knows no PMU of this CPU (a model newer than it, such
    // as Zen 5: "Error libpfm4 no default PMU found"), PAPI 7.0 lists none of the model's,
    // and ours names libpfm4's head's (`amd64_fam1ah_zen5`): only perf's two are compared.
    let papi_knows_this_cpu = crate::common::papi_perf_event_disabled().is_none();
    for pmu in ours.keys().filter(|k| k.starts_with("zero.pmu.")) {
        let perfs = pmu == "zero.pmu.perf" || pmu == "zero.pmu.perf_raw";
        if papi_knows_this_cpu || perfs {
            assert!(theirs.contains_key(pmu), "PAPI does not list {pmu}");
        }
    }
    // libpfm4's perf PMUs, which PAPI lists wherever it runs.
    for pmu in ["zero.pmu.perf", "zero.pmu.perf_raw"] {
        if theirs.contains_key(pmu) {
            assert!(ours.contains_key(pmu), "ours does not list {pmu}: {ours:?}");
        }
    }
    let number = |m: &BTreeMap<String, String>, k: &str| m[k].parse::<i32>().unwrap();
    assert_eq!(
        number(&theirs, "zero.presets"),
        number(&theirs, "zero.available")
    );
    if theirs.keys().filter(|k| k.starts_with("zero.pmu.")).count() > 2 {
        // PAPI knows a core PMU here: ours maps at least its presets.
        assert!(number(&ours, "zero.presets") >= number(&theirs, "zero.presets"));
        assert!(ours.keys().filter(|k| k.starts_with("zero.pmu.")).count() >= 2);
    } else {
        skip!(
            Need::Hardware,
            "PAPI knows no core PMU here: the preset counts are not compared"
        );
    }
}
