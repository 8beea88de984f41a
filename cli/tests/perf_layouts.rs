//! `counterhal stat`'s `-x` and `-j` layouts side by side with the installed perf's, on the
//! same software events: the same lines, fields, units, keys and value types (the values
//! themselves differ from run to run); and the options that shape them (`-r`, `-I`, `-A`,
//! `--per-thread`, counting without a command until the timeout).

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The software events both count here (`cycles` is `<not supported>` without a PMU, in both).
const EVENTS: &str = "task-clock,page-faults,context-switches,cpu-migrations";

/// An event name without the `:u` counterhal (and perf) add where the kernel may not be
/// counted.
fn base(name: &str) -> &str {
    name.split(':').next().unwrap_or(name)
}

/// The unit of a metric without its prefix: `K/sec`, `M/sec` and `/sec` are one unit.
fn metric_kind(unit: &str) -> &str {
    unit.trim_start_matches(['K', 'M', 'G'])
}

/// Both CSVs have the same lines with the same number of fields, the same units, events and
/// metric units, and numbers where perf has numbers. `skip` fields lead (time, CPU).
fn assert_same_csv(ours: &[String], perf: &[String], lead: usize) {
    assert_eq!(ours.len(), perf.len(), "ours {ours:#?}\nperf {perf:#?}");
    for (o, p) in ours.iter().zip(perf) {
        let of: Vec<&str> = o.split(',').collect();
        let pf: Vec<&str> = p.split(',').collect();
        assert_eq!(of.len(), pf.len(), "fields:\n ours {o}\n perf {p}");
        let n = of.len();
        assert_eq!(of[lead + 1], pf[lead + 1], "unit:\n ours {o}\n perf {p}");
        assert_eq!(
            base(of[lead + 2]),
            base(pf[lead + 2]),
            "event:\n ours {o}\n perf {p}"
        );
        for (field, name) in [(n - 3, "runtime"), (n - 4, "percent running")] {
            let numeric = |s: &str| s.parse::<f64>().is_ok();
            assert_eq!(
                numeric(of[field]),
                numeric(pf[field]),
                "{name}:\n ours {o}\n perf {p}"
            );
        }
        // The metric unit, where both have one (a count of 0 in one run has none in perf
        // only when no clock ran).
        if !of[n - 1].is_empty() && !pf[n - 1].is_empty() {
            assert_eq!(
                metric_kind(of[n - 1]),
                metric_kind(pf[n - 1]),
                "metric:\n ours {o}\n perf {p}"
            );
        }
    }
}

/// Each line of both is a JSON object with the same keys in the same order and values of
/// the same types.
fn assert_same_json_lines(ours: &[String], perf: &[String]) {
    assert_eq!(ours.len(), perf.len(), "ours {ours:#?}\nperf {perf:#?}");
    for (o, p) in ours.iter().zip(perf) {
        let ov: serde_json::Value = serde_json::from_str(o).unwrap_or_else(|e| panic!("{e}: {o}"));
        let pv: serde_json::Value = serde_json::from_str(p).unwrap_or_else(|e| panic!("{e}: {p}"));
        let keys = |line: &str| -> Vec<String> {
            line.split("\" : ")
                .filter_map(|part| part.rsplit('"').next().map(str::to_string))
                .collect()
        };
        assert_eq!(keys(o), keys(p), "keys:\n ours {o}\n perf {p}");
        for (key, value) in pv.as_object().unwrap() {
            let kind = |v: &serde_json::Value| (v.is_string(), v.is_number(), v.is_u64());
            assert_eq!(
                kind(&ov[key]),
                kind(value),
                "type of {key}:\n ours {o}\n perf {p}"
            );
        }
        assert_eq!(ov["unit"], pv["unit"], "ours {o}\nperf {p}");
        assert_eq!(
            base(ov["event"].as_str().unwrap()),
            base(pv["event"].as_str().unwrap())
        );
    }
}

