//! The set that opens and reads named events: [`EventSet`], one reading per name from the
//! native events' readings, and the forms an event is counted in ([`countable_form`]).

use crate::backend::{Backend, Group, OpenOptions, check_buffer};
use crate::domain::Domain;
use crate::encoding::EventRequest;
use crate::error::{Error, ErrorKind, Result};
use crate::reading::Reading;
use crate::resolved::{ResolvedEvent, Sign};
use crate::target::BackendTarget;

/// The form of an event this process can count here ([`countable_form`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Countable {
    /// The event as given, or its user-space-only form (`NAME:u`).
    pub event: ResolvedEvent,
    /// Why the event as given was refused, when the user-space-only form is counted instead.
    pub kernel_refused: Option<Error>,
}

/// The form of `event` this process can count on `backend` for `target`: the event itself, or,
/// where the OS refuses counting the kernel (Linux at `perf_event_paranoid` 2 for an
/// unprivileged user), its user-space-only form, as `perf stat` falls back. Each try opens the
/// event and closes it again.
///
/// # Errors
/// Why it cannot be counted: the user-space-only form's error when that is another cause (no
/// such PMU here), else the event's own.
pub fn countable_form<B: Backend + ?Sized>(
    backend: &B,
    event: &ResolvedEvent,
    target: &BackendTarget,
) -> Result<Countable> {
    let opens = |event: &ResolvedEvent| {
        let requests: Vec<EventRequest> = event.terms.iter().map(|t| t.request.clone()).collect();
        backend
            .open(&requests, target, &OpenOptions::ungrouped())
            .map(drop)
    };
    let refused = match opens(event) {
        Ok(()) => {
            return Ok(Countable {
                event: event.clone(),
                kernel_refused: None,
            });
        }
        Err(e) => e,
    };
    let user = match event.user_space_only() {
        Some(user) if refused.kind() == ErrorKind::PermissionDenied => user,
        _ => return Err(refused),
    };
    match opens(&user) {
        Ok(()) => Ok(Countable {
            event: user,
            kernel_refused: Some(refused),
        }),
        Err(e) if e.kind() != ErrorKind::PermissionDenied => Err(e),
        Err(_) => Err(refused),
    }
}

/// The sentence that says which events count user space only because the OS refused counting
/// the kernel (`refused`, whose hint names the setting first): `counting the kernel is not
/// permitted here (kernel.perf_event_paranoid is 2), so task-clock, page-faults count user
/// space only, as perf stat does`. The one wording of this fallback in every face.
pub fn user_space_note(names: &[String], refused: &Error) -> String {
    // The hint's first clause names the setting (`kernel.perf_event_paranoid is 2`).
    let hint = refused.hint().unwrap_or(refused.message());
    let why = hint.split(';').next().unwrap_or(hint);
    let verb = if names.len() == 1 { "counts" } else { "count" };
    format!(
        "counting the kernel is not permitted here ({why}), so {} {verb} user space only, as \
         perf stat does",
        names.join(", ")
    )
}

/// Opens every term of every event in one call to `backend` on one backend target, as one
/// [`EventSet`]: what a face builds its sets from (the facade's sets open on its own `Target`,
/// which may stand for several backend targets).
///
/// # Errors
/// As [`Backend::open`].
pub fn open_set<B>(
    backend: &B,
    events: Vec<ResolvedEvent>,
    target: &BackendTarget,
    options: &OpenOptions,
) -> Result<EventSet<B::Group>>
where
    B: Backend + ?Sized,
{
    EventSet::over(
        backend.open(&requests_of(&events), target, options)?,
        events,
    )
}

/// Every term's request of `events`, in order: what [`open_set`] opens, compiled once for
/// every backend it is made for.
fn requests_of(events: &[ResolvedEvent]) -> Vec<EventRequest> {
    events
        .iter()
        .flat_map(|event| event.terms.iter().map(|term| term.request.clone()))
        .collect()
}

