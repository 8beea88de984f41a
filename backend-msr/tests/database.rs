//! The few tests that need the shipped event database (and its user-file loader).

mod common;

use std::sync::Arc;

use counterhal_events::Database;
use counterhal_hal::{Backend, Encoding, ErrorKind, EventRequest, Group, OpenOptions, Target};
use counterhal_msr::{CounterRef, ModelDevice, MsrBackend, PmuModelKind};

fn shipped() -> Arc<Database> {
    Arc::new(Database::shipped().expect("the shipped database loads"))
}

fn open_named(backend: &MsrBackend, names: &[&str]) -> counterhal_msr::MsrGroup {
    let requests: Vec<EventRequest> = names
        .iter()
        .flat_map(|name| {
            backend
                .resolve(name)
                .unwrap_or_else(|e| panic!("{name}: {e}"))
                .terms
        })
        .map(|term| term.request)
        .collect();
    backend
        .open(&requests, &Target::Cpu(0), &OpenOptions::default())
        .unwrap()
}

#[test]
fn skylake_model_resolves_through_the_database() {
    let (backend, model) = MsrBackend::with_model(shipped(), PmuModelKind::IntelV4);
    assert_eq!(
        backend.cpu_model(),
        Some("skl"),
        "family 6 model 0x5e is Skylake"
    );
    let resolved = backend.resolve("INST_RETIRED:u").unwrap();
    let Encoding::Msr(encoding) = resolved.terms[0].request.encoding else {
        panic!("not an MSR encoding: {resolved:?}");
    };
    assert_eq!(encoding.evtsel & 0xFFFF, 0x00C0);
    let mut group = open_named(&backend, &["instructions", "INST_RETIRED:u", "cycles"]);
    let counters: Vec<CounterRef> = group.counters().into_iter().map(|(_, c)| c).collect();
    assert_eq!(counters[0], CounterRef::Fixed(0), "{counters:?}");
    group.enable().unwrap();
    model.feed_instructions(100, 50);
    model.feed_cycles(1_000, 10);
    let values: Vec<u64> = group
        .read_to_vec()
        .unwrap()
        .iter()
        .map(|r| r.value)
        .collect();
    assert_eq!(values, vec![150, 100, 1_010]);
}

#[test]
fn zen_model_resolves_through_the_database() {
    let (backend, model) = MsrBackend::with_model(shipped(), PmuModelKind::AmdZen);
    eprintln!("Zen model maps to CPU model {:?}", backend.cpu_model());
    let mut group = open_named(&backend, &["cycles", "instructions"]);
    group.enable().unwrap();
    model.feed_cycles(70, 30);
    model.feed_instructions(5, 0);
    let values: Vec<u64> = group
        .read_to_vec()
        .unwrap()
        .iter()
        .map(|r| r.value)
        .collect();
    assert_eq!(values, vec![100, 5]);
}

#[test]
fn unknown_names_are_invalid_events() {
    let (backend, _) = MsrBackend::with_model(shipped(), PmuModelKind::IntelV4);
    let error = backend.resolve("INST_RETIRD").unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidEvent, "{error}");
}

/// A hostile events file: a CPU entry claiming 32 counters and events placed on counter 19
/// (whose select would be IA32_PERF_CTL) and fixed counter 7 (0x310, which the CPU lacks).
/// The database accepts the file (it is self-consistent); the backend, which trusts CPUID and
/// not the file, refuses the events without touching a register.
#[test]
fn hostile_events_file() {
    let text = r#"
[[cpu]]
id = "hostile"
description = "claims counters the CPU does not have"
encoder = "intel-arch"
match = [{ vendor = "intel", family = 6, model = [0x5e] }]
pmu = { general_counters = 32, counter_width = 64, fixed_counters = 8, fixed_width = 64 }

[[cpu.event]]
name = "PERF_CTL_WRITER"
code = 0x3c
counters = [19]
desc = "placed on counter 19"

[[cpu.event]]
name = "FIXED_CTRL_WRITER"
code = 0xc0
counters = []
fixed = 7
desc = "placed on fixed counter 7"
"#;
    let db = match Database::default().with_toml_str("hostile.toml", text) {
        Ok(db) => Arc::new(db),
        Err(error) => {
            eprintln!("the database refuses the hostile file itself: {error}");
            assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
            return;
        }
    };
    let config = PmuModelKind::IntelV4.config();
    let cpuid = config.cpuid();
    let (device, model) = ModelDevice::new(config);
    let backend =
        MsrBackend::with_device(db, Arc::new(device), &cpuid, Some("hostile".into())).unwrap();
    model.clear_log();
    for name in ["PERF_CTL_WRITER", "FIXED_CTRL_WRITER"] {
        let resolved = match backend.resolve(name) {
            Ok(resolved) => resolved,
            Err(error) => {
                eprintln!("{name}: the database refuses to encode it: {error}");
                continue;
            }
        };
        let requests: Vec<EventRequest> = resolved.terms.into_iter().map(|t| t.request).collect();
        let error = backend
            .open(&requests, &Target::Cpu(0), &OpenOptions::default())
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidEvent, "{name}: {error}");
        assert!(
            model.accesses().is_empty(),
            "{name}: {:?}",
            model.accesses()
        );
    }
}
