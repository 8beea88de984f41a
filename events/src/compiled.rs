//! The shipped models' events, unit masks, mappings, refused presets and event aliases as
//! `counterhal-gen tables` wrote them (`table_writer/models.rs` loads each model's files with
//! the library's own loader): rows of the shipped tables ([`crate::table`]), every row once
//! however many models have it, tables by index ranges. A model is made from them when it is
//! first used; nothing here parses a file.

use counterhal_hal::{CounterSet, ExtraMsr, GeneralizedEvent, Sign};

use crate::model::{CombineRules, CpuModel, EventFlags, Mapping, NativeEvent, PapiForm};
use crate::model::{UnitMask, UnitMaskClass};
use crate::parse::{EventSpec, ParsedEvent, parse_event};
use crate::table::{Field, Models, Table};

/// A string of this module's part of the shipped tables.
type Str = crate::table::Str<Models>;

crate::table::row! {
    /// A native event; its unit masks are `MASK_LISTS[start..start + length]` (indices of
    /// `MASKS`), its description, if any, in `EVENT_DESCRIPTIONS`.
    struct Event {
        name: Str,
        code: u16,
        /// The extra MSR: its index + 1 in `EXTRA_MSRS`, 0 for none.
        extra: u16,
        masks: (u16, u16),
        base_umask: u8,
        /// The fixed counter's index, `u8::MAX` for none.
        fixed: u8,
        /// [`EventFlags`], a bit each in the order of [`event_flags`].
        flags: u8,
        /// Its general counters: an index of `COUNTER_SETS`.
        counters: u8,
    }
}

crate::table::row! {
    /// A unit mask; what few have is its row of `MASK_RARE`.
    struct Mask {
        name: Str,
        /// Its booleans, a bit each in the order of [`mask`]; bits 10 and 11 say whether it
        /// has an event code and counters of its own, bits 12 and 13 its [`UnitMaskClass`].
        flags: u16,
        /// As [`Event::extra`].
        extra: u16,
        /// The register bits: their index + 1 in `WORDS`, 0 for none.
        extra_bits: u16,
        /// Its index + 1 in `MASK_RARE`, 0 for none.
        rare: u16,
        code: u8,
        cmask: u8,
        group: u8,
        umask2: u8,
    }
}

crate::table::row! {
    /// What few unit masks have; `same_as` is a range of `STRINGS`.
    struct MaskRare {
        description: Str,
        counters: u32,
        event_code: u16,
        same_as: (u16, u16),
        /// As [`Event::fixed`].
        fixed: u8,
    }
}

crate::table::row! {
    /// A mapping of a generalized event or preset; its terms are `TERMS[..]`.
    struct MappingRow {
        event: Str,
        expression: Str,
        /// Its PAPI form: its index + 1 in `PAPI`, 0 for none.
        papi: u16,
        terms: (u16, u16),
    }
}

crate::table::row! {
    /// A preset's form in PAPI's table; its natives are a range of `STRINGS`.
    struct Papi {
        derived: Str,
        postfix: Option<Str>,
        natives: (u16, u16),
    }
}

crate::table::row! {
    /// One term of a mapping: its event string, factor and sign.
    struct Term {
        event: Str,
        factor: u32,
        minus: bool,
    }
}

crate::table::row! {
    /// One model's rows in each table: its events (a range of `EVENT_LISTS`), mappings (of
    /// `MAPPING_LISTS`), refused presets (of `REFUSED`) and event aliases (of `ALIAS_LISTS`).
    struct Body {
        events: (u16, u16),
        mappings: (u16, u16),
        refused: (u16, u16),
        aliases: (u16, u16),
    }
}

/// The rows of `table` a list of indices (a range of `list`) names.
fn listed<T: Field>(
    table: Table<T>,
    list: Table<u16>,
    range: (u16, u16),
) -> impl Iterator<Item = T> {
    list.range(range)
        .iter()
        .filter_map(move |i| table.get(usize::from(i)))
}

