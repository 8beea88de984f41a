//! The examples work as a user expects: `cargo test` builds them, and these run them.

use std::path::PathBuf;
use std::process::Command;

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The built example `name` (cargo builds examples beside the tests).
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name);
    assert!(
        path.is_file(),
        "{} is built by `cargo test` (examples are built with the tests)",
        path.display()
    );
    path
}

fn software_events_count_here() -> bool {
    counterhal::open_default().is_ok_and(|b| counterhal::query(&b, "page-faults").usable())
}

#[test]
fn papi_command_line_adds_what_counts_and_says_why_not_for_the_rest() {
    if !software_events_count_here() {
        skip!(Need::System, "no backend here counts software events");
    }
    let out = Command::new(example("papi_command_line"))
        .args(["page-faults", "task-clock", "no-such-event"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("Successfully added: page-faults"), "{text}");
    assert!(text.contains("Failed adding: no-such-event"), "{text}");
    let faults: u64 = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("page-faults")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no page-fault count:\n{text}"));
    // The workload fills 16 MB of fresh memory: thousands of faults.
    assert!(faults > 1000, "{faults} page faults\n{text}");
    let usage = Command::new(example("papi_command_line")).output().unwrap();
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn the_region_harness_prints_its_regions() {
    if !software_events_count_here() {
        skip!(Need::System, "no backend here counts software events");
    }
    let out = Command::new(example("regions"))
        .args(["page-faults", "task-clock"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} row:\n{text}"))
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    // 2 threads x 4 calls of each region.
    assert_eq!(row("fill")[1..3], ["8", "2"]);
    assert_eq!(row("iteration")[1..3], ["8", "2"]);
    let json_line = text.lines().find(|l| l.starts_with('{')).unwrap();
    let json: serde_json::Value = serde_json::from_str(json_line).unwrap();
    assert_eq!(
        json["events"],
        serde_json::json!(["page-faults", "task-clock"])
    );

    // The process-wide regions write their report at exit.
    let global = Command::new(example("regions"))
        .arg("--global")
        .env("COUNTERHAL_REGION_EVENTS", "page-faults")
        .env_remove("COUNTERHAL_REGION_OUTPUT")
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&global.stderr);
    assert!(global.status.success(), "{report}");
    assert!(
        report
            .lines()
            .any(|l| l.starts_with("fill ") && l.split_whitespace().nth(1) == Some("3")),
        "{report}"
    );
}

/// The loop counts `hot_addresses` prints: `light L samples, heavy H samples`, and the total.
fn loop_samples(text: &str) -> (u64, u64, u64) {
    let number = |line: &str, after: &str| -> u64 {
        line.split(after)
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let total = text
        .lines()
        .find(|l| l.contains(" samples ("))
        .map_or(0, |l| number(&format!(" {l}"), " "));
    let line = text.lines().find(|l| l.starts_with("light ")).unwrap_or("");
    (number(line, "light "), number(line, "heavy "), total)
}

/// `examples/hot_addresses.rs` samples its own loops: the one doing three times the work
/// gets more samples, and at least 80% of them land in the two loops (the oracle: the work
/// each loop does, and their addresses).
#[test]
fn hot_addresses_finds_the_heavier_loop() {
    let Ok(chosen) = counterhal::open_default() else {
        skip!(Need::System, "no backend works here");
    };
    if !chosen.backend().dyn_capabilities().sampling() {
        skip!(Need::System, "the backend here cannot sample");
    }
    let out = Command::new(example("hot_addresses"))
        .arg("400")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (light, heavy, total) = loop_samples(&text);
    assert!(total >= 20, "{text}");
    assert!(heavy > light, "{text}");
    assert!((light + heavy) * 10 >= total * 8, "{text}");
}

/// One row of the harness's table: the event's name and its mean, standard deviation,
/// minimum and maximum.
fn harness_row(text: &str, name: &str) -> Option<[f64; 4]> {
    let line = text.lines().find(|l| l.starts_with(&format!("{name} ")))?;
    let numbers: Vec<f64> = line[name.len()..]
        .split_whitespace()
        .map(|n| n.parse().unwrap_or_else(|_| panic!("`{n}` in {line:?}")))
        .collect();
    numbers.try_into().ok()
}

/// `examples/harness.rs` measures a closure that touches K fresh pages N times and prints
/// each event's mean and spread. The oracle: the kernel's fault accounting twice over, the
/// page-faults software event and the thread's minor faults (`getrusage`'s `ru_minflt`,
/// from `/proc/thread-self/stat`), each at least K a run (a fresh page faults once when
/// first written) and within 5% of each other.
#[test]
fn the_harness_prints_mean_and_spread_and_counts_the_pages_touched() {
    if !software_events_count_here() {
        skip!(Need::System, "no backend here counts software events");
    }
    const PAGES: f64 = 300.0;
    let out = Command::new(example("harness"))
        .args(["--runs", "7", "--pages", "300"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let errors = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}{errors}");
    assert!(
        text.starts_with("# 7 runs of touching 300 fresh pages, on "),
        "{text}"
    );
    let header: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(header, ["event", "mean", "stddev", "min", "max"]);
    for name in [
        "task-clock",
        "page-faults",
        "context-switches",
        "minflt (kernel)",
    ] {
        let [mean, stddev, min, max] =
            harness_row(&text, name).unwrap_or_else(|| panic!("no {name} row:\n{text}"));
        assert!(
            min <= mean && mean <= max && stddev >= 0.0,
            "{name}: {text}"
        );
    }
    // A machine with a PMU counts instructions; one without says why it left them out.
    assert!(
        harness_row(&text, "instructions").is_some_and(|[mean, ..]| mean > 0.0)
            || errors.contains("instructions: left out: "),
        "{text}{errors}"
    );
    let [faults, ..] = harness_row(&text, "page-faults").unwrap();
    let [minflt, ..] = harness_row(&text, "minflt (kernel)").unwrap();
    assert!(
        (faults - minflt).abs() <= minflt * 0.05,
        "page-faults {faults}, minflt {minflt}\n{text}"
    );
    // Each run's counts are its own (a reset zeroes counts and times): the runs add up to
    // what a set counting every run without a reset counted.
    let totals = text
        .lines()
        .find_map(|l| l.strip_prefix("# page-faults: sum of runs "))
        .unwrap_or_else(|| panic!("no page-faults totals:\n{text}"));
    let (sum, total) = totals.split_once(", total ").unwrap();
    let (sum, total): (f64, f64) = (sum.parse().unwrap(), total.parse().unwrap());
    assert!(sum >= 7.0 * PAGES * 0.95 && total >= sum, "{totals}");
    assert!(total - sum <= total * 0.05, "{totals}");
    let usage = Command::new(example("harness"))
        .args(["--runs", "0"])
        .output()
        .unwrap();
    assert_eq!(usage.status.code(), Some(2));
    // With transparent huge pages always on, one fault may map 512 pages.
    let huge = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|mode| mode.contains("[always]"));
    if huge {
        skip!(
            Need::System,
            "transparent huge pages are always on here: fewer faults than pages touched"
        );
    }
    assert!(faults >= PAGES, "page-faults mean {faults}\n{text}");
    assert!(minflt >= PAGES, "minflt mean {minflt}\n{text}");
}

/// `examples/criterion_events.rs` (feature `criterion`) runs criterion briefly on counterhal's
/// measurement and reports each benchmark under its event's name; a 33 MiB vector, fresh
/// pages each time, faults once per 4 KiB page (8,448: the kernel's count, as `perf stat -e
/// page-faults` reads it), plus a few, and two made on two threads the benchmark spawns,
/// counted with `inheriting`, twice that (perf's `inherit`).
#[test]
fn the_criterion_example_reports_each_event_by_name() {
    if !software_events_count_here() {
        skip!(Need::System, "no backend here counts software events");
    }
    let out = Command::new(example("criterion_events"))
        .args([
            "--bench",
            "--warm-up-time",
            "0.05",
            "--measurement-time",
            "0.3",
            "--sample-size",
            "10",
            "--noplot",
        ])
        .env(
            "CRITERION_HOME",
            counterhal_conformance::fixtures::temp_dir().join("counterhal-criterion"),
        )
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let faults = text
        .lines()
        .find(|l| l.contains("time:") && l.contains("page-faults"))
        .unwrap_or_else(|| panic!("no page-faults line: {text}"));
    let values: Vec<f64> = faults
        .split(['[', ']', ' '])
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(values.len(), 3, "{faults}");
    for value in values {
        assert!((8448.0..8448.0 + 64.0).contains(&value), "{faults}");
    }
    assert!(
        text.lines()
            .any(|l| l.contains("time:") && l.contains("task-clock")),
        "{text}"
    );
    // The vectors made on two threads the benchmark spawns, counted with them (`inheriting`).
    let threads = text
        .lines()
        .skip_while(|l| !l.contains("on 2 threads, inherited"))
        .find(|l| l.contains("time:"))
        .unwrap_or_else(|| panic!("no line of the threads' benchmark: {text}"));
    for value in threads
        .split(['[', ']', ' '])
        .filter_map(|w| w.parse::<f64>().ok())
    {
        assert!((16896.0..16896.0 + 256.0).contains(&value), "{threads}");
    }
}

/// `examples/criterion_events.rs`'s benchmark of an exact tracepoint, run twice with
/// criterion's plots on: each `getppid` call enters `syscalls:sys_enter_getppid` once, so every
/// sample is 1 per iteration, and the second run compares with the first (criterion's Welch
/// t-test and its plot, which panicked on such a count in criterion 0.8.2 before the
/// measurement nudged its samples). Few samples and resamples keep it under a second a run.
/// Oracle: the kernel's tracepoint, entered once per `getppid` system call (as `perf stat -e
/// syscalls:sys_enter_getppid` counts it), and criterion 0.8's own report: "No change" and its
/// t-test plot written.
#[test]
fn an_exact_tracepoint_is_benchmarked_twice_with_plots_on() {
    // The example counts a tracepoint, which needs tracefs: the library mounts nothing unasked.
    let _ = counterhal_conformance::fixtures::tracefs_mounted();
    let home = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-criterion-plots-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    let run = || {
        let out = Command::new(example("criterion_events"))
            .args([
                "--bench",
                "--warm-up-time",
                "0.05",
                "--measurement-time",
                "0.1",
            ])
            .args(["--sample-size", "10", "--nresamples", "100", "getppid"])
            .env("CRITERION_HOME", &home)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let errors = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{text}{errors}");
        (text, errors)
    };
    let (first, errors) = run();
    if errors.contains("syscalls:sys_enter_getppid: not measured") {
        skip!(
            Need::Privilege,
            "the getppid tracepoint does not count here: {errors}"
        );
    }
    let (second, errors) = run();
    let per_call = |text: &str| -> Vec<f64> {
        let line = text
            .lines()
            .find(|l| l.contains("time:"))
            .unwrap_or_else(|| panic!("no time line: {text}"));
        line.split(['[', ']', ' '])
            .filter_map(|w| w.parse().ok())
            .collect()
    };
    for text in [&first, &second] {
        assert_eq!(per_call(text), [1.0, 1.0, 1.0], "{text}");
    }
    assert!(
        second.contains("No change in performance detected."),
        "{second}{errors}"
    );
    let t_test = home.join("getppid (syscalls_sys_enter_getppid)/report/change/t-test.svg");
    let plotted = std::fs::metadata(&t_test).is_ok_and(|m| m.len() > 0);
    let _ = std::fs::remove_dir_all(&home);
    assert!(plotted, "{} not drawn: {second}{errors}", t_test.display());
}

/// The Rust blocks of the README, each as it is printed (the info string's first word `rust`).
fn readme_rust_blocks() -> Vec<String> {
    let readme = include_str!("../README.md");
    let mut blocks = Vec::new();
    let mut block: Option<String> = None;
    for line in readme.lines() {
        match (&mut block, line.trim_start().strip_prefix("```")) {
            (None, Some(info)) if info.split(',').next() == Some("rust") => {
                block = Some(String::new());
            }
            (Some(text), Some(_)) => {
                blocks.push(std::mem::take(text));
                block = None;
            }
            (Some(text), None) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// Issue 55, item 18: the README's Rust example compiles as printed when pasted into a
/// program: no line rustdoc hides (its doctest, `ReadmeExamples` in src/lib.rs, then compiles
/// what the reader sees) and its own `fn main`; and the install steps are whole: `cargo
/// install` takes the tested versions of Cargo.lock, and the C API's install says `ldconfig`.
/// Oracle: rustdoc's documentation tests (a line starting `# ` is compiled but not shown;
/// without `fn main` the code is wrapped in one), `cargo install --help` (without `--locked`
/// it ignores the lock file) and ld.so(8) (a library in a new directory is found once
/// `ldconfig` has cached it, or through `LD_LIBRARY_PATH`).
#[test]
fn the_readme_example_compiles_as_printed_and_the_installs_are_whole() {
    let blocks = readme_rust_blocks();
    assert!(!blocks.is_empty(), "no Rust block in README.md");
    for block in &blocks {
        let hidden: Vec<&str> = block
            .lines()
            .filter(|l| l.trim_start() == "#" || l.trim_start().starts_with("# "))
            .collect();
        assert!(
            hidden.is_empty(),
            "lines rustdoc hides: {hidden:?}\n{block}"
        );
        assert!(block.contains("fn main()"), "no fn main:\n{block}");
    }
    let readme = include_str!("../README.md");
    let installs: Vec<&str> = readme
        .lines()
        .filter(|l| l.contains("cargo install"))
        .collect();
    assert!(!installs.is_empty());
    for line in installs {
        assert!(line.contains("cargo install --locked"), "{line}");
    }
    let capi = include_str!("../capi/README.md");
    let install = capi
        .split("\n\n")
        .find(|p| p.contains("scripts/install-capi"))
        .expect("capi/README.md's install paragraph");
    assert!(install.contains("`ldconfig`"), "{install}");
}

/// Oracle: the kernel's top-down events on Sapphire Rapids (arch/x86/events/intel/core.c:
/// `slots` is `event=0x00,umask=0x4`, `topdown-retiring` `umask=0x80`, `topdown-bad-spec`
/// `0x81`, `topdown-fe-bound` `0x82`, `topdown-be-bound` `0x83`, raw perf events), perf's
/// generalized `instructions` and `cycles` (hardware events 1 and 0) and the kernel's
/// page-fault accounting (at least one fault per fresh page touched). `examples/metrics.rs`
/// prints each metric's events encoded on the model it is given, without a PMU, and a page
/// fault rate counted here.
#[test]
fn the_metrics_example_encodes_topdown_on_a_model_and_counts_a_rate() {
    let out = Command::new(example("metrics"))
        .args(["--cpu-model", "spr"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let said = format!("{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{said}");
    for (event, config) in [
        ("instructions", "perf type=0 config=0x1 "),
        ("cycles", "perf type=0 config=0x0 "),
        ("TOPDOWN.SLOTS", "perf type=4 config=0x400 "),
        ("PERF_METRICS.RETIRING", "perf type=4 config=0x8000 "),
        ("PERF_METRICS.BAD_SPECULATION", "perf type=4 config=0x8100 "),
        ("PERF_METRICS.FRONTEND_BOUND", "perf type=4 config=0x8200 "),
        ("PERF_METRICS.BACKEND_BOUND", "perf type=4 config=0x8300 "),
    ] {
        let line = format!("    {event}: {config}");
        assert!(text.contains(&line), "no `{line}`:\n{said}");
    }
    for metric in [
        "Frontend_Bound",
        "Bad_Speculation",
        "Retiring",
        "Backend_Bound",
    ] {
        assert!(
            text.contains(&format!("  {metric} = ")),
            "{metric}:\n{said}"
        );
    }
    if !software_events_count_here() {
        skip!(Need::System, "no backend here counts software events");
    }
    let counted = text
        .lines()
        .find_map(|l| l.strip_prefix("counted: page_faults_per_second = "))
        .unwrap_or_else(|| panic!("no rate:\n{said}"));
    let faults: u64 = counted
        .split_once('(')
        .and_then(|(_, rest)| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no count in `{counted}`"));
    // The example touches 4096 fresh pages.
    assert!(faults >= 4096, "{counted}");
}
