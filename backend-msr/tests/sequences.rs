//! The register write sequences: freeze, program, zero, clear overflow, unfreeze; and their
//! EN-bit equivalents on PMUs without a global control.

use counterhal_hal::Evtsel;
use counterhal_hal::{Backend, BackendTarget, Group, OpenOptions};
use counterhal_msr::regs::*;
use counterhal_msr::{MsrWrite, PmuModelKind};

use crate::common::{cycles_gp, instructions, model};

fn w(msr: u32, value: u64) -> MsrWrite {
    MsrWrite { cpu: 0, msr, value }
}

#[test]
fn intel_v4_freeze_unfreeze_and_overflow_clear() {
    let (backend, model) = model(PmuModelKind::IntelV4);
    let events = [instructions(&backend, &model), cycles_gp(&model)];
    let mut group = backend
        .open(&events, &BackendTarget::Cpu(0), &OpenOptions::default())
        .unwrap();
    // Global control after reset: 4 GP + 3 fixed enables. Ours: GP 0 (bit 0), fixed 0 (bit 32).
    let all = 0x7_0000_000F;
    let frozen = all & !0x1_0000_0001;
    let cycles_select = 0x3C | Evtsel::USR | Evtsel::OS;
    assert_eq!(
        model.writes(),
        vec![
            w(IA32_PERF_GLOBAL_CTRL, frozen),            // freeze our counters
            w(IA32_PERFEVTSEL0, cycles_select),          // select, EN clear until enabled
            w(IA32_FIXED_CTR_CTRL, 0),                   // fixed 0: off until enabled
            w(IA32_FIXED_CTR0, 0),                       // zero the counters
            w(IA32_A_PMC0, 0),                           // (full-width alias)
            w(IA32_PERF_GLOBAL_OVF_CTRL, 0x1_0000_0001), // clear stale overflow
        ]
    );
    model.clear_log();
    group.enable().unwrap();
    assert_eq!(
        model.writes(),
        vec![
            w(IA32_PERFEVTSEL0, cycles_select | Evtsel::EN), // the select's own enable
            w(IA32_FIXED_CTR_CTRL, 0x3),                     // fixed 0: OS | USR
            w(IA32_PERF_GLOBAL_CTRL, all),                   // one write starts them together
        ],
    );

    // Preload counter 0 near the top, run through 2^48: the read freezes, sees the overflow,
    // clears it, unfreezes.
    group.set_counter(1, (1 << 48) - 5).unwrap();
    model.clear_log();
    model.feed_cycles(10, 0);
    assert_eq!(model.peek(0, IA32_PERF_GLOBAL_STATUS), Some(1));
    let readings = group.read_to_vec().unwrap();
    assert_eq!(readings[1].value, 10);
    assert_eq!(
        model.writes(),
        vec![
            w(IA32_PERF_GLOBAL_CTRL, frozen),
            w(IA32_PERF_GLOBAL_OVF_CTRL, 0x1),
            w(IA32_PERF_GLOBAL_CTRL, all),
        ]
    );
    assert_eq!(model.peek(0, IA32_PERF_GLOBAL_STATUS), Some(0));
    // Reads in between freeze and read status, counters and the TSC, in that order.
    let reads: Vec<u32> = model
        .accesses()
        .iter()
        .filter(|a| a.access == counterhal_msr::Access::Read)
        .map(|a| a.msr)
        .collect();
    assert_eq!(
        reads,
        vec![
            IA32_PERF_GLOBAL_CTRL,
            IA32_PERF_GLOBAL_STATUS,
            IA32_FIXED_CTR0,
            IA32_PMC0,
            TSC
        ]
    );

    model.clear_log();
    group.disable().unwrap();
    assert_eq!(
        model.writes(),
        vec![
            w(IA32_PERF_GLOBAL_CTRL, frozen), // one write stops them together
            w(IA32_PERFEVTSEL0, cycles_select),
            w(IA32_FIXED_CTR_CTRL, 0),
        ]
    );
    // Another agent (perf after an NMI-watchdog interrupt) sets every global enable bit
    // again: the disabled group stays stopped, because its selects are off too.
    let stopped = group.read_to_vec().unwrap();
    model.poke(0, IA32_PERF_GLOBAL_CTRL, all).unwrap();
    model.feed_cycles(1_000, 0);
    model.feed_instructions(1_000, 0);
    assert_eq!(group.read_to_vec().unwrap()[1].value, stopped[1].value);
    assert_eq!(group.read_to_vec().unwrap()[0].value, stopped[0].value);
    model.clear_log();
    drop(group);
    assert_eq!(
        model.writes(),
        vec![
            w(IA32_PERF_GLOBAL_CTRL, frozen),
            w(IA32_PERF_GLOBAL_OVF_CTRL, 0x1_0000_0001),
            w(IA32_PERFEVTSEL0, 0),
            w(IA32_FIXED_CTR_CTRL, 0),
        ]
    );
}

