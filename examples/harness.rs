//! A benchmark harness on counterhal's face: a closure measured N times, with the mean, the
//! standard deviation, the minimum and the maximum of each event over the runs.
//!
//! The closure here touches K fresh pages of memory, so that its page faults are known (at
//! least K a run); the kernel's own count of this thread's minor faults (what
//! `getrusage(RUSAGE_THREAD)` reports as `ru_minflt`, which `counterhal::system::System` reads
//! from `/proc/thread-self/stat`) is printed beside it. A reset before each run starts the run's counts and their times from
//! zero, so each run's scaled value is that run's alone; a second set counting every run
//! without a reset gives the totals, which the runs' sums are checked against. Events this
//! machine cannot count (`instructions` in a VM without a
//! PMU) are left out with the reason, on standard error.
//!
//! ```text
//! cargo run --example harness -- --runs 20 --pages 512
//! ```

use std::hint::black_box;
use std::process::ExitCode;

use counterhal::prelude::*;

/// The events measured, the first three software events every Linux kernel has.
const EVENTS: [&str; 4] = [
    "task-clock",
    "page-faults",
    "context-switches",
    "instructions",
];
/// A page's size on the machines counterhal runs on (x86-64, aarch64 with 4 KiB pages).
const PAGE: usize = 4096;
/// The memory each run allocates, at least: above glibc's largest mmap threshold (32 MiB),
/// so that every run gets fresh pages from the kernel rather than reused ones.
const FRESH: usize = 33 << 20;

/// Mean, standard deviation, minimum and maximum of `values`.
fn spread(values: &[f64]) -> (f64, f64, f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, variance.sqrt(), min, max)
}

/// This thread's minor faults so far, as the kernel accounts them (`thread-self/stat` under
/// procfs, field 10; `getrusage(RUSAGE_THREAD)`'s `ru_minflt`), read through the library's
/// one reader of /proc and /sys; `None` off Linux.
fn minor_faults() -> Option<u64> {
    counterhal::system::System::host()
        .thread_self_stat()
        .map(|stat| stat.minor_faults)
}

/// What [`measure`] gathers: each event's value per run (scaled where it was time-shared,
/// `None` where it never ran), and the kernel's minor faults per run.
struct Measured {
    values: Vec<Vec<Option<u64>>>,
    faults: Vec<u64>,
}

/// Runs `work` `runs` times under `set`, reset before each run, with `whole` counting
/// every run, never reset.
fn measure(
    set: &mut EventSet<AnyGroup>,
    whole: &mut EventSet<AnyGroup>,
    runs: usize,
    mut work: impl FnMut(),
) -> Result<Measured, counterhal::Error> {
    let mut readings = vec![Reading::default(); set.len()];
    let mut values = vec![Vec::with_capacity(runs); set.len()];
    let mut faults = Vec::with_capacity(runs);
    for _ in 0..runs {
        whole.enable()?;
        set.reset()?;
        let before = minor_faults();
        set.enable()?;
        work();
        set.disable()?;
        whole.disable()?;
        let after = minor_faults();
        set.read(&mut readings)?;
        for (column, reading) in values.iter_mut().zip(&readings) {
            column.push(reading.scaled());
        }
        if let (Some(before), Some(after)) = (before, after) {
            faults.push(after - before);
        }
    }
    Ok(Measured { values, faults })
}

fn usage() -> ExitCode {
    eprintln!("usage: harness [--runs N] [--pages K]   (N >= 1 runs of touching K fresh pages)");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let (mut runs, mut pages) = (10usize, 256usize);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().and_then(|v| v.parse::<usize>().ok());
        match (arg.as_str(), value) {
            ("--runs", Some(n)) if n >= 1 => runs = n,
            ("--pages", Some(k)) => pages = k,
            _ => return usage(),
        }
    }
    let backend = match open_default() {
        Ok(backend) => backend,
        Err(e) => {
            eprintln!("no counter backend here: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The default options (one group, every domain this caller may count): the builder tries
    // each event beside those added before and leaves out, with the reason, one that cannot
    // count here or cannot join them (too few counters), so it never takes them down.
    let mut builder = backend.builder(Target::this_thread(), Default::default());
    for name in EVENTS {
        if let Err(e) = builder.add(name) {
            eprintln!("{name}: left out: {e}");
        }
    }
    let (mut set, mut whole) = match builder.open().and_then(|set| Ok((set, builder.open()?))) {
        Ok(sets) => sets,
        Err(e) => {
            eprintln!("nothing to count: {e}");
            return ExitCode::FAILURE;
        }
    };
    let touch = || {
        let mut memory = vec![0u8; FRESH.max(pages * PAGE)];
        for page in 0..pages {
            memory[page * PAGE] = 1;
        }
        black_box(&memory);
    };
    let Measured { values, faults } = match measure(&mut set, &mut whole, runs, touch) {
        Ok(measured) => measured,
        Err(e) => {
            eprintln!("measuring failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "# {runs} runs of touching {pages} fresh pages, on {}",
        backend.label()
    );
    println!(
        "{:<18} {:>14} {:>14} {:>14} {:>14}",
        "event", "mean", "stddev", "min", "max"
    );
    let row = |name: &str, column: &[f64]| {
        let (mean, stddev, min, max) = spread(column);
        println!("{name:<18} {mean:>14.1} {stddev:>14.1} {min:>14.0} {max:>14.0}");
    };
    for (event, column) in set.events().iter().zip(&values) {
        let counted: Vec<f64> = column.iter().flatten().map(|&v| v as f64).collect();
        if counted.is_empty() {
            println!("{:<18} not counted (it never ran)", event.name);
        } else {
            row(&event.name, &counted);
        }
    }
    // The runs' sums beside the totals of the set that counted every run without a reset.
    let totals = match whole.read_to_vec() {
        Ok(totals) => totals,
        Err(e) => {
            eprintln!("reading the totals failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    for ((event, column), total) in set.events().iter().zip(&values).zip(totals) {
        let sum: u64 = column.iter().flatten().sum();
        println!("# {}: sum of runs {sum}, total {}", event.name, total.value);
    }
    if faults.len() == runs {
        let faults: Vec<f64> = faults.iter().map(|&f| f as f64).collect();
        row("minflt (kernel)", &faults);
    }
    ExitCode::SUCCESS
}
