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
//! CPU of the loop (`/proc/PID/schedstat`) over the same seconds. The rule's CPUs_utilized of
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

    /// The result of the instant query `promql`: each series' labels as text and its value.
    pub fn query(&self, promql: &str) -> Vec<(String, f64)> {
        self.query_at(promql, None)
    }

    /// [`query`](Prometheus::query) evaluated at `time` (Unix seconds; `None`: now).
    fn query_at(&self, promql: &str, time: Option<f64>) -> Vec<(String, f64)> {
        let time = time.map_or(String::new(), |t| format!("&time={t:.3}"));
        let path = format!("/api/v1/query?query={}{time}", encoded(promql));
        let (status, body) = get(self.address, &path, None);
        if status != Some(200) {
            return Vec::new();
        }
        let Ok(json) = serde_json::from_str::<serde_json::Value>(&body) else {
            return Vec::new();
        };
        json["data"]["result"]
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
            .unwrap_or_default()
    }
}

/// Seconds since the Unix epoch.
fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Nanoseconds process `pid` has run on a CPU (`/proc/PID/schedstat`'s first field).
fn on_cpu_ns(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
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
    let exporter = Exporter::start(&["-e", "task-clock,page-faults", "--cgroups", &pattern]);
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
    let prometheus = Prometheus::start(exporter.address, &rules);
    let promql = format!(
        "rate(counterhal_event_seconds_total{{event=\"task-clock\",cpu=\"{cpu}\",cgroup=\"{cgroup}\"}}[5s])"
    );
    let loop_pid = busy.busy_pids().next().expect("the busy loop");
    let start = Instant::now();
    // The loop's time on CPU each second: (Unix time, nanoseconds on CPU).
    let mut ran: Vec<(f64, u64)> = Vec::new();
    let mut found = None;
    let mut tries = Vec::new();
    // Five seconds of scrapes in the window, once Prometheus has started (a second or two
    // on an idle machine; twenty on two busy cores). A sample's timestamp is when its scrape
    // began, the counters are read up to a scrape's duration later (Prometheus' own
    // scrape_duration_seconds): at each end of the 5 s window the rate may be off by that
    // much, a share 2 x slowest / 5 of it, which the tolerance adds. A try that disagrees is
    // made again, until one agrees or 60 s have passed (every try is shown).
    while start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_secs(1));
        ran.push((unix_now(), on_cpu_ns(loop_pid)));
        let scraped_for = prometheus.query("count_over_time(up{job=\"counterhal\"}[10s])");
        let up = prometheus.query("up{job=\"counterhal\"}");
        if up.first().map(|(_, v)| *v) != Some(1.0)
            || scraped_for.first().is_none_or(|(_, n)| *n < 7.0)
            || ran.len() < 7
        {
            continue;
        }
        // The loop's CPU-seconds per second over the five seconds ending `back` samples ago.
        let own_at = |back: usize| {
            let (now, ran_now) = ran[ran.len() - 1 - back];
            let (then, ran_then) = ran[ran.len() - 6 - back];
            (ran_now - ran_then) as f64 / 1e9 / (now - then)
        };
        let (now, own) = (ran[ran.len() - 1].0, own_at(0));
        // How much the loop's share moved over the second a scrape may lag by: on a loaded
        // machine, that much more difference is the load's.
        let moved = (own - own_at(1)).abs();
        let slowest = prometheus
            .query_at(
                "max_over_time(scrape_duration_seconds{job=\"counterhal\"}[6s])",
                Some(now),
            )
            .first()
            .map_or(f64::INFINITY, |(_, d)| *d);
        if let Some((_, rate)) = prometheus.query_at(&promql, Some(now)).first() {
            tries.push(format!(
                "rate {rate:.4}, the loop {own:.4}, moved {moved:.4}, slowest scrape {slowest:.3} s"
            ));
            let lag = 2.0 * slowest / 5.0;
            if (*rate - own).abs() <= (0.1 + lag) * own.max(0.1) + moved {
                found = Some((*rate, own, moved, lag));
                break;
            }
        }
    }
    let log = std::fs::read_to_string(prometheus.dir.join("log")).unwrap_or_default();
    let (rate, own, moved, lag) = found.unwrap_or_else(|| {
        panic!(
            "{promql}: no try in 60 s agreed with the loop's schedstat:\n{}\nPrometheus \
             said: {log}",
            tries.join("\n")
        )
    });
    eprintln!(
        "rate() of the busy cgroup's task-clock on CPU {cpu}: {rate:.4} CPU-s/s; the loop \
         ran {own:.4} CPU-s/s by its schedstat (its share moved {moved:.4} in the second \
         before; the scrapes' lag {lag:.3} of the window; {} tries)",
        tries.len()
    );
    // Where the loop had its CPU to itself, that is one CPU-second per second.
    if own >= 0.95 {
        assert!(
            (0.9 - lag..=1.1 + lag).contains(&rate),
            "{promql} = {rate} (the scrapes' lag {lag} of the window)"
        );
    }
    // The host's facts the rules read (`#num_cpus_online`...) are scraped with the counts.
    let online = prometheus.query("counterhal_machine_fact{fact=\"num_cpus_online\"}");
    assert_eq!(
        online.first().map(|(_, v)| *v),
        Some(counterhal::online_cpus().len() as f64),
        "{online:?}"
    );
    // The other CPU, in the same cgroup, ran none of it.
    let elsewhere = prometheus.query(&format!(
        "sum(rate(counterhal_event_seconds_total{{event=\"task-clock\",cgroup=\"{cgroup}\",cpu!=\"{cpu}\"}}[5s]))"
    ));
    assert!(
        elsewhere.first().is_none_or(|(_, v)| *v < 0.05),
        "{elsewhere:?}"
    );
    // The recording rule's CPUs_utilized of the cgroup (over every CPU) beside stat's, which
    // counts the cgroup's task-clock over every CPU for the five seconds that end where the
    // rule is read. The rule's window lags stat's by the scrape and evaluation intervals (a
    // second or two), so the loop's own time on CPU (its schedstat, sampled each second) over
    // the two windows says how much the machine's load moved between them: that much more
    // difference is the load's, not the rule's.
    let recorded = format!("counterhal:CPUs_utilized:rate5s{{cgroup=\"{cgroup}\"}}");
    let sampler_pid = loop_pid;
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler_samples = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sampler = {
        let sampling = std::sync::Arc::clone(&sampling);
        let samples = std::sync::Arc::clone(&sampler_samples);
        std::thread::spawn(move || {
            while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                let sample = (unix_now(), on_cpu_ns(sampler_pid));
                samples
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .push(sample);
                std::thread::sleep(Duration::from_millis(250));
            }
        })
    };
    std::thread::sleep(Duration::from_secs(3));
    // Up to three tries: a try where Prometheus scraped less than every other second of the
    // rule's window (a machine too loaded to keep its intervals) or where the two disagree is
    // made again; one agreement passes, three disagreements fail with all three.
    let mut tries = Vec::new();
    let mut agreed = false;
    for _ in 0..3 {
        let began = unix_now();
        let stat = counterhal(&[
            "stat",
            "-a",
            "-e",
            "task-clock",
            "-G",
            &busy.name,
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
        let rule = prometheus
            .query_at(&recorded, Some(ended))
            .first()
            .map(|(_, value)| *value)
            .unwrap_or_else(|| panic!("{recorded}: no value at the end of stat's run"));
        let scrapes = prometheus
            .query_at("count_over_time(up{job=\"counterhal\"}[6s])", Some(ended))
            .first()
            .map_or(0.0, |(_, n)| *n);
        let samples = loop_samples(&sampler_samples);
        // The loop's CPU-seconds per second between two times, from the samples nearest them.
        let own = |from: f64, to: f64| {
            let near = |t: f64| {
                samples
                    .iter()
                    .min_by(|a, b| (a.0 - t).abs().total_cmp(&(b.0 - t).abs()))
                    .copied()
                    .unwrap_or((t, 0))
            };
            let ((t0, n0), (t1, n1)) = (near(from), near(to));
            (n1.saturating_sub(n0)) as f64 / 1e9 / (t1 - t0).max(0.25)
        };
        let moved = (own(began, ended) - own(ended - 7.0, ended - 1.0)).abs();
        let said = format!(
            "CPUs_utilized of the busy cgroup: {rule:.4} by the rule, {utilized:.4} by stat; \
             the loop's own share moved {moved:.4} between their windows; {scrapes} scrapes \
             in the rule's last 6 s"
        );
        eprintln!("{said}");
        tries.push(said);
        if scrapes >= 3.0 && (rule - utilized).abs() <= 0.15 * rule.max(utilized) + moved {
            agreed = true;
            break;
        }
    }
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    sampler.join().ok();
    assert!(
        agreed,
        "{recorded} disagrees with stat -a -G in three tries:\n{}",
        tries.join("\n")
    );
}

/// The loop's time on CPU as sampled so far: (Unix time, nanoseconds on CPU).
fn loop_samples(samples: &std::sync::Mutex<Vec<(f64, u64)>>) -> Vec<(f64, u64)> {
    samples
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone()
}

/// promtool's verdict on a rules file's text, and what it said.
fn promtool_check_rules(text: &str) -> (bool, String) {
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
