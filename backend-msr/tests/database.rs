//! The few tests that need the shipped event database (and its user-file loader).

use std::sync::Arc;

use counterhal_events::Database;
use counterhal_hal::{
    Backend, BackendTarget, Encoding, ErrorKind, EventRequest, Group, OpenOptions,
};
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
        .open(&requests, &BackendTarget::Cpu(0), &OpenOptions::default())
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
    let Encoding::Evtsel(encoding) = resolved.terms[0].request.encoding else {
        panic!("not an event select: {resolved:?}");
    };
    assert_eq!(encoding.register_value() & 0xFFFF, 0x00C0);
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

/// How a hostile events file is stopped.
#[derive(Debug)]
enum Stopped {
    /// The database refuses the file itself (`InvalidInput`, the message containing this).
    ByDatabase(&'static str),
    /// The database accepts the file (it is self-consistent) and encodes the event as the file
    /// says; the backend, which trusts CPUID and not the file, refuses the encoding
    /// (`InvalidEvent`, the message containing this) without touching a register.
    ByBackend(&'static str),
}

/// The CPU entry every hostile file below starts with: it claims 32 counters and 8 fixed ones
/// on a Skylake (the model is a 4 + 3 counter v4 PMU).
const HOSTILE_CPU: &str = r#"
[[cpu]]
id = "hostile"
description = "claims counters the CPU does not have"
encoder = "intel-arch"
match = [{ vendor = "intel", family = 6, model = [0x5e] }]
pmu = { general_counters = 32, counter_width = 64, fixed_counters = 8, fixed_width = 64 }
"#;

/// Hostile events files, each with one event, and how each must be stopped.
const HOSTILE: [(&str, &str, Stopped); 4] = [
    // Counter 19's select would be 0x199, IA32_PERF_CTL (the P-state request).
    (
        "PERF_CTL_WRITER",
        "code = 0x3c\ncounters = [19]",
        Stopped::ByBackend("allows counters {19}, none of which this PMU has"),
    ),
    // Fixed counter 7 would be 0x310, which the CPU lacks.
    (
        "FIXED_CTRL_WRITER",
        "code = 0xc0\ncounters = []\nfixed = 7",
        Stopped::ByBackend("fixed counter 7, none of which this PMU has"),
    ),
    // Counter 40 is past the 32 counters the file's own PMU entry claims.
    (
        "PAST_THE_FILE",
        "code = 0x3c\ncounters = [40]",
        Stopped::ByDatabase("unknown counter 40"),
    ),
    // An event code wider than the 8 bits of an Intel event select.
    (
        "WIDE_CODE",
        "code = 0x1ff",
        Stopped::ByDatabase("event code 0x1ff"),
    ),
];

#[test]
fn hostile_events_files() {
    for (name, body, stopped) in HOSTILE {
        let text = format!(
            "{HOSTILE_CPU}\n[[cpu.event]]\nname = \"{name}\"\n{body}\ndesc = \"hostile\"\n"
        );
        let loaded = Database::default().with_toml_str("hostile.toml", &text);
        let needle = match stopped {
            Stopped::ByDatabase(needle) => {
                let error = loaded.expect_err(&format!("{name}: the database accepted it"));
                assert_eq!(error.kind(), ErrorKind::InvalidInput, "{name}: {error}");
                eprintln!("{name}: refused by the database: {error}");
                assert!(error.to_string().contains(needle), "{name}: {error}");
                continue;
            }
            Stopped::ByBackend(needle) => needle,
        };
        let db = Arc::new(loaded.unwrap_or_else(|e| panic!("{name}: the database refused: {e}")));
        let config = PmuModelKind::IntelV4.config();
        let cpuid = config.cpuid();
        let (device, model) = ModelDevice::new(config);
        let backend =
            MsrBackend::with_device(db, Arc::new(device), &cpuid, Some("hostile".into())).unwrap();
        model.clear_log();
        let resolved = backend
            .resolve(name)
            .unwrap_or_else(|e| panic!("{name}: the database refused to encode it: {e}"));
        let requests: Vec<EventRequest> = resolved.terms.into_iter().map(|t| t.request).collect();
        let error = backend
            .open(&requests, &BackendTarget::Cpu(0), &OpenOptions::default())
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidEvent, "{name}: {error}");
        assert!(error.message().contains(needle), "{name}: {error}");
        assert!(
            model.accesses().is_empty(),
            "{name}: {:?}",
            model.accesses()
        );
    }
}
