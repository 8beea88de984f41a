//! The shared conformance suite against the hwpmc model: an Intel machine (IAP and IAF) and
//! an AMD one (K8) under hwpmc V10, and the Intel one under V9 (its other PMC id layout, no
//! `PMC_F_EV_PMU`).

use std::sync::Arc;

use counterhal_events::Database;
use counterhal_hwpmc::ModelConfig;
use counterhal_hwpmc::abi::Version;
use counterhal_hwpmc::conformance::ModelSubject;

fn run(config: ModelConfig) {
    let db = Arc::new(Database::shipped().expect("the shipped database loads"));
    let subject = ModelSubject::new(db, config).expect("the model answers the handshake");
    counterhal_conformance::run(&subject).assert_passed();
}

#[test]
fn conformance_intel_v10() {
    run(ModelConfig::intel());
}

#[test]
fn conformance_amd_v10() {
    run(ModelConfig::amd());
}

#[test]
fn conformance_intel_v9() {
    run(ModelConfig::intel().with_version(Version::V9));
}
