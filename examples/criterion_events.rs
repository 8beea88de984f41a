//! counterhal's criterion measurement: the page faults, and the task-clock time, of making a
//! vector of 33 MiB (above glibc's largest mmap threshold, so that each one is fresh pages
//! from the kernel: 8,448 faults), and the `getppid` system calls of calling it once, each
//! reported under the event's name.
//!
//! ```text
//! cargo run --release --features criterion --example criterion_events -- --bench
//! ```

use std::hint::black_box;

use counterhal::criterion::EventMeasurement;
use criterion::Criterion;

fn measure(event: &str, name: &str, routine: fn()) {
    let measurement = match EventMeasurement::new(event) {
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

/// One `getppid` system call: exactly one entry of the tracepoint each time.
fn getppid() {
    black_box(std::os::unix::process::parent_id());
}

fn main() {
    for event in ["page-faults", "task-clock"] {
        measure(event, "vec of 33 MiB", vec_of_33_mib);
    }
    measure("syscalls:sys_enter_getppid", "getppid", getppid);
}
