//! `stat record` and `stat report`: perf's `perf.data` stat records (perf's tools/perf/
//! builtin-stat.c, util/header.c, util/synthetic-events.c). The oracles are perf 6.1 (Debian
//! 12's linux-perf, `/usr/bin/perf`) and perf 7.2.13 (Debian sid's, in the lab's sid root):
//! what counterhal writes, their `perf stat report` reads with the counts ours prints; what
//! they write, ours reads with the counts they print. The events are software ones, which
//! count exactly here.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The events recorded: both software, both counted by perf and counterhal alike.
const EVENTS: &str = "page-faults,task-clock";

/// A perf whose `--version` starts `perf version VERSION`: Debian 12's `/usr/bin/perf` for
/// 6.1, the lab's sid root's (run by the root's own loader and libraries) for 7.2.
fn perf_of(version: &str) -> Option<Vec<PathBuf>> {
    let command = match version {
        "6.1" => vec![PathBuf::from("perf")],
        _ => {
            let lab = std::env::var_os("COUNTERHAL_CURRENT_LAB")
                .map_or_else(|| PathBuf::from("/var/cache/counterhal-lab"), PathBuf::from);
            let root = lab.join("sid");
            vec![
                root.join("lib64/ld-linux-x86-64.so.2"),
                PathBuf::from("--library-path"),
                PathBuf::from(format!(
                    "{0}/lib/x86_64-linux-gnu:{0}/usr/lib/x86_64-linux-gnu",
                    root.display()
                )),
                root.join("usr/bin/perf"),
            ]
        }
    };
    let out = Command::new(&command[0])
        .args(&command[1..])
        .arg("--version")
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .starts_with(&format!("perf version {version}"))
        .then_some(command)
}

/// Runs `tool` (a perf command, or counterhal's) with `args`, `input` on its standard input.
fn run(tool: &[PathBuf], args: &[&str], input: Option<&[u8]>) -> Output {
    let mut child = Command::new(&tool[0])
        .args(&tool[1..])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the tool");
    let mut stdin = child.stdin.take().expect("its standard input");
    if let Some(bytes) = input {
        stdin.write_all(bytes).expect("write its input");
    }
    drop(stdin);
    child.wait_with_output().expect("its end")
}

/// A fresh directory for one test's files, under the system's temporary directory.
fn scratch(name: &str) -> PathBuf {
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-record-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

fn counterhal_tool() -> Vec<PathBuf> {
    vec![bin()]
}

/// Each `-x,` line's value and event name (`49`, `page-faults`; `0.54`, `task-clock`).
fn counts(out: &Output) -> Vec<(String, String)> {
    result_lines(out)
        .iter()
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            (fields[0].to_string(), fields[2].to_string())
        })
        .collect()
}

/// `stat -x, report` of `file` (or of `input` on standard input, `-i -`) by `tool`.
fn report(tool: &[PathBuf], file: Option<&Path>, input: Option<&[u8]>) -> Output {
    let source = file.map_or_else(|| "-".to_string(), |f| f.display().to_string());
    let out = run(tool, &["stat", "-x,", "report", "-i", &source], input);
    assert!(out.status.success(), "report: {}", stderr(&out));
    out
}

/// What counterhal records, `perf` (`version`) reports with the same names and counts as
/// counterhal's report: the file form and the pipe form.
fn ours_read_by(version: &str) {
    let Some(perf) = perf_of(version) else {
        skip!(Need::Tools, "no perf {version} (Debian's linux-perf)");
    };
    let dir = scratch(&format!("ours-{version}"));
    let file = dir.join("ours.data");
    let recorded = counterhal(&[
        "stat",
        "record",
        "-o",
        file.to_str().unwrap(),
        "-e",
        EVENTS,
        "--",
        "true",
    ]);
    assert!(recorded.status.success(), "{}", stderr(&recorded));
    let theirs = counts(&report(&perf, Some(&file), None));
    let ours = counts(&report(&counterhal_tool(), Some(&file), None));
    assert_eq!(theirs, ours, "perf {version} and counterhal read {file:?}");
    assert_eq!(
        ours.iter()
            .map(|(_, name)| name.as_str())
            .collect::<Vec<_>>(),
        ["page-faults", "task-clock"]
    );
    assert!(ours[0].0.parse::<u64>().is_ok_and(|n| n > 0), "{ours:?}");
    // The pipe form: the same bytes to both.
    let piped = counterhal(&["stat", "record", "-o", "-", "-e", EVENTS, "true"]);
    assert!(piped.status.success(), "{}", stderr(&piped));
    assert!(piped.stdout.starts_with(b"PERFILE2"));
    let theirs = counts(&report(&perf, None, Some(&piped.stdout)));
    let ours = counts(&report(&counterhal_tool(), None, Some(&piped.stdout)));
    assert_eq!(theirs, ours, "perf {version} and counterhal read the pipe");
    assert_eq!(ours.len(), 2, "{ours:?}");
}

