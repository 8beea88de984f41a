//! # counterhal-hal: the vocabulary of counterhal
//!
//! Traits and types only: no OS code, no `unsafe`.
//!
//! **For users**: a [`Backend`] resolves event names ([`Backend::resolve`]) and opens a
//! [`Group`] of them on a [`BackendTarget`]; the group is enabled, disabled, reset and read into
//! caller memory as [`Reading`]s (value, time enabled, time running, and the
//! [`scaled`](Reading::scaled) estimate they imply). Names are generalized events
//! ([`GeneralizedEvent`]: perf's hardware, software and cache events and PAPI-style
//! [`Preset`]s), native events from the event database, or backend-specific names. Every
//! failure is an [`Error`] with an [`ErrorKind`], the OS error number and a hint.
//!
//! Events are encoded by hardware family ([`Encoding`]: a perf attr, an x86 event select, a
//! P5 CESR field), never by backend: each backend says, as data ([`Capabilities`], whose
//! [`Accepts`] lists the families it programs, the domains it can filter and what it counts
//! by default), what it takes.
//!
//! **For backend authors**: implement the five required methods of [`Group`] and of
//! [`Backend`] (whose [`Backend::extensions`] hands out the optional capabilities:
//! [`SamplingCapability`], [`CgroupCapability`], [`SharedCapability`], [`EventListing`],
//! [`PmuTopology`]);
//! read-and-scale, stop, restart, boxed use ([`DynBackend`]), the conveniences of
//! [`BackendExt`] and derived events ([`EventSet`]) come for free. Map OS errors onto [`ErrorKind`] in one documented `match`;
//! refuse families you do not take with [`check_family`].
//!
//! ```
//! use counterhal_hal::{GeneralizedEvent, Reading};
//!
//! let reading = Reading::new(1_000, 2_000_000, 1_000_000);
//! assert_eq!(reading.scaled(), Some(2_000));
//! assert_eq!(reading.fraction_running(), Some(0.5));
//! assert_eq!(GeneralizedEvent::from_name("L1-dcache-load-misses").unwrap().name(),
//!            "L1-dcache-load-misses");
//! ```
#![forbid(unsafe_code)]

mod backend;
mod capabilities;
mod cgroups;
mod conveniences;
mod cpus;
mod domain;
mod dynamic;
mod encoding;
mod error;
mod event_set;
mod extensions;
mod generalized;
mod reading;
mod registration;
mod resolved;
mod sampling;
mod shared;
mod target;

pub use backend::{
    Backend, CountsThrough, Group, OpenOptions, SharedRead, check_buffer, check_family,
};
pub use capabilities::{Capabilities, DeviceKind, Scope, TargetSupport};
pub use cgroups::{
    BoxedCgroupCounter, CgroupCapability, CgroupCounter, CgroupCounterOptions, CgroupCounts,
    CgroupMode, CgroupModeChoice, EventLeftOut, ProgramSkips,
};
pub use conveniences::{BackendExt, OpensThrough};
pub use cpus::CpuList;
pub use domain::Domain;
pub use dynamic::{BoxedGroup, DynBackend};
pub use encoding::{
    Accepts, CounterSet, Encoding, EventRequest, Evtsel, ExcludeBits, ExtraMsr, Family, P5Cesr,
    PerfAttr,
};
pub use error::{Error, ErrorKind, Result};
pub use event_set::{Countable, EventSet, countable_form, open_set, user_space_note};
pub use extensions::{EventListing, Extensions, OwnEvent, PmuBox, PmuEvent, PmuTopology};
pub use generalized::{
    CacheEvent, CacheLevel, CacheOp, CacheResult, GeneralizedEvent, HardwareEvent, Preset,
    SoftwareEvent,
};
pub use reading::Reading;
pub use registration::{BoxedBackend, Given, Registration, left_out, left_out_model};
pub use resolved::{ResolvedEvent, Sign, Term, Unit, sum_readings};
pub use sampling::{
    BoxedSampler, Overflow, OverflowCallback, Rate, Record, Sample, SampleFields, SampleOptions,
    Sampler, SamplingCapability, Wakeup, Walked,
};
pub use shared::{BoxedSharedCounter, SharedCapability, SharedCounter, SharedScope};
pub use target::BackendTarget;
