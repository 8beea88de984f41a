//! The cases: each a generic function over a [`Subject`] returning an [`Outcome`].

use counterhal_hal::{
    Backend, DeviceKind, ErrorKind, EventSet, Group, OpenOptions, Reading, Target,
};

use crate::workload;
use crate::{ExactEvent, Outcome, Subject};

/// One case of the suite.
pub struct Case<S> {
    /// Its name, as printed and reported.
    pub name: &'static str,
    /// Whether it checks real hardware counts (skipped on machines without a PMU, made fatal by
    /// `COUNTERHAL_REQUIRE=hardware`).
    pub hardware: bool,
    /// The check.
    pub run: fn(&S) -> Outcome,
}

/// Every case, in the order they run.
pub fn all<S: Subject>() -> Vec<Case<S>> {
    macro_rules! case {
        ($name:ident) => {
            Case {
                name: stringify!($name),
                hardware: false,
                run: $name::<S>,
            }
        };
        (hardware $name:ident) => {
            Case {
                name: stringify!($name),
                hardware: true,
                run: $name::<S>,
            }
        };
    }
    vec![
        case!(generalized_events_open),
        case!(counts_increase_under_work),
        case!(read_after_disable_is_stable),
        case!(reset_gives_zero),
        case!(read_after_stop_equals_stop),
        case!(exact_counts),
        case!(linearity),
        case!(group_read_in_order),
        case!(group_members_consistent),
        case!(scaling_of_recorded_readings),
        case!(scaling_of_live_readings),
        case!(unknown_event_is_invalid),
        case!(bad_modifier_is_invalid),
        case!(too_many_events),
        case!(dropping_a_group_frees_its_counters),
        case!(short_read_buffer_is_invalid_input),
        case!(unclaimed_target_is_unsupported),
        case!(user_and_kernel_modifiers_split_the_count),
        case!(missing_device),
        case!(open_close_hygiene),
        case!(threads_count_independently),
        case!(hardware instructions_loop),
        case!(hardware branch_loop),
    ]
}

type Set<S> = EventSet<<<S as Subject>::Backend as Backend>::Group>;

fn open<S: Subject>(subject: &S, names: &[&str]) -> Result<Set<S>, String> {
    open_with(subject, names, &OpenOptions::default())
}

fn open_with<S: Subject>(
    subject: &S,
    names: &[&str],
    options: &OpenOptions,
) -> Result<Set<S>, String> {
    subject
        .backend()
        .open_named(names, &subject.target(), options)
        .map_err(|e| format!("opening {names:?}: {e}"))
}

/// Runs `f`, turning an early `Err(detail)` into a failure.
fn check(f: impl FnOnce() -> Result<Outcome, String>) -> Outcome {
    f().unwrap_or_else(Outcome::Fail)
}

fn read<G: Group>(group: &mut G) -> Result<Vec<Reading>, String> {
    group.read_to_vec().map_err(|e| format!("read: {e}"))
}

/// Opens `names` (with `options`) and counts `units` of the subject's work between enable and
/// disable; returns the disabled set, for cases that go on with it.
fn counted_set<S: Subject>(
    subject: &S,
    names: &[&str],
    options: &OpenOptions,
    units: u64,
) -> Result<Set<S>, String> {
    let mut set = open_with(subject, names, options)?;
    step("enable", set.enable())?;
    subject.work(units);
    step("disable", set.disable())?;
    Ok(set)
}

/// As [`counted_set`], then reads: the measurement most cases make.
fn count_work_with<S: Subject>(
    subject: &S,
    names: &[&str],
    options: &OpenOptions,
    units: u64,
) -> Result<Vec<Reading>, String> {
    read(&mut counted_set(subject, names, options, units)?)
}

fn count_work<S: Subject>(subject: &S, names: &[&str], units: u64) -> Result<Vec<Reading>, String> {
    count_work_with(subject, names, &OpenOptions::default(), units)
}

fn step(what: &str, result: counterhal_hal::Result<()>) -> Result<(), String> {
    result.map_err(|e| format!("{what}: {e}"))
}

/// The subject's exact events, or a skip saying there are none.
fn exact<S: Subject>(subject: &S) -> Result<Vec<ExactEvent>, Outcome> {
    let events = subject.exact_events();
    if events.is_empty() {
        return Err(Outcome::Skip(
            "the subject offers no exactly countable event".into(),
        ));
    }
    Ok(events)
}

