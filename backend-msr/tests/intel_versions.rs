//! Intel architectural perfmon versions the v2 and v4 models do not cover: v1 (no global
//! control, no fixed counters), v5 (a fixed-counter bitmap with a gap, full-width writes, no
//! AnyThread), and AnyThread on v3 and v4.

use counterhal_hal::Evtsel;
use counterhal_hal::{Backend, BackendTarget, CounterSet, ErrorKind, Group, OpenOptions};
use counterhal_msr::regs::{self, fixed_ctrl};
use counterhal_msr::{CounterRef, MsrBackend, PmuModelKind};

use crate::common::{db, model, request, select};

fn counters(group: &counterhal_msr::MsrGroup) -> Vec<CounterRef> {
    group.counters().into_iter().map(|(_, c)| c).collect()
}

fn values(group: &mut counterhal_msr::MsrGroup) -> Vec<u64> {
    group
        .read_to_vec()
        .unwrap()
        .iter()
        .map(|r| r.value)
        .collect()
}

/// Whether the model saw any access to `msr`.
fn touched(model: &counterhal_msr::ModelHandle, msr: u32) -> bool {
    model.accesses().iter().any(|a| a.msr == msr)
}

#[test]
fn v1_starts_and_stops_by_the_en_bits_alone() {
    let (backend, model) = model(PmuModelKind::IntelV1);
    let pmu = backend.pmu();
    assert_eq!((pmu.version, pmu.gp_counters, pmu.gp_width), (1, 2, 40));
    assert!(pmu.fixed.is_empty() && !pmu.global_control && !pmu.full_width_writes);
    // Instructions may use fixed counter 0 elsewhere; v1 has none, so a GP counter takes it.
    let events = [
        request(
            "instructions",
            select(0xC0, 0, true, true),
            CounterSet::first(2),
            Some(0),
        ),
        request(
            "cycles:u",
            select(0x3C, 0, true, false),
            CounterSet::first(2),
            None,
        ),
    ];
    let mut group = backend
        .open(&events, &BackendTarget::Cpu(0), &OpenOptions::default())
        .unwrap();
    assert_eq!(counters(&group), [CounterRef::Gp(0), CounterRef::Gp(1)]);
    // Programmed with EN clear: nothing counts before enable.
    model.feed_instructions(5, 5);
    assert_eq!(values(&mut group), [0, 0]);
    group.enable().unwrap();
    for i in 0..2 {
        let sel = model.peek(0, regs::IA32_PERFEVTSEL0 + i).unwrap();
        assert_ne!(sel & Evtsel::EN, 0, "EVTSEL{i} enabled: {sel:#x}");
    }
    model.feed_instructions(100, 20);
    model.feed_cycles(300, 40);
    assert_eq!(values(&mut group), [120, 300]);
    group.disable().unwrap();
    for i in 0..2 {
        let sel = model.peek(0, regs::IA32_PERFEVTSEL0 + i).unwrap();
        assert_eq!(sel & Evtsel::EN, 0, "EVTSEL{i} disabled: {sel:#x}");
    }
    model.feed_instructions(1_000, 0);
    assert_eq!(values(&mut group), [120, 300], "stopped by EN alone");
    group.enable().unwrap();
    model.feed_instructions(1, 0);
    assert_eq!(values(&mut group), [121, 300]);
    // No global, fixed or full-width register exists, and the backend never tried one.
    for msr in [
        regs::IA32_PERF_GLOBAL_CTRL,
        regs::IA32_PERF_GLOBAL_STATUS,
        regs::IA32_PERF_GLOBAL_OVF_CTRL,
        regs::IA32_FIXED_CTR_CTRL,
        regs::IA32_FIXED_CTR0,
        regs::IA32_A_PMC0,
        regs::IA32_PERF_CAPABILITIES,
    ] {
        assert!(!touched(&model, msr), "{msr:#x} touched");
        assert_eq!(model.peek(0, msr), None, "{msr:#x} exists on the v1 model");
    }
    assert!(model.accesses().iter().all(|a| a.accepted));
}

