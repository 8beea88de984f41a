//! Event sets built the way PAPI's are: events added one at a time, each with its own result,
//! removed again, and the set opened once it holds what counts together; and what one name
//! is here, asked without keeping anything open.

use counterhal_hal::{
    Backend, Countable, Encoding, Error, EventRequest, EventSet, OpenOptions, ResolvedEvent,
    Result, Target, countable_form,
};

/// Events gathered one at a time for one target, then opened together (PAPI's
/// `PAPI_create_eventset`, `PAPI_add_event`, `PAPI_remove_event`).
///
/// Each [`add`](EventSetBuilder::add) resolves the name and checks that it opens together
/// with the events added before (a probe open, closed at once): an event that does not exist,
/// that this machine cannot count, or that does not fit beside the others is refused with its
/// reason and leaves the set as it was, so the set holds only what opens.
///
/// ```no_run
/// use counterhal::prelude::*;
///
/// let backend = open_default(None)?;
/// let mut builder = EventSetBuilder::new(&*backend, Target::ThisThread, OpenOptions::default());
/// for name in ["page-faults", "no-such-event", "task-clock"] {
///     if let Err(e) = builder.add(name) {
///         eprintln!("{name} left out: {e}");
///     }
/// }
/// let mut set = builder.open()?;
/// set.enable()?;
/// # Ok::<(), counterhal::Error>(())
/// ```
pub struct EventSetBuilder<'b, B: Backend + ?Sized> {
    backend: &'b B,
    target: Target,
    options: OpenOptions,
    events: Vec<ResolvedEvent>,
}

impl<'b, B: Backend + ?Sized> EventSetBuilder<'b, B> {
    /// An empty set of `backend`'s events for `target`, to be opened with `options`.
    pub fn new(backend: &'b B, target: Target, options: OpenOptions) -> Self {
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
            return Err(
                Error::invalid_input(format!("`{}` is in the set already", event.name))
                    .with_hint("each event is counted once; read its value as often as needed"),
            );
        }
        self.events.push(event);
        if let Err(error) = self.probe() {
            self.events.pop();
            return Err(error);
        }
        Ok(self.events.len() - 1)
    }

    /// Opens the events gathered so far and closes them at once.
    fn probe(&self) -> Result<()> {
        EventSet::open(
            self.backend,
            self.events.clone(),
            &self.target,
            &self.options,
        )
        .map(drop)
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

    /// Opens the set (disabled: [`enable`](counterhal_hal::Group::enable) starts it).
    ///
    /// # Errors
    /// As [`Backend::open`]; an empty set is
    /// [`ErrorKind::InvalidInput`](counterhal_hal::ErrorKind::InvalidInput).
    pub fn open(&self) -> Result<EventSet<B::Group>> {
        if self.events.is_empty() {
            return Err(Error::invalid_input("the event set is empty")
                .with_hint("add events with add() first"));
        }
        EventSet::open(
            self.backend,
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
        Ok(event) => countable_form(backend, event, &Target::ThisThread),
        Err(e) => Err(e.clone()),
    };
    Query {
        name: name.to_string(),
        event,
        countable,
    }
}
