//! Every software event the installed perf lists (`perf list sw`, with its `OR` aliases) is
//! known to counterhal by the same name, and `stat -x,` labels it as perf does.

use std::process::Command;

use crate::common::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// perf's software events, each with its aliases: `context-switches OR cs` gives both names.
fn perf_software_events() -> Vec<Vec<String>> {
    let out = Command::new("perf")
        .args(["list", "sw"])
        .output()
        .expect("run perf list");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|line| line.contains("[Software event]"))
        .map(|line| {
            let names = line.split('[').next().unwrap_or_default();
            names
                .split(" OR ")
                .map(|name| name.trim().to_string())
                .filter(|name| !name.is_empty())
                .collect()
        })
        .collect()
}

/// The event field of a `stat -x,` result line (the third of perf's seven).
fn csv_events(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|line| line.split(',').count() >= 3)
        .map(|line| line.split(',').nth(2).unwrap_or_default().to_string())
        .collect()
}

#[test]
fn every_software_event_perf_lists_counts_under_its_name() {
    linux_or_skip!();
    perf_or_skip!();
    let events = perf_software_events();
    assert!(
        events.len() >= 10,
        "perf list sw gave too few events: {events:?}"
    );
    for names in &events {
        let canonical = &names[0];
        for name in names {
            let out = counterhal(&["stat", "-x,", "-e", name, "--", "true"]);
            assert!(
                out.status.success(),
                "stat -e {name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let perf = Command::new("perf")
                .args(["stat", "-x,", "-e", name, "--", "true"])
                .output()
                .expect("run perf stat");
            let (ours, theirs) = (csv_events(&out.stderr), csv_events(&perf.stderr));
            assert_eq!(ours.len(), 1, "stat -x, -e {name}: {ours:?}");
            // perf labels an alias by its canonical name; `:u` is added where the kernel may
            // not be counted (by both).
            assert_eq!(ours, theirs, "event label of {name} ({canonical})");
        }
    }
}
