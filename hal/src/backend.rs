//! The traits a backend implements: [`Backend`] opens groups, [`Group`] counts.

use std::fmt;

use crate::{
    BackendKind, Domain, Error, ErrorKind, EventRequest, GeneralizedEvent, Reading, ResolvedEvent,
    Result, Target,
};

/// Whether a backend talks to the real device or to a model of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// The OS interface itself.
    Real,
    /// A model of the device written from its documented behaviour (for testing where the
    /// device is absent). Reports always say so.
    Model,
}

impl DeviceKind {
    /// `real` or `model`.
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Real => "real",
            DeviceKind::Model => "model",
        }
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whose activity a backend's counts cover.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Counts are virtualised per thread or process by the OS (Linux perf).
    PerProcess,
    /// Counts cover everything on a CPU, whatever runs there (pctr, raw MSRs).
    SystemWidePerCpu,
}

/// Which [`Target`]s a backend can measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct TargetSupport {
    /// [`Target::ThisThread`].
    pub this_thread: bool,
    /// [`Target::Process`] without inherit (attach to another process).
    pub attach: bool,
    /// [`Target::Process`] with inherit.
    pub inherit: bool,
    /// [`Target::Cpu`].
    pub cpu: bool,
    /// [`Target::Exec`].
    pub exec: bool,
}

/// What a backend can do on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// General-purpose counters per CPU, when the backend knows (perf schedules them itself).
    pub general_counters: Option<u32>,
    /// Width of the general-purpose counters in bits, when known.
    pub counter_width: Option<u32>,
    /// Fixed-function counters per CPU.
    pub fixed_counters: u32,
    /// Width of the fixed counters in bits, when there are any.
    pub fixed_width: Option<u32>,
    /// The domains it can filter by (a domain outside this set cannot be excluded).
    pub domains: Domain,
    /// Whether it time-shares counters among more events than fit (so readings may be scaled).
    pub multiplexing: bool,
    /// Whose activity the counts cover.
    pub scope: Scope,
    /// Which targets it can measure.
    pub targets: TargetSupport,
    /// Whether reads of the calling thread's counters can bypass the kernel (rdpmc).
    pub self_monitoring_reads: bool,
    /// The generalized events it claims to count on this machine.
    pub generalized: Vec<GeneralizedEvent>,
}

impl Capabilities {
    /// Whether `target` is one this backend can measure.
    pub fn supports(&self, target: &Target) -> bool {
        match target {
            Target::ThisThread => self.targets.this_thread,
            Target::Process { inherit: false, .. } => self.targets.attach,
            Target::Process { inherit: true, .. } => self.targets.inherit,
            Target::Cpu(_) => self.targets.cpu,
            Target::Exec { .. } => self.targets.exec,
        }
    }
}

/// How the events of one [`Backend::open`] call are scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpenOptions {
    /// `true`: one group, scheduled all together and read in one operation (fails when the
    /// events do not fit the counters). `false`: independent events, which a multiplexing
    /// backend time-shares, each with its own times.
    pub grouped: bool,
    /// Ask the backend to keep the group on its counters always (perf `pinned`); a pinned group
    /// that cannot be scheduled reads as an error instead of being multiplexed.
    pub pinned: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self {
            grouped: true,
            pinned: false,
        }
    }
}

/// Counters that count together: enabled, disabled, reset and read as one.
///
/// The required core is five methods; the rest are defaults written once here. Readings come
/// back in the order the events were requested. A group starts disabled (except for
/// [`Target::Exec`], which starts at the exec) and stops counting when dropped.
pub trait Group {
    /// How many readings [`read`](Group::read) fills.
    fn len(&self) -> usize;

    /// Starts (or resumes) counting.
    ///
    /// # Errors
    /// [`ErrorKind::Other`] or a backend-specific kind when the device refuses.
    fn enable(&mut self) -> Result<()>;

    /// Stops counting; values and times are kept.
    ///
    /// # Errors
    /// As [`enable`](Group::enable).
    fn disable(&mut self) -> Result<()>;

