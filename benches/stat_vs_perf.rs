//! `counterhal stat -e page-faults,context-switches -- true` against the same `perf stat`,
//! measured in one run, interleaved: wall time (target: at most 0.5x perf's) and peak resident
//! memory (target: no larger). Prints the ratios; asserts nothing (these machines are noisy).
//!
//! Run: `cargo bench --bench stat_vs_perf` (perf from Debian's linux-perf must be installed).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROUNDS: usize = 40;

/// Runs `argv` once; returns wall time and the child's peak resident set (KiB, from wait4).
fn run_once(argv: &[&str]) -> Option<(Duration, u64)> {
    let start = Instant::now();
    let child = Command::new(argv[0])
        .args(&argv[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our unwaited child; `status` and `usage` are valid for writes.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let elapsed = start.elapsed();
    std::mem::forget(child); // already reaped by wait4
    (waited == pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0)
        .then_some((elapsed, usage.ru_maxrss as u64))
}

fn median(values: &mut [Duration]) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn main() {
    let ours = env!("CARGO_BIN_EXE_counterhal");
    let events = "page-faults,context-switches";
    let counterhal = [ours, "stat", "-e", events, "--", "true"];
    let perf = ["perf", "stat", "-e", events, "--", "true"];
    if run_once(&perf).is_none() {
        println!(
            "stat_vs_perf: SKIPPED: `perf stat` does not run here (install Debian's linux-perf)"
        );
        return;
    }
    if run_once(&counterhal).is_none() {
        println!("stat_vs_perf: SKIPPED: `counterhal stat` does not run here (no usable backend)");
        return;
    }
    let (mut our_times, mut perf_times) = (Vec::new(), Vec::new());
    let (mut our_rss, mut perf_rss) = (0, 0);
    for _ in 0..ROUNDS {
        if let Some((time, rss)) = run_once(&counterhal) {
            our_times.push(time);
            our_rss = our_rss.max(rss);
        }
        if let Some((time, rss)) = run_once(&perf) {
            perf_times.push(time);
            perf_rss = perf_rss.max(rss);
        }
    }
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
