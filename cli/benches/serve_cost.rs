//! What `counterhal serve` costs the host it runs on, beside node_exporter's perf collector
//! (`--collector.perf`) measured in the same run, interleaved, on the same events and CPUs:
//! the exporter's CPU time per scrape and its resident memory. Asserts nothing (these machines
//! are noisy); `cli/tests/serve_costs.rs` holds what can be held: one `read()` per group, no
//! allocation per counter, memory flat over thousands of scrapes.
//!
//! - `costs`: every online CPU, 8 software events, 8 of the 9 that node_exporter 1.5's perf
//!   collector opens on each CPU and reads at each scrape (hodgesds/perf-utils'
//!   `NewSoftwareProfiler`): cpu-clock, task-clock, page-faults, context-switches,
//!   cpu-migrations, minor-faults, major-faults, alignment-faults. A second counterhal row
//!   adds the ninth, emulation-faults, so that it opens exactly what node_exporter opens
//!   (node_exporter 1.5 has no option to choose them, and exports 5 of the 9, without their
//!   times). node_exporter opens its hardware and cache profilers too; where the CPU has no
//!   PMU (this project's machine) they fail to open and cost nothing at a scrape. Then the
//!   same 8 events in each of 100 empty cgroups made for the run (`--cgroups`), against the
//!   same node_exporter: it has no per-cgroup mode, so that ratio is against its per-CPU
//!   scrape, which counts a hundredth of the places.
//! - `busy`: the per-CPU comparison of `costs` with every online CPU kept busy by a `yes`
//!   writing to /dev/null (as a host's workload keeps them), in 10 rounds of 100 scrapes.
//! - `flat`: 100,000 scrapes of counterhal (8 events per CPU), its resident memory printed
//!   every 10,000.
//! - `cgroups` (run only when named): 1,000 cgroups in the BPF and the perf-event modes
//!   beside the BPF mode in 10, node_exporter and `perf stat --for-each-cgroup`, with what
//!   each adds to a context switch ([`cgroups`]).
//! - `pods` (run only when named): a node of 300 best-effort pods, this build beside the
//!   builds in `COUNTERHAL_SERVE_OTHERS` ([`pods`]).
//! - `nodes` (run only when named): the same node counted on 1, 2, 4, ... of the CPUs, and
//!   the line through those points taken to a 192-CPU node ([`pods::nodes`]).
//!
//! Beside the CPU time, each scrape's latency as the scraper sees it (from the request sent
//! to the whole answer read, a connection's set-up included for counterhal): the 99th
//! percentile and the worst of every scrape measured, with their ratios to node_exporter's.
//!
//! Both exporters are scraped over loopback HTTP/1.1 by this program, one scrape at a time,
//! taking turns scrape by scrape (so that a moment when the machine is busy with something
//! else falls on each one's scrapes alike, not on one exporter's round),
//! `Accept: text/plain` (the text format 0.0.4 from both), without compression (node_exporter
//! would gzip for Prometheus, which costs it more). Both keep the connection open between
//! scrapes, as they do for Prometheus (a counterhal before keep-alive closed every
//! connection after one answer, so each of its scrapes paid a connection and a thread). node_exporter runs with its
//! other collectors and its own go_/process_ metrics off (`--collector.disable-defaults
//! --web.disable-exporter-metrics`).
//!
//! CPU time is the exporter's cgroup's `usage_usec` (cgroup v2 `cpu.stat`: every thread,
//! those that have ended included, to the microsecond): each exporter is moved into a cgroup
//! of its own made for the run. Without a cgroup2 mount it is `utime + stime` from
//! `/proc/PID/stat`, in clock ticks (10 ms): enough scrapes make a tick small.
//! (`/proc/PID/schedstat` is one thread's, so it would miss the connection threads.)
//! Resident memory is `VmRSS` and `VmHWM` (the peak) from `/proc/PID/status`.
//!
//! Run: `cargo bench -p counterhal-cli --bench serve_cost [-- costs|busy|flat|cgroups|pods|nodes]` as root (counting
//! whole CPUs with perf_event_paranoid 2, and making cgroups), with Debian's
//! `prometheus-node-exporter` (or `COUNTERHAL_NODE_EXPORTER=PATH`) for `costs` and `busy`.
//! Every cgroup it makes is removed at the end, after a failure too; one left by a run that was killed is
//! removed by the next run.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use counterhal_conformance::fixtures::TestCgroup;

