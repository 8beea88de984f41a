//! The tests of `printing`: perf's layouts of the table, `-x`, `-j` and `-I`.

use counterhal_hal::BackendExt;
use serde_json::json;

use super::*;
use crate::stat::arguments::parse;
use crate::stat::measure::results::{Counts, Place, Snapshot};
use crate::stat::report::summary::tests::{intervals, run};
use counterhal_hal::Reading;

fn render_with(words: &[&str], summary: &Summary) -> String {
    let args = parse(words).unwrap_or_else(|e| panic!("{words:?}: {e}"));
    render(&Report::of(&args, &[]), summary)
}

/// page-faults and task-clock 1.5 ms counted, cycles not supported, in one run of 2 s.
fn one_run() -> Summary {
    Summary::of(
        crate::stat::plan::machine_here(),
        &[run(
            &[
                ("page-faults", Some(1_234_567)),
                ("task-clock", Some(1_500_000)),
                ("cycles", None),
            ],
            2_000_000_000,
        )],
    )
}

#[test]
fn the_runs_table_bars_grow_by_five_percent_of_the_run() {
    let mut out = String::new();
    // perf's rows for runs of 11.63, 10.99 and 1.22 ms around a mean of 7.95 ms.
    runs_table(&mut out, &[11_630_000, 10_990_000, 1_220_000], 0.00795, 5);
    let bars: Vec<usize> = out
        .lines()
        .filter(|l| l.contains('('))
        .map(|l| l.matches('#').count())
        .collect();
    assert_eq!(bars, [7, 6, 111], "{out}");
    assert!(out.contains("0.01163 (+0.00368) #######\n"), "{out}");
    assert!(
        out.starts_with("           # Table"),
        "under the digits: {out}"
    );
    let mut six = String::new();
    runs_table(&mut six, &[1_000_000], 0.001, 6);
    assert!(six.starts_with("          # Table"), "{six}");
}

#[test]
fn the_formats_follow_the_options() {
    let csv = render_with(&["-x", ";", "--", "true"], &one_run());
    assert_eq!(csv.lines().next().unwrap().split(';').count(), 7, "{csv}");
    let lines = render_with(&["-j", "--", "true"], &one_run());
    assert_eq!(lines.lines().count(), 3, "{lines}");
    assert!(
        lines.starts_with("{\"counter-value\" : \"1234567.000000\""),
        "{lines}"
    );
}

/// Oracle: perf 7.2.13's table of its default events (Debian sid's `perf stat true`):
/// `#  77668.7 faults/sec  page_faults_per_second`, `#      0.4 CPUs  CPUs_utilized`, each
/// default metric's value `%8.1f` and its unit and name in 38 columns (stat-display.c's
/// `print_metric_std`, `METRIC_LEN`). Before: perf 6.1's `823.045 M/sec`, which perf 7.2's
/// stat+std_output.sh refuses ("wrong event metric. expected faults/sec").
#[test]
fn the_table_reads_as_perfs() {
    let text = render_with(&["--", "sh", "-c", "true"], &one_run());
    // The count is grouped as this process's locale groups numbers (perf's `%'`).
    let count = format!("{:>18}", thousands(1_234_567));
    let expected = "
 Performance counter stats for 'sh -c true':

COUNT      page-faults                      # 823044666.7 faults/sec  page_faults_per_second
              1.50 msec task-clock                       #      0.0 CPUs  CPUs_utilized
   <not supported>      cycles

       2.000000000 seconds time elapsed

 Not supported here:
   cycles: no PMU here

"
    .replace("COUNT", &count);
    assert_eq!(text, expected);
}

