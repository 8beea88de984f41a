//! serve's perf-event mode counts for a cgroup what opens for it: where its breakpoints find
//! no free debug register (serve's own system-wide breakpoints hold them), the group they
//! form opens event by event for that cgroup, as perf's weak groups (`{a,b}:W`) do, the
//! breakpoints that find none are left out (said once, not exported as counted), and the
//! cgroup's task-clock counts. (Before, the cgroup's sets opened all or nothing: its follow
//! failed at every look, it had no task-clock series, and `counterhal_open_errors_total`
//! climbed at every scrape.)

use std::process::Command;
use std::time::Duration;

use crate::common::*;
use crate::serve_bpf::{Served, make_parent};
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The address of the `n`th breakpoint the test asks for (from 1).
fn address(n: usize) -> String {
    format!("mem:{:#x}", 0x1000 * n)
}

/// How many hardware breakpoints each CPU has free now, as perf 6.1 finds them: `perf stat
/// -a` with 16 read-write breakpoints, which opens each on every CPU and stops at the first
/// the kernel refuses with ENOSPC (`kernel/events/hw_breakpoint.c`, `__reserve_bp_slot`:
/// every slot of that CPU taken), naming it; `None` where all 16 open.
fn free_slots() -> Option<usize> {
    let events: Vec<String> = (1..=16).map(address).collect();
    let out = Command::new("perf")
        .args(["stat", "-x,", "-a", "-e", &events.join(","), "--", "true"])
        .output()
        .expect("perf stat");
    let said = String::from_utf8_lossy(&out.stderr);
    if out.status.success() && !said.contains("returned with 28") {
        return None;
    }
    let refused = said
        .split("for event (")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("perf did not say which breakpoint it could not open: {said}"));
    assert!(said.contains("returned with 28"), "not ENOSPC: {said}");
    let at = events
        .iter()
        .position(|e| e == refused)
        .expect("one of ours");
    Some(at)
}

/// The value of the series of `family` for `event` in `cgroup` (summed over its CPUs), in a
/// scrape: `None` where it has none.
fn series(body: &str, family: &str, event: &str, cgroup: &str) -> Option<f64> {
    let (event, cgroup) = (
        format!("{{event=\"{event}\","),
        format!("cgroup=\"{cgroup}\"}} "),
    );
    body.lines()
        .filter_map(|l| l.strip_prefix(family))
        .filter(|l| l.starts_with(&event))
        .find_map(|l| l.split_once(&cgroup))
        .and_then(|(_, value)| value.parse().ok())
}

/// An unlabelled counter's value in a scrape (0 where absent).
fn plain(body: &str, name: &str) -> f64 {
    body.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// Done when: serve in the perf-event mode with one breakpoint fewer than each CPU has free
/// (3 of x86's 4), grouped, and task-clock, follows a cgroup with a task spinning for a
/// second: the cgroup's task-clock is counted (more than 0.1 s); of its breakpoints, those
/// the one register left takes are exported and the others have no series; those left out
/// are said once on standard error and counted once in
/// `counterhal_cgroup_events_left_out_total`; and `counterhal_open_errors_total` does not
/// climb from scrape to scrape.
///
/// Oracle: the kernel's hardware-breakpoint slots (`kernel/events/hw_breakpoint.c` reserves
/// one for each breakpoint at its opening, per CPU for a CPU's and a cgroup's events alike,
/// and refuses one past them with ENOSPC; x86 has 4 debug registers, `HBP_NUM`), whose free
/// number on each CPU perf 6.1 finds here before serve starts (`perf stat -a` with 16
/// breakpoints stops at the fifth on this project's VMs); and the kernel's task clock of
/// the spinning task.
#[test]
fn a_cgroup_counts_what_opens_for_it_beside_breakpoints_it_cannot_get() {
    let root = crate::unified_or_skip!();
    perf_or_skip!();
    let _slots = breakpoint_slots_alone();
    let Some(free) = free_slots() else {
        skip!(
            Need::System,
            "16 breakpoints open on every CPU: no slot limit to reach"
        );
    };
    eprintln!("perf 6.1: {free} hardware breakpoints free on each CPU");
    if free < 3 {
        skip!(
            Need::System,
            "{free} breakpoints free on each CPU: too few to make a group of two and leave one"
        );
    }
    // One fewer than free: serve's system-wide sets leave one register for the cgroup.
    let breakpoints: Vec<String> = (1..free).map(address).collect();
    let mut cgroup = make_parent(&root, "serve-left-out");
    let events = format!("{},task-clock", breakpoints.join(","));
    let pattern = format!("^{}$", cgroup.name);
    let served = Served::start(&[
        "-e",
        &events,
        "--cgroups",
        &pattern,
        "--cgroup-mode",
        "perf-events",
    ])
    .expect("serve in the perf-event mode");
    let label = format!("/{}", cgroup.name);
    let first = served.scrape();
    assert!(
        first.contains("counterhal_cgroups_matched 1\n"),
        "the cgroup is not matched: {first}"
    );
    cgroup.spin();
    std::thread::sleep(Duration::from_secs(1));
    let mut scrapes = Vec::new();
    for _ in 0..3 {
        scrapes.push(served.scrape());
        std::thread::sleep(Duration::from_millis(300));
    }
    drop(cgroup);
    let last = scrapes.last().unwrap();
    let clock = series(last, "counterhal_event_seconds_total", "task-clock", &label);
    let counted: Vec<&String> = breakpoints
        .iter()
        .filter(|b| series(last, "counterhal_event_total", b, &label).is_some())
        .collect();
    let open_errors: Vec<f64> = std::iter::once(&first)
        .chain(&scrapes)
        .map(|body| plain(body, "counterhal_open_errors_total"))
        .collect();
    let left_out: Vec<f64> = scrapes
        .iter()
        .map(|body| plain(body, "counterhal_cgroup_events_left_out_total"))
        .collect();
    let said = served.said();
    let said_left_out = said
        .lines()
        .filter(|l| l.contains("not counted in this cgroup"))
        .count();
    eprintln!(
        "{} breakpoints system-wide and in {label}: its task-clock {clock:?} s, its \
         breakpoints exported {counted:?}, open errors at each scrape {open_errors:?}, \
         events left out {left_out:?}, said {said_left_out} times",
        breakpoints.len()
    );
    let clock = clock.unwrap_or_else(|| panic!("no task-clock series for {label}: {last}"));
    assert!(
        clock > 0.1,
        "{label}'s task-clock: {clock} s for a second's spin"
    );
    // The register left takes the group's first breakpoint, opened alone.
    assert_eq!(counted, [&breakpoints[0]], "{last}");
    assert!(
        open_errors.windows(2).all(|w| w[0] == w[1]),
        "open errors climb: {open_errors:?}"
    );
    let expected = (breakpoints.len() - 1) as f64;
    assert!(left_out.iter().all(|&n| n == expected), "{left_out:?}");
    assert_eq!(said_left_out, breakpoints.len() - 1, "{said}");
}
