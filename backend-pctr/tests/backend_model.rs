//! The backend over the driver model: the hal contract, counter assignment, programming,
//! reset, wraparound, times and errors, for every CPU kind. Encodings are built by hand here;
//! tests/database.rs covers names resolved through the event database.

use counterhal_hal::BackendExt;
use std::sync::Arc;

use counterhal_events::Database;
use counterhal_hal::{
    Backend, BackendTarget, CounterSet, DeviceKind, Domain, Encoding, ErrorKind, EventRequest,
    Evtsel, Group, OpenOptions, P5Cesr, PerfAttr, Reading, Scope,
};
use counterhal_pctr::abi::{PCIOCS0, PCIOCS1};
use counterhal_pctr::{
    Abi, MAX_EVENTS_PER_CYCLE, MODEL_TSC_HZ, ModelConfig, ModelCpu, ModelHandle, PctrBackend,
    PctrGroup, ResetPolicy, TscFrequency, TscSource, function,
};

const U: u32 = function::U;
const K: u32 = function::K;
const EN: u32 = function::EN;
const KINDS: [ModelCpu; 4] = [
    ModelCpu::P5,
    ModelCpu::P6,
    ModelCpu::IntelArch,
    ModelCpu::Amd,
];

/// The model's TSC frequency.
fn model_tsc() -> TscFrequency {
    TscFrequency::new(MODEL_TSC_HZ, TscSource::Model)
}

/// A TSC frequency of `hz` (as a kernel would report it).
fn hz(hz: u64) -> TscFrequency {
    TscFrequency::new(hz, TscSource::Kernel)
}

fn db() -> Arc<Database> {
    Arc::new(Database::shipped().expect("the shipped database loads"))
}

/// An event select given as a P6-and-later function word (the backend adds user and kernel
/// when it selects neither).
fn request(name: &str, function: u32, counters: u32) -> EventRequest {
    let mut evtsel = Evtsel::from_event_select(u64::from(function));
    evtsel.counters = CounterSet::from_mask(counters);
    EventRequest::new(name, Encoding::Evtsel(evtsel))
}

/// A P5 CESR field given as a function word: event, K, U, C.
fn p5_request(name: &str, function: u32, counters: u32) -> EventRequest {
    let mut cesr = P5Cesr::new(u8::try_from(function & function::P5_EVENT_MASK).unwrap());
    cesr.count_cycles = function & function::P5_C != 0;
    let mut domain = Domain::CONTEXTS;
    if function & function::P5_U != 0 {
        domain |= Domain::USER;
    }
    if function & function::P5_K != 0 {
        domain |= Domain::KERNEL;
    }
    cesr.domain = domain;
    cesr.counters = CounterSet::from_mask(counters);
    EventRequest::new(name, Encoding::P5Cesr(cesr))
}

/// "Instructions" on `cpu` with the given user/kernel bits (none: the backend adds both).
fn instructions(cpu: ModelCpu, user: bool, kernel: bool) -> EventRequest {
    let code = u32::from(cpu.instructions_event().unwrap());
    let (u, k) = if cpu == ModelCpu::P5 {
        (function::P5_U, function::P5_K)
    } else {
        (U, K)
    };
    let word = code | if user { u } else { 0 } | if kernel { k } else { 0 };
    let make = if cpu == ModelCpu::P5 {
        p5_request
    } else {
        request
    };
    make(
        "instructions",
        word,
        CounterSet::first(cpu.counters()).mask(),
    )
}

fn open(backend: &PctrBackend, requests: &[EventRequest]) -> counterhal_hal::Result<PctrGroup> {
    backend.open(
        requests,
        &BackendTarget::ThisThread,
        &OpenOptions::default(),
    )
}

fn values(group: &mut PctrGroup) -> Vec<u64> {
    group
        .read_to_vec()
        .unwrap()
        .iter()
        .map(|r| r.value)
        .collect()
}

