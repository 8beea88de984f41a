//! `counterhal serve` scraped by Debian's Prometheus every second, with a known workload: a
//! busy loop pinned to one CPU in a cgroup of its own, whose task-clock must rise at one
//! CPU-second per second on that CPU and cgroup (as much as the loop ran: where the machine
//! gives it less of its CPU, the kernel's own account of the loop says how much), as PromQL's
//! `rate()` finds it through the HTTP API; and every series the exporter writes is well
//! formed for `promtool check metrics`.
//!
//! Oracle: Prometheus 2.42 (its scraper parses the OpenMetrics it negotiates, its PromQL
//! computes the rate and evaluates the recording rules `serve --rules` writes), promtool
//! (the text format and the naming conventions; the rules file), and the scheduler's time on
//! CPU of the loop (`/proc/PID/schedstat`, sampled every 250 ms) over the span of the samples
//! the rate is computed from. The rule's CPUs_utilized of
//! the cgroup agrees with `stat -a -G`'s.

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::serve::{Exporter, get};
use counterhal_conformance::fixtures::TestCgroup;
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
    /// Starts Prometheus on a free loopback port, scraping `target` every second and
    /// evaluating the recording rules `rules` (a rules file's text) every second.
    fn start(target: std::net::SocketAddr, rules: &str) -> Prometheus {
        let jobs = format!(
            "  - job_name: counterhal\n    static_configs:\n      - targets: ['{target}']\n"
        );
        Prometheus::start_with("counterhal", &jobs, rules)
    }

    /// Starts Prometheus on a free loopback port (its files in a directory named after
    /// `name`), with `jobs` (scrape_configs' items, as YAML) scraped every second and the
    /// recording rules `rules` evaluated every second.
    pub fn start_with(name: &str, jobs: &str, rules: &str) -> Prometheus {
        let dir = std::env::temp_dir().join(format!(
            "counterhal-prometheus-{name}-{}",
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
        let child = Command::new("prometheus")
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
        let (status, body) = get(self.address, path, None);
        match serde_json::from_str::<serde_json::Value>(&body) {
            Ok(json) if status == Some(200) => Ok(json["data"].clone()),
            Ok(json) => Err(format!("{path}: HTTP {status:?}, {}", json["error"])),
            Err(_) => Err(format!("{path}: HTTP {status:?}, {body:?}")),
        }
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

/// `promtool check metrics` on `text`: its status and what it said.
fn promtool_check(text: &str) -> (bool, String) {
    let mut child = Command::new("promtool")
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

/// Whether Debian's prometheus and promtool are here.
pub fn prometheus_installed() -> bool {
    ["prometheus", "promtool"].iter().all(|tool| {
        Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
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
    if !prometheus_installed() {
        skip!(
            Need::Tools,
            "Debian's prometheus (with promtool) is not installed"
        );
    }
    let root = match counterhal::cgroup_root() {
        Ok(root) => root,
        Err(e) => skip!(Need::System, "no cgroup mount to count in: {e}"),
    };
    let mut busy = TestCgroup::new(&root, "serve").expect("make a cgroup");
    busy.spin();
    let cpu = counterhal::online_cpus().last().unwrap_or(0);
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
    let (status, scrape) = get(exporter.address, "/metrics", None);
    assert_eq!(status, Some(200));
    let cgroup = format!("/{}", busy.name);
    assert!(scrape.contains(&format!("cgroup=\"{cgroup}\"")), "{scrape}");
    let (well_formed, said) = promtool_check(&scrape);
    assert!(
        well_formed && said.trim().is_empty(),
        "promtool check metrics: {said}"
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
    let (rules_well_formed, rules_said) = promtool_check_rules(&rules);
    assert!(
        rules_well_formed,
        "promtool check rules: {rules_said}\n{rules}"
    );
    let loop_pid = busy.busy_pids().next().expect("the busy loop");
    let clock = LoopClock::start(loop_pid);
    let prometheus = Prometheus::start(exporter.address, &rules);
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
        Some(counterhal::online_cpus().len() as f64),
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

/// promtool's verdict on a rules file's text, and what it said.
pub fn promtool_check_rules(text: &str) -> (bool, String) {
    // A file of its own for each call: the tests of this module run side by side.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "counterhal-rules-{}-{call}.yml",
        std::process::id()
    ));
    std::fs::write(&path, text).unwrap();
    let out = Command::new("promtool")
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
/// is no PromQL duration is bad input. Oracle: promtool check rules.
#[test]
fn rules_of_a_models_metrics_pass_promtool() {
    if !prometheus_installed() {
        skip!(
            Need::Tools,
            "Debian's prometheus (with promtool) is not installed"
        );
    }
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
    let (well_formed, said) = promtool_check_rules(&rules);
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
    let (well_formed, said) = promtool_check_rules(&skl);
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
    let (well_formed, said) = promtool_check_rules(&every);
    assert!(well_formed, "promtool check rules: {said}");
    let recorded = every.matches("record: ").count();
    let left: Vec<&str> = every
        .lines()
        .filter(|l| l.starts_with("# left out"))
        .collect();
    eprintln!("Sapphire Rapids: {recorded} rules, {} left out", left.len());
    assert!(left.is_empty(), "{left:#?}");
    assert_eq!(recorded, names.len(), "a rule for each metric");
    let bad = counterhal(&["serve", "--rules", "-M", "IPC", "--rules-window", "5x"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("not a Prometheus duration"),
        "{}",
        stderr(&bad)
    );
}