#[cfg(target_os = "linux")]
#[path = "serve_cost/cgroups.rs"]
mod cgroups;
#[cfg(target_os = "linux")]
#[path = "serve_cost/pods.rs"]
mod pods;

/// The 8 events: node_exporter 1.5's software profilers (hodgesds/perf-utils'
/// `NewSoftwareProfiler`, which its perf collector opens on each CPU) but emulation-faults.
const EVENTS: &str = "cpu-clock,task-clock,page-faults,context-switches,cpu-migrations,\
minor-faults,major-faults,alignment-faults";
/// Every software profiler node_exporter opens: the 8 and emulation-faults.
const NODE_EXPORTERS_EVENTS: &str = "cpu-clock,task-clock,page-faults,context-switches,\
cpu-migrations,minor-faults,major-faults,alignment-faults,emulation-faults";
/// A counterhal to compare with this build, in the per-CPU rows (a change's before).
const BEFORE_ENV: &str = "COUNTERHAL_SERVE_BEFORE";
/// Scrapes of each exporter before anything is measured.
const WARM_UP: usize = 300;
/// Interleaved rounds, and scrapes of each exporter in a round (fewer with every CPU busy,
/// where a scrape takes longer).
const ROUNDS: usize = 10;
const PER_ROUND: usize = 1_000;
const PER_ROUND_BUSY: usize = 100;
/// The cgroups of the second comparison.
const CGROUPS: usize = 100;
/// The scrapes of `flat`, and how often its memory is printed.
const FLAT_SCRAPES: usize = 100_000;
const FLAT_EVERY: usize = 10_000;

fn main() {
    let sections: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wants = |name: &str| sections.is_empty() || sections.iter().any(|s| s == name);
    if !cfg!(target_os = "linux") {
        println!(
            "serve_cost: SKIPPED: the comparison is with node_exporter's perf collector, on Linux"
        );
        return;
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        println!(
            "serve_cost: SKIPPED: run as root (both exporters count whole CPUs, which \
             perf_event_paranoid 2 keeps for root, and the run makes cgroups)"
        );
        return;
    }
    let accounting = Accounting::new();
    if wants("costs") {
        costs(&accounting, PER_ROUND);
    }
    if wants("busy") {
        let busy = Busy::start();
        println!(
            "busy: every CPU kept busy by {} `yes >/dev/null`",
            busy.0.len()
        );
        costs(&accounting, PER_ROUND_BUSY);
    }
    if wants("flat") {
        flat(&accounting);
    }
    if sections.iter().any(|s| s == "pods") {
        #[cfg(target_os = "linux")]
        pods::pods(&accounting);
    }
    if sections.iter().any(|s| s == "nodes") {
        #[cfg(target_os = "linux")]
        pods::nodes(&accounting);
    }
    if sections.iter().any(|s| s == "cgroups") {
        #[cfg(target_os = "linux")]
        cgroups::cgroups(&accounting);
        #[cfg(not(target_os = "linux"))]
        println!("cgroups: SKIPPED: cgroups and BPF are Linux's");
    }
}

/// Processes that keep every online CPU busy (`yes` into /dev/null), ended when dropped.
struct Busy(Vec<Child>);

impl Busy {
    fn start() -> Busy {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let spinners = (0..cpus).filter_map(|_| {
            Command::new("yes")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .ok()
        });
        Busy(spinners.collect())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        for child in &mut self.0 {
            child.kill().ok();
            child.wait().ok();
        }
    }
}

