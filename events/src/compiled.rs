//! The shipped models' events, unit masks, mappings, refused presets and event aliases as the
//! build compiled them in (`build/models.rs` loads each model's files with the library's own
//! loader and writes the data this module includes): strings in one pool, tables by index
//! ranges. A model is made from them when it is first used; nothing here parses a file.

use counterhal_hal::{CounterSet, ExtraMsr, GeneralizedEvent, Sign};

use crate::model::{CombineRules, CpuModel, EventFlags, Mapping, NativeEvent, PapiForm};
use crate::model::{UnitMask, UnitMaskClass};
use crate::parse::{EventSpec, ParsedEvent, parse_event};

/// A string of the pool: its offset and length in bytes.
#[derive(Clone, Copy)]
struct Str(u32, u32);

/// A native event; its unit masks are `MASK_LISTS[start..start + length]` (indices of
/// `MASKS`).
struct Event {
    name: Str,
    description: Str,
    code: u16,
    base_umask: u8,
    counters: u32,
    /// The fixed counter's index, `u8::MAX` for none.
    fixed: u8,
    /// [`EventFlags`], a bit each in the order of [`event_flags`].
    flags: u8,
    /// The extra MSR: its index + 1 in `EXTRAS`, 0 for none.
    extra: u16,
    masks: (u32, u16),
}

/// A unit mask; `same_as` is a range of `STRINGS`.
struct Mask {
    name: Str,
    description: Str,
    code: u8,
    cmask: u8,
    group: u8,
    umask2: u8,
    /// Its booleans, a bit each in the order of [`mask`]; bits 10 and 11 say whether it has
    /// an event code and counters of its own.
    flags: u16,
    class: UnitMaskClass,
    /// As [`Event::fixed`].
    fixed: u8,
    event_code: u16,
    counters: u32,
    /// As [`Event::extra`].
    extra: u16,
    /// The register bits: their index + 1 in `WORDS`, 0 for none.
    extra_bits: u16,
    same_as: (u32, u16),
}

/// A mapping of a generalized event or preset; its terms are `TERMS[..]`.
struct MappingRow {
    event: Str,
    expression: Str,
    papi: Option<Papi>,
    terms: (u32, u32),
}

/// A preset's form in PAPI's table; its natives are a range of `STRINGS`.
struct Papi {
    derived: Str,
    postfix: Option<Str>,
    natives: (u32, u16),
}

/// One term of a mapping: its sign, factor and event string.
struct Term {
    minus: bool,
    factor: u32,
    event: Str,
}

/// One model's rows in each table (its events: a range of `EVENT_LISTS`, indices of `EVENTS`).
struct Body {
    events: (u32, u32),
    mappings: (u32, u32),
    refused: (u32, u32),
    aliases: (u32, u32),
}

include!(concat!(env!("OUT_DIR"), "/models.rs"));

fn text(s: Str) -> &'static str {
    POOL.get(s.0 as usize..s.0 as usize + s.1 as usize)
        .unwrap_or_default()
}

fn rows<T>(table: &'static [T], (start, length): (u32, impl Into<u32>)) -> &'static [T] {
    let start = start as usize;
    table
        .get(start..start + length.into() as usize)
        .unwrap_or_default()
}

fn strings(range: (u32, u16)) -> Vec<String> {
    rows(&STRINGS, range)
        .iter()
        .map(|&s| text(s).to_string())
        .collect()
}

/// The extra MSR a row names by its index + 1 in `EXTRAS` (0: none).
fn extra(index: u16) -> Option<ExtraMsr> {
    let &(address, value) = EXTRAS.get(usize::from(index).checked_sub(1)?)?;
    Some(ExtraMsr::new(address, value))
}

/// A fixed counter's index as a row gives it (`u8::MAX`: none).
fn fixed(index: u8) -> Option<u32> {
    (index != u8::MAX).then_some(u32::from(index))
}

/// An event string the build wrote as `spec_text` gives it (it checked that it reads back).
fn spec(s: Str) -> EventSpec {
    match parse_event(text(s)) {
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

fn mask(row: &Mask) -> UnitMask {
    let bit = |i: u16| row.flags & 1 << i != 0;
    UnitMask {
        name: text(row.name).to_string(),
        code: row.code,
        description: text(row.description).to_string(),
        default: bit(0),
        cmask: row.cmask,
        edge: bit(1),
        invert: bit(2),
        fixed: fixed(row.fixed),
        event_code: bit(10).then_some(row.event_code),
        counters: bit(11).then_some(CounterSet::from_mask(row.counters)),
        group: row.group,
        class: row.class,
        extra: extra(row.extra),
        precise: bit(3),
        deprecated: bit(4),
        any_thread: bit(5),
        umask2: row.umask2,
        extra_bits: usize::from(row.extra_bits)
            .checked_sub(1)
            .and_then(|i| WORDS.get(i).copied()),
        combine: CombineRules {
            alone_in_group: bit(6),
            excludes_later_groups: bit(7),
            excludes_other_groups: bit(8),
            group_may_be_empty: bit(9),
        },
        same_as: strings(row.same_as),
    }
}

/// How many shipped models have a compiled-in body (one per entry of the shipped index).
#[cfg(test)]
pub(crate) fn count() -> usize {
    BODIES.len()
}

/// Shipped model `index`'s full content: its header (from the shipped index) with the events,
/// mappings, refused presets and event aliases the build loaded from its files.
pub(crate) fn model(index: usize, header: &CpuModel) -> CpuModel {
    let mut model = header.clone();
    let Some(body) = BODIES.get(index) else {
        return model;
    };
    model.events = rows(&EVENT_LISTS, body.events)
        .iter()
        .filter_map(|&i| EVENTS.get(i as usize))
        .map(|row| NativeEvent {
            name: text(row.name).to_string(),
            code: row.code,
            base_umask: row.base_umask,
            description: text(row.description).to_string(),
            counters: CounterSet::from_mask(row.counters),
            fixed: fixed(row.fixed),
            flags: event_flags(row.flags),
            extra: extra(row.extra),
            unit_masks: rows(&MASK_LISTS, row.masks)
                .iter()
                .filter_map(|&i| MASKS.get(i as usize))
                .map(mask)
                .collect(),
        })
        .collect();
    model.rebuild_index();
    model.mappings = rows(&MAPPINGS, body.mappings)
        .iter()
        .filter_map(|row| {
            Some(Mapping {
                event: GeneralizedEvent::from_name(text(row.event))?,
                expression: text(row.expression).to_string(),
                papi: row.papi.as_ref().map(|papi| PapiForm {
                    derived: text(papi.derived).to_string(),
                    postfix: papi.postfix.map(|p| text(p).to_string()),
                    natives: strings(papi.natives),
                }),
                terms: rows(&TERMS, row.terms)
                    .iter()
                    .map(|term| {
                        let sign = if term.minus { Sign::Minus } else { Sign::Plus };
                        (sign, term.factor, spec(term.event))
                    })
                    .collect(),
            })
        })
        .collect();
    model.refused_presets = rows(&REFUSED, body.refused)
        .iter()
        .filter_map(|&(event, why)| {
            Some((
                GeneralizedEvent::from_name(text(event))?,
                text(why).to_string(),
            ))
        })
        .collect();
    model.event_aliases = rows(&ALIASES, body.aliases)
        .iter()
        .map(|&(key, target)| (text(key).to_string(), spec(target)))
        .collect();
    model
}
