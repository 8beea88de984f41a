//! perf's habits in `stat`, each side by side with the installed perf (the oracle): a command
//! without `--`; counts grouped as the locale groups them; no user and system lines where perf
//! prints none (`-a`, `-r`); a spread of 0 left blank; `--per-thread` columns; "Events
//! disabled" and "Events enabled" under `-D`, and intervals stamped from the enable; `-p` with
//! a list of processes; `-D -5` refused by its value; a tracepoint with a modifier shown by its
//! name alone.

use std::process::{Child, Command, Output, Stdio};

use crate::common::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// Both tools' `stat` output (standard error, where both write it) for `args`, in the C
/// locale.
fn both(args: &[&str]) -> (Output, Output) {
    let run = |tool: &str, args: &[&str]| {
        let mut command = if tool == "perf" {
            let mut c = Command::new("perf");
            c.arg("stat");
            c
        } else {
            let mut c = Command::new(bin());
            c.arg("stat");
            c
        };
        command
            .args(args)
            .env("LC_ALL", "C.UTF-8")
            .output()
            .expect("the tool runs")
    };
    (run("counterhal", args), run("perf", args))
}

/// The result lines of a table (those naming `event`).
fn lines_of(out: &Output, event: &str) -> Vec<String> {
    stderr(out)
        .lines()
        .filter(|l| l.contains(event))
        .map(str::to_string)
        .collect()
}

fn sleeper(seconds: &str) -> Child {
    Command::new("sleep")
        .arg(seconds)
        .stdout(Stdio::null())
        .spawn()
        .expect("sleep")
}

#[test]
fn a_command_runs_without_dashes_as_perf_runs_it() {
    perf_or_skip!();
    let (ours, perf) = both(&["-e", "page-faults", "ls", "-d", "/"]);
    for out in [&ours, &perf] {
        assert!(out.status.success(), "{}", stderr(out));
        assert_eq!(stdout(out).trim(), "/", "ls -d / ran with its own option");
        assert!(stderr(out).contains("Performance counter stats for 'ls -d /'"));
    }
}

/// The count of `page-faults` each tool prints for dd's 64 MiB buffer (thousands of
/// faults) under `locale`.
fn grouped_counts(locale: &str) -> (String, String) {
    let args = [
        "stat",
        "-e",
        "page-faults",
        "--",
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=64M",
        "count=1",
    ];
    let count = |program: &std::path::Path, args: &[&str]| {
        let out = Command::new(program)
            .args(args)
            .env("LC_ALL", locale)
            .output()
            .unwrap();
        lines_of(&out, "page-faults")
            .first()
            .and_then(|l| l.split_whitespace().next().map(str::to_string))
            .unwrap_or_default()
    };
    (
        count(&bin(), &args),
        count(std::path::Path::new("perf"), &args),
    )
}

#[test]
fn counts_are_grouped_as_the_locale_groups_them() {
    perf_or_skip!();
    let (ours, perf) = grouped_counts("C.UTF-8");
    assert!(
        perf.len() >= 4 && ours.len() >= 4,
        "ours {ours}, perf {perf}"
    );
    assert!(
        !ours.contains(',') && !perf.contains(','),
        "C: ours {ours}, perf {perf}"
    );
    let installed = Command::new("locale").arg("-a").output().is_ok_and(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .any(|l| l == "en_US.utf8")
    });
    if !installed {
        skip!(
            Need::Tools,
            "the en_US.UTF-8 locale is not installed (apt-get install locales, then localedef -i en_US -f UTF-8 en_US.UTF-8)"
        );
    }
    let (ours, perf) = grouped_counts("en_US.UTF-8");
    assert!(
        ours.contains(',') && perf.contains(','),
        "en_US: ours {ours}, perf {perf}"
    );
}

