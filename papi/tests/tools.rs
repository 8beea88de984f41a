//! PAPI 7.0's own utilities (Debian's papi-tools, linked with libpapi.so.7.0) run unchanged on
//! our library through LD_LIBRARY_PATH; each test reads what they print.

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::path::Path;
use std::time::Instant;

fn tool(name: &str) -> Option<&'static Path> {
    let path: &'static Path = Box::leak(Path::new("/usr/bin").join(name).into_boxed_path());
    path.is_file().then_some(path)
}

fn text(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `papi_avail` (oracle: PAPI 7.0's utility itself, and its 108 presets): it loads ours, says
/// PAPI 7.0.0.0, lists all 108 presets with their codes `0x80000000 | index`, and its count of
/// available presets is the number of rows it marks `Yes`.
#[test]
fn papi_avail_lists_every_preset() {
    let Some(papi_avail) = tool("papi_avail") else {
        skip!(
            Need::Tools,
            "papi_avail is not installed (apt-get install papi-tools)"
        );
    };
    let out = crate::common::run(papi_avail, &[], true);
    let text = text(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("PAPI version             : 7.0.0.0"),
        "{text}"
    );
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("PAPI_")).collect();
    assert_eq!(rows.len(), 108, "{text}");
    assert!(
        rows[0].starts_with("PAPI_L1_DCM  0x80000000"),
        "{}",
        rows[0]
    );
    assert!(
        rows[107].starts_with("PAPI_REF_CYC 0x8000006b"),
        "{}",
        rows[107]
    );
    let yes = rows
        .iter()
        .filter(|r| r.split_whitespace().nth(2) == Some("Yes"))
        .count();
    assert!(
        text.contains(&format!("Of 108 possible events, {yes} are available")),
        "{text}"
    );
}

/// `papi_native_avail` lists component 0 as `perf_event` on Linux with the software events
/// under libpfm4's `perf::` names (the names Debian's PAPI lists here too), and its total is the
/// number of events it printed.
#[test]
fn papi_native_avail_lists_the_software_events() {
    let Some(tool) = tool("papi_native_avail") else {
        skip!(
            Need::Tools,
            "papi_native_avail is not installed (apt-get install papi-tools)"
        );
    };
    let out = crate::common::run(tool, &[], true);
    let text = text(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("Native Events in Component: perf_event"),
        "{text}"
    );
    let events = text
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("|  "))
        .count();
    assert!(text.contains("| perf::TASK-CLOCK "), "{text}");
    assert!(text.contains("| perf::PAGE-FAULTS "), "{text}");
    assert!(
        text.contains(&format!("Total events reported: {events}")),
        "{events} events listed:\n{text}"
    );
}

/// `papi_command_line perf::TASK-CLOCK perf::PAGE-FAULTS` adds both and counts them: task
/// clock in nanoseconds, more than zero and no more than the command's wall time (the clock
/// the kernel counts it by), and page faults more than zero (the tool touches fresh memory).
#[test]
fn papi_command_line_counts_software_events() {
    let Some(tool) = tool("papi_command_line") else {
        skip!(
            Need::Tools,
            "papi_command_line is not installed (apt-get install papi-tools)"
        );
    };
    let started = Instant::now();
    let out = crate::common::run(tool, &["perf::TASK-CLOCK", "perf::PAGE-FAULTS"], true);
    let wall = started.elapsed().as_nanos() as u64;
    let text = text(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("Successfully added: perf::TASK-CLOCK"),
        "{text}"
    );
    assert!(
        text.contains("Successfully added: perf::PAGE-FAULTS"),
        "{text}"
    );
    let value = |name: &str| -> u64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{name} :")))
            .unwrap_or_else(|| panic!("no count for {name}:\n{text}"));
        line.rsplit(" : ").next().unwrap().trim().parse().unwrap()
    };
    let clock = value("perf::TASK-CLOCK");
    assert!(
        clock > 0 && clock <= wall,
        "task clock {clock} ns in {wall} ns"
    );
    assert!(value("perf::PAGE-FAULTS") > 0, "{text}");
}

/// `papi_multiplex_cost` runs its rounds on ours (oracle: PAPI 7.0's utility itself, which
/// exits at the first call that fails): between rounds it cleans its two sets up, assigns
/// them to component 0 again and multiplexes them again, one with the interval
/// `PAPI_DEF_ITIMER` gives; each of its five benchmarks writes a row for 1 and 2 events.
#[test]
fn papi_multiplex_cost_runs_its_rounds() {
    let Some(tool) = tool("papi_multiplex_cost") else {
        skip!(
            Need::Tools,
            "papi_multiplex_cost is not installed (apt-get install papi-tools)"
        );
    };
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-papi-mpx-cost-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = std::process::Command::new(tool)
        .args(["-m", "1", "-x", "3", "-t", "100"])
        .current_dir(&dir)
        .env("LD_LIBRARY_PATH", crate::common::library_dir())
        .output()
        .expect("papi_multiplex_cost runs");
    let text = text(&out);
    assert!(out.status.success(), "{text}");
    for file in ["startstop", "read", "read_ts", "accum", "reset"] {
        let path = dir.join(format!("papi_{file}.dat"));
        let data = std::fs::read_to_string(&path).unwrap_or_default();
        let rows: Vec<&str> = data
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split_whitespace().next().unwrap_or(""))
            .collect();
        assert_eq!(rows, ["1", "2"], "{}:\n{data}\n{text}", path.display());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
