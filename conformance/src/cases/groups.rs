//! Groups and scaling: readings in request order, members read together, estimates that follow from the times.

use counterhal_hal::{Group, Reading};

use super::measure::*;
use crate::{ExactEvent, Outcome, Subject};

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
