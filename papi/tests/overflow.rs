//! `PAPI_overflow` on the sampling face: one program (tests/c/overflow.c) built against
//! Debian's PAPI 7.0 and run on it (the oracle) and on ours: 1,000 fresh pages touched with
//! a threshold of 10 page faults.

mod common;

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::path::Path;

/// The numbers one run printed: handler calls, the stopped count, calls with a wrong set or
/// vector.
fn numbers(text: &str) -> (u64, u64, u64, u64) {
    let line = text
        .lines()
        .find(|l| l.starts_with("calls "))
        .unwrap_or_else(|| panic!("{text}"));
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .step_by(2)
        .map(|n| n.parse().unwrap())
        .collect();
    (v[0], v[1], v[2], v[3])
}

#[test]
fn overflow_calls_the_handler_every_threshold_events() {
    if !common::system_papi() {
        skip!(
            Need::Tools,
            "PAPI 7.0 is not installed (apt-get install libpapi-dev)"
        );
    }
    let program = common::c_program("overflow", "theirs", Path::new("/usr/include"), true);
    for (who, ours) in [("PAPI 7.0", false), ("ours", true)] {
        let out = common::run(&program, &[], ours);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !ours && !out.status.success() {
            // Real PAPI cannot sample here: nothing to compare ours with.
            skip!(
                Need::Hardware,
                "PAPI 7.0 cannot overflow on page faults here: {text}"
            );
        }
        assert!(out.status.success(), "{who}: {text}");
        let (calls, count, bad_set, bad_vector) = numbers(&text);
        assert!(
            (1000..1100).contains(&count),
            "{who}: {count} page faults for 1,000 pages"
        );
        assert_eq!(calls, count / 10, "{who}: one call per 10 faults");
        assert_eq!(
            (bad_set, bad_vector),
            (0, 0),
            "{who}: the handler's set and vector"
        );
        assert!(text.contains("index 0 n 1 first 0"), "{who}: {text}");
        assert!(text.contains("off 0"), "{who}: {text}");
    }
}