#[test]
fn counts_what_the_model_is_fed_on_every_cpu() {
    for cpu in KINDS {
        let (backend, model) = PctrBackend::with_model(db(), cpu);
        assert_eq!(backend.device(), DeviceKind::Model);
        assert_eq!(backend.label(), "pctr (model)");
        let mut group = open(
            &backend,
            &[
                instructions(cpu, true, false),
                instructions(cpu, false, true),
            ],
        )
        .unwrap();
        model.retire_instructions(1_000, 1_000);
        assert_eq!(
            values(&mut group),
            vec![0, 0],
            "{cpu}: counted before enable"
        );
        group.enable().unwrap();
        model.retire_instructions(1_000, 300);
        assert_eq!(values(&mut group), vec![1_000, 300], "{cpu}");
        model.work(2_000);
        assert_eq!(values(&mut group), vec![3_000, 300], "{cpu}");
        group.disable().unwrap();
        model.retire_instructions(5_000, 5_000);
        assert_eq!(
            values(&mut group),
            vec![3_000, 300],
            "{cpu}: counted after disable"
        );
        group.enable().unwrap();
        model.retire_instructions(1, 2);
        assert_eq!(values(&mut group), vec![3_001, 302], "{cpu}: resumed");
    }
}

#[test]
fn neither_user_nor_kernel_means_both() {
    for cpu in KINDS {
        let (backend, model) = PctrBackend::with_model(db(), cpu);
        let mut group = open(&backend, &[instructions(cpu, false, false)]).unwrap();
        let (_, _, word) = group.assignment().next().unwrap();
        let (u, k) = if cpu == ModelCpu::P5 {
            (function::P5_U, function::P5_K)
        } else {
            (U, K)
        };
        assert_eq!(word & (u | k), u | k, "{cpu}: {word:#x}");
        assert_eq!(
            word & EN != 0,
            cpu != ModelCpu::P5,
            "{cpu}: EN on P6 and later only"
        );
        group.enable().unwrap();
        model.retire_instructions(10, 5);
        assert_eq!(values(&mut group), vec![15], "{cpu}");
    }
}

#[test]
fn enable_programs_and_disable_clears_the_functions() {
    let (backend, model) = PctrBackend::with_model(db(), ModelCpu::Amd);
    let requests: Vec<EventRequest> = (0..4)
        .map(|i| request(&format!("e{i}"), 0xc0 | U, 0b1111))
        .collect();
    let mut group = open(&backend, &requests).unwrap();
    assert!(
        (0..4).all(|i| model.function(i) == 0),
        "open must not program anything"
    );
    group.enable().unwrap();
    assert!((0..4).all(|i| model.function(i) == 0xc0 | U | EN));
    assert!(group.is_enabled());
    group.disable().unwrap();
    assert!((0..4).all(|i| model.function(i) == 0));
    // Counter 0 last on enable, first on disable.
    let sets = model.recent_sets();
    let order: Vec<(u32, u32)> = sets.iter().map(|s| (s.counter, s.function)).collect();
    let word = 0xc0 | U | EN;
    assert_eq!(
        order,
        vec![
            (3, word),
            (2, word),
            (1, word),
            (0, word),
            (0, 0),
            (1, 0),
            (2, 0),
            (3, 0)
        ]
    );
}

#[test]
fn reset_writes_zero_then_the_function() {
    for policy in [ResetPolicy::WhenFunctionChanges, ResetPolicy::EverySet] {
        let (backend, model) = PctrBackend::with_model(db(), ModelCpu::IntelArch);
        model.set_reset_policy(policy);
        let mut group = open(&backend, &[instructions(ModelCpu::IntelArch, true, false)]).unwrap();
        group.enable().unwrap();
        model.retire_instructions(500, 0);
        assert_eq!(values(&mut group), vec![500]);
        model.clear_sets();
        group.reset().unwrap();
        let sets: Vec<(u32, u32)> = model
            .recent_sets()
            .iter()
            .map(|s| (s.counter, s.function))
            .collect();
        assert_eq!(sets, vec![(0, 0), (0, 0xc0 | U | EN)], "{policy:?}");
        assert_eq!(model.counter(0), 0, "{policy:?}: hardware counter zeroed");
        assert_eq!(values(&mut group), vec![0], "{policy:?}");
        model.retire_instructions(25, 0);
        assert_eq!(values(&mut group), vec![25], "{policy:?}");
        // Reset while disabled: values only, no ioctl.
        group.disable().unwrap();
        model.clear_sets();
        group.reset().unwrap();
        assert!(model.recent_sets().is_empty());
        assert_eq!(values(&mut group), vec![0]);
    }
}

