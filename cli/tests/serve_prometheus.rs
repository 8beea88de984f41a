//! `counterhal serve` scraped by Prometheus every second, with a known workload: a busy loop
//! pinned to one CPU in a cgroup of its own, whose task-clock must rise at one CPU-second per
//! second on that CPU and cgroup (as much as the loop ran: where the machine gives it less of
//! its CPU, the kernel's own account of the loop says how much), as PromQL's `rate()` finds
//! it through the HTTP API; and every series the exporter writes is well formed for
//! `promtool check metrics`.
//!
//! Each test body runs against each [`Release`] of Prometheus' tools in turn, as ripgrep runs
//! one body against each regex engine: Debian 12's Prometheus 2.42 and Debian sid's 3.5 (the
//! current-releases lab's, `scripts/current-lab`).
//!
//! Oracle: Prometheus 2.42 and 3.5 (each one's scraper parses the OpenMetrics it negotiates,
//! its PromQL computes the rate and evaluates the recording rules `serve --rules` writes),
//! their promtool (the text format and the naming conventions; the rules file), and the
//! scheduler's time on CPU of the loop (`/proc/PID/schedstat`, sampled every 250 ms) over the
//! span of the samples the rate is computed from. The rule's CPUs_utilized of the cgroup
//! agrees with `stat -a -G`'s.

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::serve::{Exporter, get};
use counterhal_conformance::fixtures::TestCgroup;
use counterhal_conformance::fixtures::prometheus::Release;
use counterhal_conformance::prometheus_tool_or_skip as tool_or_skip;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// A running Prometheus with its storage in a directory of its own, both gone when dropped.
pub struct Prometheus {
    child: Child,
    /// Its directory: configuration, storage, log.
    pub dir: std::path::PathBuf,
    address: std::net::SocketAddr,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

impl Prometheus {
    /// Starts Prometheus of `release` on a free loopback port, scraping `target` every
    /// second and evaluating the recording rules `rules` (a rules file's text) every second.
    fn start(release: Release, target: std::net::SocketAddr, rules: &str) -> Prometheus {
        let jobs = format!(
            "  - job_name: counterhal\n    static_configs:\n      - targets: ['{target}']\n"
        );
        Prometheus::start_with(release, "counterhal", &jobs, rules)
    }

    /// Starts Prometheus of `release` (check that it is [`available`](Release::available))
    /// on a free loopback port (its files in a directory named after `name`), with `jobs`
    /// (scrape_configs' items, as YAML) scraped every second and the recording rules `rules`
    /// evaluated every second.
    pub fn start_with(release: Release, name: &str, jobs: &str, rules: &str) -> Prometheus {
        Prometheus::start_with_args(release, name, jobs, rules, &[])
    }

