//! `counterhal serve --records`: a departed cgroup's record in the journal, served by
//! `/records` and printed by `counterhal jobs`; a full disk counted, serving on.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::serve::get;
use counterhal_conformance::fixtures::TestCgroup;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The value of the family `name` without labels in the scrape `body`.
fn value(body: &str, name: &str) -> Option<f64> {
    let prefix = format!("{name} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
}

/// A folder of this test's, emptied first.
fn folder(what: &str) -> PathBuf {
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-records-{what}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Scrapes `address` until `ready` says the body is what is awaited (10 s at most).
fn scrape_until(address: std::net::SocketAddr, ready: impl Fn(&str) -> bool) -> String {
    let waited = Instant::now();
    loop {
        let (status, body) = get(address, "/metrics", None);
        assert_eq!(status, Some(200), "{body}");
        if ready(&body) || waited.elapsed() > Duration::from_secs(10) {
            return body;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Three cgroups whose names hold a double quote, a backslash and a space depart (removed
/// after a work ran in the first): the journal holds three JSON lines, one per cgroup, its
/// name as the series' `cgroup` label writes it; the work's record counts its own page faults
/// within 1% under and 10% over (the shell that moved itself there, then its exec); `/records`
/// answers the last one for `last=1`, none for a job it never saw, 400 for a key it does not
/// know; `counterhal jobs` prints the work's as stat prints a run.
///
/// Oracle: the kernel's count of the work's own page faults (`ru_minflt`), which it prints;
/// RFC 8259's strings, as serde_json reads them back.
#[test]
fn departed_cgroups_leave_records_served_by_query() {
    let _alone = crate::common::bpf_alone();
    let root = crate::unified_or_skip!();
    let Some(parent) = TestCgroup::new(&root, "records") else {
        skip!(
            Need::Privilege,
            "cannot make a cgroup below {}",
            root.display()
        );
    };
    let names = ["q\"uote", "back\\slash", "sp ace"];
    for name in names {
        std::fs::create_dir(parent.path.join(name)).unwrap();
    }
    let dir = folder("query");
    let work = compile_c(
        &dir,
        "work",
        include_str!("data/container_work.c"),
        &["-O2"],
    )
    .expect("the work builds");
    let journal = dir.join("journal");
    let journal_arg = journal.to_string_lossy().into_owned();
    let pattern = format!("^{}/", parent.name);
    let served = crate::bpf_or_skip!([
        "-e",
        "page-faults",
        "--cgroups",
        &pattern,
        "--records",
        &journal_arg
    ]);
    scrape_until(served.address, |body| {
        value(body, "counterhal_cgroups_followed") == Some(3.0)
    });
    let out = Command::new("sh")
        .args([
            "-c",
            "echo $$ > \"$1/cgroup.procs\" && exec \"$2\" 20000 0 0",
            "sh",
        ])
        .arg(parent.path.join(names[0]))
        .arg(&work)
        .output()
        .expect("sh runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let own: u64 = stdout(&out).trim().parse().expect("the work's page faults");
    for name in names {
        std::fs::remove_dir(parent.path.join(name)).unwrap();
    }
    let body = scrape_until(served.address, |body| {
        value(body, "counterhal_records_written_total") == Some(3.0)
    });
    assert_eq!(
        value(&body, "counterhal_records_written_total"),
        Some(3.0),
        "{body}"
    );
    assert_eq!(value(&body, "counterhal_records_errors_total"), Some(0.0));
    let text = std::fs::read_to_string(journal.join("journal")).unwrap();
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let mut cgroups: Vec<&str> = records
        .iter()
        .map(|r| r["cgroup"].as_str().unwrap())
        .collect();
    cgroups.sort_unstable();
    let mut expected: Vec<String> = names
        .iter()
        .map(|n| format!("/{}/{n}", parent.name))
        .collect();
    expected.sort_unstable();
    assert_eq!(cgroups, expected, "{text}");
    let worked = records
        .iter()
        .find(|r| r["cgroup"].as_str().unwrap().ends_with(names[0]))
        .unwrap();
    let faults = worked["events"][0]["value"].as_u64().unwrap();
    eprintln!("the work's own page faults {own}, its record's {faults}");
    assert!(
        faults as f64 >= 0.99 * own as f64 && (faults as f64) < own as f64 * 1.1,
        "the record counted {faults}, the work {own}: {worked}"
    );
    let (status, last) = get(served.address, "/records?last=1", None);
    assert_eq!(status, Some(200), "{last}");
    assert_eq!(last, text.lines().last().unwrap().to_string() + "\n");
    let (status, none) = get(served.address, "/records?slurm_job=1", None);
    assert_eq!((status, none.as_str()), (Some(200), ""));
    let (status, bad) = get(served.address, "/records?job=1", None);
    assert_eq!(status, Some(400), "{bad}");
    assert!(bad.contains("slurm_job"), "{bad}");
    // Printed as stat prints a run, the cgroup named as it is.
    let printed = counterhal(&["jobs", "--last", "3", &journal_arg]);
    assert!(printed.status.success(), "{}", stderr(&printed));
    let table = stdout(&printed);
    let heading = format!(
        "Performance counter stats for 'cgroup /{}/{} on ",
        parent.name, names[0]
    );
    assert!(table.contains(&heading), "{table}");
    assert!(
        table.lines().any(|l| l
            .split_whitespace()
            .take(2)
            .eq([faults.to_string().as_str(), "page-faults"])),
        "{table}"
    );
    drop(parent);
    std::fs::remove_dir_all(&dir).ok();
}

/// A journal on a full disk: serve starts, a departed cgroup's record is counted in
/// `counterhal_records_errors_total` and said once in the log, and scrapes are answered.
///
/// Oracle: the kernel's /dev/full as the journal's file, whose every write fails with ENOSPC
/// (drivers/char/mem.c, `write_full`).
#[test]
fn a_full_disk_is_an_error_counted_and_serving_goes_on() {
    let _alone = crate::common::bpf_alone();
    let root = crate::unified_or_skip!();
    let Some(parent) = TestCgroup::new(&root, "records-full") else {
        skip!(
            Need::Privilege,
            "cannot make a cgroup below {}",
            root.display()
        );
    };
    let dir = folder("full");
    std::os::unix::fs::symlink("/dev/full", dir.join("journal")).unwrap();
    let dir_arg = dir.to_string_lossy().into_owned();
    for name in ["a", "b"] {
        std::fs::create_dir(parent.path.join(name)).unwrap();
    }
    let pattern = format!("^{}/", parent.name);
    let served = crate::bpf_or_skip!([
        "-e",
        "page-faults",
        "--cgroups",
        &pattern,
        "--records",
        &dir_arg
    ]);
    scrape_until(served.address, |body| {
        value(body, "counterhal_cgroups_followed") == Some(2.0)
    });
    for name in ["a", "b"] {
        std::fs::remove_dir(parent.path.join(name)).unwrap();
    }
    let body = scrape_until(served.address, |body| {
        value(body, "counterhal_records_errors_total") == Some(2.0)
    });
    assert_eq!(
        value(&body, "counterhal_records_errors_total"),
        Some(2.0),
        "{body}"
    );
    assert_eq!(value(&body, "counterhal_records_written_total"), Some(0.0));
    // The log line is written before the second error is counted; the test's reader of
    // serve's standard error may still be behind it (a busy machine): waited for, 10 s at most.
    let waited = std::time::Instant::now();
    let mut said = served.said();
    while !said.contains("a record could not be written") && waited.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        said = served.said();
    }
    assert_eq!(
        said.matches("a record could not be written").count(),
        1,
        "{said}"
    );
    assert!(said.contains("No space left on device"), "{said}");
    assert!(Path::new("/dev/full").exists());
    drop(parent);
    std::fs::remove_dir_all(&dir).ok();
}

/// Without `--records`, `/records` answers 404, saying why.
#[test]
fn records_are_not_found_without_records() {
    serve_or_skip!();
    let exporter = crate::serve::Exporter::start(&["-e", "task-clock"]);
    let (status, body) = get(exporter.address, "/records?slurm_job=1", None);
    assert_eq!(status, Some(404), "{body}");
    assert!(body.contains("--records"), "{body}");
}
