//! The shared conformance suite against the driver model, for every CPU kind and driver pctr
//! has: P5 and P6 on the legacy ABI, the P5 on the current i386 driver, Intel architectural
//! (amd64 and i386 kernels) and AMD on the current one.

use std::sync::Arc;

use counterhal_events::Database;
use counterhal_pctr::conformance::ModelSubject;
use counterhal_pctr::{Abi, ModelConfig, ModelCpu};

fn run(cpu: ModelCpu) {
    run_config(ModelConfig::new(cpu));
}

fn run_config(config: ModelConfig) {
    let db = Arc::new(Database::shipped().expect("the shipped database loads"));
    let subject = ModelSubject::with_config(db, config);
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

#[test]
fn conformance_p5_current_abi() {
    let config = ModelConfig::new(ModelCpu::P5)
        .with_abi(Abi::Current)
        .expect("the current i386 driver drives the P5");
    run_config(config);
}

#[test]
fn conformance_intel_arch_current_abi_i386() {
    run_config(ModelConfig::new(ModelCpu::IntelArch).i386());
}
