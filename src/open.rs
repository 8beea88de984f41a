//! Events opened by name on any [`Target`]: one backend target (this thread, one thread, one
//! CPU) as one set over the backend's own group; several (a process's threads, CPUs) as one
//! set whose every counter is summed over them ([`MultiSet`]), read the same way. The set's
//! domain goes to the events without one of their own, and where the OS refuses counting the
//! kernel those events count user space only, as `perf stat` falls back, with a note.

use counterhal_hal::{
    Backend, Capabilities, Domain, Encoding, Error, ErrorKind, EventRequest, EventSet, OpenOptions,
    ResolvedEvent, Result, Term, user_space_note,
};

use crate::attach::MultiSet;
use crate::attach::Target;
use crate::group::AnyGroup;
use counterhal_system::System;

/// The events of one list as `perf stat -e` takes them: split at commas, but not inside a PMU event's `/.../` (whose
/// terms are comma-separated: `cpu/event=0x3c,umask=0x1/`) or a group's `{...}`.
pub fn split_event_list(list: &str) -> Vec<&str> {
    let mut events = Vec::new();
    let mut start = 0;
    let mut in_pmu_terms = false;
    let mut group_depth = 0u32;
    for (at, c) in list.char_indices() {
        match c {
            '/' => in_pmu_terms = !in_pmu_terms,
            '{' if !in_pmu_terms => group_depth += 1,
            '}' if !in_pmu_terms => group_depth = group_depth.saturating_sub(1),
            ',' if !in_pmu_terms && group_depth == 0 => {
                events.push(&list[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    events.push(&list[start..]);
    events
}

/// Opens `events` on `target` as one set read through [`AnyGroup`], the set's domain
/// ([`OpenOptions::domain`]) given to each event without one of its own. Where the OS refuses
/// counting the kernel and no domain was asked for, the events without a modifier count user
/// space only (under the names given), as `perf stat` falls back, and the set's
/// [`note`](EventSet::note) and [`counted_domain`](EventSet::counted_domain) say so; with
/// [`OpenOptions::strict_domain`], and for a refusal that falling back does not cure, the
/// refusal is returned as it came.
pub(crate) fn open_on<B>(
    backend: &B,
    system: &System,
    events: Vec<ResolvedEvent>,
    target: &Target,
    options: &OpenOptions,
) -> Result<EventSet<AnyGroup>>
where
    B: Backend + ?Sized,
    AnyGroup: From<B::Group>,
{
    let events = match options.domain {
        Some(domain) => in_domain(backend.capabilities(), events, domain)?,
        None => events,
    };
    let refused = match open_exactly(backend, system, events.clone(), target, options) {
        Err(refused)
            if refused.kind() == ErrorKind::PermissionDenied
                && options.domain.is_none()
                && !options.strict_domain =>
        {
            refused
        }
        opened => return opened,
    };
    let mut fell_back = Vec::new();
    let user: Vec<ResolvedEvent> = events
        .iter()
        .map(|event| match event.user_space_only() {
            Some(user) => {
                fell_back.push(event.name.clone());
                user
            }
            None => event.clone(),
        })
        .collect();
    if fell_back.is_empty() {
        return Err(refused);
    }
    match open_exactly(backend, system, user, target, options) {
        Ok(set) => Ok(set.with_note(Some(user_space_note(&fell_back, &refused)))),
        // Refused for another cause too (no such PMU here): that one is the real blocker.
        Err(e) if e.kind() != ErrorKind::PermissionDenied => Err(e),
        Err(_) => Err(refused),
    }
}

/// `events` as a command's counters take them, decided before the command starts: with the
/// options' domain where one is asked; as they are with [`OpenOptions::strict_domain`] (a
/// refusal is then the open's); else, where this thread may not count the kernel (a probe of
/// each event, as `perf stat` falls back per event), each event refused for that reason in its
/// user-space-only form, with the note that says so.
///
/// # Errors
/// As [`in_domain`].
#[cfg(all(unix, feature = "command"))]
pub(crate) fn countable_here<B: Backend + ?Sized>(
    backend: &B,
    events: Vec<ResolvedEvent>,
    options: &OpenOptions,
) -> Result<(Vec<ResolvedEvent>, Option<String>)> {
    use counterhal_hal::{BackendTarget, Countable, countable_form};
    if let Some(domain) = options.domain {
        return Ok((in_domain(backend.capabilities(), events, domain)?, None));
    }
    if options.strict_domain {
        return Ok((events, None));
    }
    // Where a software clock counting the kernel opens, nothing is refused for that reason.
    let permitted = backend.resolve("task-clock").is_ok_and(|clock| {
        countable_form(backend, &clock, &BackendTarget::ThisThread)
            .is_ok_and(|form| form.kernel_refused.is_none())
    });
    if permitted {
        return Ok((events, None));
    }
    let mut fell_back = Vec::new();
    let mut reason = None;
    let events = events
        .into_iter()
        .map(
            |event| match countable_form(backend, &event, &BackendTarget::ThisThread) {
                Ok(Countable {
                    event: user,
                    kernel_refused: Some(refused),
                }) => {
                    fell_back.push(event.name.clone());
                    reason.get_or_insert(refused);
                    user
                }
                _ => event,
            },
        )
        .collect();
    let note = reason.map(|refused| user_space_note(&fell_back, &refused));
    Ok((events, note))
}

/// `events` with `domain` for each term whose encoding counts the backend's default (a name
/// without a modifier): the privilege levels of `domain` replace the default's, its contexts
/// (host, guest, idle) are kept unless `domain` names some.
///
/// # Errors
/// [`ErrorKind::Unsupported`] for a domain the backend cannot filter; [`ErrorKind::InvalidInput`]
/// for a domain of no privilege level.
fn in_domain(
    capabilities: &Capabilities,
    events: Vec<ResolvedEvent>,
    domain: Domain,
) -> Result<Vec<ResolvedEvent>> {
    let levels = domain.intersection(Domain::LEVELS);
    if levels == Domain::NONE {
        return Err(Error::invalid_input(format!(
            "the domain {domain:?} names no privilege level"
        ))
        .with_hint("ask for user, kernel or hypervisor (Domain::USER, ...)"));
    }
    if !capabilities.domains().contains(domain) {
        return Err(Error::unsupported(format!(
            "this backend cannot count {domain:?} alone (it filters {:?})",
            capabilities.domains()
        ))
        .with_hint("ask for the domains it filters"));
    }
    let default = capabilities.accepts().default_domain;
    let chosen = if domain.intersects(Domain::CONTEXTS) {
        domain
    } else {
        default.with_levels(levels)
    };
    Ok(events
        .into_iter()
        .map(|event| {
            let terms = event
                .terms
                .into_iter()
                .map(|term| {
                    if term.request.encoding.domain() != default {
                        return term;
                    }
                    let encoding = match term.request.encoding {
                        Encoding::Perf(attr) => Encoding::Perf(attr.with_domain(chosen)),
                        Encoding::Evtsel(mut evtsel) => {
                            evtsel.domain = chosen;
                            Encoding::Evtsel(evtsel)
                        }
                        Encoding::P5Cesr(mut cesr) => {
                            cesr.domain = chosen;
                            Encoding::P5Cesr(cesr)
                        }
                        other => other,
                    };
                    Term {
                        request: EventRequest::new(term.request.name, encoding),
                        ..term
                    }
                })
                .collect();
            ResolvedEvent::new(event.name, terms, event.unit)
        })
        .collect())
}

/// Opens `events` as they are on `target`: over the backend's group itself where `target` is
/// one backend target now (this thread, one thread, one CPU), else over a [`MultiSet`] of each
/// term, summed over the targets, so that every derived event is combined from its terms'
/// sums.
fn open_exactly<B>(
    backend: &B,
    system: &System,
    events: Vec<ResolvedEvent>,
    target: &Target,
    options: &OpenOptions,
) -> Result<EventSet<AnyGroup>>
where
    B: Backend + ?Sized,
    AnyGroup: From<B::Group>,
{
    let targets = target.targets_inheriting(options.inherit, system)?;
    let process = matches!(target, Target::Process(_) | Target::Processes(_));
    if let ([one], false) = (targets.as_slice(), process) {
        return Ok(counterhal_hal::open_set(backend, events, one, options)?.map_group(Into::into));
    }
    let terms: Vec<ResolvedEvent> = events
        .iter()
        .flat_map(|event| event.terms.iter())
        .map(|term| ResolvedEvent::single(term.request.clone()))
        .collect();
    let summed =
        MultiSet::from_targets(&Mapped(backend), &terms, target, &targets, options, system)?;
    EventSet::over(AnyGroup::Targets(Box::new(summed)), events)
}

/// A backend whose groups come as [`AnyGroup`]s.
struct Mapped<'b, B: ?Sized>(&'b B);

impl<B> counterhal_hal::OpensThrough for Mapped<'_, B>
where
    B: Backend + ?Sized,
    AnyGroup: From<B::Group>,
{
    type Through = B;
    type Group = AnyGroup;

    fn through(&self) -> &B {
        self.0
    }
}
/// The error of a name given twice to one set.
pub(crate) fn already(name: &str) -> Error {
    Error::invalid_input(format!("`{name}` is in the set already"))
        .with_hint("each event is counted once; read its value as often as needed")
}

/// Refuses `names` when one is given twice, as [`EventSetBuilder::add`](crate::EventSetBuilder::add) refuses it.
pub(crate) fn refuse_duplicates(names: &[&str]) -> Result<()> {
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(already(name));
        }
    }
    Ok(())
}