#[test]
fn amd_perfmon_v2_uses_its_global_registers() {
    let (backend, model) = model(PmuModelKind::AmdZen);
    let mut group = backend
        .open(
            &[cycles_gp(&model)],
            &BackendTarget::Cpu(0),
            &OpenOptions::default(),
        )
        .unwrap();
    let select = 0x76 | Evtsel::USR | Evtsel::OS;
    assert_eq!(
        model.writes(),
        vec![
            w(AMD_GLOBAL_CTL, 0x3E),
            w(AMD_PERF_CTL_EXT0, select),
            w(AMD_PERF_CTR_EXT0, 0),
            w(AMD_GLOBAL_STATUS_CLR, 0x1),
        ]
    );
    model.clear_log();
    group.enable().unwrap();
    assert_eq!(
        model.writes(),
        vec![
            w(AMD_PERF_CTL_EXT0, select | Evtsel::EN),
            w(AMD_GLOBAL_CTL, 0x3F)
        ]
    );
    group.set_counter(0, (1 << 48) - 1).unwrap();
    model.feed_cycles(2, 0);
    model.clear_log();
    assert_eq!(group.read_to_vec().unwrap()[0].value, 2);
    assert_eq!(
        model.writes(),
        vec![
            w(AMD_GLOBAL_CTL, 0x3E),
            w(AMD_GLOBAL_STATUS_CLR, 0x1),
            w(AMD_GLOBAL_CTL, 0x3F)
        ]
    );
}

#[test]
fn without_global_control_en_bits_start_and_stop() {
    let kind = PmuModelKind::AmdLegacy;
    let (backend, model) = model(kind);
    let events = [cycles_gp(&model), cycles_gp(&model)];
    let mut group = backend
        .open(&events, &BackendTarget::Cpu(0), &OpenOptions::default())
        .unwrap();
    let select = 0x76 | Evtsel::USR | Evtsel::OS;
    assert_eq!(
        model.writes(),
        vec![
            w(AMD_PERF_EVT_SEL0, select),
            w(AMD_PERF_EVT_SEL0 + 1, select),
            w(AMD_PERF_CTR0, 0),
            w(AMD_PERF_CTR0 + 1, 0),
        ]
    );
    model.clear_log();
    group.enable().unwrap();
    assert_eq!(
        model.writes(),
        vec![
            w(AMD_PERF_EVT_SEL0, select | Evtsel::EN),
            w(AMD_PERF_EVT_SEL0 + 1, select | Evtsel::EN),
        ]
    );
    model.clear_log();
    model.feed_cycles(5, 0);
    assert_eq!(group.read_to_vec().unwrap()[1].value, 5);
    assert!(model.writes().is_empty(), "a read writes nothing here");
    group.disable().unwrap();
    assert_eq!(
        model.writes(),
        vec![
            w(AMD_PERF_EVT_SEL0, select),
            w(AMD_PERF_EVT_SEL0 + 1, select),
        ]
    );
}
