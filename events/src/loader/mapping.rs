//! Mappings of generalized events and presets: expressions over a model's native events.

use counterhal_hal::{Error, GeneralizedEvent, Sign};
use toml::Spanned;

use super::source::Source;
use crate::model::{CpuModel, Mapping};
use crate::parse::{EventSpec, ParsedEvent, parse_event};

/// Parses a mapping expression `TERM [(+|-) TERM]...` (signs separated by spaces).
pub(crate) fn parse_expression(text: &str) -> Result<Vec<(Sign, EventSpec)>, String> {
    let mut terms = Vec::new();
    let mut sign = Some(Sign::Plus);
    for token in text.split_whitespace() {
        match (token, sign) {
            ("+", None) => sign = Some(Sign::Plus),
            ("-", None) => sign = Some(Sign::Minus),
            (_, Some(s)) => {
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
                terms.push((s, spec));
                sign = None;
            }
            (_, None) => {
                return Err(format!(
                    "expected `+` or `-` before `{token}` (signs need spaces around them)"
                ));
            }
        }
    }
    if terms.is_empty() || sign.is_some() {
        return Err("an expression is `EVENT[:UMASK] [+|- EVENT[:UMASK]]...`".to_string());
    }
    Ok(terms)
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

pub(super) fn mapping(
    source: &Source<'_>,
    model: &CpuModel,
    key: &Spanned<String>,
    value: &Spanned<String>,
    presets: bool,
) -> Result<Mapping, Error> {
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
    let terms =
        parse_expression(value.get_ref()).map_err(|why| source.error(value.span(), name, why))?;
    for (_, spec) in &terms {
        check_term(model, spec).map_err(|why| source.error(value.span(), name, why))?;
    }
    Ok(Mapping {
        event,
        expression: value.get_ref().trim().to_string(),
        terms,
    })
}
