//! `counterhal serve` as an operator runs it: under a descriptor limit smaller than its
//! counters need, under a burst of clients, signalled by its service manager, listening on
//! the addresses node_exporter's `--web.listen-address` takes, and following cgroups by the
//! regular expressions Prometheus users write. Each exporter here writes its standard error
//! to a file, read back to see what it said.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::serve::{exchange, get};
use counterhal_conformance::fixtures::TestCgroup;
use counterhal_conformance::fixtures::prometheus::Release;
use counterhal_conformance::prometheus_tool_or_skip as tool_or_skip;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// A `counterhal serve` whose standard error goes to a file, killed when dropped.
struct Served {
    child: Child,
    /// Where it serves.
    address: SocketAddr,
    log: PathBuf,
}

impl Served {
    /// Starts `program ARGS` (`counterhal serve ...`, perhaps under `prlimit`) and waits at
    /// most 10 s for the address it says it serves.
    fn start(program: &str, args: &[&str]) -> Served {
        Served::try_start(program, args)
            .unwrap_or_else(|said| panic!("{program} {args:?} did not say where it serves: {said}"))
    }

    /// As [`start`](Served::start); what it said where it does not serve.
    fn try_start(program: &str, args: &[&str]) -> Result<Served, String> {
        let log = counterhal_conformance::fixtures::temp_dir().join(format!(
            "counterhal-serve-ops-{}-{:?}.log",
            std::process::id(),
            std::thread::current().id()
        ));
        let file = std::fs::File::create(&log).expect("the log file");
        let child = Command::new(program)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::from(file))
            .spawn()
            .expect("start counterhal serve");
        let mut served = Served {
            child,
            address: SocketAddr::from(([0, 0, 0, 0], 0)),
            log,
        };
        let waited = Instant::now();
        while waited.elapsed() < Duration::from_secs(10) {
            let said = served.said();
            let address = said
                .lines()
                .find_map(|l| l.split("://").nth(1))
                .and_then(|rest| rest.split('/').next())
                .and_then(|a| a.parse().ok());
            if let Some(address) = address {
                served.address = address;
                return Ok(served);
            }
            if served.child.try_wait().ok().flatten().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(served.said())
    }

