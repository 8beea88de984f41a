//! Reading `events.toml` files: the schema (serde), validation, and errors that name
//! file:line:column and the key.

use std::collections::BTreeMap;
use std::ops::Range;

use counterhal_hal::{CounterSet, Error, GeneralizedEvent, Sign};
use serde::Deserialize;
use toml::Spanned;

use crate::Vendor;
use crate::model::{
    CpuModel, EncoderKind, EventFlags, Mapping, MatchRule, NativeEvent, NumberSet, PmuDescription,
    UnitMask, UnitMaskClass,
};
use crate::parse::{EventSpec, ParsedEvent, parse_event};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    #[serde(default)]
    cpu: Vec<Spanned<CpuDoc>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CpuDoc {
    id: Spanned<String>,
    description: Option<String>,
    encoder: Option<Spanned<String>>,
    #[serde(rename = "match")]
    matches: Option<Vec<Spanned<MatchDoc>>>,
    pmu: Option<Spanned<PmuDoc>>,
    #[serde(default)]
    event: Vec<Spanned<EventDoc>>,
    generalized: Option<BTreeMap<Spanned<String>, Spanned<String>>>,
    presets: Option<BTreeMap<Spanned<String>, Spanned<String>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MatchDoc {
    vendor: Spanned<String>,
    family: Spanned<toml::Value>,
    model: Option<Spanned<toml::Value>>,
    stepping: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PmuDoc {
    general_counters: Spanned<i64>,
    counter_width: Spanned<i64>,
    #[serde(default)]
    fixed_counters: Option<Spanned<i64>>,
    #[serde(default)]
    fixed_width: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventDoc {
    name: Spanned<String>,
    code: Spanned<i64>,
    #[serde(default)]
    desc: String,
    umask: Option<Spanned<i64>>,
    #[serde(default)]
    umasks: Vec<Spanned<UmaskDoc>>,
    counters: Option<Spanned<Vec<i64>>>,
    fixed: Option<Spanned<i64>>,
    #[serde(default)]
    flags: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UmaskDoc {
    name: Spanned<String>,
    code: Spanned<i64>,
    #[serde(default)]
    desc: String,
    #[serde(default)]
    default: bool,
    cmask: Option<Spanned<i64>>,
    #[serde(default)]
    edge: bool,
    #[serde(default)]
    inv: bool,
    fixed: Option<Spanned<i64>>,
}

/// One file being loaded: its name (for messages) and text (for line:column).
pub(crate) struct Source<'a> {
    pub name: &'a str,
    pub text: &'a str,
}

impl Source<'_> {
    fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let before = self.text.get(..offset).unwrap_or(self.text);
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, column)
    }

    fn error(&self, span: Range<usize>, key: &str, message: impl std::fmt::Display) -> Error {
        let (line, column) = self.line_col(span.start);
        Error::invalid_input(format!(
            "{}:{line}:{column}: key `{key}`: {message}",
            self.name
        ))
        .with_hint("see events/README.md for the events.toml schema")
    }
}

fn number<T: TryFrom<i64>>(
    source: &Source<'_>,
    value: &Spanned<i64>,
    key: &str,
    max: i64,
) -> Result<T, Error> {
    let v = *value.get_ref();
    if !(0..=max).contains(&v) {
        return Err(source.error(
            value.span(),
            key,
            format!("{v:#x} is out of range 0..={max:#x}"),
        ));
    }
    T::try_from(v).map_err(|_| source.error(value.span(), key, "value out of range"))
}

