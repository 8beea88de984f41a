//! `counterhal serve` beside client_golang's promhttp handler, which node_exporter serves its
//! `/metrics` through: gzip negotiated as it negotiates it, and the `process_*` families of
//! its process collector, with the figures `/proc` gives. Each test body that compares runs
//! against node_exporter 1.5 (Debian 12's `prometheus-node-exporter`, client_golang 1.14) and
//! 1.11 (Debian sid's, in the current-releases lab: client_golang 1.2x). Prometheus 2.42 and
//! 3.5 ask every target for gzip, so `serve_prometheus.rs`'s scrapes read gzipped answers too.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::serve::Exporter;
use crate::serve_ops::{NodeExporter, free_port};
use counterhal_conformance::fixtures::prometheus::Release;
use counterhal_conformance::prometheus_tool_or_skip as tool_or_skip;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// `GET /metrics` with the extra header lines `headers` (each ending in CRLF): the answer's
/// head and its body as bytes (joined from its chunks where it came chunked, as newer Go
/// servers send a long answer).
fn scrape(address: SocketAddr, headers: &str) -> (String, Vec<u8>) {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(20))).ok();
    let request =
        format!("GET /metrics HTTP/1.1\r\nHost: test\r\nConnection: close\r\n{headers}\r\n");
    stream.write_all(request.as_bytes()).expect("send");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).ok();
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no head: {:?}", String::from_utf8_lossy(&answer)));
    let head = String::from_utf8_lossy(&answer[..end]).to_ascii_lowercase();
    let body = &answer[end + 4..];
    if !head.contains("\r\ntransfer-encoding: chunked") {
        return (head, body.to_vec());
    }
    let joined = crate::serve_prometheus::dechunked(body).expect("a chunked body");
    (head, joined)
}

