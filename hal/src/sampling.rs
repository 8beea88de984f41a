//! Sampling: where the counted events happen, not only how many. A sampler is an event that
//! records a sample every `period` events (or at a frequency) into a ring the backend shares
//! with its kernel; the caller walks the records as typed values. What a backend that cannot
//! sample says: [`Capabilities::sampling`](crate::capabilities::Capabilities::sampling) is `false`,
//! and its sampler constructor fails with
//! [`ErrorKind::Unsupported`](crate::error::ErrorKind::Unsupported).

use crate::encoding::EventRequest;
use crate::error::{Error, Result};
use crate::target::BackendTarget;

/// How often a sampler records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rate {
    /// A sample every this many events (at least 1).
    Period(u64),
    /// About this many samples a second (the kernel adjusts the period; at least 1).
    Frequency(u64),
}

/// What each sample carries. Each field costs ring space; ask for what is used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct SampleFields {
    /// The instruction pointer where the event happened (perf's `PERF_SAMPLE_IP`).
    pub ip: bool,
    /// The process and thread ids (`PERF_SAMPLE_TID`).
    pub tid: bool,
    /// The time, in the kernel's perf clock nanoseconds (`PERF_SAMPLE_TIME`).
    pub time: bool,
    /// The data address, where the event gives one: a page fault's address, a memory
    /// access's (`PERF_SAMPLE_ADDR`).
    pub addr: bool,
    /// The CPU it ran on (`PERF_SAMPLE_CPU`).
    pub cpu: bool,
    /// The period in force, which changes under a frequency (`PERF_SAMPLE_PERIOD`).
    pub period: bool,
    /// The values of the sampler's group, leader first, at each sample (`PERF_SAMPLE_READ`).
    pub group_values: bool,
    /// The call chain, innermost first (`PERF_SAMPLE_CALLCHAIN`).
    pub callchain: bool,
}

impl SampleFields {
    /// The instruction pointer, the thread and the time: what a profile needs.
    pub const fn profile() -> Self {
        Self {
            ip: true,
            tid: true,
            time: true,
            addr: false,
            cpu: false,
            period: false,
            group_values: false,
            callchain: false,
        }
    }

    /// The same fields with the data address too.
    #[must_use]
    pub const fn with_addr(mut self) -> Self {
        self.addr = true;
        self
    }

    /// The same fields with the CPU too.
    #[must_use]
    pub const fn with_cpu(mut self) -> Self {
        self.cpu = true;
        self
    }

    /// The same fields with the period too.
    #[must_use]
    pub const fn with_period(mut self) -> Self {
        self.period = true;
        self
    }

    /// The same fields with the group's values too.
    #[must_use]
    pub const fn with_group_values(mut self) -> Self {
        self.group_values = true;
        self
    }

    /// The same fields with the call chain too.
    #[must_use]
    pub const fn with_callchain(mut self) -> Self {
        self.callchain = true;
        self
    }
}

/// When the sampler's owner is woken (a poll returns, an overflow signal is sent).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Wakeup {
    /// After this many samples (at least 1).
    Samples(u32),
    /// When this many bytes of records wait in the ring (at least 1).
    Bytes(u32),
}

/// How a sampler records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct SampleOptions {
    /// How often.
    pub rate: Rate,
    /// What each sample carries.
    pub fields: SampleFields,
    /// The ring's data pages: a power of two (1, 2, 4, ...). A ring too small for the rate
    /// loses records, which are reported ([`Record::Lost`]), never corrupted.
    pub ring_pages: usize,
    /// When the owner is woken.
    pub wakeup: Wakeup,
    /// Whether the events without a domain of their own are refused where the OS refuses
    /// the backend's default domain to this caller, instead of sampling user space only (as
    /// [`OpenOptions::strict_domain`](crate::OpenOptions::strict_domain)). Off by default,
    /// as in `perf record`.
    pub strict_domain: bool,
}

impl SampleOptions {
    /// A sample every `period` events with `fields`, in a ring of 64 pages, waking after
    /// every sample.
    pub const fn period(period: u64, fields: SampleFields) -> Self {
        Self {
            rate: Rate::Period(period),
            fields,
            ring_pages: 64,
            wakeup: Wakeup::Samples(1),
            strict_domain: false,
        }
    }

    /// About `hz` samples a second with `fields`, in a ring of 64 pages, waking after every
    /// sample.
    pub const fn frequency(hz: u64, fields: SampleFields) -> Self {
        Self {
            rate: Rate::Frequency(hz),
            fields,
            ring_pages: 64,
            wakeup: Wakeup::Samples(1),
            strict_domain: false,
        }
    }

