//! Event sets built the way PAPI's are: events added one at a time, each with its own result,
//! removed again, and the set opened once it holds what counts together; and what one name
//! is here, asked without keeping anything open.

use counterhal_hal::{
    Backend, BackendTarget, Capabilities, Countable, Encoding, Error, EventRequest, EventSet,
    OpenOptions, ResolvedEvent, Result, countable_form,
};

use crate::attach::Target;
use crate::chosen::Chosen;
use crate::group::AnyGroup;

/// perf's `attr.type` of software events, which take no counter and join any group.
const PERF_TYPE_SOFTWARE: u32 = 1;
/// perf's `attr.type` of tracepoints, which take no counter and join any group.
const PERF_TYPE_TRACEPOINT: u32 = 2;

/// Whether `event` takes one of the machine's limited counters (or breakpoint slots), so that
/// whether it opens beside others depends on them: every encoding but perf's software events
/// and tracepoints.
fn takes_a_counter(event: &ResolvedEvent) -> bool {
    event.terms.iter().any(|term| match &term.request.encoding {
        Encoding::Perf(attr) => !matches!(attr.type_, PERF_TYPE_SOFTWARE | PERF_TYPE_TRACEPOINT),
        _ => true,
    })
}

/// The events to open (and close) to learn whether `event` counts beside `added`, the events
/// of a set already known to open together, on a backend with `capabilities` and with
/// `options`: `event` alone, unless it takes a counter and the set's counters must all fit at
/// once (a group, or a backend that cannot time-share them), when the added events that take
/// counters come too. Those are few (no more than fit the counters), so adding N events opens
/// O(N) counters, not the whole set again at each add. Past the backend's
/// [`max_group_events`](Capabilities::max_group_events) in a group, the whole set, so that the
/// backend refuses the add.
pub fn trial_for_add(
    capabilities: &Capabilities,
    options: &OpenOptions,
    added: &[ResolvedEvent],
    event: &ResolvedEvent,
) -> Vec<ResolvedEvent> {
    // Past the backend's group limit only the whole group shows that the event does not fit
    // (the backend refuses such a group before opening anything).
    let past_limit = options.grouped
        && capabilities
            .max_group_events()
            .is_some_and(|max| added.len() + 1 > max as usize);
    if past_limit {
        let mut whole = added.to_vec();
        whole.push(event.clone());
        return whole;
    }
    let must_fit = options.grouped || !capabilities.multiplexing();
    let mut trial: Vec<ResolvedEvent> = if must_fit && takes_a_counter(event) {
        added
            .iter()
            .filter(|e| takes_a_counter(e))
            .cloned()
            .collect()
    } else {
        Vec::new()
    };
    trial.push(event.clone());
    trial
}

/// Events gathered one at a time for one [`Target`], then opened together (PAPI's
/// `PAPI_create_eventset`, `PAPI_add_event`, `PAPI_remove_event`);
/// [`Chosen::builder`](crate::Chosen::builder) makes one.
///
/// Each [`add`](EventSetBuilder::add) resolves the name and checks that it opens beside the
/// events added before (a probe open on the target, closed at once): an event that does not
/// exist, that this machine cannot count, or that does not fit beside the others is refused
/// with its reason and leaves the set as it was, so the set holds only what opens. The probe
/// opens the new event alone, with the added events that compete for the same counters where
/// they must fit together ([`advanced::trial_for_add`](trial_for_add)):
/// software events and tracepoints never compete, so adding N of them opens N counters, and
/// [`open`](EventSetBuilder::open) N more.
///
/// ```no_run
/// use counterhal::prelude::*;
/// use counterhal::OpenOptions;
///
/// let backend = open_default()?;
/// let mut builder = backend.builder(Target::this_thread(), OpenOptions::default());
/// for name in ["page-faults", "no-such-event", "task-clock"] {
///     if let Err(e) = builder.add(name) {
///         eprintln!("{name} left out: {e}");
///     }
/// }
/// let mut set = builder.open()?;
/// set.enable()?;
/// # Ok::<(), counterhal::Error>(())
/// ```
pub struct EventSetBuilder<'b> {
    backend: &'b Chosen,
    target: Target,
    options: OpenOptions,
    events: Vec<ResolvedEvent>,
}

