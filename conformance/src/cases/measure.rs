//! What the cases share: opening named events on the subject's target, counting a number of
//! units of its work, reading, and turning early errors into failures.

use counterhal_hal::BackendExt;
use counterhal_hal::{
    Backend, BackendTarget, DeviceKind, ErrorKind, EventSet, Group, OpenOptions, Reading,
};

use crate::{ExactEvent, Outcome, Subject};

pub(super) type Set<S> = EventSet<<<S as Subject>::Backend as Backend>::Group>;

/// Why a case stopped early: the backend failed, or the OS withholds what the case needs (a
/// permission this process lacks), which is a skip with the reason, never a failure.
pub(super) enum Stop {
    /// The backend failed at something it claims to do.
    Fail(String),
    /// The case cannot run here.
    Skip(String),
}

impl Stop {
    /// The same stop, its detail prefixed with where it happened.
    pub(super) fn context(self, place: &str) -> Stop {
        match self {
            Stop::Fail(detail) => Stop::Fail(format!("{place}: {detail}")),
            Stop::Skip(reason) => Stop::Skip(format!("{place}: {reason}")),
        }
    }

    /// The case's outcome when it stops here.
    pub(super) fn outcome(self) -> Outcome {
        match self {
            Stop::Fail(detail) => Outcome::Fail(detail),
            Stop::Skip(reason) => Outcome::Skip(reason),
        }
    }
}

impl From<String> for Stop {
    fn from(detail: String) -> Self {
        Stop::Fail(detail)
    }
}

pub(super) fn open<S: Subject>(subject: &S, names: &[&str]) -> Result<Set<S>, Stop> {
    open_with(subject, names, &OpenOptions::default())
}

pub(super) fn open_with<S: Subject>(
    subject: &S,
    names: &[&str],
    options: &OpenOptions,
) -> Result<Set<S>, Stop> {
    subject
        .backend()
        .open_named(names, &subject.target(), options)
        .map_err(|e| {
            let detail = format!("opening {names:?}: {e}");
            if e.kind() == ErrorKind::PermissionDenied {
                Stop::Skip(format!("not permitted here: {detail}"))
            } else {
                Stop::Fail(detail)
            }
        })
}

/// Runs `f`, turning an early stop into a failure or a skip.
pub(super) fn check(f: impl FnOnce() -> Result<Outcome, Stop>) -> Outcome {
    f().unwrap_or_else(Stop::outcome)
}

pub(super) fn read<G: Group>(group: &mut G) -> Result<Vec<Reading>, String> {
    group.read_to_vec().map_err(|e| format!("read: {e}"))
}

/// Opens `names` (with `options`) and counts `units` of the subject's work between enable and
/// disable; returns the disabled set, for cases that go on with it.
pub(super) fn counted_set<S: Subject>(
    subject: &S,
    names: &[&str],
    options: &OpenOptions,
    units: u64,
) -> Result<Set<S>, Stop> {
    let mut set = open_with(subject, names, options)?;
    step("enable", set.enable())?;
    subject.work(units);
    step("disable", set.disable())?;
    Ok(set)
}

/// As [`counted_set`], then reads: the measurement most cases make.
pub(super) fn count_work_with<S: Subject>(
    subject: &S,
    names: &[&str],
    options: &OpenOptions,
    units: u64,
) -> Result<Vec<Reading>, Stop> {
    Ok(read(&mut counted_set(subject, names, options, units)?)?)
}

pub(super) fn count_work<S: Subject>(
    subject: &S,
    names: &[&str],
    units: u64,
) -> Result<Vec<Reading>, Stop> {
    count_work_with(subject, names, &OpenOptions::default(), units)
}

pub(super) fn step(what: &str, result: counterhal_hal::Result<()>) -> Result<(), String> {
    result.map_err(|e| format!("{what}: {e}"))
}

/// The subject's exact events, or a skip saying there are none.
pub(super) fn exact<S: Subject>(subject: &S) -> Result<Vec<ExactEvent>, Outcome> {
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

/// Why a hardware case cannot run, or the opened set.
pub(super) fn hardware_set<S: Subject>(subject: &S, names: &[&str]) -> Result<Set<S>, Outcome> {
    if subject.backend().device() == DeviceKind::Model {
        return Err(Outcome::Skip(
            "a model counts fed events, it does not execute code".into(),
        ));
    }
    if !matches!(subject.target(), BackendTarget::ThisThread) {
        return Err(Outcome::Skip(
            "the subject does not count the calling thread".into(),
        ));
    }
    subject
        .backend()
        .open_named(names, &BackendTarget::ThisThread, &OpenOptions::default())
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

/// Counts one run of `workload` on `set` from zero: reset, enable, the workload, disable, read.
/// `Ok(None)` when the workload has no loop for this architecture (it returns `false`).
pub(super) fn count_loop<G: Group>(
    set: &mut G,
    workload: impl FnOnce() -> bool,
) -> Result<Option<u64>, String> {
    step("reset", set.reset())?;
    step("enable", set.enable())?;
    let ran = workload();
    step("disable", set.disable())?;
    if !ran {
        return Ok(None);
    }
    Ok(Some(read(set)?[0].value))
}

/// The skip of a hardware case on an architecture without an assembly workload.
pub(super) fn no_workload() -> Outcome {
    Outcome::Skip("no assembly workload for this architecture".into())
}