macro_rules! exact_or_skip {
    ($subject:expr) => {
        match exact($subject) {
            Ok(events) => events,
            Err(outcome) => return outcome,
        }
    };
}

/// Every generalized event the backend claims opens and closes.
pub fn generalized_events_open<S: Subject>(subject: &S) -> Outcome {
    let claimed = subject.backend().generalized();
    if claimed.is_empty() {
        return Outcome::Skip("the backend claims no generalized event here".into());
    }
    let mut failures = Vec::new();
    for event in &claimed {
        let name = event.name();
        if let Err(detail) = open(subject, &[&name]) {
            failures.push(detail);
        }
    }
    if failures.is_empty() {
        Outcome::Pass
    } else {
        Outcome::Fail(format!(
            "{} of {} claimed events failed: {}",
            failures.len(),
            claimed.len(),
            failures.join("; ")
        ))
    }
}

/// Enabled counters increase under work.
pub fn counts_increase_under_work<S: Subject>(subject: &S) -> Outcome {
    let events = exact_or_skip!(subject);
    check(|| {
        let mut set = open(subject, &[&events[0].name])?;
        step("enable", set.enable())?;
        subject.work(100);
        let first = read(&mut set)?[0].value;
        subject.work(100);
        let second = read(&mut set)?[0].value;
        step("disable", set.disable())?;
        if first == 0 || second <= first {
            return Ok(Outcome::Fail(format!(
                "{}: {first} after 100 units, then {second} after 200",
                events[0].name
            )));
        }
        Ok(Outcome::Pass)
    })
}

/// Reads after disable are equal, whatever work follows.
pub fn read_after_disable_is_stable<S: Subject>(subject: &S) -> Outcome {
    let events = exact_or_skip!(subject);
    check(|| {
        let mut set = counted_set(subject, &[&events[0].name], &OpenOptions::default(), 50)?;
        let first = read(&mut set)?[0].value;
        subject.work(50);
        let second = read(&mut set)?[0].value;
        if first != second {
            return Ok(Outcome::Fail(format!(
                "read {first}, then {second} while disabled"
            )));
        }
        Ok(Outcome::Pass)
    })
}

/// Reset gives zero.
pub fn reset_gives_zero<S: Subject>(subject: &S) -> Outcome {
    let events = exact_or_skip!(subject);
    check(|| {
        let mut set = counted_set(subject, &[&events[0].name], &OpenOptions::default(), 50)?;
        let before = read(&mut set)?[0].value;
        step("reset", set.reset())?;
        let after = read(&mut set)?[0].value;
        if before == 0 {
            return Ok(Outcome::Fail("counted nothing before the reset".into()));
        }
        if after != 0 {
            return Ok(Outcome::Fail(format!("{after} after reset (was {before})")));
        }
        // And counting resumes from zero.
        step("enable", set.enable())?;
        subject.work(10);
        step("disable", set.disable())?;
        let again = read(&mut set)?[0].value;
        let expected = 10 * events[0].per_unit;
        if again != expected {
            return Ok(Outcome::Fail(format!(
                "{again} after reset and 10 units, want {expected}"
            )));
        }
        Ok(Outcome::Pass)
    })
}

/// A read after stop equals the value stop returned, exactly.
pub fn read_after_stop_equals_stop<S: Subject>(subject: &S) -> Outcome {
    let events = exact_or_skip!(subject);
    check(|| {
        let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
        let mut set = open(subject, &names)?;
        step("enable", set.enable())?;
        subject.work(30);
        let mut stopped = vec![Reading::default(); set.len()];
        step("stop", set.stop(&mut stopped))?;
        let later = read(&mut set)?;
        let stopped_values: Vec<u64> = stopped.iter().map(|r| r.value).collect();
        let later_values: Vec<u64> = later.iter().map(|r| r.value).collect();
        if stopped_values != later_values {
            return Ok(Outcome::Fail(format!(
                "stop gave {stopped_values:?}, a later read {later_values:?}"
            )));
        }
        Ok(Outcome::Pass)
    })
}