impl<'b> EventSetBuilder<'b> {
    /// An empty set of `backend`'s events for `target`, to be opened with `options`.
    pub(crate) fn new(backend: &'b Chosen, target: Target, options: OpenOptions) -> Self {
        Self {
            backend,
            target,
            options,
            events: Vec::new(),
        }
    }

    /// Adds the event `name`; returns its index in the set.
    ///
    /// # Errors
    /// Why it cannot be added: an unknown name ([`ErrorKind::InvalidEvent`] with the nearest
    /// names), an event this machine cannot count here ([`ErrorKind::Unsupported`],
    /// [`ErrorKind::PermissionDenied`]), one that does not fit beside the events already added
    /// ([`ErrorKind::NoCounterAvailable`]), or a name already in the set
    /// ([`ErrorKind::InvalidInput`]). The set is unchanged.
    ///
    /// [`ErrorKind::InvalidEvent`]: counterhal_hal::ErrorKind::InvalidEvent
    /// [`ErrorKind::Unsupported`]: counterhal_hal::ErrorKind::Unsupported
    /// [`ErrorKind::PermissionDenied`]: counterhal_hal::ErrorKind::PermissionDenied
    /// [`ErrorKind::NoCounterAvailable`]: counterhal_hal::ErrorKind::NoCounterAvailable
    /// [`ErrorKind::InvalidInput`]: counterhal_hal::ErrorKind::InvalidInput
    pub fn add(&mut self, name: &str) -> Result<usize> {
        let event = self.backend.resolve(name)?;
        self.add_resolved(event)
    }

    /// Adds an event already encoded for this backend's hardware, under `name`.
    ///
    /// # Errors
    /// As [`add`](EventSetBuilder::add); an encoding of a family the backend does not program
    /// is [`ErrorKind::Unsupported`](counterhal_hal::ErrorKind::Unsupported).
    pub fn add_encoded(&mut self, name: &str, encoding: Encoding) -> Result<usize> {
        self.add_resolved(ResolvedEvent::single(EventRequest::new(name, encoding)))
    }

    /// Adds each of `names`, with one result per name (PAPI's `PAPI_add_events`, which stops
    /// at the first failure, does less: here every valid name goes in).
    pub fn add_all(&mut self, names: &[&str]) -> Vec<Result<usize>> {
        names.iter().map(|name| self.add(name)).collect()
    }

    fn add_resolved(&mut self, event: ResolvedEvent) -> Result<usize> {
        if self.events.iter().any(|e| e.name == event.name) {
            return Err(crate::open::already(&event.name));
        }
        let trial = trial_for_add(
            self.backend.capabilities(),
            &self.options,
            &self.events,
            &event,
        );
        crate::open::open_on(
            self.backend,
            self.backend.context().system(),
            trial,
            &self.target,
            &self.options,
        )
        .map(drop)?;
        self.events.push(event);
        Ok(self.events.len() - 1)
    }

    /// Removes the event `name`; the events after it move down one index.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](counterhal_hal::ErrorKind::InvalidInput) when the set has
    /// no such event.
    pub fn remove(&mut self, name: &str) -> Result<ResolvedEvent> {
        let at = self
            .events
            .iter()
            .position(|e| e.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = self.events.iter().map(|e| e.name.as_str()).collect();
                Error::invalid_input(format!("`{name}` is not in the set"))
                    .with_hint(format!("the set holds: {}", names.join(", ")))
            })?;
        Ok(self.events.remove(at))
    }

    /// The events added so far, in order.
    pub fn events(&self) -> &[ResolvedEvent] {
        &self.events
    }

    /// Opens the set (disabled: [`enable`](counterhal_hal::Group::enable) starts it), as
    /// [`Chosen::open_named`](crate::Chosen::open_named) opens one.
    ///
    /// # Errors
    /// As [`Backend::open`]; an empty set is
    /// [`ErrorKind::InvalidInput`](counterhal_hal::ErrorKind::InvalidInput).
    pub fn open(&self) -> Result<EventSet<AnyGroup>> {
        if self.events.is_empty() {
            return Err(Error::invalid_input("the event set is empty")
                .with_hint("add events with add() first"));
        }
        crate::open::open_on(
            self.backend,
            self.backend.context().system(),
            self.events.clone(),
            &self.target,
            &self.options,
        )
    }
}

