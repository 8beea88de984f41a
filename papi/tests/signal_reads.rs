//! `PAPI_read` from a signal handler (a profiler's `SIGPROF`) while the thread it interrupted
//! reads the same set: the read path takes no lock and allocates nothing.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// `tests/c/signal_read.c` built against Debian's papi.h, once for both tests (one building
/// it while the other runs it is refused: "text file busy").
fn program() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            crate::common::c_program("signal_read", "theirs", Path::new("/usr/include"), true)
        })
        .clone()
}

/// What `tests/c/signal_read.c` printed: its fields by name.
fn field(text: &str, name: &str) -> i64 {
    let mut words = text.split_whitespace();
    words.find(|w| *w == name);
    words
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `{name} N` in: {text}"))
}

/// Runs the program on Debian's PAPI (`ours` false) or ours with `args` (its seconds, and
/// `unstarted`): what it printed, `None` where task-clock cannot be counted (exit 3).
fn run(program: &Path, ours: bool, args: &[&str]) -> Option<String> {
    let mut command = std::process::Command::new(program);
    command.args(args);
    if ours {
        command.env("LD_LIBRARY_PATH", crate::common::library_dir());
    }
    let which = if ours { "ours" } else { "Debian's PAPI 7.0" };
    let out = crate::common::run_within(&mut command, Duration::from_secs(30))
        .unwrap_or_else(|seen| panic!("{which}: a read never returned (a deadlock): {seen}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.code() == Some(3) {
        return None;
    }
    assert!(out.status.success(), "{which} ({:?}): {text}", out.status);
    Some(text)
}

/// A 1 kHz `SIGPROF` timer whose handler calls `PAPI_read` while the main thread calls it in
/// a loop on the same set, for 2 s: no read deadlocks (each run ends by itself; a watchdog in
/// the program and a 30 s limit here say what they saw otherwise), every read answers
/// `PAPI_OK`, and task-clock never reads below a read that ended before (the handler's and
/// the main thread's reads agree). Ours took the library's lock in `PAPI_read`, and a handler
/// that interrupted a `PAPI_read` waited for it forever (gdb: `onalarm -> PAPI_read ->
/// Mutex::lock_contended` over `main -> PAPI_read`). Oracle: Debian's PAPI 7.0 running the
/// same program, whose read takes no lock.
#[test]
fn papi_read_in_a_signal_handler_over_papi_read_neither_deadlocks_nor_disagrees() {
    system_papi_or_skip!();
    let program = program();
    // Both at once: 2 s, not 4.
    let (theirs, ours) = std::thread::scope(|scope| {
        let theirs = scope.spawn(|| run(&program, false, &["2"]));
        let ours = run(&program, true, &["2"]);
        (theirs.join().expect("Debian's run"), ours)
    });
    let Some(theirs) = theirs else {
        skip!(
            Need::System,
            "Debian's PAPI cannot count perf::TASK-CLOCK here"
        );
    };
    let ours = ours.expect("ours counts task-clock where PAPI does");
    for (which, text) in [("Debian's PAPI", &theirs), ("ours", &ours)] {
        assert_eq!(field(text, "failed"), 0, "{which}: {text}");
        assert_eq!(field(text, "refused"), 0, "{which}: {text}");
        assert_eq!(field(text, "backwards"), 0, "{which}: {text}");
        assert!(
            field(text, "handler") > 0,
            "{which}: no handler read: {text}"
        );
        assert!(field(text, "main") > 0, "{which}: no main read: {text}");
    }
}

/// A set never started is read under the library's lock (PAPI reads it as zeros): a 1 kHz
/// `SIGPROF` handler's `PAPI_read` that interrupted the main thread's `PAPI_read` of it,
/// which holds the lock, is refused at once (`PAPI_EMISC`) instead of waiting for the lock
/// forever, and every other read answers `PAPI_OK`; the run ends by itself in its half
/// second. Oracle: Debian's PAPI 7.0, whose reads of the same set all answer `PAPI_OK` (it
/// takes no lock), and the program's watchdog.
#[test]
fn a_handler_that_interrupts_a_call_holding_the_lock_is_refused_never_left_waiting() {
    system_papi_or_skip!();
    let program = program();
    let args = ["0.5", "unstarted"];
    let Some(theirs) = run(&program, false, &args) else {
        skip!(
            Need::System,
            "Debian's PAPI cannot count perf::TASK-CLOCK here"
        );
    };
    let ours = run(&program, true, &args).expect("ours counts task-clock where PAPI does");
    assert_eq!(field(&theirs, "refused"), 0, "Debian's PAPI: {theirs}");
    for (which, text) in [("Debian's PAPI", &theirs), ("ours", &ours)] {
        assert_eq!(field(text, "failed"), 0, "{which}: {text}");
        assert!(
            field(text, "handler") > 0,
            "{which}: no handler read: {text}"
        );
    }
}