/// Exact events count exactly what the work did, at several sizes.
pub fn exact_counts<S: Subject>(subject: &S) -> Outcome {
    let events = exact_or_skip!(subject);
    check(|| {
        for event in &events {
            for units in [1u64, 100, 10_000] {
                let value = count_work(subject, &[&event.name], units)?[0].value;
                let expected = units * event.per_unit;
                if value != expected {
                    return Ok(Outcome::Fail(format!(
                        "{}: {value} after {units} units, want exactly {expected}",
                        event.name
                    )));
                }
            }
        }
        Ok(Outcome::Pass)
    })
}

/// Twice the work counts twice (within 5%): on the instruction loop where the backend counts
/// retired instructions on real hardware, else on the subject's exact events.
pub fn linearity<S: Subject>(subject: &S) -> Outcome {
    if let Ok(mut set) = hardware_set(subject, &["instructions:u"]) {
        return check(|| {
            let mut counts = [0u64; 2];
            for (count, iterations) in counts.iter_mut().zip([500_000u64, 1_000_000]) {
                step("reset", set.reset())?;
                step("enable", set.enable())?;
                let ran = workload::retire_instructions(iterations);
                step("disable", set.disable())?;
                if !ran {
                    return Ok(Outcome::Skip(
                        "no assembly workload for this architecture".into(),
                    ));
                }
                *count = read(&mut set)?[0].value;
            }
            Ok(ratio_outcome("instructions:u", counts))
        });
    }
    let events = exact_or_skip!(subject);
    check(|| {
        let mut counts = [0u64; 2];
        for (count, units) in counts.iter_mut().zip([2_000u64, 4_000]) {
            *count = count_work(subject, &[&events[0].name], units)?[0].value;
        }
        Ok(ratio_outcome(&events[0].name, counts))
    })
}

fn ratio_outcome(name: &str, counts: [u64; 2]) -> Outcome {
    let ratio = counts[1] as f64 / counts[0].max(1) as f64;
    if (ratio - 2.0).abs() > 0.1 {
        return Outcome::Fail(format!(
            "{name}: {} then {} for twice the work (ratio {ratio:.3})",
            counts[0], counts[1]
        ));
    }
    Outcome::Pass
}

/// A group's readings come back in the order requested, whichever the order.
pub fn group_read_in_order<S: Subject>(subject: &S) -> Outcome {
    let events = exact_or_skip!(subject);
    let distinct: Vec<&ExactEvent> = {
        let mut seen = Vec::new();
        for event in &events {
            if !seen
                .iter()
                .any(|e: &&ExactEvent| e.per_unit == event.per_unit)
            {
                seen.push(event);
            }
        }
        seen
    };
    if distinct.len() < 2 {
        return Outcome::Skip("needs two exact events with different counts".into());
    }
    check(|| {
        let (a, b) = (distinct[0], distinct[1]);
        for order in [[a, b], [b, a]] {
            let names = [order[0].name.as_str(), order[1].name.as_str()];
            let readings = count_work(subject, &names, 100)?;
            let got = [readings[0].value, readings[1].value];
            let want = [100 * order[0].per_unit, 100 * order[1].per_unit];
            if got != want {
                return Ok(Outcome::Fail(format!(
                    "{names:?} read {got:?}, want {want:?}"
                )));
            }
        }
        Ok(Outcome::Pass)
    })
}

/// Members of one group read together: the same event twice reads the same value, and every
/// member carries the same times.
pub fn group_members_consistent<S: Subject>(subject: &S) -> Outcome {
    let events = exact_or_skip!(subject);
    check(|| {
        let name = events[0].name.as_str();
        let mut set = open(subject, &[name, name])?;
        step("enable", set.enable())?;
        subject.work(200);
        let live = read(&mut set)?;
        step("disable", set.disable())?;
        let stopped = read(&mut set)?;
        for (when, readings) in [("while enabled", &live), ("after disable", &stopped)] {
            if readings[0].value != readings[1].value {
                return Ok(Outcome::Fail(format!(
                    "{when}: the same event read {} and {} in one group read",
                    readings[0].value, readings[1].value
                )));
            }
            if (readings[0].time_enabled, readings[0].time_running)
                != (readings[1].time_enabled, readings[1].time_running)
            {
                return Ok(Outcome::Fail(format!(
                    "{when}: members' times differ: {:?} vs {:?}",
                    readings[0], readings[1]
                )));
            }
        }
        Ok(Outcome::Pass)
    })
}

