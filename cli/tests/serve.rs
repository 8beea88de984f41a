//! `counterhal serve` against the clients an exporter on every host meets: slow (slowloris)
//! and too many at once. Each time the exporter must answer a scrape at once afterwards (and
//! during, for the slow ones), and its memory stay bounded. Also what it serves: both
//! formats, the routes, and that nothing changes state. (Malformed and oversized requests,
//! the methods refused and `HEAD` are serve's own tests: serve/tests/.)
//!
//! Oracle: RFC 9110/9112 for the statuses; `/proc/PID/status` (VmRSS) for the memory.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// A running `counterhal serve`, killed when dropped.
pub struct Exporter {
    child: Child,
    /// Where it serves.
    pub address: SocketAddr,
}

impl Exporter {
    /// Starts `counterhal serve --listen 127.0.0.1:0 ARGS` and waits for the address it
    /// prints.
    pub fn start(args: &[&str]) -> Exporter {
        let mut command = Command::new(bin());
        command
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args);
        Exporter::spawn(command)
    }

    /// Starts `command` (`counterhal serve --listen 127.0.0.1:0 ...`, perhaps under a tool
    /// that runs it) and waits for the address it prints.
    pub fn spawn(mut command: Command) -> Exporter {
        let mut child = command
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("start counterhal serve");
        let address = served_at(&mut child).unwrap_or_else(|said| {
            child.kill().ok();
            panic!("counterhal serve did not say where it serves: {said:?}")
        });
        Exporter { child, address }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends it `signal` (as `kill` names it: `-TERM`) and waits at most `within` for it to
    /// end; whether it ended.
    pub fn end(&mut self, signal: &str, within: Duration) -> bool {
        counterhal_conformance::fixtures::send_signal(self.child.id() as i32, signal)
            .unwrap_or_else(|e| panic!("kill {signal}: {e}"));
        let waited = Instant::now();
        while waited.elapsed() < within {
            if self.child.try_wait().ok().flatten().is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Its resident memory, in KiB.
    pub fn resident_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .expect("VmRSS")
    }

    /// Its threads now.
    pub fn threads(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/task", self.child.id()))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

/// Where `child` (serve, started with its standard error piped, perhaps under another
/// program) serves, read from the first line of its standard error; or that line. The rest of
/// standard error drains on a thread, so the exporter never blocks on it.
pub fn served_at(child: &mut Child) -> Result<SocketAddr, String> {
    let mut stderr = child.stderr.take().expect("its standard error");
    let mut said = Vec::new();
    let mut byte = [0u8; 1];
    while !said.ends_with(b"\n") && stderr.read(&mut byte).is_ok_and(|n| n == 1) {
        said.push(byte[0]);
    }
    let line = String::from_utf8_lossy(&said).to_string();
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    line.split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|a| a.parse().ok())
        .ok_or(line)
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

pub use crate::common::served::{exchange, get, get_within};

/// A scrape, which must succeed within `within`.
fn scrape_within(exporter: &Exporter, within: Duration) -> String {
    let start = Instant::now();
    let (status, body) = get(exporter.address, "/metrics", None);
    let took = start.elapsed();
    assert_eq!(status, Some(200), "{body}");
    assert!(took < within, "a scrape took {took:?}");
    assert!(body.contains("counterhal_event_seconds_total{event=\"task-clock\""));
    body
}

/// The exporter's threads once at most `bound`, or after 3 s: an evicted connection's
/// thread ends once it is scheduled after its socket is shut down (on a loaded machine,
/// some hundreds of milliseconds), so the table's bound holds with a moment's lag.
fn settled_threads(exporter: &Exporter, bound: usize) -> usize {
    let waited = Instant::now();
    while exporter.threads() > bound && waited.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(50));
    }
    exporter.threads()
}

#[test]
fn both_formats_are_served_by_the_accept_header_and_nothing_changes_state() {
    serve_or_skip!();
    let exporter = Exporter::start(&["-e", "task-clock,page-faults"]);
    let (status, text) = get(exporter.address, "/metrics", None);
    assert_eq!(status, Some(200));
    assert!(
        text.contains("# TYPE counterhal_event_seconds_total counter"),
        "{text}"
    );
    assert!(!text.contains("# EOF"));
    let (_, open) = get(
        exporter.address,
        "/metrics",
        Some("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"),
    );
    assert!(
        open.contains("# TYPE counterhal_event_seconds counter"),
        "{open}"
    );
    assert!(
        open.contains("# UNIT counterhal_event_seconds seconds"),
        "{open}"
    );
    assert!(open.ends_with("# EOF\n"), "{open}");
    let (status, page) = get(exporter.address, "/", None);
    assert_eq!(status, Some(200));
    assert!(page.contains("task-clock"), "{page}");
    assert_eq!(get(exporter.address, "/nothing", None).0, Some(404));
    // What the layer refuses before the scrape (the methods that would change state, 405)
    // is serve's own test (serve/tests/layer.rs); here, that the command serves through it.
    let request = b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(exchange(exporter.address, request).0, Some(405));
}

/// Slowloris: connections that send their head a byte at a time, more than the bound, hold
/// no scrape up (each new connection evicts the one waiting longest), and are closed at the
/// header timeout; the exporter's threads and memory stay bounded.
#[test]
fn slow_clients_neither_stall_scrapes_nor_grow_memory() {
    serve_or_skip!();
    let exporter = Exporter::start(&[
        "-e",
        "task-clock",
        "--max-connections",
        "8",
        "--header-timeout",
        "1",
    ]);
    scrape_within(&exporter, Duration::from_secs(2));
    let before = exporter.resident_kib();
    let mut slow: Vec<TcpStream> = (0..40)
        .filter_map(|_| TcpStream::connect(exporter.address).ok())
        .collect();
    for round in 0..5 {
        for stream in &mut slow {
            stream.write_all(b"G").ok();
        }
        // A scrape gets through while they trickle.
        scrape_within(&exporter, Duration::from_secs(1));
        let threads = settled_threads(&exporter, 1 + 8);
        assert!(threads <= 1 + 8, "round {round}: {threads} threads");
        std::thread::sleep(Duration::from_millis(150));
    }
    // Past the header timeout, every slow one has been closed.
    std::thread::sleep(Duration::from_millis(1200));
    for stream in &mut slow {
        stream.set_read_timeout(Some(Duration::from_secs(2))).ok();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).ok();
        let text = String::from_utf8_lossy(&answer);
        assert!(
            answer.is_empty() || text.starts_with("HTTP/1.1 408"),
            "a slow client got {text}"
        );
    }
    let body = scrape_within(&exporter, Duration::from_secs(1));
    assert!(!body.contains("{reason=\"evicted\"} 0"), "{body}");
    let after = exporter.resident_kib();
    eprintln!("resident memory: {before} KiB before the clients, {after} KiB after");
    assert!(
        after < before + 8 * 1024,
        "resident memory {before} KiB -> {after} KiB"
    );
}