/// The comparisons with node_exporter, `per_round` scrapes a round: per CPU, then (at the
/// full count) in 100 cgroups.
fn costs(accounting: &Accounting, per_round: usize) {
    let Some(node_exporter) = node_exporter_program() else {
        println!(
            "serve_cost costs: SKIPPED: no node_exporter (install Debian's \
             prometheus-node-exporter, or name one in COUNTERHAL_NODE_EXPORTER)"
        );
        return;
    };
    let cpus = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .unwrap_or_default()
        .trim()
        .to_string();
    let theirs = Exporter::node_exporter(&node_exporter, &cpus, accounting);
    let ours = Exporter::counterhal("counterhal", &["-e", EVENTS], accounting);
    let ours_nine = Exporter::counterhal(
        "counterhal, node_exporter's 9",
        &["-e", NODE_EXPORTERS_EVENTS],
        accounting,
    );
    let (theirs, ours, ours_nine) = match (theirs, ours, ours_nine) {
        (Ok(theirs), Ok(ours), Ok(ours_nine)) => (theirs, ours, ours_nine),
        (theirs, ours, ours_nine) => {
            for why in [theirs.err(), ours.err(), ours_nine.err()]
                .into_iter()
                .flatten()
            {
                println!("serve_cost costs: SKIPPED: an exporter did not start: {why}");
            }
            return;
        }
    };
    // Another build of counterhal beside this one (a change's before and after).
    let before = std::env::var_os(BEFORE_ENV).map(|program| {
        Exporter::start(
            "counterhal before",
            Path::new(&program),
            &["-e", EVENTS],
            accounting,
        )
        .unwrap_or_else(|e| panic!("{BEFORE_ENV}: {e}"))
    });
    println!(
        "serve_cost: CPUs {cpus}, CPU time from {}; {ROUNDS} rounds of {per_round} \
         scrapes of each exporter, in turn, after {WARM_UP}",
        accounting.describe()
    );
    println!(
        "per CPU: counterhal -e {EVENTS}; node_exporter --collector.perf (those and \
         emulation-faults)"
    );
    match &before {
        Some(before) => {
            compare(
                &[&ours, before, &ours_nine, &theirs],
                3,
                Some(1.0),
                per_round,
            );
        }
        None => {
            compare(&[&ours, &ours_nine, &theirs], 2, Some(1.0), per_round);
        }
    }
    drop(before);
    if per_round != PER_ROUND {
        return;
    }

    let Ok(root) = counterhal::cgroups::root(&counterhal::system::System::host()) else {
        println!("in {CGROUPS} cgroups: SKIPPED: no cgroup mount");
        return;
    };
    let Some(parent) = TestCgroup::new(&root, "serve-cost") else {
        println!(
            "in {CGROUPS} cgroups: SKIPPED: cannot make a cgroup below {}",
            root.display()
        );
        return;
    };
    for i in 0..CGROUPS {
        if let Err(e) = std::fs::create_dir(parent.path.join(format!("g{i:03}"))) {
            println!("in {CGROUPS} cgroups: SKIPPED: cannot make cgroup {i}: {e}");
            return;
        }
    }
    let pattern = format!("^{}/", parent.name);
    let max = CGROUPS.to_string();
    let args = ["-e", EVENTS, "--cgroups", &pattern, "--max-cgroups", &max];
    let Ok(cgroups) = Exporter::counterhal("counterhal --cgroups", &args, accounting) else {
        println!("in {CGROUPS} cgroups: SKIPPED: counterhal serve --cgroups did not start");
        return;
    };
    let body = Scraper::new(cgroups.address).scrape();
    let followed = format!("counterhal_cgroups_followed {CGROUPS}\n");
    assert!(
        body.contains(&followed),
        "not every cgroup is followed: {body}"
    );
    if !body.contains("counterhal_open_errors_total 0\n") {
        println!("in {CGROUPS} cgroups: SKIPPED: this kernel does not count by cgroup here");
        return;
    }
    println!(
        "in {CGROUPS} cgroups (empty, made for the run) and system-wide: counterhal -e \
         {EVENTS} --cgroups '{pattern}'; node_exporter has no per-cgroup mode: its per-CPU \
         scrape above is the reference"
    );
    compare(&[&cgroups, &theirs], 1, None, PER_ROUND);
    drop(cgroups);
    drop(parent);
}

