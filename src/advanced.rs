//! What a program that counts by name rarely needs: each thread's or CPU's counts read on
//! their own, a backend held as a trait object, and the probe behind
//! [`EventSetBuilder::add`](crate::EventSetBuilder::add).
//!
//! [`open_default`](crate::open_default) returns a [`Chosen`](crate::Chosen), which opens
//! names on any [`Target`](crate::Target) and sums a process's threads or a list of CPUs for
//! you. Reach here to read them one by one ([`MultiSet`] and its
//! [`read_each`](MultiSet::read_each), as `counterhal stat -A` and `--per-thread` print, each
//! row labelled with its [`Place`](crate::Place)), or to hold a backend picked at run time
//! ([`AnyBackend`], e.g. one of [`registry::REGISTRY`](crate::registry::REGISTRY)'s device
//! models), or to read a set from a signal handler ([`SharedReads`]: reads that take no lock
//! and allocate nothing, which libpapi's `PAPI_read` and the C API's `counterhal_set_read`
//! read through). Programming one backend target yourself is the `counterhal-hal` crate's,
//! [`counterhal::hal`](crate::hal) (`Backend::open` on a
//! [`BackendTarget`](crate::hal::BackendTarget): one thread, process or CPU, where a
//! [`Target`](crate::Target) may stand for several, [`Target::targets`](crate::Target::targets)).

pub use crate::attach::MultiSet;
#[cfg(unix)]
pub use crate::command::{CountedCommand, Follow};
pub use crate::set::trial_for_add;
pub use crate::shared_read::{READS_AT_ONCE, SharedReadError, SharedReads};
use counterhal_hal::DynBackend;

/// A backend chosen at run time, boxed (its methods are [`DynBackend`]'s).
pub type AnyBackend = Box<dyn DynBackend + Send + Sync>;
