//! The shared conformance suite on every PMU model: Intel v4-like, v2-like, v1-like (no global
//! control, no fixed counters) and v5-like (fixed counters 0 and 2, not 1), AMD legacy,
//! Zen-like.

use std::sync::{Arc, Mutex};

use counterhal_events::Database;
use counterhal_msr::PmuModelKind;
use counterhal_msr::conformance::ModelSubject;

/// The suite's memory-hygiene case measures the process's resident memory, so the models'
/// suites run one at a time (the test harness runs tests on parallel threads).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn run(kind: PmuModelKind) {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let db = Arc::new(Database::shipped().expect("the shipped database loads"));
    counterhal_conformance::run(&ModelSubject::new(db, kind)).assert_passed();
}

#[test]
fn conformance_intel_v4_model() {
    run(PmuModelKind::IntelV4);
}

#[test]
fn conformance_intel_v2_model() {
    run(PmuModelKind::IntelV2);
}

#[test]
fn conformance_intel_v1_model() {
    run(PmuModelKind::IntelV1);
}

#[test]
fn conformance_intel_v5_model() {
    run(PmuModelKind::IntelV5);
}

/// Every model has a test above, and `model_subjects` covers every model.
#[test]
fn every_model_is_a_subject() {
    let db = Arc::new(Database::shipped().expect("the shipped database loads"));
    let subjects = counterhal_msr::conformance::model_subjects(db);
    assert_eq!(subjects.len(), PmuModelKind::ALL.len());
    assert_eq!(
        PmuModelKind::ALL.len(),
        6,
        "add a conformance test for the new model"
    );
}

#[test]
fn conformance_amd_legacy_model() {
    run(PmuModelKind::AmdLegacy);
}

#[test]
fn conformance_zen_model() {
    run(PmuModelKind::AmdZen);
}
