//! How the cost grows with the work asked for, against perf in the same run: `stat -e` with
//! 1, 10, 100 and 1,000 events named (one tracepoint, `syscalls:sys_enter_getpid`, repeated:
//! opening it costs the kernel the same each time, where a thousand different tracepoints
//! cost it seconds each to register, for perf as for us; `page-faults` where tracefs is not
//! readable), and `list --backend msr --cpu-model M` over models of growing size.
//!
//! For each size it prints both tools' median wall time, their ratio, and each tool's time per
//! added event against the smallest run; a growth worse than linear shows as a time per event
//! that rises with the size. Asserts nothing (these machines are noisy); the instruction-count
//! guard (`scripts/instruction-guard`) holds the 100-event start-up to a budget.
//!
//! Run: `cargo bench -p counterhal-cli --bench growth` (perf from Debian's linux-perf).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROUNDS: usize = 15;

/// Runs `argv` once, quietly; its wall time, or `None` when it failed.
fn time_once(argv: &[String]) -> Option<Duration> {
    let start = Instant::now();
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    let elapsed = start.elapsed();
    status.success().then_some(elapsed)
}

/// The median wall time of `argv` over `ROUNDS` runs, interleaved by the caller's order.
fn median(values: &mut [Duration]) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_string()).collect()
}

fn main() {
    let ours = env!("CARGO_BIN_EXE_counterhal");
    let tracepoint = "syscalls:sys_enter_getpid";
    let probe = |event: &str| {
        time_once(&strings(&["perf", "stat", "-e", event, "--", "true"])).is_some()
            && time_once(&strings(&[ours, "stat", "-e", event, "--", "true"])).is_some()
    };
    let event = if probe(tracepoint) {
        tracepoint
    } else if probe("page-faults") {
        println!(
            "growth: {tracepoint} cannot be opened here (root and tracefs): page-faults instead"
        );
        "page-faults"
    } else {
        println!("growth: SKIPPED: `perf stat` or `counterhal stat` does not run here");
        return;
    };
    println!("growth: `stat -e {event} x N -- true`, {ROUNDS} interleaved rounds each");
    println!("       N   counterhal         perf  ratio   counterhal/event  perf/event (over N=1)");
    let mut first: Option<(Duration, Duration)> = None;
    for n in [1usize, 10, 100, 1000] {
        let events = vec![event; n].join(",");
        let counterhal = strings(&[ours, "stat", "-e", &events, "--", "true"]);
        let perf = strings(&["perf", "stat", "-e", &events, "--", "true"]);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            a.extend(time_once(&counterhal));
            b.extend(time_once(&perf));
        }
        if a.is_empty() || b.is_empty() {
            println!("{n:>8}   (a tool failed at this size)");
            continue;
        }
        let (ours_t, perf_t) = (median(&mut a), median(&mut b));
        let per_event = |t: Duration, base: Duration| {
            if n == 1 {
                "-".to_string()
            } else {
                format!(
                    "{:.1} us",
                    (t.as_secs_f64() - base.as_secs_f64()) * 1e6 / (n - 1) as f64
                )
            }
        };
        let (base_ours, base_perf) = *first.get_or_insert((ours_t, perf_t));
        println!(
            "{n:>8} {:>10.2} ms {:>9.2} ms {:>6.3}   {:>16}  {:>10}",
            ours_t.as_secs_f64() * 1e3,
            perf_t.as_secs_f64() * 1e3,
            ours_t.as_secs_f64() / perf_t.as_secs_f64(),
            per_event(ours_t, base_ours),
            per_event(perf_t, base_perf),
        );
    }

    // `list` over models of growing size: time per listed line, against `perf list` (which
    // lists this machine's events only: the baseline of one listing). The msr backend lists
    // the model's events alone (over its model of the device), without this machine's
    // thousands of tracepoints, so the lines grow with the model.
    let perf_list = strings(&["perf", "list"]);
    let mut perf_times: Vec<Duration> = (0..ROUNDS).filter_map(|_| time_once(&perf_list)).collect();
    let perf_list_time = (!perf_times.is_empty()).then(|| median(&mut perf_times));
    println!("growth: `list --backend msr --cpu-model M`, {ROUNDS} rounds each");
    println!("  model        lines   counterhal   per line   ratio to perf list");
    for model in ["p6", "core", "spr", "skl"] {
        let argv = strings(&[ours, "list", "--backend", "msr", "--cpu-model", model]);
        let lines = Command::new(ours)
            .args(["list", "--backend", "msr", "--cpu-model", model])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
            .unwrap_or(0);
        let mut times: Vec<Duration> = (0..ROUNDS).filter_map(|_| time_once(&argv)).collect();
        if times.is_empty() || lines == 0 {
            println!("  {model:<10} (list failed)");
            continue;
        }
        let t = median(&mut times);
        let ratio = perf_list_time.map_or("-".to_string(), |p| {
            format!("{:.3}", t.as_secs_f64() / p.as_secs_f64())
        });
        println!(
            "  {model:<10} {lines:>6} {:>10.2} ms {:>8.2} us   {ratio}",
            t.as_secs_f64() * 1e3,
            t.as_secs_f64() * 1e6 / lines as f64
        );
    }
}