#[test]
fn v1_wraps_at_40_bits_without_overflow_status() {
    let (backend, model) = model(PmuModelKind::IntelV1);
    let event = request(
        "instructions",
        select(0xC0, 0, true, true),
        CounterSet::first(2),
        None,
    );
    let mut group = backend
        .open(&[event], &BackendTarget::Cpu(0), &OpenOptions::default())
        .unwrap();
    group.enable().unwrap();
    // Within 2^31 of 2^40, so IA32_PMC0's sign-extending 32-bit write can load it.
    group.set_counter(0, (1 << 40) - 100).unwrap();
    assert_eq!(model.peek(0, regs::IA32_PMC0), Some((1 << 40) - 100));
    model.feed_instructions(250, 0);
    assert_eq!(model.peek(0, regs::IA32_PMC0), Some(150), "wrapped at 2^40");
    assert_eq!(values(&mut group), [250]);
    // Far from both ends: not loadable without full-width writes.
    let error = group.set_counter(0, 1 << 35).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported, "{error}");
}

#[test]
fn v5_decodes_a_fixed_counter_bitmap_with_a_gap() {
    let (backend, _) = model(PmuModelKind::IntelV5);
    let pmu = backend.pmu();
    assert_eq!((pmu.version, pmu.gp_counters, pmu.gp_width), (5, 4, 48));
    assert_eq!(pmu.fixed.mask(), 0b101, "fixed 0 and 2, not 1");
    assert!(pmu.full_width_writes);
    let allow = backend.allow_list();
    assert!(allow.permits(regs::IA32_FIXED_CTR0, counterhal_msr::Access::Read));
    assert!(!allow.permits(regs::IA32_FIXED_CTR0 + 1, counterhal_msr::Access::Read));
    assert!(allow.permits(regs::IA32_FIXED_CTR0 + 2, counterhal_msr::Access::Write));
    assert_eq!(
        backend.capabilities().fixed_counters(),
        2,
        "two fixed counters exist"
    );
}

#[test]
fn v5_event_for_a_missing_fixed_counter_falls_back_to_a_gp_counter() {
    let (backend, model) = model(PmuModelKind::IntelV5);
    let any_gp = CounterSet::first(4);
    let events = [
        request("instructions", select(0xC0, 0, true, true), any_gp, Some(0)),
        request("cycles", select(0x3C, 0, true, true), any_gp, Some(1)),
        request("ref-cycles", select(0x3C, 1, true, true), any_gp, Some(2)),
    ];
    let mut group = backend
        .open(&events, &BackendTarget::Cpu(0), &OpenOptions::default())
        .unwrap();
    assert_eq!(
        counters(&group),
        [
            CounterRef::Fixed(0),
            CounterRef::Gp(0),
            CounterRef::Fixed(2)
        ]
    );
    group.enable().unwrap();
    let ctrl = model.peek(0, regs::IA32_FIXED_CTR_CTRL).unwrap();
    assert_eq!(ctrl & fixed_ctrl::field(1), 0, "{ctrl:#x}");
    assert_ne!(ctrl & fixed_ctrl::field(0), 0, "{ctrl:#x}");
    assert_ne!(ctrl & fixed_ctrl::field(2), 0, "{ctrl:#x}");
    let global = model.peek(0, regs::IA32_PERF_GLOBAL_CTRL).unwrap();
    assert_eq!(
        global & (1 << 33),
        0,
        "no enable bit for fixed 1: {global:#x}"
    );
    model.feed_instructions(10, 1);
    model.feed_cycles(200, 20);
    model.feed(0x3C, 0x01, 3_000, 0);
    assert_eq!(values(&mut group), [11, 220, 3_000]);
    assert!(
        !touched(&model, regs::IA32_FIXED_CTR0 + 1),
        "the missing fixed counter 1 was accessed"
    );
    // The counter is loaded through IA32_A_PMC0 (full width), so any 48-bit value loads.
    group.set_counter(1, 1 << 40).unwrap();
    assert!(
        model
            .writes()
            .iter()
            .any(|w| w.msr == regs::IA32_A_PMC0 && w.value == 1 << 40)
    );
    model.feed_cycles(5, 0);
    assert_eq!(values(&mut group), [11, 225, 3_000]);
}

