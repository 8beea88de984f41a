//! `counterhal stat`'s options beyond the layouts, side by side with the installed perf where
//! perf runs them here: how a command whose time is up is stopped, perf's tool events, and the
//! options that shape what is counted and printed.

mod common;

use std::process::{Command, Output};

use common::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

fn perf(args: &[&str]) -> Output {
    Command::new("perf")
        .arg("stat")
        .args(args)
        .output()
        .expect("run perf")
}

fn ours(args: &[&str]) -> Output {
    let mut words = vec!["stat"];
    words.extend_from_slice(args);
    counterhal(&words)
}

/// A scratch file for one test, removed first.
fn scratch(name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("counterhal-{name}-{}", std::process::id()));
    std::fs::remove_file(&path).ok();
    path
}

/// A shell command that writes `TERM` to `marker` when it receives SIGTERM, and sleeps.
fn marks_sigterm(marker: &std::path::Path) -> String {
    format!(
        "trap 'echo TERM > {}; exit 0' TERM; while :; do sleep 0.01; done",
        marker.display()
    )
}

#[test]
fn a_command_whose_time_is_up_gets_sigterm_as_perfs_does() {
    linux_or_skip!();
    let marker = scratch("sigterm-ours");
    let script = marks_sigterm(&marker);
    for pacing in [
        &["--timeout", "100"][..],
        &["-I", "30", "--interval-count", "2"][..],
    ] {
        std::fs::remove_file(&marker).ok();
        let mut args = vec!["-x,", "-e", "task-clock"];
        args.extend_from_slice(pacing);
        args.extend_from_slice(&["--", "sh", "-c", &script]);
        let o = ours(&args);
        assert_eq!(o.status.code(), Some(0), "{pacing:?}: {}", stderr(&o));
        let mark = std::fs::read_to_string(&marker).unwrap_or_default();
        assert_eq!(mark.trim(), "TERM", "{pacing:?}: the command saw SIGTERM");
    }
    std::fs::remove_file(&marker).ok();
    if perf_available() {
        let marker = scratch("sigterm-perf");
        let o = perf(&[
            "-x,",
            "-e",
            "task-clock",
            "--timeout",
            "100",
            "--",
            "sh",
            "-c",
            &marks_sigterm(&marker),
        ]);
        let mark = std::fs::read_to_string(&marker).unwrap_or_default();
        std::fs::remove_file(&marker).ok();
        assert_eq!(mark.trim(), "TERM", "perf too: {}", stderr(&o));
    }
}
