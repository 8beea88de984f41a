//! The components whose counters this library reads itself, not through the backend's group:
//! `sde` (libsde's counters) and `powercap` (the files of /sys/class/powercap). A set of one
//! of them holds only its events (PAPI 7.0: `PAPI_EINVAL` beside another component's); the
//! set's calls go to the component here.

use crate::library::{Library, PapiSet};
use crate::{powercap, sde};

/// A component whose counters the library reads itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Own {
    /// Software-defined events.
    Sde,
    /// Linux's powercap zones.
    Powercap,
}

impl Own {
    /// The component `set` is tied to, where it is one of these.
    pub fn of(set: &PapiSet) -> Option<Own> {
        if sde::owns(set) {
            Some(Own::Sde)
        } else if powercap::owns(set) {
            Some(Own::Powercap)
        } else {
            None
        }
    }

    /// The component of event `code` and its counter there, where it is one of these.
    pub fn of_event(library: &Library, code: i32) -> Option<(Own, u32)> {
        sde::counter_of(library, code)
            .map(|id| (Own::Sde, id))
            .or_else(|| powercap::event_of(library, code).map(|i| (Own::Powercap, i)))
    }

    /// `PAPI_add_event` of event `code` (counter `id`).
    pub fn add(self, set: &mut PapiSet, code: i32, id: u32) -> Result<i32, i32> {
        match self {
            Own::Sde => sde::add(set, code, id),
            Own::Powercap => powercap::add(set, code, id),
        }
    }

    /// `PAPI_start` of set `handle`.
    pub fn start(self, handle: i32, set: &mut PapiSet) -> Result<i32, i32> {
        match self {
            Own::Sde => sde::start(handle, set),
            Own::Powercap => powercap::start(set),
        }
    }

    /// Each count of `set` handed to `put` with its index.
    pub fn read_each(self, set: &mut PapiSet, put: impl FnMut(usize, i64)) -> Result<i32, i32> {
        match self {
            Own::Sde => sde::read_each(set, put),
            Own::Powercap => powercap::read_each(set, put),
        }
    }

    /// `PAPI_stop` of set `handle`: its counts.
    pub fn stop(self, handle: i32, set: &mut PapiSet) -> Result<Vec<i64>, i32> {
        match self {
            Own::Sde => sde::stop(handle, set),
            Own::Powercap => powercap::stop(set),
        }
    }

    /// `PAPI_reset`.
    pub fn reset(self, set: &mut PapiSet) -> Result<i32, i32> {
        match self {
            Own::Sde => sde::reset(set),
            Own::Powercap => powercap::reset(set),
        }
    }

    /// `PAPI_accum`: the counts handed to `put`, then a reset.
    pub fn accum_each(self, set: &mut PapiSet, put: impl FnMut(usize, i64)) -> Result<i32, i32> {
        self.read_each(set, put)?;
        self.reset(set)
    }
}