/// Oracle: perf 6.1's table (Debian 12's `perf stat -e page-faults,task-clock`): beside
/// events given with `-e`, where perf 7.2 prints no metric, the metric keeps perf 6.1's words
/// (`823.045 M/sec`, `0.001 CPUs utilized`), the value `%8.3f` in 35 columns.
#[test]
fn events_given_with_e_keep_perf_6_1_s_metrics() {
    let words = ["-e", "page-faults,task-clock,cycles", "true"];
    let text = render_with(&words, &one_run());
    let lines: Vec<&str> = text.lines().filter(|l| l.contains('#')).collect();
    assert_eq!(
        lines,
        [
            format!(
                "{:>18}      page-faults                      #  823.045 M/sec",
                thousands(1_234_567)
            ),
            "              1.50 msec task-clock                       #    0.001 CPUs utilized"
                .to_string(),
        ],
        "{text}"
    );
}

#[test]
fn the_table_shows_runs_spreads_ratios_times_and_the_end() {
    let mut runs = [
        run(
            &[("cycles", Some(1_000)), ("instructions", Some(400))],
            1_000_000,
        ),
        run(
            &[("cycles", Some(1_000)), ("instructions", Some(600))],
            3_000_000,
        ),
    ];
    for run in &mut runs {
        run.end.sys_ns = Some(0);
        run.end.exit_code = 3;
        run.end.exit_description = "exited with status 3".to_string();
    }
    let text = render_with(
        &["-r", "2", "-C", "0,2-3", "--", "true"],
        &Summary::of(crate::stat::plan::machine_here(), &runs),
    );
    assert!(text.contains("for CPUs '0,2-3' (2 runs):"), "{text}");
    let instructions = text.lines().find(|l| l.contains("instructions")).unwrap();
    // perf 7.2.13's insn_per_cycle (`ScaleUnit` `1instructions`), the spread after it.
    assert_eq!(
        instructions,
        "               500      instructions                     #      0.5 instructions  insn_per_cycle  ( +- 20.00% )"
    );
    // Elapsed 1 and 3 ms: mean 2 ms, stddev of the mean 1 ms (50%), in perf's digits.
    assert!(
        text.contains("           0.00200 +- 0.00100 seconds time elapsed  ( +- 50.00% )\n"),
        "{text}"
    );
    // perf shows user and system times for one run of a command alone, not for -r or -C
    // (builtin-stat.c: `run_count == 1 && target__none`).
    assert!(!text.contains("seconds user\n"), "{text}");
    assert!(
        text.contains(" The command exited with status 3."),
        "{text}"
    );
    assert!(!text.contains("Not supported"), "{text}");
    assert_eq!(precision(0.00147), 3);
    assert_eq!(precision(2.0), 0);
}

#[test]
fn intervals_and_places_print_with_their_columns() {
    let one = run(&[("cpu-clock", Some(30))], 10);
    let place = |cpu, v: u64| Counts {
        place: Some(Place::Cpu(cpu)),
        readings: vec![Ok(Reading::new(v, 100_000_000, 100_000_000))],
    };
    let snapshot = Snapshot {
        at_ns: 100_000_000,
        counts: vec![place(0, 100_000_000), place(1, 50_000_000)],
    };
    let (summary, mut sections) = intervals(&one, &[snapshot]);
    let interval = Summary::of_interval(
        crate::stat::plan::machine_here(),
        &summary.events,
        sections.remove(0),
    );
    let args = parse(&["-a", "-A", "-I", "100"]).unwrap();
    let report = Report::of(&args, &[]);
    let text = render_interval(&report, &interval, true, &mut 0);
    let again = render_interval(&report, &interval, false, &mut 0);
    assert_eq!(again.lines().count(), 2, "the heading once: {again}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "#           time CPU                counts unit events"
    );
    assert_eq!(
        lines[1],
        // perf 7.2.13's `stat -a -A -I 100`.
        "     0.100000000 CPU0                   100.00 msec cpu-clock                        #      1.0 CPUs  CPUs_utilized"
    );
    assert!(
        lines[2].starts_with("     0.100000000 CPU1                    50.00 msec"),
        "{text}"
    );
    assert!(!text.contains("seconds time elapsed"), "{text}");
}