fn number_set(
    source: &Source<'_>,
    value: &Spanned<toml::Value>,
    key: &str,
) -> Result<NumberSet, Error> {
    let bad = |why: &str| {
        source.error(
            value.span(),
            key,
            format!(
                "{why}; write a number, a range string such as \"0x30-0x3f\", or a list of them"
            ),
        )
    };
    let one = |item: &toml::Value| -> Result<(u32, u32), Error> {
        match item {
            toml::Value::Integer(n) => {
                let n = u32::try_from(*n).map_err(|_| bad("negative or too large"))?;
                Ok((n, n))
            }
            toml::Value::String(s) => {
                let (lo, hi) = match s.split_once('-') {
                    Some((lo, hi)) => (lo, hi),
                    None => (s.as_str(), s.as_str()),
                };
                let parse = |t: &str| {
                    crate::parse::parse_number(t)
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or_else(|| bad("not a number"))
                };
                let (lo, hi) = (parse(lo)?, parse(hi)?);
                if lo > hi {
                    return Err(bad("range start above its end"));
                }
                Ok((lo, hi))
            }
            _ => Err(bad("wrong type")),
        }
    };
    let ranges = match value.get_ref() {
        toml::Value::Array(items) => items.iter().map(one).collect::<Result<Vec<_>, _>>()?,
        other => vec![one(other)?],
    };
    Ok(NumberSet { ranges })
}

/// Which ids the layer being loaded defined so far (a model id used twice in one layer is an
/// error; a later layer overrides an earlier one).
#[derive(Default)]
pub(crate) struct Layer {
    ids: Vec<String>,
}

/// Where [`load_file`] puts the models it reads: a plain vector, or the database's list, whose
/// lazily parsed shipped models are parsed in full before a file may change them.
pub(crate) trait ModelSet {
    /// The index of the model with this id (case-insensitive), made ready for changes.
    fn position(&mut self, id: &str) -> Result<Option<usize>, Error>;
    /// Adds a new model; returns its index.
    fn push(&mut self, model: CpuModel) -> usize;
    /// The model at `index` (from [`ModelSet::position`] or [`ModelSet::push`]).
    fn get_mut(&mut self, index: usize) -> &mut CpuModel;
}

impl ModelSet for Vec<CpuModel> {
    fn position(&mut self, id: &str) -> Result<Option<usize>, Error> {
        Ok(self.iter().position(|m| m.id.eq_ignore_ascii_case(id)))
    }

    fn push(&mut self, model: CpuModel) -> usize {
        Vec::push(self, model);
        self.len() - 1
    }

    fn get_mut(&mut self, index: usize) -> &mut CpuModel {
        &mut self[index]
    }
}

/// Loads one file into `models`.
pub(crate) fn load_file(
    models: &mut impl ModelSet,
    layer: &mut Layer,
    source: &Source<'_>,
) -> Result<(), Error> {
    let doc: FileDoc = toml::from_str(source.text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        let message = e.message().trim().to_string();
        let key = key_at(source.text, span.start);
        source.error(span, &key, message)
    })?;
    for cpu in doc.cpu {
        let cpu = cpu.into_inner();
        load_cpu(models, layer, source, cpu)?;
    }
    Ok(())
}

/// The key on the line of `offset`, for toml's own errors (best effort).
fn key_at(text: &str, offset: usize) -> String {
    let start = text
        .get(..offset.min(text.len()))
        .and_then(|t| t.rfind('\n'))
        .map_or(0, |i| i + 1);
    let line = text
        .get(start..)
        .and_then(|t| t.lines().next())
        .unwrap_or("");
    let line = line.trim();
    let key = line
        .split('=')
        .next()
        .unwrap_or("")
        .trim()
        .trim_matches(|c| c == '[' || c == ']');
    if key.is_empty() {
        "(document)".to_string()
    } else {
        key.to_string()
    }
}

