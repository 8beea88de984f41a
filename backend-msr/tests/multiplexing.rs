//! Software multiplexing on every PMU model: more independent events than counters take turns,
//! driven by the model's clock, with exact accounting and estimates within 2% of the truth.

use std::time::Duration;

use counterhal_hal::{Backend, BackendTarget, CounterSet, ErrorKind, Group, OpenOptions, Reading};
use counterhal_msr::{CounterRef, MsrGroup, PmuModelKind};

use crate::common::{self, instructions, model, request, select};

/// One step of the steady workload: 10 µs; a turn is 4 ms = 400 steps.
const STEP_NANOS: u64 = 10_000;

/// The fed events: `2 x gp` distinct codes with distinct steady rates (events per step), so
/// that they take two full turns.
fn rotating_events(gp: u32) -> Vec<(u16, u64)> {
    (0..2 * gp)
        .map(|i| (0x10 + i as u16, 3 + 7 * u64::from(i)))
        .collect()
}

struct Run {
    readings: Vec<Reading>,
    truth: Vec<u64>,
    gp: u32,
    group: MsrGroup,
}

/// Opens the rotating events (and, on Intel, instructions on fixed counter 0) ungrouped on
/// CPU 0, and feeds `steps` steps of steady work, the rotating counters first preloaded near
/// their wrap.
fn run(kind: PmuModelKind, steps: u64, noisy: bool) -> Run {
    let (backend, model) = model(kind);
    let gp = backend.pmu().gp_counters;
    let events = rotating_events(gp);
    let mut requests: Vec<_> = events
        .iter()
        .map(|&(code, _)| {
            request(
                &format!("e{code:x}"),
                select(code, 0x01, true, true),
                CounterSet::first(gp),
                None,
            )
        })
        .collect();
    let fixed = !backend.pmu().fixed.is_empty() && !backend.pmu().is_amd();
    if fixed {
        requests.push(instructions(&backend, &model));
    }
    let mut group = backend
        .open(&requests, &BackendTarget::Cpu(0), &OpenOptions::ungrouped())
        .unwrap();
    assert!(group.turns() > 1, "{kind}: {group:?}");
    if fixed {
        let counters = group.counters();
        assert_eq!(counters.last().unwrap().1, CounterRef::Fixed(0), "{kind}");
    }
    // The first turn's counters start 5 events before their wrap; the second turn's events
    // have no counter to load until their turn.
    for index in 0..events.len() {
        let width = backend.pmu().gp_width;
        let loaded = group.set_counter(index, (1u64 << width) - 5);
        if index < gp as usize {
            loaded.unwrap();
        } else {
            assert_eq!(loaded.unwrap_err().kind(), ErrorKind::Unsupported, "{kind}");
        }
    }
    group.enable().unwrap();
    let mut truth = vec![0u64; requests.len()];
    let mut noise = counterhal_conformance::prop::Gen::new(0x2545_f491_4f6c_dd1d);
    for _ in 0..steps {
        for (i, &(code, rate)) in events.iter().enumerate() {
            // Noisy: each step between 0.5 and 1.5 times the rate (the suite's deterministic generator).
            let rate = if noisy {
                rate * 100 / 2 + noise.below(rate * 100 + 1)
            } else {
                rate
            };
            model.feed(code, 0x01, rate, 0);
            truth[i] += rate;
        }
        if fixed {
            model.feed_instructions(17, 0);
            truth[events.len()] += 17;
        }
        model.advance_nanos(STEP_NANOS);
    }
    let readings = group.read_to_vec().unwrap();
    Run {
        readings,
        truth,
        gp,
        group,
    }
}

#[test]
fn every_model_estimates_within_two_percent_with_exact_accounting() {
    for kind in PmuModelKind::ALL {
        let steps = 40_000; // 400 ms: 100 turns
        let Run {
            readings,
            truth,
            gp,
            group,
        } = run(kind, steps, false);
        let enabled = steps * STEP_NANOS;
        let rotating = rotating_events(gp);
        let mut running_sum = 0;
        let mut worst = 0f64;
        for (i, reading) in readings.iter().enumerate() {
            assert_eq!(
                reading.time_enabled, enabled,
                "{kind}: the set's time enabled"
            );
            assert!(reading.time_running <= reading.time_enabled, "{kind}");
            if i >= rotating.len() {
                // Fixed counter 0 does not rotate: it counts everything, all the time.
                assert_eq!(*reading, Reading::new(truth[i], enabled, enabled), "{kind}");
                continue;
            }
            assert!(reading.is_multiplexed(), "{kind}: {reading:?}");
            running_sum += reading.time_running;
            // Exact accounting: the value is the rate times the steps the event ran, with
            // nothing lost or counted twice at 100 switches and a wrap in the first turn.
            let rate = rotating[i].1;
            assert_eq!(
                reading.value,
                rate * (reading.time_running / STEP_NANOS),
                "{kind}: event {i} {reading:?}"
            );
            let estimate = reading.scaled().unwrap();
            let error = (estimate as f64 - truth[i] as f64).abs() / truth[i] as f64;
            worst = worst.max(error);
            assert!(error < 0.02, "{kind}: {estimate} vs {} ({error})", truth[i]);
        }
        let slice = 4_000_000;
        assert!(
            running_sum.abs_diff(u64::from(gp) * enabled) <= slice,
            "{kind}: {running_sum} vs {gp} x {enabled}"
        );
        assert!(
            group.switches() >= 99,
            "{kind}: {} switches",
            group.switches()
        );
        eprintln!(
            "{kind}: {} events on {gp} counters, {} turns, worst estimate error {:.4}%",
            rotating.len(),
            group.turns(),
            worst * 100.0
        );
    }
}

