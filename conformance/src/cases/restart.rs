//! Restarted groups: the loop every benchmark harness runs (enable, work, disable, read, and
//! again, with or without a reset), checked member by member and window by window, with
//! groups that mix the subject's PMUs so that each of them leads once; and the same loop on a
//! sampler whose group's values ride with each sample.

use counterhal_hal::{ErrorKind, Group, Reading, Record, SampleFields, SampleOptions, Sampler};

use super::measure::*;
use crate::{CompanionEvent, Outcome, Subject};

/// Units of work in each window: distinct, so a member that misses one window cannot match.
const WINDOWS: [u64; 4] = [5, 7, 11, 2];

/// One member of a restart group: what each unit of work adds to it, if it is exact, or
/// whether it must grow in every window (a clock).
#[derive(Clone)]
struct Member {
    name: String,
    per_unit: Option<u64>,
    grows: bool,
}

/// The subject's exact events and companions, in every rotation: each leads its group once.
fn rotations<S: Subject>(subject: &S) -> Result<Vec<Vec<Member>>, Outcome> {
    let exact = exact(subject)?;
    let mut members: Vec<Member> = exact
        .into_iter()
        .map(|e| Member {
            name: e.name,
            per_unit: Some(e.per_unit),
            grows: false,
        })
        .collect();
    members.extend(
        subject
            .companion_events()
            .into_iter()
            .map(|CompanionEvent { name, grows }| Member {
                name,
                per_unit: None,
                grows,
            }),
    );
    if members.len() < 2 {
        return Err(Outcome::Skip(
            "needs two events to form a group (an exact event and another)".into(),
        ));
    }
    Ok((0..members.len())
        .map(|first| {
            let mut order = members.clone();
            order.rotate_left(first);
            order
        })
        .collect())
}

/// Runs the [`WINDOWS`] on one group of `members`, reading after each window (and resetting
/// before each when `reset`); the first member whose count misses its windows' work fails.
fn windows<S: Subject>(subject: &S, members: &[Member], reset: bool) -> Result<Outcome, Stop> {
    let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
    let mut set = open(subject, &names)?;
    let mut before = vec![Reading::default(); members.len()];
    let mut units = 0;
    for (window, &n) in WINDOWS.iter().enumerate() {
        if reset {
            step("reset", set.reset())?;
        }
        step("enable", set.enable())?;
        subject.work(n);
        step("disable", set.disable())?;
        // Work between windows is counted by nothing.
        subject.work(1);
        let now = read(&mut set)?;
        units = if reset { n } else { units + n };
        for ((member, got), old) in members.iter().zip(&now).zip(&before) {
            let from = if reset { 0 } else { old.value };
            let wrong = match member.per_unit {
                Some(per_unit) => got.value != units * per_unit,
                None => member.grows && got.value <= from,
            };
            if wrong {
                let want = match member.per_unit {
                    Some(per_unit) => format!("{}", units * per_unit),
                    None => format!("more than {from}"),
                };
                return Ok(Outcome::Fail(format!(
                    "{} read {} after window {} of {WINDOWS:?} (reset before each: {reset}), \
                     want {want}; the group, leader first: {names:?}; readings {now:?}",
                    member.name,
                    got.value,
                    window + 1,
                )));
            }
        }
        before = now;
    }
    Ok(Outcome::Pass)
}

/// A group enabled and disabled again and again counts every member in every window: each
/// exact member reads the work of all its windows so far, each clock grows in each window, and
/// each of the subject's events leads the group once (a member of another PMU than its
/// leader's must resume with it).
pub fn restarted_group_counts_every_window<S: Subject>(subject: &S) -> Outcome {
    let groups = match rotations(subject) {
        Ok(groups) => groups,
        Err(outcome) => return outcome,
    };
    check(|| {
        for members in &groups {
            let outcome = windows(subject, members, false)?;
            if outcome != Outcome::Pass {
                return Ok(outcome);
            }
        }
        Ok(Outcome::Pass)
    })
}

/// The harness loop with a reset before each window (reset, enable, work, disable, read):
/// every exact member reads its window's work alone, and every clock counts in every window.
pub fn reset_between_windows_counts_each_window<S: Subject>(subject: &S) -> Outcome {
    let groups = match rotations(subject) {
        Ok(groups) => groups,
        Err(outcome) => return outcome,
    };
    check(|| {
        for members in &groups {
            let outcome = windows(subject, members, true)?;
            if outcome != Outcome::Pass {
                return Ok(outcome);
            }
        }
        Ok(Outcome::Pass)
    })
}