/// Scaling arithmetic on recorded readings: never ran, ran longer than enabled, near u64::MAX.
pub fn scaling_of_recorded_readings<S: Subject>(_subject: &S) -> Outcome {
    let table: [(Reading, Option<u64>); 6] = [
        (Reading::new(1_000, 2_000, 0), None),
        (Reading::new(1_000, 2_000, 1_000), Some(2_000)),
        (Reading::new(1_000, 1_000, 3_000), Some(1_000)),
        (Reading::new(u64::MAX, u64::MAX, 1), Some(u64::MAX)),
        (Reading::new(u64::MAX / 4, 4, 2), Some(u64::MAX / 2 - 1)),
        (Reading::new(3, 3, 2), Some(5)),
    ];
    for (reading, want) in table {
        let got = reading.scaled();
        if got != want {
            return Outcome::Fail(format!("{reading:?}.scaled() = {got:?}, want {want:?}"));
        }
    }
    Outcome::Pass
}

/// Live readings are coherent: an event that counted has run, ran no longer than enabled,
/// and scales to a value no smaller than it counted.
pub fn scaling_of_live_readings<S: Subject>(subject: &S) -> Outcome {
    let events = exact_or_skip!(subject);
    check(|| {
        let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
        for (name, reading) in names.iter().zip(count_work(subject, &names, 100)?) {
            if reading.time_enabled == 0 {
                return Ok(Outcome::Fail(format!(
                    "{name}: enabled for 0 ns: {reading:?}"
                )));
            }
            if reading.value > 0 && reading.time_running == 0 {
                return Ok(Outcome::Fail(format!(
                    "{name}: counted {} with time_running 0 (scaling would divide by zero)",
                    reading.value
                )));
            }
            if reading.time_running > reading.time_enabled {
                return Ok(Outcome::Fail(format!(
                    "{name}: ran longer than enabled: {reading:?}"
                )));
            }
            match reading.scaled() {
                Some(scaled) if scaled >= reading.value => {}
                other => {
                    return Ok(Outcome::Fail(format!(
                        "{name}: {reading:?} scaled to {other:?}"
                    )));
                }
            }
        }
        Ok(Outcome::Pass)
    })
}

/// An unknown event name is an invalid event.
pub fn unknown_event_is_invalid<S: Subject>(subject: &S) -> Outcome {
    match subject.backend().resolve("NO_SUCH_EVENT_COUNTERHAL") {
        Ok(resolved) => Outcome::Fail(format!("resolved to {resolved:?}")),
        Err(e) if e.kind() == ErrorKind::InvalidEvent => Outcome::Pass,
        Err(e) => Outcome::Fail(format!("kind {} (want invalid event): {e}", e.kind())),
    }
}

/// A bad modifier is an invalid event.
pub fn bad_modifier_is_invalid<S: Subject>(subject: &S) -> Outcome {
    let name = "cycles:nosuchmodifier=3";
    match subject.backend().resolve(name) {
        Ok(resolved) => Outcome::Fail(format!("{name} resolved to {resolved:?}")),
        Err(e) if e.kind() == ErrorKind::InvalidEvent => Outcome::Pass,
        Err(e) => Outcome::Fail(format!(
            "{name}: kind {} (want invalid event): {e}",
            e.kind()
        )),
    }
}

/// More events than counters: "no counter available" in a group, or, where the backend
/// multiplexes independent events, partial running times with sane estimates.
pub fn too_many_events<S: Subject>(subject: &S) -> Outcome {
    let Some((event, slots)) = subject.counter_event() else {
        return Outcome::Skip("the subject names no counter-limited event".into());
    };
    let names: Vec<&str> = std::iter::repeat_n(event.as_str(), slots as usize + 1).collect();
    let opened = subject
        .backend()
        .open_named(&names, &subject.target(), &OpenOptions::default());
    match opened {
        Ok(_) => return Outcome::Fail(format!("a group of {} x {event} opened", slots + 1)),
        Err(e) if e.kind() == ErrorKind::NoCounterAvailable => return Outcome::Pass,
        Err(e) if !subject.backend().capabilities().multiplexing => {
            return Outcome::Fail(format!(
                "kind {} (want no counter available): {e}",
                e.kind()
            ));
        }
        Err(_) => {}
    }
    // A multiplexing backend may accept the events ungrouped and time-share them.
    check(|| {
        let options = OpenOptions::ungrouped();
        let readings = count_work_with(subject, &names, &options, 10_000)?;
        let mut shared = false;
        for reading in &readings {
            if reading.time_running > reading.time_enabled {
                return Ok(Outcome::Fail(format!(
                    "ran longer than enabled: {reading:?}"
                )));
            }
            shared |= reading.is_multiplexed();
            match reading.scaled() {
                Some(scaled) if scaled >= reading.value => {}
                None if reading.value == 0 => {}
                other => {
                    return Ok(Outcome::Fail(format!("{reading:?} scaled to {other:?}")));
                }
            }
        }
        if !shared {
            return Ok(Outcome::Fail(format!(
                "{} events on {slots} counters all ran the whole time: {readings:?}",
                names.len()
            )));
        }
        Ok(Outcome::Pass)
    })
}