/// Many connections at once, idle or answered: beyond the bound they are evicted or
/// refused, a scrape still answers, memory stays bounded.
#[test]
fn many_connections_are_bounded_and_scrapes_still_answer() {
    serve_or_skip!();
    let exporter = Exporter::start(&["-e", "task-clock", "--max-connections", "16"]);
    scrape_within(&exporter, Duration::from_secs(2));
    let before = exporter.resident_kib();
    for _ in 0..3 {
        let idle: Vec<TcpStream> = (0..300)
            .filter_map(|_| TcpStream::connect(exporter.address).ok())
            .collect();
        // Were the idle connections to hold the scrape up, it would wait for the 5 s header
        // timeout; 3 s leaves a loaded machine (two cores, the aarch64 lab beside) its
        // moments without hiding that.
        scrape_within(&exporter, Duration::from_secs(3));
        let threads = settled_threads(&exporter, 1 + 16);
        assert!(threads <= 1 + 16, "{threads} threads");
        drop(idle);
        // Scrapes side by side.
        let scrapers: Vec<_> = (0..8)
            .map(|_| {
                let address = exporter.address;
                std::thread::spawn(move || get(address, "/metrics", None).0)
            })
            .collect();
        for scraper in scrapers {
            assert_eq!(scraper.join().unwrap(), Some(200));
        }
    }
    let after = exporter.resident_kib();
    eprintln!("resident memory: {before} KiB before the clients, {after} KiB after");
    assert!(
        after < before + 8 * 1024,
        "resident memory {before} KiB -> {after} KiB"
    );
}

#[test]
fn bad_options_are_refused_with_the_usage_line() {
    for (args, says) in [
        (vec!["--listen", "nowhere"], "missing port in address"),
        (
            vec!["--max-connections", "0"],
            "a whole number from 1 to 1024",
        ),
        (vec!["--header-timeout", "0"], "outside 0.01 to 300 seconds"),
        (vec!["--cgroups", "(a"], "--cgroups pattern"),
        (vec!["-e", "no-such-event-here"], "no-such-event-here"),
    ] {
        let mut all = vec!["serve"];
        all.extend(&args);
        let out = counterhal(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

/// One list of events for a fleet: an event whose PMU this host lacks (no `nosuchpmu` on any
/// machine; `power` without RAPL) is reported by `counterhal_event_open_failed`, and the
/// rest are served; a misspelt name is still bad input (exit 2).
#[test]
fn events_of_pmus_a_host_lacks_are_reported_not_fatal() {
    serve_or_skip!();
    let exporter = Exporter::start(&["-e", "task-clock,nosuchpmu/event=1/"]);
    let (status, text) = get(exporter.address, "/metrics", None);
    assert_eq!(status, Some(200), "{text}");
    assert!(
        text.contains(
            "counterhal_event_open_failed{event=\"nosuchpmu/event=1/\",kind=\"not_found\""
        ),
        "{text}"
    );
    assert!(
        text.contains("counterhal_event_seconds_total{event=\"task-clock\""),
        "{text}"
    );
    let out = counterhal(&["serve", "-e", "task-clok", "--listen", "127.0.0.1:0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("did you mean: task-clock"),
        "{}",
        stderr(&out)
    );
}
