//! The shared conformance suite on every PMU model: Intel v4-like, Intel v2-like, AMD legacy,
//! Zen-like.

use std::sync::Arc;

use counterhal_events::Database;
use counterhal_msr::PmuModelKind;
use counterhal_msr::conformance::ModelSubject;

fn run(kind: PmuModelKind) {
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
fn conformance_amd_legacy_model() {
    run(PmuModelKind::AmdLegacy);
}

#[test]
fn conformance_zen_model() {
    run(PmuModelKind::AmdZen);
}
