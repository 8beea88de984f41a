//! Conformance-style behaviour of the backend on every PMU model, one body for all.

use counterhal_hal::BackendExt;
use counterhal_hal::{
    Backend, BackendTarget, CounterSet, DeviceKind, Encoding, ErrorKind, EventRequest, Group,
    OpenOptions, PerfAttr, Reading, Scope,
};
use counterhal_msr::{CounterRef, PmuModelKind, regs};

use crate::common::{self, cycles_gp, instructions, model, request, select};

fn each_model(body: impl Fn(PmuModelKind)) {
    for kind in PmuModelKind::ALL {
        body(kind);
    }
}

#[test]
fn counts_fed_events_exactly_with_tsc_times() {
    each_model(|kind| {
        let (backend, model) = model(kind);
        let events = [instructions(&backend, &model), cycles_gp(&model)];
        let mut group = backend
            .open(&events, &BackendTarget::Cpu(0), &OpenOptions::default())
            .unwrap();
        assert_eq!(group.len(), 2);
        model.feed_instructions(1_000, 1_000);
        model.advance_nanos(5_000);
        assert_eq!(
            group.read_to_vec().unwrap(),
            vec![Reading::new(0, 0, 0); 2],
            "{kind}: disabled"
        );
        group.enable().unwrap();
        model.feed_instructions(1_234, 766);
        model.feed_cycles(3_000, 1_000);
        model.advance_nanos(10_000);
        let readings = group.read_to_vec().unwrap();
        assert_eq!(readings[0], Reading::new(2_000, 10_000, 10_000), "{kind}");
        assert_eq!(readings[1], Reading::new(4_000, 10_000, 10_000), "{kind}");
        assert_eq!(readings[0].scaled(), Some(2_000));
    });
}

#[test]
fn reads_are_monotonic_and_stable_after_disable() {
    each_model(|kind| {
        let (backend, model) = model(kind);
        let mut group = backend
            .open(
                &[cycles_gp(&model)],
                &BackendTarget::Cpu(1),
                &OpenOptions::default(),
            )
            .unwrap();
        assert_eq!(group.cpu(), 1);
        group.enable().unwrap();
        let mut last = 0;
        for step in 1..=5u64 {
            model
                .feed_on(1, model.cycles_event().0, 0, step * 100, 0)
                .unwrap();
            model.feed_cycles(1_000_000, 0); // CPU 0: not ours
            model.advance_tsc(1_000);
            let value = group.read_to_vec().unwrap()[0].value;
            assert!(value > last, "{kind}: {value} after {last}");
            last = value;
        }
        assert_eq!(last, 1_500, "{kind}");
        group.disable().unwrap();
        let stopped = group.read_to_vec().unwrap()[0];
        model
            .feed_on(1, model.cycles_event().0, 0, 999, 999)
            .unwrap();
        model.advance_tsc(50_000);
        assert_eq!(
            group.read_to_vec().unwrap()[0],
            stopped,
            "{kind}: moved after disable"
        );
        assert_eq!(stopped.time_enabled, 2_500, "{kind}: 5000 ticks at 2 GHz");
        // Enable again: values and times resume from where they stopped.
        group.enable().unwrap();
        model.feed_on(1, model.cycles_event().0, 0, 10, 0).unwrap();
        model.advance_tsc(2_000);
        assert_eq!(
            group.read_to_vec().unwrap()[0],
            Reading::new(1_510, 3_500, 3_500),
            "{kind}"
        );
    });
}

#[test]
fn reset_zeroes_values_and_keeps_times() {
    each_model(|kind| {
        let (backend, model) = model(kind);
        let mut group = backend
            .open(
                &[instructions(&backend, &model)],
                &BackendTarget::Cpu(0),
                &OpenOptions::default(),
            )
            .unwrap();
        group.enable().unwrap();
        model.feed_instructions(500, 0);
        model.advance_tsc(400);
        group.reset().unwrap();
        let reading = group.read_to_vec().unwrap()[0];
        assert_eq!(reading, Reading::new(0, 200, 200), "{kind}");
        model.feed_instructions(7, 0);
        assert_eq!(group.read_to_vec().unwrap()[0].value, 7, "{kind}");
        group.restart().unwrap();
        assert_eq!(group.read_to_vec().unwrap()[0].value, 0, "{kind}");
    });
}

