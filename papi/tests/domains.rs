//! `PAPI_DOMAIN` changes what a set counts: perf::PAGE-FAULTS over 1,000 fresh pages touched
//! from user mode (tests/c/domains.c), counted in the user, kernel and all domains. Oracles:
//! the kernel's exact count (one fault per fresh page, in user mode) and perf's own `:u` and
//! `:k` modifiers on the same program (`perf stat -e page-faults:u,page-faults:k`), which
//! attribute the touching program's faults to user mode the same way.

mod common;

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::process::Command;

#[test]
fn the_domain_decides_what_a_software_event_counts() {
    system_papi_or_skip!();
    let program = common::c_program("domains", "ours", &common::manifest().join("include"), true);
    let out = common::run(&program, &[], true);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let count = |domain: &str| -> i64 {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{domain} ")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {domain} count in:\n{text}"))
    };
    if text.contains("add -") {
        skip!(
            Need::System,
            "perf's software events do not open here: {text}"
        );
    }
    assert_eq!(count("user"), 1000, "{text}");
    assert_eq!(count("kernel"), 0, "{text}");
    assert_eq!(count("all"), 1000, "{text}");

    let Ok(perf) = Command::new("perf")
        .args(["stat", "-x,", "-e", "page-faults:u,page-faults:k", "--"])
        .arg(&program)
        .arg("touch")
        .env("LD_LIBRARY_PATH", common::library_dir())
        .output()
    else {
        skip!(
            Need::Tools,
            "perf is not installed (apt-get install linux-perf)"
        );
    };
    let report = String::from_utf8_lossy(&perf.stderr).into_owned();
    let perf_count = |event: &str| -> i64 {
        report
            .lines()
            .find(|l| l.contains(event))
            .and_then(|l| l.split(',').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {event} in perf's report:\n{report}"))
    };
    // The whole process under perf: the 1,000 touched pages and its start-up, in user mode;
    // few in kernel mode, as ours.
    assert!(perf_count("page-faults:u") >= 1000, "{report}");
    assert!(perf_count("page-faults:k") < 100, "{report}");
}