#[test]
fn v5_event_only_for_the_missing_fixed_counter_is_refused_clearly() {
    let (backend, model) = model(PmuModelKind::IntelV5);
    let only_fixed_1 = request(
        "cycles-fixed",
        select(0x3C, 0, true, true),
        CounterSet::NONE,
        Some(1),
    );
    let error = backend
        .open(
            &[only_fixed_1],
            &BackendTarget::Cpu(0),
            &OpenOptions::default(),
        )
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidEvent, "{error}");
    assert!(
        error.message().contains("fixed counter 1") && error.message().contains("fixed {0,2}"),
        "{error}"
    );
    assert!(model.accesses().is_empty(), "{:?}", model.accesses());
}

/// AnyThread (EVTSEL bit 21, FIXED_CTR_CTRL bit 2 of each field) exists in v3 and v4: the
/// backend passes it through to both kinds of counter. The model has one thread per core, so
/// it counts as without the bit.
#[test]
fn any_thread_on_v3_and_v4_reaches_both_kinds_of_counter() {
    for version in [3, 4] {
        let mut config = PmuModelKind::IntelV4.config();
        config.version = version;
        let (backend, model) = MsrBackend::with_model_config(db(), config).unwrap();
        assert_eq!(backend.pmu().version, version);
        let any = Evtsel::ANY;
        let events = [
            request(
                "instructions:any",
                select(0xC0, 0, true, true) | any,
                CounterSet::NONE,
                Some(0),
            ),
            request(
                "cycles:any",
                select(0x3C, 0, true, false) | any,
                CounterSet::first(4),
                None,
            ),
        ];
        let mut group = backend
            .open(&events, &BackendTarget::Cpu(0), &OpenOptions::default())
            .unwrap();
        assert_eq!(counters(&group), [CounterRef::Fixed(0), CounterRef::Gp(0)]);
        group.enable().unwrap();
        let sel = model.peek(0, regs::IA32_PERFEVTSEL0).unwrap();
        assert_ne!(sel & any, 0, "v{version}: EVTSEL0 {sel:#x}");
        let ctrl = model.peek(0, regs::IA32_FIXED_CTR_CTRL).unwrap();
        assert_eq!(
            ctrl & fixed_ctrl::field(0),
            fixed_ctrl::OS | fixed_ctrl::USR | fixed_ctrl::ANY,
            "v{version}: FIXED_CTR_CTRL {ctrl:#x}"
        );
        model.feed_instructions(7, 3);
        model.feed_cycles(50, 9);
        assert_eq!(values(&mut group), [10, 50], "v{version}");
    }
}

/// Before v3 and from v5 (where CPUID.0AH:EDX bit 15 deprecates it) the bit does not exist:
/// the backend refuses the encoding before touching a register.
#[test]
fn any_thread_is_refused_on_v2_and_v5() {
    for kind in [PmuModelKind::IntelV2, PmuModelKind::IntelV5] {
        let (backend, model) = model(kind);
        for (counters, fixed) in [(CounterSet::first(2), None), (CounterSet::NONE, Some(0))] {
            let event = request(
                "cycles:any",
                select(0x3C, 0, true, true) | Evtsel::ANY,
                counters,
                fixed,
            );
            let error = backend
                .open(&[event], &BackendTarget::Cpu(0), &OpenOptions::default())
                .unwrap_err();
            assert_eq!(error.kind(), ErrorKind::InvalidEvent, "{kind}: {error}");
            assert!(error.message().contains("0x200000"), "{kind}: {error}");
        }
        assert!(model.accesses().is_empty(), "{kind}");
        // The modelled CPU itself refuses the bit too.
        let sel = select(0x3C, 0, true, true) | Evtsel::ANY;
        assert!(
            model.poke(0, regs::IA32_PERFEVTSEL0, sel).is_err(),
            "{kind}"
        );
        let any_field = fixed_ctrl::OS | fixed_ctrl::ANY;
        assert!(
            model.poke(0, regs::IA32_FIXED_CTR_CTRL, any_field).is_err(),
            "{kind}"
        );
    }
}
