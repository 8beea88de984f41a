//! The events of the plan resolved on the backend: each name to what it counts (an event
//! ready to open, one that cannot count here, or one of perf's tool events), shown as a metric
//! table names it, and, where the OS refuses counting the kernel, counted in user space as
//! perf falls back.

use counterhal::ErrorKind;
use counterhal_hal::{
    Backend, BackendTarget, Countable, ResolvedEvent, countable_form, user_space_note,
};

use super::planned::{Planned, PlannedEvent};
use super::tool::Tool;
use crate::error::CliError;

/// What is said under an event refused as bad input.
pub const EVENT_USAGE: &str = "-e EVENT: see `counterhal list` for the events available here";

/// Resolves every name (perf's tool events, `duration_time`, `user_time` and `system_time`,
/// are planned as such), or takes the event its PMU box already resolved to
/// ([`Boxes::to_plan`](super::boxes::Boxes::to_plan), resolved once); unknown names are
/// errors (exit 2), names that are valid but not countable here are planned as unsupported.
///
/// # Errors
/// [`ErrorKind::InvalidEvent`] for a name no database or backend knows, as bad input.
pub fn events<'a, B: Backend>(
    backend: &B,
    events: impl IntoIterator<Item = (&'a str, Option<&'a ResolvedEvent>)>,
) -> Result<Vec<Planned>, CliError> {
    events
        .into_iter()
        .map(|(name, resolved)| {
            if let Some(event) = resolved {
                return Ok(Planned::Ready(event.clone()));
            }
            if let Some(tool) = Tool::named(name) {
                return Ok(Planned::Tool(tool));
            }
            match backend.resolve(name) {
                Ok(event) => Ok(Planned::Ready(event)),
                Err(e) if e.kind() == ErrorKind::InvalidEvent => {
                    Err(CliError::usage(e, EVENT_USAGE))
                }
                Err(error) => Ok(Planned::Unsupported {
                    name: name.to_string(),
                    error,
                }),
            }
        })
        .collect()
}

/// Gives each planned event named as the first of a pair of `shown_as` the second name (a
/// metric table's raw event, `r100001ea0`, its name there), as perf prints a table's events.
pub fn rename(events: &mut [Planned], shown_as: &[(String, String)]) {
    for planned in events.iter_mut() {
        let name = match planned {
            Planned::Ready(event) => &mut event.name,
            Planned::Unsupported { name, .. } => name,
            Planned::Tool(_) => continue,
        };
        if let Some((_, shown)) = shown_as.iter().find(|(raw, _)| raw == name) {
            *name = shown.clone();
        }
    }
}

/// perf's fallback where the OS refuses counting the kernel (Linux at `perf_event_paranoid`
/// 2 for an unprivileged user): each ready event with no modifier that is refused for that
/// reason but can count user space only is replaced by its user-space-only form, named as perf
/// prints it (`task-clock:u`). Returns the note that
/// says so once under the results, naming the events and the reason.
///
/// Where this process may count the kernel (a software clock counting it opens), no event is
/// refused for that reason and nothing is tried per event: each event opens once, when it is
/// counted (as perf opens each once and falls back only when an open is refused).
pub fn fall_back_to_user_space<B: Backend>(
    backend: &B,
    events: &mut [PlannedEvent],
) -> Option<String> {
    if kernel_counting_permitted(backend) {
        return None;
    }
    let mut fell_back = Vec::new();
    let mut reason = None;
    for planned in events.iter_mut().map(|event| &mut event.what) {
        let Planned::Ready(event) = planned else {
            continue;
        };
        match countable_form(backend, event, &BackendTarget::ThisThread) {
            Ok(Countable {
                event: mut user,
                kernel_refused: Some(refused),
            }) => {
                // perf names what it counts: `task-clock:u`.
                user.name = user.user_space_name();
                fell_back.push(user.name.clone());
                reason.get_or_insert(refused);
                *planned = Planned::Ready(user);
            }
            // Refused for another cause too (no such PMU here): that one is the real blocker.
            Err(error)
                if error.kind() != ErrorKind::PermissionDenied
                    && event.user_space_only().is_some() =>
            {
                let name = event.name.clone();
                *planned = Planned::Unsupported { name, error };
            }
            _ => {}
        }
    }
    let reason = reason?;
    Some(user_space_note(&fell_back, &reason))
}

/// Whether this process may count the kernel here: `task-clock`, counting it, opens on this
/// thread (one open). `false` where the backend has no such clock or refuses it.
fn kernel_counting_permitted<B: Backend>(backend: &B) -> bool {
    backend.resolve("task-clock").is_ok_and(|clock| {
        matches!(
            countable_form(backend, &clock, &BackendTarget::ThisThread),
            Ok(Countable {
                kernel_refused: None,
                ..
            })
        )
    })
}
