//! `counterhal stat`'s event groups as perf's own stat tests use them: weak groups
//! (`{a,b}:W`), counted as a group where the group opens and split into its events where it
//! does not, side by side with perf 6.1 (Debian 12's) and perf 7.2.13 (the lab's sid root).

use std::process::{Command, Output};

use crate::common::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The software group perf's stat.sh would count on any machine: a tracepoint that fires once
/// for `true` (exactly), page faults and the task clock.
const SOFTWARE_GROUP: &str = "{sched:sched_process_exec,page-faults,task-clock}:W";

/// Each `-x,` line's value, unit and event (the first three fields).
fn fields(out: &Output) -> Vec<(String, String, String)> {
    result_lines(out)
        .iter()
        .map(|line| {
            let mut f = line.split(',').map(str::to_string);
            let mut next = || f.next().unwrap_or_default();
            (next(), next(), next())
        })
        .collect()
}

/// `perf stat -x, -e GROUP -- true` under `perf` and ours: the same events, every one counted,
/// the tracepoint's one exec exactly, the page faults within a quarter of each other.
fn weak_group_counts_as(perf: fn() -> Result<Command, String>, label: &str) {
    for group in [SOFTWARE_GROUP, "{page-faults,task-clock}:W"] {
        let mut perf = match perf() {
            Ok(perf) => perf,
            Err(why) => skip!(Need::Tools, "{why}"),
        };
        let theirs = perf
            .args(["stat", "-x,", "-e", group, "--", "true"])
            .output()
            .expect("run perf");
        let ours = ours(&["-x,", "-e", group, "--", "true"]);
        assert_eq!(ours.status.code(), Some(0), "{group}: {}", stderr(&ours));
        assert_eq!(
            theirs.status.code(),
            Some(0),
            "{label}: {}",
            stderr(&theirs)
        );
        // perf 7.2 sorts a group's events by PMU (parse_events__sort_events_and_fix_groups):
        // compared in name order.
        let (mut theirs, mut ours) = (fields(&theirs), fields(&ours));
        theirs.sort_by(|a, b| a.2.cmp(&b.2));
        ours.sort_by(|a, b| a.2.cmp(&b.2));
        let events = |lines: &[(String, String, String)]| -> Vec<String> {
            lines.iter().map(|(_, _, event)| event.clone()).collect()
        };
        assert_eq!(events(&ours), events(&theirs), "{group}: ours, {label}'s");
        for ((value, _, event), (perf_value, _, _)) in ours.iter().zip(&theirs) {
            let ours: f64 = value.parse().unwrap_or_else(|_| panic!("{event}: {value}"));
            let perf: f64 = perf_value
                .parse()
                .unwrap_or_else(|_| panic!("{label}: {event}"));
            match event.as_str() {
                "sched:sched_process_exec" => assert_eq!(ours, perf, "{event}"),
                "page-faults" => assert!(
                    (ours - perf).abs() <= perf / 4.0 + 4.0,
                    "{event}: ours {ours}, {label}'s {perf}"
                ),
                _ => assert!(ours > 0.0, "{event}: {value}"),
            }
        }
    }
}

/// Oracle: perf 6.1 (Debian 12's linux-perf 6.1), `perf stat -x, -e
/// '{sched:sched_process_exec,page-faults,task-clock}:W' -- true` and `{page-faults,task-clock}:W`.
#[test]
fn weak_software_groups_count_as_perf_6_1_counts_them() {
    linux_or_skip!();
    weak_group_counts_as(perf_6_1, "perf 6.1");
}

/// Oracle: perf 7.2.13 (Debian sid's linux-perf, the lab's sid root), as above.
#[test]
fn weak_software_groups_count_as_perf_7_2_counts_them() {
    linux_or_skip!();
    weak_group_counts_as(perf_7_2, "perf 7.2");
}