    /// What it has written on standard error so far.
    fn said(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The limit on open files as the kernel holds it for this process (`/proc/PID/limits`):
    /// soft and hard.
    fn open_files_limit(&self) -> (String, String) {
        let limits = std::fs::read_to_string(format!("/proc/{}/limits", self.child.id()))
            .unwrap_or_default();
        let line = limits
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .unwrap_or_default();
        let fields: Vec<&str> = line.split_whitespace().collect();
        let at = |i: usize| fields.get(i).unwrap_or(&"").to_string();
        (at(3), at(4))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
        std::fs::remove_file(&self.log).ok();
    }
}

/// The value of the sample `line` starts (`name{labels}` or `name`), in `text`.
fn sample(text: &str, line: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(line)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

/// The cgroup mount, where this test may make cgroups and count whole CPUs; else the test
/// is skipped.
macro_rules! cgroups_or_skip {
    () => {{
        serve_or_skip!();
        if !running_as_root() {
            skip!(Need::Privilege, "making cgroups takes root");
        }
        match counterhal::cgroups::root(&counterhal::system::System::host()) {
            Ok(root) => root,
            Err(e) => skip!(Need::System, "no cgroup mount to count in: {e}"),
        }
    }};
}

/// Skips the test where `prlimit` (util-linux) does not run.
macro_rules! prlimit_or_skip {
    () => {
        if !Command::new("prlimit")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            skip!(
                Need::Tools,
                "prlimit is not installed (apt-get install util-linux)"
            );
        }
    };
}

/// Under `prlimit --nofile=100:100`, 60 cgroups counted on every CPU in the perf-event mode
/// (`--cgroup-mode perf-events`: one descriptor per event, CPU and cgroup) need more descriptors
/// than the limit: every scrape is still answered, the places that do not fit are left out
/// and said on standard error, on `/` and in `counterhal_places_unopened`. With a hard limit
/// above the soft one, the soft one is raised to it at start.
///
/// Oracle: the kernel's getrlimit/setrlimit semantics, through util-linux's `prlimit` (which
/// sets the limits the exporter starts under) and `/proc/PID/limits` (which shows them).
#[test]
fn descriptors_are_a_budget_and_scrapes_are_answered_past_it() {
    let root = cgroups_or_skip!();
    prlimit_or_skip!();
    let Some(parent) = TestCgroup::new(&root, "fds") else {
        skip!(
            Need::Privilege,
            "cannot make a cgroup below {}",
            root.display()
        );
    };
    for i in 0..60 {
        std::fs::create_dir(parent.path.join(format!("big{i}"))).expect("a cgroup");
    }
    let pattern = format!("^{}/big", parent.name);
    let bin = bin();
    let bin = bin.to_str().unwrap();
    let args = [
        "--nofile=100:100",
        bin,
        "serve",
        "--listen",
        "127.0.0.1:0",
        "-e",
        "task-clock",
        "--cgroups",
        &pattern,
        "--max-cgroups",
        "60",
        // The perf-event mode's counters are per cgroup (the BPF mode's are not).
        "--cgroup-mode",
        "perf-events",
    ];
    let served = Served::start("prlimit", &args);
    for round in 0..5 {
        let (status, body) = get(served.address, "/metrics", None);
        assert_eq!(status, Some(200), "scrape {round}: {body}");
        let unopened = sample(&body, "counterhal_places_unopened");
        assert!(unopened.is_some_and(|n| n > 0.0), "scrape {round}: {body}");
        assert!(
            body.contains("counterhal_event_seconds_total{event=\"task-clock\""),
            "scrape {round}: {body}"
        );
    }
    let (status, page) = get(served.address, "/", None);
    assert_eq!(status, Some(200), "{page}");
    assert!(page.contains("lack of file descriptors"), "{page}");
    let said = served.said();
    assert!(
        said.contains("lack of file descriptors: the limit is 100"),
        "{said}"
    );
    drop(served);
    // The soft limit raised to the hard one.
    let args = ["--nofile=100:300", bin, "serve", "--listen", "127.0.0.1:0"];
    let served = Served::start("prlimit", &args[..]);
    let limits = served.open_files_limit();
    assert_eq!(limits, ("300".to_string(), "300".to_string()), "{limits:?}");
}

/// Readiness means counting: under `prlimit --nofile=48:48` the descriptors kept back for
/// connections leave none for counters, every place is left out, and `/-/ready` answers 503
/// saying why, while `/-/healthy` (it runs) answers 200; the same exporter under its usual
/// limit is ready. Before, `/-/ready` answered 200 "Ready" while nothing was counted.
///
/// Oracle: the kernel's getrlimit/setrlimit semantics, through util-linux's `prlimit`; the
/// exporter's own `counterhal_places_unopened`, which says every place was left out.
#[test]
fn ready_means_a_counter_counts() {
    serve_or_skip!();
    prlimit_or_skip!();
    let bin = bin();
    let bin = bin.to_str().unwrap();
    let serve = [bin, "serve", "--listen", "127.0.0.1:0", "-e", "task-clock"];
    let starved = Served::start("prlimit", &[&["--nofile=48:48"], &serve[..]].concat());
    let (status, why) = get(starved.address, "/-/ready", None);
    assert_eq!(status, Some(503), "{why}");
    assert!(
        why.contains("not Ready: no counter counts")
            && why.contains("left out for lack of file descriptors"),
        "{why}"
    );
    assert_eq!(get(starved.address, "/-/healthy", None).0, Some(200));
    let (_, body) = get(starved.address, "/metrics", None);
    let cpus = counterhal::online_cpus(&counterhal::system::System::host()).len() as f64;
    assert_eq!(
        sample(&body, "counterhal_places_unopened"),
        Some(cpus),
        "{body}"
    );
    // Still not ready after a scrape that read nothing.
    assert_eq!(get(starved.address, "/-/ready", None).0, Some(503));
    let counting = Served::start(serve[0], &serve[1..]);
    let (status, ready) = get(counting.address, "/-/ready", None);
    assert_eq!(status, Some(200), "{ready}");
    assert_eq!(ready.trim(), "counterhal serve is Ready.");
}

/// A port free on the loopback now (the kernel's choice for port 0).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// node_exporter (Debian 12's `prometheus-node-exporter` 1.5, or another release's), started
/// with no collectors on `listen` (its `--web.listen-address`): where it serves, or why not.
pub struct NodeExporter {
    child: Child,
}

impl NodeExporter {
    /// Starts it on `listen`; `None` where it is not installed.
    pub fn start(listen: &str) -> Option<NodeExporter> {
        NodeExporter::spawn(Command::new("prometheus-node-exporter"), listen)
    }

