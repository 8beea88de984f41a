//! Events that program an extra MSR besides their event select (offcore response, load
//! latency, frontend): the backend writes it before the counter starts, shares it between
//! events that want the same value, refuses two values for one MSR, and clears it when the
//! last group using it closes. The device model checks each MSR's width.

use std::sync::Arc;

use counterhal_events::Database;
use counterhal_hal::{Backend, BackendTarget, Encoding, ErrorKind, EventRequest, OpenOptions};
use counterhal_msr::{ModelHandle, MsrBackend, MsrGroup, PmuModelKind};

/// An Ice Lake SP (family 6 model 0x6a) modelled as a perfmon v4 PMU.
fn icx() -> (MsrBackend, ModelHandle) {
    let mut config = PmuModelKind::IntelV4.config();
    config.model = 0x6a;
    config.stepping = 6;
    let db = Arc::new(Database::shipped().expect("the shipped database loads"));
    let (backend, model) = MsrBackend::with_model_config(db, config).unwrap();
    assert_eq!(backend.cpu_model(), Some("icx"));
    (backend, model)
}

fn requests(backend: &MsrBackend, names: &[&str]) -> Vec<EventRequest> {
    names
        .iter()
        .flat_map(|name| backend.resolve(name).unwrap().terms)
        .map(|term| term.request)
        .collect()
}

fn open(backend: &MsrBackend, names: &[&str]) -> counterhal_hal::Result<MsrGroup> {
    backend.open(
        &requests(backend, names),
        &BackendTarget::Cpu(0),
        &OpenOptions::default(),
    )
}

fn extra_value(backend: &MsrBackend, name: &str) -> u64 {
    let resolved = backend.resolve(name).unwrap();
    match resolved.terms[0].request.encoding {
        Encoding::Evtsel(e) => e.extra.expect("an extra MSR").value,
        ref other => panic!("{name}: {other:?}"),
    }
}

const DATA_RD: &str = "OCR.DEMAND_DATA_RD.ANY_RESPONSE";
const RFO: &str = "OCR.DEMAND_RFO.ANY_RESPONSE";

#[test]
fn an_offcore_event_writes_its_response_msr_before_counting() {
    let (backend, model) = icx();
    let value = extra_value(&backend, DATA_RD);
    assert_eq!(
        value, 0x10001,
        "Intel's value for demand data reads, any response"
    );
    model.clear_log();
    let group = open(&backend, &[DATA_RD]).unwrap();
    let writes = model.writes();
    let offcore = writes
        .iter()
        .position(|w| w.msr == 0x1a6)
        .expect("0x1a6 written");
    assert_eq!(writes[offcore].value, value);
    // Written before the event select that enables the counter.
    let select = writes
        .iter()
        .position(|w| (0x186..0x18a).contains(&w.msr) && w.value & 0xff == 0xb7)
        .expect("the event select written");
    assert!(offcore < select, "{writes:?}");
    assert_eq!(model.peek(0, 0x1a6), Some(value));
    drop(group);
    assert_eq!(
        model.peek(0, 0x1a6),
        Some(0),
        "cleared when the group closes"
    );
}

#[test]
fn two_offcore_values_fail_clearly_and_one_value_is_shared() {
    let (backend, model) = icx();
    let error = open(&backend, &[DATA_RD, RFO]).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Busy, "{error}");
    let message = error.to_string();
    assert!(
        message.contains("MSR_OFFCORE_RSP_0") && message.contains("0x1a6"),
        "{message}"
    );
    assert!(
        message.contains(RFO) && message.contains(DATA_RD),
        "{message}"
    );
    // The same value twice shares the MSR, also across groups.
    let first = open(&backend, &[DATA_RD, DATA_RD]).unwrap();
    let second = open(&backend, &[DATA_RD]).unwrap();
    let across = open(&backend, &[RFO]).unwrap_err();
    assert!(
        across.to_string().contains("another open group"),
        "{across}"
    );
    drop(first);
    assert_eq!(
        model.peek(0, 0x1a6),
        Some(0x10001),
        "still used by the second group"
    );
    drop(second);
    assert_eq!(model.peek(0, 0x1a6), Some(0));
    open(&backend, &[RFO]).unwrap();
}

#[test]
fn load_latency_and_frontend_values_reach_their_msrs() {
    let (backend, model) = icx();
    let _group = open(
        &backend,
        &[
            "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4:ldlat=100",
            "FRONTEND_RETIRED.DSB_MISS",
        ],
    )
    .unwrap();
    assert_eq!(model.peek(0, 0x3f6), Some(100));
    assert_eq!(model.peek(0, 0x3f7), Some(0x11));
    // The device model refuses bits above an MSR's width, as the CPU raises #GP.
    assert!(backend.write_msr(0, 0x3f6, 1 << 16).is_err());
    assert!(backend.write_msr(0, 0x3f7, 1 << 24).is_err());
}

#[test]
fn amd_pmus_have_no_extra_msrs() {
    let db = Arc::new(Database::shipped().unwrap());
    let (backend, _model) = MsrBackend::with_model(Arc::clone(&db), PmuModelKind::AmdZen);
    assert!(
        !backend
            .allow_list()
            .permits(0x1a6, counterhal_msr::Access::Write)
    );
}
