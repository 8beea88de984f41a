//! The traits a backend implements: [`Backend`] opens groups, [`Group`] counts.

use crate::capabilities::Capabilities;
use crate::domain::Domain;
use crate::encoding::{Accepts, Encoding, EventRequest};
use crate::error::{Error, ErrorKind, Result};
use crate::extensions::Extensions;
use crate::reading::Reading;
use crate::resolved::ResolvedEvent;
use crate::target::BackendTarget;

/// How the events of one [`Backend::open`] call are scheduled.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpenOptions {
    /// `true`: one group, scheduled all together and read in one operation (fails when the
    /// events do not fit the counters). `false`: independent events, which a multiplexing
    /// backend time-shares, each with its own times.
    pub grouped: bool,
    /// Ask the backend to keep the group on its counters always (perf `pinned`); a pinned group
    /// that cannot be scheduled reads as an error instead of being multiplexed.
    pub pinned: bool,
    /// Ask for the PMU to itself while the group runs (perf `exclusive`): no other group
    /// shares its counters. Backends that own their counters outright (the software
    /// multiplexers) have nothing to share and ignore it.
    pub exclusive: bool,
    /// The length of one turn on the counters where the backend multiplexes in software
    /// (`None`: the backend's default, [`Capabilities::multiplex_slice`]). The kernel's
    /// multiplexing ignores it (Linux: `/proc/sys/kernel/perf_event_mux_interval_ms`).
    pub multiplex_interval: Option<std::time::Duration>,
    /// What the events without a domain of their own count (a name without a modifier such
    /// as `:u`): `None` for the backend's default, where an unprivileged caller then counts
    /// user space only when the OS refuses the kernel (as `perf stat` falls back, and says so
    /// in [`EventSet::note`](crate::EventSet::note) and
    /// [`EventSet::counted_domain`](crate::EventSet::counted_domain)), unless
    /// [`strict_domain`](OpenOptions::strict_domain); a domain given here is counted as
    /// given, or refused. Backends take the domain from each request's encoding: the face
    /// that opens the set applies this one to the requests first.
    pub domain: Option<Domain>,
    /// Whether the events without a domain of their own are refused where the OS refuses
    /// the backend's default domain to this caller (the permission error, its hint naming the
    /// setting), instead of counting user space only. Off by default, as in `perf stat`.
    pub strict_domain: bool,
    /// Whether a thread's counters also count the threads and processes it creates from
    /// now on (perf's `inherit`): for a target of one thread, which the face then opens as
    /// [`BackendTarget::Process`] with `inherit`.
    pub inherit: bool,
}

impl OpenOptions {
    /// One group, not pinned (the default).
    pub const fn grouped() -> Self {
        Self {
            grouped: true,
            pinned: false,
            exclusive: false,
            multiplex_interval: None,
            domain: None,
            strict_domain: false,
            inherit: false,
        }
    }

    /// Independent events, each with its own times (time-shared where the backend
    /// multiplexes).
    pub const fn ungrouped() -> Self {
        Self {
            grouped: false,
            pinned: false,
            exclusive: false,
            multiplex_interval: None,
            domain: None,
            strict_domain: false,
            inherit: false,
        }
    }

    /// The same options with `pinned` set as given.
    #[must_use]
    pub const fn pinned(mut self, pinned: bool) -> Self {
        self.pinned = pinned;
        self
    }

    /// The same options with `exclusive` set as given.
    #[must_use]
    pub const fn exclusive(mut self, exclusive: bool) -> Self {
        self.exclusive = exclusive;
        self
    }

    /// The same options with `grouped` set as given.
    #[must_use]
    pub const fn grouping(mut self, grouped: bool) -> Self {
        self.grouped = grouped;
        self
    }

    /// The same options counting `domain` for the events without a domain of their own
    /// (see [`OpenOptions::domain`]).
    #[must_use]
    pub const fn in_domain(mut self, domain: Domain) -> Self {
        self.domain = Some(domain);
        self
    }

    /// The same options refusing, or not, to count user space only where the OS refuses the
    /// default domain (see [`OpenOptions::strict_domain`]).
    #[must_use]
    pub const fn strict_domain(mut self, strict: bool) -> Self {
        self.strict_domain = strict;
        self
    }

    /// The same options with `inherit` set as given (see [`OpenOptions::inherit`]).
    #[must_use]
    pub const fn inheriting(mut self, inherit: bool) -> Self {
        self.inherit = inherit;
        self
    }