#[test]
fn user_and_system_times_only_where_perf_prints_them() {
    perf_or_skip!();
    let has_times = |out: &Output| stderr(out).contains("seconds user");
    for args in [
        &["-e", "task-clock", "--", "true"][..],
        &["-r", "3", "-e", "task-clock", "--", "true"][..],
    ] {
        let (ours, perf) = both(args);
        assert_eq!(
            has_times(&ours),
            has_times(&perf),
            "{args:?}:\n{}",
            stderr(&ours)
        );
    }
    if may_count_cpus() {
        let (ours, perf) = both(&["-a", "-e", "task-clock", "--", "sleep", "0.05"]);
        assert_eq!(has_times(&ours), has_times(&perf), "-a:\n{}", stderr(&ours));
        assert!(!has_times(&ours));
    }
}

#[test]
fn a_spread_of_zero_is_left_blank() {
    perf_or_skip!();
    // Alignment faults: 0 in every run here (no alignment checking on x86-64 or arm64 user
    // code), a spread of exactly 0.
    let (ours, perf) = both(&["-r", "3", "-e", "alignment-faults", "--", "true"]);
    let spread = |out: &Output| {
        lines_of(out, "cpu-migrations")
            .iter()
            .any(|l| l.contains("( +-"))
    };
    assert_eq!(
        spread(&ours),
        spread(&perf),
        "ours:\n{}\nperf:\n{}",
        stderr(&ours),
        stderr(&perf)
    );
}

#[test]
fn per_thread_columns_line_up_with_perf_s() {
    perf_or_skip!();
    let mut child = sleeper("2");
    let pid = child.id().to_string();
    let args = [
        "-p",
        &pid,
        "--per-thread",
        "-e",
        "context-switches",
        "--timeout",
        "200",
    ];
    let (ours, perf) = both(&args);
    let _ = child.kill();
    let _ = child.wait();
    let columns = |out: &Output| {
        lines_of(out, "context-switches")
            .first()
            .map(|l| (l.find("sleep-"), l.find("context-switches")))
    };
    assert_eq!(
        columns(&ours),
        columns(&perf),
        "ours:\n{}\nperf:\n{}",
        stderr(&ours),
        stderr(&perf)
    );
}

/// `-D 100 -I 50`: both say the events are disabled, then enabled, and stamp the first
/// interval from the enable (about 0.05 s), not from the start (0.15 s and later). A run
/// whose interval timer fired late on a busy machine is run again, up to three times: stamped
/// from the start, every run would be late.
///
/// Oracle: perf 6.1 (Debian 12's linux-perf), the same command.
#[test]
fn a_delay_says_so_and_intervals_count_from_the_enable() {
    perf_or_skip!();
    let first_stamp = |out: &Output| -> f64 {
        lines_of(out, "page-faults")
            .first()
            .and_then(|l| l.split_whitespace().next()?.parse().ok())
            .unwrap_or(f64::NAN)
    };
    for who in ["ours", "perf"] {
        let mut stamps = Vec::new();
        for _ in 0..3 {
            let (ours, perf) = both(&[
                "-D",
                "100",
                "-I",
                "50",
                "-e",
                "page-faults",
                "--",
                "sleep",
                "0.3",
            ]);
            let out = if who == "ours" { ours } else { perf };
            let text = stderr(&out);
            assert!(
                text.contains("Events disabled\n") && text.contains("Events enabled\n"),
                "{who}: {text}"
            );
            let first = first_stamp(&out);
            stamps.push(first);
            if first < 0.09 {
                break;
            }
        }
        assert!(
            stamps.iter().any(|&first| first < 0.09),
            "{who}: the first interval is stamped from the enable, not the start: {stamps:?}"
        );
    }
}

#[test]
fn several_processes_are_counted_as_perf_counts_them() {
    perf_or_skip!();
    let (mut a, mut b) = (sleeper("2"), sleeper("2"));
    let list = format!("{},{}", a.id(), b.id());
    let args = [
        "-p",
        &list,
        "--per-thread",
        "-e",
        "task-clock",
        "--timeout",
        "200",
    ];
    let (ours, perf) = both(&args);
    for child in [&mut a, &mut b] {
        let _ = child.kill();
        let _ = child.wait();
    }
    for out in [&ours, &perf] {
        let text = stderr(out);
        assert!(text.contains(&format!("process id '{list}'")), "{text}");
        assert_eq!(
            lines_of(out, "task-clock").len(),
            2,
            "one line per process:\n{text}"
        );
    }
}