#[test]
fn one_reason_shared_by_several_events_is_said_once() {
    let summary = Summary::of(
        crate::stat::plan::machine_here(),
        &[run(&[("cycles", None), ("instructions", None)], 1)],
    );
    let text = render_with(&["-p", "42", "--", "true"], &summary);
    assert!(text.contains("for process id '42':"), "{text}");
    assert!(text.contains("   cycles: no PMU here\n"), "{text}");
    // The reasons differ only in the name they start with: the same reason.
    assert!(text.contains("   instructions: as above\n"), "{text}");
    let system_wide = render_with(&["-a"], &summary);
    assert!(system_wide.contains("for 'system wide':"), "{system_wide}");
}

#[test]
fn json_has_the_documented_fields() {
    let text = render_with(&["--json", "--", "true", "x"], &one_run());
    let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(value["command"], json!(["true", "x"]));
    assert_eq!(value["exit_status"], 0);
    assert_eq!(value["elapsed_ns"], 2_000_000_000u64);
    assert_eq!(value["user_ns"], 1_000_000_000u64);
    assert!(value["sys_ns"].is_null(), "not told: {value}");
    assert!(value["elapsed_stddev_percent"].is_null());
    assert_eq!(value["runs"], 1);
    assert!(value["note"].is_null());
    assert!(value.get("intervals").is_none());
    let faults = &value["events"][0];
    assert_eq!(faults["name"], "page-faults");
    assert_eq!(faults["backend"], "test");
    assert_eq!(faults["value"], 1_234_567);
    assert_eq!(faults["scaled"], 1_234_567);
    assert_eq!(faults["supported"], true);
    assert_eq!(faults["metric_unit"], "M/sec");
    assert!(faults["stddev_percent"].is_null());
    let cycles = &value["events"][2];
    assert_eq!(cycles["supported"], false);
    assert!(cycles["value"].is_null());
    assert_eq!(cycles["reason"], "cycles: no PMU here");
}

/// Where the backend multiplexes in software (the device models of the registry's
/// backends, fed the conformance suite's steady work, on an Intel, an AMD and a P6 CPU
/// model): one more copy of `branches` than the model has general-purpose counters,
/// ungrouped, counted over ten turns, then printed as `stat` prints it. Every copy ran part
/// of the time, and every format says so: `(xx.xx%)` in the table, the fifth field of
/// `-x,`, `pcnt-running` of `-j`, each strictly between 0 and 100.
#[test]
fn software_multiplexing_on_the_device_models_shows_in_every_format() {
    use counterhal_hal::{Backend, Group};
    let mut readings: Vec<(String, Vec<Reading>)> = Vec::new();
    for model in ["skl", "amd64_fam17h_zen2", "p6"] {
        let context = counterhal::Context::new(None, Some(model)).unwrap();
        for registration in counterhal::REGISTRY {
            // A backend without models, or none of this CPU model's kind.
            let Some(Ok(fed)) = registration.fed_model.map(|fed| fed(&context)) else {
                continue;
            };
            let Some(slots) = fed.backend.capabilities().general_counters() else {
                continue;
            };
            let names = vec!["branches"; slots as usize + 1];
            let options = counterhal::OpenOptions::ungrouped();
            let mut set = fed
                .backend
                .open_named(&names, &fed.target, &options)
                .unwrap_or_else(|e| panic!("{}: {e}", fed.description));
            set.enable().unwrap();
            // 40 ms of the models' time (each unit is 10 ns): ten 4 ms turns.
            for _ in 0..4_000 {
                (fed.work)(1_000);
            }
            set.disable().unwrap();
            readings.push((fed.description.clone(), set.read_to_vec().unwrap()));
        }
    }
    assert!(
        readings.len() >= 3,
        "a model subject per CPU model at least: {}",
        readings.len()
    );
    let within = |percent: f64, what: &str| {
        assert!(percent > 0.0 && percent < 100.0, "{what}: {percent}");
    };
    for (what, readings) in readings {
        let names: Vec<String> = (0..readings.len()).map(|i| format!("copy{i}")).collect();
        let values: Vec<(&str, Option<u64>)> =
            names.iter().map(|name| (name.as_str(), Some(0))).collect();
        let mut one = run(&values, 40_000_000);
        for (result, reading) in one.events.iter_mut().zip(&readings) {
            result.outcome = Ok(*reading);
        }
        let summary = Summary::of(crate::stat::plan::machine_here(), &[one]);
        let table = render_with(&["--", "true"], &summary);
        let shares: Vec<f64> = table
            .lines()
            .filter(|line| line.contains("copy"))
            .map(|line| {
                let share = line.rsplit_once("  (").map(|(_, share)| share);
                let share = share.and_then(|s| s.strip_suffix("%)"));
                share
                    .unwrap_or_else(|| panic!("{what}: {line}"))
                    .parse()
                    .unwrap()
            })
            .collect();
        assert_eq!(shares.len(), readings.len(), "{what}: {table}");
        shares.iter().for_each(|&share| within(share, &what));
        let csv = render_with(&["-x,", "--", "true"], &summary);
        for line in csv.lines() {
            within(line.split(',').nth(4).unwrap().parse().unwrap(), &what);
        }
        let lines = render_with(&["-j", "--", "true"], &summary);
        for line in lines.lines() {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            within(value["pcnt-running"].as_f64().unwrap(), &what);
        }
    }
}

