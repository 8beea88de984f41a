//! `counterhal stat`'s options that choose what is counted, side by side with the installed
//! perf where perf runs them here: privilege levels for every event, perf's detailed events,
//! threads, CPUs added up by core, socket, die and node, a delay, and no inheritance (with a
//! command: cgroups.rs).

use std::process::{Command, Output};

use crate::common::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// An event name without its `:u`.
fn base_event(name: &str) -> &str {
    name.split(':').next().unwrap_or(name)
}

#[test]
fn all_user_and_all_kernel_count_as_perfs() {
    linux_or_skip!();
    let o = ours(&[
        "-x,",
        "--all-user",
        "-e",
        "page-faults,task-clock",
        "--",
        "true",
    ]);
    let lines = result_lines(&o);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(lines[0].contains(",page-faults:u,"), "{lines:#?}");
    let k = ours(&["-x,", "--all-kernel", "-e", "page-faults", "--", "true"]);
    let kl = result_lines(&k);
    assert!(kl[0].contains(",page-faults:k,"), "{kl:#?}");
    if perf_available() {
        let p = perf(&[
            "-x,",
            "--all-user",
            "-e",
            "page-faults,task-clock",
            "--",
            "true",
        ]);
        assert_eq!(result_lines(&p).len(), lines.len(), "{}", stderr(&p));
    }
}

