//! PAPI's rate functions (tests/c/rates.c), run on Debian's PAPI 7.0 (the oracle) and on ours:
//! the codes of a wrong event, NULL pointers, first and later calls and `PAPI_rate_stop` read
//! the same, and both leave the library initialised with threads. (Here no preset counts, so
//! both answer `PAPI_ENOEVNT` for the measuring calls; the rates themselves need
//! `PAPI_TOT_INS`/`PAPI_TOT_CYC` or floating-point presets.)

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::path::Path;

#[test]
fn rate_functions_answer_as_papi_7_0() {
    system_papi_or_skip!();
    papi_perf_event_or_skip!();
    let program = crate::common::c_program("rates", "theirs", Path::new("/usr/include"), true);
    let theirs = crate::common::run(&program, &[], false);
    let ours = crate::common::run(&program, &[], true);
    let theirs = String::from_utf8_lossy(&theirs.stdout).into_owned();
    assert!(theirs.contains("initialized 5"), "{theirs}");
    assert_eq!(theirs, String::from_utf8_lossy(&ours.stdout));
}
