//! `stat` opens each event once, as perf does: with many tracepoints, the `perf_event_open`
//! calls strace sees for counterhal are perf's, give or take the backend's own probe.

use std::path::Path;
use std::process::Command;

use crate::common::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The `perf_event_open` calls strace sees while `program args` runs (with its children).
fn opens_of(program: &Path, args: &[&str], log: &Path) -> Option<usize> {
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=perf_event_open", "-o"])
        .arg(log)
        .arg(program)
        .args(args)
        .env_remove("COUNTERHAL_EVENTS")
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let _ = std::fs::remove_file(log);
    Some(
        text.lines()
            .filter(|line| line.contains("perf_event_open("))
            .count(),
    )
}

#[test]
fn stat_opens_each_tracepoint_once_as_perf_does() {
    perf_or_skip!();
    linux_or_skip!();
    let syscalls = Path::new("/sys/kernel/tracing/events/syscalls");
    let mut names: Vec<String> = std::fs::read_dir(syscalls)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|name| name.starts_with("sys_enter_"))
                .map(|name| format!("syscalls:{name}"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names.truncate(30);
    if names.len() < 30 || !running_as_root() {
        skip!(
            Need::Privilege,
            "needs root and tracefs with the syscall tracepoints"
        );
    }
    let events = names.join(",");
    let args = ["stat", "-e", &events, "--", "true"];
    let log = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-stat-opens-{}", std::process::id()));
    let Some(perf) = opens_of(Path::new("perf"), &args, &log) else {
        skip!(
            Need::Tools,
            "strace is not installed (apt-get install strace)"
        );
    };
    let ours = opens_of(&bin(), &args, &log).expect("strace ran for perf");
    eprintln!("perf_event_open calls: perf {perf}, counterhal {ours}");
    assert!(
        perf >= names.len(),
        "perf opened {perf} for {}",
        names.len()
    );
    // Two opens of its own besides: the backend's probe at start (one open answers whether
    // perf_event_open works and whether inherited groups read as groups) and stat's check
    // that the kernel may be counted; nothing is opened twice.
    assert!(
        ours <= perf + 2,
        "counterhal made {ours} perf_event_open calls where perf made {perf}"
    );
}