/// A sampler enabled and disabled again and again reads every member of its group in every
/// window: led by each exact event in turn, sampling its every event with the group's values,
/// each window gives one sample per leader event; the last sample's leader value is the work
/// of all windows so far, each exact member's value grew by the window's work since the last
/// window's last sample, and each clock grew.
pub fn restarted_sampler_reads_every_member<S: Subject>(subject: &S) -> Outcome {
    let groups = match rotations(subject) {
        Ok(groups) => groups,
        Err(outcome) => return outcome,
    };
    check(|| {
        for members in groups.iter().filter(|m| m[0].per_unit.is_some()) {
            let outcome = sampled_windows(subject, members)?;
            if outcome != Outcome::Pass {
                return Ok(outcome);
            }
        }
        Ok(Outcome::Pass)
    })
}

/// Runs the [`WINDOWS`] on one sampler of `members` (an exact event leading, sampling at each
/// of its events) and checks each window's last sample against the one before it.
fn sampled_windows<S: Subject>(subject: &S, members: &[Member]) -> Result<Outcome, Stop> {
    let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
    let options = SampleOptions::period(1, SampleFields::default().with_group_values());
    let mut sampler = match subject.open_sampler(&names, &options) {
        None => return Ok(Outcome::Skip("the subject does not sample".into())),
        Some(Err(e)) if e.kind() == ErrorKind::PermissionDenied => {
            return Err(Stop::Skip(format!(
                "not permitted here: sampling {names:?}: {e}"
            )));
        }
        Some(Err(e)) => return Err(Stop::Fail(format!("sampling {names:?}: {e}"))),
        Some(Ok(sampler)) => sampler,
    };
    let leader_per_unit = members[0].per_unit.unwrap_or(0);
    let mut before: Option<Vec<u64>> = None;
    let mut units = 0;
    for (window, &n) in WINDOWS.iter().enumerate() {
        step("enable", sampler.enable())?;
        subject.work(n);
        step("disable", sampler.disable())?;
        // Work between windows is counted by nothing.
        subject.work(1);
        units += n;
        let (samples, last) = last_sample(sampler.as_mut())?;
        let fail = |detail: String| {
            Ok(Outcome::Fail(format!(
                "{detail} after window {} of {WINDOWS:?}; the sampler's group, leader first: \
                 {names:?}; the last sample's values {last:?}, the window before's {before:?}",
                window + 1
            )))
        };
        if samples != n * leader_per_unit || last.len() != members.len() {
            return fail(format!(
                "{samples} samples of {} values, want {} of {}",
                last.len(),
                n * leader_per_unit,
                members.len()
            ));
        }
        if last[0] != units * leader_per_unit {
            return fail(format!(
                "the leader {} read {}, want {}",
                members[0].name,
                last[0],
                units * leader_per_unit
            ));
        }
        for (i, member) in members.iter().enumerate().skip(1) {
            let (from, got) = (before.as_ref().map_or(0, |b| b[i]), last[i]);
            let wrong = match (member.per_unit, &before) {
                // The leader's last event of a window falls at the same point of a unit of
                // work in every window: the member's count there moves by whole windows.
                (Some(per_unit), Some(_)) => got.wrapping_sub(from) != n * per_unit,
                (Some(per_unit), None) => got > n * per_unit || got + per_unit < n * per_unit,
                (None, _) => member.grows && got <= from,
            };
            if wrong {
                let want = match member.per_unit {
                    Some(per_unit) if before.is_some() => format!("{}", from + n * per_unit),
                    Some(per_unit) => format!("{} to {}", (n - 1) * per_unit, n * per_unit),
                    None => format!("more than {from}"),
                };
                return fail(format!("{} read {got}, want {want}", member.name));
            }
        }
        before = Some(last);
    }
    Ok(Outcome::Pass)
}

/// Walks `sampler`'s ring: how many samples it held, and the group's values of the last.
fn last_sample(sampler: &mut dyn Sampler) -> Result<(u64, Vec<u64>), String> {
    let mut samples = 0;
    let mut last = Vec::new();
    sampler
        .walk(&mut |record| {
            if let Record::Sample(sample) = record {
                samples += 1;
                last.clear();
                last.extend_from_slice(sample.group_values);
            }
        })
        .map_err(|e| format!("walk: {e}"))?;
    Ok((samples, last))
}