/// Oracle: perf 7.2.13's tools/perf/tests/shell/stat.sh, `test_stat_repeat_weak_groups`:
/// `perf stat -r2 -e '{cycles x 10}:W' true` succeeds (where cycles count or not).
#[test]
fn stat_sh_repeat_weak_groups_passes() {
    linux_or_skip!();
    let cycles = ["cycles"; 10].join(",");
    let o = ours(&["-r2", "-e", &format!("{{{cycles}}}:W"), "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("seconds time elapsed"),
        "{}",
        stderr(&o)
    );
}

/// Oracle: perf 7.2.13's builtin-stat.c (`__run_perf_stat`: a weak group's member that fails
/// to open with EINVAL resets the group, `evlist__reset_weak_group` in util/evlist.c, and
/// every former member is opened on its own), seen here where perf 7.2 runs: `-vv -e
/// '{cpu-clock,task-clock:D}:W'` (a pinned member, which the kernel refuses in a group) says
/// "Weak group for cpu-clock/2 failed" and counts both. counterhal has no `:D`; a group of
/// more events than the msr backend's device model has counters is refused the same way
/// (the model, labelled as one), and counted split, each event multiplexed but one a fixed
/// counter holds. The models are named (Skylake's and Zen 3's), so that it holds on every
/// host (before, on an Intel host the model's fixed counter took one `cycles` and the test
/// failed).
#[test]
fn a_weak_group_that_does_not_open_is_split_into_its_events() {
    if let Ok(mut perf) = perf_7_2() {
        let o = perf
            .args([
                "stat",
                "-vv",
                "-x,",
                "-e",
                "{cpu-clock,task-clock:D}:W",
                "true",
            ])
            .output()
            .expect("run perf 7.2");
        let said = stderr(&o);
        assert!(said.contains("Weak group for cpu-clock/2 failed"), "{said}");
        let counted = said
            .lines()
            .filter(|line| {
                line.contains(",msec,")
                    && line
                        .split(',')
                        .next()
                        .is_some_and(|v| v.parse::<f64>().is_ok())
            })
            .count();
        assert_eq!(counted, 2, "{said}");
    }
    // The msr backend's device models of two CPUs named, so that the test says the same on
    // every host: Skylake, whose fixed counter 1 takes one `cycles` for the whole run, and
    // Zen 3, which has no fixed counter.
    for (cpu, on_a_fixed_counter) in [("skl", 1), ("amd64_fam19h_zen3", 0)] {
        weak_group_split_on_model(cpu, on_a_fixed_counter);
    }
}

/// The body of the test above on the msr backend's model of `cpu`: twelve `cycles` in a
/// group are refused, and in a weak group each counts on its own, multiplexed but for the
/// `on_a_fixed_counter` that a fixed counter holds all the time.
fn weak_group_split_on_model(cpu: &str, on_a_fixed_counter: usize) {
    let cycles = ["cycles"; 12].join(",");
    let model = |group: &str| {
        ours(&[
            "--backend",
            "msr",
            "--model",
            "--cpu-model",
            cpu,
            "-x,",
            "-e",
            group,
            "--",
            "sleep",
            "0.05",
        ])
    };
    let strong = model(&format!("{{{cycles}}}"));
    if strong.status.code() == Some(2) {
        skip!(
            Need::Hardware,
            "no device model of {cpu} for the msr backend: {}",
            stderr(&strong)
        );
    }
    let strong = fields(&strong);
    assert_eq!(strong.len(), 12, "{cpu}: {strong:?}");
    assert!(
        strong.iter().all(|(v, _, _)| v == "<not supported>"),
        "{cpu}: {strong:?}"
    );
    let weak = model(&format!("{{{cycles}}}:W"));
    assert_eq!(weak.status.code(), Some(0), "{cpu}: {}", stderr(&weak));
    let weak_lines = result_lines(&weak);
    assert_eq!(weak_lines.len(), 12, "{cpu}: {weak_lines:#?}");
    let mut whole = 0;
    for line in &weak_lines {
        let f: Vec<&str> = line.split(',').collect();
        assert!(f[0].parse::<u64>().is_ok_and(|n| n > 0), "{cpu}: {line}");
        let running: f64 = f[4].parse().expect("percent running");
        whole += usize::from(running >= 100.0);
    }
    assert_eq!(whole, on_a_fixed_counter, "{cpu}: {weak_lines:#?}");
}