#[test]
fn a_noisy_workload_estimates_within_two_percent() {
    for kind in PmuModelKind::ALL {
        let Run {
            readings,
            truth,
            gp,
            ..
        } = run(kind, 40_000, true);
        let mut worst = 0f64;
        for (i, reading) in readings.iter().enumerate().take(2 * gp as usize) {
            let estimate = reading.scaled().unwrap();
            let error = (estimate as f64 - truth[i] as f64).abs() / truth[i] as f64;
            worst = worst.max(error);
            assert!(error < 0.02, "{kind}: {estimate} vs {} ({error})", truth[i]);
        }
        eprintln!(
            "{kind}: noisy workload (each 10 us step 0.5-1.5x the rate), worst estimate error {:.4}%",
            worst * 100.0
        );
    }
}

#[test]
fn a_read_in_the_middle_of_a_turn_includes_the_running_part() {
    for kind in PmuModelKind::ALL {
        // 1.5 turns: the second turn is half over.
        let Run { readings, .. } = run(kind, 600, false);
        let running: Vec<u64> = readings.iter().map(|r| r.time_running).collect();
        assert!(
            running.contains(&2_000_000),
            "{kind}: no event ran the half turn: {running:?}"
        );
        assert!(running.contains(&4_000_000), "{kind}: {running:?}");
        for reading in &readings {
            assert_eq!(reading.time_enabled, 6_000_000, "{kind}");
        }
    }
}

#[test]
fn disable_stops_the_times_and_reset_zeroes_the_values() {
    let kind = PmuModelKind::IntelV4;
    let (backend, model) = model(kind);
    let requests: Vec<_> = rotating_events(3)
        .iter()
        .map(|&(code, _)| {
            request(
                "e",
                select(code, 0x01, true, true),
                CounterSet::first(4),
                None,
            )
        })
        .collect();
    let options = OpenOptions::ungrouped().multiplex_interval(Duration::from_millis(1));
    let mut group = backend
        .open(&requests, &BackendTarget::Cpu(0), &options)
        .unwrap();
    group.enable().unwrap();
    for _ in 0..500 {
        model.feed(0x10, 0x01, 1, 0);
        model.advance_nanos(STEP_NANOS);
    }
    assert_eq!(group.switches(), 5, "1 ms turns over 5 ms");
    group.disable().unwrap();
    let stopped = group.read_to_vec().unwrap();
    model.feed(0x10, 0x01, 1_000, 0);
    model.advance_nanos(10_000_000);
    assert_eq!(
        group.read_to_vec().unwrap(),
        stopped,
        "disabled: nothing moves"
    );
    group.reset().unwrap();
    let reset = group.read_to_vec().unwrap();
    assert!(reset.iter().all(|r| r.value == 0), "{reset:?}");
    // Times are kept, as perf's reset keeps them.
    assert_eq!(reset[0].time_enabled, stopped[0].time_enabled);
    group.enable().unwrap();
    model.feed(0x10, 0x01, 7, 0);
    model.advance_nanos(STEP_NANOS);
    let again = group.read_to_vec().unwrap();
    assert!(again[0].time_enabled > stopped[0].time_enabled);
}

#[test]
fn a_grouped_set_that_does_not_fit_still_fails() {
    for kind in PmuModelKind::ALL {
        let (backend, _model) = model(kind);
        let gp = backend.pmu().gp_counters;
        let requests: Vec<_> = rotating_events(gp)
            .iter()
            .map(|&(code, _)| {
                request(
                    "e",
                    select(code, 0x01, true, true),
                    CounterSet::first(gp),
                    None,
                )
            })
            .collect();
        let error = backend
            .open(&requests, &BackendTarget::Cpu(0), &OpenOptions::grouped())
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NoCounterAvailable, "{kind}");
        assert!(
            error
                .to_string()
                .contains(&format!("only {gp} free counter(s)")),
            "{kind}: {error}"
        );
    }
}

