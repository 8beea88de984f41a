//! Mappings of generalized events and presets: expressions over a model's native events, and
//! presets in the form of PAPI's table.

use counterhal_hal::{Error, GeneralizedEvent, Sign};
use serde::Deserialize;
use toml::Spanned;

use super::papi::linear_form;
use super::source::Source;
use crate::limits::MAX_MAPPING_TERMS;
use crate::model::{CpuModel, Mapping, PapiForm};
use crate::parse::{EventSpec, ParsedEvent, parse_event};

/// One term of a mapping: its sign, its whole factor and its native event.
pub(crate) type MappingTerm = (Sign, u32, EventSpec);

/// Parses a native event string of a mapping: a name with unit masks and `e`, `i`, `c=`, but
/// no PMU and no `u`/`k`/`h`/`H`/`G` (the user's modifiers apply).
fn native_term(token: &str) -> Result<EventSpec, String> {
    let spec = match parse_event(token) {
        Ok(ParsedEvent::Named(spec)) => spec,
        Ok(_) => {
            return Err(format!(
                "term `{token}` must be a native event name, not a raw code or PMU terms"
            ));
        }
        Err(e) => return Err(e.to_string()),
    };
    if spec.pmu.is_some()
        || spec.modifiers.has_levels()
        || spec.modifiers.host_only.is_some()
        || spec.modifiers.guest_only.is_some()
    {
        return Err(format!(
            "term `{token}` must not name a PMU or u/k/h/H/G (the user's modifiers apply)"
        ));
    }
    Ok(spec)
}

/// Parses a mapping expression `[N *] TERM [(+|-) [N *] TERM]...` (signs and `*` separated by
/// spaces; `N` a whole factor from 1).
pub(crate) fn parse_expression(text: &str) -> Result<Vec<MappingTerm>, String> {
    const SHAPE: &str = "an expression is `[N *] EVENT[:UMASK] [+|- [N *] EVENT[:UMASK]]...`";
    let mut terms = Vec::new();
    let mut tokens = text.split_whitespace().peekable();
    let mut sign = Sign::Plus;
    loop {
        let Some(token) = tokens.next() else {
            return Err(SHAPE.to_string());
        };
        let (factor, event) = if tokens.peek() == Some(&"*") {
            let factor = token
                .parse::<u32>()
                .ok()
                .filter(|f| *f > 0)
                .ok_or_else(|| format!("`{token} *`: a factor is a whole number from 1"))?;
            tokens.next();
            let event = tokens
                .next()
                .ok_or_else(|| format!("`{token} *` needs an event after it"))?;
            (factor, event)
        } else {
            (1, token)
        };
        if matches!(event, "+" | "-" | "*") {
            return Err(format!("`{event}` where an event was expected; {SHAPE}"));
        }
        if terms.len() == MAX_MAPPING_TERMS {
            return Err(format!(
                "more than {MAX_MAPPING_TERMS} terms, the limit of an expression (PAPI sums at \
                 most {})",
                super::papi::MAX_NATIVES
            ));
        }
        terms.push((sign, factor, native_term(event)?));
        match tokens.next() {
            None => return Ok(terms),
            Some("+") => sign = Sign::Plus,
            Some("-") => sign = Sign::Minus,
            Some(other) => {
                return Err(format!(
                    "expected `+` or `-` before `{other}` (signs need spaces around them)"
                ));
            }
        }
    }
}

pub(crate) fn check_term(model: &CpuModel, spec: &EventSpec) -> Result<(), String> {
    // A term may use another spelling of a native event (libpfm4's, perf's), as a user may.
    let canonical = model.unalias(spec);
    let spec = canonical.as_ref().unwrap_or(spec);
    let (event, extra) = model
        .lookup(spec)
        .ok_or_else(|| format!("no native event `{}` in model `{}`", spec.name, model.id))?;
    let extra: Vec<&str> = extra.into_iter().collect();
    crate::select::select(model, event, spec, &extra)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// A preset in PAPI's form, as the generated tables write it:
/// `{ papi = "DERIVED_POSTFIX", postfix = "N0|N1|2|*|+|", natives = ["A", "B"] }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PapiDoc {
    papi: String,
    postfix: Option<String>,
    natives: Vec<String>,
}

/// What a mapping entry gave: a mapping, or a PAPI preset the model cannot map, with why.
pub(super) enum Entry {
    Mapped(Mapping),
    Refused(GeneralizedEvent, String),
}

/// The text of a weighted sum: `A + 2 * B - C`.
fn sum_text(terms: &[(Sign, u32, String)]) -> String {
    let mut text = String::new();
    for (i, (sign, factor, native)) in terms.iter().enumerate() {
        match (i, sign) {
            (0, Sign::Plus) => {}
            (0, Sign::Minus) => text.push_str("-1 * "),
            (_, Sign::Plus) => text.push_str(" + "),
            (_, Sign::Minus) => text.push_str(" - "),
        }
        if *factor != 1 {
            text.push_str(&format!("{factor} * "));
        }
        text.push_str(native);
    }
    text
}