    /// Starts `command` (a node_exporter, of any release) on `listen`; `None` where it does
    /// not start.
    pub fn spawn(mut command: Command, listen: &str) -> Option<NodeExporter> {
        let child = command
            .args([
                "--collector.disable-defaults",
                "--web.listen-address",
                listen,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        Some(NodeExporter { child })
    }

    /// Whether it is running after `within` (it exits at once on an address it refuses).
    pub fn running_after(&mut self, within: Duration) -> bool {
        std::thread::sleep(within);
        self.child.try_wait().ok().flatten().is_none()
    }
}

impl Drop for NodeExporter {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// `clients` scrapes of `/metrics` at `address`, all started at once: each one's status
/// (`None`: the connection closed with no answer).
fn burst(address: SocketAddr, clients: usize) -> Vec<Option<u16>> {
    let start = std::sync::Arc::new(std::sync::Barrier::new(clients));
    let scrapers: Vec<_> = (0..clients)
        .map(|_| {
            let start = std::sync::Arc::clone(&start);
            std::thread::spawn(move || {
                start.wait();
                get(address, "/metrics", None).0
            })
        })
        .collect();
    scrapers.into_iter().map(|s| s.join().unwrap()).collect()
}

/// A burst of 40 scrapes at once (node_exporter's `--web.max-requests`) is answered 40
/// times, as node_exporter answers it, beyond `--max-connections`: a connection whose
/// request has come is never evicted as idle, and one that finds every place answering
/// waits for one. The exporter's counters agree with what the clients got.
///
/// Oracle: node_exporter 1.5 (Debian's prometheus-node-exporter), given the same burst.
#[test]
fn a_burst_of_forty_scrapes_gets_forty_answers_and_the_counters_agree() {
    serve_or_skip!();
    let theirs_at = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let Some(mut node) = NodeExporter::start(&theirs_at.to_string()) else {
        skip!(
            Need::Tools,
            "node_exporter is not installed (apt-get install prometheus-node-exporter)"
        );
    };
    assert!(
        node.running_after(Duration::from_millis(300)),
        "node_exporter did not start"
    );
    let theirs = burst(theirs_at, 40);
    let answered = |statuses: &[Option<u16>]| statuses.iter().filter(|s| **s == Some(200)).count();
    assert_eq!(answered(&theirs), 40, "node_exporter: {theirs:?}");
    let served = Served::start(
        bin().to_str().unwrap(),
        &["serve", "--listen", "127.0.0.1:0", "-e", "task-clock"],
    );
    for round in 0..2 {
        let ours = burst(served.address, 40);
        assert_eq!(answered(&ours), 40, "round {round}: {ours:?}");
        let (_, body) = get(served.address, "/metrics", None);
        let counted = sample(&body, "counterhal_http_requests_total{code=\"200\"}");
        // Each round's 40, and the scrape that read them after the first round.
        let expected = (40 * (round + 1) + round) as f64;
        assert_eq!(counted, Some(expected), "round {round}: {body}");
        for reason in ["evicted", "refused", "write_timeout", "client_gone"] {
            let line = format!("counterhal_http_connections_closed_total{{reason=\"{reason}\"}}");
            assert_eq!(sample(&body, &line), Some(0.0), "{line}: {body}");
        }
    }
}

/// Sends `signal` (as `kill` names it: `-HUP`) to process `pid`.
fn signal(pid: u32, signal: &str) {
    counterhal_conformance::fixtures::send_signal(pid as i32, signal)
        .unwrap_or_else(|e| panic!("kill {signal} {pid}: {e}"));
}

/// `child`'s exit status within `within`, if it exits (`None`: still running).
fn exit_within(child: &mut Child, within: Duration) -> Option<std::process::ExitStatus> {
    let waited = Instant::now();
    while waited.elapsed() < within {
        if let Some(status) = child.try_wait().ok().flatten() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Prometheus of `release` signalled as a service manager signals it: whether it still
/// served after `SIGHUP`, and its exit status after `SIGTERM`; `None` where it does not start.
fn prometheus_under_signals(release: Release) -> Option<(bool, Option<std::process::ExitStatus>)> {
    let folder = counterhal_conformance::fixtures::temp_dir().join(format!(
        "counterhal-ops-prom-{}-{}",
        release.tag(),
        std::process::id()
    ));
    std::fs::create_dir_all(&folder).ok()?;
    let config = folder.join("prometheus.yml");
    std::fs::write(&config, "global:\n  scrape_interval: 1m\n").ok()?;
    let address = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let mut child = release
        .command("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            folder.join("data").display()
        ))
        .arg(format!("--web.listen-address={address}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let ready = || get(address, "/-/ready", None).0 == Some(200);
    let waited = Instant::now();
    while !ready() && waited.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    signal(child.id(), "-HUP");
    std::thread::sleep(Duration::from_millis(300));
    let served = ready();
    signal(child.id(), "-TERM");
    let status = exit_within(&mut child, Duration::from_secs(10));
    child.kill().ok();
    child.wait().ok();
    std::fs::remove_dir_all(&folder).ok();
    Some((served, status))
}

/// `SIGHUP` reads the web configuration again (even a change its modification time, size
/// and inode do not show) and serving goes on; `SIGTERM` finishes the request in flight
/// (one whose head is half sent) and exits 0, as Prometheus does, so systemd's
/// `ExecReload=kill -HUP` and `Restart=on-failure` keep it up.
///
/// Oracle: Prometheus 2.42 and 3.5, each signalled the same way beside it (it reloads on
/// SIGHUP and serves on, and exits 0 on SIGTERM).
#[test]
fn sighup_reloads_and_sigterm_drains_then_exits_0() {
    serve_or_skip!();
    for release in Release::ALL {
        eprintln!("== {}", release.name());
        prometheus_serves_on_after_sighup_and_exits_0(release);
    }
    let web = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-ops-web-{}.yml", std::process::id()));
    let config = |age: u32| {
        format!("http_server_config:\n  headers:\n    Strict-Transport-Security: max-age={age}\n")
    };
    std::fs::write(&web, config(1)).unwrap();
    let args = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "-e",
        "task-clock",
        "--web.config.file",
    ];
    let mut args = args.to_vec();
    args.push(web.to_str().unwrap());
    let mut ours = Served::start(bin().to_str().unwrap(), &args);
    let header = |address| {
        let (_, text) = exchange(
            address,
            b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n",
        );
        text.lines()
            .find(|l| l.starts_with("Strict-Transport-Security"))
            .map(str::to_string)
    };
    assert_eq!(
        header(ours.address).as_deref(),
        Some("Strict-Transport-Security: max-age=1")
    );
    // The same size, inode and modification time: only SIGHUP tells it changed.
    let modified = std::fs::metadata(&web).unwrap().modified().unwrap();
    std::fs::write(&web, config(2)).unwrap();
    let file = std::fs::File::options().write(true).open(&web).unwrap();
    file.set_modified(modified).unwrap();
    signal(ours.child.id(), "-HUP");
    let waited = Instant::now();
    while !ours.said().contains("SIGHUP") && waited.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = ours.child.try_wait().ok().flatten();
    assert_eq!(status, None, "it ended on SIGHUP: {}", ours.said());
    assert_eq!(
        header(ours.address).as_deref(),
        Some("Strict-Transport-Security: max-age=2")
    );
    // A request in flight when SIGTERM comes: half its head sent, the rest after.
    let mut slow = std::net::TcpStream::connect(ours.address).unwrap();
    slow.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    signal(ours.child.id(), "-TERM");
    std::thread::sleep(Duration::from_millis(200));
    let status = ours.child.try_wait().ok().flatten();
    assert_eq!(
        status,
        None,
        "it ended with a request in flight: {}",
        ours.said()
    );
    slow.write_all(b"Connection: close\r\n\r\n").unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let mut answer = String::new();
    slow.read_to_string(&mut answer).ok();
    assert!(
        answer.starts_with("HTTP/1.1 200 OK"),
        "the request in flight got: {answer:?}"
    );
    let status = exit_within(&mut ours.child, Duration::from_secs(5));
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "after SIGTERM: {status:?}: {}",
        ours.said()
    );
    std::fs::remove_file(&web).ok();
}

/// The oracle of the test above: Prometheus of `release` under the same signals.
fn prometheus_serves_on_after_sighup_and_exits_0(release: Release) {
    tool_or_skip!(release, "prometheus");
    let (served, status) = prometheus_under_signals(release).expect("prometheus starts");
    assert!(served, "{} stopped serving after SIGHUP", release.name());
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "{} after SIGTERM: {status:?}",
        release.name()
    );
}

/// What Prometheus of `release` logs for a `SIGHUP` with a configuration that does not read,
/// then for one with a configuration that reads (its standard error after each); `None`
/// where it does not start.
fn prometheus_reloads_refused_then_taken(release: Release) -> Option<(String, String)> {
    let folder = counterhal_conformance::fixtures::temp_dir().join(format!(
        "counterhal-ops-reload-{}-{}",
        release.tag(),
        std::process::id()
    ));
    std::fs::create_dir_all(&folder).ok()?;
    let config = folder.join("prometheus.yml");
    std::fs::write(&config, "global:\n  scrape_interval: 1m\n").ok()?;
    let log = folder.join("log");
    let address = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let mut child = release
        .command("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            folder.join("data").display()
        ))
        .arg(format!("--web.listen-address={address}"))
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&log).ok()?))
        .spawn()
        .ok()?;
    let said = || std::fs::read_to_string(&log).unwrap_or_default();
    // Standard error once Prometheus has given `verdicts` verdicts on its file.
    let settled = |verdicts: usize| {
        let waited = Instant::now();
        let given = |text: String| {
            text.matches("Completed loading").count() + text.matches("Error reloading").count()
        };
        while given(said()) < verdicts && waited.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        said()
    };
    let started = settled(1);
    std::fs::write(&config, "global: [\n").ok()?;
    signal(child.id(), "-HUP");
    let refused = settled(2);
    std::fs::write(&config, "global:\n  scrape_interval: 2m\n").ok()?;
    signal(child.id(), "-HUP");
    let taken = settled(3);
    child.kill().ok();
    child.wait().ok();
    std::fs::remove_dir_all(&folder).ok();
    Some((
        refused[started.len()..].to_string(),
        taken[refused.len()..].to_string(),
    ))
}

