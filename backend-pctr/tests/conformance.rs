//! The shared conformance suite against the driver model, for every CPU kind and driver pctr
//! has: P5 and P6 on the legacy ABI, the P5 on the current i386 driver, Intel architectural
//! (amd64 and i386 kernels) and AMD on the current one; and, found through the probe as on a
//! real machine, the P6 and AMD under the i386 driver of late 2007 and an Intel CPU under
//! the amd64 one of the same months (both with their 64-byte ABIs), and a Core 2 with CPUID
//! limited below leaf 0xA under the amd64 driver that reads leaf 0xA unguarded.

use std::sync::Arc;

use counterhal_conformance::Subject;
use counterhal_events::Database;
use counterhal_pctr::conformance::{ModelSubject, model_subjects};
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

/// The subject of `model_subjects` (what `counterhal check --models` runs) whose description
/// contains `what`.
fn run_listed(what: &str) {
    let db = Arc::new(Database::shipped().expect("the shipped database loads"));
    let subjects = model_subjects(db);
    let subject = subjects
        .iter()
        .find(|s| s.description().contains(what))
        .unwrap_or_else(|| panic!("no model subject for {what}"));
    counterhal_conformance::run(subject).assert_passed();
}

#[test]
fn conformance_p6_under_the_2007_i386_driver() {
    run_listed("p6 model, transitional-i386 ABI (i386 pctr.c 1.23)");
}

#[test]
fn conformance_amd_with_two_settable_counters() {
    run_listed("amd model, transitional-i386 ABI (i386 pctr.c 1.23)");
}

#[test]
fn conformance_intel_under_the_2007_amd64_driver() {
    run_listed("transitional-amd64 ABI (amd64 pctr.c 1.1)");
}

#[test]
fn conformance_core2_without_the_cpuid_guard() {
    run_listed("CPUID limited below leaf 0xA");
}