/// Every counter can be taken, and dropping the group gives every one back: the same group
/// opens again at once, and (where nothing is multiplexed) a further group cannot open while
/// the first holds them all.
pub fn dropping_a_group_frees_its_counters<S: Subject>(subject: &S) -> Outcome {
    let Some((event, slots)) = subject.counter_event() else {
        return Outcome::Skip("the subject names no counter-limited event".into());
    };
    let names: Vec<&str> = std::iter::repeat_n(event.as_str(), slots as usize).collect();
    check(|| {
        for round in 1..=3 {
            let held = open(subject, &names).map_err(|e| format!("round {round}: {e}"))?;
            if !subject.backend().capabilities().multiplexing {
                let one_more = subject.backend().open_named(
                    &[event.as_str()],
                    &subject.target(),
                    &OpenOptions::default(),
                );
                match one_more {
                    Ok(_) => {
                        return Ok(Outcome::Fail(format!(
                            "round {round}: one more `{event}` opened while {slots} held every counter"
                        )));
                    }
                    Err(e) if e.kind() != ErrorKind::NoCounterAvailable => {
                        return Ok(Outcome::Fail(format!(
                            "round {round}: one more `{event}`: kind {} (want no counter available): {e}",
                            e.kind()
                        )));
                    }
                    Err(_) => {}
                }
            }
            drop(held);
        }
        Ok(Outcome::Pass)
    })
}

/// A read into a buffer shorter than the group is an invalid input, never a panic or a
/// partial read.
pub fn short_read_buffer_is_invalid_input<S: Subject>(subject: &S) -> Outcome {
    let events = exact_or_skip!(subject);
    check(|| {
        let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
        let mut set = open(subject, &names)?;
        step("enable", set.enable())?;
        let mut short = vec![Reading::default(); names.len() - 1];
        let outcome = match set.read(&mut short) {
            Ok(()) => Outcome::Fail(format!(
                "a read of {} events into {} readings succeeded",
                names.len(),
                short.len()
            )),
            Err(e) if e.kind() == ErrorKind::InvalidInput => Outcome::Pass,
            Err(e) => Outcome::Fail(format!("kind {} (want invalid input): {e}", e.kind())),
        };
        step("disable", set.disable())?;
        Ok(outcome)
    })
}

/// Opening on a target the backend does not claim ([`Capabilities::supports`]) is unsupported.
///
/// [`Capabilities::supports`]: counterhal_hal::Capabilities::supports
pub fn unclaimed_target_is_unsupported<S: Subject>(subject: &S) -> Outcome {
    let events = exact_or_skip!(subject);
    let backend = subject.backend();
    let pid = std::process::id();
    let unclaimed: Vec<Target> = [
        Target::this_thread(),
        Target::process(pid),
        Target::process_and_children(pid),
        Target::cpu(0),
        Target::exec(pid),
    ]
    .into_iter()
    .filter(|target| !backend.capabilities().supports(target))
    .collect();
    if unclaimed.is_empty() {
        return Outcome::Skip("the backend claims every target".into());
    }
    let name = events[0].name.as_str();
    let mut failures = Vec::new();
    for target in &unclaimed {
        match backend.open_named(&[name], target, &OpenOptions::default()) {
            Ok(_) => failures.push(format!("{target}: opened")),
            Err(e) if e.kind() == ErrorKind::Unsupported => {}
            Err(e) => failures.push(format!(
                "{target}: kind {} (want unsupported): {e}",
                e.kind()
            )),
        }
    }
    if failures.is_empty() {
        Outcome::Pass
    } else {
        Outcome::Fail(failures.join("; "))
    }
}