fn load_cpu(
    models: &mut impl ModelSet,
    layer: &mut Layer,
    source: &Source<'_>,
    doc: CpuDoc,
) -> Result<(), Error> {
    let id = doc.id.get_ref().trim().to_string();
    if id.is_empty()
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(source.error(
            doc.id.span(),
            "id",
            format!("`{id}` is not a valid model id (letters, digits, _ - .)"),
        ));
    }
    if layer.ids.iter().any(|i| i.eq_ignore_ascii_case(&id)) {
        return Err(source.error(
            doc.id.span(),
            "id",
            format!("model id `{id}` is used twice"),
        ));
    }
    layer.ids.push(id.clone());
    let existing = models.position(&id)?;
    let encoder = match &doc.encoder {
        Some(name) => Some(EncoderKind::from_name(name.get_ref()).ok_or_else(|| {
            source.error(
                name.span(),
                "encoder",
                format!(
                    "unknown encoder `{}`; one of p5, p6, intel-arch, amd64",
                    name.get_ref()
                ),
            )
        })?),
        None => None,
    };
    let pmu = match &doc.pmu {
        Some(pmu) => Some(pmu_description(source, pmu.get_ref())?),
        None => None,
    };
    let index = match existing {
        Some(i) => i,
        None => {
            let (Some(encoder), Some(pmu)) = (encoder, pmu) else {
                return Err(source.error(
                    doc.id.span(),
                    "id",
                    format!("new model `{id}` needs `encoder` and `pmu`"),
                ));
            };
            models.push(CpuModel {
                id: id.clone(),
                description: String::new(),
                encoder,
                pmu,
                rules: Vec::new(),
                events: Vec::new(),
                index: Default::default(),
                mappings: Vec::new(),
            })
        }
    };
    let model = models.get_mut(index);
    let reencoded = existing.is_some()
        && (encoder.is_some_and(|e| e != model.encoder) || pmu.is_some_and(|p| p != model.pmu));
    if let Some(description) = doc.description {
        model.description = description;
    }
    if let Some(encoder) = encoder {
        model.encoder = encoder;
    }
    if let Some(pmu) = pmu {
        model.pmu = pmu;
    }
    if let Some(rules) = &doc.matches {
        model.rules = rules
            .iter()
            .map(|r| match_rule(source, r.get_ref()))
            .collect::<Result<_, _>>()?;
    }
    if reencoded {
        // Earlier events must still fit the new encoder and PMU.
        let span = doc
            .encoder
            .as_ref()
            .map(|e| e.span())
            .or(doc.pmu.as_ref().map(|p| p.span()))
            .unwrap_or(doc.id.span());
        for event in &model.events {
            check_event_fits(model, event).map_err(|why| {
                source.error(
                    span.clone(),
                    "encoder",
                    format!("event `{}` defined earlier: {why}", event.name),
                )
            })?;
        }
    }
    let mut seen: Vec<String> = Vec::new();
    for event in &doc.event {
        let event = event.get_ref();
        let upper = event.name.get_ref().to_ascii_uppercase();
        if seen.contains(&upper) {
            return Err(source.error(
                event.name.span(),
                "name",
                format!(
                    "duplicate event name `{}` in model `{id}`",
                    event.name.get_ref()
                ),
            ));
        }
        let native = native_event(source, model.encoder, &model.pmu, event)?;
        seen.push(upper);
        match model
            .events
            .iter()
            .position(|e| e.name.eq_ignore_ascii_case(&native.name))
        {
            Some(i) => model.events[i] = native,
            None => model.events.push(native),
        }
    }
    model.rebuild_index();
    let mut touched = Vec::new();
    for (table, presets) in [(&doc.generalized, false), (&doc.presets, true)] {
        let Some(table) = table else { continue };
        for (key, value) in table {
            let mapping = mapping(source, model, key, value, presets)?;
            touched.push(mapping.event);
            match model.mappings.iter().position(|m| m.event == mapping.event) {
                Some(i) => model.mappings[i] = mapping,
                None => model.mappings.push(mapping),
            }
        }
    }
    if existing.is_some() {
        // Mappings from an earlier layer must still name valid natives.
        for m in &model.mappings {
            if touched.contains(&m.event) {
                continue;
            }
            for (_, spec) in &m.terms {
                check_term(model, spec).map_err(|why| {
                    source.error(
                        doc.id.span(),
                        "id",
                        format!(
                            "`{}` (defined earlier as `{}`) no longer resolves: {why}",
                            m.event, m.expression
                        ),
                    )
                })?;
            }
        }
    }
    Ok(())
}

fn pmu_description(source: &Source<'_>, doc: &PmuDoc) -> Result<PmuDescription, Error> {
    let general_counters = number(source, &doc.general_counters, "general_counters", 32)?;
    let counter_width = number(source, &doc.counter_width, "counter_width", 64)?;
    let fixed_counters = match &doc.fixed_counters {
        Some(v) => number(source, v, "fixed_counters", 8)?,
        None => 0,
    };
    let fixed_width = match &doc.fixed_width {
        Some(v) => number(source, v, "fixed_width", 64)?,
        None => 0,
    };
    Ok(PmuDescription {
        general_counters,
        counter_width,
        fixed_counters,
        fixed_width,
    })
}

