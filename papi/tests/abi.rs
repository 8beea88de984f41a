//! papi.h's ABI: every size, offset and constant of counterhal's papi.h against Debian's
//! PAPI 7.0 papi.h (the oracle), by one C program built against each and run.

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
