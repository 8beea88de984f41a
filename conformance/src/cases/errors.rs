//! Errors and limits: names that are not events, more events than counters, counters given back, short buffers, targets the backend does not claim, a missing device.

use counterhal_hal::BackendExt;
use counterhal_hal::{Backend, BackendTarget, ErrorKind, Group, OpenOptions, Reading};

use super::measure::*;
use crate::{Outcome, Subject};

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
        Err(e) if !subject.backend().capabilities().multiplexing() => {
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
            let held = open(subject, &names).map_err(|e| e.context(&format!("round {round}")))?;
            if !subject.backend().capabilities().multiplexing() {
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
    let unclaimed: Vec<BackendTarget> = [
        BackendTarget::this_thread(),
        BackendTarget::process(pid),
        BackendTarget::process_and_children(pid),
        BackendTarget::cpu(0),
        BackendTarget::exec(pid),
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

/// A missing device is reported as such.
pub fn missing_device<S: Subject>(subject: &S) -> Outcome {
    match subject.missing_device_error() {
        None => Outcome::Skip("the backend has no device file".into()),
        Some(e) if e.kind() == ErrorKind::DeviceMissing => Outcome::Pass,
        Some(e) => Outcome::Fail(format!("kind {} (want device missing): {e}", e.kind())),
    }
}
