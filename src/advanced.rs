//! What a program that counts by name never needs: backends held as trait objects, sets
//! kept per thread or per CPU, and the probe behind [`EventSetBuilder::add`].
//!
//! [`open_default`](crate::open_default) returns a [`Chosen`](crate::Chosen), which opens
//! names on any [`Target`](crate::Target) and sums a process's threads or a list of CPUs for
//! you. Reach here when you must:
//!
//! - hold a backend picked at run time yourself ([`AnyBackend`], e.g. one of
//!   [`registry::REGISTRY`](crate::registry::REGISTRY)'s device models), or write code over
//!   any backend ([`Backend`](crate::Backend) with [`DynBackend`] for trait objects);
//! - read each thread's or each CPU's counts on their own, not summed ([`MultiSet`] and its
//!   [`read_each`](MultiSet::read_each), as `counterhal stat -A` and `--per-thread` print);
//! - program one backend target yourself ([`hal::Target`](counterhal_hal::Target): one thread
//!   id as the kernel takes it, one CPU, a command about to `exec`), with
//!   [`Backend::open`](crate::Backend::open) and [`EventSet::open`](crate::EventSet::open).
//!
//! [`EventSetBuilder::add`]: crate::EventSetBuilder::add

pub use counterhal_hal::DynBackend;
pub use counterhal_hal::Target as BackendTarget;

pub use crate::attach::MultiSet;
pub use crate::set::trial_for_add;

/// A backend chosen at run time, boxed.
pub type AnyBackend = Box<dyn DynBackend + Send + Sync>;