#[test]
fn restart_and_stop() {
    let (backend, model) = PctrBackend::with_model(db(), ModelCpu::P6);
    let mut group = open(&backend, &[instructions(ModelCpu::P6, true, true)]).unwrap();
    group.enable().unwrap();
    model.work(100);
    group.restart().unwrap();
    model.work(40);
    let mut readings = [Reading::default()];
    group.stop(&mut readings).unwrap();
    assert_eq!(readings[0].value, 40);
    model.work(40);
    assert_eq!(
        group.read_to_vec().unwrap()[0],
        readings[0],
        "read after stop is stable"
    );
}

fn wraps_at(cpu: ModelCpu, bits: u32) {
    let (backend, model) = PctrBackend::with_model(db(), cpu);
    assert_eq!(backend.counter_width(), bits);
    let mut group = open(&backend, &[instructions(cpu, true, false)]).unwrap();
    group.enable().unwrap();
    let top = 1u64 << bits;
    // Put the hardware counter near its top. The backend sees a jump of more than half the
    // range, which it cannot tell from a step backwards: it counts 0 and moves its baseline.
    model.set_counter(0, top - 100);
    assert_eq!(values(&mut group), vec![0], "{cpu}");
    assert_eq!(group.backward_steps(), 1, "{cpu}");
    model.retire_instructions(60, 0);
    assert_eq!(values(&mut group), vec![60], "{cpu}");
    model.retire_instructions(90, 0); // crosses 2^bits
    assert_eq!(model.counter(0), 50, "{cpu}: the hardware wrapped");
    assert_eq!(
        values(&mut group),
        vec![150],
        "{cpu}: the wrap is accumulated"
    );
    // 3/4 of the range between two reads with no time passing is more than half and more
    // than the cycles allow: taken as a step backwards.
    model.retire_instructions(3 * (top / 8), 0);
    model.retire_instructions(3 * (top / 8), 0);
    assert_eq!(values(&mut group), vec![150], "{cpu}");
    assert_eq!(group.backward_steps(), 2, "{cpu}");
    // The same 3/4 of the range over enough cycles is a long forward step: counted in full.
    model.advance_tsc(3 * (top / 4) / MAX_EVENTS_PER_CYCLE + 1);
    model.retire_instructions(3 * (top / 4), 0);
    assert_eq!(values(&mut group), vec![150 + 3 * (top / 4)], "{cpu}");
    assert_eq!(group.backward_steps(), 2, "{cpu}: no new step backwards");
    let counted = 150 + 3 * (top / 4);
    // Just under half the range is still counted, even with no time passing.
    model.retire_instructions(top / 2 - 1, 0);
    assert_eq!(values(&mut group), vec![counted + top / 2 - 1], "{cpu}");
}

#[test]
fn wraparound_near_2_pow_40() {
    wraps_at(ModelCpu::P5, 40);
    wraps_at(ModelCpu::P6, 40);
}

#[test]
fn wraparound_near_2_pow_48() {
    wraps_at(ModelCpu::IntelArch, 48);
    wraps_at(ModelCpu::Amd, 48);
}

#[test]
fn wrap_across_many_reads_adds_up() {
    let (backend, model) = PctrBackend::with_model(db(), ModelCpu::P6);
    let mut group = open(&backend, &[instructions(ModelCpu::P6, true, false)]).unwrap();
    group.enable().unwrap();
    model.set_counter(0, (1 << 40) - 1_000);
    let start = values(&mut group)[0]; // the jump to near the top counts 0 (one step backwards)
    for _ in 0..10 {
        model.retire_instructions(1 << 37, 0); // 1/8 of the range each time
        let _ = values(&mut group);
    }
    assert_eq!(values(&mut group)[0] - start, 10 << 37);
    assert_eq!(group.backward_steps(), 1);
}