/// Scrapes `exporters` in rounds of `per_round` scrapes each, taking turns scrape by scrape,
/// and prints each one's CPU time per scrape, latency and memory, with its ratio to the last
/// one's (the baseline) and the ratio's target, where the baseline does the same work; the
/// first `ours` are counterhal's. Returns each one's mean CPU time per scrape (seconds) and
/// resident memory at the end (KiB).
fn compare(
    exporters: &[&Exporter],
    ours: usize,
    target: Option<f64>,
    per_round: usize,
) -> Vec<(f64, u64)> {
    let mut scrapers: Vec<Scraper> = exporters.iter().map(|e| Scraper::new(e.address)).collect();
    for scraper in &mut scrapers {
        for _ in 0..WARM_UP {
            scraper.scrape();
        }
    }
    let warm: Vec<Memory> = exporters.iter().map(|e| e.memory()).collect();
    let mut per_scrape = vec![Vec::new(); exporters.len()];
    let mut latencies = vec![Vec::new(); exporters.len()];
    let mut sizes = vec![0; exporters.len()];
    for _ in 0..ROUNDS {
        let before: Vec<Duration> = exporters.iter().map(|e| e.cpu()).collect();
        // One scrape of each in turn: what else runs on the machine at a moment (a build, a
        // burst of the other exporters' work) falls on every exporter's scrapes alike.
        for _ in 0..per_round {
            for (at, scraper) in scrapers.iter_mut().enumerate() {
                let sent = Instant::now();
                sizes[at] = scraper.scrape().len();
                latencies[at].push(sent.elapsed().as_secs_f64());
            }
        }
        for (at, exporter) in exporters.iter().enumerate() {
            let used = exporter.cpu().saturating_sub(before[at]);
            per_scrape[at].push(used.as_secs_f64() / per_round as f64);
        }
    }
    let end: Vec<Memory> = exporters.iter().map(|e| e.memory()).collect();
    let baseline = exporters.len() - 1;
    let total = |at: usize| per_scrape[at].iter().sum::<f64>() / ROUNDS as f64;
    for (at, exporter) in exporters.iter().enumerate() {
        let (low, high) = range(&per_scrape[at]);
        print!(
            "  {:<30} CPU per scrape {} (rounds {}-{}), {} bytes a scrape",
            exporter.name,
            micros(total(at)),
            micros(low),
            micros(high),
            sizes[at]
        );
        if at < ours {
            let ratios: Vec<f64> = per_scrape[at]
                .iter()
                .zip(&per_scrape[baseline])
                .map(|(o, t)| o / t)
                .collect();
            let (low, high) = range(&ratios);
            let target = target.map_or_else(
                || "no target: the two count different places".to_string(),
                |t| format!("target < {t}"),
            );
            println!(
                ": ratio {:.3} (rounds {low:.3}-{high:.3}; {target})",
                total(at) / total(baseline)
            );
        } else {
            println!();
        }
    }
    latency(exporters, ours, target.is_some(), &mut latencies);
    for (at, exporter) in exporters.iter().enumerate() {
        let r = |mine: u64, base: u64| {
            if at < ours {
                format!(" ({:.3}x)", mine as f64 / base.max(1) as f64)
            } else {
                String::new()
            }
        };
        println!(
            "  {:<30} VmRSS after warm-up {} KiB{}, at the end {} KiB{}; VmHWM {} KiB{}",
            exporter.name,
            warm[at].rss_kib,
            r(warm[at].rss_kib, warm[baseline].rss_kib),
            end[at].rss_kib,
            r(end[at].rss_kib, end[baseline].rss_kib),
            end[at].hwm_kib,
            r(end[at].hwm_kib, end[baseline].hwm_kib),
        );
    }
    (0..exporters.len())
        .map(|at| (total(at), end[at].rss_kib))
        .collect()
}

/// Prints each exporter's 99th percentile and worst of the scrape latencies measured, with
/// the ratios of the first `ours` to the last exporter's (the baseline), and their target
/// (below the baseline's) where `targeted`.
fn latency(exporters: &[&Exporter], ours: usize, targeted: bool, latencies: &mut [Vec<f64>]) {
    let figures: Vec<(f64, f64)> = latencies
        .iter_mut()
        .map(|seen| {
            seen.sort_by(f64::total_cmp);
            let p99 = seen[(seen.len() * 99).div_ceil(100).saturating_sub(1)];
            (p99, seen.last().copied().unwrap_or(0.0))
        })
        .collect();
    let (base_p99, base_worst) = figures[figures.len() - 1];
    for (at, exporter) in exporters.iter().enumerate() {
        let (p99, worst) = figures[at];
        print!(
            "  {:<30} latency of {} scrapes: p99 {:.3} ms, worst {:.3} ms",
            exporter.name,
            latencies[at].len(),
            p99 * 1e3,
            worst * 1e3
        );
        if at < ours {
            println!(
                ": ratios {:.3} and {:.3}{}",
                p99 / base_p99,
                worst / base_worst,
                if targeted { " (target < 1)" } else { "" }
            );
        } else {
            println!();
        }
    }
}

