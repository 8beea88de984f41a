//! Software multiplexing on every driver model setup: an ungrouped set with more events than
//! counters, or with colliding counter constraints (the P6's counter-0-only and
//! counter-1-only events), takes turns on the counters, driven by the model's clock, with
//! exact accounting across switches and wraparound and estimates within 2% of the truth.

use counterhal_hal::BackendExt;
use std::sync::Arc;
use std::time::Duration;

use counterhal_conformance::Subject;
use counterhal_events::Database;
use counterhal_hal::{
    Backend, BackendTarget, CounterSet, DeviceKind, Domain, Encoding, ErrorKind, EventRequest,
    Evtsel, Group, OpenOptions, P5Cesr, Reading,
};
use counterhal_pctr::conformance::{ModelSubject, model_subjects};
use counterhal_pctr::{
    DriverModel, Errno, IoctlArg, MODEL_TSC_HZ, ModelCpu, ModelHandle, PctrBackend, PctrDevice,
    PctrGroup, ResetPolicy, TscFrequency, TscSource, function, set_function,
};

/// One step of the steady workload: 10 µs (20,000 cycles of the model's 2 GHz TSC); a turn
/// is 4 ms = 400 steps.
const STEP_CYCLES: u64 = 20_000;
const STEP_NANOS: u64 = 10_000;
const SLICE_NANOS: u64 = 4_000_000;

fn db() -> Arc<Database> {
    Arc::new(Database::shipped().expect("the shipped database loads"))
}

/// Every model setup the conformance suite runs (`counterhal check --models`), by CPU and
/// driver: P5 and P6 (legacy), the P5 under the current i386 driver, Intel architectural
/// (amd64 and i386 kernels), AMD with four counters, and, found through the probe, the
/// four-slot ABIs of 2007 and a Core 2 whose CPUID stops below leaf 0xA. Each fresh.
fn setups() -> Vec<(String, ModelSubject)> {
    model_subjects(db())
        .into_iter()
        .map(|subject| (subject.description(), subject))
        .collect()
}

/// An event of `code` in user mode on `counters`, in the CPU's own encoding.
fn event(cpu: ModelCpu, code: u16, counters: u32) -> EventRequest {
    let name = format!("e{code:#x}");
    if cpu == ModelCpu::P5 {
        let mut cesr = P5Cesr::new(u8::try_from(code).unwrap());
        cesr.domain = Domain::CONTEXTS | Domain::USER;
        cesr.counters = CounterSet::from_mask(counters);
        return EventRequest::new(name, Encoding::P5Cesr(cesr));
    }
    let word = u32::from(code) | function::U | function::EN;
    let mut evtsel = Evtsel::from_event_select(u64::from(word));
    evtsel.counters = CounterSet::from_mask(counters);
    EventRequest::new(name, Encoding::Evtsel(evtsel))
}

/// The rotating events of a setup, with their steady rates (events per step): on the P6 the
/// six of the seed's table that collide, 0x10/0x14/0xc1 (counter 0 only) and 0x11/0x12/0x13
/// (counter 1 only); elsewhere three times as many events as counters, each on any counter.
fn rotating_events(cpu: ModelCpu, counters: u32) -> Vec<(u16, u32, u64)> {
    if cpu == ModelCpu::P6 {
        return [
            (0x10, 0b01),
            (0x14, 0b01),
            (0xc1, 0b01),
            (0x11, 0b10),
            (0x12, 0b10),
            (0x13, 0b10),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, (code, mask))| (code, mask, 3 + 7 * i as u64))
        .collect();
    }
    let all = (1u32 << counters) - 1;
    (0..3 * counters)
        .map(|i| (0x20 + i as u16, all, 3 + 7 * u64::from(i)))
        .collect()
}

/// The requests of `events` in `cpu`'s encoding.
fn requests(cpu: ModelCpu, events: &[(u16, u32, u64)]) -> Vec<EventRequest> {
    events
        .iter()
        .map(|&(code, mask, _)| event(cpu, code, mask))
        .collect()
}