#[test]
fn times_come_from_the_tsc() {
    let (backend, model) = PctrBackend::with_model(db(), ModelCpu::Amd);
    assert_eq!(
        backend.tsc(),
        TscFrequency::new(MODEL_TSC_HZ, TscSource::Model)
    );
    let mut group = open(&backend, &[instructions(ModelCpu::Amd, true, true)]).unwrap();
    assert_eq!(group.read_to_vec().unwrap()[0], Reading::new(0, 0, 0));
    model.set_ioctl_cycles(0);
    group.enable().unwrap();
    model.advance_tsc(MODEL_TSC_HZ); // one second
    let reading = group.read_to_vec().unwrap()[0];
    assert_eq!(reading.time_enabled, 1_000_000_000);
    assert_eq!(reading.time_running, reading.time_enabled);
    group.disable().unwrap();
    model.advance_tsc(MODEL_TSC_HZ);
    assert_eq!(
        group.read_to_vec().unwrap()[0].time_enabled,
        1_000_000_000,
        "stopped"
    );
    group.enable().unwrap();
    model.advance_tsc(MODEL_TSC_HZ / 2);
    let reading = group.read_to_vec().unwrap()[0];
    assert_eq!(reading.time_enabled, 1_500_000_000);
    assert_eq!(reading.scaled(), Some(reading.value));
    // With the default ioctl cost, time keeps moving between reads.
    model.set_ioctl_cycles(1_000);
    let a = group.read_to_vec().unwrap()[0].time_enabled;
    let b = group.read_to_vec().unwrap()[0].time_enabled;
    assert!(b > a, "{b} <= {a}");
}

#[test]
fn ctr0_only_and_ctr1_only_events_are_placed() {
    let (backend, model) = PctrBackend::with_model(db(), ModelCpu::P6);
    let mul = request("MUL", 0x12 | U, 0b10);
    let flops = request("FLOPS", 0xc1 | U, 0b01);
    let mut group = open(&backend, &[mul, flops]).unwrap();
    let placed: Vec<(&str, u32)> = group.assignment().map(|(n, c, _)| (n, c)).collect();
    assert_eq!(placed, vec![("MUL", 1), ("FLOPS", 0)]);
    group.enable().unwrap();
    model.feed(0x12, None, 4, 0);
    model.feed(0xc1, None, 9, 0);
    assert_eq!(values(&mut group), vec![4, 9]);
}

#[test]
fn conflicts_name_the_events() {
    let (backend, _model) = PctrBackend::with_model(db(), ModelCpu::P6);
    let error = open(
        &backend,
        &[
            request("FP_COMP_OPS_EXE", 0x10, 0b01),
            request("CYCLES_DIV_BUSY", 0x14, 0b01),
        ],
    )
    .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NoCounterAvailable);
    assert!(error.message().contains("FP_COMP_OPS_EXE"), "{error}");
    assert!(error.message().contains("CYCLES_DIV_BUSY"), "{error}");
    let error = open(
        &backend,
        &[request("MUL", 0x12, 0b10), request("DIV", 0x13, 0b10)],
    )
    .unwrap_err();
    assert!(error.message().contains("only counter(s) 1"), "{error}");
    let three: Vec<EventRequest> = (0..3)
        .map(|i| request(&format!("e{i}"), 0xc0, 0b11))
        .collect();
    let error = open(&backend, &three).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NoCounterAvailable);
    assert!(error.message().contains("3 events"), "{error}");
    let (amd, _model) = PctrBackend::with_model(db(), ModelCpu::Amd);
    let five: Vec<EventRequest> = (0..5)
        .map(|i| request(&format!("e{i}"), 0xc0, 0b1111))
        .collect();
    assert_eq!(
        open(&amd, &five).unwrap_err().kind(),
        ErrorKind::NoCounterAvailable
    );
    assert!(open(&amd, &five[..4]).is_ok());
}

