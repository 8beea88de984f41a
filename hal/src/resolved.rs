//! Named events that may stand for several native events, and the set that reads them.

use crate::{Backend, EventRequest, Group, OpenOptions, Reading, Result, Target, check_buffer};

/// Whether a term is added or subtracted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sign {
    /// Added.
    Plus,
    /// Subtracted.
    Minus,
}

/// One native event inside a named event.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Term {
    /// Added or subtracted.
    pub sign: Sign,
    /// The event to open.
    pub request: EventRequest,
}

/// What a name resolves to: one native event, or (for derived presets, as in PAPI's
/// `DERIVED_ADD` and `DERIVED_SUB`) a sum or difference of several.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResolvedEvent {
    /// The name as the user gave it.
    pub name: String,
    /// The native events, in order; the first is always added.
    pub terms: Vec<Term>,
}

impl ResolvedEvent {
    /// A name that stands for exactly one event.
    pub fn single(request: EventRequest) -> Self {
        Self {
            name: request.name.clone(),
            terms: vec![Term {
                sign: Sign::Plus,
                request,
            }],
        }
    }

    /// Whether more than one native event stands behind the name.
    pub fn is_derived(&self) -> bool {
        self.terms.len() > 1
    }

    /// Combines the readings of the terms (in term order) into the name's reading: values
    /// added or subtracted (clamped to `0..=u64::MAX`), the longest enabled time and the
    /// shortest running time (the conservative pair for scaling).
    pub fn combine(&self, readings: &[Reading]) -> Reading {
        let mut value: i128 = 0;
        let mut time_enabled = 0;
        let mut time_running = u64::MAX;
        for (term, reading) in self.terms.iter().zip(readings) {
            match term.sign {
                Sign::Plus => value += i128::from(reading.value),
                Sign::Minus => value -= i128::from(reading.value),
            }
            time_enabled = time_enabled.max(reading.time_enabled);
            time_running = time_running.min(reading.time_running);
        }
        if readings.is_empty() || self.terms.is_empty() {
            time_running = 0;
        }
        let value = u64::try_from(value.max(0)).unwrap_or(u64::MAX);
        Reading {
            value,
            time_enabled,
            time_running,
        }
    }
}

/// A group of named events, each possibly derived from several native ones: PAPI's event set.
///
/// It is itself a [`Group`] whose readings are one per name.
#[derive(Debug)]
pub struct EventSet<G> {
    group: G,
    events: Vec<ResolvedEvent>,
    native: Vec<Reading>,
}

impl<G: Group> EventSet<G> {
    /// Opens every term of every event in one call to `backend`.
    ///
    /// # Errors
    /// As [`Backend::open`].
    pub fn open<B>(
        backend: &B,
        events: Vec<ResolvedEvent>,
        target: &Target,
        options: &OpenOptions,
    ) -> Result<Self>
    where
        B: Backend<Group = G> + ?Sized,
    {
        let requests: Vec<EventRequest> = events
            .iter()
            .flat_map(|event| event.terms.iter().map(|term| term.request.clone()))
            .collect();
        let group = backend.open(&requests, target, options)?;
        let native = vec![Reading::default(); requests.len()];
        Ok(Self {
            group,
            events,
            native,
        })
    }

    /// The named events, in order.
    pub fn events(&self) -> &[ResolvedEvent] {
        &self.events
    }

    /// The underlying group of native events.
    pub fn group(&self) -> &G {
        &self.group
    }

    /// The underlying group, mutably.
    pub fn group_mut(&mut self) -> &mut G {
        &mut self.group
    }

    /// The underlying group.
    pub fn into_group(self) -> G {
        self.group
    }
}

impl<G: Group> Group for EventSet<G> {
    fn len(&self) -> usize {
        self.events.len()
    }

    fn enable(&mut self) -> Result<()> {
        self.group.enable()
    }

    fn disable(&mut self) -> Result<()> {
        self.group.disable()
    }

    fn reset(&mut self) -> Result<()> {
        self.group.reset()
    }

    fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
        check_buffer("readings", self.events.len(), readings.len())?;
        self.group.read(&mut self.native)?;
        let mut next = 0;
        for (event, out) in self.events.iter().zip(readings.iter_mut()) {
            let end = next + event.terms.len();
            *out = event.combine(&self.native[next..end]);
            next = end;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Encoding, PerfEncoding};

    fn term(sign: Sign, name: &str) -> Term {
        Term {
            sign,
            request: EventRequest::new(name, Encoding::Perf(PerfEncoding::new(1, 0))),
        }
    }

    #[test]
    fn sums_and_differences() {
        let event = ResolvedEvent {
            name: "PAPI_BR_NTK".into(),
            terms: vec![
                term(Sign::Plus, "a"),
                term(Sign::Plus, "b"),
                term(Sign::Minus, "c"),
            ],
        };
        let readings = [
            Reading::new(100, 10, 10),
            Reading::new(50, 12, 8),
            Reading::new(30, 11, 9),
        ];
        assert_eq!(event.combine(&readings), Reading::new(120, 12, 8));
        assert!(event.is_derived());
    }

    #[test]
    fn difference_never_goes_negative() {
        let event = ResolvedEvent {
            name: "x".into(),
            terms: vec![term(Sign::Plus, "a"), term(Sign::Minus, "b")],
        };
        let readings = [Reading::new(5, 1, 1), Reading::new(9, 1, 1)];
        assert_eq!(event.combine(&readings).value, 0);
        let big = [Reading::new(u64::MAX, 1, 1), Reading::new(0, 1, 1)];
        assert_eq!(event.combine(&big).value, u64::MAX);
    }

    #[test]
    fn single_keeps_name() {
        let single = ResolvedEvent::single(term(Sign::Plus, "cycles").request);
        assert_eq!(single.name, "cycles");
        assert!(!single.is_derived());
        assert_eq!(
            single.combine(&[Reading::new(7, 3, 3)]),
            Reading::new(7, 3, 3)
        );
    }
}
