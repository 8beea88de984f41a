//! The suite catches broken backends: a fake backend, correct by default, with one fault
//! switched on at a time; each fault must make the cases that guard against it fail.

use std::sync::{Arc, Mutex};

use counterhal_conformance::{ExactEvent, Outcome, Report, Subject};
use counterhal_hal::{
    Accepts, Backend, BackendTarget, Capabilities, CounterSet, DeviceKind, Domain, Encoding, Error,
    ErrorKind, EventRequest, Evtsel, Family, Group, OpenOptions, Reading, Record, ResolvedEvent,
    Result, Sample, SampleOptions, Sampler, Scope, TargetSupport, Walked, check_buffer,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    None,
    StaleReads,
    ResetDoesNothing,
    GroupInWrongOrder,
    NeverRunning,
    WrongErrorKind,
    NoCounterLimit,
    CountersNeverFreed,
    AnyTarget,
    ModifiersIgnored,
    /// After its first window, a group counts only its leader (Linux 6.18's group-flag enable).
    MembersStopAfterRestart,
    /// Every 100th open leaves a file descriptor open.
    LeaksDescriptors,
    /// Every open leaves a kilobyte of memory allocated.
    LeaksMemory,
}

const COUNTERS: usize = 2;

/// Work done so far, a clock in "nanoseconds", the counters open groups hold, and what the
/// leaking faults leave behind (held here, so that it is freed when the run ends).
#[derive(Default)]
struct Machine {
    units: u64,
    clock: u64,
    in_use: usize,
    opens: u64,
    leaked_files: Vec<std::fs::File>,
    leaked_memory: Vec<Vec<u8>>,
}

/// Events per unit of work of event `code` (1 or 3), in user and in kernel mode: `ev1` counts
/// in user mode only, `ev3` twice in user mode and once in kernel mode.
fn split(code: u16) -> (u64, u64) {
    match code {
        3 => (2, 1),
        other => (u64::from(other), 0),
    }
}

struct FakeBackend {
    capabilities: Capabilities,
    fault: Fault,
    machine: Arc<Mutex<Machine>>,
}

struct FakeGroup {
    fault: Fault,
    machine: Arc<Mutex<Machine>>,
    per_unit: Vec<u64>,
    held: usize,
    enabled_at: Option<(u64, u64)>,
    units: u64,
    /// The members' work, where it differs from the leader's (under `MembersStopAfterRestart`).
    member_units: u64,
    windows: u64,
    time: u64,
    first_read: Option<Vec<Reading>>,
}

impl Drop for FakeGroup {
    fn drop(&mut self) {
        if self.fault != Fault::CountersNeverFreed {
            self.machine.lock().unwrap().in_use -= self.held;
        }
    }
}

impl FakeGroup {
    fn now(&self) -> (u64, u64) {
        let mut machine = self.machine.lock().unwrap();
        machine.clock += 1;
        (machine.units, machine.clock)
    }
}

impl Group for FakeGroup {
    fn len(&self) -> usize {
        self.per_unit.len()
    }

    fn enable(&mut self) -> Result<()> {
        if self.enabled_at.is_none() {
            self.enabled_at = Some(self.now());
        }
        Ok(())
    }

    fn disable(&mut self) -> Result<()> {
        if let Some((units, clock)) = self.enabled_at.take() {
            let (now_units, now_clock) = self.now();
            self.units += now_units - units;
            if self.fault != Fault::MembersStopAfterRestart || self.windows == 0 {
                self.member_units += now_units - units;
            }
            self.windows += 1;
            self.time += now_clock - clock;
        }
        Ok(())
    }

    fn reset(&mut self) -> Result<()> {
        if self.fault == Fault::ResetDoesNothing {
            return Ok(());
        }
        self.units = 0;
        self.member_units = 0;
        if self.enabled_at.is_some() {
            let (units, clock) = self.now();
            self.enabled_at = Some((units, clock));
        }
        Ok(())
    }

    fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
        check_buffer("readings", self.len(), readings.len())?;
        if self.fault == Fault::StaleReads
            && let Some(first) = &self.first_read
        {
            readings[..first.len()].copy_from_slice(first);
            return Ok(());
        }
        let (mut units, mut time) = (self.units, self.time + 1);
        let mut member_units = self.member_units;
        if let Some((start_units, start_clock)) = self.enabled_at {
            let (now_units, now_clock) = self.now();
            units += now_units - start_units;
            if self.fault != Fault::MembersStopAfterRestart || self.windows == 0 {
                member_units += now_units - start_units;
            }
            time += now_clock - start_clock;
        }
        let running = if self.fault == Fault::NeverRunning {
            0
        } else {
            time
        };
        for (index, (reading, per_unit)) in readings.iter_mut().zip(&self.per_unit).enumerate() {
            let units = if index == 0 { units } else { member_units };
            *reading = Reading::new(units * per_unit, time, running);
        }
        if self.fault == Fault::GroupInWrongOrder {
            readings[..self.per_unit.len()].reverse();
        }
        self.first_read
            .get_or_insert_with(|| readings[..self.per_unit.len()].to_vec());
        Ok(())
    }
}