#[test]
fn privilege_levels_filter() {
    each_model(|kind| {
        let (backend, model) = model(kind);
        let (code, umask) = model.cycles_event();
        let all = CounterSet::first(32);
        // Intel: the first to ask gets fixed counter 1 (core cycles), so its field is tested.
        let fixed = (!backend.pmu().is_amd()).then_some(1);
        let events = [
            request("user", select(code, umask, true, false), all, fixed),
            request("kernel", select(code, umask, false, true), all, fixed),
            request("both", select(code, umask, true, true), all, fixed),
        ];
        // As many at a time as the PMU has counters (the v1 model has two).
        let pmu = backend.pmu();
        let room = (pmu.gp_counters + pmu.fixed_counters()) as usize;
        let expected = [30, 12, 42];
        for (events, expected) in events.chunks(room).zip(expected.chunks(room)) {
            let mut group = backend
                .open(events, &BackendTarget::Cpu(0), &OpenOptions::default())
                .unwrap();
            group.enable().unwrap();
            model.feed_cycles(30, 12);
            let values: Vec<u64> = group
                .read_to_vec()
                .unwrap()
                .iter()
                .map(|r| r.value)
                .collect();
            assert_eq!(values, expected, "{kind}");
        }
    });
}

#[test]
fn fixed_counters_are_used_where_they_exist() {
    let (backend, model) = model(PmuModelKind::IntelV4);
    let group = backend
        .open(
            &[
                instructions(&backend, &model),
                instructions(&backend, &model),
            ],
            &BackendTarget::Cpu(0),
            &OpenOptions::default(),
        )
        .unwrap();
    let counters: Vec<CounterRef> = group.counters().into_iter().map(|(_, c)| c).collect();
    assert_eq!(counters, vec![CounterRef::Fixed(0), CounterRef::Gp(0)]);
    drop(group);
    // An encoding with a counter mask cannot use a fixed counter.
    let (code, umask) = model.instructions_event();
    let cmask = select(code, umask, true, true) | (1 << 24);
    let group = backend
        .open(
            &[request("inst:c=1", cmask, CounterSet::first(4), Some(0))],
            &BackendTarget::Cpu(0),
            &OpenOptions::default(),
        )
        .unwrap();
    assert_eq!(group.counters()[0].1, CounterRef::Gp(0));
}

#[test]
fn exhausted_counters_are_no_counter_available() {
    each_model(|kind| {
        let (backend, model) = model(kind);
        let gp = backend.pmu().gp_counters as usize;
        let too_many: Vec<EventRequest> = (0..=gp).map(|_| cycles_gp(&model)).collect();
        let error = backend
            .open(&too_many, &BackendTarget::Cpu(0), &OpenOptions::default())
            .unwrap_err();
        assert_eq!(
            error.kind(),
            ErrorKind::NoCounterAvailable,
            "{kind}: {error}"
        );
        // The failed open touched no register.
        assert!(model.writes().is_empty(), "{kind}: {:?}", model.writes());
        // Counters are claimed per CPU across groups, and released on drop.
        let all: Vec<EventRequest> = (0..gp).map(|_| cycles_gp(&model)).collect();
        let first = backend
            .open(&all, &BackendTarget::Cpu(0), &OpenOptions::default())
            .unwrap();
        let error = backend
            .open(
                &[cycles_gp(&model)],
                &BackendTarget::Cpu(0),
                &OpenOptions::default(),
            )
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NoCounterAvailable, "{kind}");
        backend
            .open(
                &[cycles_gp(&model)],
                &BackendTarget::Cpu(1),
                &OpenOptions::default(),
            )
            .unwrap();
        drop(first);
        for i in 0..gp as u32 {
            assert_eq!(
                model.peek(0, backend.pmu().evtsel_msr(i)),
                Some(0),
                "{kind}: cleared"
            );
        }
        backend
            .open(&all, &BackendTarget::Cpu(0), &OpenOptions::default())
            .unwrap();
    });
}

#[test]
fn counters_enabled_by_someone_else_are_left_alone() {
    each_model(|kind| {
        let (backend, model) = model(kind);
        let pmu = backend.pmu().clone();
        // Another user runs counter 0 (as an NMI watchdog would).
        model
            .poke(0, pmu.evtsel_msr(0), select(0x3C, 0, true, true))
            .unwrap();
        let group = backend
            .open(
                &[cycles_gp(&model)],
                &BackendTarget::Cpu(0),
                &OpenOptions::default(),
            )
            .unwrap();
        assert_eq!(group.counters()[0].1, CounterRef::Gp(1), "{kind}");
        let (code, umask) = model.cycles_event();
        let only0 = request(
            "c0",
            select(code, umask, true, true),
            CounterSet::only(0),
            None,
        );
        let error = backend
            .open(&[only0], &BackendTarget::Cpu(0), &OpenOptions::default())
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NoCounterAvailable);
        assert!(error.message().contains("another user"), "{kind}: {error}");
        drop(group);
        assert_ne!(
            model.peek(0, pmu.evtsel_msr(0)),
            Some(0),
            "{kind}: foreign select kept"
        );
    });
}