/// Oracle: perf 6.1 (Debian 12's linux-perf): a negative delay (`-D -1`, perf takes any as
/// it) starts with the events disabled, which without `--control` stay so: "Events disabled"
/// and `<not counted>`, exit 0.
#[test]
fn a_negative_delay_starts_disabled_as_perfs() {
    linux_or_skip!();
    let args = ["-D", "-5", "-x,", "-e", "page-faults", "--", "true"];
    let out = ours(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("Events disabled\n"),
        "{}",
        stderr(&out)
    );
    assert!(
        result_lines(&out)[0].starts_with("<not counted>,,page-faults,"),
        "{}",
        stderr(&out)
    );
    if perf_available() {
        let perfs = perf(&args);
        assert!(
            stderr(&perfs).starts_with("Events disabled\n"),
            "{}",
            stderr(&perfs)
        );
        assert!(result_lines(&perfs)[0].starts_with("<not counted>,,page-faults,"));
    }
}

#[test]
fn a_tracepoint_with_a_modifier_is_shown_by_its_name() {
    perf_or_skip!();
    if !running_as_root() {
        skip!(Need::Privilege, "tracepoints need root here");
    }
    let (ours, perf) = both(&["-e", "syscalls:sys_enter_getpid:u", "--", "true"]);
    let name = |out: &Output| {
        lines_of(out, "sys_enter_getpid")
            .first()
            .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
    };
    assert_eq!(
        name(&ours),
        name(&perf),
        "ours:\n{}\nperf:\n{}",
        stderr(&ours),
        stderr(&perf)
    );
}

/// A modifier letter given twice is refused as perf refuses it (perf's parse-events.c
/// `check_modifier`: each letter but `p` once, `p` at most three times), and what perf takes
/// is taken: the oracle is perf itself, `perf stat -e EVENT true` on this machine.
#[test]
fn repeated_modifiers_are_refused_as_perf_refuses_them() {
    perf_or_skip!();
    for (event, taken) in [
        ("task-clock:uuuu", false),
        ("task-clock:uu", false),
        ("task-clock:ukuk", false),
        ("task-clock:pppp", false),
        ("task-clock:ppp", true),
        ("task-clock:uk", true),
    ] {
        let by_perf = perf(&["-e", event, "true"]);
        assert_eq!(
            by_perf.status.success(),
            taken,
            "perf on {event}: {}",
            stderr(&by_perf)
        );
        let ours = counterhal(&["stat", "-e", event, "--", "true"]);
        assert_eq!(
            ours.status.success(),
            taken,
            "ours on {event}: {}",
            stderr(&ours)
        );
        if !taken {
            let modifier = event.split_once(':').map_or(event, |(_, m)| m);
            assert!(
                stderr(&ours).contains(modifier),
                "{event}: {}",
                stderr(&ours)
            );
        }
    }
}

/// Counting CPUs (`-a`, `-C`), the default set's clock is `cpu-clock`; counting a command,
/// `task-clock`.
///
/// Oracle: the installed perf (6.1, Debian 12's: builtin-stat.c `add_default_attributes`),
/// and perf 7.2's Default metrics (`cpu-clock if #target_cpu else task-clock`,
/// pmu-events/arch/common/common/metrics.json).
#[test]
fn the_default_clock_is_cpu_clock_when_counting_cpus() {
    perf_or_skip!();
    for args in [&["-a", "true"][..], &["-C", "0", "true"], &["true"]] {
        let (ours, perf) = both(args);
        let clock = |out: &Output| {
            stderr(out)
                .lines()
                .find_map(|l| {
                    l.split_whitespace()
                        .find(|w| *w == "cpu-clock" || *w == "task-clock")
                })
                .map(str::to_string)
        };
        assert!(clock(&perf).is_some(), "{args:?}: {}", stderr(&perf));
        assert_eq!(clock(&ours), clock(&perf), "{args:?}: {}", stderr(&ours));
    }
}