#[test]
fn p6_group_on_counter_one_holds_counter_zero_as_gate() {
    let (backend, model) = PctrBackend::with_model(db(), ModelCpu::P6);
    let mut group = open(&backend, &[request("MUL", 0x12 | U, 0b10)]).unwrap();
    assert_eq!(group.owned_counters(), CounterSet::from_mask(0b11));
    group.enable().unwrap();
    assert_eq!(model.function(0), EN, "counter 0 carries EN alone");
    model.feed(0x12, None, 6, 0);
    assert_eq!(values(&mut group), vec![6]);
    // Counter 0 is held: another group cannot have it.
    let error = open(&backend, &[request("FLOPS", 0xc1, 0b01)]).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NoCounterAvailable);
    drop(group);
    assert_eq!(
        (model.function(0), model.function(1)),
        (0, 0),
        "drop clears the functions"
    );
    assert!(
        open(&backend, &[request("FLOPS", 0xc1, 0b01)]).is_ok(),
        "drop releases counters"
    );
}

#[test]
fn groups_share_the_counters_without_overlap() {
    let (backend, model) = PctrBackend::with_model(db(), ModelCpu::Amd);
    let mut a = open(&backend, &[request("a", 0xc0 | U, 0b1111)]).unwrap();
    let mut b = open(&backend, &[request("b", 0xc0 | K, 0b1111)]).unwrap();
    let ca = a.assignment().next().unwrap().1;
    let cb = b.assignment().next().unwrap().1;
    assert_ne!(ca, cb);
    a.enable().unwrap();
    b.enable().unwrap();
    model.retire_instructions(3, 4);
    assert_eq!((values(&mut a), values(&mut b)), (vec![3], vec![4]));
    let _c = open(
        &backend,
        &[request("c", 0xc0, 0b1111), request("d", 0xc0, 0b1111)],
    )
    .unwrap();
    let error = open(&backend, &[request("e", 0xc0, 0b1111)]).unwrap_err();
    assert!(
        error.message().contains("held by other open groups"),
        "{error}"
    );
}

#[test]
fn many_open_close_cycles_leave_nothing_behind() {
    let (backend, model) = PctrBackend::with_model(db(), ModelCpu::Amd);
    for _ in 0..10_000 {
        let mut group = open(&backend, &[instructions(ModelCpu::Amd, true, true)]).unwrap();
        group.enable().unwrap();
    }
    assert!((0..4).all(|i| model.function(i) == 0));
    let all: Vec<EventRequest> = (0..4)
        .map(|i| request(&format!("e{i}"), 0xc0, 0b1111))
        .collect();
    assert!(open(&backend, &all).is_ok(), "every counter is free again");
}

#[test]
fn another_program_reprogramming_a_counter_is_busy() {
    let (backend, model) = PctrBackend::with_model(db(), ModelCpu::IntelArch);
    let mut group = open(&backend, &[instructions(ModelCpu::IntelArch, true, false)]).unwrap();
    group.enable().unwrap();
    let mut other = model.open(true);
    counterhal_pctr::set_function(&mut other, 0, 0x3c | U | EN).unwrap();
    let error = group.read_to_vec().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Busy);
    assert!(error.message().contains("counter 0"), "{error}");
    // It names the other cause: on a multi-CPU kernel older than the 2024 driver, a read on
    // another CPU finds a counter that was never programmed.
    assert!(error.message().contains("another CPU"), "{error}");
    assert!(error.message().contains("2024"), "{error}");
    assert!(error.hint().unwrap().contains("one-CPU"), "{error}");
    group.restart().unwrap_err(); // disable reports the theft, then clears
    group.enable().unwrap();
    model.retire_instructions(8, 0);
    assert_eq!(values(&mut group), vec![8]);
}

