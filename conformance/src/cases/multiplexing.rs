//! Multiplexing: more independent events than counters, time-shared by the kernel or in
//! software, with times and estimates that mean something.

use counterhal_hal::BackendExt;
use counterhal_hal::{Backend, ErrorKind, Group, OpenOptions, Reading};

use super::measure::*;
use crate::{Outcome, Subject};

/// Calls of the subject's work between enable and disable, and units per call: 20 ms of the
/// models' time (five 4 ms turns), spread so a turn sees work, not one burst.
const CALLS: u64 = 2_000;
const UNITS_PER_CALL: u64 = 1_000;

/// How far each estimate may stray from the mean of the estimates of the same event.
const TOLERANCE: f64 = 0.10;

/// How far the events' times enabled may differ, as a share of the longest: the kernel enables
/// an ungrouped set one event at a time (about a microsecond apart on an idle machine, more
/// if the thread is preempted between the calls); software multiplexing gives equal times.
const ENABLED_SPREAD: f64 = 0.01;

/// Where the backend multiplexes: one more copy of the subject's
/// [`multiplexed_event`](Subject::multiplexed_event) than it has counters, opened ungrouped, under steady work. Every reading runs at most as long as
/// the set is enabled, at least one event does not run all the time, the set's time enabled is
/// the same for all (within 1%, as the kernel enables an ungrouped set one event at a time), and the estimates of the copies (one event at one steady rate) agree
/// within 10%.
pub fn multiplexing_time_shares_events<S: Subject>(subject: &S) -> Outcome {
    if !subject.backend().capabilities().multiplexing() {
        return Outcome::Skip(format!(
            "the {} backend does not multiplex",
            subject.backend().name()
        ));
    }
    let Some((event, slots)) = subject.multiplexed_event() else {
        return Outcome::Skip("the subject names no counter-limited event".into());
    };
    let names: Vec<&str> = std::iter::repeat_n(event.as_str(), slots as usize + 1).collect();
    let options = OpenOptions::ungrouped();
    let mut set = match subject
        .backend()
        .open_named(&names, &subject.target(), &options)
    {
        Ok(set) => set,
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::Unsupported
                    | ErrorKind::NotFound
                    | ErrorKind::DeviceMissing
                    | ErrorKind::PermissionDenied
            ) =>
        {
            return Outcome::Skip(format!("{event} cannot be counted here: {e}"));
        }
        Err(e) => {
            return Outcome::Fail(format!(
                "{} x {event} ungrouped did not open: {e}",
                names.len()
            ));
        }
    };
    check(|| {
        step("enable", set.enable())?;
        for _ in 0..CALLS {
            subject.work(UNITS_PER_CALL);
        }
        step("disable", set.disable())?;
        let readings = read(&mut set)?;
        Ok(judge(&event, slots, &readings))
    })
}

fn judge(event: &str, slots: u32, readings: &[Reading]) -> Outcome {
    let mut shared = false;
    let longest_enabled = readings.iter().map(|r| r.time_enabled).max().unwrap_or(0);
    let mut estimates = Vec::with_capacity(readings.len());
    for reading in readings {
        if reading.time_running > reading.time_enabled {
            return Outcome::Fail(format!("ran longer than enabled: {reading:?}"));
        }
        if (longest_enabled - reading.time_enabled) as f64 > longest_enabled as f64 * ENABLED_SPREAD
        {
            return Outcome::Fail(format!(
                "the set's events were enabled for different times: {readings:?}"
            ));
        }
        shared |= reading.time_running < reading.time_enabled;
        match reading.scaled() {
            Some(scaled) if scaled >= reading.value => estimates.push(scaled as f64),
            None if reading.value == 0 => {}
            other => return Outcome::Fail(format!("{reading:?} scaled to {other:?}")),
        }
    }
    if !shared {
        return Outcome::Fail(format!(
            "{} x {event} on {slots} counters all ran the whole time: {readings:?}",
            readings.len()
        ));
    }
    if estimates.len() < 2 || estimates.iter().all(|&e| e == 0.0) {
        return Outcome::Skip(format!(
            "the work counted no {event}, so the estimates cannot be compared: {readings:?}"
        ));
    }
    let mean = estimates.iter().sum::<f64>() / estimates.len() as f64;
    for (reading, estimate) in readings.iter().zip(&estimates) {
        let error = (estimate - mean).abs() / mean;
        if error > TOLERANCE {
            return Outcome::Fail(format!(
                "{event}: estimate {estimate} is {:.1}% from the copies' mean {mean:.0} at a \
                 steady rate: {reading:?}",
                error * 100.0
            ));
        }
    }
    Outcome::Pass
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judging_catches_what_multiplexing_must_not_do() {
        let fine = [Reading::new(500, 100, 50), Reading::new(1_000, 100, 100)];
        assert_eq!(judge("e", 1, &fine), Outcome::Pass);
        let longer = [Reading::new(1, 100, 150), Reading::new(1, 100, 50)];
        assert!(matches!(judge("e", 1, &longer), Outcome::Fail(_)));
        let whole = [Reading::new(1, 100, 100), Reading::new(1, 100, 100)];
        assert!(matches!(judge("e", 1, &whole), Outcome::Fail(_)));
        let apart = [Reading::new(500, 100, 50), Reading::new(2_000, 100, 100)];
        assert!(matches!(judge("e", 1, &apart), Outcome::Fail(_)));
        let times = [Reading::new(500, 100, 50), Reading::new(1_000, 90, 90)];
        assert!(matches!(judge("e", 1, &times), Outcome::Fail(_)));
        // The kernel enables an ungrouped set one event at a time.
        let ioctls = [
            Reading::new(500_000, 10_000_000, 5_000_000),
            Reading::new(1_000_000, 10_001_142, 10_001_142),
        ];
        assert_eq!(judge("e", 1, &ioctls), Outcome::Pass);
        let nothing = [Reading::new(0, 100, 50), Reading::new(0, 100, 50)];
        assert!(matches!(judge("e", 1, &nothing), Outcome::Skip(_)));
    }
}
