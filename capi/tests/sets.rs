//! Event sets through the C API, from C (`tests/c/sets.c`): adding N events opens O(N)
//! counters (strace, counting the `perf_event_open` calls, is the witness), an add past the
//! group limit is refused at once (the kernel's count of read calls), and a process whose
//! threads come and go is counted round after round without an error.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::c_program;

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// `tests/c/sets.c`, built.
fn program() -> PathBuf {
    c_program("sets")
}

/// Up to `n` tracepoints that open cheaply (not `syscalls`), as `subsystem:event`.
fn cheap_tracepoints(n: usize) -> Vec<String> {
    let _ = counterhal_conformance::fixtures::tracefs_mounted();
    let events = Path::new("/sys/kernel/tracing/events");
    let mut found = Vec::new();
    for system in [
        "sched",
        "timer",
        "irq",
        "signal",
        "task",
        "workqueue",
        "kmem",
    ] {
        let Ok(entries) = std::fs::read_dir(events.join(system)) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("id").is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        found.extend(names.into_iter().map(|name| format!("{system}:{name}")));
    }
    found.truncate(n);
    found
}

#[test]
fn adding_n_events_through_the_c_api_opens_each_at_most_twice() {
    let mut names: Vec<String> = ["page-faults", "task-clock", "context-switches"]
        .map(String::from)
        .to_vec();
    names.extend(cheap_tracepoints(60));
    if names.len() < 40 {
        skip!(
            Need::Privilege,
            "needs root and tracefs for 40 tracepoints, found {}",
            names.len()
        );
    }
    let program = program();
    let log = program.with_extension("strace");
    let run = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=perf_event_open", "-o"])
        .arg(&log)
        .arg(&program)
        .arg("adds")
        .args(&names)
        .output();
    let Ok(out) = run else {
        skip!(
            Need::Tools,
            "strace is not installed (apt-get install strace)"
        );
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!("added {}", names.len())),
        "{stdout}{stderr}"
    );
    let opens = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains("perf_event_open("))
        .count();
    let _ = std::fs::remove_file(&log);
    eprintln!("{opens} perf_event_open calls for {} adds", names.len());
    // Each add opens its event once, the start each once more; opening the backend a few.
    let bound = 2 * names.len() + 10;
    assert!(
        opens <= bound,
        "{opens} perf_event_open calls for {} adds (at most {bound})",
        names.len()
    );
}

#[test]
fn a_process_whose_threads_come_and_go_counts_through_the_c_api_without_an_error() {
    let out = Command::new(program())
        .args(["churn", "400"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("errors 0 of 400 rounds"),
        "{stdout}{}",
        stderr.lines().take(10).collect::<Vec<_>>().join("\n")
    );
}

/// Past a set's group limit an add is refused at once: resolving the new name is all it reads
/// (4 reads here), where each refused add resolved every name of the set again (4,096 reads,
/// 0.05 s an add past the Linux backend's 1,022 events; 10,000 adds took 15 minutes).
/// Oracle: the kernel's count of this process's read(2) calls (`syscr`, /proc/self/io) and
/// the kernel's group limit (its 16 KiB read of a group), which refuses the add at 1,022.
#[test]
fn an_add_past_the_group_limit_is_refused_without_resolving_the_set_again() {
    let out = Command::new(program())
        .args(["limit", "20"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    let words: Vec<&str> = stdout.split_whitespace().collect();
    let number = |key: &str| -> i64 {
        let at = words.iter().position(|w| *w == key);
        at.and_then(|i| words.get(i + 1)?.parse().ok())
            .unwrap_or_else(|| panic!("no `{key} N` in: {stdout}{stderr}"))
    };
    assert_eq!(number("refused"), 20, "{stdout}{stderr}");
    assert!(
        stderr.contains("at most"),
        "the refusal names the limit: {stderr}"
    );
    let reads = number("reads");
    assert!(
        reads <= 16 * 20,
        "20 refused adds past the limit of {} made {reads} reads (at most 320: the new \
         name's alone)",
        number("limit")
    );
}