/// `flat`: counterhal's resident memory over 100,000 scrapes.
fn flat(accounting: &Accounting) {
    let Ok(ours) = Exporter::counterhal("counterhal", &["-e", EVENTS], accounting) else {
        println!("serve_cost flat: SKIPPED: counterhal serve did not start");
        return;
    };
    let mut scraper = Scraper::new(ours.address);
    for _ in 0..WARM_UP {
        scraper.scrape();
    }
    let warm = ours.memory();
    println!(
        "flat: counterhal -e {EVENTS}, {FLAT_SCRAPES} scrapes; after {WARM_UP}: VmRSS {} KiB, \
         VmHWM {} KiB",
        warm.rss_kib, warm.hwm_kib
    );
    let start = Instant::now();
    for done in 1..=FLAT_SCRAPES {
        scraper.scrape();
        if done % FLAT_EVERY == 0 {
            let now = ours.memory();
            println!(
                "  {done:>7} scrapes ({:>5.1} s): VmRSS {} KiB ({:+} KiB), VmHWM {} KiB",
                start.elapsed().as_secs_f64(),
                now.rss_kib,
                now.rss_kib as i64 - warm.rss_kib as i64,
                now.hwm_kib
            );
        }
    }
}

/// A running exporter, killed when dropped.
struct Exporter {
    name: &'static str,
    child: Child,
    address: SocketAddr,
    /// Its CPU-time cgroup, where it has one.
    cgroup: Option<PathBuf>,
    ticks_per_second: f64,
}

impl Exporter {
    /// `counterhal serve --listen 127.0.0.1:0 ARGS`, once it says where it serves.
    fn counterhal(
        name: &'static str,
        args: &[&str],
        accounting: &Accounting,
    ) -> Result<Exporter, String> {
        let program = Path::new(env!("CARGO_BIN_EXE_counterhal"));
        Exporter::start(name, program, args, accounting)
    }

