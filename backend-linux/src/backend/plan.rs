//! How a list of encodings is partitioned into kernel groups.

use counterhal_hal::{Error, ErrorKind, PerfAttr, Result};

use crate::attr::group_key;

/// The most events one kernel group holds: the kernel refuses a member whose group's read
/// (`nr`, the two times, then a value and an id per event: 24 + 16 N bytes) would pass 16 KiB
/// (`perf_event_validate_size`), with E2BIG.
pub(crate) const MAX_GROUP_EVENTS: usize = (16 * 1024 - 24) / 16;

/// Each hardware PMU's events make one kernel group, software-context events joining the
/// first; when not `grouped`, one group per event. Returns each group's indices into
/// `encodings`, in order.
///
/// # Errors
/// [`ErrorKind::NoCounterAvailable`] for a group past [`MAX_GROUP_EVENTS`], the most one
/// `read` of a group returns.
pub(crate) fn partition<E: AsRef<PerfAttr>>(
    encodings: &[E],
    grouped: bool,
) -> Result<Vec<Vec<usize>>> {
    let mut plan: Vec<(Option<String>, Vec<usize>)> = Vec::new();
    for (index, encoding) in encodings.iter().enumerate() {
        if !grouped {
            plan.push((None, vec![index]));
            continue;
        }
        let key = group_key(encoding.as_ref());
        let slot = match &key {
            None => plan.first_mut(),
            Some(k) => plan
                .iter_mut()
                .find(|(pk, _)| pk.as_ref() == Some(k) || pk.is_none()),
        };
        match slot {
            Some((pk, members)) => {
                if pk.is_none() {
                    pk.clone_from(&key);
                }
                members.push(index);
            }
            None => plan.push((key, vec![index])),
        }
    }
    if let Some((_, members)) = plan.iter().find(|(_, m)| m.len() > MAX_GROUP_EVENTS) {
        return Err(Error::new(
            ErrorKind::NoCounterAvailable,
            format!(
                "a group of {} events: the kernel reads at most {MAX_GROUP_EVENTS} events \
                 in one group (16 KiB)",
                members.len()
            ),
        )
        .with_hint("open them ungrouped, or in several groups"));
    }
    Ok(plan.into_iter().map(|(_, members)| members).collect())
}