/// A `SIGHUP` whose web configuration does not read says so and only so: the configuration
/// read before stays, never "read again" beside it; the next one that reads says it was read
/// again and is served.
///
/// Oracle: Prometheus 2.42 and 3.5, each signalled the same way with its configuration
/// file refused and then taken: one verdict for each SIGHUP ("Error reloading config", or
/// "Completed loading of configuration file"), never both.
#[test]
fn a_refused_web_configuration_on_sighup_is_said_as_refused_only() {
    serve_or_skip!();
    for release in Release::ALL {
        eprintln!("== {}", release.name());
        prometheus_gives_one_verdict_a_sighup(release);
    }

    let web = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-ops-refused-{}.yml", std::process::id()));
    let config = |age: u32| {
        format!("http_server_config:\n  headers:\n    Strict-Transport-Security: max-age={age}\n")
    };
    std::fs::write(&web, config(1)).unwrap();
    let mut args = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "-e",
        "task-clock",
        "--web.config.file",
    ]
    .to_vec();
    args.push(web.to_str().unwrap());
    let ours = Served::start(bin().to_str().unwrap(), &args);
    let header = |address| {
        let (_, text) = exchange(
            address,
            b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n",
        );
        text.lines()
            .find(|l| l.starts_with("Strict-Transport-Security"))
            .map(str::to_string)
    };
    let hup = |times: usize| {
        signal(ours.child.id(), "-HUP");
        let waited = Instant::now();
        while ours.said().matches("SIGHUP").count() < times
            && waited.elapsed() < Duration::from_secs(5)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        ours.said()
    };
    let before = ours.said();
    std::fs::write(&web, "tls_server_confg: {}\n").unwrap();
    let after_refused = hup(1);
    let refused = &after_refused[before.len()..];
    assert!(
        refused.contains("`tls_server_confg` is not a key"),
        "{refused}"
    );
    assert!(
        refused.contains("the configuration read before stays"),
        "{refused}"
    );
    assert!(
        refused.contains("SIGHUP: the web configuration file was refused"),
        "{refused}"
    );
    assert!(
        !refused.contains("read again"),
        "a refused file said read again: {refused}"
    );
    assert_eq!(
        header(ours.address).as_deref(),
        Some("Strict-Transport-Security: max-age=1")
    );
    std::fs::write(&web, config(3)).unwrap();
    let after_taken = hup(2);
    let taken = &after_taken[after_refused.len()..];
    assert!(
        taken.contains("SIGHUP: the web configuration read again"),
        "{taken}"
    );
    assert!(
        !taken.contains("stays") && !taken.contains("refused"),
        "{taken}"
    );
    assert_eq!(
        header(ours.address).as_deref(),
        Some("Strict-Transport-Security: max-age=3")
    );
    std::fs::remove_file(&web).ok();
}