fn match_rule(source: &Source<'_>, doc: &MatchDoc) -> Result<MatchRule, Error> {
    let vendor = Vendor::from_cpuid(doc.vendor.get_ref());
    if let Vendor::Other(name) = &vendor {
        return Err(source.error(
            doc.vendor.span(),
            "vendor",
            format!("unknown vendor `{name}`; `intel` or `amd`"),
        ));
    }
    let family = number_set(source, &doc.family, "family")?;
    let model = match &doc.model {
        Some(v) => number_set(source, v, "model")?,
        None => NumberSet::default(),
    };
    let stepping = match &doc.stepping {
        Some(v) => number_set(source, v, "stepping")?,
        None => NumberSet::default(),
    };
    Ok(MatchRule {
        vendor,
        family,
        model,
        stepping,
    })
}

fn counter_set(
    source: &Source<'_>,
    pmu: &PmuDescription,
    value: &Spanned<Vec<i64>>,
) -> Result<CounterSet, Error> {
    let mut mask = 0u32;
    for &index in value.get_ref() {
        if index < 0 || index >= i64::from(pmu.general_counters) {
            return Err(source.error(
                value.span(),
                "counters",
                format!(
                    "unknown counter {index}: the PMU has general counters 0..{}",
                    pmu.general_counters
                ),
            ));
        }
        mask |= 1 << index;
    }
    Ok(CounterSet::from_mask(mask))
}

fn fixed_counter(
    source: &Source<'_>,
    pmu: &PmuDescription,
    value: &Spanned<i64>,
) -> Result<u32, Error> {
    let index = *value.get_ref();
    if index < 0 || index >= i64::from(pmu.fixed_counters) {
        return Err(source.error(
            value.span(),
            "fixed",
            format!(
                "unknown fixed counter {index}: the PMU has {} fixed counters",
                pmu.fixed_counters
            ),
        ));
    }
    Ok(u32::try_from(index).unwrap_or(0))
}

