//! What a scrape costs `counterhal serve`, held where a test can hold it: one `read()` per
//! group of counters (oracle: strace, which sees the system calls), no allocation per counter
//! (oracle: valgrind's memcheck, which counts every allocation), and resident memory flat
//! over thousands of scrapes (oracle: `/proc/PID/status`). The figures beside node_exporter's
//! are measured by `benches/serve_cost.rs` (docs/performance.md).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::serve::{Exporter, get_within};
use counterhal_conformance::fixtures::TestCgroup;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// Two software events, and eight (node_exporter's software profilers but emulation-faults).
const TWO: &str = "task-clock,page-faults";
const EIGHT: &str = "cpu-clock,task-clock,page-faults,context-switches,cpu-migrations,\
minor-faults,major-faults,alignment-faults";

/// Whether `tool --version` runs.
fn installed(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// How long a scrape is waited for. These exporters run under strace or memcheck, which slow
/// them 10 to 50 times: beside two builds (load 15-25), memcheck's first scrape took over 20 s
/// (0.9 s at load 16 alone), past the 20 s other tests wait.
const PATIENCE: Duration = Duration::from_secs(120);

/// The exporter's header timeout raised to [`PATIENCE`], so that a request head that a
/// slowed exporter reads late is not refused (its write timeout runs only once a scrape is
/// rendered, so a slow scrape is answered).
const PATIENT: [&str; 2] = ["--header-timeout", "120"];

/// A scrape, which must be answered within [`PATIENCE`].
fn scrape(exporter: &Exporter) -> String {
    let started = Instant::now();
    let (status, body) = get_within(exporter.address, "/metrics", None, PATIENCE);
    let waited = started.elapsed();
    assert_eq!(status, Some(200), "no answer in {waited:?}: {body}");
    body
}

/// The counters a scrape shows: one value series each (a count, seconds or joules).
fn counters_in(body: &str) -> usize {
    body.lines()
        .filter(|l| {
            [
                "counterhal_event_total{",
                "counterhal_event_seconds_total{",
                "counterhal_event_joules_total{",
            ]
            .iter()
            .any(|family| l.starts_with(family))
        })
        .count()
}

/// The exporter's perf event descriptors.
fn perf_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("its descriptors")
        .flatten()
        .filter(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|target| target.to_string_lossy() == "anon_inode:[perf_event]")
        })
        .count()
}

/// The reads of perf event descriptors in an `strace -f -y` log, by call and descriptor: a
/// line `TID read(7<anon_inode:[perf_event]>, ...` counts once for (`read`, 7).
fn perf_reads(log: &str) -> BTreeMap<(String, u32), usize> {
    let mut reads = BTreeMap::new();
    for line in log.lines() {
        let Some(call) = line.split_whitespace().nth(1) else {
            continue;
        };
        let Some((name, rest)) = call.split_once('(') else {
            continue;
        };
        let Some((fd, path)) = rest.split_once('<') else {
            continue;
        };
        if path.starts_with("anon_inode:[perf_event]>") {
            let fd = fd.parse().expect("a descriptor number");
            *reads.entry((name.to_string(), fd)).or_insert(0) += 1;
        }
    }
    reads
}

/// The reads of perf event descriptors the exporter makes over `scrapes` scrapes, as strace
/// sees them (by call and descriptor).
fn traced_reads(exporter: &Exporter, scrapes: usize) -> BTreeMap<(String, u32), usize> {
    perf_reads(&traced(
        exporter,
        scrapes,
        "trace=read,readv,pread64,preadv,preadv2",
    ))
}

/// strace's log (`-f -yy`: descriptors with what they are) of the system calls `calls` names
/// that the exporter makes over `scrapes` scrapes.
fn traced(exporter: &Exporter, scrapes: usize, calls: &str) -> String {
    let log = counterhal_conformance::fixtures::temp_dir().join(format!(
        "counterhal-serve-calls-{}-{}",
        std::process::id(),
        exporter.pid()
    ));
    let mut strace = Command::new("strace")
        .args(["-f", "-yy", "-e", calls, "-o"])
        .arg(&log)
        .args(["-p", &exporter.pid().to_string()])
        .stderr(Stdio::piped())
        .spawn()
        .expect("start strace");
    // strace says `Process N attached` once it traces the exporter's threads.
    let mut said = BufReader::new(strace.stderr.take().expect("strace's standard error"));
    let mut line = String::new();
    while said.read_line(&mut line).is_ok_and(|n| n > 0) && !line.contains("attached") {}
    assert!(line.contains("attached"), "strace did not attach: {line}");
    for _ in 0..scrapes {
        scrape(exporter);
    }
    counterhal_conformance::fixtures::send_signal(strace.id() as i32, "-INT")
        .expect("kill -INT strace");
    strace.wait().expect("strace ends");
    let text = std::fs::read_to_string(&log).expect("strace's log");
    std::fs::remove_file(&log).ok();
    text
}

