//! Register-bit unit masks: the value of an event's extra register composed from grouped unit
//! masks, by libpfm4's rules (`pfm_intel_x86_encode_gen` and `pfm_intel_x86_add_defaults` in
//! `lib/pfmlib_intel_x86.c`). libpfm4's offcore-response events take one unit mask per request,
//! supplier or snoop bit (`OFFCORE_RESPONSE_0:DMND_DATA_RD:L3_MISS_LOCAL`); their bits are ORed
//! into the event's extra register, and a group none of the named masks belongs to gets its
//! default.
//!
//! The rules, as libpfm4 applies them:
//! - several unit masks of one group are ORed, unless one of them is
//!   [`alone_in_group`](crate::CombineRules::alone_in_group) (libpfm4's `NCOMBO`);
//! - each group no named mask belongs to gets its defaults, in group order; none when an
//!   earlier mask [excludes later groups](crate::CombineRules::excludes_later_groups) (`EXCL_GRP_GT`)
//!   and the group is later, when the group's mask
//!   [may leave it empty](crate::CombineRules::group_may_be_empty) (`GRP_DFL_NONE`), or when a named
//!   mask [excludes the other groups](crate::CombineRules::excludes_other_groups) (`EXCL_GRP_BUT_0`)
//!   and the group is neither group 0 nor that mask's; a group with none of these reasons and no
//!   default is an error;
//! - a named mask that excludes later groups refuses every mask of a later group (a default that
//!   does only keeps the later groups' defaults out); a named mask that excludes the other
//!   groups refuses named masks of every group but 0 and its own.

use crate::error::{EventError, EventErrorKind, err};
use crate::model::{NativeEvent, UnitMask};

/// The unit masks that apply and the bits they OR into the extra register.
pub(crate) struct Composed<'e> {
    /// The named masks, then the defaults added.
    pub masks: Vec<&'e UnitMask>,
    /// Their bits, ORed.
    pub bits: u64,
}

fn names(masks: &[&UnitMask]) -> String {
    masks
        .iter()
        .map(|m| m.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The register-bit masks of `event` in `group`, in table order.
fn in_group(event: &NativeEvent, group: u8) -> impl Iterator<Item = &UnitMask> {
    event
        .unit_masks
        .iter()
        .filter(move |m| m.extra_bits.is_some() && m.group == group)
}

/// Composes the extra-register bits of `event` from the register-bit masks `named` (deduplicated,
/// in the order given) and the defaults of the groups they leave out.
pub(crate) fn compose<'e>(
    event: &'e NativeEvent,
    named: &[&'e UnitMask],
) -> Result<Composed<'e>, EventError> {
    let conflict = |text: String| err(EventErrorKind::CombinationNotAllowed, text);
    let groups = event
        .unit_masks
        .iter()
        .filter(|m| m.extra_bits.is_some())
        .map(|m| m.group)
        .max()
        .map_or(0, |g| u16::from(g) + 1);
    for group in 0..groups {
        let group = group as u8;
        let mine: Vec<&UnitMask> = named.iter().copied().filter(|m| m.group == group).collect();
        if mine.len() > 1
            && let Some(alone) = mine.iter().find(|m| m.combine.alone_in_group)
        {
            return Err(conflict(format!(
                "unit mask `{}` of `{}` is not combined with another of its group ({}); name one of them",
                alone.name,
                event.name,
                names(&mine)
            )));
        }
    }
    // The last named mask that excludes later groups, or the other groups, sets the limit; a
    // default that excludes later groups stops the defaults of later groups only.
    let named_limit = named
        .iter()
        .rev()
        .find(|m| m.combine.excludes_later_groups)
        .copied();
    let mut last_group = named_limit;
    let only_with = named
        .iter()
        .rev()
        .find(|m| m.combine.excludes_other_groups)
        .copied();
    let mut masks: Vec<&UnitMask> = named.to_vec();
    for group in 0..groups {
        let group = group as u8;
        if named.iter().any(|m| m.group == group) {
            continue;
        }
        let (mut added, mut skipped) = (false, false);
        for mask in in_group(event, group) {
            if last_group.is_some_and(|l| group > l.group)
                || mask.combine.group_may_be_empty
                || only_with.is_some_and(|o| group != 0 && group != o.group)
            {
                skipped = true;
                continue;
            }
            if !mask.default {
                continue;
            }
            masks.push(mask);
            added = true;
            if mask.combine.excludes_later_groups {
                if let Some(earlier) = last_group {
                    return Err(conflict(format!(
                        "`{}`: the default `{}` and `{}` each exclude the groups after their own; name a unit mask of group {group}",
                        event.name, mask.name, earlier.name
                    )));
                }
                last_group = Some(mask);
            }
        }
        if !added && !skipped {
            let choices: Vec<&UnitMask> = in_group(event, group).collect();
            return Err(err(
                EventErrorKind::UnitMaskRequired,
                format!(
                    "`{}` needs a unit mask of group {group}, which has no default: one of {}",
                    event.name,
                    names(&choices)
                ),
            ));
        }
    }
    if let Some(only) = only_with
        && let Some(other) = named.iter().find(|m| m.group != 0 && m.group != only.group)
    {
        return Err(conflict(format!(
            "unit mask `{}` of `{}` combines only with request unit masks (group 0), not with `{}`",
            only.name, event.name, other.name
        )));
    }
    if let Some(limit) = named_limit
        && let Some(later) = masks.iter().find(|m| m.group > limit.group)
    {
        return Err(conflict(format!(
            "unit mask `{}` of `{}` excludes the groups after its own (group {}), so it cannot be used with `{}` (group {}); name another unit mask of group {} with it",
            limit.name, event.name, limit.group, later.name, later.group, limit.group
        )));
    }
    let bits = masks
        .iter()
        .fold(0, |bits, m| bits | m.extra_bits.unwrap_or(0));
    Ok(Composed { masks, bits })
}
