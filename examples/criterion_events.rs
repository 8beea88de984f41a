//! counterhal's criterion measurement: the page faults, and the task-clock time, of making a
//! vector of 33 MiB (above glibc's largest mmap threshold, so that each one is fresh pages
//! from the kernel: 8,448 faults); the same made on two threads the benchmark spawns, counted
//! with the threads the benchmarking thread creates (`inheriting`: 16,896 and a few); and the
//! `getppid` system calls of calling it once; each reported under the event's name.
//!
//! ```text
//! cargo run --release --features criterion --example criterion_events -- --bench
//! ```

use std::hint::black_box;

use counterhal::OpenOptions;
use counterhal::criterion::EventMeasurement;
use counterhal::prelude::*;
use criterion::Criterion;

fn measure(event: &str, options: &OpenOptions, name: &str, routine: fn()) {
    let measurement = open_default().and_then(|chosen| {
        EventMeasurement::open(&chosen, &[event], &Target::this_thread(), options)
    });
    let measurement = match measurement {
        Ok(measurement) => measurement,
        Err(e) => {
            eprintln!("{event}: not measured: {e}");
            return;
        }
    };
    let mut criterion = Criterion::default()
        .with_measurement(measurement)
        .configure_from_args();
    criterion.bench_function(&format!("{name} ({event})"), |b| b.iter(routine));
    criterion.final_summary();
}

/// A vector of 33 MiB, made and dropped.
fn vec_of_33_mib() {
    black_box(vec![1u8; 33 << 20]);
}

/// A vector of 33 MiB made and dropped on each of two threads, as a parallel benchmark's
/// workers would.
fn vec_of_33_mib_on_two_threads() {
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(vec_of_33_mib);
        }
    });
}

/// One `getppid` system call: exactly one entry of the tracepoint each time.
fn getppid() {
    black_box(std::os::unix::process::parent_id());
}

fn main() {
    let this_thread = OpenOptions::grouped();
    for event in ["page-faults", "task-clock"] {
        measure(event, &this_thread, "vec of 33 MiB", vec_of_33_mib);
    }
    measure(
        "page-faults",
        &OpenOptions::grouped().inheriting(true),
        "vec of 33 MiB on 2 threads, inherited",
        vec_of_33_mib_on_two_threads,
    );
    measure(
        "syscalls:sys_enter_getppid",
        &this_thread,
        "getppid",
        getppid,
    );
}