    /// Sets every value to zero (times may keep running, as with perf's reset).
    ///
    /// # Errors
    /// As [`enable`](Group::enable).
    fn reset(&mut self) -> Result<()>;

    /// Reads every counter into `readings[..self.len()]`, in request order, in one operation
    /// where the backend can. Allocates nothing.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] when `readings` is shorter than [`len`](Group::len);
    /// [`ErrorKind::NotCounted`] when the backend has no values to give (a pinned perf group in
    /// error state); others as the device reports.
    fn read(&mut self, readings: &mut [Reading]) -> Result<()>;

    /// Whether the group has no events.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads, then writes each reading's [`Reading::scaled`] estimate into `estimates`.
    ///
    /// # Errors
    /// As [`read`](Group::read); [`ErrorKind::InvalidInput`] when `estimates` is too short.
    fn read_scaled(
        &mut self,
        readings: &mut [Reading],
        estimates: &mut [Option<u64>],
    ) -> Result<()> {
        check_buffer("estimates", self.len(), estimates.len())?;
        self.read(readings)?;
        for (estimate, reading) in estimates.iter_mut().zip(readings.iter()) {
            *estimate = reading.scaled();
        }
        Ok(())
    }

    /// Reads into a new vector (convenient; allocates).
    ///
    /// # Errors
    /// As [`read`](Group::read).
    fn read_to_vec(&mut self) -> Result<Vec<Reading>> {
        let mut readings = vec![Reading::default(); self.len()];
        self.read(&mut readings)?;
        Ok(readings)
    }

    /// Disables, then reads: the values at the moment counting stopped (PAPI's stop).
    ///
    /// # Errors
    /// As [`disable`](Group::disable) and [`read`](Group::read).
    fn stop(&mut self, readings: &mut [Reading]) -> Result<()> {
        self.disable()?;
        self.read(readings)
    }

    /// Disables, resets and enables again: counting restarts from zero.
    ///
    /// # Errors
    /// As [`disable`](Group::disable), [`reset`](Group::reset) and [`enable`](Group::enable).
    fn restart(&mut self) -> Result<()> {
        self.disable()?;
        self.reset()?;
        self.enable()
    }
}

impl<G: Group + ?Sized> Group for Box<G> {
    fn len(&self) -> usize {
        (**self).len()
    }
    fn enable(&mut self) -> Result<()> {
        (**self).enable()
    }
    fn disable(&mut self) -> Result<()> {
        (**self).disable()
    }
    fn reset(&mut self) -> Result<()> {
        (**self).reset()
    }
    fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
        (**self).read(readings)
    }
}

/// Returns an [`ErrorKind::InvalidInput`] error when a caller's buffer of `got` entries cannot
/// hold `needed`.
///
/// # Errors
/// [`ErrorKind::InvalidInput`] when `got < needed`.
pub fn check_buffer(what: &str, needed: usize, got: usize) -> Result<()> {
    if got < needed {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("{what} buffer holds {got} entries but the group has {needed} events"),
        )
        .with_hint(format!("pass a slice of at least {needed} entries")));
    }
    Ok(())
}

/// A performance counter backend: turns event names into encodings and opens groups of them.
///
/// Required: [`kind`](Backend::kind), [`device`](Backend::device),
/// [`capabilities`](Backend::capabilities), [`resolve`](Backend::resolve),
/// [`open`](Backend::open). Everything else has a default.
pub trait Backend {
    /// The group this backend opens.
    type Group: Group;

    /// Which backend this is.
    fn kind(&self) -> BackendKind;

    /// Whether it drives the real device or a model.
    fn device(&self) -> DeviceKind;

    /// What it can do here.
    fn capabilities(&self) -> Capabilities;

    /// Turns an event name (generalized, preset, native with modifiers, raw, or a name only
    /// this backend knows) into what this backend opens. A preset may resolve to several
    /// native events combined.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidEvent`] for an unknown name or a bad modifier (the message lists the
    /// nearest names); [`ErrorKind::Unsupported`] for an event this CPU or backend lacks.
    fn resolve(&self, event: &str) -> Result<ResolvedEvent>;