/// The oracle of the test above: Prometheus of `release` under the same signals.
fn prometheus_gives_one_verdict_a_sighup(release: Release) {
    tool_or_skip!(release, "prometheus");
    let (refused, taken) = prometheus_reloads_refused_then_taken(release).expect("it starts");
    assert!(refused.contains("Error reloading config"), "{refused}");
    assert!(!refused.contains("Completed loading"), "{refused}");
    assert!(taken.contains("Completed loading"), "{taken}");
    assert!(!taken.contains("Error reloading"), "{taken}");
}

/// Whether something answers a TCP connection at `address` (within a second).
fn reachable(address: SocketAddr) -> bool {
    std::net::TcpStream::connect_timeout(&address, Duration::from_secs(1)).is_ok()
}

/// Which loopbacks reach a server listening on `port`: IPv4's and IPv6's.
fn loopbacks(port: u16) -> (bool, bool) {
    let v4 = SocketAddr::from(([127, 0, 0, 1], port));
    let v6 = SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port));
    (reachable(v4), reachable(v6))
}

/// `--listen` takes the strings node_exporter's `--web.listen-address` takes, to the same
/// effect: `:PORT` listens on every address (both loopbacks reach it), `localhost:PORT`
/// on the host name's address, `[::1]:PORT` on IPv6's loopback; and refuses what it refuses
/// (no port, an IPv6 address without brackets).
///
/// Oracle: node_exporter 1.5 (Debian's prometheus-node-exporter), given each string.
#[test]
fn listen_takes_node_exporters_listen_addresses() {
    serve_or_skip!();
    if NodeExporter::start("127.0.0.1:0").is_none() {
        skip!(
            Need::Tools,
            "node_exporter is not installed (apt-get install prometheus-node-exporter)"
        );
    }
    for form in [":{}", "localhost:{}", "[::1]:{}", "nowhere", "::1:{}"] {
        let (theirs_port, ours_port) = (free_port(), free_port());
        let theirs_text = form.replace("{}", &theirs_port.to_string());
        let ours_text = form.replace("{}", &ours_port.to_string());
        let mut node = NodeExporter::start(&theirs_text).expect("node_exporter");
        let theirs = node
            .running_after(Duration::from_millis(400))
            .then(|| loopbacks(theirs_port));
        drop(node);
        let args = ["serve", "--listen", &ours_text, "-e", "task-clock"];
        let served = Served::try_start(bin().to_str().unwrap(), &args);
        let ours = served.as_ref().ok().map(|s| loopbacks(s.address.port()));
        let said = served.err().unwrap_or_default();
        assert_eq!(
            ours, theirs,
            "{form}: ours {ours_text} ({said}), theirs {theirs_text}"
        );
    }
}

