//! `counterhal stat -e page-faults,context-switches -- true` against the same `perf stat`,
//! measured in one run, interleaved: wall time (target: at most 0.5x perf's) and peak resident
//! memory (target: no larger). Prints the ratios; asserts nothing (these machines are noisy).
//!
//! Run: `cargo bench --bench stat_vs_perf` (perf from Debian's linux-perf must be installed).
//!
//! Peak memory comes from `getrusage(RUSAGE_CHILDREN)`, which reports the largest child a
//! process has waited for; so for each tool the benchmark runs itself as a small parent of
//! that tool alone (`COUNTERHAL_BENCH_PEAK_RSS=1`) and reads the figure it prints.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROUNDS: usize = 40;
const PEAK_RSS_MODE: &str = "COUNTERHAL_BENCH_PEAK_RSS";

/// Runs `argv` once, quietly; returns its wall time, or `None` when it failed.
fn time_once(argv: &[&str]) -> Option<Duration> {
    let start = Instant::now();
    let status = Command::new(argv[0])
        .args(&argv[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    let elapsed = start.elapsed();
    status.success().then_some(elapsed)
}

/// The peak resident set of `argv` in KiB, measured by a child copy of this benchmark.
fn peak_rss_kib(argv: &[&str]) -> Option<u64> {
    let output = Command::new(std::env::current_exe().ok()?)
        .env(PEAK_RSS_MODE, "1")
        .args(argv)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    String::from_utf8_lossy(&output.stdout).trim().parse().ok()
}

/// In the peak-RSS mode: run the command given as arguments, print the child's peak RSS.
fn report_peak_rss() {
    use nix::sys::resource::{UsageWho, getrusage};
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ran = Command::new(&args[0])
        .args(&args[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if let (true, Ok(usage)) = (ran, getrusage(UsageWho::RUSAGE_CHILDREN)) {
        println!("{}", usage.max_rss());
    }
}

fn median(values: &mut [Duration]) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn main() {
    if std::env::var_os(PEAK_RSS_MODE).is_some() {
        report_peak_rss();
        return;
    }
    let ours = env!("CARGO_BIN_EXE_counterhal");
    let events = "page-faults,context-switches";
    let counterhal = [ours, "stat", "-e", events, "--", "true"];
    let perf = ["perf", "stat", "-e", events, "--", "true"];
    if time_once(&perf).is_none() {
        println!(
            "stat_vs_perf: SKIPPED: `perf stat` does not run here (install Debian's linux-perf)"
        );
        return;
    }
    if time_once(&counterhal).is_none() {
        println!("stat_vs_perf: SKIPPED: `counterhal stat` does not run here (no usable backend)");
        return;
    }
    let (mut our_times, mut perf_times) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        our_times.extend(time_once(&counterhal));
        perf_times.extend(time_once(&perf));
    }
    let peak = |argv: &[&str]| (0..5).filter_map(|_| peak_rss_kib(argv)).max().unwrap_or(0);
    let (our_rss, perf_rss) = (peak(&counterhal), peak(&perf));
    let ours = median(&mut our_times);
    let theirs = median(&mut perf_times);
    let time_ratio = ours.as_secs_f64() / theirs.as_secs_f64();
    let memory_ratio = our_rss as f64 / perf_rss.max(1) as f64;
    println!("stat_vs_perf: {ROUNDS} interleaved rounds, `stat -e {events} -- true`");
    println!(
        "  wall time median: counterhal {ours:?}, perf {theirs:?}: ratio {time_ratio:.3} (target <= 0.5)"
    );
    println!(
        "  peak RSS: counterhal {our_rss} KiB, perf {perf_rss} KiB: ratio {memory_ratio:.3} (target <= 1.0)"
    );
}
