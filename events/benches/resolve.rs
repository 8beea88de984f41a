//! Prints how long loading and validating the whole shipped database takes (target < 2 ms)
//! and how long resolving one event string takes (target < 2 us), plus what a command's
//! start-up pays: detect this machine's CPU and resolve `page-faults` on the detected model,
//! from a cold (freshly parsed) database. Printed, not asserted.

use std::hint::black_box;
use std::time::{Duration, Instant};

use counterhal_events::{CpuIdentity, Database, Vendor};
use counterhal_hal::{Accepts, Domain, Family};

/// A backend that programs perf attrs first (as the Linux backend does).
const PERF: Accepts = Accepts::new(&[Family::Perf, Family::Evtsel], Domain::ALL, Domain::ALL);
/// A backend that programs x86 counters itself.
const X86: Accepts = Accepts::new(
    &[Family::Evtsel, Family::P5Cesr],
    Domain::from_bits_truncate(Domain::USER.bits() | Domain::KERNEL.bits()),
    Domain::DEFAULT,
);

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
        let database = Database::parse_shipped().expect("shipped database loads");
        // Every model made in full, as before the models were made on first use.
        black_box(database.models().count());
    });
    let headers = per_iteration(50, || {
        black_box(Database::parse_shipped().expect("shipped database loads"));
    });
    let database = Database::shipped().expect("shipped database loads");
    let models = database.models().count();
    let events: usize = database.models().map(|m| m.events().len()).sum();
    println!(
        "load+validate shipped database ({models} models, {events} events): {load:?} per load (target < 2 ms)"
    );
    println!("read the shipped models' headers alone (what start-up pays): {headers:?}");
    // The CPU to detect: this machine's, else a Zen 3 (any shipped model will do).
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| CpuIdentity::from_proc_cpuinfo(&text))
        .filter(|c| database.detect(c).is_some())
        .unwrap_or(CpuIdentity {
            vendor: Vendor::Amd,
            family: 0x19,
            model: 0x21,
            stepping: 0,
        });
    let mut detected = String::new();
    let startup = per_iteration(50, || {
        let cold = Database::parse_shipped().expect("shipped database loads");
        let model = cold.detect(black_box(&cpu)).expect("a model matches");
        black_box(
            cold.resolve(Some(&model.id), "page-faults", &PERF)
                .expect("resolves"),
        );
        detected.clone_from(&model.id);
    });
    println!(
        "detect + resolve `page-faults` on the detected model ({detected}), from a cold Database::load: {startup:?} per start-up"
    );
    for (cpu, event, backend) in [
        ("skl", "INST_RETIRED:ANY_P:u", &X86),
        ("p6", "L2_RQSTS:MODIFIED:c=2", &X86),
        ("amd64_fam19h_zen3", "PAPI_L1_ICM", &PERF),
        ("skl", "cycles:u", &PERF),
    ] {
        let resolve = per_iteration(20_000, || {
            black_box(
                database
                    .resolve(Some(cpu), black_box(event), backend)
                    .expect("resolves"),
            );
        });
        println!(
            "resolve `{event}` on {cpu} for {}: {resolve:?} per call (target < 2 us)",
            backend.families_text()
        );
    }
}