/// The cgroups below `root` (`find`'s walk, names as paths below the mount) that `grep -E`
/// matches with `pattern`.
fn grep_extended(root: &std::path::Path, below: &str, pattern: &str) -> Vec<String> {
    let found = Command::new("find")
        .args([below, "-type", "d"])
        .current_dir(root)
        .output()
        .expect("find");
    let mut grep = Command::new("grep")
        .args(["-E", pattern])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("grep");
    grep.stdin.take().unwrap().write_all(&found.stdout).unwrap();
    let out = grep.wait_with_output().unwrap();
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|name| format!("/{name}"))
        .collect();
    names.sort();
    names
}

/// `--cgroups` takes the extended regular expressions Prometheus users write (`^a/(b|c)$`,
/// `b+`), follows the cgroups `grep -E` matches with them, and says at start, and exports,
/// how many it matched.
///
/// Oracle: GNU grep's `-E` (POSIX extended regular expressions), given the same patterns
/// and the cgroups' paths as `find` walks them.
#[test]
fn cgroups_takes_extended_expressions_as_grep_e_matches_them() {
    let root = cgroups_or_skip!();
    let Some(parent) = TestCgroup::new(&root, "ere") else {
        skip!(
            Need::Privilege,
            "cannot make a cgroup below {}",
            root.display()
        );
    };
    // One level below it, which it removes even when the test fails.
    for below in ["b", "c", "bb", "d", "xb"] {
        std::fs::create_dir(parent.path.join(below)).expect("a cgroup");
    }
    let name = &parent.name;
    for pattern in [
        format!("^{name}/(b|c)$"),
        format!("^{name}/b+$"),
        format!("^{name}/(x|a)?b"),
    ] {
        let theirs = grep_extended(&root, name, &pattern);
        let args = [
            "serve",
            "--listen",
            "127.0.0.1:0",
            "-e",
            "task-clock",
            "--cgroups",
        ];
        let mut args = args.to_vec();
        args.push(&pattern);
        let served = Served::start(bin().to_str().unwrap(), &args);
        let (_, body) = get(served.address, "/metrics", None);
        let mut ours: Vec<String> = body
            .lines()
            .filter_map(|l| l.split("cgroup=\"").nth(1)?.split('"').next())
            .filter(|cgroup| !cgroup.is_empty())
            .map(str::to_string)
            .collect();
        ours.sort();
        ours.dedup();
        assert_eq!(ours, theirs, "{pattern}: {body}");
        let matched = sample(&body, "counterhal_cgroups_matched");
        assert_eq!(matched, Some(theirs.len() as f64), "{pattern}: {body}");
        let said = format!("matches {} cgroups now", theirs.len());
        assert!(
            served.said().contains(&said),
            "{pattern}: {}",
            served.said()
        );
    }
}

