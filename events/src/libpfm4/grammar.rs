//! libpfm4's event-string grammar, as `pfmlib_parse_event`, `pfmlib_parse_event_attr` and
//! `pfmlib_sanitize_event` in `lib/pfmlib_common.c` (4.13) read a string: the event name up
//! to the first `:` or `.` (both are attribute delimiters), matched without case; then each
//! attribute, a unit mask or a modifier of the event, matched without case in the event's
//! order (unit masks first, then modifiers in libpfm4's order), `name=value` skipping unit
//! masks (`L2_LINES_IN:I:I=1` is unit mask `I` and modifier `i`); a number `0x..` is a raw
//! unit mask; a unit mask with an equivalence (`uequiv`) stands for its attributes; an event
//! with one (`equiv`) for the event and attributes it names. Repeated attributes with the same
//! value are dropped, with another value refused, exactly as libpfm4's loop does it (which
//! drops every second repeat only: `:e:e:e=0` keeps `e` and `e=0`, the last winning).

use super::table::{Event, Pmu, integer_modifier};

/// libpfm4's error classes (`PFM_ERR_*`) the grammar and the encoders return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pfm {
    /// `PFM_ERR_NOTFOUND`: no such event.
    NotFound,
    /// `PFM_ERR_INVAL`: not one event (a `,` or blank in the string).
    Inval,
    /// `PFM_ERR_ATTR`: an unknown attribute, or one that cannot be used here.
    Attr,
    /// `PFM_ERR_ATTR` for a name that reads as a unit mask (not a modifier's letter or
    /// name): the event has no such unit mask.
    NoUnitMask,
    /// `PFM_ERR_ATTR_VAL`: an attribute value that is not valid.
    AttrVal,
    /// `PFM_ERR_ATTR_SET`: an attribute set twice with different values.
    AttrSet,
    /// `PFM_ERR_FEATCOMB`: unit masks or attributes that cannot combine.
    FeatComb,
    /// `PFM_ERR_UMASK`: a unit-mask group without its required unit mask.
    Umask,
    /// `PFM_ERR_TOOMANY`: more than 64 attributes.
    TooMany,
}

/// A libpfm4 error with what was wrong.
#[derive(Clone, Debug)]
pub(crate) struct PfmError {
    pub code: Pfm,
    pub why: String,
}

pub(crate) fn fail<T>(code: Pfm, why: impl Into<String>) -> Result<T, PfmError> {
    Err(PfmError {
        code,
        why: why.into(),
    })
}

/// What an attribute is: a unit mask of the event (its index), the raw unit mask (its
/// value) or a modifier (libpfm4's index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AttrRef {
    Umask(usize),
    Raw(u64),
    Modifier(u8),
}

/// One attribute given (or added as a default).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Attr {
    pub what: AttrRef,
    pub value: u64,
}

/// A parsed event: the PMU, its event (after an equivalence) and the attributes.
pub(crate) struct Desc<'p> {
    pub pmu: &'p Pmu,
    pub event: Event,
    pub attrs: Vec<Attr>,
}

/// libpfm4's attribute limit (`PFMLIB_MAX_ATTRS`).
const MAX_ATTRS: usize = 64;

/// The characters that separate events (`PFMLIB_EVENT_DELIM`): one string is one event.
pub(crate) const EVENT_DELIMITERS: [char; 4] = [',', ' ', '\t', '\n'];

/// `text` split at its first `:` or `.`: the token and the rest after the delimiter.
fn strsep(text: &str) -> (&str, Option<&str>) {
    match text.find([':', '.']) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    }
}

fn find_event(pmu: &Pmu, name: &str) -> Option<Event> {
    pmu.events().find(|e| e.is_named(name))
}

/// Parses `text` (after any `PMU::`) as an event of `pmu`.
pub(crate) fn parse<'p>(pmu: &'p Pmu, text: &str) -> Result<Desc<'p>, PfmError> {
    if text.contains(EVENT_DELIMITERS) {
        return fail(
            Pfm::Inval,
            "one event at a time: no `,` or blank in an event string",
        );
    }
    let (name, rest) = strsep(text);
    let Some(found) = find_event(pmu, name) else {
        return fail(
            Pfm::NotFound,
            format!("libpfm4's PMU `{}` has no event `{name}`", pmu.name()),
        );
    };
    let mut desc = Desc {
        pmu,
        event: found,
        attrs: Vec::new(),
    };
    if let Some(equiv) = found.equiv() {
        let (equiv_name, equiv_rest) = strsep(equiv);
        desc.event = find_event(pmu, equiv_name).ok_or_else(|| PfmError {
            code: Pfm::NotFound,
            why: format!(
                "`{name}` stands for `{equiv}`, which `{}` lacks",
                pmu.name()
            ),
        })?;
        parse_attrs(&mut desc, equiv_rest)?;
        sanitize(&mut desc)?;
    }
    parse_attrs(&mut desc, rest)?;
    sanitize(&mut desc)?;
    Ok(desc)
}