/// Skips the running test where strace is missing or may not trace (ptrace refused).
macro_rules! strace_or_skip {
    () => {
        if !installed("strace") {
            skip!(
                Need::Tools,
                "strace is not installed (apt-get install strace)"
            );
        }
        let traced = Command::new("strace")
            .args(["-e", "trace=none", "-o", "/dev/null", "true"])
            .status();
        if !traced.is_ok_and(|s| s.success()) {
            skip!(Need::Privilege, "strace may not trace here");
        }
    };
}

/// Asserts that `reads` read each of `groups` descriptors `scrapes` times, with `read()`.
fn assert_one_read_per_group(
    reads: &BTreeMap<(String, u32), usize>,
    groups: usize,
    scrapes: usize,
) {
    assert_eq!(
        reads.len(),
        groups,
        "every group read, with read() only: {reads:?}"
    );
    for ((call, fd), times) in reads {
        assert_eq!(call, "read", "descriptor {fd}");
        assert_eq!(*times, scrapes, "descriptor {fd}: once per scrape");
    }
}

/// The target's "one read system call per group": serve opens each counter as a group of its
/// own (as `perf stat` opens events not in braces), so a scrape reads each perf descriptor
/// once, with `read()`, and nothing else.
#[test]
fn a_scrape_reads_each_group_of_counters_once() {
    serve_or_skip!();
    strace_or_skip!();
    let mut args = vec!["-e", "task-clock,page-faults,context-switches"];
    args.extend(PATIENT);
    let exporter = Exporter::start(&args);
    let counters = counters_in(&scrape(&exporter));
    let groups = perf_descriptors(exporter.pid());
    assert!(counters >= 3, "{counters} counters");
    assert_eq!(
        groups, counters,
        "one descriptor, a group of its own, per counter"
    );
    assert_one_read_per_group(&traced_reads(&exporter, 5), groups, 5);
}

/// An answer the socket takes whole is written with one system call, its head and body
/// together: each write wakes the scraper, and each wake of a scraper on the exporter's CPU
/// sends the exporter back to the run queue, where a busy machine keeps it waiting (a 16 KiB
/// write at a time, 40 a scrape of 300 pods, made its slow scrapes).
///
/// Oracle: strace, which sees the system calls (`-yy`: which descriptors are TCP sockets).
#[test]
fn an_answer_is_written_with_one_system_call() {
    serve_or_skip!();
    strace_or_skip!();
    let mut args = vec!["-e", TWO];
    args.extend(PATIENT);
    let exporter = Exporter::start(&args);
    let size = scrape(&exporter).len();
    let log = traced(
        &exporter,
        5,
        "trace=write,writev,pwrite64,pwritev,pwritev2,send,sendto,sendmsg",
    );
    let writes: Vec<&str> = log.lines().filter(|l| l.contains("<TCP")).collect();
    assert_eq!(
        writes.len(),
        5,
        "one write of each {size}-byte answer: {writes:#?}"
    );
}

