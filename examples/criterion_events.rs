//! counterhal's criterion measurement: the page faults, and the task-clock time, of making a
//! vector of 33 MiB (above glibc's largest mmap threshold, so that each one is fresh pages
//! from the kernel: 8,448 faults), each reported under the event's name.
//!
//! ```text
//! cargo run --release --features criterion --example criterion_events -- --bench
//! ```

use std::hint::black_box;

use counterhal::criterion::EventMeasurement;
use criterion::Criterion;

fn measure(event: &str) {
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
    criterion.bench_function(&format!("vec of 33 MiB ({event})"), |b| {
        b.iter(|| black_box(vec![1u8; 33 << 20]))
    });
    criterion.final_summary();
}

fn main() {
    for event in ["page-faults", "task-clock"] {
        measure(event);
    }
}
