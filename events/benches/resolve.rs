//! Prints how long loading and validating the whole shipped database takes (target < 2 ms)
//! and how long resolving one event string takes (target < 2 us). Printed, not asserted.

use std::hint::black_box;
use std::time::{Duration, Instant};

use counterhal_events::Database;
use counterhal_hal::BackendKind;

fn per_iteration(iterations: u32, mut work: impl FnMut()) -> Duration {
    work();
    let start = Instant::now();
    for _ in 0..iterations {
        work();
    }
    start.elapsed() / iterations
}

fn main() {
    let load = per_iteration(50, || {
        black_box(Database::parse_shipped().expect("shipped database loads"));
    });
    let database = Database::shipped().expect("shipped database loads");
    let models = database.models().count();
    let events: usize = database.models().map(|m| m.events().len()).sum();
    println!(
        "load+validate shipped database ({models} models, {events} events): {load:?} per load (target < 2 ms)"
    );
    for (cpu, event, backend) in [
        ("skl", "INST_RETIRED:ANY_P:u", BackendKind::Msr),
        ("p6", "L2_RQSTS:MODIFIED:c=2", BackendKind::Pctr),
        ("amd64_fam19h_zen3", "PAPI_L1_ICM", BackendKind::Linux),
        ("skl", "cycles:u", BackendKind::Linux),
    ] {
        let resolve = per_iteration(20_000, || {
            black_box(
                database
                    .resolve(Some(cpu), black_box(event), backend)
                    .expect("resolves"),
            );
        });
        println!("resolve `{event}` on {cpu} for {backend}: {resolve:?} per call (target < 2 us)");
    }
}