/// Oracle: perf 6.1's `perf stat report` (Debian 12's linux-perf 6.1).
#[test]
fn perf_6_1_reports_what_counterhal_records() {
    linux_or_skip!();
    ours_read_by("6.1");
}

/// Oracle: perf 7.2.13's `perf stat report` (Debian sid's linux-perf, the lab's sid root).
#[test]
fn perf_7_2_reports_what_counterhal_records() {
    linux_or_skip!();
    ours_read_by("7.2");
}

/// What `perf` (`version`) records, counterhal reports with the counts perf printed while it
/// recorded (`perf stat -x, record` prints them), and with those perf 6.1's own report
/// prints (perf 7.2's report refuses its own files: it writes `HEADER_COMPRESSED` with a
/// `comp_mmap_len` of 0, which its reader rejects); the file form and the pipe form.
fn theirs_read_by_ours(version: &str) {
    let Some(perf) = perf_of(version) else {
        skip!(Need::Tools, "no perf {version} (Debian's linux-perf)");
    };
    let dir = scratch(&format!("theirs-{version}"));
    let file = dir.join("theirs.data");
    let path = file.to_str().unwrap();
    let recorded = run(
        &perf,
        &[
            "stat", "-x,", "record", "-o", path, "-e", EVENTS, "--", "true",
        ],
        None,
    );
    assert!(recorded.status.success(), "{}", stderr(&recorded));
    let ours = counts(&report(&counterhal_tool(), Some(&file), None));
    assert_eq!(ours, counts(&recorded), "perf {version}'s {file:?}");
    if version == "6.1" {
        assert_eq!(ours, counts(&report(&perf, Some(&file), None)));
    }
    assert_eq!(ours.len(), 2, "{ours:?}");
    let piped = run(
        &perf,
        &["stat", "record", "-o", "-", "-e", EVENTS, "--", "true"],
        None,
    );
    assert!(piped.status.success(), "{}", stderr(&piped));
    let theirs = counts(&report(&perf, None, Some(&piped.stdout)));
    let ours = counts(&report(&counterhal_tool(), None, Some(&piped.stdout)));
    assert_eq!(theirs, ours, "perf {version}'s pipe");
    assert_eq!(ours.len(), 2, "{ours:?}");
}

/// Oracle: perf 6.1 (Debian 12's linux-perf 6.1), `perf stat record` and `report`.
#[test]
fn counterhal_reports_what_perf_6_1_records() {
    linux_or_skip!();
    theirs_read_by_ours("6.1");
}

/// Oracle: perf 7.2.13 (the lab's sid root), `perf stat -x, record` and its pipe's `report`.
#[test]
fn counterhal_reports_what_perf_7_2_records() {
    linux_or_skip!();
    theirs_read_by_ours("7.2");
}

/// perf's tests/shell/stat.sh (`perf stat record -o - true | perf stat report -i -`, and
/// `| perf script -i -`) with counterhal on either side of a shell's pipe, perf 6.1 on the
/// other; the command's own output goes to standard error, not into the records (perf's
/// `dup2(2, 1)`).
#[test]
fn a_shell_pipe_joins_counterhal_and_perf_6_1_both_ways() {
    linux_or_skip!();
    if perf_of("6.1").is_none() {
        skip!(Need::Tools, "no perf 6.1 (Debian 12's linux-perf)");
    }
    let ours = bin();
    let ours = ours.display();
    for line in [
        format!("{ours} stat record -o - echo said | perf stat report -i -"),
        format!("perf stat record -o - -e {EVENTS} echo said | {ours} stat report -i -"),
        format!("{ours} stat record -o - -e {EVENTS} echo said | {ours} stat report"),
    ] {
        let out = Command::new("sh")
            .args(["-c", &format!("set -e; {line}")])
            .output()
            .expect("sh");
        let text = stderr(&out);
        assert!(out.status.success(), "{line}: {text}");
        assert!(text.contains("said"), "{line}: {text}");
        assert!(
            text.contains("Performance counter stats for 'pipe'"),
            "{line}: {text}"
        );
        assert!(text.contains("page-faults"), "{line}: {text}");
    }
    // stat.sh's test_stat_record_script: perf script prints the records.
    let line = format!("{ours} stat record -e task-clock -o - true | perf script -i -");
    let out = Command::new("sh").args(["-c", &line]).output().expect("sh");
    let text = stdout(&out);
    let heading = ["CPU", "THREAD", "VAL", "ENA", "RUN", "TIME", "EVENT"];
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().eq(heading.iter().copied())),
        "{line}: {text}{}",
        stderr(&out)
    );
    assert!(text.contains("task-clock"), "{line}: {text}");
}

