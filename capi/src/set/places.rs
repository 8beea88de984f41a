//! Where a set counts, row by row (`counterhal_set_targets`, `counterhal_set_read_each`,
//! `counterhal_set_place`): the places of its target, each read on its own.

use counterhal_hal::{BackendTarget, Reading, ResolvedEvent};
use facade::{AnyGroup, Place};

use super::{Set, State, counters_mut};
use crate::{CResult, Failure, code};

/// What a row of `counterhal_set_read_each` counts (`counterhal_set_place`).
pub mod place {
    /// The calling thread.
    pub const THIS_THREAD: i32 = 0;
    /// A thread, by id.
    pub const THREAD: i32 = 1;
    /// A CPU, by number.
    pub const CPU: i32 = 2;
    /// A place this version does not name.
    pub const OTHER: i32 = 3;
}

/// Each event's reading from its terms' readings (`terms`, in the events' term order).
fn combined(events: &[ResolvedEvent], terms: &[Reading]) -> Vec<Reading> {
    let mut next = 0;
    events
        .iter()
        .map(|event| {
            let end = (next + event.terms.len()).min(terms.len());
            let reading = event.combine(&terms[next.min(end)..end]);
            next = end;
            reading
        })
        .collect()
}

impl Set {
    /// The places the set counts on when it opens now: its target's, a thread's with what
    /// it creates where the set inherits.
    fn places_now(&self) -> CResult<Vec<BackendTarget>> {
        let targets =
            facade::advanced::backend_targets(&self.attach, self.inner.chosen.context().system())?;
        if !self.options.inherit {
            return Ok(targets);
        }
        targets
            .into_iter()
            .map(|target| match target {
                BackendTarget::ThisThread => crate::sys::this_thread_id()
                    .map(BackendTarget::process_and_children)
                    .ok_or_else(|| {
                        Failure::new(
                            code::UNSUPPORTED,
                            "COUNTERHAL_OPTION_INHERIT on the calling thread needs its thread id, \
                             which only Linux gives here",
                        )
                    }),
                BackendTarget::Process { pid, .. } => Ok(BackendTarget::process_and_children(pid)),
                other => Ok(other),
            })
            .collect()
    }

    /// The places of the open set: each target's where it counts several, else the one it
    /// was opened on.
    fn places(&self) -> CResult<Vec<Place>> {
        if let State::Running(counters) | State::Stopped(counters) = &self.state
            && let AnyGroup::Targets(each) = counters.group()
        {
            return Ok(each.places().collect());
        }
        Ok(self.places_now()?.iter().map(Place::from).collect())
    }

    /// How many places the set counts on (threads of a process, CPUs); 1 for a thread.
    pub(crate) fn targets(&self) -> CResult<usize> {
        match &self.state {
            State::Running(counters) | State::Stopped(counters) => match counters.group() {
                AnyGroup::Targets(each) => Ok(each.places().count()),
                _ => Ok(1),
            },
            State::Idle => Ok(facade::advanced::backend_targets(
                &self.attach,
                self.inner.chosen.context().system(),
            )?
            .len()),
        }
    }

    /// Where row `row` of [`read_each`](Set::read_each) counts: a [`place`] constant and
    /// the thread or CPU id (0 for the calling thread).
    pub(crate) fn place(&self, row: usize) -> CResult<(i32, u32)> {
        let places = self.places()?;
        let Some(at) = places.get(row) else {
            return Err(Failure::new(
                code::INVALID_ARGUMENT,
                format!(
                    "no row {row}: the set counts on {} places now",
                    places.len()
                ),
            ));
        };
        Ok(match *at {
            Place::ThisThread => (place::THIS_THREAD, 0),
            Place::Thread(tid) | Place::Command(tid) => (place::THREAD, tid),
            Place::Cpu(cpu) => (place::CPU, cpu),
            _ => (place::OTHER, 0),
        })
    }

    /// Each place's readings, row by row (targets x events) into `out`; the number of rows.
    pub(crate) fn read_each(&mut self, out: &mut [Reading]) -> CResult<usize> {
        let n = self.len();
        // A set over several places holds each event's terms per place: combined here per
        // row, as the set combines their sums. (Such a set is never published: its counters
        // are its own.)
        let rows: Vec<Vec<Reading>> = match &mut self.state {
            State::Running(counters) | State::Stopped(counters)
                if matches!(counters.group(), AnyGroup::Targets(_)) =>
            {
                let counters = counters_mut(&self.reads, counters)?;
                let each = match counters.group_mut() {
                    AnyGroup::Targets(each) => each.read_each()?,
                    _ => Vec::new(),
                };
                each.iter()
                    .map(|(_, terms)| combined(counters.events(), terms))
                    .collect()
            }
            _ => {
                let mut row = vec![Reading::default(); n];
                self.read(&mut row)?;
                vec![row]
            }
        };
        if out.len() < rows.len() * n {
            return Err(Failure::new(
                code::INVALID_ARGUMENT,
                format!(
                    "the buffer holds {} readings, the set needs {} ({} places x {n} events)",
                    out.len(),
                    rows.len() * n,
                    rows.len()
                ),
            ));
        }
        for (slot, row) in out.chunks_exact_mut(n.max(1)).zip(&rows) {
            slot[..n].copy_from_slice(&row[..n]);
        }
        Ok(rows.len())
    }
}
