//! The self-monitoring read (x86's `rdpmc`, Arm64's `mrs` of the PMU's counters) against the
//! kernel's `read()` of the same event.
//!
//! Oracle: the kernel's own count (`read()`), taken between two user-space reads of a running
//! `instructions:u`: the counter only grows, so a correct user-space read brackets it. A
//! user-space read that missed the page's offset, extended the wrong sign or read another
//! counter lands outside. This needs a hardware PMU that allows user-space reads: on the
//! aarch64 lab (QEMU's PMUv3 under Debian's arm64 kernel, `kernel.perf_user_access=1`) it runs;
//! without a PMU it skips.

use std::sync::Arc;

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use counterhal_conformance::workload::retire_instructions;
use counterhal_hal::{Backend, BackendTarget, EventRequest, Group, OpenOptions, Reading};
use counterhal_linux::probe;

/// Why this machine withholds user-space counter reads, if it says so.
fn user_reads_withheld() -> Option<String> {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|t| t.trim().to_string())
    };
    if cfg!(target_arch = "aarch64") {
        return match read("/proc/sys/kernel/perf_user_access").as_deref() {
            Some("1") => None,
            other => Some(format!("kernel.perf_user_access is {other:?}, not 1")),
        };
    }
    match read("/sys/bus/event_source/devices/cpu/rdpmc").as_deref() {
        Some("0") => Some("/sys/bus/event_source/devices/cpu/rdpmc is 0".into()),
        _ => None,
    }
}

#[test]
fn user_space_reads_bracket_the_kernel_s_count() {
    let db = Arc::new(counterhal_events::Database::shipped().expect("shipped database"));
    let linux = probe(db, None, counterhal_system::System::host())
        .expect("perf_event_open usable on this machine");
    if !linux.facts().hardware_pmu {
        skip!(
            Need::Hardware,
            "no core PMU: no counter to read in user space"
        );
    }
    if let Some(reason) = user_reads_withheld() {
        skip!(
            Need::Privilege,
            "user-space counter reads are off: {reason}"
        );
    }
    let requests: Vec<EventRequest> = linux
        .resolve("instructions:u")
        .unwrap()
        .terms
        .into_iter()
        .map(|term| term.request)
        .collect();
    let mut group = linux
        .open(
            &requests,
            &BackendTarget::ThisThread,
            &OpenOptions::default(),
        )
        .unwrap();
    assert!(
        group.self_monitoring(),
        "pages mapped for a this-thread hardware event"
    );
    group.enable().unwrap();
    for round in 0..20 {
        assert!(
            retire_instructions(10_000),
            "an instruction loop on this architecture"
        );
        let (mut before, mut kernel, mut after) = (
            [Reading::default()],
            [Reading::default()],
            [Reading::default()],
        );
        let first = group.read_in_user_space(&mut before);
        group.read_through_kernel(&mut kernel).unwrap();
        let second = group.read_in_user_space(&mut after);
        assert!(
            first && second,
            "round {round}: the user-space read fell back to the kernel"
        );
        let (before, kernel, after) = (before[0].value, kernel[0].value, after[0].value);
        assert!(
            before <= kernel && kernel <= after,
            "round {round}: user space read {before} then {after}, the kernel {kernel} between"
        );
        // Between the two user-space reads lies one read() (its user-space part) and little
        // else: far fewer than the loop's 20,000 instructions.
        assert!(
            after - before < 5_000,
            "round {round}: {before} to {after} around one read()"
        );
        assert!(
            kernel >= 20_000 * (round + 1),
            "round {round}: {kernel} instructions"
        );
    }
    group.disable().unwrap();
}

/// A group reset while it counts reads what the kernel reads, in user space or not: Linux
/// 6.1 on aarch64 leaves a 32-bit counter's page 2^32 short after such a reset
/// (`counterhal_linux::rdpmc::PAGES_KEPT_ACROSS_RESETS`), which the group must not read.
/// Oracle: the kernel's `read()` of the same events, taken between two reads of the group; and
/// the instructions retired since the reset (at least the loop's, far fewer than before it).
#[test]
fn a_reset_while_counting_reads_what_the_kernel_reads() {
    let db = Arc::new(counterhal_events::Database::shipped().expect("shipped database"));
    let linux = probe(db, None, counterhal_system::System::host())
        .expect("perf_event_open usable on this machine");
    if !linux.facts().hardware_pmu {
        skip!(Need::Hardware, "no core PMU: no counter to reset");
    }
    let requests: Vec<EventRequest> = ["instructions:u", "cycles:u"]
        .iter()
        .flat_map(|name| linux.resolve(name).unwrap().terms)
        .map(|term| term.request)
        .collect();
    let mut group = linux
        .open(
            &requests,
            &BackendTarget::ThisThread,
            &OpenOptions::default(),
        )
        .unwrap();
    group.enable().unwrap();
    for round in 0..5 {
        assert!(retire_instructions(1_000_000), "an instruction loop here");
        group.reset().unwrap();
        assert!(retire_instructions(10_000), "an instruction loop here");
        let (mut before, mut kernel, mut after) = (
            [Reading::default(); 2],
            [Reading::default(); 2],
            [Reading::default(); 2],
        );
        group.read(&mut before).unwrap();
        group.read_through_kernel(&mut kernel).unwrap();
        group.read(&mut after).unwrap();
        let instructions = (before[0].value, kernel[0].value, after[0].value);
        assert!(
            instructions.0 <= instructions.1 && instructions.1 <= instructions.2,
            "round {round}: the group read {} then {}, the kernel {} between",
            instructions.0,
            instructions.2,
            instructions.1
        );
        assert!(
            (20_000..1_000_000).contains(&instructions.1),
            "round {round}: {} instructions since the reset",
            instructions.1
        );
        assert!(
            before[1].value <= kernel[1].value && kernel[1].value <= after[1].value,
            "round {round}: cycles {} then {}, the kernel {} between",
            before[1].value,
            after[1].value,
            kernel[1].value
        );
    }
    group.disable().unwrap();
}