    /// The same options with a ring of `pages` data pages.
    #[must_use]
    pub const fn ring_pages(mut self, pages: usize) -> Self {
        self.ring_pages = pages;
        self
    }

    /// The same options refusing, or not, to sample user space only where the OS refuses the
    /// default domain (see [`SampleOptions::strict_domain`]).
    #[must_use]
    pub const fn strict_domain(mut self, strict: bool) -> Self {
        self.strict_domain = strict;
        self
    }

    /// The same options with `wakeup`.
    #[must_use]
    pub const fn wakeup(mut self, wakeup: Wakeup) -> Self {
        self.wakeup = wakeup;
        self
    }

    /// Checks what no backend could honour: a zero period or frequency, a ring that is not a
    /// power of two pages (or more than 2^20 pages), a zero wakeup.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](crate::error::ErrorKind::InvalidInput) naming the value and what
    /// would be right.
    pub fn check(&self) -> Result<()> {
        match self.rate {
            Rate::Period(0) => {
                return Err(Error::invalid_input("a sample period of 0")
                    .with_hint("a sampler records every N events: N is at least 1"));
            }
            Rate::Frequency(0) => {
                return Err(Error::invalid_input("a sample frequency of 0").with_hint(
                    "a sampler at a frequency records N times a second: N is at least 1",
                ));
            }
            _ => {}
        }
        if !self.ring_pages.is_power_of_two() || self.ring_pages > 1 << 20 {
            return Err(
                Error::invalid_input(format!("a ring of {} pages", self.ring_pages)).with_hint(
                    "the ring's data pages are a power of two, 1 to 1048576 (e.g. 8, 64)",
                ),
            );
        }
        if matches!(self.wakeup, Wakeup::Samples(0) | Wakeup::Bytes(0)) {
            return Err(Error::invalid_input("a wakeup after 0 samples or bytes")
                .with_hint("wake after at least 1 sample or 1 byte"));
        }
        Ok(())
    }
}

/// One sample: the fields asked for ([`SampleFields`]), `None` (or empty) where not asked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sample<'r> {
    /// The instruction pointer.
    pub ip: Option<u64>,
    /// The process id.
    pub pid: Option<u32>,
    /// The thread id.
    pub tid: Option<u32>,
    /// The time (the kernel's perf clock, nanoseconds).
    pub time: Option<u64>,
    /// The data address.
    pub addr: Option<u64>,
    /// The CPU.
    pub cpu: Option<u32>,
    /// The period in force.
    pub period: Option<u64>,
    /// The group's values at the sample, leader first (empty where not asked).
    pub group_values: &'r [u64],
    /// The call chain, innermost first (empty where not asked); the kernel marks where the
    /// chain crosses into user or kernel space with values at or above
    /// `0xffff_ffff_ffff_f000` (`PERF_CONTEXT_*`).
    pub callchain: &'r [u64],
}

/// One record of a sampler's ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Record<'r> {
    /// A sample.
    Sample(Sample<'r>),
    /// The kernel could not write this many records: the ring was full.
    Lost(u64),
    /// The kernel throttled the sampler (too many samples a second) at this time.
    Throttle(u64),
    /// The kernel let the sampler sample again at this time.
    Unthrottle(u64),
    /// A record of a kind this version does not read (its kernel type number).
    Other(u32),
}

/// What one walk over a sampler's ring found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Walked {
    /// Sample records.
    pub samples: u64,
    /// Records the kernel lost (the sum of the lost records' counts).
    pub lost: u64,
    /// Throttle records.
    pub throttled: u64,
    /// Other records.
    pub other: u64,
}

/// What an overflow callback is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Overflow {
    /// The address the thread was interrupted at: where the overflow was noticed, within the
    /// skid of where it happened.
    pub address: u64,
    /// The value registered with the callback.
    pub token: usize,
}

impl Overflow {
    /// An overflow noticed at `address`, for the callback registered with `token`.
    pub const fn new(address: u64, token: usize) -> Self {
        Self { address, token }
    }
}

/// A callback run at each overflow of a sampler, inside a signal handler: it must be
/// async-signal-safe (no allocation, no lock; atomics and memory set aside beforehand).
pub type OverflowCallback = fn(&Overflow);