    /// The same options with one software-multiplexing turn lasting `interval` (a zero
    /// interval is taken as the shortest the backend allows).
    #[must_use]
    pub const fn multiplex_interval(mut self, interval: std::time::Duration) -> Self {
        self.multiplex_interval = Some(interval);
        self
    }
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self::grouped()
    }
}

/// Counters that count together: enabled, disabled, reset and read as one.
///
/// The required core is five methods; the rest are defaults written once here. Readings come
/// back in the order the events were requested. A group starts disabled (except for
/// [`BackendTarget::Exec`], which starts at the exec) and stops counting when dropped.
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

    /// Reads through a shared reference, where this group can be read so (several reads at
    /// once, from a signal handler too). `None` (the default): it cannot.
    fn shared_read(&self) -> Option<&dyn SharedRead> {
        None
    }
}

/// Reads of a group through a shared reference that take no lock and allocate nothing, so
/// that several may run at once, on other threads and in a signal handler that interrupted a
/// read: a capability a group hands out from [`Group::shared_read`].
pub trait SharedRead {
    /// The words of scratch [`read_shared`](SharedRead::read_shared) needs.
    fn shared_read_words(&self) -> usize;

    /// Reads every event as [`Group::read`] does into `readings`, with `words`
    /// ([`shared_read_words`](SharedRead::shared_read_words) long) as scratch.
    ///
    /// # Errors
    /// The errno of the read that failed; [`std::io::ErrorKind::InvalidInput`] for buffers
    /// too short; [`std::io::ErrorKind::UnexpectedEof`] for a group that read nothing;
    /// [`std::io::ErrorKind::InvalidData`] for a record that does not decode.
    fn read_shared(&self, readings: &mut [Reading], words: &mut [u64]) -> std::io::Result<()>;
}

/// A group that counts through another group it holds: its [`Group`] is that group's, written
/// once here. The backends that multiplex in software (each a set of the one multiplexer,
/// `counterhal_x86::Multiplexer`, which is a [`Group`]) and a boxed group are such groups;
/// what they add beside it (names, CPUs, their own reports) is theirs.
pub trait CountsThrough {
    /// The group that counts.
    type Through: Group + ?Sized;

    /// The group that counts.
    fn through(&self) -> &Self::Through;

    /// The group that counts, to enable, disable, reset and read.
    fn through_mut(&mut self) -> &mut Self::Through;
}

impl<T: CountsThrough + ?Sized> Group for T {
    fn len(&self) -> usize {
        self.through().len()
    }
    fn enable(&mut self) -> Result<()> {
        self.through_mut().enable()
    }
    fn disable(&mut self) -> Result<()> {
        self.through_mut().disable()
    }
    fn reset(&mut self) -> Result<()> {
        self.through_mut().reset()
    }
    #[inline(always)]
    fn read(&mut self, readings: &mut [Reading]) -> Result<()> {
        self.through_mut().read(readings)
    }
    fn shared_read(&self) -> Option<&dyn SharedRead> {
        self.through().shared_read()
    }
}

impl<G: Group + ?Sized> CountsThrough for Box<G> {
    type Through = G;
    fn through(&self) -> &G {
        self
    }
    fn through_mut(&mut self) -> &mut G {
        self
    }
}

/// Returns an [`ErrorKind::InvalidInput`] error when a caller's buffer of `got` entries cannot
/// hold `needed`.
///
/// # Errors
/// [`ErrorKind::InvalidInput`] when `got < needed`.
#[inline]
pub fn check_buffer(what: &str, needed: usize, got: usize) -> Result<()> {
    if got < needed {
        return Err(short_buffer(what, needed, got));
    }
    Ok(())
}

/// The error of [`check_buffer`], out of the read path.
#[cold]
#[inline(never)]
fn short_buffer(what: &str, needed: usize, got: usize) -> Error {
    Error::new(
        ErrorKind::InvalidInput,
        format!("{what} buffer holds {got} entries but the group has {needed} events"),
    )
    .with_hint(format!("pass a slice of at least {needed} entries"))
}

/// A performance counter backend: turns event names into encodings and opens groups of them.
///
/// Five methods, all required: [`name`](Backend::name),
/// [`capabilities`](Backend::capabilities) (what it is and can do, as data),
/// [`resolve`](Backend::resolve), [`open`](Backend::open) and
/// [`extensions`](Backend::extensions) (what only some backends can do, each `None` where it
/// cannot). The rest ([`BackendExt`](crate::BackendExt): the label, the generalized events,
/// sampling, ...) is written once from these; a backend that opens through another
/// implements [`OpensThrough`](crate::OpensThrough) instead, so that no method is forwarded
/// by hand.
pub trait Backend {
    /// The group this backend opens.
    type Group: Group;