#[test]
fn detailed_adds_perfs_events() {
    linux_or_skip!();
    let events = |out: &Output| -> Vec<String> {
        result_lines(out)
            .iter()
            .map(|l| {
                l.split(',')
                    .nth(2)
                    .unwrap()
                    .split(':')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    let o = ours(&["-d", "-x,", "--", "true"]);
    let ours_events = events(&o);
    assert_eq!(ours_events.len(), 12, "{ours_events:?}");
    assert_eq!(ours_events[8], "L1-dcache-loads");
    if perf_available() {
        assert_eq!(ours_events, events(&perf(&["-d", "-x,", "--", "true"])));
        let dd = events(&ours(&["-dd", "-x,", "--", "true"]));
        assert_eq!(dd, events(&perf(&["-dd", "-x,", "--", "true"])));
    }
}

#[test]
fn a_thread_is_counted_by_its_id() {
    linux_or_skip!();
    let mut sleeper = Command::new("sleep").arg("5").spawn().unwrap();
    let tid = sleeper.id().to_string();
    let o = ours(&["-t", &tid, "-x,", "-e", "task-clock", "--timeout", "50"]);
    sleeper.kill().ok();
    sleeper.wait().ok();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(result_lines(&o).len(), 1, "{}", stderr(&o));
    let mut sleeper = Command::new("sleep").arg("5").spawn().unwrap();
    let tid = sleeper.id().to_string();
    let table = ours(&["-t", &tid, "-e", "task-clock", "--timeout", "20"]);
    sleeper.kill().ok();
    sleeper.wait().ok();
    let text = stderr(&table);
    assert!(text.contains(&format!("thread id '{tid}'")), "{text}");
    let missing = ours(&["-t", "0", "--", "true"]);
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn cpus_add_up_per_core_socket_die_and_node_as_perfs_do() {
    linux_or_skip!();
    if !may_count_cpus() {
        skip!(
            Need::Privilege,
            "counting every CPU needs root or perf_event_paranoid <= 0"
        );
    }
    // label, number of CPUs, unit, event: the fields perf and counterhal must agree on.
    let shape = |out: &Output| -> Vec<(String, String, String, String)> {
        result_lines(out)
            .iter()
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                (
                    f[0].into(),
                    f[1].into(),
                    f[3].into(),
                    base_event(f[4]).into(),
                )
            })
            .collect()
    };
    for option in ["--per-core", "--per-socket", "--per-die", "--per-node"] {
        let args = [
            option,
            "-a",
            "-x,",
            "-e",
            "cpu-clock,page-faults",
            "--",
            "sleep",
            "0.05",
        ];
        let o = ours(&args);
        assert!(o.status.success(), "{option}: {}", stderr(&o));
        let ours_shape = shape(&o);
        assert!(!ours_shape.is_empty(), "{option}: {}", stderr(&o));
        let cpus: usize = ours_shape
            .iter()
            .filter(|s| s.3 == "cpu-clock")
            .map(|s| s.1.parse::<usize>().unwrap())
            .sum();
        assert_eq!(
            cpus,
            counterhal::online_cpus(&counterhal::system::System::host()).len() as usize,
            "{option}: every CPU once: {ours_shape:?}"
        );
        if perf_available() {
            let p = perf(&args);
            assert_eq!(ours_shape, shape(&p), "{option}: {}", stderr(&p));
            let j = result_lines(&ours(&[
                option,
                "-a",
                "-j",
                "-e",
                "cpu-clock",
                "--",
                "sleep",
                "0.02",
            ]));
            let pj = result_lines(&perf(&[
                option,
                "-a",
                "-j",
                "-e",
                "cpu-clock",
                "--",
                "sleep",
                "0.02",
            ]));
            let keys = |line: &str| -> Vec<String> {
                line.split(", \"")
                    .map(|kv| {
                        kv.split(" : ")
                            .next()
                            .unwrap()
                            .trim_matches(['{', '"'])
                            .to_string()
                    })
                    .collect()
            };
            // perf 7.2's `counters` where perf 6.1 says `aggregate-number` (7.2's linter
            // refuses 6.1's key: cli/tests/stat_json_lint.rs); the others are 6.1's.
            let seven_two = |line: &str| {
                keys(line)
                    .into_iter()
                    .map(|k| k.replace("aggregate-number", "counters"))
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                keys(&j[0]),
                seven_two(&pj[0]),
                "ours {}\nperf {}",
                j[0],
                pj[0]
            );
        }
    }
    let refused = ours(&["--per-core", "--", "true"]);
    assert_eq!(refused.status.code(), Some(2), "needs -a or -C");
}

#[test]
fn a_delay_counts_only_what_comes_after_it() {
    linux_or_skip!();
    // `sleep` faults its pages in at the start, then sleeps: after 100 ms nothing is left.
    let faults = |out: &Output| -> Option<u64> {
        result_lines(out)
            .iter()
            .find(|l| l.contains(",page-faults"))?
            .split(',')
            .next()?
            .parse()
            .ok()
    };
    let args = ["-x,", "-e", "page-faults", "--", "sleep", "0.3"];
    let whole = faults(&ours(&args)).expect("counted");
    let mut delayed_args = vec!["-D", "100"];
    delayed_args.extend_from_slice(&args);
    let delayed = faults(&ours(&delayed_args)).expect("counted after the delay");
    assert!(whole > 10, "{whole}");
    assert!(delayed < whole / 2, "{delayed} of {whole}");
    if perf_available() {
        let perfs = faults(&perf(&delayed_args)).expect("perf counted");
        assert!(perfs < whole / 2, "perf: {perfs} of {whole}");
    }
    // A command that ends before the delay counted nothing.
    let short = ours(&["-D", "500", "-x,", "-e", "page-faults", "--", "true"]);
    assert!(
        result_lines(&short)[0].starts_with("<not counted>"),
        "{}",
        stderr(&short)
    );
}

#[test]
fn several_threads_count_each_as_perfs_do() {
    linux_or_skip!();
    let mut sleepers: Vec<std::process::Child> = (0..2)
        .map(|_| Command::new("sleep").arg("5").spawn().unwrap())
        .collect();
    let tids = format!("{},{}", sleepers[0].id(), sleepers[1].id());
    let args = [
        "-t",
        &tids,
        "--per-thread",
        "-x,",
        "-e",
        "task-clock,context-switches",
        "--timeout",
        "50",
    ];
    let o = ours(&args);
    let p = perf_available().then(|| perf(&args));
    for sleeper in &mut sleepers {
        sleeper.kill().ok();
        sleeper.wait().ok();
    }
    let lines = result_lines(&o);
    assert_eq!(lines.len(), 4, "{}", stderr(&o));
    assert!(
        lines[0].starts_with(&format!("sleep-{},", sleepers[0].id())),
        "{lines:#?}"
    );
    if let Some(p) = p {
        let lead = |l: &String| {
            l.split(',')
                .take(1)
                .chain(l.split(',').skip(3).take(1))
                .collect::<Vec<_>>()
                .join(",")
        };
        let ours_leads: Vec<String> = lines.iter().map(lead).collect();
        let perf_leads: Vec<String> = result_lines(&p).iter().map(lead).collect();
        assert_eq!(ours_leads, perf_leads, "{}", stderr(&p));
    }
    assert_eq!(ours(&["-t", "1,x", "--", "true"]).status.code(), Some(2));
}

#[test]
fn no_inherit_leaves_out_what_the_process_starts() {
    linux_or_skip!();
    // The shell waits, then starts `ls`, which faults in many pages: counted only with
    // inheritance.
    let faults = |no_inherit: bool, perfs: bool| -> Option<u64> {
        let mut shell = Command::new("sh")
            .args(["-c", "sleep 0.2; ls -R /usr/share > /dev/null"])
            .spawn()
            .unwrap();
        let pid = shell.id().to_string();
        let mut args = vec!["-p", &pid, "-x,", "-e", "page-faults", "--timeout", "700"];
        if no_inherit {
            args.push("-i");
        }
        let out = if perfs { perf(&args) } else { ours(&args) };
        shell.wait().ok();
        result_lines(&out).first()?.split(',').next()?.parse().ok()
    };
    let inherited = faults(false, false).expect("counted");
    let alone = faults(true, false).expect("counted");
    assert!(alone < inherited / 4, "{alone} against {inherited}");
    if perf_available() {
        let perfs = faults(true, true).expect("perf counted");
        assert!(perfs < inherited / 4, "perf: {perfs} against {inherited}");
    }
}

/// The task clock of a `-x' ' -I MS --interval-count 1 --summary` run's interval and summary
/// lines, in milliseconds, with the exit status.
fn interval_and_summary(out: &Output) -> (Option<i32>, Vec<f64>) {
    let clocks = stderr(out)
        .lines()
        .filter(|line| line.contains("task-clock"))
        .filter_map(|line| line.split_whitespace().nth(1)?.parse().ok())
        .collect();
    (out.status.code(), clocks)
}

/// Oracle: perf's builtin-stat.c `setup_system_wide` (6.1 and 7.2.13: no command and no
/// target, `target__none`, count every CPU) and perf 7.2.13's
/// tools/perf/tests/shell/stat+csv_summary.sh, whose command (`stat -e cycles -x' ' -I1000
/// --interval-count 1 --summary`, with the task clock, which counts here) exits 0 with an
/// interval line and a summary line under the installed perf and under counterhal, each
/// interval's task clock near the interval on every online CPU, as perf's.
#[test]
fn no_command_and_no_target_count_every_cpu_as_perf_does() {
    linux_or_skip!();
    let args = [
        "-e",
        "task-clock",
        "-x ",
        "-I200",
        "--interval-count",
        "1",
        "--summary",
    ];
    let (status, counted) = interval_and_summary(&ours(&args));
    assert_eq!(status, Some(0));
    assert_eq!(counted.len(), 2, "an interval and the summary: {counted:?}");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    // Every CPU's clock runs for the interval, idle or not.
    assert!(
        counted[0] > 200.0 * cpus * 0.8,
        "{counted:?} on {cpus} CPUs"
    );
    let table = ours(&["-e", "task-clock", "--timeout", "100"]);
    assert_eq!(table.status.code(), Some(0), "{}", stderr(&table));
    assert!(
        stderr(&table).contains("for 'system wide'"),
        "{}",
        stderr(&table)
    );
    if perf_available() {
        let (status, perfs) = interval_and_summary(&perf(&args));
        assert_eq!(status, Some(0));
        assert_eq!(perfs.len(), 2, "perf's: {perfs:?}");
        assert!(
            (counted[0] - perfs[0]).abs() < perfs[0] * 0.2,
            "ours {counted:?}, perf's {perfs:?}"
        );
    }
}