#[test]
fn targets() {
    each_model(|kind| {
        let (backend, model) = model(kind);
        let caps = backend.capabilities();
        assert_eq!(caps.scope(), Scope::SystemWidePerCpu);
        assert!(caps.supports(&BackendTarget::ThisThread) && caps.supports(&BackendTarget::Cpu(0)));
        assert!(!caps.supports(&BackendTarget::Process {
            pid: 1,
            inherit: false
        }));
        assert!(caps.multiplexing());
        assert_eq!(
            caps.multiplex_slice(),
            Some(std::time::Duration::from_millis(4))
        );
        assert_eq!(caps.general_counters(), Some(backend.pmu().gp_counters));
        let events = [cycles_gp(&model)];
        let options = OpenOptions::default();
        let group = backend
            .open(&events, &BackendTarget::ThisThread, &options)
            .unwrap();
        assert_eq!(group.cpu(), 0, "{kind}: a model runs the thread on CPU 0");
        assert!(!group.pinned_thread());
        drop(group);
        let error = backend
            .open(&events, &BackendTarget::Cpu(2), &options)
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NotFound, "{kind}");
        for target in [
            BackendTarget::Process {
                pid: 1,
                inherit: true,
            },
            BackendTarget::Exec { pid: 1 },
        ] {
            let error = backend.open(&events, &target, &options).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::Unsupported, "{kind}");
            assert!(error.hint().is_some());
        }
        assert_eq!(backend.device(), DeviceKind::Model);
        assert_eq!(backend.label(), "msr (model)");
    });
}

#[test]
fn bad_requests() {
    each_model(|kind| {
        let (backend, model) = model(kind);
        let options = OpenOptions::default();
        let error = backend
            .open(&[], &BackendTarget::Cpu(0), &options)
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
        let perf = EventRequest::new("cycles", Encoding::Perf(PerfAttr::new(0, 0)));
        let error = backend
            .open(&[perf], &BackendTarget::Cpu(0), &options)
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unsupported);
        assert!(error.message().contains("perf attr"), "{error}");
        let mut group = backend
            .open(
                &vec![cycles_gp(&model); 2],
                &BackendTarget::Cpu(0),
                &options,
            )
            .unwrap();
        let mut short = [Reading::default(); 1];
        assert_eq!(
            group.read(&mut short).unwrap_err().kind(),
            ErrorKind::InvalidInput,
            "{kind}"
        );
    });
}

#[test]
fn architectural_fallback_resolves_generic_events() {
    each_model(|kind| {
        let (backend, model) = model(kind);
        // The empty database has no MSR encodings: the CPUID-defined ones are used.
        let resolved = backend.resolve("instructions").unwrap();
        let requests: Vec<EventRequest> =
            resolved.terms.iter().map(|t| t.request.clone()).collect();
        let mut group = backend
            .open(&requests, &BackendTarget::Cpu(0), &OpenOptions::default())
            .unwrap();
        group.enable().unwrap();
        model.feed_instructions(40, 2);
        assert_eq!(group.read_to_vec().unwrap()[0].value, 42, "{kind}");
        assert!(backend.resolve("PAPI_TOT_CYC").is_ok(), "{kind}");
        assert!(backend.generalized().len() >= 4, "{kind}");
        // Reference cycles only where fixed counter 2 exists, and only there: 3C/01 on a
        // general-purpose counter counts a different clock.
        match backend.resolve("ref-cycles") {
            Ok(resolved) => {
                assert!(backend.pmu().fixed.contains(2), "{kind}");
                let Encoding::Evtsel(encoding) = &resolved.terms[0].request.encoding else {
                    panic!("{kind}: not an event select");
                };
                assert_eq!(
                    (encoding.fixed, encoding.counters),
                    (Some(2), CounterSet::NONE)
                );
            }
            Err(_) => assert!(
                backend.pmu().is_amd() || !backend.pmu().fixed.contains(2),
                "{kind}"
            ),
        }
    });
}

#[test]
fn register_writes_land_where_the_pmu_says() {
    // Intel GP counters are zeroed through IA32_A_PMCx where full-width writes exist.
    let (backend, model) = model(PmuModelKind::IntelV4);
    assert!(backend.pmu().full_width_writes);
    let _group = backend
        .open(
            &[cycles_gp(&model)],
            &BackendTarget::Cpu(0),
            &OpenOptions::default(),
        )
        .unwrap();
    assert!(model.writes().iter().any(|w| w.msr == regs::IA32_A_PMC0));
    let (backend, model) = common::model(PmuModelKind::IntelV2);
    assert!(!backend.pmu().full_width_writes);
    let _group = backend
        .open(
            &[cycles_gp(&model)],
            &BackendTarget::Cpu(0),
            &OpenOptions::default(),
        )
        .unwrap();
    assert!(model.writes().iter().any(|w| w.msr == regs::IA32_PMC0));
    assert!(model.writes().iter().all(|w| w.msr != regs::IA32_A_PMC0));
}
