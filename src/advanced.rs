//! What a program that counts by name rarely needs: each thread's or CPU's counts read on
//! their own, a backend held as a trait object, and the probe behind
//! [`EventSetBuilder::add`](crate::EventSetBuilder::add).
//!
//! [`open_default`](crate::open_default) returns a [`Chosen`](crate::Chosen), which opens
//! names on any [`Target`] and sums a process's threads or a list of CPUs for
//! you. Reach here to read them one by one ([`MultiSet`] and its
//! [`read_each`](MultiSet::read_each), as `counterhal stat -A` and `--per-thread` print, each
//! row labelled with its [`Place`](crate::Place)), or to hold a backend picked at run time
//! ([`AnyBackend`], e.g. one of [`registry::REGISTRY`](crate::registry::REGISTRY)'s device
//! models), or to read a set from a signal handler ([`SharedReads`]: reads that take no lock
//! and allocate nothing, which libpapi's `PAPI_read` and the C API's `counterhal_set_read`
//! read through).
//!
//! The backend's vocabulary the face's signatures name is exported here too, so that a
//! program names what it is handed without depending on `counterhal-hal`: a
//! [`BackendTarget`] (one thread, process or CPU, where a [`Target`] may stand for several:
//! [`backend_targets`]), a backend's [`Capabilities`] (what
//! [`Chosen::capabilities`](crate::Chosen::capabilities) returns), and the [`Term`]s and
//! [`Encoding`]s a [`ResolvedEvent`](crate::ResolvedEvent) is made of, and the backend's
//! traits: [`DynBackend`], the trait object an [`AnyBackend`] holds, and [`Backend`], the
//! bound of [`query`](crate::query). Programming a backend target yourself
//! ([`Backend::open`]) is the `counterhal-hal` crate's, a backend author's vocabulary (what
//! [`Backend::extensions`] returns among it) documented there.

pub use crate::attach::MultiSet;
use crate::attach::Target;
pub use crate::chosen::AnyBackend;
#[cfg(all(unix, feature = "command"))]
pub use crate::command::{CountedCommand, Follow};
pub use crate::set::trial_for_add;
pub use crate::shared_read::{READS_AT_ONCE, SharedReadError, SharedReads};
use counterhal_hal::Result;
pub use counterhal_hal::{
    Accepts, Backend, BackendTarget, Capabilities, CounterSet, DeviceKind, DynBackend, Encoding,
    EventRequest, Evtsel, ExcludeBits, ExtraMsr, Family, P5Cesr, PerfAttr, Scope, SharedRead, Sign,
    TargetSupport, Term,
};
use counterhal_system::System;

/// The backend targets `target` stands for now on `system`, one a thread or CPU (a process's
/// threads are read from its `/proc/PID/task`; the process alone, with what it creates, where
/// the OS has no such directory): what [`MultiSet`] opens one set on each of.
///
/// # Errors
/// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) for a list of CPUs that is
/// empty or names CPUs not online (checked before the list is expanded).
pub fn backend_targets(target: &Target, system: &System) -> Result<Vec<BackendTarget>> {
    target.targets(system)
}

/// Whether `backend` (one of [`backend_targets`]`(target)`) may be gone by the time its
/// counters open without that being an error: a thread of a process other than its main
/// thread (threads come and go).
pub fn may_vanish(target: &Target, backend: &BackendTarget) -> bool {
    target.may_vanish(backend)
}