impl Backend for FakeBackend {
    type Group = FakeGroup;

    fn name(&self) -> &'static str {
        "fake"
    }

    fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    fn extensions(&self) -> counterhal_hal::Extensions<'_> {
        counterhal_hal::Extensions::none()
    }

    fn resolve(&self, event: &str) -> Result<ResolvedEvent> {
        let (base, domain) = match event.split_once(':') {
            Some((base, "u")) => (base, Domain::DEFAULT.with_levels(Domain::USER)),
            Some((base, "k")) => (base, Domain::DEFAULT.with_levels(Domain::KERNEL)),
            Some(_) => (event, Domain::DEFAULT),
            None => (event, Domain::DEFAULT),
        };
        let per_unit = match base {
            "ev1" => 1,
            "ev3" => 3,
            _ if self.fault == Fault::WrongErrorKind => {
                return Err(Error::unsupported(format!("no `{event}`")));
            }
            _ => return Err(Error::invalid_event(format!("unknown event `{event}`"))),
        };
        // The event code is the events per unit of work.
        let mut evtsel = Evtsel::new(per_unit, 0);
        evtsel.counters = CounterSet::first(2);
        evtsel.domain = domain;
        let encoding = Encoding::Evtsel(evtsel);
        Ok(ResolvedEvent::single(EventRequest::new(event, encoding)))
    }

    fn open(
        &self,
        events: &[EventRequest],
        target: &BackendTarget,
        _options: &OpenOptions,
    ) -> Result<FakeGroup> {
        if !self.capabilities.supports(target) && self.fault != Fault::AnyTarget {
            return Err(Error::unsupported(format!("no {target} here")));
        }
        let mut machine = self.machine.lock().unwrap();
        if machine.in_use + events.len() > COUNTERS && self.fault != Fault::NoCounterLimit {
            return Err(Error::new(
                ErrorKind::NoCounterAvailable,
                format!(
                    "{} events, {} of {COUNTERS} counters free",
                    events.len(),
                    COUNTERS.saturating_sub(machine.in_use)
                ),
            ));
        }
        machine.in_use += events.len();
        machine.opens += 1;
        if self.fault == Fault::LeaksDescriptors && machine.opens.is_multiple_of(100) {
            let exe = std::env::current_exe().expect("this test's executable");
            let file = std::fs::File::open(&exe).expect("this test's executable opens");
            machine.leaked_files.push(file);
        }
        if self.fault == Fault::LeaksMemory {
            machine.leaked_memory.push(vec![1; 1024]);
        }
        drop(machine);
        let per_unit = events
            .iter()
            .map(|e| match &e.encoding {
                Encoding::Evtsel(e) => {
                    let (user, kernel) = split(e.code);
                    if self.fault == Fault::ModifiersIgnored {
                        return user + kernel;
                    }
                    let counted = |level, n| if e.domain.contains(level) { n } else { 0 };
                    counted(Domain::USER, user) + counted(Domain::KERNEL, kernel)
                }
                _ => 0,
            })
            .collect();
        Ok(FakeGroup {
            fault: self.fault,
            machine: Arc::clone(&self.machine),
            per_unit,
            held: events.len(),
            enabled_at: None,
            units: 0,
            member_units: 0,
            windows: 0,
            time: 0,
            first_read: None,
        })
    }
}

/// A sampler of the fake backend, sampling each event of its leader with the group's values:
/// in each unit of work the members' events come first, then the leader's.
struct FakeSampler {
    fault: Fault,
    machine: Arc<Mutex<Machine>>,
    per_unit: Vec<u64>,
    /// The units done when it was enabled, while it is.
    enabled_at: Option<u64>,
    /// The units each event counted so far (the members' stop after the first window under
    /// `MembersStopAfterRestart`).
    units: Vec<u64>,
    windows: u64,
    /// The group's values of each sample not yet walked.
    samples: Vec<Vec<u64>>,
}

impl Sampler for FakeSampler {
    fn enable(&mut self) -> Result<()> {
        if self.enabled_at.is_none() {
            self.enabled_at = Some(self.machine.lock().unwrap().units);
        }
        Ok(())
    }