/// What one event name is on a backend (PAPI's `PAPI_query_event` and
/// `PAPI_get_event_info`): whether it exists, how it is encoded, and whether this process can
/// count it for its own thread and why not.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Query {
    /// The name as asked.
    pub name: String,
    /// Its encoding, or why the name means nothing here.
    pub event: Result<ResolvedEvent>,
    /// How it can be counted: as given, or (where the OS refuses counting the kernel) as its
    /// user-space-only form; or why it cannot be counted here.
    pub countable: Result<Countable>,
}

impl Query {
    /// Whether the name resolves to an event.
    pub fn exists(&self) -> bool {
        self.event.is_ok()
    }

    /// Whether this process can count it here.
    pub fn usable(&self) -> bool {
        self.countable.is_ok()
    }
}

/// Asks what `name` is on `backend`. Resolving opens nothing; telling whether it is usable
/// opens it for the calling thread and closes it at once (the only way an OS says so), so no
/// counter stays held.
pub fn query<B: Backend + ?Sized>(backend: &B, name: &str) -> Query {
    let event = backend.resolve(name);
    let countable = match &event {
        Ok(event) => countable_form(backend, event, &BackendTarget::ThisThread),
        Err(e) => Err(e.clone()),
    };
    Query {
        name: name.to_string(),
        event,
        countable,
    }
}

impl Chosen {
    /// An empty set for `target`, to be filled one event at a time
    /// ([`EventSetBuilder::add`]) and opened as [`open_named`](Chosen::open_named) opens:
    /// what `open_named` cannot do, each name tried as it is added, with its own result, so
    /// that a name that cannot join is left out and the rest still open (PAPI's event sets).
    pub fn builder(&self, target: Target, options: OpenOptions) -> EventSetBuilder<'_> {
        EventSetBuilder::new(self, target, options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal_hal::{Accepts, Domain, Family, PerfAttr, Scope};

    fn perf(name: &str, type_: u32) -> ResolvedEvent {
        let attr = PerfAttr::new(type_, 0);
        ResolvedEvent::single(EventRequest::new(name, Encoding::Perf(attr)))
    }

    fn names(events: &[ResolvedEvent]) -> Vec<&str> {
        events.iter().map(|e| e.name.as_str()).collect()
    }

    /// Adding N events opens O(N) counters: a software event or tracepoint is tried alone;
    /// an event that takes a counter is tried with the added ones that take counters, where
    /// they must all fit at once (a group, or no time-sharing), else alone.
    #[test]
    fn an_add_opens_only_what_competes_for_counters() {
        let accepts = Accepts::new(&[Family::Perf], Domain::ALL, Domain::ALL);
        let mut multiplexing = Capabilities::new(accepts.clone(), Scope::PerProcess);
        multiplexing.set_multiplexing(true);
        let fixed = Capabilities::new(accepts, Scope::PerProcess);
        let added = [
            perf("page-faults", 1),
            perf("sched:sched_switch", 2),
            perf("cycles", 0),
            perf("mem:0x1000", 5),
        ];
        let grouped = OpenOptions::grouped();
        let ungrouped = OpenOptions::ungrouped();
        let tracepoint = perf("irq:irq_handler_entry", 2);
        for (capabilities, options) in [(&multiplexing, &grouped), (&fixed, &ungrouped)] {
            let trial = trial_for_add(capabilities, options, &added, &tracepoint);
            assert_eq!(names(&trial), ["irq:irq_handler_entry"]);
            let trial = trial_for_add(capabilities, options, &added, &perf("instructions", 0));
            assert_eq!(names(&trial), ["cycles", "mem:0x1000", "instructions"]);
        }
        // Time-shared and ungrouped, nothing needs to fit beside anything.
        let trial = trial_for_add(&multiplexing, &ungrouped, &added, &perf("instructions", 0));
        assert_eq!(names(&trial), ["instructions"]);
    }
}
