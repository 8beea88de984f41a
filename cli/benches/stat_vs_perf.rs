//! counterhal's start-up against perf's, measured in one run, interleaved, for the three paths
//! the start-up targets name (wall time median and peak resident memory, as ratios; asserts
//! nothing: these machines are noisy, and the instruction-count guard, scripts/
//! instruction-guard, is what fails a regression):
//! - `stat -e page-faults,context-switches -- true` against the same `perf stat` (target: at
//!   most 0.3x perf's wall time and peak memory);
//! - `stat -M Frontend_Bound --cpu-model spr -- true` (one of the model's metrics, its
//!   events resolved on Sapphire Rapids, then opened: on a machine without that PMU the metric
//!   is refused at its first open, after the start-up measured) against `perf stat -e page-faults,context-switches --
//!   true`, since perf takes no CPU model and can open no metric without a PMU (target: 0.5x);
//! - `list --cpu-model spr` against `perf list` (target: at most perf list's time).
//!
//! And, first, `stat -- true` (perf's default events) against `perf stat -- true` (issue 83's
//! target: at most 0.2x).
//!
//! Then the floors under the stat pairs, timed the same way against both `perf stat`s:
//! `counterhal --version` (this binary started and ended, nothing counted) and
//! `benches/stat_floor.c`, built with `cc` (a program that does only what counting a command
//! takes: fork it held before exec, open the two counters on it, release, wait, read), and
//! `benches/floor/sys.rs`, the same program in Rust built with `rustc -O` (what any dynamically
//! linked Rust binary pays to start, with the standard library's runtime). What `stat` costs
//! above them is counterhal's own.
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

/// Runs `argv` once, quietly; returns its wall time, or `None` when it could not start (a
/// non-zero exit counts: `stat -M` of a metric whose PMU is absent ends in an error after the
/// start-up being measured).
fn time_once(argv: &[&str]) -> Option<Duration> {
    let start = Instant::now();
    let status = Command::new(argv[0])
        .args(&argv[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    let elapsed = start.elapsed();
    let _ = status;
    Some(elapsed)
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
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ran = Command::new(&args[0])
        .args(&args[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: `usage` is a writable rusage that getrusage fills when it returns 0.
    let got = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr()) } == 0;
    if ran && got {
        // SAFETY: getrusage returned 0, so it wrote the whole struct.
        let usage = unsafe { usage.assume_init() };
        println!("{}", usage.ru_maxrss);
    }
}

fn median(values: &mut [Duration]) -> Duration {
    values.sort();
    values[values.len() / 2]
}

/// One comparison: our command, perf's, what is measured and the target ratio.
struct Pair<'a> {
    what: &'a str,
    ours: Vec<&'a str>,
    perf: Vec<&'a str>,
    time_target: f64,
    memory_target: Option<f64>,
}

fn compare(pair: &Pair<'_>) {
    let (mut our_times, mut perf_times) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        our_times.extend(time_once(&pair.ours));
        perf_times.extend(time_once(&pair.perf));
    }
    let peak = |argv: &[&str]| (0..5).filter_map(|_| peak_rss_kib(argv)).max().unwrap_or(0);
    let (our_rss, perf_rss) = (peak(&pair.ours), peak(&pair.perf));
    let ours = median(&mut our_times);
    let theirs = median(&mut perf_times);
    let time_ratio = ours.as_secs_f64() / theirs.as_secs_f64();
    let memory_ratio = our_rss as f64 / perf_rss.max(1) as f64;
    println!("{}", pair.what);
    println!(
        "  wall time median: counterhal {ours:?}, perf {theirs:?}: ratio {time_ratio:.3} (target <= {})",
        pair.time_target
    );
    let target = pair
        .memory_target
        .map_or_else(|| "no target".to_string(), |t| format!("target <= {t}"));
    println!(
        "  peak RSS: counterhal {our_rss} KiB, perf {perf_rss} KiB: ratio {memory_ratio:.3} ({target})"
    );
}