/// node_exporter of `$release` with no collectors, once it answers; skips the test body
/// where it is not installed.
macro_rules! node_exporter_or_skip {
    ($release:expr) => {{
        let address = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let command = tool_or_skip!($release, "prometheus-node-exporter");
        let Some(mut node) = NodeExporter::spawn(command, &address.to_string()) else {
            skip!(
                Need::Tools,
                "node_exporter of {} did not start",
                $release.name()
            );
        };
        let waited = Instant::now();
        while TcpStream::connect(address).is_err() {
            assert!(
                waited.elapsed() < Duration::from_secs(10) && node.running_after(Duration::ZERO),
                "node_exporter did not start on {address}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        (node, address)
    }};
}

/// `bytes` decoded by GNU gzip (`gzip -dc`, which checks the member's CRC-32 and length).
fn gunzip(bytes: &[u8]) -> String {
    let mut gzip = Command::new("gzip")
        .arg("-dc")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run gzip");
    gzip.stdin
        .take()
        .unwrap()
        .write_all(bytes)
        .expect("feed gzip");
    let out = gzip.wait_with_output().expect("gzip ends");
    assert!(out.status.success(), "gzip -d: {}", stderr(&out));
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// A scrape's series without their values (the counts move between two scrapes).
fn series(body: &str) -> Vec<&str> {
    body.lines()
        .map(|line| match line.starts_with('#') {
            true => line,
            false => line.rsplit_once(' ').map_or(line, |(series, _)| series),
        })
        .collect()
}

/// `Accept-Encoding` gets `Content-Encoding: gzip` where node_exporter's promhttp gives it,
/// for the headers on which client_golang's versions agree (absent, gzip named, identity or
/// `*` alone); `gzip;q=0` is refused, as RFC 9110 and client_golang after 1.14 refuse it
/// (node_exporter 1.11 among them). What is gzipped decodes to the plain scrape's series.
///
/// Oracle: node_exporter 1.5 and 1.11 (client_golang's promhttp), given each header; GNU
/// gzip, which decodes the answer.
#[test]
fn gzip_is_negotiated_as_promhttp_negotiates_it_and_decodes_to_the_plain_scrape() {
    serve_or_skip!();
    let ours = Exporter::start(&["-e", "task-clock,page-faults"]);
    for release in Release::ALL {
        eprintln!("== node_exporter of {release:?}");
        gzip_is_negotiated_as_node_exporter_of(release, &ours);
    }
    let (head, body) = scrape(ours.address, "Accept-Encoding: gzip;q=0\r\n");
    assert!(!head.contains("\r\ncontent-encoding: gzip"), "{head}");
    assert!(String::from_utf8(body).is_ok_and(|b| b.contains("# HELP")));
}

/// The body of the test above for `release`'s node_exporter.
fn gzip_is_negotiated_as_node_exporter_of(release: Release, ours: &Exporter) {
    let (_node, theirs) = node_exporter_or_skip!(release);
    let gzipped = |head: &str| head.contains("\r\ncontent-encoding: gzip");
    let mut headers = vec![
        None,
        Some("gzip"),
        Some("deflate, gzip"),
        Some("gzip, deflate, br, zstd"),
        Some("gzip;q=0.5"),
        Some("identity"),
        Some("*"),
        Some("deflate"),
    ];
    // client_golang 1.14 (node_exporter 1.5) gives gzip for `gzip;q=0`, newer ones do not.
    if release == Release::Sid {
        headers.push(Some("gzip;q=0"));
    }
    for header in headers {
        let line = header.map_or(String::new(), |h| format!("Accept-Encoding: {h}\r\n"));
        let (their_head, _) = scrape(theirs, &line);
        let (our_head, body) = scrape(ours.address, &line);
        assert_eq!(
            gzipped(&our_head),
            gzipped(&their_head),
            "{header:?}: ours {our_head:?}, node_exporter's {their_head:?}"
        );
        assert!(
            !our_head.contains("\r\nvary:"),
            "promhttp sends no Vary: {our_head}"
        );
        if gzipped(&our_head) {
            let length = our_head
                .split("\r\ncontent-length: ")
                .nth(1)
                .and_then(|rest| rest.split("\r\n").next()?.parse::<usize>().ok());
            assert_eq!(length, Some(body.len()), "{our_head}");
            let decoded = gunzip(&body);
            let (_, plain) = scrape(ours.address, "");
            let plain = String::from_utf8(plain).expect("UTF-8");
            assert_eq!(series(&decoded), series(&plain), "{header:?}");
        }
    }
}

/// Each `process_*` family: its `# HELP` text and `# TYPE`, by name, in a text-format scrape.
fn process_families(body: &str) -> Vec<(String, String)> {
    let mut families: Vec<(String, String)> = body
        .lines()
        .filter_map(|line| {
            let rest = line
                .strip_prefix("# HELP ")
                .or_else(|| line.strip_prefix("# TYPE "))?;
            rest.starts_with("process_").then(|| {
                let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
                (name.to_string(), format!("{} {text}", &line[..6]))
            })
        })
        .collect();
    families.sort();
    families
}

/// The value of the sample named `name` (no labels) in `body`.
fn value(body: &str, name: &str) -> f64 {
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {body}"))
}

/// The `process_*` families are those every Prometheus client library exports, as
/// node_exporter exports them: the same names, help and types in the text format; in
/// OpenMetrics the counter's family is named without `_total` and no family has a `# UNIT`
/// (client_golang's process collector gives none). Not the two that client_golang 1.20 added
/// (`process_network_receive_bytes_total`, `..._transmit_...`): they are
/// `/proc/PID/net/netstat`'s `IpExt` octets, which count the whole network namespace, not the
/// process (on the host's network, every process's bytes).
///
/// Oracle: the own `/metrics` of node_exporter 1.5 and of 1.11 (client_golang 1.14's process
/// collector, and 1.2x's); client_golang's OpenMetrics encoder (expfmt's
/// `MetricFamilyToOpenMetrics`) for the names.
#[test]
fn process_families_are_named_and_typed_as_node_exporter_exports_them() {
    serve_or_skip!();
    let ours = Exporter::start(&["-e", "task-clock"]);
    for release in Release::ALL {
        eprintln!("== node_exporter of {release:?}");
        process_families_as_node_exporter_of(release, &ours);
    }
}

/// The body of the test above for `release`'s node_exporter.
fn process_families_as_node_exporter_of(release: Release, ours: &Exporter) {
    let (_node, theirs) = node_exporter_or_skip!(release);
    let (_, their_body) = scrape(theirs, "");
    let their_body = String::from_utf8(their_body).expect("UTF-8");
    let mut expected = process_families(&their_body);
    let network = |(name, _): &(String, String)| name.starts_with("process_network_");
    let networks = expected.iter().filter(|f| network(f)).count();
    expected.retain(|f| !network(f));
    let networks_expected = match release {
        Release::Debian12 => 0,
        Release::Sid => 4,
    };
    assert_eq!(networks, networks_expected, "node_exporter's: {their_body}");
    assert_eq!(expected.len(), 14, "node_exporter's: {their_body}");
    let (_, body) = scrape(ours.address, "");
    let body = String::from_utf8(body).expect("UTF-8");
    assert_eq!(process_families(&body), expected, "{body}");
    let accept = "Accept: application/openmetrics-text; version=1.0.0\r\n";
    let (_, open) = scrape(ours.address, accept);
    let open = String::from_utf8(open).expect("UTF-8");
    assert!(!open.contains("# UNIT process_"), "{open}");
    for (name, line) in &expected {
        let Some(kind) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let family = match kind {
            "counter" => name.strip_suffix("_total").expect("a counter's _total"),
            _ => name,
        };
        let typed = format!("# TYPE {family} {kind}\n");
        assert!(open.contains(&typed), "{typed:?} in {open}");
        assert!(open.contains(&format!("\n{name} ")), "{name} in {open}");
    }
}

/// The `process_*` figures are this process's as `/proc` gives them: descriptors open (the
/// answering connection and the listing of `/proc/self/fd` beside those open between
/// scrapes), the limits of `/proc/PID/limits`, the start time from `/proc/stat`'s `btime`
/// and the process's `starttime`, CPU time between two readings of `/proc/PID/stat`, and
/// memory within a few MiB of `/proc/PID/status`.
///
/// Oracle: the kernel's `/proc` (proc(5)), read from outside the exporter.
#[test]
fn process_figures_are_those_proc_gives() {
    serve_or_skip!();
    let ours = Exporter::start(&["-e", "task-clock,page-faults"]);
    let proc = |file: &str| {
        std::fs::read_to_string(format!("/proc/{}/{file}", ours.pid())).expect("its /proc")
    };
    let stat_fields = |stat: String| -> Vec<f64> {
        let after = stat.rsplit_once(')').expect("a name").1.to_string();
        after
            .split_whitespace()
            .map(|f| f.parse().unwrap_or(f64::NAN))
            .collect()
    };
    // The unit of /proc's times (proc(5): sysconf(_SC_CLK_TCK)).
    let tick: f64 = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| stdout(&out).trim().parse().ok())
        .expect("getconf CLK_TCK");
    let cpu = |fields: &[f64]| (fields[11] + fields[12]) / tick;
    let before = stat_fields(proc("stat"));
    let (_, body) = scrape(ours.address, "");
    let body = String::from_utf8(body).expect("UTF-8");
    let after = stat_fields(proc("stat"));
    let open = std::fs::read_dir(format!("/proc/{}/fd", ours.pid()))
        .unwrap()
        .count() as f64;
    let said = value(&body, "process_open_fds");
    assert!(
        (open + 1.0..=open + 3.0).contains(&said),
        "{said} open, {open} between scrapes (the connection and the listing more)"
    );
    let cpu_said = value(&body, "process_cpu_seconds_total");
    assert!(
        cpu(&before) <= cpu_said && cpu_said <= cpu(&after),
        "{cpu_said} s, /proc: {} to {} s",
        cpu(&before),
        cpu(&after)
    );
    let boot: f64 = std::fs::read_to_string("/proc/stat")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("btime ")?.trim().parse().ok())
        .expect("btime");
    let start = boot + after[19] / tick;
    let start_said = value(&body, "process_start_time_seconds");
    assert!(
        (start_said - start).abs() < 0.005,
        "{start_said}, /proc: {start}"
    );
    let limits = proc("limits");
    let soft = |name: &str| -> f64 {
        let line = limits.lines().find(|l| l.starts_with(name)).expect(name);
        match line[name.len()..].split_whitespace().next() {
            Some("unlimited") => u64::MAX as f64,
            Some(value) => value.parse().expect("a limit"),
            None => panic!("{line}"),
        }
    };
    assert_eq!(value(&body, "process_max_fds"), soft("Max open files"));
    assert_eq!(
        value(&body, "process_virtual_memory_max_bytes"),
        soft("Max address space")
    );
    let status = proc("status");
    let kib = |key: &str| -> f64 {
        let line = status.lines().find_map(|l| l.strip_prefix(key)).expect(key);
        line.split_whitespace()
            .next()
            .unwrap()
            .parse::<f64>()
            .unwrap()
            * 1024.0
    };
    let mib = 1024.0 * 1024.0;
    for (name, key, within) in [
        // A connection's thread maps its stack while it answers.
        ("process_virtual_memory_bytes", "VmSize:", 8.0 * mib),
        ("process_resident_memory_bytes", "VmRSS:", 2.0 * mib),
    ] {
        let (said, proc) = (value(&body, name), kib(key));
        assert!((said - proc).abs() <= within, "{name} {said}, {key} {proc}");
    }
}

/// On one connection, `GET /metrics` twice, the first request's `Connection` header being
/// `connection` (none where empty) in `version` (`1.1`, `1.0`): whether each was answered
/// 200 (a body of a length given, chunked, or until the server closes, as Go's servers
/// send one).
fn twice_on_one_connection(address: SocketAddr, version: &str, connection: &str) -> [bool; 2] {
    use std::io::BufRead;
    let stream = TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok();
    let mut reader = std::io::BufReader::new(stream);
    let mut answered = [false; 2];
    for (at, answer) in answered.iter_mut().enumerate() {
        let header = match at {
            0 if !connection.is_empty() => format!("Connection: {connection}\r\n"),
            _ => String::new(),
        };
        let request = format!("GET /metrics HTTP/{version}\r\nHost: test\r\n{header}\r\n");
        if reader.get_mut().write_all(request.as_bytes()).is_err() {
            break;
        }
        let mut line = String::new();
        let mut line_of = |reader: &mut std::io::BufReader<TcpStream>| {
            line.clear();
            reader.read_line(&mut line).ok().filter(|&n| n > 0)?;
            Some(line.trim_end().to_ascii_lowercase())
        };
        let Some(status) = line_of(&mut reader) else {
            break;
        };
        let (mut length, mut chunked) = (None, false);
        while let Some(header) = line_of(&mut reader).filter(|h| !h.is_empty()) {
            if let Some(value) = header.strip_prefix("content-length: ") {
                length = value.parse::<usize>().ok();
            }
            chunked |= header == "transfer-encoding: chunked";
        }
        let take = |reader: &mut std::io::BufReader<TcpStream>, n: usize| {
            let mut bytes = vec![0u8; n];
            reader.read_exact(&mut bytes).is_ok()
        };
        let read = match (length, chunked) {
            (Some(n), _) => take(&mut reader, n),
            (None, true) => loop {
                let size = line_of(&mut reader).and_then(|s| usize::from_str_radix(&s, 16).ok());
                match size {
                    Some(0) => break take(&mut reader, 2),
                    Some(n) => {
                        if !take(&mut reader, n + 2) {
                            break false;
                        }
                    }
                    None => break false,
                }
            },
            // Until the server closes (HTTP/1.0).
            (None, false) => reader.read_to_end(&mut Vec::new()).is_ok(),
        };
        *answer = status.split(' ').nth(1) == Some("200") && read;
    }
    answered
}

/// A client that keeps its connection (HTTP/1.1, as Prometheus keeps one to each target) is
/// answered again on it; one that says `Connection: close`, or speaks HTTP/1.0, is not.
///
/// Oracle: node_exporter 1.5 and 1.11 (Go's net/http server), given the same requests.
#[test]
fn a_kept_connection_is_answered_again_as_node_exporter_answers_it() {
    serve_or_skip!();
    let ours = Exporter::start(&["-e", "task-clock"]);
    for release in Release::ALL {
        eprintln!("== node_exporter of {release:?}");
        a_kept_connection_as_node_exporter_of(release, &ours);
    }
}

/// The body of the test above for `release`'s node_exporter.
fn a_kept_connection_as_node_exporter_of(release: Release, ours: &Exporter) {
    let (_node, theirs) = node_exporter_or_skip!(release);
    for (version, connection) in [("1.1", ""), ("1.1", "close"), ("1.0", "")] {
        let expected = twice_on_one_connection(theirs, version, connection);
        assert!(expected[0], "node_exporter: {version} {connection:?}");
        assert_eq!(
            twice_on_one_connection(ours.address, version, connection),
            expected,
            "HTTP/{version}, Connection: {connection:?}"
        );
    }
}
