//! The conveniences every backend gets from its five methods, written once ([`BackendExt`]),
//! and backends that open through another ([`OpensThrough`]), whose [`Backend`] is written
//! once here.

use crate::backend::{Backend, Group, OpenOptions};
use crate::capabilities::{Capabilities, DeviceKind};
use crate::cgroups::CgroupCapability;
use crate::encoding::EventRequest;
use crate::error::Result;
use crate::event_set::{EventSet, open_set};
use crate::extensions::{EventListing, Extensions, OwnEvent, PmuBox};
use crate::generalized::GeneralizedEvent;
use crate::resolved::ResolvedEvent;
use crate::sampling::SamplingCapability;
use crate::shared::SharedCapability;
use crate::target::BackendTarget;

/// What every [`Backend`] can answer from its five methods, written once: import it beside
/// [`Backend`] (`use counterhal_hal::{Backend, BackendExt};`).
pub trait BackendExt: Backend {
    /// Whether it drives the real device or a model
    /// ([`Capabilities::device`](crate::capabilities::Capabilities::device)).
    fn device(&self) -> DeviceKind {
        self.capabilities().device()
    }

    /// A short label: the name, with `(model)` after it for a model (`pctr (model)`).
    fn label(&self) -> String {
        match self.device() {
            DeviceKind::Real => self.name().to_string(),
            DeviceKind::Model => format!("{} (model)", self.name()),
        }
    }

    /// The generalized events and presets that count here: its listing's, else those that
    /// resolve.
    fn generalized(&self) -> Vec<GeneralizedEvent> {
        match self.extensions().listing {
            Some(listing) => listing.generalized(),
            None => GeneralizedEvent::all()
                .filter(|event| self.resolve(&event.name()).is_ok())
                .collect(),
        }
    }

    /// The names only this backend knows, with a few words each; empty where it lists none.
    fn own_events(&self) -> Vec<OwnEvent> {
        self.extensions()
            .listing
            .map(EventListing::own_events)
            .unwrap_or_default()
    }

    /// The CPUs a count of `request` over every CPU opens it on
    /// ([`PmuTopology`](crate::extensions::PmuTopology)); `None`: every CPU.
    fn system_wide_cpus(&self, request: &EventRequest) -> Option<Vec<u32>> {
        self.extensions()
            .topology
            .and_then(|topology| topology.system_wide_cpus(request))
    }

    /// The boxes `event` opens on ([`PmuTopology::boxes`]); `None`: it is one event (no PMU
    /// boxes, or a backend without a topology).
    ///
    /// # Errors
    /// As [`PmuTopology::boxes`].
    ///
    /// [`PmuTopology::boxes`]: crate::extensions::PmuTopology::boxes
    fn pmu_boxes(&self, event: &str) -> Option<Result<Vec<PmuBox>>> {
        self.extensions()
            .topology
            .and_then(|topology| topology.boxes(event))
    }

    /// Sampling, where this backend samples. `None`: it cannot.
    fn sampling(&self) -> Option<&dyn SamplingCapability> {
        self.extensions().sampling
    }

    /// Counting per cgroup, where this backend can. `None`: it cannot.
    fn cgroups(&self) -> Option<&dyn CgroupCapability> {
        self.extensions().cgroups
    }

    /// Counting through leaders shared with other sessions (perf's bperf), where this backend
    /// can. `None`: it cannot.
    fn shared(&self) -> Option<&dyn SharedCapability> {
        self.extensions().shared
    }

    /// Resolves every name and opens them as one set whose readings are combined per name
    /// (derived presets summed or subtracted).
    ///
    /// # Errors
    /// As [`resolve`](Backend::resolve) (with the event named) and [`open`](Backend::open).
    fn open_named(
        &self,
        names: &[&str],
        target: &BackendTarget,
        options: &OpenOptions,
    ) -> Result<EventSet<Self::Group>> {
        let resolved = names
            .iter()
            .map(|name| self.resolve(name))
            .collect::<Result<Vec<_>>>()?;
        open_set(self, resolved, target, options)
    }
}

impl<B: Backend + ?Sized> BackendExt for B {}

/// A backend that resolves and opens through another it holds (a boxed backend, a face's
/// chosen backend), its groups converted: its [`Backend`] is the other's, written once here.
pub trait OpensThrough {
    /// The backend it opens through.
    type Through: Backend + ?Sized;
    /// Its groups, made from the other's.
    type Group: Group + From<<Self::Through as Backend>::Group>;

    /// The backend it opens through.
    fn through(&self) -> &Self::Through;
}

impl<T: OpensThrough + ?Sized> Backend for T {
    type Group = T::Group;

    fn name(&self) -> &'static str {
        self.through().name()
    }
    fn capabilities(&self) -> &Capabilities {
        self.through().capabilities()
    }
    fn resolve(&self, event: &str) -> Result<ResolvedEvent> {
        self.through().resolve(event)
    }
    fn open(
        &self,
        events: &[EventRequest],
        target: &BackendTarget,
        options: &OpenOptions,
    ) -> Result<T::Group> {
        Ok(self.through().open(events, target, options)?.into())
    }
    fn extensions(&self) -> Extensions<'_> {
        self.through().extensions()
    }
}