/// `:u` counts only what happens in user mode and `:k` only what happens in kernel mode, for
/// each exact event whose split the subject knows; the two are read from one group.
pub fn user_and_kernel_modifiers_split_the_count<S: Subject>(subject: &S) -> Outcome {
    let events = exact_or_skip!(subject);
    let split: Vec<&ExactEvent> = events
        .iter()
        .filter(|e| e.user_per_unit.is_some())
        .collect();
    if split.is_empty() {
        return Outcome::Skip(
            "the subject knows no exact event's split between user and kernel mode".into(),
        );
    }
    const UNITS: u64 = 500;
    check(|| {
        let mut failures = Vec::new();
        for event in split {
            let user = event.user_per_unit.unwrap_or(0);
            let kernel = event.per_unit - user;
            let names = [format!("{}:u", event.name), format!("{}:k", event.name)];
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let readings = count_work(subject, &names, UNITS)?;
            let want = [user * UNITS, kernel * UNITS];
            let got: Vec<u64> = readings.iter().map(|r| r.value).collect();
            if got != want {
                failures.push(format!("{names:?}: counted {got:?}, want {want:?}"));
            }
        }
        Ok(if failures.is_empty() {
            Outcome::Pass
        } else {
            Outcome::Fail(failures.join("; "))
        })
    })
}

/// A missing device is reported as such.
pub fn missing_device<S: Subject>(subject: &S) -> Outcome {
    match subject.missing_device_error() {
        None => Outcome::Skip("the backend has no device file".into()),
        Some(e) if e.kind() == ErrorKind::DeviceMissing => Outcome::Pass,
        Some(e) => Outcome::Fail(format!("kind {} (want device missing): {e}", e.kind())),
    }
}

/// 10,000 open/close cycles of the first exact event leave no file descriptor and no memory
/// behind.
pub fn open_close_hygiene<S: Subject>(subject: &S) -> Outcome {
    let events = exact_or_skip!(subject);
    check(|| {
        let names = [events[0].name.as_str()];
        let cycle = || -> Result<(), String> {
            let mut set = open(subject, &names)?;
            step("enable", set.enable())?;
            read(&mut set)?;
            Ok(())
        };
        for _ in 0..100 {
            cycle()?;
        }
        // Four quarters of 2,500: a leak grows the process in every one; a one-off
        // allocation elsewhere in the process (an allocator arena for a thread another test
        // starts, a lazily built table) in one or two. Another thread can also grow the
        // process for a while (a panicking test symbolizing its backtrace): growth in every
        // quarter counts as a leak only when a second round of four shows it again.
        const LEAK_BYTES: u64 = 256 * 1024; // about 100 bytes a cycle
        let fds_before = open_fds();
        let mut steady_growth = None;
        let mut measured = false;
        for _round in 0..2 {
            let mut memory = vec![resident_bytes()];
            for _ in 0..4 {
                for _ in 0..2_500 {
                    cycle()?;
                }
                memory.push(resident_bytes());
            }
            let sizes: Option<Vec<u64>> = memory.iter().copied().collect();
            measured |= sizes.is_some();
            steady_growth =
                sizes.filter(|sizes| sizes.windows(2).all(|pair| pair[1] > pair[0] + LEAK_BYTES));
            if steady_growth.is_none() {
                break;
            }
        }
        let fds_after = open_fds();
        if let (Some(before), Some(after)) = (fds_before, fds_after)
            && after > before
        {
            return Ok(Outcome::Fail(format!(
                "{before} fds open before, {after} after"
            )));
        }
        if let Some(sizes) = steady_growth {
            return Ok(Outcome::Fail(format!(
                "resident memory grew steadily in two rounds of 4 x 2,500 cycles; the second: {sizes:?} bytes"
            )));
        }
        if fds_before.is_none() && !measured {
            return Ok(Outcome::Skip(
                "10,000 cycles ran, but this OS offers no /proc/self to count fds and memory"
                    .into(),
            ));
        }
        Ok(Outcome::Pass)
    })
}

fn open_fds() -> Option<usize> {
    ["/proc/self/fd", "/dev/fd"]
        .iter()
        .find_map(|dir| std::fs::read_dir(dir).ok().map(|entries| entries.count()))
}

fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Counters opened in two threads count each thread's work only.
pub fn threads_count_independently<S: Subject>(subject: &S) -> Outcome {
    if !subject.counts_per_thread() {
        return Outcome::Skip("this backend counts per CPU, not per thread".into());
    }
    let events = exact_or_skip!(subject);
    let event = &events[0];
    let run = |units: u64| -> Result<u64, String> {
        Ok(count_work(subject, &[&event.name], units)?[0].value)
    };
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| run(300));
        let b = scope.spawn(|| run(700));
        (a.join(), b.join())
    });
    match (a, b) {
        (Ok(Ok(a)), Ok(Ok(b))) => {
            let want = (300 * event.per_unit, 700 * event.per_unit);
            if (a, b) == want {
                Outcome::Pass
            } else {
                Outcome::Fail(format!(
                    "threads read {a} and {b}, want {} and {}",
                    want.0, want.1
                ))
            }
        }
        (Ok(Err(e)), _) | (_, Ok(Err(e))) => Outcome::Fail(e),
        _ => Outcome::Fail("a thread panicked".into()),
    }
}

/// Why a hardware case cannot run, or the opened set.
fn hardware_set<S: Subject>(subject: &S, names: &[&str]) -> Result<Set<S>, Outcome> {
    if subject.backend().device() == DeviceKind::Model {
        return Err(Outcome::Skip(
            "a model counts fed events, it does not execute code".into(),
        ));
    }
    if !matches!(subject.target(), Target::ThisThread) {
        return Err(Outcome::Skip(
            "the subject does not count the calling thread".into(),
        ));
    }
    subject
        .backend()
        .open_named(names, &Target::ThisThread, &OpenOptions::default())
        .map_err(|e| match e.kind() {
            // The machine has no such counter, or withholds it: nothing to check here.
            ErrorKind::Unsupported
            | ErrorKind::DeviceMissing
            | ErrorKind::PermissionDenied
            | ErrorKind::NoCounterAvailable => {
                Outcome::Skip(format!("cannot count {names:?} here: {e}"))
            }
            // Anything else is the backend failing at something it claims to do.
            _ => Outcome::Fail(format!("opening {names:?}: {e}")),
        })
}

fn within_one_percent(got: u64, want: u64) -> bool {
    let tolerance = want / 100;
    got.abs_diff(want) <= tolerance
}

/// PAPI-style: a loop of exactly 1,000,000 retired instructions counts 1,000,000 within 1%.
pub fn instructions_loop<S: Subject>(subject: &S) -> Outcome {
    const INSTRUCTIONS: u64 = 1_000_000;
    let mut set = match hardware_set(subject, &["instructions:u"]) {
        Ok(set) => set,
        Err(outcome) => return outcome,
    };
    check(|| {
        let iterations = INSTRUCTIONS / workload::INSTRUCTIONS_PER_ITERATION;
        step("reset", set.reset())?;
        step("enable", set.enable())?;
        let ran = workload::retire_instructions(iterations);
        step("disable", set.disable())?;
        if !ran {
            return Ok(Outcome::Skip(
                "no assembly workload for this architecture".into(),
            ));
        }
        let got = read(&mut set)?[0].value;
        if within_one_percent(got, INSTRUCTIONS) {
            Ok(Outcome::Pass)
        } else {
            Ok(Outcome::Fail(format!(
                "{got} instructions, want {INSTRUCTIONS} within 1%"
            )))
        }
    })
}

/// PAPI-style: a loop with a known number of conditional branches counts them within 1%.
pub fn branch_loop<S: Subject>(subject: &S) -> Outcome {
    const ITERATIONS: u64 = 500_000;
    let mut set = match hardware_set(subject, &["branches:u"]) {
        Ok(set) => set,
        Err(outcome) => return outcome,
    };
    check(|| {
        step("reset", set.reset())?;
        step("enable", set.enable())?;
        let ran = workload::run_branches(ITERATIONS);
        step("disable", set.disable())?;
        if ran.is_none() {
            return Ok(Outcome::Skip(
                "no assembly workload for this architecture".into(),
            ));
        }
        let want = 2 * ITERATIONS;
        let got = read(&mut set)?[0].value;
        if within_one_percent(got, want) {
            Ok(Outcome::Pass)
        } else {
            Ok(Outcome::Fail(format!(
                "{got} branches, want {want} within 1%"
            )))
        }
    })
}