/// `counterhal serve -e EVENTS` run by `command` (as this user, or as `nobody`), where no
/// event opens: its standard error (it exits at once).
fn refused_at_start(mut command: Command, events: &str) -> String {
    let out = command
        .args(["serve", "--listen", "127.0.0.1:0", "-e", events])
        .output()
        .expect("run counterhal serve");
    assert!(!out.status.success(), "{events} opened: {}", stderr(&out));
    stderr(&out)
}

/// Whether perf 6.1, run by `command`, counts task-clock on every CPU (the privilege serve
/// needs).
fn perf_counts_every_cpu(mut command: Command) -> bool {
    command
        .args(["stat", "-a", "-e", "task-clock", "true"])
        .output()
        .is_ok_and(|out| out.status.success())
}

/// An event that does not open is named once in what the exporter says (not
/// `instructions: instructions: ...`), and the hint about perf_event_paranoid and
/// capabilities is given to a user who lacks them, never to one who holds them.
///
/// Oracle: perf 6.1, run as the same user: `perf stat -a` counts (the user holds the
/// privilege: no hint) or is refused (the user lacks it: the hint).
#[test]
fn a_refused_event_is_named_once_and_the_privilege_hint_goes_to_those_without_it() {
    linux_or_skip!();
    perf_or_skip!();
    if has_core_pmu() {
        skip!(
            Need::System,
            "instructions opens here (a core PMU): no event is refused"
        );
    }
    if perf_counts_every_cpu(Command::new("perf")) {
        let said = refused_at_start(Command::new(bin()), "instructions");
        assert_eq!(said.matches("instructions:").count(), 1, "{said}");
        assert!(said.contains("instructions: perf_event_open"), "{said}");
        assert!(
            !said.contains("hint"),
            "a privileged user was given: {said}"
        );
    }
    let nobody = unprivileged_or_skip!();
    let Some(perf_as_nobody) = unprivileged_program("perf") else {
        skip!(Need::Tools, "cannot run perf as an unprivileged user");
    };
    if !perf_counts_every_cpu(perf_as_nobody) {
        let said = refused_at_start(nobody, "instructions,task-clock");
        assert_eq!(said.matches("task-clock:").count(), 1, "{said}");
        assert!(
            said.contains("hint: kernel.perf_event_paranoid is"),
            "{said}"
        );
        assert!(said.contains("CAP_PERFMON"), "{said}");
    }
}