    fn disable(&mut self) -> Result<()> {
        let Some(start) = self.enabled_at.take() else {
            return Ok(());
        };
        let now = self.machine.lock().unwrap().units;
        let members_count = self.fault != Fault::MembersStopAfterRestart || self.windows == 0;
        for _ in start..now {
            for (i, units) in self.units.iter_mut().enumerate() {
                if i == 0 || members_count {
                    *units += 1;
                }
            }
            let leader = self.units[0] * self.per_unit[0];
            for event in (leader - self.per_unit[0] + 1)..=leader {
                let mut values: Vec<u64> = self
                    .units
                    .iter()
                    .zip(&self.per_unit)
                    .map(|(u, p)| u * p)
                    .collect();
                values[0] = event;
                self.samples.push(values);
            }
        }
        self.windows += 1;
        Ok(())
    }

    fn walk(&mut self, each: &mut dyn FnMut(&Record<'_>)) -> Result<Walked> {
        let mut walked = Walked::default();
        for values in std::mem::take(&mut self.samples) {
            let mut sample = Sample::default();
            sample.group_values = &values;
            each(&Record::Sample(sample));
            walked.samples += 1;
        }
        Ok(walked)
    }

    fn count(&mut self) -> Result<u64> {
        Ok(self.units[0] * self.per_unit[0])
    }

    fn lost(&mut self) -> Result<Option<u64>> {
        Ok(Some(0))
    }
}

struct FakeSubject(FakeBackend);

impl Subject for FakeSubject {
    type Backend = FakeBackend;

    fn backend(&self) -> &FakeBackend {
        &self.0
    }

    fn description(&self) -> String {
        format!("fake backend, fault {:?}", self.0.fault)
    }

    fn exact_events(&self) -> Vec<ExactEvent> {
        vec![
            ExactEvent::new("ev1", 1).with_user_per_unit(1),
            ExactEvent::new("ev3", 3).with_user_per_unit(2),
        ]
    }

    fn work(&self, units: u64) {
        let mut machine = self.0.machine.lock().unwrap();
        machine.units += units;
        machine.clock += units;
    }

    fn counter_event(&self) -> Option<(String, u32)> {
        Some(("ev1".into(), COUNTERS as u32))
    }

    fn missing_device_error(&self) -> Option<Error> {
        Some(Error::new(ErrorKind::DeviceMissing, "no /dev/fake"))
    }

    fn open_sampler(
        &self,
        names: &[&str],
        _options: &SampleOptions,
    ) -> Option<Result<Box<dyn Sampler>>> {
        let per_unit = names
            .iter()
            .map(|name| match *name {
                "ev1" => Ok(1),
                "ev3" => Ok(3),
                other => Err(Error::invalid_event(format!("unknown event `{other}`"))),
            })
            .collect::<Result<Vec<u64>>>();
        Some(per_unit.map(|per_unit| {
            Box::new(FakeSampler {
                fault: self.0.fault,
                machine: Arc::clone(&self.0.machine),
                units: vec![0; per_unit.len()],
                per_unit,
                enabled_at: None,
                windows: 0,
                samples: Vec::new(),
            }) as Box<dyn Sampler>
        }))
    }
}

fn run(fault: Fault) -> Report {
    let accepts = Accepts::new(
        &[Family::Evtsel],
        Domain::USER | Domain::KERNEL,
        Domain::DEFAULT,
    );
    let mut capabilities = Capabilities::new(accepts, Scope::SystemWidePerCpu);
    capabilities.set_device(DeviceKind::Model);
    capabilities.set_general_counters(Some(COUNTERS as u32));
    capabilities.set_counter_width(Some(48));
    let mut targets = TargetSupport::NONE;
    targets.this_thread = true;
    capabilities.set_targets(targets);
    let backend = FakeBackend {
        capabilities,
        fault,
        machine: Arc::default(),
    };
    let report = counterhal_conformance::run(&FakeSubject(backend));
    eprintln!("{report}");
    report
}

fn failed(report: &Report) -> Vec<&'static str> {
    report
        .cases
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Fail(_)))
        .map(|c| c.case)
        .collect()
}

#[test]
fn a_correct_backend_passes() {
    let report = run(Fault::None);
    report.assert_passed();
    assert_eq!(failed(&report), Vec::<&str>::new());
}

#[test]
fn stale_reads_are_caught() {
    let failures = failed(&run(Fault::StaleReads));
    for case in ["counts_increase_under_work", "reset_gives_zero"] {
        assert!(
            failures.contains(&case),
            "{case} did not fail: {failures:?}"
        );
    }
}

