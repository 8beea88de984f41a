//! Samplers through the C API, from C (`tests/c/sampling.c`), against what the kernel must
//! record: the getpid tracepoint's one sample per call with the caller's ids, one page-fault
//! sample per freshly touched page at its address, one overflow callback per period (and a
//! refreshed sampler stopping itself), and a ring too small for the rate reporting its lost
//! samples (the event's own count of them, PERF_FORMAT_LOST).

use crate::common::{c_program, run_mode};

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

fn run(mode: &str) -> Option<String> {
    let out = run_mode(&c_program("sampling"), mode);
    if let Some(text) = &out {
        eprintln!("{text}");
    }
    out
}

#[test]
fn each_getpid_call_is_one_sample_with_the_caller_s_ids() {
    if run("getpid").is_none() {
        skip!(
            Need::Privilege,
            "the getpid tracepoint needs root and tracefs"
        );
    }
}

#[test]
fn each_fresh_page_is_one_fault_sample_at_its_address() {
    if run("faults").is_none() {
        skip!(Need::System, "page faults cannot be sampled here");
    }
}

#[test]
fn the_overflow_callback_fires_once_per_period_and_refresh_stops_it() {
    if run("overflow").is_none() {
        skip!(
            Need::Privilege,
            "the getpid tracepoint needs root and tracefs"
        );
    }
}

#[test]
fn a_ring_too_small_for_the_rate_reports_its_lost_samples() {
    if run("lost").is_none() {
        skip!(
            Need::System,
            "this kernel does not count lost samples (Linux 6.0)"
        );
    }
}
