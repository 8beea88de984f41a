//! `counterhal stat`'s options beyond the layouts, side by side with the installed perf where
//! perf runs them here: how a command whose time is up is stopped, perf's tool events, and the
//! options that shape what is printed and what runs around a run (what is counted:
//! `stat_scope.rs`).

use std::process::{Command, Output};

use crate::common::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// A scratch file for one test, removed first.
fn scratch(name: &str) -> std::path::PathBuf {
    let path = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-{name}-{}", std::process::id()));
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
    // Each interval's duration is its length: they add up to the last interval's end.
    let last_end: f64 = lines
        .last()
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let total: u64 = durations.iter().sum();
    assert!(
        (total as f64 / 1e9 - last_end).abs() < 1e-6,
        "{total} ns against {last_end} s: {lines:#?}"
    );
    assert!(
        lines
            .iter()
            .filter(|l| l.contains(",user_time,"))
            .all(|l| l.contains("<not counted>")),
        "CPU times are the command's end's, as perf prints them: {lines:#?}"
    );
}

#[test]
fn a_null_run_prints_only_the_times() {
    linux_or_skip!();
    let o = ours(&["-n", "-r", "2", "--", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stderr(&o);
    assert!(text.contains("(2 runs)"), "{text}");
    assert!(text.contains("seconds time elapsed"), "{text}");
    assert!(!text.contains("task-clock"), "no events: {text}");
    if perf_available() {
        let p = stderr(&perf(&["-n", "-r", "2", "true"]));
        let heading = |t: &str| {
            t.lines()
                .find(|l| l.contains("Performance"))
                .map(str::to_string)
        };
        assert_eq!(heading(&text), heading(&p), "ours {text}\nperf {p}");
        // The times follow the heading after one blank line, as perf's.
        let after = |t: &str| {
            t.lines()
                .skip_while(|l| !l.contains("Performance"))
                .nth(2)
                .map(|l| l.contains("seconds time elapsed"))
        };
        assert_eq!(after(&text), after(&p), "ours {text}\nperf {p}");
    }
}

#[test]
fn quiet_prints_nothing_and_keeps_the_status() {
    linux_or_skip!();
    let o = ours(&["--quiet", "-e", "page-faults", "--", "sh", "-c", "exit 3"]);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(stderr(&o), "", "nothing printed");
    let o = ours(&["-q", "-x,", "-e", "page-faults", "--", "true"]);
    assert_eq!(stderr(&o), "");
}

/// Whether the `en_US.UTF-8` locale is installed (`locale -a`), which groups digits with ",".
fn grouping_locale() -> bool {
    Command::new("locale").arg("-a").output().is_ok_and(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .any(|l| l == "en_US.utf8")
    })
}

#[test]
fn big_numbers_are_grouped_unless_asked_not_to() {
    linux_or_skip!();
    if !grouping_locale() {
        skip!(
            Need::Tools,
            "the en_US.UTF-8 locale is not installed (apt-get install locales, then localedef -i en_US -f UTF-8 en_US.UTF-8)"
        );
    }
    // `ls -R /usr/share` touches enough pages for a four-digit count.
    let work = ["--", "sh", "-c", "ls -R /usr/share > /dev/null"];
    let count = |extra: &[&str], locale: &str| {
        let mut args = vec!["stat", "-e", "page-faults"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&work);
        let out = Command::new(bin())
            .args(&args)
            .env("LC_ALL", locale)
            .output()
            .unwrap();
        let text = stderr(&out);
        let line = text
            .lines()
            .find(|l| l.contains("page-faults"))
            .unwrap()
            .to_string();
        line.split_whitespace().next().unwrap().to_string()
    };
    // Grouped as the locale groups numbers, as perf's `%'` does: "," in en_US, none in C.
    let grouped = count(&["-B"], "en_US.UTF-8");
    let plain = count(&["--no-big-num"], "en_US.UTF-8");
    let c_locale = count(&["-B"], "C");
    assert!(grouped.contains(','), "{grouped}");
    assert!(plain.parse::<u64>().is_ok(), "{plain}");
    assert!(
        c_locale.parse::<u64>().is_ok(),
        "the C locale groups nothing: {c_locale}"
    );
    assert!(
        ours(&["-B", "-x,", "--", "true"]).status.code() == Some(2),
        "perf refuses -B with -x"
    );
}

#[test]
fn results_can_be_appended_to_a_file_or_an_open_descriptor() {
    linux_or_skip!();
    let path = scratch("append");
    std::fs::write(&path, "earlier\n").unwrap();
    let file = path.to_str().unwrap();
    let o = ours(&[
        "-x,",
        "-e",
        "page-faults",
        "-o",
        file,
        "--append",
        "--",
        "true",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("earlier\n"), "{text}");
    assert!(text.contains(",page-faults,"), "{text}");
    // --log-fd 3: the shell opens descriptor 3 on the file, counterhal adds to it.
    std::fs::write(&path, "before\n").unwrap();
    let script = format!(
        "exec 3>>{file}; {} stat -x, -e page-faults --log-fd 3 -- true",
        bin().display()
    );
    let o = Command::new("sh").args(["-c", &script]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("page-faults"), "not on stderr");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).ok();
    assert!(text.starts_with("before\n"), "{text}");
    assert!(text.contains(",page-faults,"), "{text}");
    let bad = ours(&["--log-fd", "99", "--", "true"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
}

#[test]
fn hooks_run_around_each_run() {
    linux_or_skip!();
    let log = scratch("hooks");
    let file = log.to_str().unwrap();
    let pre = format!("echo pre >> {file}");
    let post = format!("echo post >> {file}");
    let run = format!("echo run >> {file}");
    let o = ours(&[
        "-r",
        "2",
        "-S",
        "--pre",
        &pre,
        "--post",
        &post,
        "-e",
        "page-faults",
        "--",
        "sh",
        "-c",
        &run,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    std::fs::remove_file(&log).ok();
    assert_eq!(text, "pre\nrun\npost\npre\nrun\npost\n");
    let failed = ours(&["--pre", "exit 1", "--", "true"]);
    assert_eq!(failed.status.code(), Some(1), "{}", stderr(&failed));
    assert!(stderr(&failed).contains("--pre"), "{}", stderr(&failed));
}

#[test]
fn groups_verbose_and_raw_counts() {
    linux_or_skip!();
    let g = ours(&["-g", "-x,", "-e", "page-faults,task-clock", "--", "true"]);
    assert_eq!(result_lines(&g).len(), 2, "{}", stderr(&g));
    let v = ours(&["-v", "-x,", "-e", "page-faults", "--", "true"]);
    assert!(
        stderr(&v).lines().any(|l| l.contains("page-faults on ")),
        "{}",
        stderr(&v)
    );
    let raw = ours(&["--no-scale", "-x,", "-e", "page-faults", "--", "true"]);
    assert_eq!(result_lines(&raw).len(), 1, "{}", stderr(&raw));
    for option in [
        "--metric-no-group",
        "--metric-no-merge",
        "--no-merge",
        "--scale",
    ] {
        let o = ours(&[option, "-x,", "-e", "page-faults", "--", "true"]);
        assert!(o.status.success(), "{option}: {}", stderr(&o));
    }
}

#[test]
fn options_not_implemented_are_refused_with_what_they_need() {
    for (option, why) in [
        (&["--smi-cost"][..], "SMI"),
        (&["-T"], "TSX"),
        (&["--iostat"], "uncore"),
    ] {
        let mut args = option.to_vec();
        args.extend_from_slice(&["--", "true"]);
        let o = ours(&args);
        assert_eq!(o.status.code(), Some(2), "{option:?}");
        assert!(stderr(&o).contains(why), "{option:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("does not implement"),
            "{option:?}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn a_summary_follows_the_intervals_as_perfs_does() {
    linux_or_skip!();
    let fields = |out: &Output| -> Vec<(usize, String)> {
        result_lines(out)
            .iter()
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                (
                    f.len(),
                    f[0].trim()
                        .parse::<f64>()
                        .map_or(f[0].trim().to_string(), |_| "time".into()),
                )
            })
            .collect()
    };
    for extra in [&["--summary"][..], &["--summary", "--no-csv-summary"]] {
        let mut args = vec!["-I", "40", "-x,", "-e", "page-faults"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "sleep", "0.05"]);
        let o = ours(&args);
        let lines = fields(&o);
        let last = lines.last().unwrap().clone();
        if extra.len() == 1 {
            assert_eq!(last, (8, "summary".to_string()), "{}", stderr(&o));
        } else {
            assert_eq!(last.0, 7, "{}", stderr(&o));
        }
        if perf_available() {
            let p = perf(&args);
            assert_eq!(
                fields(&p).last(),
                Some(&last),
                "ours {}\nperf {}",
                stderr(&o),
                stderr(&p)
            );
        }
    }
    let table = stderr(&ours(&[
        "-I",
        "40",
        "--summary",
        "-e",
        "page-faults",
        "--",
        "sleep",
        "0.05",
    ]));
    assert!(
        table.contains("Performance counter stats for 'sleep 0.05'"),
        "{table}"
    );
    assert!(table.contains("seconds time elapsed"), "{table}");
    let j = result_lines(&ours(&[
        "-I",
        "40",
        "--summary",
        "-j",
        "-e",
        "page-faults",
        "--",
        "sleep",
        "0.05",
    ]));
    assert!(
        j.last().unwrap().starts_with("{\"counter-value\""),
        "{j:#?}"
    );
    assert!(
        ours(&["--summary", "--", "true"]).status.code() == Some(2),
        "needs -I"
    );
}

#[test]
fn the_runs_table_shows_each_run_as_perfs_does() {
    linux_or_skip!();
    let o = ours(&["-r", "3", "--table", "-e", "page-faults", "--", "true"]);
    let text = stderr(&o);
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("# Table of individual measurements:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(rows.len(), 3, "{text}");
    for row in &rows {
        let words: Vec<&str> = row.split_whitespace().collect();
        assert!(words[0].parse::<f64>().is_ok(), "{row}");
        assert!(
            words[1].starts_with("(+") || words[1].starts_with("(-"),
            "{row}"
        );
        assert!(words[2].chars().all(|c| c == '#'), "{row}");
    }
    assert!(text.contains("# Final result:"), "{text}");
    if perf_available() {
        let p = stderr(&perf(&[
            "-r",
            "3",
            "--table",
            "-e",
            "page-faults",
            "--",
            "true",
        ]));
        // The headings start where the digits of the final result do, in both.
        let aligned = |t: &str| {
            let lead = |l: &str| l.len() - l.trim_start().len();
            let heading = t.lines().find(|l| l.contains("# Table")).map(lead);
            let result = t
                .lines()
                .find(|l| l.contains("seconds time elapsed"))
                .map(lead);
            heading.is_some() && heading == result
        };
        assert!(aligned(&text), "{text}");
        assert!(aligned(&p), "perf: {p}");
    }
    let cleared = stderr(&ours(&[
        "-I",
        "30",
        "--interval-clear",
        "-e",
        "page-faults",
        "--",
        "sleep",
        "0.05",
    ]));
    assert!(cleared.matches("\x1b[H\x1b[2J").count() >= 2, "{cleared:?}");
}

#[test]
fn metric_only_prints_the_metrics_alone() {
    linux_or_skip!();
    let events = ["-e", "task-clock,page-faults", "--", "true"];
    let with = |extra: &[&str]| {
        let mut args = extra.to_vec();
        args.extend_from_slice(&events);
        stderr(&ours(&args))
    };
    let csv = with(&["--metric-only", "-x,"]);
    let lines: Vec<&str> = csv.lines().filter(|l| !l.is_empty()).collect();
    // Every field ends with the separator, as perf 6.1's and 7.2's `print_metric_only_csv`.
    assert_eq!(lines[0], "CPUs utilized,K/sec,", "{csv}");
    let values: Vec<f64> = lines[1]
        .strip_suffix(',')
        .unwrap()
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(values.len(), 2, "{csv}");
    assert!(values[0] > 0.0, "{csv}");
    let json = with(&["--metric-only", "-j"]);
    let object: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert!(object["CPUs utilized"].is_number(), "{json}");
    let table = with(&["--metric-only"]);
    assert!(!table.contains("page-faults"), "no event lines: {table}");
    assert!(table.contains("CPUs utilized"), "{table}");
    let accepted = with(&["--percore-show-thread", "-x,"]);
    assert!(accepted.contains(",page-faults,"), "{accepted}");
}
