//! `counterhal_set_read` from a signal handler (a profiler's `SIGPROF`) while the thread it
//! interrupted reads the same set: the read of a started set takes no lock and allocates
//! nothing.

use std::process::Command;

use crate::common::c_program;

/// A 1 kHz `SIGPROF` timer whose handler calls `counterhal_set_read` while the main thread
/// calls it in a loop on the same set, for 2 s (`tests/c/signal_read.c`): the run ends by
/// itself (a watchdog in the program, and `timeout` around it, say what they saw
/// otherwise), every read answers `COUNTERHAL_OK`, and task-clock never reads below a read
/// that ended before it began. Before, a handler's read on top of another call was refused
/// with `COUNTERHAL_EBUSY`. Oracle: the kernel's task-clock, which only grows, and Debian's
/// PAPI 7.0 running the same program on PAPI's interface
/// (papi/tests/signal_reads.rs), whose read takes no lock.
#[test]
fn counterhal_set_read_in_a_signal_handler_over_a_read_neither_fails_nor_disagrees() {
    let program = c_program("signal_read");
    let out = Command::new("timeout")
        .arg("30")
        .arg(&program)
        .arg("2")
        .output()
        .expect("timeout (coreutils) runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !matches!(out.status.code(), Some(4 | 124)),
        "a read never returned (a deadlock): {text}"
    );
    if out.status.code() == Some(3) {
        counterhal_conformance::skip!(
            counterhal_conformance::skip::Need::System,
            "task-clock cannot be counted here: {text}"
        );
    }
    let field = |name: &str| -> i64 {
        let mut words = text.split_whitespace();
        words.find(|w| *w == name);
        words
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no `{name} N` in: {text}"))
    };
    assert_eq!(field("failed"), 0, "{text}");
    assert_eq!(field("backwards"), 0, "{text}");
    assert!(field("handler") > 0, "no handler read: {text}");
    assert!(out.status.success(), "{:?}: {text}", out.status);
}
