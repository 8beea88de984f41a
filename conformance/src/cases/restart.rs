//! Restarted groups: the loop every benchmark harness runs (enable, work, disable, read, and
//! again, with or without a reset), checked member by member and window by window, with
//! groups that mix the subject's PMUs so that each of them leads once.

use counterhal_hal::{Group, Reading};

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
