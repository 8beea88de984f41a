//! Samplers by name, on whichever backend was chosen: [`Chosen::open_sampler`]. Linux's
//! perf_event_open samples; a backend that cannot says so in its capabilities, and its
//! samplers are [`ErrorKind::Unsupported`].

use counterhal_hal::{
    Domain, Error, ErrorKind, EventRequest, OverflowCallback, Record, ResolvedEvent, Result,
    SampleOptions, Sampler, Walked,
};

use crate::{Chosen, Target};

/// A sampler on the chosen backend: [`Sampler`]'s methods, and overflow callbacks where the
/// backend has them (Linux: a queued real-time signal to the thread that asked).
#[derive(Debug)]
pub struct AnySampler {
    inner: Inner,
    /// What each event samples or is read in ([`AnySampler::counted_domain`]).
    domains: Vec<Domain>,
}

#[derive(Debug)]
enum Inner {
    #[cfg(all(feature = "linux", target_os = "linux"))]
    Linux(counterhal_linux::LinuxSampler),
    /// No backend of this build samples here (never made: it keeps the type inhabited).
    #[allow(dead_code)]
    None(std::convert::Infallible),
}

impl Chosen {
    /// Opens `names` as one sampler on `target`: the first samples as `options` say, the
    /// others are read with each sample (where
    /// [`SampleFields::group_values`](counterhal_hal::SampleFields::group_values) is asked).
    /// It starts disabled.
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`] when the chosen backend cannot sample (its
    /// [`Capabilities::sampling`](counterhal_hal::Capabilities::sampling)), or a name stands for
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
        let target = match target.targets().as_slice() {
            [one] if !matches!(target, Target::Process(_) | Target::Processes(_)) => one.clone(),
            _ => {
                return Err(Error::unsupported(format!(
                    "a sampler samples one thread or one CPU, not {target:?}"
                ))
                .with_hint("open a sampler per thread (Target::thread) or per CPU (Target::cpu)"));
            }
        };
        let target = &target;
        if !backend.dyn_capabilities().sampling() {
            return Err(Error::unsupported(format!(
                "the {} backend cannot sample",
                backend.dyn_name()
            ))
            .with_hint("sampling needs the linux backend (perf_event_open)"));
        }
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
        #[cfg(all(feature = "linux", target_os = "linux"))]
        if let Some(linux) = backend
            .as_any()
            .downcast_ref::<counterhal_linux::LinuxBackend>()
        {
            // Where the system refuses counting the kernel, events with no modifier sample
            // user space only, as perf record falls back at perf_event_paranoid 2.
            let (sampler, events) = match linux.open_sampler(&requests(&events), target, options) {
                Err(refused)
                    if refused.kind() == ErrorKind::PermissionDenied && !options.strict_domain =>
                {
                    let user: Option<Vec<ResolvedEvent>> =
                        events.iter().map(ResolvedEvent::user_space_only).collect();
                    let user = user.ok_or_else(|| refused.clone())?;
                    let sampler = linux
                        .open_sampler(&requests(&user), target, options)
                        .map_err(|_| refused)?;
                    (sampler, user)
                }
                opened => (opened?, events),
            };
            return Ok(AnySampler {
                inner: Inner::Linux(sampler),
                domains: events.iter().map(ResolvedEvent::domain).collect(),
            });
        }
        let _ = (requests, events, target, options);
        Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "no sampler for the {} backend in this build",
                backend.dyn_name()
            ),
        ))
    }
}

impl AnySampler {
    /// Calls `callback` with `token` at each overflow (each wakeup), inside a handler of a
    /// signal sent to the calling thread: PAPI's `PAPI_overflow`.
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`] where the backend has no overflow signals;
    /// [`ErrorKind::LimitReached`] with 64 callbacks in the process already.
    #[cfg_attr(
        not(all(feature = "linux", target_os = "linux")),
        allow(unused_variables) // no backend of this build samples: nothing to register
    )]
    pub fn on_overflow(&mut self, callback: OverflowCallback, token: usize) -> Result<()> {
        match &mut self.inner {
            #[cfg(all(feature = "linux", target_os = "linux"))]
            Inner::Linux(sampler) => sampler.on_overflow(callback, token),
            Inner::None(never) => match *never {},
        }
    }

    /// Enables the sampler for `overflows` more overflows, after which it stops itself.
    ///
    /// # Errors
    /// As the backend's.
    #[cfg_attr(
        not(all(feature = "linux", target_os = "linux")),
        allow(unused_variables) // no backend of this build samples: nothing to refresh
    )]
    pub fn refresh(&mut self, overflows: u32) -> Result<()> {
        match &mut self.inner {
            #[cfg(all(feature = "linux", target_os = "linux"))]
            Inner::Linux(sampler) => sampler.refresh(overflows),
            Inner::None(never) => match *never {},
        }
    }

    /// The domain event `index` (in the order opened) samples or is read in, as
    /// [`EventSet::counted_domain`](counterhal_hal::EventSet::counted_domain) says it of a
    /// set's: user space alone (no [`Domain::KERNEL`]) for one that fell back because the OS
    /// refused the kernel. `None` past the last event.
    pub fn counted_domain(&self, index: usize) -> Option<Domain> {
        self.domains.get(index).copied()
    }

    fn sampler(&mut self) -> &mut dyn Sampler {
        match &mut self.inner {
            #[cfg(all(feature = "linux", target_os = "linux"))]
            Inner::Linux(sampler) => sampler,
            Inner::None(never) => match *never {},
        }
    }
}

impl Sampler for AnySampler {
    fn enable(&mut self) -> Result<()> {
        self.sampler().enable()
    }

    fn disable(&mut self) -> Result<()> {
        self.sampler().disable()
    }

    fn walk(&mut self, each: &mut dyn FnMut(&Record<'_>)) -> Result<Walked> {
        self.sampler().walk(each)
    }

    fn count(&mut self) -> Result<u64> {
        self.sampler().count()
    }

    fn lost(&mut self) -> Result<Option<u64>> {
        self.sampler().lost()
    }
}