/// The same where a cgroup appears after the exporter started, counted in the perf-event
/// mode (its counters opened at a scrape, and read from then on with the others, once each
/// per scrape).
#[test]
fn a_cgroup_that_appears_is_read_once_per_scrape_with_the_rest() {
    serve_or_skip!();
    strace_or_skip!();
    let root = match counterhal::cgroups::root(&counterhal::system::System::host()) {
        Ok(root) => root,
        Err(e) => skip!(Need::System, "no cgroup mount to count in: {e}"),
    };
    let Some(parent) = TestCgroup::new(&root, "serve-reads") else {
        skip!(
            Need::Privilege,
            "cannot make a cgroup below {}",
            root.display()
        );
    };
    let pattern = format!("^{}/", parent.name);
    // Per CPU: a series per counter.
    let mut args = vec![
        "-e",
        "task-clock,page-faults",
        "--cgroups",
        &pattern,
        "--per-cpu",
        "--cgroup-mode",
        "perf-events",
    ];
    args.extend(PATIENT);
    let exporter = Exporter::start(&args);
    let before = counters_in(&scrape(&exporter));
    std::fs::create_dir(parent.path.join("new")).expect("make a cgroup");
    let body = scrape(&exporter);
    if !body.contains("counterhal_open_errors_total 0\n") {
        skip!(
            Need::System,
            "this kernel does not count by cgroup here: {body}"
        );
    }
    let counters = counters_in(&body);
    assert_eq!(
        counters,
        2 * before,
        "the new cgroup counted on every CPU: {body}"
    );
    let groups = perf_descriptors(exporter.pid());
    assert_eq!(
        groups, counters,
        "one descriptor, a group of its own, per counter"
    );
    assert_one_read_per_group(&traced_reads(&exporter, 5), groups, 5);
    drop(exporter);
    drop(parent);
}

/// The target's "nothing allocated per counter per scrape": memcheck's count of every
/// allocation at exit, for 10 and 60 scrapes, gives the allocations a scrape makes; with 8
/// events they are as many as with 2 (the scrape reads into readings kept between scrapes
/// and writes into one buffer). An allocation per counter would add one for each of the 6
/// more events on every CPU.
#[test]
fn a_scrape_allocates_as_much_for_eight_events_as_for_two() {
    serve_or_skip!();
    if !installed("valgrind") {
        skip!(
            Need::Tools,
            "valgrind is not installed (apt-get install valgrind)"
        );
    }
    let (few, many) = (10, 60);
    let per_scrape = |events: &str| {
        let (short, long) = (allocations(events, few), allocations(events, many));
        (long - short) as f64 / (many - few) as f64
    };
    let (two, eight) = (per_scrape(TWO), per_scrape(EIGHT));
    eprintln!("allocations per scrape: {two:.2} with 2 events, {eight:.2} with 8");
    assert!(
        two > 0.0,
        "a scrape's connection and thread allocate: {two}"
    );
    assert!(
        (eight - two).abs() < 1.0,
        "{two:.2} allocations per scrape with 2 events, {eight:.2} with 8"
    );
}

/// The allocations of `counterhal serve -e EVENTS` over `scrapes` scrapes and its start, as
/// memcheck counts them (`total heap usage: N allocs`) when SIGTERM ends it.
fn allocations(events: &str, scrapes: usize) -> u64 {
    let log = counterhal_conformance::fixtures::temp_dir().join(format!(
        "counterhal-serve-memcheck-{}-{scrapes}",
        std::process::id()
    ));
    let mut command = signalled("valgrind");
    command
        .arg("--tool=memcheck")
        .arg(format!("--log-file={}", log.display()))
        .arg(bin())
        .args(["serve", "--listen", "127.0.0.1:0", "-e", events])
        .args(PATIENT);
    let mut exporter = Exporter::spawn(command);
    for _ in 0..scrapes {
        scrape(&exporter);
    }
    assert!(
        exporter.end("-TERM", Duration::from_secs(60)),
        "valgrind still ran a minute after SIGTERM"
    );
    let text = std::fs::read_to_string(&log).expect("memcheck's log");
    std::fs::remove_file(&log).ok();
    text.lines()
        .find_map(|l| l.split("total heap usage: ").nth(1))
        .and_then(|rest| rest.split(" allocs").next())
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no heap summary in memcheck's log: {text}"))
}

/// Memory stays flat: 3,000 scrapes after 300 leave the resident set within 256 KiB of
/// where it was (`benches/serve_cost.rs -- flat` prints it over 100,000).
#[test]
fn resident_memory_stays_flat_over_thousands_of_scrapes() {
    serve_or_skip!();
    let exporter = Exporter::start(&["-e", EIGHT]);
    for _ in 0..300 {
        scrape(&exporter);
    }
    let warm = exporter.resident_kib();
    let started = Instant::now();
    for _ in 0..3_000 {
        scrape(&exporter);
    }
    let after = exporter.resident_kib();
    eprintln!(
        "resident memory: {warm} KiB after 300 scrapes, {after} KiB after 3,000 more ({:?})",
        started.elapsed()
    );
    assert!(
        after <= warm + 256,
        "resident memory grew from {warm} KiB to {after} KiB"
    );
}
