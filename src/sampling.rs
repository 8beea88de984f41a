//! Samplers by name, on whichever backend was chosen: [`Chosen::open_sampler`], through the
//! backend's sampling capability ([`BackendExt::sampling`](counterhal_hal::BackendExt::sampling));
//! a backend without one says so in its capabilities, and its samplers are
//! [`ErrorKind::Unsupported`].

use counterhal_hal::{
    BoxedSampler, Domain, Error, ErrorKind, EventRequest, OverflowCallback, Record, ResolvedEvent,
    Result, SampleOptions, Sampler, Walked,
};

use crate::attach::Target;
use crate::chosen::Chosen;

/// A sampler on the chosen backend: [`Sampler`]'s methods, and overflow callbacks where the
/// backend has them (Linux: a queued real-time signal to the thread that asked).
pub struct AnySampler {
    inner: BoxedSampler,
    /// What each event samples or is read in ([`AnySampler::counted_domain`]).
    domains: Vec<Domain>,
}

impl std::fmt::Debug for AnySampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnySampler")
            .field("domains", &self.domains)
            .finish_non_exhaustive()
    }
}

impl Chosen {
    /// Opens `names` as one sampler on `target`: the first samples as `options` say, the
    /// others are read with each sample (where
    /// [`SampleFields::group_values`](counterhal_hal::SampleFields::group_values) is asked).
    /// It starts disabled.
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`] when the chosen backend cannot sample (its
    /// [`Capabilities::sampling`](crate::advanced::Capabilities::sampling)), or a name stands for
    /// a sum or difference of events (a preset such as `PAPI_L1_TCM`: one event samples);
    /// as [`Backend::resolve`](counterhal_hal::Backend::resolve) for the names; as the
    /// backend's sampler. Where the system refuses counting the kernel (Linux at
    /// `perf_event_paranoid` 2 for an unprivileged user), events with no modifier sample user
    /// space only, as `perf record` falls back ([`AnySampler::counted_domain`] says so); the
    /// refusal is returned where that fails too, and with
    /// [`SampleOptions::strict_domain`].
    pub fn open_sampler(
        &self,
        names: &[&str],
        target: &Target,
        options: &SampleOptions,
    ) -> Result<AnySampler> {
        let backend = self.backend();
        let target = match target.targets(self.context().system())?.as_slice() {
            [one] if !matches!(target, Target::Process(_) | Target::Processes(_)) => one.clone(),
            _ => {
                return Err(Error::unsupported(format!(
                    "a sampler samples one thread or one CPU, not {target:?}"
                ))
                .with_hint("open a sampler per thread (Target::thread) or per CPU (Target::cpu)"));
            }
        };
        let target = &target;
        let Some(sampling) = counterhal_hal::BackendExt::sampling(backend) else {
            return Err(Error::unsupported(format!(
                "the {} backend cannot sample",
                backend.dyn_name()
            ))
            .with_hint("sampling needs a backend that samples (see `counterhal info`)"));
        };
        let mut events = Vec::with_capacity(names.len());
        for name in names {
            let resolved = backend.dyn_resolve(name)?;
            if resolved.terms.len() != 1 {
                return Err(Error::invalid_event(format!(
                    "`{name}` is {} events summed or subtracted: one event samples",
                    resolved.terms.len()
                ))
                .with_hint("sample one of its events by its own name"));
            }
            events.push(resolved);
        }
        let requests = |events: &[ResolvedEvent]| -> Vec<EventRequest> {
            events.iter().map(|e| e.terms[0].request.clone()).collect()
        };
        // Where the system refuses counting the kernel, events with no modifier sample user
        // space only, as perf record falls back at perf_event_paranoid 2.
        let (sampler, events) = match sampling.open_sampler(&requests(&events), target, options) {
            Err(refused)
                if refused.kind() == ErrorKind::PermissionDenied && !options.strict_domain =>
            {
                let user: Option<Vec<ResolvedEvent>> =
                    events.iter().map(ResolvedEvent::user_space_only).collect();
                let user = user.ok_or_else(|| refused.clone())?;
                let sampler = sampling
                    .open_sampler(&requests(&user), target, options)
                    .map_err(|_| refused)?;
                (sampler, user)
            }
            opened => (opened?, events),
        };
        Ok(AnySampler {
            inner: sampler,
            domains: events.iter().map(ResolvedEvent::domain).collect(),
        })
    }
}

impl AnySampler {
    /// Calls `callback` with `token` at each overflow (each wakeup), inside a handler of a
    /// signal sent to the calling thread: PAPI's `PAPI_overflow`.
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`] where the backend has no overflow signals;
    /// [`ErrorKind::LimitReached`] with 64 callbacks in the process already.
    pub fn on_overflow(&mut self, callback: OverflowCallback, token: usize) -> Result<()> {
        self.inner.on_overflow(callback, token)
    }

    /// Enables the sampler for `overflows` more overflows, after which it stops itself.
    ///
    /// # Errors
    /// As the backend's.
    pub fn refresh(&mut self, overflows: u32) -> Result<()> {
        self.inner.refresh(overflows)
    }

    /// The domain event `index` (in the order opened) samples or is read in, as
    /// [`EventSet::counted_domain`](counterhal_hal::EventSet::counted_domain) says it of a
    /// set's: user space alone (no [`Domain::KERNEL`]) for one that fell back because the OS
    /// refused the kernel. `None` past the last event.
    pub fn counted_domain(&self, index: usize) -> Option<Domain> {
        self.domains.get(index).copied()
    }
}

impl Sampler for AnySampler {
    fn enable(&mut self) -> Result<()> {
        self.inner.enable()
    }

    fn disable(&mut self) -> Result<()> {
        self.inner.disable()
    }

    fn walk(&mut self, each: &mut dyn FnMut(&Record<'_>)) -> Result<Walked> {
        self.inner.walk(each)
    }

    fn count(&mut self) -> Result<u64> {
        self.inner.count()
    }

    fn lost(&mut self) -> Result<Option<u64>> {
        self.inner.lost()
    }

    fn on_overflow(&mut self, callback: OverflowCallback, token: usize) -> Result<()> {
        self.inner.on_overflow(callback, token)
    }

    fn refresh(&mut self, overflows: u32) -> Result<()> {
        self.inner.refresh(overflows)
    }
}