/// Opens the rotating events of `backend`'s CPU ungrouped: the group and the events.
fn open_rotating(backend: &PctrBackend) -> (PctrGroup, Vec<(u16, u32, u64)>) {
    let cpu = backend.cpu_kind();
    let events = rotating_events(cpu, backend.counters());
    let group = backend
        .open(
            &requests(cpu, &events),
            &BackendTarget::ThisThread,
            &OpenOptions::ungrouped(),
        )
        .unwrap();
    assert_eq!(group.turns(), 3, "{cpu}: {group:?}");
    (group, events)
}

struct Run {
    group: PctrGroup,
    events: Vec<(u16, u32, u64)>,
    truth: Vec<u64>,
}

/// Loads the counters of the first turn with their functions (the 2024 driver's reset policy:
/// a set of the function a counter holds keeps its value) and then with `value`, so that the
/// group's own sets at enable keep the preload.
fn preload_first_turn(model: &ModelHandle, group: &PctrGroup, value: u64) {
    model.set_reset_policy(ResetPolicy::WhenFunctionChanges);
    let mut device = model.open(true);
    for (index, (_, counter, word)) in group.assignment().enumerate() {
        if group.turn_of(index) == Some(0) {
            set_function(&mut device, counter, word).unwrap();
            model.set_counter(counter, value);
        }
    }
}

/// Opens the setup's rotating events ungrouped, preloads the first turn's counters 5 events
/// before their wrap (at the width reads carry), enables, and feeds `steps` steps of steady
/// work, each ioctl costing `ioctl_cycles` of TSC.
fn run(subject: &ModelSubject, steps: u64, ioctl_cycles: u64) -> Run {
    let (backend, model) = (subject.backend(), subject.model());
    model.set_ioctl_cycles(ioctl_cycles);
    let (mut group, events) = open_rotating(backend);
    let width = backend.counter_width();
    preload_first_turn(model, &group, (1u64 << width) - 5);
    group.enable().unwrap();
    let truth = feed(model, &events, steps, |rate| rate);
    Run {
        group,
        events,
        truth,
    }
}

/// Feeds `steps` steps of `events`, each step's count `count(rate)`, advancing the TSC one
/// step after each: the true counts.
fn feed(
    model: &ModelHandle,
    events: &[(u16, u32, u64)],
    steps: u64,
    mut count: impl FnMut(u64) -> u64,
) -> Vec<u64> {
    let mut truth = vec![0u64; events.len()];
    for _ in 0..steps {
        for (i, &(code, _, rate)) in events.iter().enumerate() {
            let count = count(rate);
            model.feed(code, None, count, 0);
            truth[i] += count;
        }
        model.advance_tsc(STEP_CYCLES);
    }
    truth
}

/// The largest |estimate - true| / true over `readings`, checking each is below 2%.
fn worst_error(what: &str, readings: &[Reading], truth: &[u64]) -> f64 {
    let mut worst = 0f64;
    for (reading, &truth) in readings.iter().zip(truth) {
        let estimate = reading
            .scaled()
            .unwrap_or_else(|| panic!("{what}: {reading:?}"));
        let error = (estimate as f64 - truth as f64).abs() / truth as f64;
        assert!(error < 0.02, "{what}: {estimate} vs {truth} ({error})");
        worst = worst.max(error);
    }
    worst
}

