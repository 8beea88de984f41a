//! papi.h's ABI: every size, offset and constant of counterhal's papi.h against Debian's
//! PAPI 7.0 papi.h (the oracle), and of papi-7.2/papi.h against PAPI 7.2's (Debian sid's, in
//! the lab's root: `current.rs`), by one C program built against each and run.

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::path::Path;

/// The oracle is PAPI 7.0's own papi.h (Debian's libpapi-dev): the 641 lines (`sizeof`,
/// `offsetof` and values of every struct, field and constant our header defines) must match.
#[test]
fn sizes_offsets_and_constants_match_papi_7_0() {
    system_papi_or_skip!();
    let theirs = crate::common::c_program("abi", "theirs", Path::new("/usr/include"), false);
    let ours = crate::common::c_program(
        "abi",
        "ours",
        &crate::common::manifest().join("include"),
        false,
    );
    let theirs = crate::common::run(&theirs, &[], false);
    let ours = crate::common::run(&ours, &[], false);
    assert!(theirs.status.success() && ours.status.success());
    let theirs = String::from_utf8(theirs.stdout).unwrap();
    let ours = String::from_utf8(ours.stdout).unwrap();
    assert!(theirs.lines().count() > 600, "the program printed {theirs}");
    for (t, o) in theirs.lines().zip(ours.lines()) {
        assert_eq!(t, o, "PAPI 7.0's papi.h vs ours");
    }
    assert_eq!(theirs.lines().count(), ours.lines().count());
    for key in [
        "sizeof PAPI_event_info_t 6680",
        "sizeof PAPI_component_info_t 2272",
        "sizeof PAPI_hw_info_t 1480",
        "sizeof PAPI_option_t 264",
        "sizeof PAPI_dmem_info_t 96",
    ] {
        assert!(ours.lines().any(|l| l == key), "{key}");
    }
}

/// The output of tests/c/abi.c built against the papi.h in `include` (tagged `tag`).
fn layout(include: &Path, tag: &str) -> String {
    let program = crate::common::c_program("abi", tag, include, false);
    let out = crate::common::run(&program, &[], false);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The oracle is PAPI 7.2's own papi.h (Debian sid's libpapi-dev 7.2.0, in the lab's root):
/// our papi-7.2/papi.h matches its every size, offset and constant, 7.2's additions included
/// (`PAPI_component_info_t` 3,296 bytes with `initialized` at 2,568 and `num_cntrs` at 2,576,
/// `PAPI_event_info_t` 23,068 with its qualifiers, the enumeration modifiers renumbered,
/// `PAPI_PARTIAL`).
#[test]
fn sizes_offsets_and_constants_match_papi_7_2() {
    let release = crate::current::PAPI_7_2;
    let root = match release.root() {
        Ok(root) => root,
        Err(why) => skip!(Need::Platform, "{why}"),
    };
    let theirs = layout(&release.headers(&root), "theirs-7.2");
    let ours = layout(
        &crate::common::manifest().join("include/papi-7.2"),
        "ours-7.2",
    );
    assert!(theirs.lines().count() > 640, "the program printed {theirs}");
    for (t, o) in theirs.lines().zip(ours.lines()) {
        assert_eq!(t, o, "PAPI 7.2's papi.h vs ours");
    }
    assert_eq!(theirs.lines().count(), ours.lines().count());
    for key in [
        "sizeof PAPI_component_info_t 3296",
        "offsetof PAPI_component_info_t.initialized 2568",
        "offsetof PAPI_component_info_t.num_cntrs 2576",
        "sizeof PAPI_event_info_t 23068",
        "value PAPI_PRESET_ENUM_AVAIL 3",
        "value PAPI_NTV_ENUM_UMASKS 18",
        "value PAPI_NTV_ENUM_GROUPS 25",
        "value PAPI_PARTIAL -28",
        "value PAPI_NUM_ERRORS 29",
        "value PAPI_VER_CURRENT 117571584",
    ] {
        assert!(ours.lines().any(|l| l == key), "{key}");
    }
}

/// The oracle is PAPI 7.1's own papi.h (Debian 13's libpapi-dev 7.1.0, in the lab's root): it
/// differs from our papi.h, 7.0's, in the version alone, so that a 7.1 program reads what a
/// 7.0 one reads.
#[test]
fn papi_7_1_has_the_layouts_of_7_0() {
    let release = crate::current::PAPI_7_1;
    let root = match release.root() {
        Ok(root) => root,
        Err(why) => skip!(Need::Platform, "{why}"),
    };
    let theirs = layout(&release.headers(&root), "theirs-7.1");
    let ours = layout(&crate::common::manifest().join("include"), "ours-7.1");
    let differ: Vec<(&str, &str)> = theirs
        .lines()
        .zip(ours.lines())
        .filter(|(t, o)| t != o)
        .collect();
    assert_eq!(
        differ,
        [
            (
                "value PAPI_VERSION 117506048",
                "value PAPI_VERSION 117440512"
            ),
            (
                "value PAPI_VER_CURRENT 117506048",
                "value PAPI_VER_CURRENT 117440512"
            ),
        ]
    );
    assert_eq!(theirs.lines().count(), ours.lines().count());
}
