//! `counterhal script`: a recording's stat records as perf's `perf script` prints them. The
//! oracle is perf 7.2.13 (Debian sid's, in the current-releases lab's root, run by the root's
//! loader): its `perf script` and ours read the same bytes, and print the same lines. The
//! recordings are perf 7.2's own pipes (its files it cannot read back: docs/command.md) and
//! counterhal's file and pipe; the events are software ones, which count exactly here.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

use crate::common::*;

/// `program ARGS` with `input` on its standard input.
fn fed(program: &Command, args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(program.get_program())
        .args(program.get_args())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run it");
    let mut stdin = child.stdin.take().expect("its standard input");
    stdin.write_all(input).expect("write its input");
    drop(stdin);
    child.wait_with_output().expect("its end")
}

/// Oracle: perf 7.2.13's `perf script -i -` on the same stream (tools/perf/builtin-script.c,
/// `process_stat_round_event`): the heading, one line per event, thread and CPU of each
/// round, the counts as differences from the round before (`-I`), the tool events' names
/// (`duration_time`, type 0xfffffffe). Before: `script` was no subcommand (exit 2), and perf
/// 7.2's stat.sh `test_stat_record_script` failed with counterhal in perf's place.
#[test]
fn script_prints_stat_records_as_perf_7_2_s_perf_script() {
    linux_or_skip!();
    let perf = match perf_7_2() {
        Ok(perf) => perf,
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    let ours = Command::new(bin());
    let dir = std::env::temp_dir().join(format!("counterhal-script-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ours.data");
    let file = file.to_str().unwrap();
    let mut recordings: Vec<(String, Vec<u8>)> = Vec::new();
    let mut record = |who: &Command, args: &[&str]| {
        let out = fed(who, &[&["stat", "record"][..], args].concat(), b"");
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        recordings.push((format!("{:?} {args:?}", who.get_program()), out.stdout));
    };
    let events = "task-clock,page-faults";
    record(&perf, &["-e", events, "-o", "-", "true"]);
    record(&perf, &["-o", "-", "true"]);
    record(
        &perf,
        &["-I", "100", "-e", events, "-o", "-", "sleep", "0.25"],
    );
    record(&ours, &["-e", events, "-o", "-", "true"]);
    if may_count_cpus() {
        record(&perf, &["-a", "-e", events, "-o", "-", "sleep", "0.05"]);
    }
    let out = fed(
        &ours,
        &["stat", "record", "-e", events, "-o", file, "true"],
        b"",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let same = |what: &str, theirs: Output, ours: Output| {
        assert!(ours.status.success(), "{what}: {}", stderr(&ours));
        let text = stdout(&theirs);
        assert!(text.starts_with("CPU   THREAD"), "{what}: {text}");
        assert_eq!(stdout(&ours), text, "{what}");
    };
    let script = ["script", "-i", file];
    same(
        "our file",
        fed(&perf, &script, b""),
        fed(&ours, &script, b""),
    );
    std::fs::remove_dir_all(&dir).ok();
    for (what, bytes) in &recordings {
        let script = ["script", "-i", "-"];
        same(what, fed(&perf, &script, bytes), fed(&ours, &script, bytes));
    }
}

/// Bad input: another file's bytes, and a stream cut inside a record, each refused (exit 2)
/// with what was wrong, never a panic.
#[test]
fn script_refuses_what_is_no_recording() {
    linux_or_skip!();
    let ours = Command::new(bin());
    let out = fed(&ours, &["script", "-i", "-"], b"not a recording at all");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("PERFILE2"), "{}", stderr(&out));
    let piped = fed(
        &ours,
        &["stat", "record", "-o", "-", "-e", "task-clock", "true"],
        b"",
    );
    let cut = &piped.stdout[..piped.stdout.len() - 5];
    let out = fed(&ours, &["script", "-i", "-"], cut);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("truncated"), "{}", stderr(&out));
}
