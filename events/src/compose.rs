//! Register-bit unit masks: the value of an event's extra register composed from grouped unit
//! masks, by libpfm4's rules (`pfm_intel_x86_encode_gen` and `pfm_intel_x86_add_defaults` in
//! `lib/pfmlib_intel_x86.c`). libpfm4's offcore-response events take one unit mask per request,
//! supplier or snoop bit (`OFFCORE_RESPONSE_0:DMND_DATA_RD:L3_MISS_LOCAL`); their bits are ORed
//! into the event's extra register, and a group none of the named masks belongs to gets its
//! default.
//!
//! The rules, as libpfm4 applies them:
//! - several unit masks of one group are ORed, unless one of them is
//!   [`alone_in_group`](crate::model::CombineRules::alone_in_group) (libpfm4's `NCOMBO`);
//! - each group no named mask belongs to gets its defaults, in group order; none when an
//!   earlier mask [excludes later groups](crate::model::CombineRules::excludes_later_groups)
//!   (`EXCL_GRP_GT`) and the group is later, when the group's mask [may leave it
//!   empty](crate::model::CombineRules::group_may_be_empty) (`GRP_DFL_NONE`), or when a named mask
//!   [excludes the other groups](crate::model::CombineRules::excludes_other_groups)
//!   (`EXCL_GRP_BUT_0`) and the group is neither group 0 nor that mask's; a group with none of
//!   these reasons and no default is an error;
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

#[cfg(test)]
mod tests {
    use counterhal_hal::{CounterSet, ExtraMsr};

    use super::*;
    use crate::model::{CombineRules, EventFlags, UnitMaskClass};

    /// A register-bit mask: name, group, bits, default, rules.
    fn mask(name: &str, group: u8, bits: u64, default: bool, combine: CombineRules) -> UnitMask {
        UnitMask {
            name: name.to_string(),
            code: 0x01,
            description: String::new(),
            default,
            cmask: 0,
            edge: false,
            invert: false,
            fixed: None,
            event_code: None,
            counters: None,
            group,
            class: UnitMaskClass::Plain,
            extra: None,
            precise: false,
            deprecated: false,
            any_thread: false,
            umask2: 0,
            extra_bits: Some(bits),
            combine,
            same_as: Vec::new(),
        }
    }

    const ALONE: CombineRules = CombineRules {
        alone_in_group: true,
        excludes_later_groups: false,
        excludes_other_groups: false,
        group_may_be_empty: false,
    };
    const PLAIN: CombineRules = CombineRules {
        alone_in_group: false,
        excludes_later_groups: false,
        excludes_other_groups: false,
        group_may_be_empty: false,
    };

    /// Sandy Bridge's offcore response as libpfm4 groups it: requests (0), suppliers (1, whose
    /// default ANY_RESPONSE excludes the snoop group), snoops (2); and Knights Landing's
    /// OUTSTANDING, a group of its own that combines with requests only.
    fn offcore() -> NativeEvent {
        NativeEvent {
            name: "OFFCORE_RESPONSE_0".to_string(),
            code: 0xb7,
            base_umask: 0,
            description: String::new(),
            counters: CounterSet::first(4),
            fixed: None,
            flags: EventFlags::default(),
            extra: Some(ExtraMsr::new(ExtraMsr::OFFCORE_RSP_0, 0)),
            unit_masks: vec![
                mask("DMND_DATA_RD", 0, 0x1, false, PLAIN),
                mask("DMND_RFO", 0, 0x2, false, PLAIN),
                mask("ANY_REQUEST", 0, 0x8fff, true, ALONE),
                mask(
                    "ANY_RESPONSE",
                    1,
                    0x1_0000,
                    true,
                    CombineRules {
                        excludes_later_groups: true,
                        ..ALONE
                    },
                ),
                mask("LLC_HITM", 1, 0x4_0000, false, PLAIN),
                mask("L3_MISS", 1, 0x40_0000, false, PLAIN),
                mask("SNP_MISS", 2, 0x2_0000_0000, false, PLAIN),
                mask("SNP_ANY", 2, 0x3f_8000_0000, true, PLAIN),
                mask(
                    "OUTSTANDING",
                    3,
                    0x40_0000_0000,
                    false,
                    CombineRules {
                        excludes_other_groups: true,
                        group_may_be_empty: true,
                        ..PLAIN
                    },
                ),
            ],
        }
    }

