//! The components whose counters this library reads itself, not through the backend's group:
//! `sde` (libsde's counters) and `powercap` (the files of /sys/class/powercap). A set of one
//! of them holds only its events (PAPI 7.0: `PAPI_EINVAL` beside another component's); the
//! set's calls go to the component here.

use crate::codes::{ECNFLCT, EINVAL, EISRUN, OK};
use crate::library::{Components, DOM_ALL, DOM_USER, GRN_SYS, GRN_THR, Library, PapiSet, RUNNING};
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

    /// The component with index `cidx`, where it is one of these.
    pub fn of_component(cidx: i32) -> Option<Own> {
        match cidx {
            sde::CIDX => Some(Own::Sde),
            powercap::CIDX => Some(Own::Powercap),
            _ => None,
        }
    }

    /// Its component index.
    fn cidx(self) -> i32 {
        match self {
            Own::Sde => sde::CIDX,
            Own::Powercap => powercap::CIDX,
        }
    }

    /// How many events a set of it holds (PAPI 7.0's `SDE_MAX_SIMULTANEOUS_COUNTERS`; every
    /// powercap event).
    fn max_events(self) -> usize {
        match self {
            Own::Sde => sde::MAX_COUNTERS,
            Own::Powercap => usize::MAX,
        }
    }

    /// Ties `set` to it, with its domain and granularity (sde: the user's thread; powercap:
    /// every domain, system wide), where the set is tied to no component.
    fn tie(self, set: &mut PapiSet) {
        if set.component < 0 {
            set.component = self.cidx();
            (set.domain, set.granularity) = match self {
                Own::Sde => (DOM_USER, GRN_THR),
                Own::Powercap => (DOM_ALL, GRN_SYS),
            };
        }
    }

    /// `PAPI_assign_eventset_component(set, its index)`: ties an empty set to it; as PAPI
    /// 7.0, a set tied already is `PAPI_EINVAL`.
    pub fn assign(self, handle: i32) -> i32 {
        crate::library::with_set(handle, |_, set| {
            // PAPI's plain `return`: PAPI_perror's error stays as it was.
            if set.component >= 0 {
                return Ok(EINVAL);
            }
            self.tie(set);
            Ok(OK)
        })
        .unwrap_or_else(|e| e)
    }

    /// The component of event `code` and its counter there, where it is one of these.
    pub fn of_event(library: &Library, code: i32) -> Option<(Own, u32)> {
        sde::counter_of(library, code)
            .map(|id| (Own::Sde, id))
            .or_else(|| powercap::event_of(library, code).map(|i| (Own::Powercap, i)))
    }

    /// `PAPI_add_event` of event `code` (its counter `id`): the set takes the component or
    /// must have it already (`PAPI_EINVAL` beside another component's events, as PAPI 7.0
    /// answers); a running set is `PAPI_EISRUN`; an event already there or past the room
    /// `PAPI_ECNFLCT`.
    pub fn add(self, set: &mut PapiSet, code: i32, id: u32) -> Result<i32, i32> {
        if set.component >= 0 && set.component != self.cidx() {
            return Err(EINVAL);
        }
        if set.state & RUNNING != 0 {
            return Err(EISRUN);
        }
        if set.events.iter().any(|(c, _, _)| *c == code) || set.events.len() >= self.max_events() {
            return Err(ECNFLCT);
        }
        self.tie(set);
        set.events.push((code, String::new(), Default::default()));
        set.own_counters.push(id);
        set.own_values.clear();
        Ok(OK)
    }

    /// `PAPI_start` of set `handle`, with the library's `components`.
    pub fn start(
        self,
        components: &Components,
        handle: i32,
        set: &mut PapiSet,
    ) -> Result<i32, i32> {
        match self {
            Own::Sde => sde::start(components.sde, handle, set),
            Own::Powercap => powercap::start(&components.powercap.events, set),
        }
    }

    /// Each count of `set` handed to `put` with its index.
    pub fn read_each(
        self,
        components: &Components,
        set: &mut PapiSet,
        put: impl FnMut(usize, i64),
    ) -> Result<i32, i32> {
        match self {
            Own::Sde => sde::read_each(components.sde, set, put),
            Own::Powercap => powercap::read_each(&components.powercap.events, set, put),
        }
    }

    /// `PAPI_stop` of set `handle`: its counts.
    pub fn stop(
        self,
        components: &Components,
        handle: i32,
        set: &mut PapiSet,
    ) -> Result<Vec<i64>, i32> {
        match self {
            Own::Sde => sde::stop(components.sde, handle, set),
            Own::Powercap => powercap::stop(&components.powercap.events, set),
        }
    }

    /// `PAPI_reset`.
    pub fn reset(self, components: &Components, set: &mut PapiSet) -> Result<i32, i32> {
        match self {
            Own::Sde => sde::reset(components.sde, set),
            Own::Powercap => powercap::reset(&components.powercap.events, set),
        }
    }

    /// `PAPI_accum`: the counts handed to `put`, then a reset.
    pub fn accum_each(
        self,
        components: &Components,
        set: &mut PapiSet,
        put: impl FnMut(usize, i64),
    ) -> Result<i32, i32> {
        self.read_each(components, set, put)?;
        self.reset(components, set)
    }
}
