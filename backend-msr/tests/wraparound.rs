//! Wraparound accounting across 2^48 and 2^40.

use counterhal_hal::{Backend, BackendTarget, ErrorKind, Group, OpenOptions};
use counterhal_msr::{CounterRef, PmuModelKind, regs};

use crate::common::{self, cycles_gp, instructions, model};

const P48: u64 = 1 << 48;
const P40: u64 = 1 << 40;

#[test]
fn across_2_pow_48_on_every_48_bit_model() {
    for kind in [
        PmuModelKind::IntelV4,
        PmuModelKind::AmdZen,
        PmuModelKind::AmdLegacy,
    ] {
        let (backend, model) = model(kind);
        let mut group = backend
            .open(
                &[cycles_gp(&model)],
                &BackendTarget::Cpu(0),
                &OpenOptions::default(),
            )
            .unwrap();
        group.enable().unwrap();
        model.feed_cycles(P48 - 10, 0);
        assert_eq!(group.read_to_vec().unwrap()[0].value, P48 - 10, "{kind}");
        model.feed_cycles(25, 0); // the hardware counter wraps to 15
        let raw = model.peek(0, backend.pmu().counter_msr(0)).unwrap();
        assert_eq!(raw, 15, "{kind}");
        assert_eq!(group.read_to_vec().unwrap()[0].value, P48 + 15, "{kind}");
        // Values keep accumulating past the counter width.
        model.feed_cycles(P48 - 1, 0);
        assert_eq!(
            group.read_to_vec().unwrap()[0].value,
            2 * P48 + 14,
            "{kind}"
        );
    }
}

#[test]
fn a_whole_period_between_reads_needs_the_status_bit() {
    for kind in PmuModelKind::ALL {
        let (backend, model) = model(kind);
        let width = backend.pmu().gp_width;
        let period = 1u64 << width;
        let mut group = backend
            .open(
                &[cycles_gp(&model)],
                &BackendTarget::Cpu(0),
                &OpenOptions::default(),
            )
            .unwrap();
        group.enable().unwrap();
        model.feed_cycles(3, 0);
        group.read_to_vec().unwrap();
        model.feed_cycles(period + 4, 0); // raw goes 3 -> 7: a wrap a difference cannot see
        let value = group.read_to_vec().unwrap()[0].value;
        if backend.pmu().global_control {
            assert_eq!(
                value,
                period + 7,
                "{kind}: overflow status counted the period"
            );
        } else {
            assert_eq!(
                value, 7,
                "{kind}: without status bits one period is lost (documented)"
            );
        }
    }
}

#[test]
fn intel_fixed_counter_across_2_pow_48() {
    let (backend, model) = model(PmuModelKind::IntelV4);
    let mut group = backend
        .open(
            &[instructions(&backend, &model)],
            &BackendTarget::Cpu(0),
            &OpenOptions::default(),
        )
        .unwrap();
    assert_eq!(group.counters()[0].1, CounterRef::Fixed(0));
    group.enable().unwrap();
    group.set_counter(0, P48 - 2).unwrap();
    assert_eq!(model.peek(0, regs::IA32_FIXED_CTR0), Some(P48 - 2));
    model.feed_instructions(3, 2);
    assert_eq!(model.peek(0, regs::IA32_FIXED_CTR0), Some(3));
    assert_eq!(group.read_to_vec().unwrap()[0].value, 5);
    model.feed_instructions(P48, 1);
    assert_eq!(group.read_to_vec().unwrap()[0].value, P48 + 6);
}

#[test]
fn across_2_pow_40_with_sign_extended_loads() {
    let (backend, model) = model(PmuModelKind::IntelV2);
    assert_eq!(backend.pmu().gp_width, 40);
    assert!(!backend.pmu().full_width_writes);
    let events = [cycles_gp(&model), instructions(&backend, &model)];
    let mut group = backend
        .open(&events, &BackendTarget::Cpu(0), &OpenOptions::default())
        .unwrap();
    group.enable().unwrap();
    // 2^40 - 100 loads through IA32_PMC0 as 0xFFFFFF9C, sign-extended.
    group.set_counter(0, P40 - 100).unwrap();
    assert_eq!(model.peek(0, regs::IA32_PMC0), Some(P40 - 100));
    let load = model
        .writes()
        .into_iter()
        .rev()
        .find(|w| w.msr == regs::IA32_PMC0)
        .unwrap();
    assert_eq!(load.value, 0xFFFF_FF9C);
    model.feed_cycles(250, 0);
    assert_eq!(model.peek(0, regs::IA32_PMC0), Some(150));
    assert_eq!(group.read_to_vec().unwrap()[0].value, 250);
    // A value bits 31:0 cannot express needs full-width writes, which this CPU lacks.
    let error = group.set_counter(0, 1 << 39).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported);
    assert!(error.message().contains("full-width"), "{error}");
    let error = group.set_counter(0, P40).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidInput);
    // The 40-bit fixed counter wraps too.
    group.set_counter(1, P40 - 1).unwrap();
    model.feed_instructions(1, 1);
    assert_eq!(group.read_to_vec().unwrap()[1].value, 2);
    assert_eq!(
        group.set_counter(2, 0).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
}

#[test]
fn the_width_comes_from_cpuid() {
    // An Intel v4 PMU whose CPUID reports 40-bit counters: preloads go through IA32_A_PMC0 at
    // full width, and wraparound happens at 2^40.
    let mut config = PmuModelKind::IntelV4.config();
    config.gp_width = 40;
    let (backend, model) =
        counterhal_msr::MsrBackend::with_model_config(common::db(), config).unwrap();
    assert_eq!(backend.pmu().gp_width, 40);
    let mut group = backend
        .open(
            &[cycles_gp(&model)],
            &BackendTarget::Cpu(0),
            &OpenOptions::default(),
        )
        .unwrap();
    group.enable().unwrap();
    group.set_counter(0, P40 - 3).unwrap();
    let load = model
        .writes()
        .into_iter()
        .rev()
        .find(|w| w.msr == regs::IA32_A_PMC0)
        .unwrap();
    assert_eq!(load.value, P40 - 3);
    model.feed_cycles(10, 0);
    assert_eq!(model.peek(0, regs::IA32_PMC0), Some(7));
    assert_eq!(group.read_to_vec().unwrap()[0].value, 10);
    assert_eq!(
        group.set_counter(0, P40).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
}