fn main() {
    if std::env::var_os(PEAK_RSS_MODE).is_some() {
        report_peak_rss();
        return;
    }
    let ours = env!("CARGO_BIN_EXE_counterhal");
    let events = "page-faults,context-switches";
    let perf_stat = vec!["perf", "stat", "-e", events, "--", "true"];
    let ran = Command::new("perf")
        .args(&perf_stat[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ran {
        println!(
            "stat_vs_perf: SKIPPED: `perf stat` does not run here (install Debian's linux-perf)"
        );
        return;
    }
    println!("stat_vs_perf: {ROUNDS} interleaved rounds each");
    let perf_default = vec!["perf", "stat", "--", "true"];
    let pairs = [
        Pair {
            what: "`stat -- true` (perf's default events; perf: `perf stat -- true`)",
            ours: vec![ours, "stat", "--", "true"],
            perf: perf_default.clone(),
            time_target: 0.2,
            memory_target: None,
        },
        Pair {
            what: "`stat -e page-faults,context-switches -- true`",
            ours: vec![ours, "stat", "-e", events, "--", "true"],
            perf: perf_stat.clone(),
            time_target: 0.3,
            memory_target: Some(0.3),
        },
        Pair {
            what: "`stat -M Frontend_Bound --cpu-model spr -- true` (perf: the stat above)",
            ours: vec![
                ours,
                "stat",
                "-M",
                "Frontend_Bound",
                "--cpu-model",
                "spr",
                "--",
                "true",
            ],
            perf: perf_stat.clone(),
            time_target: 0.5,
            memory_target: None,
        },
        Pair {
            what: "`list --cpu-model spr` (perf: `perf list`)",
            ours: vec![ours, "list", "--cpu-model", "spr"],
            perf: vec!["perf", "list"],
            time_target: 1.0,
            memory_target: None,
        },
    ];
    for pair in &pairs {
        compare(pair);
    }
    floors(ours, &[&perf_stat, &perf_default]);
}

/// The floors under `stat -e page-faults,context-switches -- true` and `stat -- true`, each
/// timed interleaved with each perf command of `baselines` and given as a ratio to each.
fn floors(ours: &str, baselines: &[&[&str]]) {
    let floor = std::env::temp_dir().join(format!("counterhal-stat-floor-{}", std::process::id()));
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/stat_floor.c");
    let built = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&floor)
        .arg(source)
        .status()
        .is_ok_and(|s| s.success());
    let floor_path = floor.to_string_lossy().into_owned();
    let rust_floor =
        std::env::temp_dir().join(format!("counterhal-stat-floor-rs-{}", std::process::id()));
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let rust_source = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/floor/sys.rs");
    let rust_built = Command::new(rustc)
        .args(["-O", "--edition", "2024", "-o"])
        .arg(&rust_floor)
        .arg(rust_source)
        .status()
        .is_ok_and(|s| s.success());
    let rust_floor_path = rust_floor.to_string_lossy().into_owned();
    let mut rows = vec![
        (
            "`true` alone (the command counted, nothing counting it)",
            vec!["true"],
        ),
        ("`counterhal --version`", vec![ours, "--version"]),
    ];
    if built {
        rows.push((
            "stat_floor.c (fork, 2 opens, exec, wait, read)",
            vec![&floor_path, "true"],
        ));
    } else {
        println!("floors: stat_floor.c not built (no cc): its row is left out");
    }
    if rust_built {
        rows.push((
            "floor/sys.rs (the same in Rust: std's runtime, dynamically linked)",
            vec![&rust_floor_path, "true"],
        ));
    } else {
        println!("floors: floor/sys.rs not built (no rustc): its row is left out");
    }
    let against = baselines
        .iter()
        .map(|argv| format!("`{}`", argv.join(" ")))
        .collect::<Vec<_>>()
        .join(", ");
    println!("floors under the stat pairs (ratios to {against}):");
    for (what, argv) in rows {
        let mut times = Vec::new();
        let mut perf_times = vec![Vec::new(); baselines.len()];
        for _ in 0..ROUNDS {
            times.extend(time_once(&argv));
            for (baseline, timed) in baselines.iter().zip(&mut perf_times) {
                timed.extend(time_once(baseline));
            }
        }
        let rss = (0..5)
            .filter_map(|_| peak_rss_kib(&argv))
            .max()
            .unwrap_or(0);
        let perf_rss = (0..5)
            .filter_map(|_| peak_rss_kib(baselines[0]))
            .max()
            .unwrap_or(1);
        let ours = median(&mut times);
        let ratios = perf_times
            .iter_mut()
            .map(|timed| format!("{:.3}", ours.as_secs_f64() / median(timed).as_secs_f64()))
            .collect::<Vec<_>>()
            .join(", ");
        println!(
            "  {what}: {ours:?}, ratios {ratios}; peak RSS {rss} KiB, ratio {:.3}",
            rss as f64 / perf_rss.max(1) as f64
        );
    }
    let _ = std::fs::remove_file(&floor);
    let _ = std::fs::remove_file(&rust_floor);
}