#[test]
fn every_setup_estimates_within_two_percent_with_exact_accounting() {
    for (what, subject) in setups() {
        // 400 ms: 100 turns. No TSC for the ioctls, so that every turn is exactly 400 steps.
        let steps = 40_000;
        let backend = subject.backend();
        let Run {
            mut group,
            events,
            truth,
        } = run(&subject, steps, 0);
        let readings = group.read_to_vec().unwrap();
        let enabled = steps * STEP_NANOS;
        let mut running_sum = 0;
        for (i, reading) in readings.iter().enumerate() {
            assert_eq!(
                reading.time_enabled, enabled,
                "{what}: the set's time enabled"
            );
            assert!(reading.is_multiplexed(), "{what}: {reading:?}");
            running_sum += reading.time_running;
            // Exact: the rate times the steps the event ran, nothing lost or counted twice at
            // 100 switches and a wrap in the first turn.
            assert_eq!(
                reading.value,
                events[i].2 * (reading.time_running / STEP_NANOS),
                "{what}: event {i} {reading:?}"
            );
        }
        let counters = u64::from(backend.counters());
        assert!(
            running_sum.abs_diff(counters * enabled) <= SLICE_NANOS,
            "{what}: {running_sum} vs {counters} x {enabled}"
        );
        assert!(group.switches() >= 99, "{what}: {}", group.switches());
        let worst = worst_error(&what, &readings, &truth);
        eprintln!(
            "{what}: {} events on {counters} counters, {} turns, {} switches, worst estimate \
             error {:.4}%",
            events.len(),
            group.turns(),
            group.switches(),
            worst * 100.0
        );
    }
}

#[test]
fn with_the_ioctls_taking_time_the_estimates_stay_within_two_percent() {
    for (what, subject) in setups() {
        // Each ioctl 1,000 cycles (the model's default, 0.5 µs): a switch costs 2 to 6.
        let backend = subject.backend();
        let Run {
            mut group, truth, ..
        } = run(&subject, 40_000, 1_000);
        let readings = group.read_to_vec().unwrap();
        let enabled = readings[0].time_enabled;
        let running_sum: u64 = readings.iter().map(|r| r.time_running).sum();
        let counters = u64::from(backend.counters());
        assert!(
            running_sum.abs_diff(counters * enabled) <= SLICE_NANOS,
            "{what}: {running_sum} vs {counters} x {enabled}"
        );
        let worst = worst_error(&what, &readings, &truth);
        eprintln!(
            "{what}: ioctls of 0.5 us, worst estimate error {:.4}%",
            worst * 100.0
        );
    }
}

#[test]
fn a_noisy_workload_estimates_within_two_percent() {
    for (what, subject) in setups() {
        let (mut group, events) = open_rotating(subject.backend());
        group.enable().unwrap();
        let mut noise = counterhal_conformance::prop::Gen::new(0x2545_f491_4f6c_dd1d);
        // Each step between 0.5 and 1.5 times the rate (the suite's deterministic generator).
        let truth = feed(subject.model(), &events, 40_000, |rate| {
            rate * 100 / 2 + noise.below(rate * 100 + 1)
        });
        let readings = group.read_to_vec().unwrap();
        let worst = worst_error(&what, &readings, &truth);
        eprintln!(
            "{what}: noisy workload (each 10 us step 0.5-1.5x the rate), worst estimate error \
             {:.4}%",
            worst * 100.0
        );
    }
}

#[test]
fn six_events_open_on_the_p6_in_three_turns_of_colliding_constraints() {
    let (backend, _model) = PctrBackend::with_model(db(), ModelCpu::P6);
    let (group, events) = open_rotating(&backend);
    let requests = requests(ModelCpu::P6, &events);
    for (index, (name, counter, _)) in group.assignment().enumerate() {
        // Each where the seed's table allows it: 0x10/0x14/0xc1 on 0, 0x11/0x12/0x13 on 1.
        assert_eq!(counter, u32::from(index >= 3), "{name}");
    }
    // Grouped, they do not fit: no counter available, naming the events.
    let error = backend
        .open(
            &requests,
            &BackendTarget::ThisThread,
            &OpenOptions::default(),
        )
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NoCounterAvailable, "{error}");
    assert!(error.to_string().contains("e0x"), "{error}");
}

