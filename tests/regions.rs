//! Named regions: counts, calls and times accumulated from several threads, nested regions,
//! misuse refused with a reason, and the process-wide report written at exit.

use std::sync::Arc;

use counterhal::ErrorKind;
use counterhal::prelude::*;
use counterhal::region::{self, Regions};
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

fn backend() -> Option<Chosen> {
    open_default()
        .ok()
        .filter(|chosen| chosen.resolve("page-faults").is_ok())
}

/// Touches `pages` fresh pages (each a page fault): the memory is never freed, so no later
/// call reuses pages already faulted in.
fn touch_pages(pages: usize) {
    let memory = vec![0u8; pages * 4096].leak();
    for page in memory.chunks_mut(4096) {
        page[0] = 1;
    }
    std::hint::black_box(memory);
}

#[test]
fn regions_accumulate_calls_counts_and_time_over_threads() {
    let Some(chosen) = backend() else {
        skip!(Need::System, "no backend here counts software events");
    };
    let regions = Arc::new(Regions::new(
        chosen.into_backend(),
        &["page-faults", "task-clock", "no-such-event"],
    ));
    assert_eq!(regions.events().len(), 2);
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let regions = regions.clone();
            std::thread::spawn(move || {
                for _ in 0..3 {
                    regions.begin("outer").unwrap();
                    regions.begin("touch").unwrap();
                    touch_pages(256);
                    regions.end("touch").unwrap();
                    regions.end("outer").unwrap();
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    let report = regions.report();
    assert_eq!(report.events, ["page-faults", "task-clock"]);
    assert_eq!(report.left_out.len(), 1);
    assert_eq!(report.left_out[0].0, "no-such-event");
    let touch = &report.regions["touch"];
    let outer = &report.regions["outer"];
    assert_eq!((touch.calls, touch.threads), (6, 2));
    assert_eq!((outer.calls, outer.threads), (6, 2));
    // 6 calls of 256 fresh pages: about that many faults (transparent huge pages or fault
    // around could mean fewer).
    assert!(touch.estimates[0] >= 6 * 256 / 2, "{touch:?}");
    // The outer region holds the inner one.
    assert!(
        outer.estimates[0] >= touch.estimates[0],
        "{outer:?} {touch:?}"
    );
    assert!(outer.real_ns >= touch.real_ns && outer.cpu_ns >= touch.cpu_ns);
    assert!(touch.estimates[1] > 0 && touch.cpu_ns > 0);

    let table = report.table();
    assert!(
        table.lines().next().unwrap().contains("page-faults"),
        "{table}"
    );
    assert!(table.contains("# no-such-event not counted:"), "{table}");
    let json: serde_json::Value = serde_json::from_str(&report.json()).unwrap();
    assert_eq!(json["regions"][1]["name"], "touch");
    assert_eq!(json["regions"][1]["calls"], 6);
    assert_eq!(json["regions"][1]["counts"][0]["event"], "page-faults");
    assert_eq!(
        json["regions"][1]["counts"][0]["estimate"],
        touch.estimates[0]
    );
}

#[test]
fn misuse_is_refused_with_the_reason() {
    let Some(chosen) = backend() else {
        skip!(Need::System, "no backend here counts software events");
    };
    let regions = Regions::new(chosen.into_backend(), &["page-faults"]);
    let never = regions.end("never").unwrap_err();
    assert_eq!(never.kind(), ErrorKind::InvalidInput);
    assert!(never.message().contains("`never` was not begun"), "{never}");
    regions.begin("r").unwrap();
    let twice = regions.begin("r").unwrap_err();
    assert!(twice.message().contains("already begun"), "{twice}");
    // Begun on this thread, ended on another: regions are per thread.
    std::thread::scope(|scope| {
        scope.spawn(|| assert!(regions.end("r").is_err()));
    });
    regions.end("r").unwrap();
    assert_eq!(regions.report().regions["r"].calls, 1);
}

const CHILD: &str = "COUNTERHAL_REGIONS_CHILD";

/// Runs as the child of `the_process_wide_report_is_written_at_exit` (with `--ignored`).
#[test]
#[ignore = "runs only as the child of the_process_wide_report_is_written_at_exit"]
fn process_wide_regions_child() {
    assert!(std::env::var_os(CHILD).is_some(), "run by the parent test");
    for _ in 0..4 {
        region::begin("work").unwrap();
        touch_pages(64);
        region::end("work").unwrap();
    }
    // The test harness returns from main: the report is written by the exit hook.
}

#[test]
fn the_process_wide_report_is_written_at_exit() {
    if backend().is_none() {
        skip!(Need::System, "no backend here counts software events");
    }
    let out = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-regions-{}.json", std::process::id()));
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "regions::process_wide_regions_child",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .env(region::EVENTS_VAR, "page-faults,task-clock")
        .env(region::OUTPUT_VAR, &out)
        .env(region::FORMAT_VAR, "json")
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&out).expect("the report file was written at exit");
    std::fs::remove_file(&out).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        json["events"],
        serde_json::json!(["page-faults", "task-clock"])
    );
    assert_eq!(json["regions"][0]["name"], "work");
    assert_eq!(json["regions"][0]["calls"], 4);
    let faults = json["regions"][0]["counts"][0]["value"].as_u64().unwrap();
    assert!(faults >= 4 * 64 / 2, "{text}");
}