    /// The backend's name, as the command line and reports print it (`linux`; the facade's
    /// registry has them all).
    fn name(&self) -> &'static str;

    /// What it is and can do here (the real device or a model, what it takes, its counters
    /// and targets), computed once when the backend was made.
    fn capabilities(&self) -> &Capabilities;

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
    /// [`ErrorKind::Unsupported`] for a target the backend does not claim or an encoding of a
    /// family it does not take; [`ErrorKind::InvalidInput`] for an empty list;
    /// [`ErrorKind::PermissionDenied`] and [`ErrorKind::DeviceMissing`] as the OS reports.
    fn open(
        &self,
        events: &[EventRequest],
        target: &BackendTarget,
        options: &OpenOptions,
    ) -> Result<Self::Group>;

    /// The capabilities it hands out beyond resolving and opening (sampling, counting per
    /// cgroup, its own event listing, its PMUs' CPUs): [`Extensions::none`] for none.
    fn extensions(&self) -> Extensions<'_>;
}

/// Refuses an encoding whose family the backend does not take, naming the event and the
/// families it does take, and an x86 event select that counts in the host only or in guests
/// only on a backend that cannot filter the host or guests (on Intel, AMD's HostOnly and
/// GuestOnly bits 41 and 40 are the second unit-mask byte): the check every backend's `open`
/// makes first.
///
/// # Errors
/// [`ErrorKind::Unsupported`] when `request`'s family is not in `accepts`, or its event select
/// leaves out a context `accepts` cannot filter.
pub fn check_family(backend: &str, accepts: &Accepts, request: &EventRequest) -> Result<()> {
    let family = request.encoding.family();
    if !accepts.takes(family) {
        return Err(Error::unsupported(format!(
            "`{}` is encoded as a {family}, which the {backend} backend does not program (it takes {})",
            request.name,
            accepts.families_text()
        ))
        .with_hint("resolve the name with this backend's resolve()"));
    }
    if let Encoding::Evtsel(evtsel) = &request.encoding {
        let contexts = [
            (Domain::HOST, Domain::GUEST, "the host only"),
            (Domain::GUEST, Domain::HOST, "guests only"),
        ];
        for (kept, left_out, what) in contexts {
            let only = evtsel.domain.contains(kept) && !evtsel.domain.contains(left_out);
            if only && !accepts.domains.contains(left_out) {
                return Err(Error::unsupported(format!(
                    "{}: counts in {what}, which the {backend} backend cannot filter here: its event selects have no host or guest bits (AMD's HostOnly and GuestOnly)",
                    request.name
                ))
                .with_hint("count in every context: give the event select a domain with both Domain::HOST and Domain::GUEST, or drop `H`/`G`"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::{Evtsel, Family};

    fn request(domain: Domain) -> EventRequest {
        let mut evtsel = Evtsel::new(0xc0, 0);
        evtsel.domain = domain;
        EventRequest::new("INST_RETIRED.ANY_P", Encoding::Evtsel(evtsel))
    }

    #[test]
    fn host_or_guest_only_needs_a_backend_that_filters_them() {
        let x86 = Accepts::new(
            &[Family::Evtsel],
            Domain::USER | Domain::KERNEL,
            Domain::DEFAULT,
        );
        let amd = Accepts::new(&[Family::Evtsel], Domain::DEFAULT, Domain::DEFAULT);
        let host_only = request(Domain::DEFAULT.difference(Domain::GUEST));
        let guests_only = request(Domain::DEFAULT.difference(Domain::HOST));
        for (asked, what) in [(&host_only, "the host only"), (&guests_only, "guests only")] {
            let error = check_family("msr", &x86, asked).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::Unsupported);
            assert!(error.to_string().contains(what), "{error}");
            assert!(check_family("msr", &amd, asked).is_ok());
        }
        // Both contexts, or neither (a domain without contexts sets no bit), pass everywhere.
        assert!(check_family("msr", &x86, &request(Domain::DEFAULT)).is_ok());
        assert!(check_family("msr", &x86, &request(Domain::USER)).is_ok());
        let perf_only = Accepts::new(&[Family::Perf], Domain::ALL, Domain::ALL);
        let error = check_family("linux", &perf_only, &host_only).unwrap_err();
        assert!(error.to_string().contains("does not program"), "{error}");
    }
}