fn strings(range: (u16, u16)) -> Vec<String> {
    crate::table::table!(Models, Str, "STRINGS")
        .range(range)
        .iter()
        .map(|s| s.text().to_string())
        .collect()
}

/// The extra MSR a row names by its index + 1 in `EXTRA_MSRS` (0: none).
fn extra(index: u16) -> Option<ExtraMsr> {
    let index = usize::from(index).checked_sub(1)?;
    let address = crate::table::table!(Models, u16, "EXTRA_MSRS").get(index)?;
    let value = crate::table::table!(Models, u64, "EXTRA_VALUES").get(index)?;
    Some(ExtraMsr::new(u32::from(address), value))
}

/// A fixed counter's index as a row gives it (`u8::MAX`: none).
fn fixed(index: u8) -> Option<u32> {
    (index != u8::MAX).then_some(u32::from(index))
}

/// An event string the build wrote as `spec_text` gives it (it checked that it reads back).
fn spec(s: Str) -> EventSpec {
    match parse_event(s.text()) {
        Ok(ParsedEvent::Named(spec)) => spec,
        _ => EventSpec::default(),
    }
}

fn event_flags(bits: u8) -> EventFlags {
    let bit = |i: u8| bits & 1 << i != 0;
    EventFlags {
        umask_required: bit(0),
        mesi: bit(1),
        any_initiator: bit(2),
        exclusive: bit(3),
        precise: bit(4),
        deprecated: bit(5),
        any_thread: bit(6),
    }
}

/// The description of event row `index`, if it has one.
fn event_description(index: u16) -> String {
    let descriptions = crate::table::table!(Models, (u16, Str), "EVENT_DESCRIPTIONS");
    descriptions
        .binary_search_by_key(&index, |&(event, _)| event)
        .ok()
        .and_then(|at| descriptions.get(at))
        .map(|(_, description)| description.text().to_string())
        .unwrap_or_default()
}

fn mask(row: Mask) -> UnitMask {
    let bit = |i: u16| row.flags & 1 << i != 0;
    let rare = usize::from(row.rare)
        .checked_sub(1)
        .and_then(|i| crate::table::table!(Models, MaskRare, "MASK_RARE").get(i));
    UnitMask {
        name: row.name.text().to_string(),
        code: row.code,
        description: rare
            .map(|r| r.description.text().to_string())
            .unwrap_or_default(),
        default: bit(0),
        cmask: row.cmask,
        edge: bit(1),
        invert: bit(2),
        fixed: rare.and_then(|r| fixed(r.fixed)),
        event_code: bit(10).then(|| rare.map_or(0, |r| r.event_code)),
        counters: bit(11).then(|| CounterSet::from_mask(rare.map_or(0, |r| r.counters))),
        group: row.group,
        class: match row.flags >> 12 & 3 {
            1 => UnitMaskClass::CacheState,
            2 => UnitMaskClass::AnyInitiator,
            _ => UnitMaskClass::Plain,
        },
        extra: extra(row.extra),
        precise: bit(3),
        deprecated: bit(4),
        any_thread: bit(5),
        umask2: row.umask2,
        extra_bits: usize::from(row.extra_bits)
            .checked_sub(1)
            .and_then(|i| crate::table::table!(Models, u64, "WORDS").get(i)),
        combine: CombineRules {
            alone_in_group: bit(6),
            excludes_later_groups: bit(7),
            excludes_other_groups: bit(8),
            group_may_be_empty: bit(9),
        },
        same_as: rare.map(|r| strings(r.same_as)).unwrap_or_default(),
    }
}

/// How many shipped models have a body (one per entry of the shipped index).
#[cfg(all(test, feature = "events-file"))]
pub(crate) fn count() -> usize {
    crate::table::table!(Models, Body, "BODIES").len()
}