#[test]
fn csv_matches_perfs_fields_units_and_metrics() {
    linux_or_skip!();
    perf_or_skip!();
    let events = format!("{EVENTS},cycles");
    let args = ["-x,", "-e", &events, "--", "true"];
    let (o, p) = (ours(&args), perf(&args));
    assert!(o.status.success(), "{}", stderr(&o));
    let (ol, pl) = (result_lines(&o), result_lines(&p));
    assert_same_csv(&ol, &pl, 0);
    // perf's seven fields: msec for the clock, CPUs utilized beside it, a rate beside counts.
    let clock: Vec<&str> = ol[0].split(',').collect();
    assert_eq!(clock.len(), 7, "{}", ol[0]);
    assert_eq!(clock[6], "CPUs utilized");
    assert!(ol[1].ends_with("/sec"), "{}", ol[1]);
}

#[test]
fn csv_with_repeats_puts_the_spread_where_perf_does() {
    linux_or_skip!();
    perf_or_skip!();
    let args = ["-x,", "-r", "3", "-e", EVENTS, "--", "true"];
    let (o, p) = (ours(&args), perf(&args));
    assert!(o.status.success(), "{}", stderr(&o));
    let (ol, pl) = (result_lines(&o), result_lines(&p));
    assert_same_csv(&ol, &pl, 0);
    for line in &ol {
        assert!(line.split(',').nth(3).unwrap().ends_with('%'), "{line}");
    }
}

#[test]
fn json_lines_match_perfs_keys_and_types() {
    linux_or_skip!();
    perf_or_skip!();
    let events = format!("{EVENTS},cycles");
    for extra in [&[][..], &["-r", "2"]] {
        let mut args = vec!["-j"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["-e", &events, "--", "true"]);
        let (o, p) = (ours(&args), perf(&args));
        assert!(o.status.success(), "{}", stderr(&o));
        let (ol, pl) = (result_lines(&o), result_lines(&p));
        // perf 6.1 writes `"metric-unit" : "(null)"` beside a count with no metric under
        // -r; both keep the key.
        assert_same_json_lines(&ol, &pl);
    }
}

#[test]
fn intervals_match_perfs_layout_and_end_with_the_partial_one() {
    linux_or_skip!();
    perf_or_skip!();
    for layout in ["-x,", "-j"] {
        let args = [
            layout,
            "-I",
            "100",
            "-e",
            "task-clock,page-faults",
            "--",
            "sleep",
            "0.35",
        ];
        let (o, p) = (ours(&args), perf(&args));
        assert!(o.status.success(), "{}", stderr(&o));
        let (ol, pl) = (result_lines(&o), result_lines(&p));
        // Three whole intervals and the partial last one, two events each (a loaded machine
        // may see one interval more or less in either).
        assert!((6..=10).contains(&ol.len()), "{ol:#?}");
        if layout == "-x," {
            let n = ol.len().min(pl.len());
            assert_same_csv(&ol[..n], &pl[..n], 1);
            let times: Vec<f64> = ol
                .iter()
                .map(|l| l.split(',').next().unwrap().trim().parse().unwrap())
                .collect();
            assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
            let last = times[times.len() - 1];
            assert!((0.35..0.95).contains(&last), "{times:?}");
            // The command's end is the last time (the partial interval; `--json`'s test
            // checks its length).
            assert!(times.len() >= 4, "{times:?}");
        } else {
            let n = ol.len().min(pl.len());
            assert_same_json_lines(&ol[..n], &pl[..n]);
        }
    }
}

