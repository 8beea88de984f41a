//! The harness loop (reset, enable, work, disable, read) through the facade's paths: an
//! `EventSet` opened by name, a `MultiSet` and named regions, each over a group that mixes
//! PMUs (the getpid tracepoint, `page-faults` of the software PMU and `task-clock`, a PMU of
//! its own).
//!
//! Oracle: the kernel's getpid tracepoint, which counts each call this test makes. Before the
//! Linux backend enabled groups through their leader alone, the event set and the multi-set
//! read no getpid call after their first window; regions, which keep their counters running
//! and take differences, counted right, and are here so that they stay right.

use counterhal::OpenOptions;
use counterhal::advanced::MultiSet;
use counterhal::prelude::*;
use counterhal::region::Regions;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

const GETPID: &str = "syscalls:sys_enter_getpid";
/// `page-faults` leads: the getpid tracepoint and `task-clock` are members of other PMUs.
const EVENTS: [&str; 3] = ["page-faults", GETPID, "task-clock"];

/// A backend that counts the getpid tracepoint here, or `None`.
fn backend() -> Option<Chosen> {
    // The tracepoint needs tracefs, which the library does not mount unasked.
    let _ = counterhal_conformance::fixtures::tracefs_mounted();
    open_default()
        .ok()
        .filter(|chosen| chosen.resolve(GETPID).is_ok())
}

fn getpid(times: u64) {
    for _ in 0..times {
        std::hint::black_box(std::process::id());
    }
}

/// Windows of distinct lengths, so a window counted twice or not at all cannot match.
const WINDOWS: [u64; 5] = [5, 7, 11, 2, 9];

#[test]
fn harness_loop_over_an_event_set_counts_every_member_in_every_window() {
    let Some(chosen) = backend() else {
        skip!(Need::System, "no backend here counts the getpid tracepoint");
    };
    let mut set = chosen
        .open_named(&EVENTS, &Target::ThisThread, &OpenOptions::default())
        .unwrap();
    for (window, n) in WINDOWS.into_iter().enumerate() {
        set.reset().unwrap();
        set.enable().unwrap();
        getpid(n);
        set.disable().unwrap();
        let readings = set.read_to_vec().unwrap();
        assert_eq!(
            readings[1].value, n,
            "getpid in window {window}: {readings:?}"
        );
        assert!(
            readings[2].value > 0,
            "task-clock in window {window}: {readings:?}"
        );
    }
}

#[test]
fn a_multi_set_restarted_counts_every_window() {
    let Some(chosen) = backend() else {
        skip!(Need::System, "no backend here counts the getpid tracepoint");
    };
    let events: Vec<_> = EVENTS.iter().map(|e| chosen.resolve(e).unwrap()).collect();
    let mut set = MultiSet::open(
        chosen.backend(),
        &events,
        &Target::ThisThread,
        &OpenOptions::default(),
        &counterhal::system::System::host(),
    )
    .unwrap();
    let (mut total, mut clock) = (0, 0);
    for (window, n) in WINDOWS.into_iter().enumerate() {
        set.enable().unwrap();
        getpid(n);
        set.disable().unwrap();
        total += n;
        let readings = set.read_to_vec().unwrap();
        assert_eq!(
            readings[1].value, total,
            "getpid after window {window}: {readings:?}"
        );
        assert!(
            readings[2].value > clock,
            "task-clock in window {window}: {readings:?}"
        );
        clock = readings[2].value;
    }
}

#[test]
fn regions_entered_again_count_every_call() {
    let Some(chosen) = backend() else {
        skip!(Need::System, "no backend here counts the getpid tracepoint");
    };
    let regions = Regions::new(chosen.into_backend(), &EVENTS);
    assert_eq!(regions.events().len(), 3, "every event counted");
    for n in WINDOWS {
        regions.begin("calls").unwrap();
        getpid(n);
        regions.end("calls").unwrap();
    }
    let totals = &regions.report().regions["calls"];
    assert_eq!(totals.calls, WINDOWS.len() as u64);
    assert_eq!(
        totals.readings[1].value,
        WINDOWS.iter().sum::<u64>(),
        "getpid over every call: {totals:?}"
    );
}
