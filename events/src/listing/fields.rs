//! The fields of a native event's encoding as `counterhal list` shows them: `event=0xc4
//! umask=0x20`, then the second unit-mask byte, counter mask, edge, invert, AnyThread and TSX
//! bits where set, the counters where fewer than all may count it, and an extra MSR's value
//! (libpfm4's `showevtinfo` and `perf list -v` show the same facts).
//!
//! They come from the event database alone, in the CPU model's own family (x86 event select or
//! P5 CESR field), so they read the same whichever backend lists them, and where none works.

use std::fmt::Write as _;

use crate::database::Database;
use crate::model::{CpuModel, NativeEvent, UnitMask};
use counterhal_hal::{Accepts, CounterSet, Domain, Encoding, Family};

/// The fields `name` (a native event of `model`, or `EVENT.UNIT_MASK`) resolves to as typed
/// alone, in the model's own family; `None` where it does not resolve alone (an event that
/// needs a unit mask).
pub(crate) fn resolved_fields(database: &Database, model: &CpuModel, name: &str) -> Option<String> {
    let families: &'static [Family] = match model.encoder.family() {
        Family::P5Cesr => &[Family::P5Cesr],
        // An Arm PMUv3 event is a raw perf attr of its number.
        Family::Perf => &[Family::Perf],
        _ => &[Family::Evtsel],
    };
    let accepts = Accepts::new(families, Domain::ALL, Domain::DEFAULT);
    let resolved = database.resolve(Some(&model.id), name, &accepts).ok()?;
    match resolved.terms.as_slice() {
        [term] => Some(fields_text(
            &term.request.encoding,
            model.pmu.general_counters,
        )),
        _ => None,
    }
}

/// The fields the event database gives `event` (with `mask`, if any), where the name does not
/// resolve alone: the event code (the unit mask's own where it has one), the unit-mask byte
/// (with the event's base byte) and the unit mask's filter bits and extra MSR.
pub(crate) fn data_fields(event: &NativeEvent, mask: Option<&UnitMask>) -> String {
    let code = mask.and_then(|m| m.event_code).unwrap_or(event.code);
    let mut text = format!("event={code:#04x}");
    let Some(mask) = mask else {
        if event.base_umask != 0 {
            _ = write!(text, " umask={:#04x}", event.base_umask);
        }
        return text;
    };
    _ = write!(text, " umask={:#04x}", event.base_umask | mask.code);
    if mask.umask2 != 0 {
        _ = write!(text, " umask2={:#04x}", mask.umask2);
    }
    if mask.cmask != 0 {
        _ = write!(text, " cmask={}", mask.cmask);
    }
    for (set, name) in [
        (mask.edge, "edge"),
        (mask.invert, "inv"),
        (mask.any_thread, "any"),
    ] {
        if set {
            _ = write!(text, " {name}=1");
        }
    }
    if let Some(extra) = mask.extra.or(event.extra) {
        _ = write!(text, " {extra}");
    }
    text
}

/// The fields of `encoding`, a native encoding on a PMU with `general_counters` general
/// counters: `event=0xc4 umask=0x20`, then `umask2`, `cmask`, `edge=1`, `inv=1`, `any=1`,
/// `in_tx=1`, `in_tx_cp=1` where set, `counters=...` where fewer than all general counters
/// may count it, `fixed=N` (`fixed=N only`) where a fixed counter does, and `msr ADDR=VALUE`
/// for an extra MSR. A P5 CESR field is `event=0x16`, with `cmask=1` when it counts cycles. Any
/// other encoding is written as [`Encoding`]'s `Display` writes it.
pub fn fields_text(encoding: &Encoding, general_counters: u32) -> String {
    let mut text = String::with_capacity(32);
    // As `CounterSet`'s `Display` writes the set (`0,1,3`, `any` for all), by hand.
    let counters = |text: &mut String, counters: CounterSet| {
        if counters.is_empty() || counters == CounterSet::first(general_counters) {
            return;
        }
        text.push_str(" counters=");
        if counters == CounterSet::ALL {
            text.push_str("any");
            return;
        }
        for (i, counter) in counters.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            push_decimal(text, counter.into());
        }
    };
    match encoding {
        Encoding::Evtsel(evtsel) => {
            text.push_str("event=");
            push_hex(&mut text, evtsel.code.into());
            text.push_str(" umask=");
            push_hex(&mut text, evtsel.umask.into());
            if evtsel.umask2 != 0 {
                text.push_str(" umask2=");
                push_hex(&mut text, evtsel.umask2.into());
            }
            if evtsel.cmask != 0 {
                text.push_str(" cmask=");
                push_decimal(&mut text, evtsel.cmask.into());
            }
            for (set, name) in [
                (evtsel.edge, "edge"),
                (evtsel.invert, "inv"),
                (evtsel.any_thread, "any"),
                (evtsel.in_tx, "in_tx"),
                (evtsel.in_tx_cp, "in_tx_cp"),
            ] {
                if set {
                    _ = write!(text, " {name}=1");
                }
            }
            counters(&mut text, evtsel.counters);
            if let Some(fixed) = evtsel.fixed {
                text.push_str(" fixed=");
                push_decimal(&mut text, fixed.into());
                if evtsel.counters.is_empty() {
                    text.push_str(" only");
                }
            }
            if let Some(extra) = evtsel.extra {
                _ = write!(text, " {extra}");
            }
        }
        Encoding::P5Cesr(cesr) => {
            _ = write!(text, "event={:#04x}", cesr.event);
            if cesr.count_cycles {
                text.push_str(" cmask=1");
            }
            counters(&mut text, cesr.counters);
        }
        other => _ = write!(text, "{other}"),
    }
    text
}