#[test]
fn errors_for_bad_input() {
    let (backend, _model) = PctrBackend::with_model(db(), ModelCpu::IntelArch);
    let perf = EventRequest::new("cycles", Encoding::Perf(PerfAttr::new(0, 0)));
    let error = open(&backend, &[perf]).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported);
    assert!(error.message().contains("perf attr"), "{error}");
    // Of bits 19-21 (pin control, interrupt, AnyThread), which the driver refuses, an
    // encoding can carry only AnyThread.
    let error = open(&backend, &[request("x", 0xc0 | (1 << 21), 0b11)]).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidEvent);
    assert!(error.message().contains("bits 19-21"), "{error}");
    let error = open(&backend, &[request("x", 0xc0, 0b1100)]).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NoCounterAvailable);
    // An AMD event code needs bits 35:32, which the 32-bit function word cannot carry.
    let (amd, _model) = PctrBackend::with_model(db(), ModelCpu::Amd);
    let mut wide = Evtsel::new(0x1d0, 0);
    wide.counters = CounterSet::first(4);
    let error = open(&amd, &[EventRequest::new("x", Encoding::Evtsel(wide))]).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported);
    assert!(error.message().contains("32-bit"), "{error}");
    // The P5 takes CESR fields only, the others event selects only.
    let (p5, _model) = PctrBackend::with_model(db(), ModelCpu::P5);
    let error = open(&p5, &[request("x", 0x16, 0b11)]).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported);
    assert!(error.message().contains("x86 EVTSEL"), "{error}");
    let error = open(&backend, &[p5_request("x", 0x16, 0b11)]).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported);
    let mut group = open(&backend, &[instructions(ModelCpu::IntelArch, true, true)]).unwrap();
    let error = group.read(&mut []).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidInput);
}

#[test]
fn only_this_thread_is_a_target() {
    let (backend, _model) = PctrBackend::with_model(db(), ModelCpu::Amd);
    let events = [instructions(ModelCpu::Amd, true, true)];
    for target in [
        BackendTarget::Cpu(0),
        BackendTarget::Process {
            pid: 1,
            inherit: false,
        },
        BackendTarget::Process {
            pid: 1,
            inherit: true,
        },
        BackendTarget::Exec { pid: 1 },
    ] {
        let error = backend
            .open(&events, &target, &OpenOptions::default())
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unsupported, "{target}");
        assert!(error.hint().is_some());
    }
}

#[test]
fn read_only_device_is_permission_denied() {
    let model = ModelHandle::new(ModelCpu::P6);
    let backend = PctrBackend::from_device(
        db(),
        ModelCpu::P6,
        None,
        Box::new(model.open(false)),
        40,
        model_tsc(),
    )
    .unwrap();
    let error = open(&backend, &[instructions(ModelCpu::P6, true, true)]).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::PermissionDenied);
    assert_eq!(error.errno(), Some(1));
}

#[test]
fn cpu_without_counters_is_unsupported() {
    let (backend, _model) = PctrBackend::with_model(db(), ModelCpu::TscOnly);
    let error = open(&backend, &[request("x", 0xc0, 0b1)]).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported);
    assert_eq!(backend.capabilities().general_counters(), Some(0));
}

#[test]
fn from_device_detects_and_checks_the_abi() {
    for cpu in KINDS {
        let model = ModelHandle::new(cpu);
        let backend =
            PctrBackend::from_device(db(), cpu, None, Box::new(model.open(true)), 40, model_tsc())
                .unwrap();
        assert_eq!(backend.abi(), cpu.abi());
        assert_eq!(backend.cpu_id(), cpu.default_model_id());
    }
    // No legacy driver drives AMD's counters.
    let legacy = ModelHandle::new(ModelCpu::P6);
    let error = PctrBackend::from_device(
        db(),
        ModelCpu::Amd,
        None,
        Box::new(legacy.open(true)),
        48,
        hz(1),
    )
    .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidInput);
    assert!(error.message().contains("legacy"), "{error}");
    let model = ModelHandle::new(ModelCpu::Amd);
    let bad_width = PctrBackend::from_device(
        db(),
        ModelCpu::Amd,
        None,
        Box::new(model.open(true)),
        0,
        hz(1),
    );
    assert_eq!(bad_width.unwrap_err().kind(), ErrorKind::InvalidInput);
    let bad_hz = PctrBackend::from_device(
        db(),
        ModelCpu::Amd,
        None,
        Box::new(model.open(true)),
        48,
        hz(0),
    );
    assert_eq!(bad_hz.unwrap_err().kind(), ErrorKind::InvalidInput);
}