/// Oracle: perf 7.2.13's tools/perf/tests/shell/stat+std_output.sh, whose `commachecker`
/// wants each default event's line to carry its metric's name (`event_metric`:
/// `CPUs_utilized`, `cs/sec`, `migrations/sec`, `faults/sec`, `GHz`, `insn_per_cycle`,
/// `/sec`, `branch_miss_rate`), and perf 7.2's units (pmu-events' common metrics.json:
/// branches per second in `M/sec`, the miss rate in `%`).
#[test]
fn every_default_event_carries_perf_7_2_s_metric() {
    let summary = Summary::of(
        crate::stat::plan::machine_here(),
        &[run(
            &[
                ("task-clock", Some(2_000_000)),
                ("context-switches", Some(4)),
                ("cpu-migrations", Some(1)),
                ("page-faults", Some(50)),
                ("cycles", Some(6_000_000)),
                ("instructions", Some(3_000_000)),
                ("branches", Some(500_000)),
                ("branch-misses", Some(5_000)),
            ],
            4_000_000,
        )],
    );
    let text = render_with(&["true"], &summary);
    let expected = [
        ("task-clock", "     0.5 CPUs  CPUs_utilized"),
        ("context-switches", "  2000.0 cs/sec  cs_per_second"),
        (
            "cpu-migrations",
            "   500.0 migrations/sec  migrations_per_second",
        ),
        ("page-faults", " 25000.0 faults/sec  page_faults_per_second"),
        ("cycles", "     3.0 GHz  cycles_frequency"),
        ("instructions", "     0.5 instructions  insn_per_cycle"),
        ("branches", "   250.0 M/sec  branch_frequency"),
        ("branch-misses", "     1.0 %  branch_miss_rate"),
    ];
    for (event, metric) in expected {
        let line = text
            .lines()
            .find(|l| l.contains(&format!(" {event} ")))
            .unwrap_or_else(|| panic!("{event}: {text}"));
        assert!(line.ends_with(&format!("# {metric}")), "{line}");
    }
}

/// Oracle: perf 7.2.13's stat+std_output.sh (`check_interval`), which reads every line after
/// `-I`'s intervals that is not blank and not a comment as an event's: the reasons why events
/// were not supported follow the intervals as comment lines. Before: " Not supported here:",
/// and the script stopped at "Unknown event name in Not supported here:".
#[test]
fn the_reasons_after_intervals_are_comment_lines() {
    let args = parse(&["-I", "100", "true"]).unwrap();
    let text = render_after_intervals(&Report::of(&args, &[]), &one_run(), 0);
    assert!(text.contains("#   cycles: no PMU here\n"), "{text}");
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        assert!(line.starts_with('#'), "{line}");
    }
}