/// `value` as `{:#04x}` writes it: `0x` and at least two lower-case hex digits (written by
/// hand: a listing writes a few for each of a model's events and unit masks).
fn push_hex(text: &mut String, value: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    text.push_str("0x");
    let digits = (64 - value.leading_zeros()).div_ceil(4).max(2);
    for shift in (0..digits).rev().map(|d| d * 4) {
        text.push(char::from(DIGITS[((value >> shift) & 0xf) as usize]));
    }
}

/// `value` in decimal, as `{}` writes it.
fn push_decimal(text: &mut String, value: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    let mut rest = value;
    loop {
        start -= 1;
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    text.extend(digits[start..].iter().map(|&d| char::from(d)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal_hal::Evtsel;

    /// Oracle: the standard library's `{:#04x}` and `{}`.
    #[test]
    fn hex_is_written_as_the_formatter_writes_it() {
        let values = [0, 1, 0xf, 0x10, 0xff, 0x100, 0x1c0, 0xfff, 0x1000, u64::MAX];
        for value in values.into_iter().chain((0..64).map(|bit| 1 << bit)) {
            let mut text = String::new();
            push_hex(&mut text, value);
            assert_eq!(text, format!("{value:#04x}"));
            let mut text = String::new();
            push_decimal(&mut text, value);
            assert_eq!(text, value.to_string());
        }
    }

    /// Oracle: `CounterSet`'s `Display`, which the fields' `counters=` writes by hand.
    #[test]
    fn counters_are_written_as_counter_sets_display_them() {
        let masks = [0b1, 0b10, 0b101, 0b1111_0000, 0x8000_0001, 0xffff, u32::MAX];
        for mask in masks {
            let set = CounterSet::from_mask(mask);
            let mut evtsel = Evtsel::new(0x3c, 0x00);
            evtsel.counters = set;
            assert_eq!(
                fields_text(&Encoding::Evtsel(evtsel), 4),
                format!("event=0x3c umask=0x00 counters={set}")
            );
        }
    }

    /// Every shipped unit mask resolves alone under the name `list` shows (`EVENT.UNIT_MASK`),
    /// so its fields are the ones the resolver gives, not the data's fallback.
    #[test]
    fn every_shipped_unit_mask_resolves_alone_as_listed() {
        let db = Database::shipped().unwrap();
        let mut failed = Vec::new();
        for model in db.models() {
            for event in model.events() {
                for mask in event.unit_masks() {
                    let name = format!("{}.{}", event.name, mask.name);
                    if resolved_fields(&db, model, &name).is_none() {
                        failed.push(format!("{}: {name}", model.id));
                    }
                }
            }
        }
        assert!(failed.is_empty(), "{failed:#?}");
    }

    #[test]
    fn data_fields_stand_in_where_a_name_does_not_resolve_alone() {
        let db = Database::shipped().unwrap();
        let hsw = db.model("hsw").unwrap();
        let event = hsw.event("CPL_CYCLES").unwrap();
        assert_eq!(resolved_fields(&db, hsw, "CPL_CYCLES"), None);
        assert_eq!(data_fields(event, None), "event=0x5c");
        let mask = event.unit_mask("RING0_TRANS").unwrap();
        assert_eq!(
            data_fields(event, Some(mask)),
            "event=0x5c umask=0x01 cmask=1 edge=1"
        );
        assert_eq!(
            resolved_fields(&db, hsw, "CPL_CYCLES.RING0_TRANS").as_deref(),
            Some("event=0x5c umask=0x01 cmask=1 edge=1")
        );
    }
}