#[test]
fn capabilities_say_what_pctr_is() {
    for cpu in KINDS {
        let (backend, _model) = PctrBackend::with_model(db(), cpu);
        let caps = backend.capabilities();
        assert_eq!(backend.name(), "pctr");
        assert_eq!(caps.general_counters(), Some(cpu.counters()));
        let width = if cpu.abi() == Abi::Legacy { 40 } else { 48 };
        assert_eq!(caps.counter_width(), Some(width), "{cpu}");
        assert_eq!(caps.fixed_counters(), 0);
        assert_eq!(caps.scope(), Scope::SystemWidePerCpu);
        // Multiplexed in software, in perf's 4 ms turns.
        assert!(caps.multiplexing());
        assert_eq!(
            caps.multiplex_slice(),
            Some(std::time::Duration::from_millis(4))
        );
        assert_eq!(caps.domains(), Domain::USER | Domain::KERNEL);
        assert!(caps.supports(&BackendTarget::ThisThread));
        assert!(!caps.supports(&BackendTarget::Cpu(0)));
        assert!(!caps.supports(&BackendTarget::Process {
            pid: 1,
            inherit: false
        }));
        assert_eq!(caps.self_monitoring_reads(), cpu != ModelCpu::P5, "{cpu}");
    }
}

#[test]
fn empty_group_works() {
    let (backend, _model) = PctrBackend::with_model(db(), ModelCpu::P6);
    let mut group = open(&backend, &[]).unwrap();
    assert!(group.is_empty());
    group.enable().unwrap();
    group.reset().unwrap();
    assert!(group.read_to_vec().unwrap().is_empty());
    group.disable().unwrap();
}

fn p5_current_config() -> ModelConfig {
    ModelConfig::new(ModelCpu::P5)
        .with_abi(Abi::Current)
        .expect("the current i386 driver drives the P5")
}

#[test]
fn p5_counts_under_the_current_abi() {
    let cpu = ModelCpu::P5;
    let (backend, model) = PctrBackend::with_model_config(db(), p5_current_config());
    assert_eq!(backend.abi(), Abi::Current);
    assert_eq!(backend.cpu_kind(), cpu);
    assert_eq!(backend.counter_width(), 40);
    let caps = backend.capabilities();
    assert_eq!(caps.general_counters(), Some(2));
    assert!(!caps.self_monitoring_reads());
    let mut group = open(
        &backend,
        &[
            instructions(cpu, true, false),
            instructions(cpu, false, false),
        ],
    )
    .unwrap();
    group.enable().unwrap();
    model.retire_instructions(1_000, 500);
    assert_eq!(values(&mut group), vec![1_000, 1_500]);
    // Only PCIOCS0 and PCIOCS1 were used, with P5 words (no EN bit).
    let sets = model.recent_sets();
    assert!(!sets.is_empty());
    for record in &sets {
        assert!([PCIOCS0, PCIOCS1].contains(&record.request), "{record:?}");
        assert_eq!(record.function & function::EN, 0, "{record:?}");
        assert_eq!(record.result, Ok(()));
    }
    // Reset zeroes (the P5 path zeroes on every set), and counting goes on.
    group.reset().unwrap();
    model.retire_instructions(7, 0);
    assert_eq!(values(&mut group), vec![7, 7]);
    // Wraparound at 40 bits: the P5 is read with rdmsr, at its hardware width.
    model.set_counter(0, (1 << 40) - 3);
    let _ = values(&mut group); // the jump itself is a step backwards, counted 0
    model.retire_instructions(10, 0);
    assert_eq!(model.counter(0), 7, "the hardware wrapped at 2^40");
    assert_eq!(values(&mut group)[0], 17);
    group.disable().unwrap();
    assert_eq!((model.function(0), model.function(1)), (0, 0));
    // A third event does not fit two counters.
    let error = open(
        &backend,
        &[
            instructions(cpu, true, false),
            instructions(cpu, true, false),
            instructions(cpu, true, false),
        ],
    )
    .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NoCounterAvailable);
}

