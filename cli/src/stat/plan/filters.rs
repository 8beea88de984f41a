//! `--filter FILTER`: perf's tracepoint filter, attached to the event given just before it
//! (the last of the `-e` values on the command line before the `--filter`), and set on the
//! event as it opens (`PERF_EVENT_IOC_SET_FILTER`, [`counterhal::PerfAttr::filter`]).

use counterhal::{Error, ErrorKind, OpenOptions};
use counterhal_events::perf::TYPE_TRACEPOINT;
use counterhal_hal::Backend;
use counterhal_hal::BackendTarget;
use counterhal_hal::Encoding;

use super::planned::Planned;
use crate::stat::arguments::StatArgs;

/// perf's words for a filter without a tracepoint before it.
const NOT_AFTER_A_TRACEPOINT: &str = "--filter should follow a -e tracepoint";

/// The filter of each of the first `events` event names (`None`: none), from where each
/// `--filter` stood among the `-e` values; a second filter on one event is joined to the
/// first with `&&`, as perf does.
///
/// # Errors
/// [`counterhal::ErrorKind::InvalidInput`] for a `--filter` before any event.
pub fn of_events(args: &StatArgs, events: usize) -> Result<Vec<Option<String>>, Error> {
    let more = &args.more;
    let mut filters: Vec<Option<String>> = vec![None; events];
    for (at, filter) in more.filters.iter().enumerate() {
        let before = more
            .events_before_filters
            .get(at)
            .copied()
            .unwrap_or(events);
        let Some(slot) = before.checked_sub(1).and_then(|i| filters.get_mut(i)) else {
            return Err(Error::invalid_input(format!(
                "{NOT_AFTER_A_TRACEPOINT}: `--filter {filter}` comes before any event"
            ))
            .with_hint(
                "write it after the event: -e syscalls:sys_enter_write --filter 'fd == 1'",
            ));
        };
        *slot = Some(match slot.take() {
            Some(first) => format!("({first}) && ({filter})"),
            None => filter.clone(),
        });
    }
    Ok(filters)
}

/// Sets each planned event's filter (`filters`, one per event): on every term of a ready
/// event, each of which must be a tracepoint.
///
/// # Errors
/// [`counterhal::ErrorKind::InvalidInput`] naming an event that is not a tracepoint.
pub fn apply(events: &mut [Planned], filters: &[Option<String>]) -> Result<(), Error> {
    for (planned, filter) in events.iter_mut().zip(filters) {
        let Some(filter) = filter else {
            continue;
        };
        let not_a_tracepoint = |name: &str| {
            Error::invalid_input(format!(
                "{NOT_AFTER_A_TRACEPOINT}: `{name}` is not a tracepoint (`--filter {filter}`)"
            ))
            .with_hint("`counterhal list` shows the tracepoints (subsystem:event) here")
        };
        match planned {
            Planned::Ready(event) => {
                for term in &mut event.terms {
                    match &mut term.request.encoding {
                        Encoding::Perf(attr) if attr.type_ == TYPE_TRACEPOINT => {
                            attr.filter = Some(filter.clone());
                        }
                        _ => return Err(not_a_tracepoint(&event.name)),
                    }
                }
            }
            Planned::Tool(tool) => return Err(not_a_tracepoint(tool.name())),
            // Not countable here: its line says why; the filter has nothing to go on.
            Planned::Unsupported { .. } => {}
        }
    }
    Ok(())
}

/// Opens each filtered event once on this thread, so that a filter the kernel refuses (a
/// field the tracepoint lacks, bad syntax) stops the run before the command starts, as perf
/// stops, instead of leaving the event uncounted.
///
/// # Errors
/// The kernel's refusal ([`ErrorKind::InvalidInput`]), naming the event and the filter.
pub fn check<B: Backend>(
    backend: &B,
    events: &[Planned],
    filters: &[Option<String>],
) -> Result<(), Error> {
    for (planned, _) in events.iter().zip(filters).filter(|(_, f)| f.is_some()) {
        let Planned::Ready(event) = planned else {
            continue;
        };
        let requests: Vec<_> = event.terms.iter().map(|t| t.request.clone()).collect();
        match backend.open(
            &requests,
            &BackendTarget::ThisThread,
            &OpenOptions::default(),
        ) {
            Err(error) if error.kind() == ErrorKind::InvalidInput => return Err(error),
            _ => {}
        }
    }
    Ok(())
}