/// A PAPI-form preset on `model`: its weighted sum, or why the model cannot map it.
fn papi_preset(model: &CpuModel, doc: &PapiDoc) -> Result<(Vec<MappingTerm>, String), String> {
    let factors = linear_form(&doc.papi, doc.postfix.as_deref(), doc.natives.len())?;
    let mut terms = Vec::new();
    let mut texts = Vec::new();
    for (native, factor) in doc.natives.iter().zip(factors) {
        let spec = native_term(native.trim())
            .and_then(|spec| check_term(model, &spec).map(|()| spec))
            .map_err(|why| format!("native `{native}`: {why}"))?;
        if factor == 0 {
            // Opened by PAPI (NOT_DERIVED or DERIVED_CMPD beyond the first), never counted.
            continue;
        }
        let sign = if factor < 0 { Sign::Minus } else { Sign::Plus };
        let factor = u32::try_from(factor.unsigned_abs())
            .map_err(|_| format!("native `{native}`: factor {factor} too large"))?;
        texts.push((sign, factor, native.trim().to_string()));
        terms.push((sign, factor, spec));
    }
    // The first term is added (a sum read in order); PAPI's forms on x86 all start so.
    if let Some(first) = terms.iter().position(|(sign, _, _)| *sign == Sign::Plus) {
        terms[..=first].rotate_right(1);
        texts[..=first].rotate_right(1);
    }
    Ok((terms, sum_text(&texts)))
}

pub(super) fn mapping(
    source: &Source<'_>,
    model: &CpuModel,
    key: &Spanned<String>,
    value: &Spanned<toml::Value>,
    presets: bool,
) -> Result<Entry, Error> {
    let name = key.get_ref();
    let event = GeneralizedEvent::from_name(name);
    let event = match (event, presets) {
        (Some(e @ GeneralizedEvent::Preset(_)), true) => e,
        (Some(e @ (GeneralizedEvent::Hardware(_) | GeneralizedEvent::Cache(_))), false) => e,
        (Some(GeneralizedEvent::Software(_)), false) => {
            return Err(source.error(
                key.span(),
                name,
                "software events are counted by the kernel and take no mapping",
            ));
        }
        _ => {
            let table = if presets {
                "presets (PAPI_* names)"
            } else {
                "generalized (perf hardware and cache names)"
            };
            return Err(source.error(
                key.span(),
                name,
                format!("`{name}` is not a name the {table} table accepts"),
            ));
        }
    };
    let text = match value.get_ref() {
        toml::Value::String(text) => text,
        toml::Value::Table(table) if presets => {
            let doc: PapiDoc = toml::Value::Table(table.clone()).try_into().map_err(|e| {
                source.error(
                    value.span(),
                    name,
                    format!(
                        "a preset in PAPI's form is {{ papi = \"DERIVED_...\", postfix = \"...\" (DERIVED_POSTFIX only), natives = [...] }}: {}",
                        e.message().trim()
                    ),
                )
            })?;
            return Ok(match papi_preset(model, &doc) {
                Ok((terms, expression)) => Entry::Mapped(Mapping {
                    event,
                    expression,
                    papi: Some(PapiForm {
                        derived: doc.papi,
                        postfix: doc.postfix,
                        natives: doc.natives,
                    }),
                    terms,
                }),
                Err(why) => Entry::Refused(event, why),
            });
        }
        _ => {
            let form = if presets {
                "an expression string, or a table in PAPI's form"
            } else {
                "an expression string"
            };
            return Err(source.error(value.span(), name, format!("a mapping is {form}")));
        }
    };
    let terms = parse_expression(text).map_err(|why| source.error(value.span(), name, why))?;
    for (_, _, spec) in &terms {
        check_term(model, spec).map_err(|why| source.error(value.span(), name, why))?;
    }
    Ok(Entry::Mapped(Mapping {
        event,
        expression: text.trim().to_string(),
        papi: None,
        terms,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_with_factors() {
        let terms = parse_expression("A + 2 * B:X - C").unwrap();
        let shape: Vec<(Sign, u32, &str)> = terms
            .iter()
            .map(|(s, f, spec)| (*s, *f, spec.name.as_str()))
            .collect();
        assert_eq!(
            shape,
            [
                (Sign::Plus, 1, "A"),
                (Sign::Plus, 2, "B"),
                (Sign::Minus, 1, "C")
            ]
        );
        assert_eq!(parse_expression("4 * A").unwrap()[0].1, 4);
        for (bad, why) in [
            ("", "an expression is"),
            ("A +", "an expression is"),
            ("A B", "expected `+` or `-`"),
            ("0 * A", "from 1"),
            ("x * A", "from 1"),
            ("2 *", "needs an event"),
            ("2 * + A", "where an event was expected"),
            ("cpu/event=1/", "native event name"),
            ("A:u", "must not name a PMU"),
        ] {
            let error = parse_expression(bad).unwrap_err();
            assert!(error.contains(why), "{bad}: {error}");
        }
    }

    #[test]
    fn sums_read_as_written() {
        let t = |s, f, n: &str| (s, f, n.to_string());
        assert_eq!(
            sum_text(&[
                t(Sign::Plus, 1, "A"),
                t(Sign::Plus, 2, "B"),
                t(Sign::Minus, 1, "C")
            ]),
            "A + 2 * B - C"
        );
        // What the text says parses back to the same terms.
        let text = sum_text(&[t(Sign::Plus, 8, "A:X"), t(Sign::Minus, 3, "B")]);
        let terms = parse_expression(&text).unwrap();
        assert_eq!((terms[0].1, terms[1].0, terms[1].1), (8, Sign::Minus, 3));
    }
}