#[test]
fn dropping_a_rotating_set_frees_every_counter() {
    for kind in PmuModelKind::ALL {
        let (backend, model) = model(kind);
        let gp = backend.pmu().gp_counters;
        let requests: Vec<_> = rotating_events(gp)
            .iter()
            .map(|&(code, _)| {
                request(
                    "e",
                    select(code, 0x01, true, true),
                    CounterSet::first(gp),
                    None,
                )
            })
            .collect();
        let mut group = backend
            .open(&requests, &BackendTarget::Cpu(0), &OpenOptions::ungrouped())
            .unwrap();
        group.enable().unwrap();
        model.advance_nanos(9_000_000);
        drop(group);
        // The timer is gone: advancing the clock switches nothing, and the counters open again.
        model.advance_nanos(9_000_000);
        let full: Vec<_> = requests.iter().take(gp as usize).cloned().collect();
        backend
            .open(&full, &BackendTarget::Cpu(0), &OpenOptions::grouped())
            .unwrap();
    }
}

/// A model whose timer is the real device's: a thread of its own, on the wall clock.
#[derive(Debug)]
struct ThreadTimedModel(counterhal_msr::ModelDevice);

impl counterhal_msr::MsrDevice for ThreadTimedModel {
    fn kind(&self) -> counterhal_hal::DeviceKind {
        self.0.kind()
    }
    fn describe(&self) -> String {
        self.0.describe()
    }
    fn cpu_count(&self) -> u32 {
        self.0.cpu_count()
    }
    fn read(&self, cpu: u32, msr: u32) -> counterhal_hal::Result<u64> {
        self.0.read(cpu, msr)
    }
    fn write(&self, cpu: u32, msr: u32, value: u64) -> counterhal_hal::Result<()> {
        self.0.write(cpu, msr, value)
    }
    fn tsc_hz(&self) -> Option<u64> {
        self.0.tsc_hz()
    }
    fn pin_this_thread(&self) -> counterhal_hal::Result<counterhal_msr::ThreadPin> {
        self.0.pin_this_thread()
    }
}

#[test]
fn the_real_device_s_timer_switches_without_the_counted_thread() {
    let config = PmuModelKind::AmdLegacy.config();
    let cpuid = config.cpuid();
    let (device, model) = counterhal_msr::ModelDevice::new(config);
    let backend = counterhal_msr::MsrBackend::with_device(
        common::db(),
        std::sync::Arc::new(ThreadTimedModel(device)),
        &cpuid,
        None,
    )
    .unwrap();
    let requests: Vec<_> = rotating_events(4)
        .iter()
        .map(|&(code, _)| {
            request(
                "e",
                select(code, 0x01, true, true),
                CounterSet::first(4),
                None,
            )
        })
        .collect();
    let options = OpenOptions::ungrouped().multiplex_interval(Duration::from_millis(1));
    let mut group = backend
        .open(&requests, &BackendTarget::Cpu(0), &options)
        .unwrap();
    group.enable().unwrap();
    // The counted "thread" does nothing but let the model's clock run; the timer thread
    // switches the turns on its own.
    let start = std::time::Instant::now();
    while group.switches() < 4 && start.elapsed() < Duration::from_secs(20) {
        model.advance_nanos(100_000);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(group.switches() >= 4, "{} switches", group.switches());
    let readings = group.read_to_vec().unwrap();
    for reading in &readings {
        assert!(reading.time_running <= reading.time_enabled, "{reading:?}");
    }
    // The model's clock moves only in the loop, so a turn may have run no model time; some did.
    assert!(readings.iter().any(|r| r.time_running > 0), "{readings:?}");
    drop(group);
    let switched = model.writes().len();
    std::thread::sleep(Duration::from_millis(10));
    assert_eq!(
        model.writes().len(),
        switched,
        "the timer outlived its group"
    );
}

#[test]
fn extreme_intervals_are_taken_without_panic() {
    for (interval, switches) in [(Duration::ZERO, 10), (Duration::MAX, 0)] {
        let (backend, model) = model(PmuModelKind::IntelV2);
        let requests: Vec<_> = rotating_events(2)
            .iter()
            .map(|&(code, _)| {
                request(
                    "e",
                    select(code, 0x01, true, true),
                    CounterSet::first(2),
                    None,
                )
            })
            .collect();
        let options = OpenOptions::ungrouped().multiplex_interval(interval);
        let mut group = backend
            .open(&requests, &BackendTarget::Cpu(0), &options)
            .unwrap();
        group.enable().unwrap();
        // A zero interval is the shortest turn, 100 µs: ten in 1 ms.
        model.advance_nanos(1_000_000);
        assert_eq!(group.switches(), switches, "{interval:?}");
        let readings = group.read_to_vec().unwrap();
        assert!(readings.iter().all(|r| r.time_enabled == 1_000_000));
    }
}