#[test]
fn the_six_p6_events_open_by_name_and_estimate_within_two_percent() {
    // The seed's table: FP_COMP_OPS_EXE (0x10), CYCLES_DIV_BUSY (0x14) and FLOPS (0xc1) on
    // counter 0 only; FP_ASSIST (0x11), MUL (0x12) and DIV (0x13) on counter 1 only.
    let (backend, model) = PctrBackend::with_model(db(), ModelCpu::P6);
    let names = [
        ("FP_COMP_OPS_EXE", 0x10, 5),
        ("CYCLES_DIV_BUSY", 0x14, 9),
        ("FLOPS", 0xc1, 4),
        ("FP_ASSIST", 0x11, 1),
        ("MUL", 0x12, 6),
        ("DIV", 0x13, 2),
    ];
    let list: Vec<&str> = names.iter().map(|&(name, _, _)| name).collect();
    let mut set = backend
        .open_named(&list, &BackendTarget::ThisThread, &OpenOptions::ungrouped())
        .unwrap();
    let events: Vec<(u16, u32, u64)> = names.iter().map(|&(_, c, r)| (c, 0, r)).collect();
    set.enable().unwrap();
    let truth = feed(&model, &events, 40_000, |rate| rate);
    let readings = set.read_to_vec().unwrap();
    let worst = worst_error("p6 by name", &readings, &truth);
    for reading in &readings {
        assert!(reading.is_multiplexed(), "{reading:?}");
    }
    eprintln!(
        "p6, the six events by name: worst estimate error {:.4}%",
        worst * 100.0
    );
    // Grouped, they do not fit.
    let error = backend
        .open_named(&list, &BackendTarget::ThisThread, &OpenOptions::default())
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NoCounterAvailable, "{error}");
}

#[test]
fn a_counter_wraps_across_switches_without_loss() {
    // Three copies of one event on the P5's two counters: counter 0 holds copies 0 and 2 in
    // turn after turn with the same function, so it is never set again and counts on across
    // every switch; preloaded 7,000 events before its wrap, it wraps in the third turn.
    let (backend, model) = PctrBackend::with_model(db(), ModelCpu::P5);
    model.set_ioctl_cycles(0);
    let requests = vec![event(ModelCpu::P5, 0x16, 0b11); 3];
    let mut group = backend
        .open(
            &requests,
            &BackendTarget::ThisThread,
            &OpenOptions::ungrouped(),
        )
        .unwrap();
    assert_eq!(group.turns(), 2);
    preload_first_turn(&model, &group, (1u64 << 40) - 7_000);
    group.enable().unwrap();
    let sets_before = model.recent_sets().len();
    let rate = 7;
    for _ in 0..4_000 {
        model.feed(0x16, None, rate, 0);
        model.advance_tsc(STEP_CYCLES);
    }
    let readings = group.read_to_vec().unwrap();
    assert!(
        model.counter(0) < 1 << 20,
        "no wrap: {:#x}",
        model.counter(0)
    );
    for reading in &readings {
        assert_eq!(reading.value, rate * (reading.time_running / STEP_NANOS));
    }
    // Copies 0 and 2 share counter 0 across the turns; between them they saw every step.
    assert_eq!(readings[0].value + readings[2].value, rate * 4_000);
    // A switch sets only counter 1 (to 0, or to its function again): counter 0 is left
    // alone.
    assert!(
        model.recent_sets()[sets_before..]
            .iter()
            .all(|set| set.counter == 1),
        "{:?}",
        model.recent_sets()
    );
    assert_eq!(group.backward_steps(), 0);
}

#[test]
fn a_switch_costs_two_reads_and_one_set_per_counter_that_changes() {
    // (CPU, sets per switch): the P6's turns differ on both counters; AMD's on all four.
    for (cpu, sets) in [(ModelCpu::P6, 2), (ModelCpu::Amd, 4)] {
        let (backend, model) = PctrBackend::with_model(db(), cpu);
        let (mut group, _) = open_rotating(&backend);
        group.enable().unwrap();
        model.clear_sets();
        let reads = model.reads();
        model.advance_tsc(10 * 8_000_000); // ten 4 ms turns
        assert_eq!(group.switches(), 10, "{cpu}");
        assert_eq!(model.reads() - reads, 2 * 10, "{cpu}");
        let log = model.recent_sets();
        assert_eq!(log.len(), sets * 10, "{cpu}: {log:?}");
        // Counter 0 last in each switch: on the P6 its EN starts both counters together.
        for switch in log.chunks(sets) {
            assert_eq!(switch.last().unwrap().counter, 0, "{cpu}: {switch:?}");
        }
    }
}

