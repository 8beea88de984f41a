//! Backends chosen at run time: [`DynBackend`], the object-safe face of every [`Backend`], and
//! [`Backend`] for `dyn` backends (and so for boxed ones, [`OpensThrough`]), whose groups
//! come as [`BoxedGroup`]s.

use crate::backend::{Backend, Group, OpenOptions};
use crate::capabilities::Capabilities;
use crate::conveniences::OpensThrough;
use crate::encoding::EventRequest;
use crate::error::Result;
use crate::extensions::Extensions;
use crate::resolved::ResolvedEvent;
use crate::target::BackendTarget;

/// A [`Group`] behind a pointer, for code that picks a backend at run time. It can move to
/// another thread (every backend's group can), e.g. to be read by a sampling thread, and be
/// shared between threads (a set published for reads from any thread holds its group so).
pub type BoxedGroup = Box<dyn Group + Send + Sync>;

/// The object-safe face of [`Backend`], implemented for every backend, so that a program can
/// hold `Box<dyn DynBackend>` and choose at run time.
///
/// Its methods carry a `dyn_` prefix so that they never compete with [`Backend`]'s: a boxed
/// backend is used through [`Backend`] (implemented for `dyn DynBackend` and its boxes), with
/// both traits in scope.
pub trait DynBackend {
    /// See [`Backend::name`].
    fn dyn_name(&self) -> &'static str;
    /// See [`Backend::capabilities`].
    fn dyn_capabilities(&self) -> &Capabilities;
    /// See [`Backend::resolve`].
    ///
    /// # Errors
    /// As [`Backend::resolve`].
    fn dyn_resolve(&self, event: &str) -> Result<ResolvedEvent>;
    /// See [`Backend::open`]; the group comes boxed.
    ///
    /// # Errors
    /// As [`Backend::open`].
    fn dyn_open(
        &self,
        events: &[EventRequest],
        target: &BackendTarget,
        options: &OpenOptions,
    ) -> Result<BoxedGroup>;
    /// See [`Backend::extensions`].
    fn dyn_extensions(&self) -> Extensions<'_>;
}

impl<B> DynBackend for B
where
    B: Backend + 'static,
    B::Group: Send + Sync + 'static,
{
    fn dyn_name(&self) -> &'static str {
        Backend::name(self)
    }
    fn dyn_capabilities(&self) -> &Capabilities {
        Backend::capabilities(self)
    }
    fn dyn_resolve(&self, event: &str) -> Result<ResolvedEvent> {
        Backend::resolve(self, event)
    }
    fn dyn_open(
        &self,
        events: &[EventRequest],
        target: &BackendTarget,
        options: &OpenOptions,
    ) -> Result<BoxedGroup> {
        Ok(Box::new(Backend::open(self, events, target, options)?))
    }
    fn dyn_extensions(&self) -> Extensions<'_> {
        Backend::extensions(self)
    }
}

/// Lets a `dyn DynBackend` (with any auto traits) be used wherever a [`Backend`] is
/// expected (its groups come boxed); a box of one is a [`Backend`] through it.
macro_rules! dyn_backend {
    ($($dyn:ty),*) => {$(
        impl Backend for $dyn {
            type Group = BoxedGroup;

            fn name(&self) -> &'static str {
                self.dyn_name()
            }
            fn capabilities(&self) -> &Capabilities {
                self.dyn_capabilities()
            }
            fn resolve(&self, event: &str) -> Result<ResolvedEvent> {
                self.dyn_resolve(event)
            }
            fn open(
                &self,
                events: &[EventRequest],
                target: &BackendTarget,
                options: &OpenOptions,
            ) -> Result<BoxedGroup> {
                self.dyn_open(events, target, options)
            }
            fn extensions(&self) -> Extensions<'_> {
                self.dyn_extensions()
            }
        }
    )*};
}

dyn_backend!(
    dyn DynBackend + '_,
    dyn DynBackend + Send + '_,
    dyn DynBackend + Sync + '_,
    dyn DynBackend + Send + Sync + '_
);

/// A boxed backend (a `Box<dyn DynBackend>` of any auto traits, or any backend boxed) opens
/// through what it holds.
impl<T: Backend + ?Sized> OpensThrough for Box<T> {
    type Through = T;
    type Group = T::Group;

    fn through(&self) -> &T {
        self
    }
}