/// Live: the intervals of `--json` add up to the whole run's counts, the last one partial.
#[test]
fn intervals_add_up_to_the_total() {
    linux_or_skip!();
    let script = "ls /usr >/dev/null; sleep 0.12; ls /usr >/dev/null";
    let o = ours(&[
        "--json",
        "-I",
        "50",
        "-e",
        "page-faults,task-clock",
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let value: serde_json::Value = serde_json::from_slice(&o.stderr).expect("JSON");
    let intervals = value["intervals"].as_array().expect("intervals");
    assert!(intervals.len() >= 3, "{value}");
    for event in 0..2 {
        let total = value["events"][event]["value"].as_u64().unwrap();
        let sum: u64 = intervals
            .iter()
            .map(|i| i["events"][event]["value"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, total, "event {event}: {value}");
    }
    let last = intervals.last().unwrap()["length_ns"].as_u64().unwrap();
    assert!(
        last < 50_000_000 + 20_000_000,
        "the last interval is partial: {last}"
    );
}

#[test]
fn interval_count_and_timeout_stop_the_command_as_perf_does() {
    linux_or_skip!();
    let start = Instant::now();
    let o = ours(&[
        "-x,",
        "--timeout",
        "100",
        "-e",
        "task-clock",
        "--",
        "sleep",
        "5",
    ]);
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "the command was not stopped"
    );
    // perf exits 0 for a command it stopped on time.
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(result_lines(&o).len(), 1, "{}", stderr(&o));
    let start = Instant::now();
    let args = [
        "-x,",
        "-I",
        "50",
        "--interval-count",
        "2",
        "-e",
        "task-clock",
        "--",
        "sleep",
        "5",
    ];
    let o = ours(&args);
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "the command was not stopped"
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // As perf: that many intervals, no partial one after them.
    let lines = result_lines(&o);
    assert_eq!(lines.len(), 2, "{lines:#?}");
}

#[test]
fn per_cpu_without_a_command_matches_perf_until_the_timeout() {
    linux_or_skip!();
    perf_or_skip!();
    if !may_count_cpus() {
        skip!(
            Need::Privilege,
            "counting whole CPUs needs root or perf_event_paranoid 0"
        );
    }
    let args = [
        "-x,",
        "-a",
        "-A",
        "--timeout",
        "100",
        "-e",
        "cpu-clock,context-switches",
    ];
    let start = Instant::now();
    let o = ours(&args);
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "the timeout ended it"
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let p = perf(&args);
    let (ol, pl) = (result_lines(&o), result_lines(&p));
    assert_same_csv(&ol, &pl, 1);
    for (o, p) in ol.iter().zip(&pl) {
        assert_eq!(
            o.split(',').next(),
            p.split(',').next(),
            "the CPU: {o} / {p}"
        );
    }
    // Each CPU's clock ran about the 100 ms: 1.0 CPUs utilized, give or take.
    let utilized: f64 = ol[0].split(',').nth(6).unwrap().parse().unwrap();
    assert!((0.5..=1.5).contains(&utilized), "{}", ol[0]);
}

#[test]
fn per_thread_matches_perf() {
    linux_or_skip!();
    perf_or_skip!();
    let mut sleeper = Command::new("sleep").arg("5").spawn().expect("sleep");
    let pid = sleeper.id().to_string();
    let args = [
        "-x,",
        "-p",
        &pid,
        "--per-thread",
        "--timeout",
        "100",
        "-e",
        "task-clock,context-switches",
    ];
    let o = ours(&args);
    let p = perf(&args);
    let j = ours(&[
        "-j",
        "-p",
        &pid,
        "--per-thread",
        "--timeout",
        "100",
        "-e",
        "task-clock",
    ]);
    sleeper.kill().ok();
    sleeper.wait().ok();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (ol, pl) = (result_lines(&o), result_lines(&p));
    assert_same_csv(&ol, &pl, 1);
    assert_eq!(
        ol[0].split(',').next(),
        Some(format!("sleep-{pid}").as_str())
    );
    let line: serde_json::Value = serde_json::from_str(&result_lines(&j)[0]).expect("JSON");
    assert_eq!(line["thread"], format!("sleep-{pid}"));
}

#[test]
fn groups_are_read_as_perf_reads_them() {
    linux_or_skip!();
    perf_or_skip!();
    let args = [
        "-x,",
        "-e",
        "{page-faults,minor-faults}:u,task-clock",
        "--",
        "true",
    ];
    let (o, p) = (ours(&args), perf(&args));
    assert!(o.status.success(), "{}", stderr(&o));
    let (ol, pl) = (result_lines(&o), result_lines(&p));
    assert_same_csv(&ol, &pl, 0);
    // The group's modifier reaches each member; both count the same faults.
    assert!(ol[0].contains(",page-faults:u,"), "{}", ol[0]);
    assert!(ol[1].contains(",minor-faults:u,"), "{}", ol[1]);
    assert_eq!(ol[0].split(',').next(), ol[1].split(',').next(), "{ol:?}");
    // On CPUs too, where the group is one group of the backend.
    if may_count_cpus() {
        let o = ours(&[
            "-x,",
            "-a",
            "--timeout",
            "50",
            "-e",
            "{cpu-clock,context-switches}:u",
        ]);
        let lines = result_lines(&o);
        assert_eq!(lines.len(), 2, "{}", stderr(&o));
        assert!(lines[0].contains("cpu-clock:u"), "{lines:?}");
    }
}

#[test]
fn metrics_by_name_count_their_events_and_print_their_values() {
    linux_or_skip!();
    let o = ours(&[
        "-x,",
        "-M",
        "CPUs_utilized,page_faults_per_second",
        "--",
        "true",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines = result_lines(&o);
    // -M alone counts the metrics' events: task-clock, page-faults, then the metrics, perf's
    // seven fields each.
    let clock: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(base(clock[2]), "task-clock", "{lines:?}");
    let metric = lines
        .iter()
        .find(|l| l.contains(",CPUs_utilized,"))
        .expect("the metric's line");
    let fields: Vec<&str> = metric.split(',').collect();
    assert_eq!(fields.len(), 7, "{metric}");
    // The same number as the metric column beside task-clock (there perf 6.1's three
    // decimals, here perf's `generic_metric`'s one).
    let number = |field: &str| {
        field
            .parse::<f64>()
            .unwrap_or_else(|e| panic!("{field}: {e}"))
    };
    assert_eq!(fields[5].split_once('.').map(|(_, f)| f.len()), Some(1));
    assert!(
        (number(fields[5]) - number(clock[5])).abs() <= 0.051,
        "{lines:?}"
    );
    assert_eq!(fields[6], "CPUs utilized");
    let o = ours(&["-M", "TopdownL", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("TopdownL1"), "{}", stderr(&o));
}

/// `-p` without a command counts until a signal ends it (Ctrl-C is SIGINT to the whole
/// group; `kill` sends SIGTERM to counterhal alone), then prints and exits 0.
#[test]
fn without_a_command_counting_lasts_until_a_signal() {
    linux_or_skip!();
    let mut sleeper = Command::new("sleep").arg("5").spawn().expect("sleep");
    let pid = sleeper.id().to_string();
    for signal in ["-INT", "-TERM"] {
        let child = signalled_counterhal()
            .args([
                "stat",
                "-x,",
                "-p",
                &pid,
                "-e",
                "task-clock,context-switches",
            ])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("counterhal");
        // Signalled once it counts: its timer (a child sleeping) has started.
        wait_for_a_child_of(child.id());
        counterhal_conformance::fixtures::send_signal(child.id() as i32, signal).expect("kill");
        let start = Instant::now();
        let out = child.wait_with_output().expect("wait");
        assert!(
            start.elapsed() < Duration::from_secs(4),
            "{signal} ended it"
        );
        assert_eq!(out.status.code(), Some(0), "{signal}: {}", stderr(&out));
        let lines = result_lines(&out);
        assert_eq!(lines.len(), 2, "{signal}: {}", stderr(&out));
        assert!(lines[0].contains("task-clock"), "{lines:?}");
    }
    sleeper.kill().ok();
    sleeper.wait().ok();
}

/// Waits (at most 10 s) until process `parent` has a child: `/proc/*/stat` names it as the
/// parent.
fn wait_for_a_child_of(parent: u32) {
    let start = Instant::now();
    let has_child = || {
        std::fs::read_dir("/proc").is_ok_and(|entries| {
            entries.flatten().any(|entry| {
                std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|stat| {
                    let after_name = stat.rsplit(')').next().unwrap_or("");
                    after_name.split_whitespace().nth(1) == Some(parent.to_string().as_str())
                })
            })
        })
    };
    while !has_child() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no child of {parent}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // The signals are passed on from just before the release.
    std::thread::sleep(Duration::from_millis(50));
}

#[test]
fn bad_splits_are_usage_errors() {
    for args in [
        &["-A", "--", "true"][..],
        &["--per-thread", "--", "true"],
        &["-I", "1", "--", "true"],
        &["-a", "--timeout", "5"],
        &["-r", "2", "-I", "100", "--", "true"],
        &["--interval-count", "2", "--", "true"],
        &["-e", "{}", "--", "true"],
        &["-e", "{page-faults,}", "--", "true"],
    ] {
        let o = ours(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("sage"), "{args:?}: {}", stderr(&o));
    }
}

/// `-I`'s table repeats its heading as perf's does: before the first interval and every 25th
/// after it (perf's `print_interval`), with perf as the oracle for the count.
#[test]
fn the_interval_heading_repeats_every_25_intervals_as_perfs() {
    linux_or_skip!();
    perf_or_skip!();
    let args = [
        "-I",
        "20",
        "--interval-count",
        "30",
        "-e",
        "task-clock",
        "--",
        "sleep",
        "1",
    ];
    let headings = |out: &Output| {
        stderr(out)
            .lines()
            .filter(|l| l.starts_with("#           time"))
            .count()
    };
    let theirs = perf(&args);
    let ours = ours(&args);
    assert!(ours.status.success(), "{}", stderr(&ours));
    assert_eq!(headings(&ours), headings(&theirs), "{}", stderr(&ours));
    assert_eq!(headings(&ours), 2, "{}", stderr(&ours));
}

/// Oracle: perf 6.1 (Debian 12's linux-perf; perf 7.2.13 stops instead with "No supported
/// events found", exit 1): `stat -a -A -x, -e uprobe/config=0/` (an event no machine opens:
/// a uprobe needs its path) prints one `CPU0,<not supported>,,uprobe/config=0/,...` line per
/// online CPU, the CPU field first, as it does for events that count; `-j` has `"cpu"`.
#[test]
fn per_cpu_lines_name_the_cpu_where_no_event_counts() {
    linux_or_skip!();
    perf_or_skip!();
    if !may_count_cpus() {
        skip!(
            Need::Privilege,
            "counting whole CPUs needs root or perf_event_paranoid 0"
        );
    }
    let args = [
        "-a",
        "-A",
        "-x,",
        "-e",
        "uprobe/config=0/",
        "--",
        "sleep",
        "0.05",
    ];
    let (o, p) = (ours(&args), perf(&args));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let first_fields = |out: &Output| -> Vec<String> {
        result_lines(out)
            .iter()
            .map(|line| line.split(',').take(4).collect::<Vec<_>>().join(","))
            .collect()
    };
    let ours_lines = first_fields(&o);
    assert_eq!(ours_lines, first_fields(&p), "ours, perf's");
    assert!(ours_lines[0].starts_with("CPU"), "{ours_lines:?}");
    let json = ours(&[
        "-a",
        "-A",
        "-j",
        "-e",
        "uprobe/config=0/",
        "--",
        "sleep",
        "0.05",
    ]);
    for line in stderr(&json).lines().filter(|l| l.starts_with('{')) {
        assert!(line.starts_with("{\"cpu\" : \""), "{line}");
    }
}
