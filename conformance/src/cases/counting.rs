//! Counting: counts rise under work, stay put when disabled, reset to zero, match the work exactly and linearly, and split by privilege level as asked.

use counterhal_hal::BackendExt;
use counterhal_hal::{Backend, ErrorKind, Group, OpenOptions, Reading};

use super::measure::*;
use crate::workload;
use crate::{ExactEvent, Outcome, Subject};

/// Every generalized event the backend claims opens and closes.
pub fn generalized_events_open<S: Subject>(subject: &S) -> Outcome {
    let claimed = subject.backend().generalized();
    if claimed.is_empty() {
        return Outcome::Skip("the backend claims no generalized event here".into());
    }
    let mut failures = Vec::new();
    let mut refused = Vec::new();
    // A derived event (a PAPI preset) opens its terms as one group: with more terms than the
    // PMU has counters it cannot open, as PAPI refuses it (PAPI_ECNFLCT): not a failure. So is
    // one whose terms need more general counters than the PMU has (PAPI 7.2's Ice Lake
    // `PAPI_VEC_INS`, six `FP_ARITH_INST_RETIRED` terms, on four): the backend says so
    // (`NoCounterAvailable`).
    let capabilities = subject.backend().capabilities();
    let counters = capabilities
        .general_counters()
        .map(|general| general as usize + capabilities.fixed_counters() as usize);
    for event in &claimed {
        let name = event.name();
        let terms = subject
            .backend()
            .resolve(&name)
            .map_or(1, |resolved| resolved.terms.len());
        if let Some(counters) = counters
            && terms > counters
        {
            refused.push(format!("{name}: {terms} terms, {counters} counters"));
            continue;
        }
        let opened =
            subject
                .backend()
                .open_named(&[&name], &subject.target(), &OpenOptions::default());
        match opened {
            Ok(_) => {}
            Err(e) if terms > 1 && e.kind() == ErrorKind::NoCounterAvailable => {
                refused.push(format!("{name}: {terms} terms do not fit: {e}"));
            }
            Err(e) if e.kind() == ErrorKind::PermissionDenied => {
                refused.push(format!("not permitted here: opening {name}: {e}"));
            }
            Err(e) => failures.push(format!("opening [{name:?}]: {e}")),
        }
    }
    if failures.is_empty() && refused.len() == claimed.len() {
        Outcome::Skip(format!(
            "every claimed event is withheld from this process: {}",
            refused[0]
        ))
    } else if failures.is_empty() {
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
                match count_loop(&mut set, || workload::retire_instructions(iterations))? {
                    Some(counted) => *count = counted,
                    None => return Ok(no_workload()),
                }
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