    fn bits(event: &NativeEvent, names: &[&str]) -> Result<u64, EventError> {
        let named: Vec<&UnitMask> = names.iter().map(|n| event.unit_mask(n).unwrap()).collect();
        compose(event, &named).map(|c| c.bits)
    }

    fn error(event: &NativeEvent, names: &[&str]) -> EventError {
        bits(event, names).expect_err("refused")
    }

    #[test]
    fn a_request_alone_gets_any_response_and_no_snoop_default() {
        let event = offcore();
        assert_eq!(bits(&event, &["DMND_DATA_RD"]).unwrap(), 0x1_0001);
    }

    #[test]
    fn nothing_named_is_every_groups_default_up_to_the_excluding_one() {
        let event = offcore();
        assert_eq!(bits(&event, &[]).unwrap(), 0x1_8fff);
    }

    #[test]
    fn requests_of_one_group_are_ored_and_a_supplier_gets_the_snoop_default() {
        let event = offcore();
        assert_eq!(
            bits(&event, &["DMND_DATA_RD", "DMND_RFO", "L3_MISS"]).unwrap(),
            0x3f_8040_0003
        );
        assert_eq!(
            bits(&event, &["DMND_DATA_RD", "LLC_HITM", "SNP_MISS"]).unwrap(),
            0x2_0004_0001
        );
    }

    #[test]
    fn a_snoop_alone_keeps_the_supplier_default_as_libpfm4_does() {
        // libpfm4 adds ANY_RESPONSE for the supplier group; its exclusion of later groups
        // keeps their defaults out but does not refuse the named snoop.
        let event = offcore();
        assert_eq!(bits(&event, &["SNP_MISS"]).unwrap(), 0x2_0001_8fff);
    }

    #[test]
    fn a_named_mask_that_excludes_later_groups_refuses_them() {
        let event = offcore();
        let e = error(&event, &["DMND_DATA_RD", "ANY_RESPONSE", "SNP_MISS"]);
        assert_eq!(e.kind(), EventErrorKind::CombinationNotAllowed);
        assert!(e.message().contains("`ANY_RESPONSE`"), "{}", e.message());
        assert!(e.message().contains("`SNP_MISS`"), "{}", e.message());
    }

    #[test]
    fn a_mask_alone_in_its_group_is_not_combined() {
        let event = offcore();
        let e = error(&event, &["ANY_REQUEST", "DMND_DATA_RD"]);
        assert_eq!(e.kind(), EventErrorKind::CombinationNotAllowed);
        assert!(
            e.message().contains("ANY_REQUEST, DMND_DATA_RD"),
            "{}",
            e.message()
        );
        // Masks of other groups combine with it.
        assert_eq!(
            bits(&event, &["ANY_REQUEST", "LLC_HITM"]).unwrap(),
            0x3f_8004_8fff
        );
    }

    #[test]
    fn a_mask_that_excludes_other_groups_combines_with_requests_only() {
        let event = offcore();
        assert_eq!(
            bits(&event, &["DMND_DATA_RD", "OUTSTANDING"]).unwrap(),
            0x40_0000_0001
        );
        assert_eq!(bits(&event, &["OUTSTANDING"]).unwrap(), 0x40_0000_8fff);
        let e = error(&event, &["OUTSTANDING", "LLC_HITM"]);
        assert_eq!(e.kind(), EventErrorKind::CombinationNotAllowed);
        assert!(e.message().contains("`LLC_HITM`"), "{}", e.message());
    }

    #[test]
    fn a_group_without_default_needs_a_named_mask() {
        let mut event = offcore();
        for m in &mut event.unit_masks {
            if m.group == 1 {
                m.default = false;
            }
        }
        let e = error(&event, &["DMND_DATA_RD"]);
        assert_eq!(e.kind(), EventErrorKind::UnitMaskRequired);
        assert!(e.message().contains("group 1"), "{}", e.message());
        assert!(e.message().contains("LLC_HITM"), "{}", e.message());
    }
}