/// The names of the event's attributes in libpfm4's order: unit masks, then modifiers.
fn attributes<'p>(desc: &Desc<'p>) -> impl Iterator<Item = (AttrRef, &'p str)> + use<'p> {
    let names: &[&str] = if desc.pmu.intel {
        &super::table::INTEL_MODIFIERS
    } else {
        &super::table::AMD_MODIFIERS
    };
    let modmsk = desc.event.modmsk();
    desc.event
        .umasks()
        .iter()
        .enumerate()
        .map(|(i, u)| (AttrRef::Umask(i), u.name()))
        .chain(
            (0..names.len())
                .filter(move |b| modmsk & (1 << b) != 0)
                .map(move |b| (AttrRef::Modifier(b as u8), names[b])),
        )
}

/// C's `strtoull(text, &end, 0)` requiring the whole text: decimal, `0x` hexadecimal or
/// `0` octal, an optional sign (a negative number wraps), saturating on overflow.
pub(crate) fn strtoull(text: &str) -> Option<u64> {
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (radix, digits) = if let Some(hex) = body
        .strip_prefix("0x")
        .or_else(|| body.strip_prefix("0X"))
        .filter(|h| h.starts_with(|c: char| c.is_ascii_hexdigit()))
    {
        (16, hex)
    } else if body.len() > 1 && body.starts_with('0') {
        (8, &body[1..])
    } else {
        (10, body)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        // `0` alone is a number; `0x` alone parses as `0` with `x` left over.
        return None;
    }
    let value = digits.chars().try_fold(0u64, |v, c| {
        v.checked_mul(u64::from(radix))?
            .checked_add(u64::from(c.to_digit(radix)?))
    });
    let value = value.unwrap_or(u64::MAX);
    Some(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

/// The names of `event`'s unit masks that `keep` keeps, the first 24 of them.
pub(crate) fn unit_mask_list(event: &Event, keep: impl Fn(&super::table::Umask) -> bool) -> String {
    let names: Vec<&str> = event
        .umasks()
        .iter()
        .filter(|u| keep(u))
        .map(|u| u.name())
        .collect();
    match names.len() {
        0 => "none".to_string(),
        n if n > 24 => format!("{}, ... ({n} in all)", names[..24].join(", ")),
        _ => names.join(", "),
    }
}

/// Whether an unknown attribute `key` reads as a modifier (a letter, a group of perf's level
/// letters, a modifier's name) rather than a unit mask.
fn modifier_like(key: &str) -> bool {
    key.len() == 1
        || key.chars().all(|c| "ukhHGpP".contains(c))
        || ["intx", "intxcp", "ldlat", "fe_thres", "frontend"]
            .iter()
            .any(|m| m.eq_ignore_ascii_case(key))
}

/// `pfmlib_parse_event_attr`: the attributes in `text` (None: none), added to `desc`.
fn parse_attrs(desc: &mut Desc<'_>, text: Option<&str>) -> Result<(), PfmError> {
    let (mut has_raw, mut has_umask) = (false, false);
    let mut next = text;
    while let Some(s) = next {
        let (token, rest) = strsep(s);
        next = rest;
        let (key, value) = match token.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (token, None),
        };
        let bytes = key.as_bytes();
        let found = if bytes.first() == Some(&b'0') && matches!(bytes.get(1), Some(b'x' | b'X')) {
            if has_raw || has_umask {
                return fail(
                    Pfm::Attr,
                    format!("raw unit mask `{key}`: a raw unit mask is the only one given"),
                );
            }
            if !desc.pmu.raw_umask {
                return fail(
                    Pfm::Attr,
                    format!("PMU `{}` takes no raw unit mask", desc.pmu.name()),
                );
            }
            let hex = &key[2..];
            if hex.is_empty() || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                return fail(
                    Pfm::Attr,
                    format!("raw unit mask `{key}` is not a hexadecimal number"),
                );
            }
            has_raw = true;
            AttrRef::Raw(strtoull(key).unwrap_or(u64::MAX))
        } else {
            let found = attributes(desc)
                .find(|(what, name)| {
                    name.eq_ignore_ascii_case(key)
                        && !(value.is_some() && matches!(what, AttrRef::Umask(_)))
                })
                .map(|(what, _)| what);
            let Some(found) = found else {
                let code = if value.is_none() && !modifier_like(key) {
                    Pfm::NoUnitMask
                } else {
                    Pfm::Attr
                };
                let what = if code == Pfm::NoUnitMask {
                    format!(
                        "unit mask `{key}` is unknown (`{}`); valid unit masks: {}",
                        desc.event.name(),
                        unit_mask_list(&desc.event, |_| true)
                    )
                } else {
                    let names: Vec<&str> = attributes(desc)
                        .filter(|(w, _)| matches!(w, AttrRef::Modifier(_)))
                        .map(|(_, n)| n)
                        .collect();
                    format!(
                        "`{}` has no modifier `{key}`; its modifiers are {}",
                        desc.event.name(),
                        names.join(", ")
                    )
                };
                return fail(code, what);
            };
            found
        };
        if let AttrRef::Umask(index) = found {
            has_umask = true;
            if has_raw {
                return fail(
                    Pfm::Attr,
                    format!("unit mask `{key}` after a raw unit mask"),
                );
            }
            if let Some(equiv) = desc.event.umask(index).equiv() {
                if value.is_some() {
                    return fail(Pfm::AttrVal, format!("unit mask `{key}` takes no value"));
                }
                parse_attrs(desc, Some(equiv))?;
                continue;
            }
        }
        let value = match (found, value) {
            (AttrRef::Modifier(m), None) => {
                if integer_modifier(desc.pmu.intel, m) {
                    return fail(
                        Pfm::AttrVal,
                        format!("modifier `{key}` needs a value (`{key}=N`)"),
                    );
                }
                Some("y")
            }
            (AttrRef::Umask(_) | AttrRef::Raw(_), Some(_)) => {
                return fail(Pfm::AttrVal, format!("unit mask `{key}` takes no value"));
            }
            (_, value) => value,
        };
        let mut number = 0;
        if let (AttrRef::Modifier(m), Some(text)) = (found, value) {
            let bad = || PfmError {
                code: Pfm::AttrVal,
                why: format!("modifier `{key}={text}`: not a valid value"),
            };
            if text.is_empty() {
                return Err(bad());
            }
            if desc.attrs.len() == MAX_ATTRS {
                return fail(Pfm::TooMany, "more than 64 attributes");
            }
            number = if integer_modifier(desc.pmu.intel, m) {
                strtoull(text).ok_or_else(bad)?
            } else {
                match text.as_bytes() {
                    [b'y' | b'Y' | b't' | b'T' | b'1'] => 1,
                    [b'n' | b'N' | b'f' | b'F' | b'0'] => 0,
                    _ => return Err(bad()),
                }
            };
        }
        desc.attrs.push(Attr {
            what: found,
            value: number,
        });
    }
    Ok(())
}

/// `pfmlib_sanitize_event`: repeats with the same value dropped (libpfm4's loop steps past
/// the attribute that moves into a dropped one's place), different values refused.
fn sanitize(desc: &mut Desc<'_>) -> Result<(), PfmError> {
    let attrs = &mut desc.attrs;
    let mut i = 0;
    while i < attrs.len() {
        let mut j = i + 1;
        while j < attrs.len() {
            if attrs[i].what == attrs[j].what {
                if attrs[i].value != attrs[j].value {
                    return fail(
                        Pfm::AttrSet,
                        "an attribute given twice with different values",
                    );
                }
                attrs.remove(j);
            }
            j += 1;
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_strtoull_reads_them() {
        assert_eq!(strtoull("10"), Some(10));
        assert_eq!(strtoull("0x10"), Some(16));
        assert_eq!(strtoull("010"), Some(8));
        assert_eq!(strtoull("0"), Some(0));
        assert_eq!(strtoull("+3"), Some(3));
        assert_eq!(strtoull("-1"), Some(u64::MAX));
        assert_eq!(strtoull("0x"), None);
        assert_eq!(strtoull("08"), None);
        assert_eq!(strtoull("1a"), None);
        assert_eq!(strtoull(""), None);
        assert_eq!(strtoull("99999999999999999999999"), Some(u64::MAX));
    }
}
