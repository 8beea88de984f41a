//! `counterhal serve --times`: the times enabled and running of an event that never
//! multiplexes (the `msr` PMU's) are left out by default, and are equal where exported.

use crate::common::*;
use crate::serve::{Exporter, get};
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The values of `family` in the scrape `text` for the event `msr/tsc/` (its count) or its
/// group (its times: it counts alone, its own group), by their labels.
fn tsc(text: &str, family: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter_map(|l| l.strip_prefix(family)?.strip_prefix('{'))
        .filter(|l| l.starts_with("event=\"msr/tsc/\"") || l.starts_with("group=\"msr/tsc/\""))
        .filter_map(|l| {
            let (labels, value) = l.rsplit_once("} ")?;
            Some((labels.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// The TSC of the `msr` PMU is exported without its two times by default; with `--times
/// always` its time running equals its time enabled on every CPU at each of five scrapes,
/// as the kernel keeps them for an event that is never left off for another.
///
/// Oracle: the kernel's own times of each CPU's `msr/tsc/` event (`read(2)` with
/// `PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING`), which would differ
/// had the multiplexer ever left it inactive (`merge_sched_in`, kernel/events/core.c).
#[test]
fn msr_events_always_run_so_their_times_are_left_out() {
    serve_or_skip!();
    if !running_as_root() {
        skip!(Need::Privilege, "counting every CPU takes root here");
    }
    if !std::path::Path::new("/sys/bus/event_source/devices/msr/events/tsc").exists() {
        skip!(Need::Hardware, "no msr PMU with a tsc event here");
    }
    let default = Exporter::start(&["-e", "msr/tsc/"]);
    let (_, text) = get(default.address, "/metrics", None);
    assert!(!tsc(&text, "counterhal_event_total").is_empty(), "{text}");
    for family in [
        "counterhal_event_enabled_seconds_total",
        "counterhal_event_running_seconds_total",
    ] {
        assert_eq!(tsc(&text, family), [], "{family} by default: {text}");
    }
    let always = Exporter::start(&["-e", "msr/tsc/", "--times", "always"]);
    for _ in 0..5 {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let (_, text) = get(always.address, "/metrics", None);
        let enabled = tsc(&text, "counterhal_event_enabled_seconds_total");
        let running = tsc(&text, "counterhal_event_running_seconds_total");
        assert_eq!(
            enabled.len() as u64,
            counterhal::online_cpus(&counterhal::system::System::host()).len(),
            "{text}"
        );
        assert_eq!(enabled, running, "{text}");
    }
}
