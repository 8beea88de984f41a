//! PAPI's `powercap` component on ours, over a powercap tree laid out as the kernel's powercap
//! class lays it out (Documentation/ABI/testing/sysfs-class-powercap: `intel-rapl:0` with
//! `name`, `energy_uj`, `max_energy_range_uj`, `constraint_0_*`, `enabled`; a subzone
//! `intel-rapl:0:0`), named by `COUNTERHAL_SYSFS` as the command's `--sysfs` names a tree.
//! Oracle: PAPI's own component (src/components/powercap/linux-powercap.c): its description,
//! its events' names and order (each file that exists, the package's then each subzone's),
//! a `NAME` event described by the zone's name, energy counted from the start across one wrap
//! at `max_energy_range_uj`, other files read as they are. Debian's PAPI 7.0 is built without
//! the component, so the oracle is its source, not a run. PAPI's `rapl` names of the same
//! counters (`rapl:::PACKAGE_ENERGY:PACKAGE0`, `PP0_ENERGY:PACKAGE0`) read nanojoules, as
//! programs written for PAPI's rapl component divide them by 1e9 for joules.

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::path::Path;

/// The zone tree, under a fresh temporary folder; the folder (the sysfs root).
fn tree() -> std::path::PathBuf {
    let root = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-papi-powercap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let zone = |dir: &str, files: &[(&str, &str)]| {
        let dir = root.join("class/powercap").join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (file, text) in files {
            std::fs::write(dir.join(file), text).unwrap();
        }
    };
    zone(
        "intel-rapl:0",
        &[
            ("name", "package-0\n"),
            ("energy_uj", "1000\n"),
            ("max_energy_range_uj", "262143328850\n"),
            ("constraint_0_power_limit_uw", "65000000\n"),
            ("constraint_0_time_window_us", "999424\n"),
            ("enabled", "1\n"),
        ],
    );
    zone(
        "intel-rapl:0:0",
        &[("name", "core\n"), ("energy_uj", "7\n")],
    );
    root
}

#[test]
fn energy_and_limits_read_as_papis_powercap_component() {
    system_papi_or_skip!();
    let root = tree();
    let program = crate::common::c_program("powercap", "ours", Path::new("/usr/include"), true);
    let energy = root.join("class/powercap/intel-rapl:0/energy_uj");
    let out = std::process::Command::new(&program)
        .arg(&energy)
        .env("LD_LIBRARY_PATH", crate::common::library_dir())
        .env("COUNTERHAL_SYSFS", &root)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // After the core, uncore and sde components.
    let cidx = papi::powercap::CIDX;
    let mut expected = vec![format!(
        "component powercap: Linux powercap energy measurements, disabled 0, native 8, \
         domain 0xf, granularity 0x8"
    )];
    for (event, description) in [
        ("ENERGY_UJ:ZONE0", ""),
        ("MAX_ENERGY_RANGE_UJ:ZONE0", ""),
        ("POWER_LIMIT_A_UW:ZONE0", ""),
        ("TIME_WINDOW_A_US:ZONE0", ""),
        ("ENABLED:ZONE0", ""),
        ("NAME:ZONE0", "package-0"),
        ("ENERGY_UJ:ZONE0_SUBZONE0", ""),
        ("NAME:ZONE0_SUBZONE0", "core"),
    ] {
        // PAPI_DATATYPE_UINT64 (1).
        expected.push(format!(
            "event powercap:::{event} [{description}] component {cidx} type 1"
        ));
    }
    let range: i64 = 262_143_328_850;
    expected.extend([
        // PAPI_EINVAL past the last event, PAPI's framework's answer.
        "end -1".to_string(),
        "add energy 0".into(),
        "add limit 0".into(),
        // Another component's event beside them: PAPI_EINVAL; an unknown zone PAPI_ENOEVNT.
        "add perf -1".into(),
        "add missing -7".into(),
        format!("set component {cidx}"),
        "start 0".into(),
        "read 0 12345 65000000".into(),
        format!("wrapped 0 {} 65000000", 100 + (range - 1000)),
        "reset 0".into(),
        "after reset 0 0 65000000".into(),
        "stop 0 500 65000000".into(),
        "stopped 0 500 65000000".into(),
        // PAPI's rapl component gives nanojoules (what programs divide by 1e9 for joules).
        "add package 0".into(),
        "add cores 0".into(),
        "start 0".into(),
        "rapl 0 500000 0".into(),
    ]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines, expected);
    let _ = std::fs::remove_dir_all(root);
}
