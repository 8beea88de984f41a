//! Events opened by name on any [`Target`]: one backend target (this thread, one thread, one
//! CPU) as one set over the backend's own group; several (a process's threads, CPUs) as one
//! set whose every counter is summed over them ([`MultiSet`]), read the same way.

use counterhal_hal::{
    Backend, Capabilities, DeviceKind, EventRequest, EventSet, GeneralizedEvent, OpenOptions,
    ResolvedEvent, Result, Target as BackendTarget,
};

use crate::{AnyGroup, MultiSet, Target};

/// Opens `events` on `target` as one set read through [`AnyGroup`]: over the backend's group
/// itself where `target` is one backend target now (this thread, one thread, one CPU), else
/// over a [`MultiSet`] of each term, summed over the targets, so that every derived event is
/// combined from its terms' sums.
pub(crate) fn open_on<B>(
    backend: &B,
    events: Vec<ResolvedEvent>,
    target: &Target,
    options: &OpenOptions,
) -> Result<EventSet<AnyGroup>>
where
    B: Backend + ?Sized,
    B::Group: Into<AnyGroup>,
{
    let targets = target.targets();
    let process = matches!(target, Target::Process(_) | Target::Processes(_));
    if let ([one], false) = (targets.as_slice(), process) {
        return Ok(EventSet::open(backend, events, one, options)?.map_group(Into::into));
    }
    let terms: Vec<ResolvedEvent> = events
        .iter()
        .flat_map(|event| event.terms.iter())
        .map(|term| ResolvedEvent::single(term.request.clone()))
        .collect();
    let summed = MultiSet::from_targets(&Mapped(backend), &terms, target, &targets, options)?;
    EventSet::over(AnyGroup::Targets(Box::new(summed)), events)
}

/// A backend whose groups come as [`AnyGroup`]s.
struct Mapped<'b, B: ?Sized>(&'b B);

impl<B> Backend for Mapped<'_, B>
where
    B: Backend + ?Sized,
    B::Group: Into<AnyGroup>,
{
    type Group = AnyGroup;

    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn device(&self) -> DeviceKind {
        self.0.device()
    }
    fn capabilities(&self) -> &Capabilities {
        self.0.capabilities()
    }
    fn resolve(&self, event: &str) -> Result<ResolvedEvent> {
        self.0.resolve(event)
    }
    fn open(
        &self,
        events: &[EventRequest],
        target: &BackendTarget,
        options: &OpenOptions,
    ) -> Result<AnyGroup> {
        Ok(self.0.open(events, target, options)?.into())
    }
    fn generalized(&self) -> Vec<GeneralizedEvent> {
        self.0.generalized()
    }
    fn own_events(&self) -> Vec<(String, String)> {
        self.0.own_events()
    }
}
