//! One small PAPI program (tests/c/side_by_side.c), built once against Debian's papi.h and
//! libpapi.so.7.0, run against Debian's PAPI 7.0 (the oracle) and against ours: event names
//! and codes of all 108 presets, their short and long descriptions and categories, the errors of misuse, the messages and the
//! timers must read the same.

mod common;

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::path::Path;

#[test]
fn a_papi_program_reads_the_same_on_both() {
    system_papi_or_skip!();
    let program = common::c_program("side_by_side", "theirs", Path::new("/usr/include"), true);
    let theirs = common::run(&program, &[], false);
    let ours = common::run(&program, &[], true);
    let theirs = String::from_utf8_lossy(&theirs.stdout).into_owned();
    let ours = String::from_utf8_lossy(&ours.stdout).into_owned();
    let (their_common, their_sets) = theirs
        .split_once("-- sets\n")
        .expect("PAPI 7.0 ran through");
    let (our_common, our_sets) = ours.split_once("-- sets\n").expect("ours ran through");
    assert!(their_common.lines().count() > 140, "{theirs}");
    for (t, o) in their_common.lines().zip(our_common.lines()) {
        assert_eq!(t, o, "PAPI 7.0 vs ours");
    }
    assert_eq!(their_common.lines().count(), our_common.lines().count());
    // The answers about event sets that depend on the CPU component: PAPI 7.0 asks its other
    // components too (sde, rocm_smi) and answers a name no component knows with their codes
    // (PAPI_ENOSUPP, PAPI_ECMP) where ours says PAPI_ENOEVNT; the rest must agree.
    let differs = ["name_to_code of nonsense", "add named nonsense"];
    for (t, o) in their_sets.lines().zip(our_sets.lines()) {
        if differs.iter().any(|d| t.starts_with(d)) {
            assert!(o.ends_with("= -7"), "{o}");
            continue;
        }
        assert_eq!(t, o, "PAPI 7.0 vs ours");
    }
}

/// papi/src/preset_table.rs is papi/gen/presets.c's output on the PAPI installed here: PAPI
/// 7.0's presets (the oracle: Debian's libpapi.so.7.0) read through its own interface. Fails
/// when the table is stale or was edited by hand (regenerate as the generator's header says).
#[test]
fn the_preset_table_is_papis() {
    system_papi_or_skip!();
    let version = std::process::Command::new("dpkg-query")
        .args(["-W", "-f", "${Version}", "libpapi7.0"])
        .output()
        .ok()
        .filter(|o| o.status.success() && !o.stdout.is_empty());
    let Some(version) = version else {
        skip!(Need::Tools, "dpkg-query does not name Debian's libpapi7.0");
    };
    let version = String::from_utf8_lossy(&version.stdout).into_owned();
    let dir = std::env::temp_dir().join(format!("counterhal-presets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let generator = dir.join("presets");
    let built = std::process::Command::new("cc")
        .arg(common::manifest().join("gen/presets.c"))
        .arg("-o")
        .arg(&generator)
        .arg("-lpapi")
        .output()
        .unwrap();
    assert!(built.status.success(), "{built:?}");
    let out = common::run(&generator, &[&version], false);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(out.status.success(), "{out:?}");
    let generated = String::from_utf8(out.stdout).unwrap();
    let shipped = std::fs::read_to_string(common::manifest().join("src/preset_table.rs")).unwrap();
    assert!(
        generated == shipped,
        "papi/src/preset_table.rs differs from PAPI {version}'s presets: regenerate it \
         (papi/gen/presets.c)"
    );
    assert_eq!(shipped.matches("\"PAPI_").count(), 108);
}
