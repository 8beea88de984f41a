//! The shared conformance suite against the driver model, for every CPU kind pctr drives: P5
//! and P6 on the legacy ABI, Intel architectural and AMD on the current one.

use std::sync::Arc;

use counterhal_events::Database;
use counterhal_pctr::ModelCpu;
use counterhal_pctr::conformance::ModelSubject;

fn run(cpu: ModelCpu) {
    let db = Arc::new(Database::shipped().expect("the shipped database loads"));
    let subject = ModelSubject::new(db, cpu);
    counterhal_conformance::run(&subject).assert_passed();
}

#[test]
fn conformance_p5_legacy_abi() {
    run(ModelCpu::P5);
}

#[test]
fn conformance_p6_legacy_abi() {
    run(ModelCpu::P6);
}

#[test]
fn conformance_intel_arch_current_abi() {
    run(ModelCpu::IntelArch);
}

#[test]
fn conformance_amd_current_abi() {
    run(ModelCpu::Amd);
}