/// A group of named events, each possibly derived from several native ones: PAPI's event set.
///
/// It is itself a [`Group`] whose readings are one per name. Its [`reset`](Group::reset)
/// starts a new window: the counts and the times enabled and running read from zero after
/// it, on every backend (perf's own reset zeroes the counts alone), so that
/// [`Reading::scaled`] estimates the window since the reset.
#[derive(Debug)]
pub struct EventSet<G> {
    group: G,
    events: Vec<ResolvedEvent>,
    native: Vec<Reading>,
    /// Whether every event is one added native term, so the group's readings are the
    /// events' readings as they are (the read path then neither copies nor combines).
    all_native: bool,
    /// The times each term had at the last reset (empty before one): taken off every read.
    base: Vec<Reading>,
    /// What opening did that the caller should know (see [`EventSet::note`]).
    note: Option<String>,
}

impl<G: Group> EventSet<G> {
    /// The set of `events` over `group`, a group already opened with every term of every
    /// event in order (one reading per term), such as a group that sums each term over
    /// several threads or CPUs.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] when `group` does not hold one counter per term.
    pub fn over(group: G, events: Vec<ResolvedEvent>) -> Result<Self> {
        let terms: usize = events.iter().map(|event| event.terms.len()).sum();
        if group.len() != terms {
            return Err(Error::invalid_input(format!(
                "the group holds {} counters but the events have {terms} terms",
                group.len()
            ))
            .with_hint("open the group with every term of every event, in order"));
        }
        let all_native = events.iter().all(
            |e| matches!(e.terms.as_slice(), [term] if term.sign == Sign::Plus && term.factor == 1),
        );
        Ok(Self {
            group,
            events,
            native: vec![Reading::default(); terms],
            all_native,
            base: Vec::new(),
            note: None,
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

    /// The same set over the group `wrap` makes of this one's (a wrapper or an enum of
    /// group types), with the events and their combination unchanged.
    pub fn map_group<H: Group>(self, wrap: impl FnOnce(G) -> H) -> EventSet<H> {
        EventSet {
            group: wrap(self.group),
            events: self.events,
            native: self.native,
            all_native: self.all_native,
            base: self.base,
            note: self.note,
        }
    }

    /// What opening the set did that the caller should know, in a sentence: where the OS
    /// refuses counting the kernel (Linux at `perf_event_paranoid` 2 for an unprivileged
    /// caller), which events count user space only, as `perf stat` says under its counts.
    /// `None` when the events count as asked.
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// The domain event `index` counts, from its encoding: [`Domain::ALL`] for an event
    /// without a modifier counting what its PMU counts, the levels its modifier or the set's
    /// domain chose otherwise, and user space alone (no [`Domain::KERNEL`]) for one that fell
    /// back because the OS refused the kernel ([`EventSet::note`] says why). `None` past the
    /// last event.
    pub fn counted_domain(&self, index: usize) -> Option<Domain> {
        self.events.get(index).map(ResolvedEvent::domain)
    }

    /// The same set with `note` (see [`EventSet::note`]).
    #[must_use]
    pub fn with_note(mut self, note: Option<String>) -> Self {
        self.note = note;
        self
    }

    /// How many native readings a read takes (one per term of every event): the length of
    /// the `native` scratch [`EventSet::read_shared`] takes.
    pub fn native_len(&self) -> usize {
        self.native.len()
    }

    /// Reads as [`Group::read`] does, through a shared reference: the group is read by
    /// `read` (a read of the group that takes `&G`, such as the Linux backend's
    /// `read_shared`) into `readings` when every event is one native term, else into the
    /// caller's `native` scratch ([`EventSet::native_len`] long), then combined. Nothing is
    /// allocated, on any path, and `read`'s error is returned as it is: several reads may run
    /// at once (threads, a signal handler that interrupted a read).
    ///
    /// # Errors
    /// `read`'s. `readings` shorter than the events or `native` shorter than
    /// [`EventSet::native_len`] is `short`'s, returned without reading.
    pub fn read_shared<E>(
        &self,
        readings: &mut [Reading],
        native: &mut [Reading],
        short: impl FnOnce() -> E,
        read: impl FnOnce(&G, &mut [Reading]) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let (Some(readings), Some(native)) = (
            readings.get_mut(..self.events.len()),
            native.get_mut(..self.native.len()),
        ) else {
            return Err(short());
        };
        // The steps of `Group::read`, written again: one body shared with it through a
        // closure cost that read 30 instructions (the facade's read path, 83 to 113).
        if self.all_native {
            read(&self.group, readings)?;
            if !self.base.is_empty() {
                Self::since_reset(&self.base, readings);
            }
            return Ok(());
        }
        read(&self.group, native)?;
        if !self.base.is_empty() {
            Self::since_reset(&self.base, native);
        }
        let mut next = 0;
        for (event, out) in self.events.iter().zip(readings.iter_mut()) {
            let end = next + event.terms.len();
            *out = event.combine(&native[next..end]);
            next = end;
        }
        Ok(())
    }

    /// Takes the times of the last reset off `readings` (one per term).
    #[cold]
    #[inline(never)]
    fn since_reset(base: &[Reading], readings: &mut [Reading]) {
        for (reading, base) in readings.iter_mut().zip(base) {
            reading.time_enabled = reading.time_enabled.saturating_sub(base.time_enabled);
            reading.time_running = reading.time_running.saturating_sub(base.time_running);
        }
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

    /// Zeroes the counts and starts the times enabled and running from zero (the times the
    /// group has now are taken off every later read).
    fn reset(&mut self) -> Result<()> {
        self.group.reset()?;
        // The base is allocated at the first reset and reused: a reset allocates nothing after.
        if self.base.len() != self.native.len() {
            self.base = vec![Reading::default(); self.native.len()];
        }
        match self.group.read(&mut self.base) {
            Ok(()) => Ok(()),
            // A group with nothing to read (a pinned group in error state) keeps its times.
            Err(e) if e.kind() == ErrorKind::NotCounted => {
                self.base.fill(Reading::default());
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    #[inline(always)]
    fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
        check_buffer("readings", self.events.len(), readings.len())?;
        if self.all_native {
            let readings = &mut readings[..self.events.len()];
            self.group.read(readings)?;
            if !self.base.is_empty() {
                Self::since_reset(&self.base, readings);
            }
            return Ok(());
        }
        self.group.read(&mut self.native)?;
        if !self.base.is_empty() {
            Self::since_reset(&self.base, &mut self.native);
        }
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
    use crate::encoding::{Encoding, PerfAttr};
    use crate::resolved::Term;

    fn term(sign: Sign, name: &str) -> Term {
        Term {
            sign,
            factor: 1,
            request: EventRequest::new(name, Encoding::Perf(PerfAttr::new(1, 0))),
        }
    }

    /// A group of fixed readings, one per counter.
    #[derive(Debug)]
    struct Fixed(Vec<Reading>);

    impl Group for Fixed {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn enable(&mut self) -> Result<()> {
            Ok(())
        }
        fn disable(&mut self) -> Result<()> {
            Ok(())
        }
        fn reset(&mut self) -> Result<()> {
            Ok(())
        }
        fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
            readings[..self.0.len()].copy_from_slice(&self.0);
            Ok(())
        }
    }

    /// A set over a group opened elsewhere combines its terms as one opened by the set does,
    /// and a group with other than one counter per term is refused.
    #[test]
    fn a_set_over_a_group_combines_its_terms() {
        let derived = ResolvedEvent {
            name: "a-b".into(),
            terms: vec![term(Sign::Plus, "a"), term(Sign::Minus, "b")],
            unit: None,
        };
        let plain = ResolvedEvent::single(term(Sign::Plus, "c").request);
        let group = Fixed(vec![
            Reading::new(10, 5, 5),
            Reading::new(4, 5, 5),
            Reading::new(7, 5, 5),
        ]);
        let mut set = EventSet::over(group, vec![derived.clone(), plain]).unwrap();
        let mut readings = [Reading::default(); 2];
        set.read(&mut readings).unwrap();
        assert_eq!(readings[0].value, 6);
        assert_eq!(readings[1].value, 7);
        let short = EventSet::over(Fixed(vec![Reading::default()]), vec![derived]).unwrap_err();
        assert_eq!(short.kind(), ErrorKind::InvalidInput);
        assert!(short.message().contains("2 terms"), "{short}");
    }
}