/// Bad input: a truncated file, another magic, a size field of 2^62 bytes, a pipe stream cut
/// in a record; each refused (exit 2) with what was wrong, never a panic (101) or an
/// allocation of the size a field claims. The well-formed file is perf 6.1's where it is
/// here, else counterhal's own.
#[test]
fn truncated_and_corrupted_recordings_are_refused_clearly() {
    linux_or_skip!();
    let dir = scratch("bad");
    let file = dir.join("good.data");
    let path = file.to_str().unwrap();
    let recorded = match perf_of("6.1") {
        Some(perf) => run(
            &perf,
            &["stat", "record", "-o", path, "-e", EVENTS, "--", "true"],
            None,
        ),
        None => counterhal(&["stat", "record", "-o", path, "-e", EVENTS, "--", "true"]),
    };
    assert!(recorded.status.success(), "{}", stderr(&recorded));
    let good = std::fs::read(&file).unwrap();
    let mut huge = good.clone();
    huge[32..40].copy_from_slice(&(1u64 << 62).to_le_bytes());
    let mut magic = good.clone();
    magic[7] = b'3';
    let mut long_record = good.clone();
    let data_at = u64::from_le_bytes(good[40..48].try_into().unwrap()) as usize;
    long_record[data_at + 6..data_at + 8].copy_from_slice(&u16::MAX.to_le_bytes());
    for (name, bytes, said) in [
        ("truncated", &good[..good.len() / 2], "past the file"),
        ("header", &good[..40], "truncated"),
        ("huge", &huge[..], "4611686018427387904 bytes"),
        ("magic", &magic[..], "PERFILE2"),
        ("record", &long_record[..], "says it has 65535 bytes"),
    ] {
        let bad = dir.join(name);
        std::fs::write(&bad, bytes).unwrap();
        let out = counterhal(&["stat", "report", "-i", bad.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        assert!(stderr(&out).contains(said), "{name}: {}", stderr(&out));
    }
    let piped = counterhal(&["stat", "record", "-o", "-", "-e", EVENTS, "true"]);
    let cut = &piped.stdout[..piped.stdout.len() - 5];
    let out = run(
        &counterhal_tool(),
        &["stat", "report", "-i", "-"],
        Some(cut),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("truncated"), "{}", stderr(&out));
}

/// perf's rules for `stat record`: `-r` is refused (perf: "Cannot use -r option with perf
/// stat record"), as are -I and -A here (the records hold the run's sums); options are read
/// on both sides of the word.
#[test]
fn record_takes_stat_s_options_on_both_sides_and_refuses_runs() {
    linux_or_skip!();
    let dir = scratch("both");
    let file = dir.join("both.data");
    let path = file.to_str().unwrap();
    let out = counterhal(&[
        "stat",
        "-e",
        "page-faults",
        "record",
        "-o",
        path,
        "-e",
        "task-clock",
        "--",
        "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let names: Vec<String> = counts(&report(&counterhal_tool(), Some(&file), None))
        .into_iter()
        .map(|(_, name)| name)
        .collect();
    assert_eq!(names, ["page-faults", "task-clock"]);
    for refused in [&["-r", "2"][..], &["-I", "100"], &["-a", "-A"]] {
        let mut words = vec!["stat", "record", "-o", path];
        words.extend_from_slice(refused);
        words.extend(["--", "true"]);
        let out = counterhal(&words);
        assert_eq!(out.status.code(), Some(2), "{refused:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("stat record"), "{}", stderr(&out));
    }
}

/// Done when: `stat -M METRIC report` prints the metric computed from a recording's counts,
/// the very line (value and unit) that `stat -M METRIC record` printed while it counted and
/// recorded them, beside the same event line; an unknown metric name is refused with exit 2,
/// named. (perf's `report` takes no `-M`: the Slurm plugin prints a metric of `--counters`
/// so.)
///
/// Oracle: the recording run's own table (`stat -x, -M page_faults_per_second record`),
/// whose elapsed time and counts the records keep.
#[test]
fn a_metric_is_reported_from_a_recording_as_it_was_printed() {
    linux_or_skip!();
    let dir = scratch("metric");
    let file = dir.join("metric.data");
    let path = file.to_str().unwrap();
    let metric = "page_faults_per_second";
    let recorded = run(
        &counterhal_tool(),
        &[
            "stat", "-x,", "-M", metric, "record", "-o", path, "--", "true",
        ],
        None,
    );
    assert!(recorded.status.success(), "{}", stderr(&recorded));
    let reported = run(
        &counterhal_tool(),
        &["stat", "-x,", "-M", metric, "report", "-i", path],
        None,
    );
    assert!(reported.status.success(), "{}", stderr(&reported));
    let lines = |out: &Output| -> Vec<String> {
        result_lines(out)
            .into_iter()
            .filter(|l| l.contains(",page-faults,") || l.contains(&format!(",{metric},")))
            .collect()
    };
    let (theirs, ours) = (lines(&recorded), lines(&reported));
    assert_eq!(ours.len(), 2, "{}", stderr(&reported));
    assert_eq!(ours, theirs, "record's lines, then report's");
    let unknown = run(
        &counterhal_tool(),
        &["stat", "-M", "no_such_metric", "report", "-i", path],
        None,
    );
    assert_eq!(unknown.status.code(), Some(2), "{}", stderr(&unknown));
    assert!(
        stderr(&unknown).contains("`no_such_metric`"),
        "{}",
        stderr(&unknown)
    );
    std::fs::remove_dir_all(&dir).ok();
}