/// An event that samples: started, stopped, and its ring walked.
pub trait Sampler {
    /// Starts (or resumes) sampling.
    ///
    /// # Errors
    /// The backend's.
    fn enable(&mut self) -> Result<()>;

    /// Stops sampling; the records already written stay in the ring.
    ///
    /// # Errors
    /// The backend's.
    fn disable(&mut self) -> Result<()>;

    /// Hands each record written since the last walk to `each`, oldest first, and frees its
    /// room in the ring for the kernel; what the walk found.
    ///
    /// # Errors
    /// A record the ring holds that cannot be read (a torn or short record:
    /// [`ErrorKind::Other`](crate::error::ErrorKind::Other)); the records before it were handed on.
    fn walk(&mut self, each: &mut dyn FnMut(&Record<'_>)) -> Result<Walked>;

    /// The sampled event's count so far (every event, not only those sampled).
    ///
    /// # Errors
    /// The backend's.
    fn count(&mut self) -> Result<u64>;

    /// How many samples the kernel could not write since the sampler opened (the ring was
    /// full), counted by the event itself; `None` where the backend cannot tell. A lost
    /// record ([`Record::Lost`]) is written only when room frees while the sampler still
    /// samples: this count holds the rest.
    ///
    /// # Errors
    /// The backend's.
    fn lost(&mut self) -> Result<Option<u64>>;

    /// Calls `callback` with `token` at each overflow (each wakeup), inside a handler of a
    /// signal sent to the thread that asked: PAPI's `PAPI_overflow`.
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`](crate::error::ErrorKind::Unsupported) where the backend has no
    /// overflow signals (the default);
    /// [`ErrorKind::LimitReached`](crate::error::ErrorKind::LimitReached) where it holds no more
    /// callbacks.
    fn on_overflow(&mut self, callback: OverflowCallback, token: usize) -> Result<()> {
        let _ = (callback, token);
        Err(Error::unsupported(
            "this backend's samplers have no overflow signal",
        ))
    }

    /// Enables the sampler for `overflows` more overflows, after which it stops itself.
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`](crate::error::ErrorKind::Unsupported) where the backend cannot
    /// (the default); else the backend's.
    fn refresh(&mut self, overflows: u32) -> Result<()> {
        let _ = overflows;
        Err(Error::unsupported(
            "this backend's samplers cannot stop themselves after a number of overflows",
        ))
    }
}

/// A sampler of any backend, boxed (what [`SamplingCapability::open_sampler`] opens).
pub type BoxedSampler = Box<dyn Sampler + Send>;

/// Sampling: what a backend that samples hands out from
/// [`BackendExt::sampling`](crate::BackendExt::sampling).
pub trait SamplingCapability {
    /// Opens `events` as one sampler on `target`, disabled: the first samples as `options`
    /// say, the others are read with each sample.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](crate::error::ErrorKind::InvalidInput) for options no backend
    /// could honour or no event; as [`Backend::open`](crate::Backend::open) for the
    /// events; [`ErrorKind::PermissionDenied`](crate::error::ErrorKind::PermissionDenied) where the
    /// OS refuses what the events count.
    fn open_sampler(
        &self,
        events: &[EventRequest],
        target: &BackendTarget,
        options: &SampleOptions,
    ) -> Result<BoxedSampler>;

    /// The signal the samplers' overflow callbacks come with (a real-time signal on Linux: a
    /// program that blocks signals leaves it unblocked on the sampler's thread); `None` where
    /// they have none.
    fn overflow_signal(&self) -> Option<i32>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_that_no_backend_could_honour_are_refused_by_name() {
        let fields = SampleFields::profile();
        assert!(SampleOptions::period(1, fields).check().is_ok());
        let zero = SampleOptions::period(0, fields).check().unwrap_err();
        assert!(zero.to_string().contains("period of 0"), "{zero}");
        let freq = SampleOptions::frequency(0, fields).check().unwrap_err();
        assert!(freq.to_string().contains("frequency of 0"), "{freq}");
        let ring = SampleOptions::period(1, fields)
            .ring_pages(3)
            .check()
            .unwrap_err();
        assert!(ring.to_string().contains("ring of 3 pages"), "{ring}");
        assert!(
            SampleOptions::period(1, fields)
                .ring_pages(0)
                .check()
                .is_err()
        );
        let wake = SampleOptions::period(1, fields)
            .wakeup(Wakeup::Bytes(0))
            .check()
            .unwrap_err();
        assert!(wake.to_string().contains("wakeup"), "{wake}");
    }
}
