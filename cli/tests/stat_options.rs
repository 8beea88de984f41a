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

/// The result lines of a `-x,` or `-j` run (perf may add blank lines and notes).
fn result_lines(out: &Output) -> Vec<String> {
    stderr(out)
        .lines()
        .filter(|l| l.contains(',') && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// The value of `"key" : value` in a `-j` line, quotes and all.
fn json_field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(&format!("\"{key}\" : "))? + key.len() + 5;
    let rest = &line[at..];
    let end = if let Some(quoted) = rest.strip_prefix('"') {
        quoted.find('"')? + 2
    } else {
        rest.find([',', '}'])?
    };
    Some(&rest[..end])
}

const TOOLS: &str = "duration_time,user_time,system_time";

#[test]
fn tool_events_print_as_perfs_do() {
    linux_or_skip!();
    // Enough work for a user time of more than a clock tick in both.
    let work = "i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done";
    let o = ours(&["-x,", "-e", TOOLS, "--", "sh", "-c", work]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines = result_lines(&o);
    assert_eq!(lines.len(), 3, "{lines:#?}");
    for (line, name) in lines.iter().zip(TOOLS.split(',')) {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), 7, "{line}");
        assert_eq!((fields[1], fields[2]), ("ns", name), "{line}");
    }
    let duration: u64 = lines[0].split(',').next().unwrap().parse().unwrap();
    assert!(duration > 0, "{}", lines[0]);
    let table = ours(&["-e", TOOLS, "--", "sh", "-c", work]);
    let text = stderr(&table);
    let line = text.lines().find(|l| l.contains("duration_time")).unwrap();
    assert!(
        line.trim_start()
            .split(' ')
            .next()
            .unwrap()
            .parse::<u64>()
            .is_ok(),
        "nanoseconds, digits not grouped: {line}"
    );
    assert!(line.contains(" ns "), "{line}");
    let j = ours(&["-j", "-e", TOOLS, "--", "sh", "-c", work]);
    let jl = result_lines(&j);
    assert_eq!(jl.len(), 3, "{jl:#?}");
    assert_eq!(json_field(&jl[0], "unit"), Some("\"ns\""), "{}", jl[0]);
    if !perf_available() {
        return;
    }
    let p = perf(&["-x,", "-e", TOOLS, "--", "sh", "-c", work]);
    let perf_lines = result_lines(&p);
    assert_eq!(perf_lines.len(), lines.len(), "{perf_lines:#?}");
    for (o, p) in lines.iter().zip(&perf_lines) {
        let of: Vec<&str> = o.split(',').collect();
        let pf: Vec<&str> = p.split(',').collect();
        assert_eq!(of.len(), pf.len(), "ours {o}\nperf {p}");
        assert_eq!(of[1..3], pf[1..3], "ours {o}\nperf {p}");
    }
    let pj = perf(&["-j", "-e", TOOLS, "--", "sh", "-c", work]);
    for (o, p) in jl.iter().zip(result_lines(&pj)) {
        for key in ["unit", "event"] {
            assert_eq!(
                json_field(o, key),
                json_field(&p, key),
                "ours {o}\nperf {p}"
            );
        }
        let quoted = |line: &str| json_field(line, "counter-value").map(|v| v.starts_with('"'));
        assert_eq!(quoted(o), quoted(&p), "ours {o}\nperf {p}");
    }
}

#[test]
fn tool_events_divide_into_intervals() {
    linux_or_skip!();
    let o = ours(&[
        "-x,",
        "-I",
        "40",
        "-e",
        "duration_time,user_time",
        "--",
        "sleep",
        "0.1",
    ]);
    let lines = result_lines(&o);
    let durations: Vec<u64> = lines
        .iter()
        .filter(|l| l.contains(",duration_time,"))
        .map(|l| l.split(',').nth(1).unwrap().parse().unwrap())
        .collect();
    assert!(durations.len() >= 2, "{lines:#?}");
    // Each interval's duration is its length: about 40 ms, the last one shorter.
    for d in &durations[..durations.len() - 1] {
        assert!(*d >= 40_000_000, "{lines:#?}");
    }
    assert!(
        lines
            .iter()
            .filter(|l| l.contains(",user_time,"))
            .all(|l| l.contains("<not counted>")),
        "CPU times are the command's end's, as perf prints them: {lines:#?}"
    );
}
