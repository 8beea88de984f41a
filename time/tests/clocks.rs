//! The timers against the clocks the standard library keeps and against each other.

use std::time::{Duration, Instant};

use counterhal_time::{cycles, measure_tsc_hz, process_cpu_ns, real_ns, thread_cpu_ns};

/// Spins until this thread has used `ms` of CPU time.
fn spin_cpu(ms: u64) {
    let start = thread_cpu_ns();
    while thread_cpu_ns() - start < ms * 1_000_000 {
        std::hint::black_box(0u64);
    }
}

#[test]
fn real_time_runs_with_the_standard_clock() {
    let (t0, i0) = (real_ns(), Instant::now());
    std::thread::sleep(Duration::from_millis(20));
    let (i1, t1) = (Instant::now(), real_ns());
    let ours = t1 - t0;
    let std = u64::try_from((i1 - i0).as_nanos()).unwrap();
    // Ours was read outside the standard clock's two readings, so it spans at least as long.
    assert!(ours >= std, "real_ns advanced {ours} ns, Instant {std} ns");
    assert!(ours >= 20_000_000);
}

#[test]
fn thread_cpu_time_counts_work_not_sleep() {
    let before = thread_cpu_ns();
    spin_cpu(30);
    let worked = thread_cpu_ns() - before;
    assert!(worked >= 30_000_000, "{worked} ns");
    let before = thread_cpu_ns();
    std::thread::sleep(Duration::from_millis(50));
    let slept = thread_cpu_ns() - before;
    assert!(slept < 25_000_000, "a 50 ms sleep used {slept} ns of CPU");
}

#[test]
fn process_cpu_time_includes_other_threads() {
    let before = process_cpu_ns();
    let worker = std::thread::spawn(|| {
        let start = thread_cpu_ns();
        spin_cpu(30);
        thread_cpu_ns() - start
    });
    let worked = worker.join().unwrap();
    let process = process_cpu_ns() - before;
    assert!(
        process >= worked,
        "process {process} ns, worker {worked} ns"
    );
}

#[test]
fn the_tsc_is_a_clock_where_it_is_invariant() {
    let Some(c0) = cycles() else {
        assert!(!counterhal_time::tsc_is_invariant());
        counterhal_conformance::skip!(
            counterhal_conformance::skip::Need::Platform,
            "this CPU has no invariant time-stamp counter"
        );
    };
    std::thread::sleep(Duration::from_millis(10));
    let c1 = cycles().unwrap();
    // No invariant TSC ticks slower than 100 MHz.
    assert!(c1 - c0 >= 1_000_000, "{} cycles in 10 ms", c1 - c0);
    let hz = measure_tsc_hz(Duration::from_millis(20)).unwrap();
    assert!((100_000_000..20_000_000_000).contains(&hz), "{hz} Hz");
}