#[test]
fn from_device_accepts_a_p5_on_either_abi() {
    for config in [ModelConfig::new(ModelCpu::P5), p5_current_config()] {
        let model = ModelHandle::with_config(config);
        let backend = PctrBackend::from_device(
            db(),
            ModelCpu::P5,
            None,
            Box::new(model.open(true)),
            40,
            model_tsc(),
        )
        .unwrap();
        assert_eq!(backend.abi(), config.abi());
        let mut group = open(&backend, &[instructions(ModelCpu::P5, true, false)]).unwrap();
        group.enable().unwrap();
        model.retire_instructions(12, 3);
        assert_eq!(values(&mut group), vec![12], "{}", config.describe());
    }
    // Intel architectural is driven by current drivers only.
    let model = ModelHandle::new(ModelCpu::P5);
    let error = PctrBackend::from_device(
        db(),
        ModelCpu::IntelArch,
        None,
        Box::new(model.open(true)),
        40,
        hz(1),
    )
    .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidInput);
    assert!(error.message().contains("intel-arch"), "{error}");
}

/// On i386 the kernel keeps 40 bits of a 48-bit counter: the backend must accumulate at the
/// width reads carry, not at the hardware's.
#[test]
fn i386_kernel_mask_sets_the_wrap_width() {
    let cpu = ModelCpu::IntelArch;
    let config = ModelConfig::new(cpu).i386();
    let (backend, model) = PctrBackend::with_model_config(db(), config);
    assert_eq!(config.hardware_width(), 48);
    assert_eq!(backend.counter_width(), 40);
    assert_eq!(backend.capabilities().counter_width(), Some(40));
    let mut group = open(&backend, &[instructions(cpu, true, false)]).unwrap();
    group.enable().unwrap();
    model.retire_instructions(100, 0);
    assert_eq!(values(&mut group), vec![100]);
    // Move the counter to 2^40 - 50: the jump is taken as a step backwards (counted 0).
    model.set_counter(0, (1 << 40) - 50);
    assert_eq!(values(&mut group), vec![100]);
    model.retire_instructions(150, 0);
    assert_eq!(
        model.counter(0),
        (1 << 40) + 100,
        "the 48-bit hardware counter did not wrap"
    );
    assert_eq!(
        values(&mut group),
        vec![250],
        "the read wrapped at 40 bits and the backend followed"
    );
    assert_eq!(group.backward_steps(), 1);
    // Many reads across several 40-bit wraps add up.
    for _ in 0..20 {
        model.retire_instructions(1 << 37, 0);
        let _ = values(&mut group);
    }
    assert_eq!(values(&mut group), vec![250 + (20 << 37)]);
    assert_eq!(group.backward_steps(), 1);
}

/// The same model read by a backend told the hardware width (48) miscounts at the i386
/// kernel's wrap: this is why the width must be the one reads carry.
#[test]
fn accumulating_at_the_hardware_width_on_i386_goes_wrong() {
    let cpu = ModelCpu::IntelArch;
    let model = ModelHandle::with_config(ModelConfig::new(cpu).i386());
    let backend =
        PctrBackend::from_device(db(), cpu, None, Box::new(model.open(true)), 48, model_tsc())
            .unwrap();
    let mut group = open(&backend, &[instructions(cpu, true, false)]).unwrap();
    group.enable().unwrap();
    model.set_counter(0, (1 << 40) - 50);
    let before = values(&mut group)[0];
    model.retire_instructions(150, 0);
    let after = values(&mut group)[0];
    assert_ne!(
        after - before,
        150,
        "a 48-bit backend cannot follow a 40-bit wrap"
    );
}

#[test]
fn legacy_tsc_only_cpu_is_unsupported() {
    let config = ModelConfig::new(ModelCpu::TscOnly)
        .with_abi(Abi::Legacy)
        .unwrap();
    let (backend, model) = PctrBackend::with_model_config(db(), config);
    assert_eq!(backend.abi(), Abi::Legacy);
    assert_eq!(backend.capabilities().general_counters(), Some(0));
    let error = open(&backend, &[request("x", 0x16, 0b11)]).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported);
    assert!(model.recent_sets().is_empty());
    // A device of that CPU is detected as legacy by from_device too.
    let backend = PctrBackend::from_device(
        db(),
        ModelCpu::TscOnly,
        None,
        Box::new(model.open(false)),
        40,
        model_tsc(),
    )
    .unwrap();
    assert_eq!(backend.abi(), Abi::Legacy);
}