    /// [`start_with`](Prometheus::start_with), with `args` added to its command line (a
    /// feature flag: `--enable-feature=created-timestamp-zero-ingestion`).
    pub fn start_with_args(
        release: Release,
        name: &str,
        jobs: &str,
        rules: &str,
        args: &[&str],
    ) -> Prometheus {
        let dir = counterhal_conformance::fixtures::temp_dir().join(format!(
            "counterhal-prometheus-{name}-{}-{}",
            release.tag(),
            std::process::id()
        ));
        std::fs::create_dir_all(dir.join("data")).unwrap();
        std::fs::write(dir.join("rules.yml"), rules).unwrap();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             rule_files:\n  - {}\n\
             scrape_configs:\n{jobs}",
            dir.join("rules.yml").display()
        );
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        let address = free_port();
        let child = release
            .command("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={address}"))
            .arg("--log.level=warn")
            .args(args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("log")).map_or(Stdio::null(), Stdio::from))
            .spawn()
            .expect("start prometheus");
        Prometheus {
            child,
            dir,
            address,
        }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The result of the instant query `promql`: each series' labels as text and its value
    /// (none where Prometheus gave no answer).
    pub fn query(&self, promql: &str) -> Vec<(String, f64)> {
        self.query_at(promql, None).unwrap_or_default()
    }

    /// [`query`](Prometheus::query) evaluated at `time` (Unix seconds; `None`: now), or
    /// what went wrong.
    pub fn query_at(&self, promql: &str, time: Option<f64>) -> Result<Vec<(String, f64)>, String> {
        let data = self.api(&query_path(promql, time))?;
        Ok(data["result"]
            .as_array()
            .map(|results| {
                results
                    .iter()
                    .filter_map(|r| {
                        let value = r["value"][1].as_str()?.parse().ok()?;
                        Some((r["metric"].to_string(), value))
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    /// The samples of the first series of the range vector `promql` at `time` (Unix
    /// seconds): each one's timestamp and value, as Prometheus stored them.
    fn samples_at(&self, promql: &str, time: f64) -> Result<Vec<(f64, f64)>, String> {
        let data = self.api(&query_path(promql, Some(time)))?;
        Ok(data["result"][0]["values"]
            .as_array()
            .map(|values| {
                values
                    .iter()
                    .filter_map(|v| Some((v[0].as_f64()?, v[1].as_str()?.parse().ok()?)))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Each target Prometheus scrapes, as its targets API says: job, health, the last
    /// scrape's duration and error; and its own log.
    pub fn health(&self) -> String {
        let targets = match self.api("/api/v1/targets") {
            Ok(data) => data["activeTargets"]
                .as_array()
                .map(|targets| {
                    targets
                        .iter()
                        .map(|t| {
                            format!(
                                "job {} {}, last scrape {} s, error {}",
                                t["labels"]["job"],
                                t["health"],
                                t["lastScrapeDuration"],
                                t["lastError"]
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("; ")
                })
                .unwrap_or_default(),
            Err(e) => e,
        };
        let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
        format!("targets: {targets}; its log: {:?}", log.trim())
    }

    /// The `data` of Prometheus' HTTP API at `path`, or what went wrong.
    fn api(&self, path: &str) -> Result<serde_json::Value, String> {
        let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
        let (status, answer) = crate::serve::exchange(self.address, request.as_bytes());
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        // Go's server sends a long answer in chunks.
        let body = match head
            .to_ascii_lowercase()
            .contains("\r\ntransfer-encoding: chunked")
        {
            true => dechunked(body.as_bytes())
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                .unwrap_or_default(),
            false => body.to_string(),
        };
        match serde_json::from_str::<serde_json::Value>(&body) {
            Ok(json) if status == Some(200) => Ok(json["data"].clone()),
            Ok(json) => Err(format!("{path}: HTTP {status:?}, {}", json["error"])),
            Err(_) => Err(format!("{path}: HTTP {status:?}, {body:?}")),
        }
    }
}

/// An HTTP/1.1 body sent in chunks (each its size in hexadecimal, CRLF, its bytes, CRLF; a
/// size of 0 ends them), joined; `None` where it is not that.
pub fn dechunked(mut body: &[u8]) -> Option<Vec<u8>> {
    let mut joined = Vec::new();
    loop {
        let line = body.windows(2).position(|w| w == b"\r\n")?;
        let size = std::str::from_utf8(&body[..line]).ok()?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            return Some(joined);
        }
        joined.extend_from_slice(body.get(line + 2..line + 2 + size)?);
        body = body.get(line + 2 + size + 2..)?;
    }
}

/// The path of the instant query `promql` at `time` (Unix seconds; `None`: now).
fn query_path(promql: &str, time: Option<f64>) -> String {
    let time = time.map_or(String::new(), |t| format!("&time={t:.3}"));
    format!("/api/v1/query?query={}{time}", encoded(promql))
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A loopback address with a port free now.
fn free_port() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// `text` percent-encoded for a query string.
fn encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `promtool check metrics` of `release` on `text`: its status and what it said.
fn promtool_check(release: Release, text: &str) -> (bool, String) {
    let mut child = release
        .command("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start promtool");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        format!("{}{}", stdout(&out), stderr(&out)),
    )
}

#[test]
fn prometheus_finds_one_cpu_second_per_second_of_a_pinned_busy_loop_in_its_cgroup() {
    linux_or_skip!();
    if !running_as_root() {
        skip!(
            Need::Privilege,
            "making cgroups and counting every CPU takes root"
        );
    }
    let root = match counterhal::cgroups::root(&counterhal::system::System::host()) {
        Ok(root) => root,
        Err(e) => skip!(Need::System, "no cgroup mount to count in: {e}"),
    };
    let mut busy = TestCgroup::new(&root, "serve").expect("make a cgroup");
    busy.spin();
    let cpu = counterhal::online_cpus(&counterhal::system::System::host())
        .last()
        .unwrap_or(0);
    for pid in busy.busy_pids() {
        let pinned = Command::new("taskset")
            .args(["-p", "-c", &cpu.to_string(), &pid.to_string()])
            .output()
            .expect("run taskset");
        assert!(pinned.status.success(), "{}", stderr(&pinned));
        // Ahead of whatever else this machine runs, so that it has its CPU to itself.
        Command::new("renice")
            .args(["-n", "-20", "-p", &pid.to_string()])
            .output()
            .ok();
    }
    let pattern = format!("^{}$", busy.name);
    let exporter = Exporter::start(&[
        "-e",
        "task-clock,page-faults",
        "--cgroups",
        &pattern,
        "--per-cpu",
    ]);
    for release in Release::ALL {
        eprintln!("== {}", release.name());
        the_busy_loop_as_prometheus_finds_it(release, &exporter, &busy, cpu);
    }
}

/// The body of the test above for `release`: `exporter` follows the cgroup `busy`, whose
/// loop is pinned to `cpu`.
fn the_busy_loop_as_prometheus_finds_it(
    release: Release,
    exporter: &Exporter,
    busy: &TestCgroup,
    cpu: u32,
) {
    tool_or_skip!(release, "prometheus");
    tool_or_skip!(release, "promtool");
    let (status, scrape) = get(exporter.address, "/metrics", None);
    assert_eq!(status, Some(200));
    let cgroup = format!("/{}", busy.name);
    assert!(scrape.contains(&format!("cgroup=\"{cgroup}\"")), "{scrape}");
    let (well_formed, said) = promtool_check(release, &scrape);
    assert!(
        well_formed && said.trim().is_empty(),
        "{}'s promtool check metrics: {said}",
        release.name()
    );

    // The portable metric CPUs_utilized as `serve --rules` writes it, checked by promtool.
    let rules = counterhal(&[
        "serve",
        "--rules",
        "-M",
        "CPUs_utilized",
        "--rules-window",
        "5s",
    ]);
    assert!(rules.status.success(), "{}", stderr(&rules));
    let rules = stdout(&rules);
    let (rules_well_formed, rules_said) = promtool_check_rules(release, &rules);
    assert!(
        rules_well_formed,
        "{}'s promtool check rules: {rules_said}\n{rules}",
        release.name()
    );
    let loop_pid = busy.busy_pids().next().expect("the busy loop");
    let clock = LoopClock::start(loop_pid);
    let prometheus = Prometheus::start(release, exporter.address, &rules);
    let series = format!(
        "counterhal_event_seconds_total{{event=\"task-clock\",cpu=\"{cpu}\",cgroup=\"{cgroup}\"}}"
    );
    let (rate, own, lag, tries) = rate_beside_the_loop(&prometheus, &clock, &series)
        .unwrap_or_else(|seen| {
            panic!(
                "rate({series}[5s]): no try in 60 s agreed with the loop's schedstat; each \
                 second:\n{}\n{}",
                seen.join("\n"),
                prometheus.health()
            )
        });
    eprintln!(
        "rate() of the busy cgroup's task-clock on CPU {cpu}: {rate:.4} CPU-s/s; the loop \
         ran {own:.4} CPU-s/s by its schedstat over the same samples' span (the scrapes' lag \
         {lag:.3} of it; {tries} tries)"
    );
    // Where the loop had its CPU to itself, that is one CPU-second per second.
    if own >= 0.95 {
        assert!(
            (0.9 - lag..=1.1 + lag).contains(&rate),
            "rate({series}[5s]) = {rate} (the scrapes' lag {lag} of the window)"
        );
    }
    // The host's facts the rules read (`#num_cpus_online`...) are scraped with the counts.
    let online = prometheus.query("counterhal_machine_fact{fact=\"num_cpus_online\"}");
    assert_eq!(
        online.first().map(|(_, v)| *v),
        Some(counterhal::online_cpus(&counterhal::system::System::host()).len() as f64),
        "{online:?}; {}",
        prometheus.health()
    );
    // The other CPU, in the same cgroup, ran none of it.
    let elsewhere = prometheus.query(&format!(
        "sum(rate(counterhal_event_seconds_total{{event=\"task-clock\",cgroup=\"{cgroup}\",cpu!=\"{cpu}\"}}[5s]))"
    ));
    assert!(
        elsewhere.first().is_none_or(|(_, v)| *v < 0.05),
        "{elsewhere:?}"
    );
    let agreed = rule_beside_stat(&prometheus, &clock, &busy.name, &cgroup);
    assert!(
        agreed.is_ok(),
        "counterhal:CPUs_utilized:rate5s of {cgroup} disagrees with stat -a -G in three \
         tries:\n{}\n{}",
        agreed.unwrap_err().join("\n"),
        prometheus.health()
    );
}

/// The first try, one a second for 60 s, where PromQL's `rate(SERIES[5s])` agrees with the
/// loop's own share of its CPU by its schedstat over the same span: that of the series'
/// samples in the window, as Prometheus stored them. Its rate, the loop's share, the
/// scrapes' lag as a share of the span and the tries made; or what each second saw.
///
/// A sample's timestamp is when its scrape began and the counters are read up to a scrape's
/// duration later (Prometheus' own `scrape_duration_seconds`): at each end of the span the
/// rate may be off by that much, which the tolerance adds, with how much the loop's share
/// moved over the second a scrape may lag by (on a loaded machine, that much more
/// difference is the load's). A second with fewer than three samples in the window (a
/// machine too loaded for Prometheus to keep its interval, or Prometheus still starting) is
/// no try; each second's findings are kept for the failure.
fn rate_beside_the_loop(
    prometheus: &Prometheus,
    clock: &LoopClock,
    series: &str,
) -> Result<(f64, f64, f64, usize), Vec<String>> {
    let start = Instant::now();
    let mut seen = Vec::new();
    let mut tries = 0;
    while start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_secs(1));
        let now = unix_now();
        let at = format!("+{:.1} s", start.elapsed().as_secs_f64());
        // The window ends on the latest sample, so that rate() extrapolates at its start
        // only (at an end where a scrape is missing, it would extrapolate by half an
        // interval, not to the end).
        let latest = prometheus.samples_at(&format!("{series}[5s]"), now);
        let end = match latest.as_ref().map(|samples| samples.last()) {
            Ok(Some((time, _))) => *time,
            _ => now,
        };
        let samples = match prometheus.samples_at(&format!("{series}[5s]"), end) {
            Ok(samples) if samples.len() >= 3 => samples,
            Ok(samples) => {
                seen.push(format!(
                    "{at}: {} samples in the last 5 s; {}",
                    samples.len(),
                    prometheus.health()
                ));
                continue;
            }
            Err(e) => {
                seen.push(format!("{at}: {e}"));
                continue;
            }
        };
        let (first, last) = (samples[0].0, samples[samples.len() - 1].0);
        let own = clock.share(first, last);
        let moved = (own - clock.share(first - 1.0, last - 1.0)).abs();
        let slowest = prometheus.query_at(
            "max_over_time(scrape_duration_seconds{job=\"counterhal\"}[6s])",
            Some(end),
        );
        let rate = prometheus.query_at(&format!("rate({series}[5s])"), Some(end));
        let (slowest, rate) = match (slowest, rate) {
            (Ok(slowest), Ok(rate)) if !slowest.is_empty() && !rate.is_empty() => {
                (slowest[0].1, rate[0].1)
            }
            (slowest, rate) => {
                seen.push(format!(
                    "{at}: {} samples; slowest scrape {slowest:?}; rate {rate:?}",
                    samples.len()
                ));
                continue;
            }
        };
        tries += 1;
        let lag = 2.0 * slowest / (last - first);
        seen.push(format!(
            "{at}: {} samples over {:.3} s: rate {rate:.4}, the loop {own:.4}, moved \
             {moved:.4}, slowest scrape {slowest:.3} s",
            samples.len(),
            last - first
        ));
        if (rate - own).abs() <= (0.1 + lag) * own.max(0.1) + moved {
            return Ok((rate, own, lag, tries));
        }
    }
    Err(seen)
}

/// The recording rule's CPUs_utilized of the cgroup (over every CPU) beside stat's, which
/// counts the cgroup's task-clock over every CPU for the five seconds that end where the
/// rule is read: what they said where they agreed, or what each of three tries saw. The
/// rule's window lags stat's by the scrape and evaluation intervals (a second or two), so
/// the loop's own time on CPU over the two windows says how much the machine's load moved
/// between them: that much more difference is the load's, not the rule's. A try where
/// Prometheus scraped less than every other second of the rule's window (a machine too
/// loaded to keep its intervals), or that has no value of the rule, is made again.
fn rule_beside_stat(
    prometheus: &Prometheus,
    clock: &LoopClock,
    cgroup_name: &str,
    cgroup: &str,
) -> Result<String, Vec<String>> {
    let recorded = format!("counterhal:CPUs_utilized:rate5s{{cgroup=\"{cgroup}\"}}");
    std::thread::sleep(Duration::from_secs(3));
    let mut tries = Vec::new();
    for _ in 0..3 {
        let began = unix_now();
        let stat = counterhal(&[
            "stat",
            "-a",
            "-e",
            "task-clock",
            "-G",
            cgroup_name,
            "-x,",
            "--",
            "sleep",
            "5",
        ]);
        let ended = unix_now();
        // The rule's evaluations up to `ended` have landed once two more intervals passed.
        std::thread::sleep(Duration::from_secs(3));
        let line = stderr(&stat);
        let utilized: f64 = line
            .split(',')
            .nth(6)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("stat's CPUs utilized: {line}"));
        let rule = prometheus.query_at(&recorded, Some(ended));
        let scrapes = prometheus
            .query_at("count_over_time(up{job=\"counterhal\"}[6s])", Some(ended))
            .ok()
            .and_then(|n| n.first().map(|(_, n)| *n))
            .unwrap_or(0.0);
        let moved = (clock.share(began, ended) - clock.share(ended - 7.0, ended - 1.0)).abs();
        let Some(rule) = rule.as_ref().ok().and_then(|r| r.first()).map(|(_, v)| *v) else {
            tries.push(format!(
                "{recorded} at the end of stat's run: {rule:?} ({utilized:.4} by stat; \
                 {scrapes} scrapes in the rule's last 6 s)"
            ));
            continue;
        };
        let said = format!(
            "CPUs_utilized of the busy cgroup: {rule:.4} by the rule, {utilized:.4} by stat; \
             the loop's own share moved {moved:.4} between their windows; {scrapes} scrapes \
             in the rule's last 6 s"
        );
        eprintln!("{said}");
        if scrapes >= 3.0 && (rule - utilized).abs() <= 0.15 * rule.max(utilized) + moved {
            return Ok(said);
        }
        tries.push(said);
    }
    Err(tries)
}

/// The busy loop's time on CPU by the kernel's account (`/proc/PID/schedstat`'s first
/// field), sampled every 250 ms on a thread of its own until dropped.
pub struct LoopClock {
    samples: std::sync::Arc<std::sync::Mutex<Vec<(f64, u64)>>>,
    sampling: std::sync::Arc<std::sync::atomic::AtomicBool>,
    sampler: Option<std::thread::JoinHandle<()>>,
}

impl LoopClock {
    /// Starts sampling process `pid`.
    pub fn start(pid: u32) -> LoopClock {
        let samples = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let sampler = {
            let (samples, sampling) = (samples.clone(), sampling.clone());
            std::thread::spawn(move || {
                while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                    let on_cpu = std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
                        .ok()
                        .and_then(|text| text.split_whitespace().next()?.parse().ok())
                        .unwrap_or(0);
                    samples
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .push((unix_now(), on_cpu));
                    std::thread::sleep(Duration::from_millis(250));
                }
            })
        };
        LoopClock {
            samples,
            sampling,
            sampler: Some(sampler),
        }
    }

    /// The loop's CPU-seconds per second from `from` to `to` (Unix seconds), its time on CPU
    /// at each interpolated between the samples around it (the nearest past the ends).
    pub fn share(&self, from: f64, to: f64) -> f64 {
        let samples = self
            .samples
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        let on_cpu_at = |t: f64| -> f64 {
            let after = samples.partition_point(|(time, _)| *time < t);
            match (after.checked_sub(1).map(|i| samples[i]), samples.get(after)) {
                (Some((t0, n0)), Some(&(t1, n1))) if t1 > t0 => {
                    n0 as f64 + (n1 as f64 - n0 as f64) * (t - t0) / (t1 - t0)
                }
                (Some((_, n)), _) | (None, Some(&(_, n))) => n as f64,
                (None, None) => 0.0,
            }
        };
        (on_cpu_at(to) - on_cpu_at(from)) / 1e9 / (to - from).max(0.25)
    }
}

impl Drop for LoopClock {
    fn drop(&mut self) {
        self.sampling
            .store(false, std::sync::atomic::Ordering::Relaxed);
        if let Some(sampler) = self.sampler.take() {
            sampler.join().ok();
        }
    }
}

/// The verdict of `release`'s promtool on a rules file's text, and what it said.
pub fn promtool_check_rules(release: Release, text: &str) -> (bool, String) {
    // A file of its own for each call: the tests of this module run side by side.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = counterhal_conformance::fixtures::temp_dir().join(format!(
        "counterhal-rules-{}-{call}.yml",
        std::process::id()
    ));
    std::fs::write(&path, text).unwrap();
    let out = release
        .command("promtool")
        .args(["check", "rules"])
        .arg(&path)
        .output()
        .expect("run promtool");
    std::fs::remove_file(&path).ok();
    (
        out.status.success(),
        format!("{}{}", stdout(&out), stderr(&out)),
    )
}

/// `serve --rules`: a model's metrics as recording rules promtool accepts (Sapphire Rapids'
/// DRAM bandwidth from its memory controllers' uncore events, its TopdownL1 metrics); those
/// whose formulas need what PromQL lacks are left out in a comment saying why; a window that
/// is no PromQL duration is bad input. Oracle: promtool check rules, of Prometheus 2.42 and
/// 3.5.
#[test]
fn rules_of_a_models_metrics_pass_promtool() {
    for release in Release::ALL {
        eprintln!("== {}", release.name());
        rules_of_a_models_metrics_pass_promtool_of(release);
    }
}

/// The body of the test above for `release`.
fn rules_of_a_models_metrics_pass_promtool_of(release: Release) {
    tool_or_skip!(release, "promtool");
    let out = counterhal(&[
        "serve",
        "--rules",
        "--cpu-model",
        "spr",
        "-M",
        "Info_System_DRAM_BW_Use,TopdownL1",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rules = stdout(&out);
    let (well_formed, said) = promtool_check_rules(release, &rules);
    assert!(well_formed, "promtool check rules: {said}\n{rules}");
    assert!(
        rules.contains("record: counterhal:Info_System_DRAM_BW_Use:rate1m"),
        "{rules}"
    );
    assert!(rules.contains("UNC_M_CAS_COUNT.RD"), "{rules}");
    assert!(!rules.contains("# left out: "), "{rules}");
    // Skylake's TopdownL1 reads #SMT_on, a fact of the machine: each host's, as the
    // exporter serves it.
    let skl = counterhal(&["serve", "--rules", "--cpu-model", "skl", "-M", "TopdownL1"]);
    let skl = stdout(&skl);
    assert!(
        !skl.contains("# left out: ")
            && skl.contains("counterhal_machine_fact{fact=\\\"smt_on\\\"}"),
        "{skl}"
    );
    let (well_formed, said) = promtool_check_rules(release, &skl);
    assert!(well_formed, "promtool check rules: {said}\n{skl}");
    // Every metric of the model: min, max, d_ratio, if-else and the facts the exporter serves
    // are PromQL, so each metric is a rule.
    let listed = counterhal(&["list", "--metrics", "--cpu-model", "spr"]);
    // The names of the "model metrics:" section: its lines indented by two, to its end.
    let names: Vec<String> = stdout(&listed)
        .lines()
        .skip_while(|l| *l != "model metrics:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    assert!(names.len() > 300, "{}", stdout(&listed));
    let every = counterhal(&[
        "serve",
        "--rules",
        "--cpu-model",
        "spr",
        "-M",
        &names.join(","),
    ]);
    assert!(every.status.success(), "{}", stderr(&every));
    let every = stdout(&every);
    let (well_formed, said) = promtool_check_rules(release, &every);
    assert!(well_formed, "promtool check rules: {said}");
    let recorded = every.matches("record: ").count();
    let left: Vec<&str> = every
        .lines()
        .filter(|l| l.starts_with("# left out"))
        .collect();
    eprintln!("Sapphire Rapids: {recorded} rules, {} left out", left.len());
    // Left out only where perf 7.2's formula asks the machine what no series says: whether an
    // event opens here (`has_event`) or how many PMUs an event was summed over
    // (`source_count`), as perf 7.2's expression grammar evaluates them (tools/perf/util/expr.y
    // of Linux 7.2: perf's default metrics and its lpm_* power metrics use them).
    assert!(
        left.iter()
            .all(|l| l.ends_with(": uses has_event or source_count")),
        "{left:#?}"
    );
    assert!(left.len() * 20 <= names.len(), "{left:#?}");
    assert_eq!(recorded + left.len(), names.len(), "a rule for each metric");
    let bad = counterhal(&["serve", "--rules", "-M", "IPC", "--rules-window", "5x"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("not a Prometheus duration"),
        "{}",
        stderr(&bad)
    );
}

/// The `Accept` header of the first request to a listener of its own that Prometheus of
/// `release` scrapes as the job `recorder` (answered with one sample of the text format),
/// read off the wire by a thread; `jobs` are the other jobs of that Prometheus, started here.
fn accept_header_of(release: Release, jobs: &str) -> (Prometheus, Option<String>) {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a listener");
    let recorder = listener.local_addr().unwrap();
    let (sender, heard) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
            head.push(byte[0]);
        }
        let body = "recorded 1\n";
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(answer.as_bytes()).ok();
        let accept = String::from_utf8_lossy(&head).lines().find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("accept")
                .then(|| value.trim().to_string())
        });
        sender.send(accept).ok();
    });
    let jobs = format!(
        "  - job_name: recorder\n    static_configs:\n      - targets: ['{recorder}']\n{jobs}"
    );
    let prometheus = Prometheus::start_with(release, "accept", &jobs, "");
    let accept = heard.recv_timeout(Duration::from_secs(30)).ok().flatten();
    (prometheus, accept)
}

/// The names of a scrape's samples (its lines that are not comments, up to `{` or a space).
fn sample_names(scrape: &str) -> std::collections::BTreeSet<String> {
    scrape
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_string)
        .collect()
}

/// Prometheus' own `Accept` header (2.42's ranks OpenMetrics 1.0.0 first; 3.5's too, with
/// `escaping=allow-utf-8`, and the text format 1.0.0 beside 0.0.4) gets OpenMetrics 1.0, which
/// each release's scraper takes whole: the target is up, and every family the exporter
/// served is stored under the names served. A job of Prometheus 3 that asks for the text
/// format 1.0.0 alone (`scrape_protocols`, new in 2.49) gets 0.0.4, which it parses too. The
/// text format passes each release's `promtool check metrics`.
///
/// Oracle: Prometheus 2.42 and 3.5 (the header each sends, read off the wire; each one's
/// scraper and its parsers, through the series it stores); their promtool.
#[test]
fn prometheus_accept_header_gets_a_format_its_scraper_takes_whole() {
    serve_or_skip!();
    let exporter = Exporter::start(&["-e", "task-clock,page-faults"]);
    for release in Release::ALL {
        eprintln!("== {}", release.name());
        the_scrape_as_prometheus_takes_it(release, &exporter);
    }
}

/// The body of the test above for `release`.
fn the_scrape_as_prometheus_takes_it(release: Release, exporter: &Exporter) {
    tool_or_skip!(release, "prometheus");
    tool_or_skip!(release, "promtool");
    let target = exporter.address;
    let mut jobs =
        format!("  - job_name: counterhal\n    static_configs:\n      - targets: ['{target}']\n");
    if release == Release::Sid {
        jobs += &format!(
            "  - job_name: counterhal-text\n    scrape_protocols: [PrometheusText1.0.0]\n    \
             static_configs:\n      - targets: ['{target}']\n"
        );
    }
    let (prometheus, accept) = accept_header_of(release, &jobs);
    let accept = accept.unwrap_or_else(|| {
        panic!(
            "{} sent no Accept header in 30 s: {}",
            release.name(),
            prometheus.health()
        )
    });
    eprintln!("{}'s Accept: {accept}", release.name());
    let request = format!(
        "GET /metrics HTTP/1.1\r\nHost: test\r\nConnection: close\r\nAccept: {accept}\r\n\r\n"
    );
    let (status, answer) = crate::serve::exchange(target, request.as_bytes());
    assert_eq!(status, Some(200), "{answer}");
    let (head, scrape) = answer.split_once("\r\n\r\n").expect("a head");
    assert!(
        head.contains(
            "\r\nContent-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"
        ),
        "{accept}: {head}"
    );
    assert!(scrape.ends_with("# EOF\n"), "{scrape}");
    let served = sample_names(scrape);
    // The text format's names: those of OpenMetrics less the `_created` lines, which it has
    // not.
    let (_, text) = get(target, "/metrics", None);
    let served_as_text = sample_names(&text);
    assert!(
        served_as_text.iter().all(|name| served.contains(name))
            && served
                .iter()
                .all(|name| served_as_text.contains(name) || name.ends_with("_created")),
        "{served_as_text:?} {served:?}"
    );

    let jobs: &[&str] = match release {
        Release::Sid => &["counterhal", "counterhal-text"],
        Release::Debian12 => &["counterhal"],
    };
    for job in jobs {
        let start = Instant::now();
        loop {
            let up = prometheus.query(&format!("up{{job=\"{job}\"}}"));
            if up.first().is_some_and(|(_, v)| *v == 1.0) {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{} found job {job} not up in 60 s: {up:?}; {}",
                release.name(),
                prometheus.health()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        let stored = || -> std::collections::BTreeSet<String> {
            prometheus
                .query(&format!("count by (__name__) ({{job=\"{job}\"}})"))
                .iter()
                .filter_map(|(labels, _)| {
                    let labels: serde_json::Value = serde_json::from_str(labels).ok()?;
                    Some(labels["__name__"].as_str()?.to_string())
                })
                .filter(|name| name != "up" && !name.starts_with("scrape_"))
                .collect()
        };
        let served = match *job {
            "counterhal-text" => &served_as_text,
            _ => &served,
        };
        let start = Instant::now();
        while stored() != *served && start.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(250));
        }
        assert_eq!(
            stored(),
            *served,
            "{}'s job {job}: the names stored, and those served",
            release.name()
        );
    }

    let (status, text) = get(target, "/metrics", None);
    assert_eq!(status, Some(200));
    let (well_formed, said) = promtool_check(release, &text);
    assert!(
        well_formed && said.trim().is_empty(),
        "{}'s promtool check metrics: {said}",
        release.name()
    );
}