/// Whether shipped model `index` has a native event or an event alias named `name` (ASCII
/// case aside, as [`CpuModel::event`] and the aliases look names up), read from its rows
/// without making the model: what resolving a plain name needs to know before the model is
/// made whole.
pub(crate) fn model_spells(index: usize, name: &str) -> bool {
    let Some(body) = crate::table::table!(Models, Body, "BODIES").get(index) else {
        return false;
    };
    let events = crate::table::table!(Models, Event, "EVENTS");
    let native = crate::table::table!(Models, u16, "EVENT_LISTS")
        .range(body.events)
        .iter()
        .filter_map(|i| events.get(usize::from(i)))
        .any(|row| row.name.text().eq_ignore_ascii_case(name));
    native
        || listed::<(Str, Str)>(
            crate::table::table!(Models, "ALIASES"),
            crate::table::table!(Models, "ALIAS_LISTS"),
            body.aliases,
        )
        .any(|(key, _)| key.text().eq_ignore_ascii_case(name))
}

/// Shipped model `index`'s full content: its header (from the shipped index) with the events,
/// mappings, refused presets and event aliases the build loaded from its files.
pub(crate) fn model(index: usize, header: &CpuModel) -> CpuModel {
    let mut model = header.clone();
    let Some(body) = crate::table::table!(Models, Body, "BODIES").get(index) else {
        return model;
    };
    let (masks, mask_lists) = (
        crate::table::table!(Models, Mask, "MASKS"),
        crate::table::table!(Models, u16, "MASK_LISTS"),
    );
    let (events, counter_sets) = (
        crate::table::table!(Models, Event, "EVENTS"),
        crate::table::table!(Models, u32, "COUNTER_SETS"),
    );
    model.events = crate::table::table!(Models, u16, "EVENT_LISTS")
        .range(body.events)
        .iter()
        .filter_map(|i| Some((i, events.get(usize::from(i))?)))
        .map(|(index, row)| NativeEvent {
            name: row.name.text().to_string(),
            code: row.code,
            base_umask: row.base_umask,
            description: event_description(index),
            counters: CounterSet::from_mask(
                counter_sets
                    .get(usize::from(row.counters))
                    .unwrap_or_default(),
            ),
            fixed: fixed(row.fixed),
            flags: event_flags(row.flags),
            extra: extra(row.extra),
            unit_masks: listed(masks, mask_lists, row.masks).map(mask).collect(),
        })
        .collect();
    model.rebuild_index();
    let (papi, terms) = (
        crate::table::table!(Models, Papi, "PAPI"),
        crate::table::table!(Models, Term, "TERMS"),
    );
    model.mappings = listed::<MappingRow>(
        crate::table::table!(Models, "MAPPINGS"),
        crate::table::table!(Models, "MAPPING_LISTS"),
        body.mappings,
    )
    .filter_map(|row| {
        Some(Mapping {
            event: GeneralizedEvent::from_name(row.event.text())?,
            expression: row.expression.text().to_string(),
            papi: usize::from(row.papi)
                .checked_sub(1)
                .and_then(|i| papi.get(i))
                .map(|papi| PapiForm {
                    derived: papi.derived.text().to_string(),
                    postfix: papi.postfix.map(|p| p.text().to_string()),
                    natives: strings(papi.natives),
                }),
            terms: terms
                .range(row.terms)
                .iter()
                .map(|term| {
                    let sign = if term.minus { Sign::Minus } else { Sign::Plus };
                    (sign, term.factor, spec(term.event))
                })
                .collect(),
        })
    })
    .collect();
    model.refused_presets = crate::table::table!(Models, (Str, Str), "REFUSED")
        .range(body.refused)
        .iter()
        .filter_map(|(event, why)| {
            Some((
                GeneralizedEvent::from_name(event.text())?,
                why.text().to_string(),
            ))
        })
        .collect();
    model.event_aliases = listed::<(Str, Str)>(
        crate::table::table!(Models, "ALIASES"),
        crate::table::table!(Models, "ALIAS_LISTS"),
        body.aliases,
    )
    .map(|(key, target)| (key.text().to_string(), spec(target)))
    .collect();
    model
}