    /// `PROGRAM serve --listen 127.0.0.1:0 ARGS` (a counterhal), once it says where it
    /// serves.
    fn start(
        name: &'static str,
        program: &Path,
        args: &[&str],
        accounting: &Accounting,
    ) -> Result<Exporter, String> {
        let mut child = Command::new(program)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let stderr = child.stderr.take().ok_or("no standard error")?;
        let mut lines = BufReader::new(stderr);
        let mut line = String::new();
        lines.read_line(&mut line).ok();
        let address = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|a| a.parse().ok());
        // The rest of standard error drains on a thread, so the exporter never blocks on it.
        std::thread::spawn(move || std::io::copy(&mut lines, &mut std::io::sink()));
        let Some(address) = address else {
            child.kill().ok();
            child.wait().ok();
            return Err(format!("counterhal serve said {line:?}"));
        };
        Ok(Exporter::placed(name, child, address, accounting))
    }

    /// node_exporter with its perf collector alone, on `cpus`, once it answers.
    fn node_exporter(
        program: &Path,
        cpus: &str,
        accounting: &Accounting,
    ) -> Result<Exporter, String> {
        let address = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?;
        let mut child = Command::new(program)
            .arg(format!("--web.listen-address={address}"))
            .args([
                "--collector.disable-defaults",
                "--collector.perf",
                "--web.disable-exporter-metrics",
                "--log.level=error",
            ])
            .arg(format!("--collector.perf.cpus={cpus}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())?;
        let waited = Instant::now();
        while TcpStream::connect(address).is_err() {
            if waited.elapsed() > Duration::from_secs(10)
                || child.try_wait().ok().flatten().is_some()
            {
                child.kill().ok();
                child.wait().ok();
                return Err("node_exporter did not start".to_string());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let exporter = Exporter::placed("node_exporter", child, address, accounting);
        let body = Scraper::new(address).scrape();
        if !body.contains("node_perf_page_faults_total{cpu=") {
            return Err(format!("node_exporter counts no page faults: {body}"));
        }
        Ok(exporter)
    }

    /// The exporter, moved into a CPU-time cgroup of its own where there is a cgroup2 mount.
    fn placed(
        name: &'static str,
        child: Child,
        address: SocketAddr,
        accounting: &Accounting,
    ) -> Exporter {
        // SAFETY: sysconf has no preconditions; it returns -1 for an unknown name.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        Exporter {
            name,
            cgroup: accounting.place(child.id()),
            child,
            address,
            ticks_per_second: if ticks > 0 { ticks as f64 } else { 100.0 },
        }
    }

    /// The CPU time it has used: its cgroup's, or its own from `/proc/PID/stat`.
    fn cpu(&self) -> Duration {
        if let Some(cgroup) = &self.cgroup {
            let stat = std::fs::read_to_string(cgroup.join("cpu.stat")).unwrap_or_default();
            let usec = stat
                .lines()
                .find_map(|l| l.strip_prefix("usage_usec "))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            return Duration::from_micros(usec);
        }
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<f64> = after_name
            .split_whitespace()
            .skip(11)
            .take(2)
            .filter_map(|f| f.parse().ok())
            .collect();
        Duration::from_secs_f64(fields.iter().sum::<f64>() / self.ticks_per_second)
    }

    /// Its resident memory now, and its peak.
    fn memory(&self) -> Memory {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        let kib = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap_or(0)
        };
        Memory {
            rss_kib: kib("VmRSS:"),
            hwm_kib: kib("VmHWM:"),
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
        if let Some(cgroup) = &self.cgroup {
            // The kernel takes a moment to let a cgroup go once its last task has ended.
            for _ in 0..50 {
                if std::fs::remove_dir(cgroup).is_ok() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// Resident memory, in KiB.
struct Memory {
    rss_kib: u64,
    hwm_kib: u64,
}

/// The cgroup the exporters' CPU time is read from: one made for the run below the cgroup2
/// mount, with a child per exporter (none without a cgroup2 mount).
struct Accounting {
    parent: Option<TestCgroup>,
}

impl Accounting {
    fn new() -> Accounting {
        let Some(mount) = cgroup2_mount() else {
            return Accounting { parent: None };
        };
        sweep(&mount);
        if let Ok(root) = counterhal::cgroups::root(&counterhal::system::System::host()) {
            sweep(&root);
        }
        Accounting {
            parent: TestCgroup::new(&mount, "serve-cpu"),
        }
    }

    /// Moves process `pid` into a new cgroup of its own; its directory.
    fn place(&self, pid: u32) -> Option<PathBuf> {
        let parent = self.parent.as_ref()?;
        let cgroup = parent.path.join(format!("exporter-{pid}"));
        std::fs::create_dir(&cgroup).ok()?;
        if std::fs::write(cgroup.join("cgroup.procs"), pid.to_string()).is_err() {
            std::fs::remove_dir(&cgroup).ok();
            return None;
        }
        Some(cgroup)
    }

    fn describe(&self) -> &'static str {
        match self.parent {
            Some(_) => "each exporter's cgroup (cgroup v2 cpu.stat usage_usec)",
            None => "/proc/PID/stat utime + stime (no cgroup2 mount)",
        }
    }
}

/// The cgroup2 mount, from `/proc/self/mountinfo`.
fn cgroup2_mount() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mountinfo.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let mount_point = before.split(' ').nth(4)?;
        (after.split(' ').next() == Some("cgroup2")).then(|| PathBuf::from(mount_point))
    })
}

/// Removes the cgroups a killed run of this benchmark left below `root`
/// (`counterhal-test-PID-serve-cost` and `-serve-cpu`, whose process is gone).
fn sweep(root: &Path) {
    for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix("counterhal-test-") else {
            continue;
        };
        let Some((pid, what)) = rest.split_once('-') else {
            continue;
        };
        let ours = matches!(what, "serve-cost" | "serve-cpu");
        if !ours || Path::new("/proc").join(pid).exists() {
            continue;
        }
        for child in std::fs::read_dir(entry.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if child.file_type().is_ok_and(|t| t.is_dir()) {
                std::fs::remove_dir(child.path()).ok();
            }
        }
        std::fs::remove_dir(entry.path()).ok();
    }
}

/// node_exporter: `COUNTERHAL_NODE_EXPORTER`, or Debian's `prometheus-node-exporter`, or
/// `node_exporter`, the first that answers `--version`.
fn node_exporter_program() -> Option<PathBuf> {
    let named = std::env::var_os("COUNTERHAL_NODE_EXPORTER").map(PathBuf::from);
    let candidates = named.into_iter().chain(
        ["prometheus-node-exporter", "node_exporter"]
            .into_iter()
            .map(PathBuf::from),
    );
    candidates.into_iter().find(|program| {
        Command::new(program)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// A scraper: `GET /metrics` over HTTP/1.1, keeping the connection where the exporter does.
struct Scraper {
    address: SocketAddr,
    connection: Option<BufReader<TcpStream>>,
}

impl Scraper {
    fn new(address: SocketAddr) -> Scraper {
        Scraper {
            address,
            connection: None,
        }
    }

    /// One scrape's body.
    ///
    /// # Panics
    /// When the exporter does not answer 200 (on a new connection).
    fn scrape(&mut self) -> String {
        // A kept connection may have been closed by the exporter since: then once more anew.
        if self.connection.is_some() {
            if let Ok(body) = self.exchange() {
                return body;
            }
            self.connection = None;
        }
        self.exchange()
            .unwrap_or_else(|e| panic!("a scrape of {} failed: {e}", self.address))
    }

    fn exchange(&mut self) -> Result<String, String> {
        if self.connection.is_none() {
            let stream = TcpStream::connect(self.address).map_err(|e| e.to_string())?;
            stream.set_read_timeout(Some(Duration::from_secs(30))).ok();
            self.connection = Some(BufReader::new(stream));
        }
        let connection = self.connection.as_mut().ok_or("no connection")?;
        connection
            .get_mut()
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: bench\r\nAccept: text/plain\r\n\r\n")
            .map_err(|e| e.to_string())?;
        let mut line = String::new();
        connection.read_line(&mut line).map_err(|e| e.to_string())?;
        if line.split(' ').nth(1) != Some("200") {
            return Err(format!("answered {line:?}"));
        }
        let (mut length, mut chunked, mut close) = (None, false, false);
        loop {
            line.clear();
            connection.read_line(&mut line).map_err(|e| e.to_string())?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let Some((name, value)) = header.split_once(':') else {
                continue;
            };
            let (name, value) = (name.to_ascii_lowercase(), value.trim().to_ascii_lowercase());
            match name.as_str() {
                "content-length" => length = value.parse::<usize>().ok(),
                "transfer-encoding" => chunked = value.contains("chunked"),
                "connection" => close = value == "close",
                _ => {}
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                connection.read_line(&mut line).map_err(|e| e.to_string())?;
                let size = usize::from_str_radix(line.trim(), 16).map_err(|e| e.to_string())?;
                let start = body.len();
                body.resize(start + size + 2, 0);
                connection
                    .read_exact(&mut body[start..])
                    .map_err(|e| e.to_string())?;
                body.truncate(start + size);
                if size == 0 {
                    break;
                }
            }
        } else if let Some(length) = length {
            body.resize(length, 0);
            connection
                .read_exact(&mut body)
                .map_err(|e| e.to_string())?;
        } else {
            connection
                .read_to_end(&mut body)
                .map_err(|e| e.to_string())?;
            close = true;
        }
        if close {
            self.connection = None;
        }
        String::from_utf8(body).map_err(|e| e.to_string())
    }
}

/// The lowest and highest of `values`.
fn range(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(low, high), &v| {
            (low.min(v), high.max(v))
        })
}

/// Seconds as microseconds, for print.
fn micros(seconds: f64) -> String {
    format!("{:.1} µs", seconds * 1e6)
}
