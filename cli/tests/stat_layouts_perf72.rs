//! Where perf 7.2's `stat` layouts changed from perf 6.1's, what counterhal prints (each choice
//! and why: docs/command.md, "perf 6.1's and perf 7.2's layouts"). The oracles: perf 7.2.13
//! (Debian sid's `linux-perf` 7.2.13-1 in the current-releases lab's root, run by the root's
//! loader on this machine) and perf 6.1 (Debian 12's, the installed `perf`), each run beside
//! counterhal on the same command.

use std::process::{Command, Output};

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

use crate::common::*;

/// `program stat ARGS` (its words before `stat`).
fn stat_of(program: &Command, args: &[&str]) -> Output {
    Command::new(program.get_program())
        .args(program.get_args())
        .arg("stat")
        .args(args)
        .output()
        .expect("run stat")
}

/// The lines of `-x@` output that are not blank or comments.
fn csv_lines(out: &Output) -> Vec<String> {
    stderr(out)
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// How many separators each line has.
fn fields(lines: &[String]) -> Vec<usize> {
    lines.iter().map(|l| l.matches('@').count()).collect()
}

/// Oracle: perf 7.2.13 (module doc). `--metric-only -x@` has perf 7.2's fields line by line:
/// each field ends with the separator (the heading's units too), and the modes adding up CPUs
/// carry their number after the label (`socket@ctrs@...`, `S0@2@...`); perf 6.1's
/// `print_metric_only_csv` and `print_metric_header` end them the same way. Before: one
/// separator too few on each line (`faults/sec`, `8131.127`; perf 7.2's stat+csv_output.sh
/// stopped at "wrong number of fields. expected 1 in faults/sec"), and no number of CPUs.
#[test]
fn metric_only_csv_has_perf_7_2_s_fields() {
    linux_or_skip!();
    let perf = match perf_7_2() {
        Ok(perf) => perf,
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    let metric = ["--metric-only", "-x@", "-M", "page_faults_per_second"];
    let mut layouts: Vec<Vec<&str>> = vec![vec!["true"], vec!["-I", "100", "--", "sleep", "0.15"]];
    let all_cpus = may_count_cpus();
    if all_cpus {
        layouts.push(vec!["-A", "-a", "true"]);
        layouts.push(vec!["--per-socket", "-a", "true"]);
        layouts.push(vec!["--per-core", "-a", "true"]);
    }
    for layout in layouts {
        let args: Vec<&str> = metric.iter().chain(&layout).copied().collect();
        let ours = csv_lines(&ours(&args));
        let theirs = csv_lines(&stat_of(&perf, &args));
        assert!(!ours.is_empty(), "{layout:?}");
        // Interval runs may differ in their number of lines; each line's fields may not.
        assert_eq!(
            fields(&ours[..1]),
            fields(&theirs[..1]),
            "{layout:?}: {ours:?} {theirs:?}"
        );
        assert!(
            fields(&ours).iter().all(|&n| n == fields(&theirs)[1]),
            "{layout:?}: {ours:?} {theirs:?}"
        );
    }
    if !all_cpus {
        skip!(
            Need::Privilege,
            "-A, --per-socket and --per-core take root or perf_event_paranoid <= 0"
        );
    }
}

/// Oracles: perf 7.2.13 and perf 6.1 (module doc). An event given with `-e` keeps perf 6.1's
/// metric in `-x` (`0.639,CPUs utilized`: perf 6.1's metric text) in the seven fields perf
/// 7.2 prints (it leaves the last two empty, `,,`: stat-shadow.c prints only metrics of metric
/// groups, and an `-e` event has none); so a reader of either release's CSV finds its fields.
#[test]
fn csv_keeps_perf_6_1_s_metrics_in_perf_7_2_s_fields() {
    linux_or_skip!();
    let args = ["-x,", "-e", "task-clock,page-faults", "true"];
    let ours = csv_lines(&ours(&args));
    let split = |line: &String| line.split(',').map(str::to_string).collect::<Vec<_>>();
    assert_eq!(ours.len(), 2, "{ours:?}");
    let units: Vec<String> = ours.iter().map(|l| split(l)[6].clone()).collect();
    match perf_6_1() {
        Ok(perf) => {
            let theirs = csv_lines(&stat_of(&perf, &args));
            let expected: Vec<String> = theirs.iter().map(|l| split(l)[6].clone()).collect();
            assert_eq!(units, expected, "perf 6.1's metric units");
        }
        Err(why) => skip!(Need::Tools, "{why}"),
    }
    let perf = match perf_7_2() {
        Ok(perf) => perf,
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    let theirs = csv_lines(&stat_of(&perf, &args));
    assert_eq!(theirs.len(), 2, "{theirs:?}");
    for (ours, theirs) in ours.iter().zip(&theirs) {
        assert_eq!(split(ours).len(), split(theirs).len(), "{ours} / {theirs}");
        assert!(
            theirs.ends_with(",,"),
            "perf 7.2 prints no metric: {theirs}"
        );
    }
}

/// Oracles: perf 7.2.13's tools/perf/tests/shell/stat.sh (`test_stat_delay`: `stat -D 1000 -e
/// duration_time sleep 2` prints a duration and an elapsed time within 0.2 s of each other,
/// under 1.7 s: the delay left out), and perf 6.1 and 7.2.13 here, which print both from the
/// enable. Before: counterhal printed the delay in both (2.008 s).
#[test]
fn a_delay_is_left_out_of_the_elapsed_time() {
    linux_or_skip!();
    let args = ["-D", "300", "-e", "duration_time", "sleep", "0.6"];
    let figures = |out: &Output| -> (f64, f64) {
        let text = stderr(out);
        let first = |word: &str| -> f64 {
            let line = text.lines().find(|l| l.contains(word)).unwrap_or_default();
            let number = line.split_whitespace().next().unwrap_or_default();
            number.replace(',', "").parse().unwrap_or(f64::NAN)
        };
        (first("duration_time") / 1e9, first("seconds time elapsed"))
    };
    let (duration, elapsed) = figures(&ours(&args));
    assert!((duration - elapsed).abs() < 0.05, "{duration} {elapsed}");
    assert!(
        (0.25..0.5).contains(&elapsed),
        "{elapsed}: the 0.3 s delay left out"
    );
    for perf in [perf_6_1(), perf_7_2()].into_iter().flatten() {
        let out = stat_of(&perf, &args);
        // perf 6.1's `-D` counts "system wide", which an unprivileged user may not.
        if !out.status.success() {
            continue;
        }
        let (duration, elapsed) = figures(&out);
        assert!((0.25..0.5).contains(&elapsed), "perf: {duration} {elapsed}");
    }
}

/// Each table line with a metric: the event's name, the column its `#` stands in and the
/// metric's words after its number (`cs/sec  cs_per_second`); lines whose number is `nan`
/// (perf 7.2's beside an event that did not count) left out.
fn metric_words(out: &Output) -> Vec<(String, usize, String)> {
    stderr(out)
        .lines()
        .filter_map(|line| {
            let at = line.find(" # ")?;
            let event = line[..at].split_whitespace().last()?.to_string();
            let (number, words) = line[at + 3..].trim().split_once(' ')?;
            let words = words.split("  (").next().unwrap_or(words).trim_end();
            (number != "nan").then(|| (event, at, words.to_string()))
        })
        .collect()
}

/// Oracle: perf 7.2.13 (module doc), `stat true` beside counterhal's: beside each default
/// event that counted here, the same metric words (`cs/sec  cs_per_second`, `faults/sec
/// page_faults_per_second`, `CPUs  CPUs_utilized`: pmu-events' common metrics.json) with the
/// `#` in the same column. Before: perf 6.1's (`0.000 /sec`, `K/sec`, `CPUs utilized`).
#[test]
fn default_events_carry_perf_7_2_s_metric_words() {
    linux_or_skip!();
    let perf = match perf_7_2_defaults() {
        Ok(perf) => perf,
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    let args = ["true"];
    let ours = metric_words(&ours(&args));
    let theirs = metric_words(&stat_of(&perf, &args));
    let events = ["context-switches", "cpu-migrations", "page-faults"];
    for event in events {
        let find =
            |lines: &[(String, usize, String)]| lines.iter().find(|(e, _, _)| e == event).cloned();
        let theirs = find(&theirs).unwrap_or_else(|| panic!("perf 7.2: {event}: {theirs:?}"));
        assert_eq!(find(&ours), Some(theirs), "{ours:?}");
    }
    // perf 7.2.13 prints `nan CPUs` beside task-clock for a command here; counterhal the
    // clock over the elapsed time, in the same words.
    let clock = ours.iter().find(|(e, _, _)| e == "task-clock");
    assert_eq!(
        clock.map(|(_, _, words)| words.as_str()),
        Some("CPUs  CPUs_utilized"),
        "{ours:?}"
    );
}

/// The `-M` metric's value in each layout of `out` (`layout`: the words before the command):
/// after the `#` of the line naming `metric` in the table, the sixth field of that line in
/// `-x@`, and with `--metric-only` the last value of the row under the heading (in `-x@`, the
/// last field before the closing separator).
fn metric_value(out: &Output, layout: &[&str], metric: &str) -> String {
    let text = stderr(out);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter(|l| !l.starts_with("Events "))
        .collect();
    let metric_only = layout.contains(&"--metric-only");
    let csv = layout.contains(&"-x@");
    let value = match (metric_only, csv) {
        (false, false) => lines
            .iter()
            .find(|l| l.contains(metric))
            .and_then(|l| l.split_once(" # "))
            .and_then(|(_, after)| after.split_whitespace().next()),
        (false, true) => lines
            .iter()
            .find(|l| l.contains(metric))
            .and_then(|l| l.split('@').nth(5)),
        (true, false) => lines
            .iter()
            .skip_while(|l| !l.contains("Performance counter stats"))
            .nth(2)
            .and_then(|l| l.split_whitespace().last()),
        (true, true) => lines
            .get(1)
            .and_then(|l| l.trim_end_matches('@').rsplit('@').next()),
    };
    value
        .unwrap_or_else(|| panic!("{layout:?}: no value of {metric} in {text}"))
        .to_string()
}

/// The digits after the point of a number (`76157.8`: 1).
fn decimals(number: &str) -> Option<usize> {
    number.split_once('.').map(|(_, fraction)| fraction.len())
}

/// Oracle: perf 7.2.13 (module doc), `stat -M page_faults_per_second true` beside
/// counterhal's in the table, `-x@`, `--metric-only` and `--metric-only -x@`: the metric's
/// value has perf's one decimal (stat-shadow.c's `generic_metric`, `"%8.1f"` for a metric with
/// a unit; perf 6.1's the same). Before: counterhal's three (`50966.650`).
#[test]
fn metric_values_have_perf_7_2_s_decimals() {
    linux_or_skip!();
    let perf = match perf_7_2() {
        Ok(perf) => perf,
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    let metric = "page_faults_per_second";
    let layouts: [&[&str]; 4] = [&[], &["-x@"], &["--metric-only"], &["--metric-only", "-x@"]];
    for layout in layouts {
        let args: Vec<&str> = ["-M", metric]
            .iter()
            .chain(layout)
            .chain(&["true"])
            .copied()
            .collect();
        let ours = metric_value(&ours(&args), layout, metric);
        let theirs = metric_value(&stat_of(&perf, &args), layout, metric);
        assert_eq!(decimals(&theirs), Some(1), "perf 7.2, {layout:?}: {theirs}");
        assert_eq!(decimals(&ours), decimals(&theirs), "{layout:?}: {ours}");
    }
}

/// Oracle: perf 7.2.13 (module doc), `stat -D -1 -M page_faults_per_second true` (the events
/// never enabled, so none counts) beside counterhal's: the metric is `nan` in the table and
/// in `--metric-only`'s, and an empty value before its unit in `-x@` (perf's
/// print_metric_csv keeps only the digits of `"%8.1f"`'s `nan`). Before: counterhal printed
/// `<not counted>` in the table and left the unit out of `-x`.
#[test]
fn a_metric_whose_events_did_not_count_is_printed_as_perf_7_2_prints_it() {
    linux_or_skip!();
    let perf = match perf_7_2() {
        Ok(perf) => perf,
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    let metric = "page_faults_per_second";
    let layouts: [&[&str]; 3] = [&[], &["--metric-only"], &["-x@"]];
    for layout in layouts {
        let args: Vec<&str> = ["-D", "-1", "-M", metric]
            .iter()
            .chain(layout)
            .chain(&["true"])
            .copied()
            .collect();
        let ours = metric_value(&ours(&args), layout, metric);
        let theirs = metric_value(&stat_of(&perf, &args), layout, metric);
        let expected = if layout.is_empty() || layout[0] == "--metric-only" {
            "nan"
        } else {
            ""
        };
        assert_eq!(theirs, expected, "perf 7.2, {layout:?}");
        assert_eq!(ours, theirs, "{layout:?}");
    }
    // The unit stays in `-x`, as perf 7.2's (`,,faults/sec  page_faults_per_second`).
    let line = |out: &Output| {
        let text = stderr(out);
        let line = text
            .lines()
            .find(|l| l.contains(metric))
            .map(str::to_string);
        line.unwrap_or_else(|| panic!("{text}"))
    };
    let args = ["-D", "-1", "-M", metric, "-x@", "true"];
    let unit = |line: &str| line.split('@').nth(6).map(str::to_string);
    assert!(unit(&line(&stat_of(&perf, &args))).is_some_and(|u| u.contains("faults/sec")));
    assert_eq!(unit(&line(&ours(&args))).as_deref(), Some("faults/sec"));
}

/// Oracle: perf 7.2.13 (module doc), `stat --metric-only true`: its table heads each default
/// metric's column with the metric's unit and name (`cs/sec  cs_per_second`; taken here from
/// its `-x@` heading, whose fields are the same words), and prints one decimal; counterhal's
/// table heads the columns of the default metrics that count here (the software events')
/// with the same words and digits. Before: perf 6.1's (`CPUs utilized`, `K/sec`, `0.736`).
#[test]
fn metric_only_heads_default_metrics_with_perf_7_2_s_words() {
    linux_or_skip!();
    let perf = match perf_7_2_defaults() {
        Ok(perf) => perf,
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    let theirs = stderr(&stat_of(&perf, &["--metric-only", "-x@", "true"]));
    let heading = theirs
        .lines()
        .find(|l| l.contains("cs_per_second"))
        .unwrap_or_else(|| panic!("{theirs}"));
    let ours = stderr(&ours(&["--metric-only", "true"]));
    let mut lines = ours
        .lines()
        .skip_while(|l| !l.contains("Performance counter stats"))
        .skip(1)
        .filter(|l| !l.trim().is_empty());
    let (our_heading, our_values) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""));
    let names = [
        "CPUs_utilized",
        "cs_per_second",
        "migrations_per_second",
        "page_faults_per_second",
    ];
    for name in names {
        let words = heading
            .split('@')
            .find(|field| field.ends_with(&format!("  {name}")))
            .unwrap_or_else(|| panic!("perf 7.2: no {name} in {heading}"));
        assert!(our_heading.contains(words), "{words}: {ours}");
    }
    let values: Vec<&str> = our_values.split_whitespace().collect();
    assert_eq!(values.len(), names.len(), "{ours}");
    for value in values {
        assert_eq!(decimals(value), Some(1), "{ours}");
    }
}