#[test]
fn a_read_in_the_middle_of_a_turn_includes_the_running_part() {
    for (what, subject) in setups() {
        // 1.5 turns: the second turn is half over.
        let Run { mut group, .. } = run(&subject, 600, 0);
        let readings = group.read_to_vec().unwrap();
        let running: Vec<u64> = readings.iter().map(|r| r.time_running).collect();
        assert!(running.contains(&SLICE_NANOS), "{what}: {running:?}");
        assert!(running.contains(&(SLICE_NANOS / 2)), "{what}: {running:?}");
        assert!(running.contains(&0), "{what}: {running:?}");
        for reading in &readings {
            assert_eq!(reading.time_enabled, 600 * STEP_NANOS, "{what}");
            if reading.time_running == 0 {
                // Never ran: no estimate, not a zero one.
                assert_eq!(reading.scaled(), None, "{what}");
            }
        }
    }
}

#[test]
fn disable_stops_the_times_and_reset_zeroes_the_values() {
    let db = db();
    let subject = ModelSubject::new(db, ModelCpu::P6);
    let model = subject.model();
    let Run {
        mut group, events, ..
    } = run(&subject, 600, 0);
    group.disable().unwrap();
    let stopped = group.read_to_vec().unwrap();
    // Disabled: the clock runs on and the timer switches, but no time or count moves.
    for _ in 0..1_000 {
        for &(code, _, rate) in &events {
            model.feed(code, None, rate, 0);
        }
        model.advance_tsc(STEP_CYCLES);
    }
    assert_eq!(group.read_to_vec().unwrap(), stopped);
    // Every counter is stopped (function 0) while disabled.
    assert_eq!((model.function(0), model.function(1)), (0, 0));
    group.reset().unwrap();
    let reset = group.read_to_vec().unwrap();
    for (reading, before) in reset.iter().zip(&stopped) {
        assert_eq!(reading.value, 0);
        // As perf's reset: the times stay.
        assert_eq!(
            (reading.time_enabled, reading.time_running),
            (before.time_enabled, before.time_running)
        );
    }
    group.enable().unwrap();
    for _ in 0..400 {
        for &(code, _, rate) in &events {
            model.feed(code, None, rate, 0);
        }
        model.advance_tsc(STEP_CYCLES);
    }
    let again = group.read_to_vec().unwrap();
    for (i, reading) in again.iter().enumerate() {
        assert_eq!(reading.time_enabled, 1_000 * STEP_NANOS);
        let ran = reading.time_running - reset[i].time_running;
        assert_eq!(reading.value, events[i].2 * (ran / STEP_NANOS), "{i}");
    }
}

#[test]
fn when_the_timer_does_not_run_time_running_says_so() {
    // The model's clock moves only inside the ioctls (10 ms each), never through the timer:
    // the first turn stays on, and the other turns' events show no time running and no
    // estimate.
    let (backend, model) = PctrBackend::with_model(db(), ModelCpu::P6);
    let (mut group, events) = open_rotating(&backend);
    model.set_ioctl_cycles(20_000_000);
    group.enable().unwrap();
    for &(code, _, rate) in &events {
        model.feed(code, None, rate, 0);
    }
    let readings = group.read_to_vec().unwrap();
    assert_eq!(group.switches(), 0);
    for (i, reading) in readings.iter().enumerate() {
        assert_eq!(reading.time_enabled, 10_000_000, "{i}");
        if group.turn_of(i) == Some(0) {
            assert_eq!(*reading, Reading::new(events[i].2, 10_000_000, 10_000_000));
        } else {
            assert_eq!(*reading, Reading::new(0, 10_000_000, 0));
            assert_eq!(reading.scaled(), None);
        }
    }
}