fn native_event(
    source: &Source<'_>,
    encoder: EncoderKind,
    pmu: &PmuDescription,
    doc: &EventDoc,
) -> Result<NativeEvent, Error> {
    let name = doc.name.get_ref().trim().to_string();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(source.error(
            doc.name.span(),
            "name",
            format!("`{name}` is not a valid event name (letters, digits, _)"),
        ));
    }
    let max = i64::from(encoder.max_event_code());
    let code = *doc.code.get_ref();
    if !(0..=max).contains(&code) {
        return Err(source.error(
            doc.code.span(),
            "code",
            format!(
                "event code {code:#x} of `{name}` is out of range for encoder {} (0..={max:#x})",
                encoder.name()
            ),
        ));
    }
    let code = u16::try_from(code).unwrap_or(0);
    let mut flags = EventFlags::default();
    for flag in &doc.flags {
        match flag.get_ref().as_str() {
            "umask_required" => flags.umask_required = true,
            "mesi" => flags.mesi = true,
            "any_initiator" => flags.any_initiator = true,
            "exclusive" => flags.exclusive = true,
            other => {
                return Err(source.error(
                    flag.span(),
                    "flags",
                    format!("unknown flag `{other}`; one of umask_required, mesi, any_initiator, exclusive"),
                ));
            }
        }
    }
    if encoder == EncoderKind::P5
        && (doc.umask.is_some() || !doc.umasks.is_empty() || flags.mesi || flags.any_initiator)
    {
        return Err(source.error(
            doc.name.span(),
            "umasks",
            format!("`{name}`: P5 events take no unit masks"),
        ));
    }
    let base_umask = match &doc.umask {
        Some(v) => number(source, v, "umask", 0xff)?,
        None => 0,
    };
    let counters = match &doc.counters {
        Some(v) => counter_set(source, pmu, v)?,
        None => CounterSet::first(pmu.general_counters),
    };
    let fixed = match &doc.fixed {
        Some(v) => Some(fixed_counter(source, pmu, v)?),
        None => None,
    };
    if counters.is_empty() && fixed.is_none() {
        return Err(source.error(
            doc.name.span(),
            "counters",
            format!("`{name}` has no counter: give `counters` or `fixed`"),
        ));
    }
    let mut unit_masks: Vec<UnitMask> = Vec::with_capacity(doc.umasks.len());
    for umask in &doc.umasks {
        let u = umask.get_ref();
        let uname = u.name.get_ref().trim().to_string();
        if uname.is_empty() || !uname.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(source.error(
                u.name.span(),
                "name",
                format!("`{uname}` is not a valid unit-mask name"),
            ));
        }
        if uname.len() == 1 || matches!(uname.to_ascii_lowercase().as_str(), "uk" | "ku") {
            return Err(source.error(
                u.name.span(),
                "name",
                format!("unit mask `{uname}` would shadow a modifier; use a longer name"),
            ));
        }
        if unit_masks
            .iter()
            .any(|m| m.name.eq_ignore_ascii_case(&uname))
        {
            return Err(source.error(
                u.name.span(),
                "name",
                format!("duplicate unit mask `{uname}` in event `{name}`"),
            ));
        }
        let ucode = number(source, &u.code, "code", 0xff)?;
        let cmask = match &u.cmask {
            Some(v) => number(source, v, "cmask", 0xff)?,
            None => 0,
        };
        let ufixed = match &u.fixed {
            Some(v) => Some(fixed_counter(source, pmu, v)?),
            None => None,
        };
        unit_masks.push(UnitMask {
            name: uname,
            code: ucode,
            description: u.desc.clone(),
            default: u.default,
            cmask,
            edge: u.edge,
            invert: u.inv,
            fixed: ufixed,
            class: UnitMaskClass::Plain,
        });
    }
    if flags.mesi {
        for (mname, bit, what) in [
            ("MODIFIED", 0x08, "modified"),
            ("EXCLUSIVE", 0x04, "exclusive"),
            ("SHARED", 0x02, "shared"),
            ("INVALID", 0x01, "invalid"),
        ] {
            unit_masks.push(state_mask(
                mname,
                bit,
                &format!("lines in {what} state"),
                UnitMaskClass::CacheState,
            ));
        }
    }
    if flags.any_initiator {
        unit_masks.push(state_mask(
            "ANY_INITIATOR",
            0x20,
            "bus transactions of any agent, not only this processor",
            UnitMaskClass::AnyInitiator,
        ));
    }
    Ok(NativeEvent {
        name,
        code,
        base_umask,
        description: doc.desc.clone(),
        counters,
        fixed,
        flags,
        unit_masks,
    })
}

fn state_mask(name: &str, code: u8, description: &str, class: UnitMaskClass) -> UnitMask {
    UnitMask {
        name: name.to_string(),
        code,
        description: description.to_string(),
        default: false,
        cmask: 0,
        edge: false,
        invert: false,
        fixed: None,
        class,
    }
}

fn check_event_fits(model: &CpuModel, event: &NativeEvent) -> Result<(), String> {
    if event.code > model.encoder.max_event_code() {
        return Err(format!(
            "event code {:#x} is out of range for encoder {}",
            event.code,
            model.encoder.name()
        ));
    }
    if event
        .counters
        .iter()
        .any(|c| c >= model.pmu.general_counters)
    {
        return Err(format!(
            "counters {} exceed the PMU's {}",
            event.counters, model.pmu.general_counters
        ));
    }
    if model.encoder == EncoderKind::P5 && !event.unit_masks.is_empty() {
        return Err("P5 events take no unit masks".to_string());
    }
    Ok(())
}

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
    let (event, extra) = model
        .lookup(spec)
        .ok_or_else(|| format!("no native event `{}` in model `{}`", spec.name, model.id))?;
    let extra: Vec<&str> = extra.into_iter().collect();
    crate::select::select(model, event, spec, &extra)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn mapping(
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
