//! PAPI's high-level regions (tests/c/high_level.c) as PAPI 7.0's papi_hl.c has them: events
//! from `PAPI_EVENTS`, the report in `papi_hl_output` under `PAPI_OUTPUT_DIRECTORY`. Oracles:
//! Debian's PAPI 7.0 (the codes of calls that need no counter, run on both libraries) and
//! PAPI's own reader of its report format, Debian's `papi_hl_output_writer`, run on our
//! report.

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The program, built for one test (`tag`): the tests run at once.
fn program(tag: &str) -> PathBuf {
    crate::common::c_program("high_level", tag, Path::new("/usr/include"), true)
}

fn folder(tag: &str) -> PathBuf {
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-papi-hl-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the program on our library in `dir` with `env`; its standard output.
fn run_ours(program: &Path, args: &[&str], dir: &Path, env: &[(&str, &str)]) -> String {
    run_on(true, program, args, dir, env)
}

/// Runs the program on our library (`ours`) or on Debian's PAPI 7.0 in `dir` with `env`; its
/// standard output.
fn run_on(ours: bool, program: &Path, args: &[&str], dir: &Path, env: &[(&str, &str)]) -> String {
    let mut command = Command::new(program);
    if ours {
        command.env("LD_LIBRARY_PATH", crate::common::library_dir());
    }
    let out = command
        .args(args)
        .current_dir(dir)
        .env_remove("PAPI_EVENTS")
        .env_remove("PAPI_OUTPUT_DIRECTORY")
        .env_remove("PAPI_REPORT")
        .envs(env.iter().copied())
        .output()
        .expect("the program runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Oracle: Debian's PAPI 7.0. Ending, reading and stopping before any region answer the same
/// codes on both (`PAPI_EMISC`, `PAPI_EMISC`, `PAPI_ENOEVNT`).
#[test]
fn calls_before_any_region_answer_as_papi_7_0() {
    system_papi_or_skip!();
    let program = program("misuse");
    let theirs = crate::common::run(&program, &["misuse"], false);
    let ours = crate::common::run(&program, &["misuse"], true);
    let theirs = String::from_utf8_lossy(&theirs.stdout).into_owned();
    assert!(theirs.contains("stop before begin -7"), "{theirs}");
    assert_eq!(theirs, String::from_utf8_lossy(&ours.stdout));
}

/// Oracle: PAPI's papi_hl.c (its rule, read from PAPI 7.0's source): the end of a region not
/// begun answers `PAPI_EINVAL` and turns the interface off (`PAPI_EMISC` after), with no
/// report.
#[test]
fn an_unmatched_end_turns_the_interface_off() {
    system_papi_or_skip!();
    let program = program("mismatch");
    let dir = folder("mismatch");
    let out = run_ours(
        &program,
        &["mismatch"],
        &dir,
        &[("PAPI_EVENTS", "perf::TASK-CLOCK")],
    );
    if out.contains("begin a -") {
        skip!(
            Need::System,
            "perf's software events do not count here: {out}"
        );
    }
    assert_eq!(out, "begin a 0\nend b -1\nend a -14\nbegin c -14\n");
    assert!(
        !dir.join("papi_hl_output").exists(),
        "no report after an error"
    );
}

/// Oracle: PAPI's own reader, `papi_hl_output_writer`, reads our report: nested regions with
/// a read, a second thread's region, `PAPI_EVENTS` with `=instant`, the rank from
/// `SLURM_PROCID`, an older report folder moved aside with its time, and `PAPI_REPORT`.
#[test]
fn papis_reader_reads_our_report() {
    system_papi_or_skip!();
    let program = program("report");
    let dir = folder("report");
    let output = dir.join("out");
    let old = output.join("papi_hl_output");
    std::fs::create_dir_all(&old).unwrap();
    let touched = Command::new("touch")
        .args(["-d", "2020-01-02 03:04:05"])
        .arg(&old)
        .status()
        .expect("touch runs");
    assert!(touched.success());
    let out = run_ours(
        &program,
        &[],
        &dir,
        &[
            ("PAPI_EVENTS", "perf::TASK-CLOCK, perf::PAGE-FAULTS=instant"),
            ("PAPI_OUTPUT_DIRECTORY", output.to_str().unwrap()),
            ("SLURM_PROCID", "3"),
            ("PAPI_REPORT", "1"),
        ],
    );
    if out.contains("outer begin -") {
        skip!(
            Need::System,
            "perf's software events do not count here: {out}"
        );
    }
    for call in [
        "outer begin 0",
        "inner read 0",
        "inner end 0",
        "outer end 0",
        "thread end 0",
        "stop 0",
        "stop again -7",
    ] {
        assert!(out.contains(call), "{call}:\n{out}");
    }
    // PAPI_REPORT: the file on standard output.
    assert!(
        out.contains("PAPI-HL Output:\n{\n  \"papi_version\":\"7.0.0.0\""),
        "{out}"
    );
    let moved: Vec<String> = std::fs::read_dir(&output)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("papi_hl_output-2"))
        .collect();
    assert_eq!(moved.len(), 1, "the older folder moved aside");
    let report = output.join("papi_hl_output/rank_000003.json");
    let json = std::fs::read_to_string(&report).expect("rank 3's report");
    assert!(json.contains("\"perf::PAGE-FAULTS\":{\n      \"component\":\"perf_event\",\n      \"type\":\"instant\""), "{json}");
    assert!(
        json.contains("\"name\":\"inner\",\n          \"parent_region_id\":\"0\","),
        "{json}"
    );
    assert!(json.contains("\"region_value\":"), "{json}");

    let Ok(read) = Command::new("papi_hl_output_writer")
        .arg("--source")
        .arg(output.join("papi_hl_output"))
        .args(["--type", "detail", "--notation", "raw"])
        // It also writes papi.json where it runs.
        .current_dir(&dir)
        .output()
    else {
        skip!(
            Need::Tools,
            "PAPI's papi_hl_output_writer is not installed (apt-get install papi-tools)"
        );
    };
    let text = String::from_utf8_lossy(&read.stdout).into_owned();
    assert!(
        read.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&read.stderr)
    );
    for expected in [
        "\"3\": {",
        "\"name\": \"outer\"",
        "\"name\": \"inner\"",
        "\"read_1\"",
        "\"name\": \"thread\"",
        "perf::PAGE-FAULTS",
        "perf::TASK-CLOCK",
    ] {
        assert!(
            text.contains(expected),
            "{expected} in PAPI's reading:\n{text}"
        );
    }
}

/// The report's `event_definitions` block (each event's key, component and kind), from the
/// rank-0 report `PAPI_EVENTS=events` leaves in `dir` on our library (`ours`) or on Debian's
/// PAPI 7.0; `None` where the library wrote no report (its events counted nothing here).
fn definitions(ours: bool, program: &Path, dir: &Path, events: &str) -> Option<String> {
    let output = dir.join(if ours { "ours" } else { "theirs" });
    run_on(
        ours,
        program,
        &[],
        dir,
        &[
            ("PAPI_EVENTS", events),
            ("PAPI_OUTPUT_DIRECTORY", output.to_str().unwrap()),
            ("SLURM_PROCID", "0"),
        ],
    );
    let json = std::fs::read_to_string(output.join("papi_hl_output/rank_000000.json")).ok()?;
    let start = json.find("\"event_definitions\"")?;
    let end = start + json[start..].find("\"threads\"")?;
    Some(json[start..end].to_string())
}

/// Oracle: Debian's PAPI 7.0 running the same program with the same `PAPI_EVENTS`: a
/// qualified event keeps its qualifiers (`perf::TASK-CLOCK:u=1` is the event counted and the
/// report's key, not `perf::TASK-CLOCK:u`), a trailing `=instant` or `=delta` is the kind
/// and is taken off, and a name with any other `=` ending is no event (dropped).
#[test]
fn qualified_events_keep_their_names() {
    system_papi_or_skip!();
    let program = program("qualified");
    let dir = folder("qualified");
    // (PAPI 7.0 carries an event's kind over to the next event that names none: each event
    // here names its kind or follows one of the same kind.)
    let events = "perf::TASK-CLOCK:u=1,perf::CS:k=0,perf::MINOR-FAULTS=total,\
                  perf::CPU-CLOCK:u=0=delta,perf::PAGE-FAULTS=instant";
    let Some(theirs) = definitions(false, &program, &dir, events) else {
        skip!(
            Need::System,
            "Debian's PAPI wrote no report: perf's software events do not count there"
        );
    };
    let ours = definitions(true, &program, &dir, events).expect("our report");
    assert!(theirs.contains("\"perf::TASK-CLOCK:u=1\":{"), "{theirs}");
    // PAPI 7.0 reads a kind only where the first `=` starts it, so it drops
    // perf::CPU-CLOCK:u=0=delta, which ours counts; the other definitions are the same.
    let cpu_clock = "    \"perf::CPU-CLOCK:u=0\":{\n      \"component\":\"perf_event\",\n      \
                     \"type\":\"delta\"\n    },\n";
    assert!(ours.contains(cpu_clock), "ours:\n{ours}");
    assert_eq!(
        ours.replacen(cpu_clock, "", 1),
        theirs,
        "PAPI 7.0:\n{theirs}\nours:\n{ours}"
    );
}