#[test]
fn a_reset_that_does_nothing_is_caught() {
    let failures = failed(&run(Fault::ResetDoesNothing));
    assert!(failures.contains(&"reset_gives_zero"), "{failures:?}");
}

#[test]
fn a_group_read_in_the_wrong_order_is_caught() {
    let failures = failed(&run(Fault::GroupInWrongOrder));
    // The `:u` and `:k` pair is read in one group too, and the restart cases check each
    // member by its place.
    assert_eq!(
        failures,
        [
            "group_read_in_order",
            "restarted_group_counts_every_window",
            "reset_between_windows_counts_each_window",
            "user_and_kernel_modifiers_split_the_count"
        ]
    );
}

#[test]
fn scaling_that_would_divide_by_zero_is_caught() {
    let failures = failed(&run(Fault::NeverRunning));
    assert!(
        failures.contains(&"scaling_of_live_readings"),
        "{failures:?}"
    );
}

#[test]
fn wrong_error_kinds_are_caught() {
    let failures = failed(&run(Fault::WrongErrorKind));
    assert!(
        failures.contains(&"unknown_event_is_invalid"),
        "{failures:?}"
    );
    assert!(
        failures.contains(&"bad_modifier_is_invalid"),
        "{failures:?}"
    );
}

#[test]
fn a_missing_counter_limit_is_caught() {
    let failures = failed(&run(Fault::NoCounterLimit));
    assert_eq!(
        failures,
        ["too_many_events", "dropping_a_group_frees_its_counters"]
    );
}

#[test]
fn counters_a_dropped_group_keeps_are_caught() {
    let failures = failed(&run(Fault::CountersNeverFreed));
    assert!(
        failures.contains(&"dropping_a_group_frees_its_counters"),
        "{failures:?}"
    );
}

#[test]
fn a_target_the_backend_does_not_claim_is_caught() {
    let failures = failed(&run(Fault::AnyTarget));
    assert_eq!(failures, ["unclaimed_target_is_unsupported"]);
}

#[test]
fn ignored_user_and_kernel_modifiers_are_caught() {
    let failures = failed(&run(Fault::ModifiersIgnored));
    assert_eq!(failures, ["user_and_kernel_modifiers_split_the_count"]);
}

#[test]
fn a_restarted_group_that_counts_only_its_leader_is_caught() {
    let failures = failed(&run(Fault::MembersStopAfterRestart));
    assert_eq!(
        failures,
        [
            "restarted_group_counts_every_window",
            "reset_between_windows_counts_each_window",
            "restarted_sampler_reads_every_member"
        ]
    );
}

/// Oracle: the process's own count of its descriptors (`/proc/self/fd`, `/dev/fd`), which
/// grows by 25 in each quarter of the hygiene case's run.
#[cfg(unix)]
#[test]
fn leaked_descriptors_are_caught() {
    let failures = failed(&run(Fault::LeaksDescriptors));
    assert_eq!(failures, ["open_close_hygiene"]);
}

/// Oracle: the kernel's count of the process's resident pages (`/proc/self/statm`), which
/// grows by about 2.5 MB in each quarter of the hygiene case's run.
#[cfg(target_os = "linux")]
#[test]
fn leaked_memory_is_caught() {
    let failures = failed(&run(Fault::LeaksMemory));
    assert_eq!(failures, ["open_close_hygiene"]);
}

#[test]
fn every_case_passes_somewhere_and_fails_under_some_fault() {
    // A case that never passes on the correct backend checks nothing here; each new case
    // above has a fault it catches.
    let report = run(Fault::None);
    for case in [
        "dropping_a_group_frees_its_counters",
        "short_read_buffer_is_invalid_input",
        "unclaimed_target_is_unsupported",
        "user_and_kernel_modifiers_split_the_count",
        "restarted_group_counts_every_window",
        "reset_between_windows_counts_each_window",
        "restarted_sampler_reads_every_member",
    ] {
        let outcome = report
            .cases
            .iter()
            .find(|c| c.case == case)
            .map(|c| &c.outcome);
        assert_eq!(outcome, Some(&Outcome::Pass), "{case}");
    }
}

#[test]
fn a_run_that_checks_nothing_fails() {
    let report = Report {
        backend: "fake".into(),
        device: "model".into(),
        description: "nothing ran".into(),
        cases: Vec::new(),
    };
    assert!(!report.passed());
    // The expected panic stays quiet: printing it would symbolize a backtrace (under
    // RUST_BACKTRACE) while another test's suite measures the process's memory.
    let this_test = std::thread::current().name().map(str::to_string);
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name().map(str::to_string) != this_test {
            default(info);
        }
    }));
    let panicked = std::panic::catch_unwind(|| report.assert_passed());
    assert!(panicked.is_err());
}