/// Three copies of the P5's instructions on its two counters, switched every 1 ms, enabled.
fn three_copies_every_millisecond(backend: &PctrBackend) -> PctrGroup {
    let requests = vec![event(ModelCpu::P5, 0x16, 0b11); 3];
    let options = OpenOptions::ungrouped().multiplex_interval(Duration::from_millis(1));
    let mut group = backend
        .open(&requests, &BackendTarget::ThisThread, &options)
        .unwrap();
    group.enable().unwrap();
    group
}

#[test]
fn the_interval_comes_from_the_open_options() {
    let (backend, model) = PctrBackend::with_model(db(), ModelCpu::P5);
    model.set_ioctl_cycles(0);
    let group = three_copies_every_millisecond(&backend);
    model.advance_tsc(MODEL_TSC_HZ / 100); // 10 ms: ten 1 ms turns
    assert_eq!(group.switches(), 10);
    // Below the shortest turn: taken as 100 µs, never a busy loop or a panic.
    let requests = vec![event(ModelCpu::P5, 0x16, 0b11); 3];
    let options = OpenOptions::ungrouped().multiplex_interval(Duration::ZERO);
    drop(group);
    let _group = backend
        .open(&requests, &BackendTarget::ThisThread, &options)
        .unwrap();
    assert_eq!(model.timers(), 1);
}

#[test]
fn dropping_a_rotating_set_frees_every_counter_and_its_timer() {
    let (backend, model) = PctrBackend::with_model(db(), ModelCpu::P6);
    let (mut group, events) = open_rotating(&backend);
    let requests = requests(ModelCpu::P6, &events);
    assert_eq!(group.owned_counters(), CounterSet::from_mask(0b11));
    group.enable().unwrap();
    assert_eq!(model.timers(), 1);
    // Another set finds no counter while the rotating one holds both.
    let error = backend
        .open(
            &requests[..1],
            &BackendTarget::ThisThread,
            &OpenOptions::default(),
        )
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NoCounterAvailable);
    drop(group);
    assert_eq!(model.timers(), 0);
    assert_eq!((model.function(0), model.function(1)), (0, 0));
    // Both counters are free again: 0x10 (counter 0) and 0x11 (counter 1) open as a group.
    let pair = [requests[0].clone(), requests[3].clone()];
    backend
        .open(&pair, &BackendTarget::ThisThread, &OpenOptions::default())
        .unwrap();
}

/// The model behind a device that does not say it is one: its timer is the real device's, a
/// thread of the library's own.
struct ThreadTimed(DriverModel);

impl PctrDevice for ThreadTimed {
    fn kind(&self) -> DeviceKind {
        self.0.kind()
    }

    fn writable(&self) -> bool {
        self.0.writable()
    }

    fn ioctl(&mut self, request: u64, arg: IoctlArg<'_>) -> Result<(), Errno> {
        self.0.ioctl(request, arg)
    }
}

#[test]
fn the_real_device_s_timer_switches_without_the_counted_thread() {
    let model = ModelHandle::new(ModelCpu::P5);
    let device = Box::new(ThreadTimed(model.open(true)));
    let tsc = TscFrequency::new(MODEL_TSC_HZ, TscSource::Model);
    let backend = PctrBackend::from_device(db(), ModelCpu::P5, None, device, 40, tsc).unwrap();
    let group = three_copies_every_millisecond(&backend);
    // This thread only waits: the switches come from the timer's thread.
    let start = std::time::Instant::now();
    while group.switches() < 3 && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(group.switches() >= 3, "{} switches", group.switches());
    assert_eq!(model.timers(), 0, "not the model's clock");
    drop(group);
    let after = model.reads();
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(model.reads(), after, "switched after the drop");
}
