//! Intel's second unit-mask byte (perfmon's `UMaskExt`, EVTSEL bits 47:40): programmed where
//! CPUID announces UMASK2 (leaf 7.1 EAX bit 8 and leaf 0x23 EBX bit 0), refused with the
//! reason where it does not, and accepted by the device model only when it has the field.

use std::sync::Arc;

use counterhal_events::Database;
use counterhal_hal::{Backend, BackendTarget, ErrorKind, EventRequest, Evtsel, Group, OpenOptions};
use counterhal_msr::regs::IA32_PERFEVTSEL0;
use counterhal_msr::{ModelDevice, ModelHandle, MsrBackend, PmuInfo, PmuModelKind};

/// Lunar Lake's DTLB_LOAD_MISSES.STLB_HIT: code 0x12, unit mask 0x20, second byte 0x03.
const STLB_HIT: &str = "DTLB_LOAD_MISSES.STLB_HIT";

/// A perfmon v5 model of a Lunar Lake P-core (family 6 model 0xBD), with or without UMASK2,
/// counting with the `lnl_lnc` table.
fn lion_cove(umask2: bool) -> (MsrBackend, ModelHandle) {
    let mut config = PmuModelKind::IntelV5.config();
    config.model = 0xBD;
    config.stepping = 1;
    config.umask2 = umask2;
    let cpuid = config.cpuid();
    let (device, handle) = ModelDevice::new(config);
    let db = Arc::new(Database::shipped().expect("the shipped database loads"));
    let backend =
        MsrBackend::with_device(db, Arc::new(device), &cpuid, Some("lnl_lnc".into())).unwrap();
    (backend, handle)
}

fn requests(backend: &MsrBackend, name: &str) -> Vec<EventRequest> {
    let resolved = backend.resolve(name).unwrap();
    resolved.terms.into_iter().map(|t| t.request).collect()
}

#[test]
fn cpuid_announces_umask2_through_leaves_7_1_and_0x23() {
    let mut config = PmuModelKind::IntelV5.config();
    assert!(!PmuInfo::from_cpuid(&config.cpuid()).unwrap().umask2);
    config.umask2 = true;
    let pmu = PmuInfo::from_cpuid(&config.cpuid()).unwrap();
    assert!(pmu.umask2);
    assert_eq!(
        pmu.evtsel_allowed_bits() & Evtsel::UMASK2,
        Evtsel::UMASK2,
        "{pmu:?}"
    );
}

#[test]
fn the_second_byte_is_written_to_bits_47_40() {
    let (backend, model) = lion_cove(true);
    let mut group = backend
        .open(
            &requests(&backend, STLB_HIT),
            &BackendTarget::Cpu(0),
            &OpenOptions::default(),
        )
        .unwrap();
    group.enable().unwrap();
    let written: Vec<u64> = model
        .writes()
        .iter()
        .filter(|w| (IA32_PERFEVTSEL0..IA32_PERFEVTSEL0 + 8).contains(&w.msr) && w.value != 0)
        .map(|w| w.value)
        .collect();
    assert!(
        written
            .iter()
            .any(|v| v & !(Evtsel::USR | Evtsel::OS | Evtsel::EN) == 0x0300_0000_2012),
        "event selects written: {written:x?}"
    );
}

#[test]
fn a_pmu_without_umask2_refuses_it_saying_why() {
    let (backend, _model) = lion_cove(false);
    let error = backend
        .open(
            &requests(&backend, STLB_HIT),
            &BackendTarget::Cpu(0),
            &OpenOptions::default(),
        )
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported, "{error}");
    assert!(error.message().contains("UMASK2"), "{error}");
    assert!(error.message().contains("0x03"), "{error}");
    // Events without the second byte still open on that PMU.
    let plain = backend.open(
        &requests(&backend, "DTLB_LOAD_MISSES.WALK_COMPLETED"),
        &BackendTarget::Cpu(0),
        &OpenOptions::default(),
    );
    assert!(plain.is_ok(), "{:?}", plain.err());
}
