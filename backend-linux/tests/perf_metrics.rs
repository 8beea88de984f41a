//! The perf-metrics events of Ice Lake and later cores through the Linux backend: their
//! encodings, the core PMU they need, and how they open where there is none.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use counterhal_events::Database;
use counterhal_hal::{Backend, BackendTarget, Encoding, ErrorKind, OpenOptions, PerfAttr};
use counterhal_linux::probe;
use counterhal_system::System;

/// A PMU tree under a fresh temporary directory: `cpu` (type 4) with the `events/` files
/// given, and `software` (type 1) so that the probe's software event has a PMU.
fn tree(name: &str, cpu_events: &[(&str, &str)]) -> PathBuf {
    let root = counterhal_conformance::fixtures::temp_dir().join(format!(
        "counterhal-perf-metrics-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    let cpu = root.join("cpu");
    std::fs::create_dir_all(cpu.join("events")).unwrap();
    std::fs::create_dir_all(cpu.join("format")).unwrap();
    std::fs::write(cpu.join("type"), "4\n").unwrap();
    std::fs::write(cpu.join("format/event"), "config:0-7\n").unwrap();
    std::fs::write(cpu.join("format/umask"), "config:8-15\n").unwrap();
    for (event, text) in cpu_events {
        std::fs::write(cpu.join("events").join(event), format!("{text}\n")).unwrap();
    }
    std::fs::create_dir_all(root.join("software")).unwrap();
    std::fs::write(root.join("software/type"), "1\n").unwrap();
    root
}

fn backend(devices: &Path, model: &str) -> Option<counterhal_linux::LinuxBackend> {
    let db = Arc::new(Database::shipped().unwrap());
    // No tracefs: a place that does not exist.
    let system = System::host()
        .with_pmu_devices(devices)
        .with_tracefs(devices.join("no-tracefs"));
    probe(db, Some(model.to_string()), system).ok()
}

fn attr(backend: &impl Backend, name: &str) -> PerfAttr {
    let resolved = backend
        .resolve(name)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    match &resolved.terms[0].request.encoding {
        Encoding::Perf(attr) => attr.clone(),
        other => panic!("{name}: {other:?}"),
    }
}

/// Oracle: the kernel's `slots` and `topdown-*` event files on a Sapphire Rapids
/// (`EVENT_ATTR_STR` in arch/x86/events/intel/core.c, Linux 6.12, as sysfs shows them): each
/// name, in each spelling, encodes as the kernel's file says.
#[test]
fn every_spelling_encodes_as_the_kernels_event_file() {
    let kernel = [
        ("slots", "event=0x00,umask=0x4"),
        ("topdown-retiring", "event=0x00,umask=0x80"),
        ("topdown-bad-spec", "event=0x00,umask=0x81"),
        ("topdown-fe-bound", "event=0x00,umask=0x82"),
        ("topdown-be-bound", "event=0x00,umask=0x83"),
        ("topdown-heavy-ops", "event=0x00,umask=0x84"),
        ("topdown-br-mispredict", "event=0x00,umask=0x85"),
        ("topdown-fetch-lat", "event=0x00,umask=0x86"),
        ("topdown-mem-bound", "event=0x00,umask=0x87"),
    ];
    let devices = tree("spr", &kernel);
    let Some(spr) = backend(&devices, "spr") else {
        counterhal_conformance::skip!(
            counterhal_conformance::skip::Need::System,
            "perf_event_open is not available here"
        );
    };
    for (name, file) in kernel {
        // The kernel's alias through the PMU syntax, read from the file, is the oracle.
        let expected = attr(&spr, &format!("cpu/{name}/"));
        for spelling in [name.to_string(), name.to_ascii_uppercase()] {
            let got = attr(&spr, &spelling);
            assert_eq!(
                (got.type_, got.config),
                (4, expected.config),
                "{spelling} ({file})"
            );
        }
    }
    for (perfmon, kernel_name) in [
        ("PERF_METRICS.RETIRING", "topdown-retiring"),
        ("PERF_METRICS.BAD_SPECULATION", "topdown-bad-spec"),
        ("PERF_METRICS.FRONTEND_BOUND", "topdown-fe-bound"),
        ("PERF_METRICS.BACKEND_BOUND", "topdown-be-bound"),
        ("PERF_METRICS.HEAVY_OPERATIONS", "topdown-heavy-ops"),
        ("PERF_METRICS.BRANCH_MISPREDICTS", "topdown-br-mispredict"),
        ("PERF_METRICS.FETCH_LATENCY", "topdown-fetch-lat"),
        ("PERF_METRICS.MEMORY_BOUND", "topdown-mem-bound"),
        ("TOPDOWN_M.RETIRING", "topdown-retiring"),
        ("TOPDOWN_M:BAD_SPEC", "topdown-bad-spec"),
        ("TOPDOWN_M.SLOTS", "slots"),
        ("TOPDOWN.SLOTS", "slots"),
    ] {
        let expected = attr(&spr, &format!("cpu/{kernel_name}/"));
        assert_eq!(attr(&spr, perfmon).config, expected.config, "{perfmon}");
    }
    let _ = std::fs::remove_dir_all(&devices);
}

/// Oracle: the kernel gives a core PMU without perf metrics no `slots` event (perf's
/// `topdown_sys_has_perf_metrics` checks for it), and Ice Lake's cores four metrics
/// (`icl_td_events_attrs`).
#[test]
fn a_core_pmu_without_slots_and_older_models_refuse_them() {
    let devices = tree("noslots", &[]);
    let Some(spr) = backend(&devices, "spr") else {
        counterhal_conformance::skip!(
            counterhal_conformance::skip::Need::System,
            "perf_event_open is not available here"
        );
    };
    let e = spr.resolve("PERF_METRICS.RETIRING").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.message().contains("slots"), "{e}");
    let _ = std::fs::remove_dir_all(&devices);
    let devices = tree("icx", &[("slots", "event=0x00,umask=0x4")]);
    let icx = backend(&devices, "icx").unwrap();
    assert_eq!(attr(&icx, "PERF_METRICS.BACKEND_BOUND").config, 0x8300);
    let e = icx.resolve("PERF_METRICS.MEMORY_BOUND").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidEvent, "Ice Lake has four: {e}");
    let skl = backend(&devices, "skl").unwrap();
    assert_eq!(
        skl.resolve("topdown-retiring").unwrap_err().kind(),
        ErrorKind::InvalidEvent
    );
    let _ = std::fs::remove_dir_all(&devices);
}

/// Oracle: this machine's kernel. Where it has no core PMU (the machines of this project),
/// the group led by slots fails to open as every hardware event does (ENOENT: not
/// supported), never as an unknown event.
#[test]
fn without_a_core_pmu_the_group_is_not_supported() {
    let db = Arc::new(Database::shipped().unwrap());
    let Ok(spr) =
        counterhal_linux::probe(db, Some("spr".into()), counterhal_system::System::host())
    else {
        counterhal_conformance::skip!(
            counterhal_conformance::skip::Need::System,
            "perf_event_open is not available here"
        );
    };
    if spr.facts().hardware_pmu {
        counterhal_conformance::skip!(
            counterhal_conformance::skip::Need::Platform,
            "a machine without a hardware PMU (this one has one)"
        );
    }
    let requests: Vec<_> = ["PERF_METRICS.RETIRING", "TOPDOWN.SLOTS"]
        .iter()
        .map(|name| spr.resolve(name).unwrap().terms[0].request.clone())
        .collect();
    let options = OpenOptions::grouped();
    let Err(e) = spr.open(&requests, &BackendTarget::ThisThread, &options) else {
        panic!("the group opened without a core PMU");
    };
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
}
