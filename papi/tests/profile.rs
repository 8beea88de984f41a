//! `PAPI_profil` and `PAPI_sprofil` (tests/c/profile.c). Oracles: Debian's PAPI 7.0 for the
//! codes of misuse on sets where nothing counts (run on both libraries), and the kernel's
//! exact page-fault count: 1,000 fresh pages touched by one function, a sample every 10
//! faults, so 100 samples, every one at an address inside that function, in the buckets.

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::path::Path;

fn value(text: &str, key: &str) -> i64 {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key} "))?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} in:\n{text}"))
}

/// The codes of profiling calls that count nothing (tests/c/profile.c's misuse part), on
/// both libraries: no set, an empty set, and on a set of perf::PAGE-FAULTS an event not in it
/// (PAPI_ENOEVNT before the buffers, scales and flags are looked at), and thresholds of 0 and
/// below for an event not profiled (PAPI_EINVAL).
#[test]
fn misuse_answers_as_papi_7_0() {
    system_papi_or_skip!();
    papi_perf_event_or_skip!();
    let program = crate::common::c_program("profile", "theirs", Path::new("/usr/include"), true);
    let theirs = crate::common::run(&program, &["misuse"], false);
    let ours = crate::common::run(&program, &["misuse"], true);
    let theirs = String::from_utf8_lossy(&theirs.stdout).into_owned();
    assert!(theirs.contains("empty set -17"), "{theirs}");
    assert!(theirs.contains("unknown event, bad scale -7"), "{theirs}");
    assert_eq!(theirs, String::from_utf8_lossy(&ours.stdout));
}

#[test]
fn every_sample_lands_in_the_profiled_function() {
    system_papi_or_skip!();
    let program = crate::common::c_program(
        "profile",
        "ours",
        &crate::common::manifest().join("include"),
        true,
    );
    let out = crate::common::run(&program, &[], true);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if text.contains("add -") {
        skip!(
            Need::System,
            "perf's software events do not open here: {text}"
        );
    }
    if text.contains("profil -18") {
        skip!(Need::System, "the backend cannot sample here: {text}");
    }
    // PAPI's checks, as its papi.c makes them.
    assert_eq!(value(&text, "not in set"), -7, "PAPI_ENOEVNT");
    // Code 0 with a bad scale: the event is looked up first (PAPI_ENOEVNT), as PAPI 7.0 does
    // (its answer on this program, tests/c/profile.c's misuse part on both).
    assert_eq!(value(&text, "bad scale"), -7, "PAPI_ENOEVNT");
    assert_eq!(value(&text, "off before on"), -1, "PAPI_EINVAL");
    assert_eq!(value(&text, "two bucket sizes"), -1, "PAPI_EINVAL");
    assert_eq!(value(&text, "profil"), 0, "{text}");
    assert_eq!(value(&text, "profiling state"), 1, "PAPI_PROFILING");
    assert_eq!(value(&text, "counted"), 1000, "{text}");
    assert_eq!(value(&text, "in buckets"), 100, "{text}");
    assert_eq!(value(&text, "off"), 0, "{text}");
}