/// `--rules-window` takes exactly the windows PromQL takes in a range: every window serve
/// accepts makes rules promtool accepts as they are written, and every window it refuses
/// (with the range it takes named) is one promtool refuses in those rules: `0s`, `0h0m` and
/// `0` (no time), `293y` and one millisecond past 292y171d23h47m16s854ms (past Go's
/// `time.Duration`), units out of order or repeated (`20s4h`, `1m1m`), fractions. Windows
/// made from every unit in a shuffled order and with counts near the bound are held to the
/// same verdict.
///
/// Oracle: promtool of Prometheus 2.42 and of 3.5 (`promtool check rules`: PromQL's parser,
/// with prometheus/common's `model.ParseDuration`).
#[test]
fn the_rules_window_takes_what_promtool_takes() {
    let mut windows: Vec<String> = [
        "1m",
        "1ms",
        "5m",
        "1h30m",
        "1m30ms",
        "01m",
        "2y3w",
        "1w",
        "292y",
        "292y171d23h47m16s854ms",
        "9223372036854ms",
        "0s",
        "0h0m",
        "0",
        "293y",
        "292y171d23h47m16s855ms",
        "9223372036855ms",
        "99999999999999999999s",
        "20s4h",
        "1m1m",
        "1d1d",
        "1.5s",
        "1Y",
        "s",
        "-1m",
    ]
    .map(String::from)
    .to_vec();
    // Units in a shuffled order, each with a count from 0 to past the bound (xorshift).
    let units = ["y", "w", "d", "h", "m", "s", "ms"];
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = |bound: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % bound
    };
    for _ in 0..40 {
        let mut window = String::new();
        for _ in 0..=next(3) {
            let count = [0u64, 1, 7, 59, 293, 106_752, 9_223_372_037][next(7) as usize];
            window.push_str(&format!("{count}{}", units[next(7) as usize]));
        }
        windows.push(window);
    }
    // The rules of the default window, whose `[1m]` each refused window replaces.
    let made = counterhal(&["serve", "--rules", "-M", "IPC"]);
    assert!(made.status.success(), "{}", stderr(&made));
    // Each window, whether serve took it, and the rules: those it made, or the default
    // window's with the window refused written in.
    let mut verdicts = Vec::new();
    for window in &windows {
        let option = format!("--rules-window={window}");
        let out = counterhal(&["serve", "--rules", "-M", "IPC", &option]);
        if out.status.success() {
            verdicts.push((window.as_str(), true, stdout(&out)));
        } else {
            assert_eq!(out.status.code(), Some(2), "`{window}`: {}", stderr(&out));
            assert!(
                stderr(&out).contains("from 1ms to 292y171d23h47m16s854ms"),
                "`{window}` refused without the range: {}",
                stderr(&out)
            );
            let rules = stdout(&made).replace("[1m]", &format!("[{window}]"));
            verdicts.push((window.as_str(), false, rules));
        }
    }
    let accepted = verdicts.iter().filter(|(_, took, _)| *took).count();
    let refused = verdicts.len() - accepted;
    assert!(
        accepted >= 11 && refused >= 15,
        "{accepted} taken, {refused} refused"
    );
    for release in Release::ALL {
        eprintln!("== {}", release.name());
        promtool_takes_what_serve_took(release, &verdicts);
    }
}

/// The end of the test above for `release`: its promtool takes each window's rules where
/// serve took the window, and refuses them where serve refused it.
fn promtool_takes_what_serve_took(release: Release, verdicts: &[(&str, bool, String)]) {
    use crate::serve_prometheus::promtool_check_rules;
    tool_or_skip!(release, "promtool");
    for (window, took, rules) in verdicts {
        let (ok, said) = promtool_check_rules(release, rules);
        assert_eq!(
            ok,
            *took,
            "serve took `{window}`: {took}; {}'s promtool: {said}",
            release.name()
        );
    }
    eprintln!(
        "{} windows, each taken or refused as {}'s promtool does",
        verdicts.len(),
        release.name()
    );
}

/// The `/` page names each event that did not open beside why, as standard error says it:
/// an event of a PMU this host lacks, and the hardware events where no core PMU takes them.
///
/// Oracle: the host's PMUs in sysfs (`/sys/bus/event_source/devices` has no `nosuchpmu`),
/// and the exporter's standard error, which names the event of each refusal.
#[test]
fn the_index_page_names_the_events_that_did_not_open() {
    serve_or_skip!();
    assert!(!std::path::Path::new("/sys/bus/event_source/devices/nosuchpmu").exists());
    let events = "task-clock,nosuchpmu/event=0x1/,instructions";
    let served = Served::start(
        bin().to_str().unwrap(),
        &["serve", "--listen", "127.0.0.1:0", "-e", events],
    );
    let (status, page) = get(served.address, "/", None);
    assert_eq!(status, Some(200));
    let said = served.said();
    let refusals: Vec<(String, String)> = said
        .lines()
        .filter_map(|l| crate::serve_logs::parse(l).ok())
        .filter(|pairs| crate::serve_logs::field(pairs, "msg") == Some("not counted here"))
        .filter_map(|pairs| {
            let field = |key| crate::serve_logs::field(&pairs, key).map(str::to_string);
            Some((field("event")?, field("reason")?))
        })
        .collect();
    assert!(
        refusals
            .iter()
            .any(|(name, _)| *name == "nosuchpmu/event=0x1/"),
        "{said}"
    );
    for (name, why) in refusals {
        let listed = format!("<li><code>{name}</code>: {why}</li>");
        assert!(page.contains(&listed), "{listed} not in: {page}");
    }
}