    /// Opens `events` on `target`, disabled.
    ///
    /// # Errors
    /// [`ErrorKind::NoCounterAvailable`] when grouped events do not fit the counters;
    /// [`ErrorKind::Unsupported`] for a target or event the backend cannot count;
    /// [`ErrorKind::PermissionDenied`] and [`ErrorKind::DeviceMissing`] as the OS reports.
    fn open(
        &self,
        events: &[EventRequest],
        target: &Target,
        options: &OpenOptions,
    ) -> Result<Self::Group>;

    /// A short label: `linux`, `pctr (model)`.
    fn label(&self) -> String {
        match self.device() {
            DeviceKind::Real => self.kind().name().to_string(),
            DeviceKind::Model => format!("{} (model)", self.kind().name()),
        }
    }

    /// Resolves every name and opens them as one set whose readings are combined per name
    /// (derived presets summed or subtracted).
    ///
    /// # Errors
    /// As [`resolve`](Backend::resolve) (with the event named) and [`open`](Backend::open).
    fn open_named(
        &self,
        names: &[&str],
        target: &Target,
        options: &OpenOptions,
    ) -> Result<crate::EventSet<Self::Group>> {
        let resolved = names
            .iter()
            .map(|name| self.resolve(name))
            .collect::<Result<Vec<_>>>()?;
        crate::EventSet::open(self, resolved, target, options)
    }
}

/// A [`Group`] behind a pointer, for code that picks a backend at run time.
pub type BoxedGroup = Box<dyn Group>;

/// The object-safe face of [`Backend`], implemented for every backend: lets a program hold
/// `Box<dyn DynBackend>` and choose at run time.
pub trait DynBackend {
    /// See [`Backend::kind`].
    fn kind(&self) -> BackendKind;
    /// See [`Backend::device`].
    fn device(&self) -> DeviceKind;
    /// See [`Backend::capabilities`].
    fn capabilities(&self) -> Capabilities;
    /// See [`Backend::resolve`].
    ///
    /// # Errors
    /// As [`Backend::resolve`].
    fn resolve(&self, event: &str) -> Result<ResolvedEvent>;
    /// See [`Backend::open`]; the group comes boxed.
    ///
    /// # Errors
    /// As [`Backend::open`].
    fn open_boxed(
        &self,
        events: &[EventRequest],
        target: &Target,
        options: &OpenOptions,
    ) -> Result<BoxedGroup>;
    /// See [`Backend::label`].
    fn label(&self) -> String;
}

impl<B> DynBackend for B
where
    B: Backend,
    B::Group: 'static,
{
    fn kind(&self) -> BackendKind {
        Backend::kind(self)
    }
    fn device(&self) -> DeviceKind {
        Backend::device(self)
    }
    fn capabilities(&self) -> Capabilities {
        Backend::capabilities(self)
    }
    fn resolve(&self, event: &str) -> Result<ResolvedEvent> {
        Backend::resolve(self, event)
    }
    fn open_boxed(
        &self,
        events: &[EventRequest],
        target: &Target,
        options: &OpenOptions,
    ) -> Result<BoxedGroup> {
        Ok(Box::new(Backend::open(self, events, target, options)?))
    }
    fn label(&self) -> String {
        Backend::label(self)
    }
}

/// Lets a `Box<dyn DynBackend>` (with any auto traits) be used wherever a [`Backend`] is
/// expected (the conformance suite, [`Backend::open_named`]).
impl<T: DynBackend + ?Sized> Backend for Box<T> {
    type Group = BoxedGroup;

    fn kind(&self) -> BackendKind {
        (**self).kind()
    }
    fn device(&self) -> DeviceKind {
        (**self).device()
    }
    fn capabilities(&self) -> Capabilities {
        (**self).capabilities()
    }
    fn resolve(&self, event: &str) -> Result<ResolvedEvent> {
        (**self).resolve(event)
    }
    fn open(
        &self,
        events: &[EventRequest],
        target: &Target,
        options: &OpenOptions,
    ) -> Result<BoxedGroup> {
        (**self).open_boxed(events, target, options)
    }
    fn label(&self) -> String {
        (**self).label()
    }
}
