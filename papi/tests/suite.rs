//! PAPI 7.0's own tests (Debian's papi-examples: ctests, validation_tests and the Fortran
//! ftests) built against Debian's PAPI by `ctests/run`, checked to compile against our
//! headers, and each build run with TESTS_QUIET on Debian's libpapi and on ours: the oracle is
//! real PAPI on the same machine. It fails when a test that passes with real PAPI does not
//! pass with ours, when one fails with ours that real PAPI skips, or when a test does worse
//! with ours than `ctests/expected.txt` records (the table in README.md; on another
//! architecture `ctests/expected-ARCH.txt`, when recorded). The Fortran tests are checked
//! against the Fortran headers of the tree `scripts/install-papi` installs.

use crate::install;

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

/// How good a verdict is: a pass (with or without a warning) beats a skip, which beats the rest.
fn rank(verdict: &str) -> u8 {
    match verdict {
        "PASSED" | "WARNED" => 2,
        "SKIPPED" => 1,
        _ => 0,
    }
}

#[test]
fn papi_tests_do_as_well_as_real_papi() {
    let examples = std::env::var("PAPI_EXAMPLES")
        .unwrap_or_else(|_| "/usr/share/doc/papi-examples/examples".to_string());
    if !Path::new(&examples).join("ctests").is_dir() || !crate::common::system_papi() {
        skip!(
            Need::Tools,
            "PAPI 7.0's tests are not installed (apt-get install papi-examples libpapi-dev)"
        );
    }
    let lib = crate::common::library_dir();
    let ours = std::fs::read_link(lib.join("libpapi.so.7.0")).unwrap();
    let out = Command::new(crate::common::manifest().join("ctests/run"))
        .arg(ours.parent().unwrap())
        .env("PAPI_EXAMPLES", &examples)
        .env("PAPI_OURS_FORTRAN_INCLUDE", install::include())
        .output()
        .expect("ctests/run runs");
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{report}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The recorded results are the CI machine's (x86-64, no core PMU); another architecture
    // (the aarch64 lab) has its own file once recorded, else only the rules against real PAPI.
    let expected_file = match std::env::consts::ARCH {
        "x86_64" => "ctests/expected.txt".to_string(),
        arch => format!("ctests/expected-{arch}.txt"),
    };
    let expected_text =
        std::fs::read_to_string(crate::common::manifest().join(expected_file)).unwrap_or_default();
    let (ran, problems) = judge(&report, &expected_text);
    println!("{report}");
    assert!(ran > 100, "only {ran} tests ran:\n{report}");
    assert!(problems.is_empty(), "{}\n\n{report}", problems.join("\n"));
}

/// Judges `report`, `ctests/run`'s lines (`TEST REAL OURS`), against real PAPI's verdicts and
/// `expected_text` (an expected file's `TEST REAL OURS` lines): how many tests ran, and each
/// that does worse with ours than real PAPI, or than the file records.
pub fn judge(report: &str, expected_text: &str) -> (usize, Vec<String>) {
    let expected: HashMap<&str, &str> = expected_text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3).then(|| (f[0], f[2]))
        })
        .collect();
    let mut problems = Vec::new();
    let mut ran = 0;
    for line in report.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [test, real, ours] = f[..] else {
            problems.push(format!("unreadable line: {line}"));
            continue;
        };
        ran += 1;
        if rank(real) == 2 && rank(ours) < 2 {
            problems.push(format!("{test}: real PAPI {real}, ours {ours}"));
        } else if real == "SKIPPED" && rank(ours) == 0 {
            problems.push(format!("{test}: real PAPI skips, ours {ours}"));
        }
        if let Some(was) = expected.get(test)
            && rank(ours) < rank(was)
        {
            problems.push(format!("{test}: {ours}, expected {was}"));
        }
    }
    (ran, problems)
}
