//! Backends chosen at run time: [`DynBackend`], the object-safe face of every [`Backend`], and
//! [`Backend`] for boxed and `dyn` backends, whose groups come as [`BoxedGroup`]s.

use crate::{
    Backend, BackendTarget, Capabilities, CgroupCapability, DeviceKind, EventRequest,
    GeneralizedEvent, Group, OpenOptions, ResolvedEvent, Result, SamplingCapability,
};

/// A [`Group`] behind a pointer, for code that picks a backend at run time. It can move to
/// another thread (every backend's group can), e.g. to be read by a sampling thread, and be
/// shared between threads (a set published for reads from any thread holds its group so).
pub type BoxedGroup = Box<dyn Group + Send + Sync>;

/// The object-safe face of [`Backend`], implemented for every backend, so that a program can
/// hold `Box<dyn DynBackend>` and choose at run time.
///
/// Its methods carry a `dyn_` prefix so that they never compete with [`Backend`]'s: a boxed
/// backend is used through [`Backend`] (implemented for `Box<dyn DynBackend>`), with both
/// traits in scope.
pub trait DynBackend {
    /// See [`Backend::name`].
    fn dyn_name(&self) -> &'static str;
    /// See [`Backend::device`].
    fn dyn_device(&self) -> DeviceKind;
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
    /// See [`Backend::generalized`].
    fn dyn_generalized(&self) -> Vec<GeneralizedEvent>;
    /// See [`Backend::own_events`].
    fn dyn_own_events(&self) -> Vec<(String, String)>;
    /// See [`Backend::system_wide_cpus`].
    fn dyn_system_wide_cpus(&self, request: &EventRequest) -> Option<Vec<u32>>;
    /// See [`Backend::sampling`].
    fn dyn_sampling(&self) -> Option<&dyn SamplingCapability>;
    /// See [`Backend::cgroups`].
    fn dyn_cgroups(&self) -> Option<&dyn CgroupCapability>;
}

impl<B> DynBackend for B
where
    B: Backend + 'static,
    B::Group: Send + Sync + 'static,
{
    fn dyn_name(&self) -> &'static str {
        Backend::name(self)
    }
    fn dyn_device(&self) -> DeviceKind {
        Backend::device(self)
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
    fn dyn_generalized(&self) -> Vec<GeneralizedEvent> {
        Backend::generalized(self)
    }
    fn dyn_own_events(&self) -> Vec<(String, String)> {
        Backend::own_events(self)
    }
    fn dyn_system_wide_cpus(&self, request: &EventRequest) -> Option<Vec<u32>> {
        Backend::system_wide_cpus(self, request)
    }
    fn dyn_sampling(&self) -> Option<&dyn SamplingCapability> {
        Backend::sampling(self)
    }
    fn dyn_cgroups(&self) -> Option<&dyn CgroupCapability> {
        Backend::cgroups(self)
    }
}

/// Lets a `dyn DynBackend` (with any auto traits) be used wherever a [`Backend`] is
/// expected, as a `Box<dyn DynBackend>` can (its groups come boxed).
macro_rules! dyn_backend {
    ($($dyn:ty),*) => {$(
        impl Backend for $dyn {
            type Group = BoxedGroup;

            fn name(&self) -> &'static str {
                self.dyn_name()
            }
            fn device(&self) -> DeviceKind {
                self.dyn_device()
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
            fn generalized(&self) -> Vec<GeneralizedEvent> {
                self.dyn_generalized()
            }
            fn own_events(&self) -> Vec<(String, String)> {
                self.dyn_own_events()
            }
            fn system_wide_cpus(&self, request: &EventRequest) -> Option<Vec<u32>> {
                self.dyn_system_wide_cpus(request)
            }
            fn sampling(&self) -> Option<&dyn SamplingCapability> {
                self.dyn_sampling()
            }
            fn cgroups(&self) -> Option<&dyn CgroupCapability> {
                self.dyn_cgroups()
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

/// Lets a `Box<dyn DynBackend>` (with any auto traits) be used wherever a [`Backend`] is
/// expected (the conformance suite, [`Backend::open_named`]).
impl<T: DynBackend + ?Sized> Backend for Box<T> {
    type Group = BoxedGroup;

    fn name(&self) -> &'static str {
        (**self).dyn_name()
    }
    fn device(&self) -> DeviceKind {
        (**self).dyn_device()
    }
    fn capabilities(&self) -> &Capabilities {
        (**self).dyn_capabilities()
    }
    fn resolve(&self, event: &str) -> Result<ResolvedEvent> {
        (**self).dyn_resolve(event)
    }
    fn open(
        &self,
        events: &[EventRequest],
        target: &BackendTarget,
        options: &OpenOptions,
    ) -> Result<BoxedGroup> {
        (**self).dyn_open(events, target, options)
    }
    fn generalized(&self) -> Vec<GeneralizedEvent> {
        (**self).dyn_generalized()
    }
    fn own_events(&self) -> Vec<(String, String)> {
        (**self).dyn_own_events()
    }
    fn system_wide_cpus(&self, request: &EventRequest) -> Option<Vec<u32>> {
        (**self).dyn_system_wide_cpus(request)
    }
    fn sampling(&self) -> Option<&dyn SamplingCapability> {
        (**self).dyn_sampling()
    }
    fn cgroups(&self) -> Option<&dyn CgroupCapability> {
        (**self).dyn_cgroups()
    }
}
