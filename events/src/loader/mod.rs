//! Reading `events.toml` files: the schema (serde), validation, and errors that name
//! file:line:column and the key.

mod event;
mod header;
mod mapping;
mod papi;
mod schema;
mod source;

use counterhal_hal::Error;

use crate::cpu::HybridCore;
use crate::fast_map::{FastMap, FastSet};
use crate::limits::{MAX_EVENT_ALIASES, MAX_FILE_ENTRIES, MAX_FILE_MODELS, check_tokens};
use crate::model::{CpuModel, EncoderKind, PmuDescription};
use event::{check_event_fits, native_event};
use header::{hybrid_core, match_rule, pmu_description};
use mapping::{Entry, check_term, mapping};
use schema::{CpuDoc, FileDoc};
pub(crate) use source::Source;

/// Which ids the layer being loaded defined so far (a model id used twice in one layer is an
/// error; a later layer overrides an earlier one).
#[derive(Default)]
pub(crate) struct Layer {
    /// Upper case, found by hash: a file of many models checks each against all before it.
    ids: FastSet<String>,
    /// The events and unit masks loaded so far (a table for several models counted once per
    /// model), held to [`MAX_FILE_ENTRIES`].
    entries: usize,
}

/// Where [`load_file`] puts the models it reads: a plain vector, or the database's list, whose
/// lazily parsed shipped models are parsed in full before a file may change them.
pub(crate) trait ModelSet {
    /// How many models it holds.
    fn count(&self) -> usize;
    /// The id of the model at `index`.
    fn id(&self, index: usize) -> &str;
    /// Adds a new model; returns its index.
    fn push(&mut self, model: CpuModel) -> usize;
    /// The model at `index`, made ready for changes.
    fn get_mut(&mut self, index: usize) -> &mut CpuModel;
}

impl ModelSet for Vec<CpuModel> {
    fn count(&self) -> usize {
        self.len()
    }

    fn id(&self, index: usize) -> &str {
        &self[index].id
    }

    fn push(&mut self, model: CpuModel) -> usize {
        Vec::push(self, model);
        self.len() - 1
    }

    fn get_mut(&mut self, index: usize) -> &mut CpuModel {
        &mut self[index]
    }
}

/// The index of each model of a [`ModelSet`] by its id in upper case (the first of an id),
/// made once a file: looked up for each `[[cpu]]` table, where a search of all of them was
/// quadratic in a file of many models.
struct Positions(FastMap<String, usize>);

impl Positions {
    fn of(models: &impl ModelSet) -> Positions {
        let mut by_id = FastMap::default();
        for index in 0..models.count() {
            by_id
                .entry(models.id(index).to_ascii_uppercase())
                .or_insert(index);
        }
        Positions(by_id)
    }

    /// The index of the model with this id (case-insensitive).
    fn get(&self, id: &str) -> Option<usize> {
        self.0.get(&id.to_ascii_uppercase()).copied()
    }

    /// Adds `model` to `models`, and its index here.
    fn push(&mut self, models: &mut impl ModelSet, model: CpuModel) -> usize {
        let id = model.id.to_ascii_uppercase();
        let index = models.push(model);
        self.0.entry(id).or_insert(index);
        index
    }
}

/// Loads one file into `models`.
pub(crate) fn load_file(
    models: &mut impl ModelSet,
    layer: &mut Layer,
    source: &Source<'_>,
) -> Result<(), Error> {
    check_tokens(source.text).map_err(|too| {
        let key = key_at(source.text, too.offset);
        source.error(too.offset..too.offset, &key, too.message)
    })?;
    let doc: FileDoc = toml::from_str(source.text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        let message = e.message().trim().to_string();
        let key = key_at(source.text, span.start);
        source.error(span, &key, message)
    })?;
    let mut positions = Positions::of(models);
    let mut at = Loading {
        models,
        positions: &mut positions,
        layer,
        source,
    };
    for cpu in doc.cpu {
        let cpu = cpu.into_inner();
        match cpu.id.get_ref() {
            toml::Value::String(id) => {
                count_entries(source, at.layer, &cpu, 1)?;
                at.load_cpu(id, &cpu)?;
            }
            toml::Value::Array(ids) => {
                // One table for several models: it changes those loaded before (a shared
                // overlay), passing over the ids of models not loaded.
                if ids.len() > MAX_FILE_MODELS {
                    return Err(source.error(
                        cpu.id.span(),
                        "id",
                        format!(
                            "a list of {} ids, above the limit of {MAX_FILE_MODELS} models a file changes",
                            ids.len()
                        ),
                    ));
                }
                let mut loaded = Vec::new();
                for id in ids {
                    let toml::Value::String(id) = id else {
                        return Err(source.error(cpu.id.span(), "id", "a model id is a string"));
                    };
                    if at.positions.get(id.trim()).is_some() {
                        loaded.push(id);
                    }
                }
                // Each listed model loads the table's events: counted before any is read.
                count_entries(source, at.layer, &cpu, loaded.len())?;
                for id in &loaded {
                    at.load_cpu(id, &cpu)?;
                }
                if loaded.is_empty() {
                    return Err(source.error(
                        cpu.id.span(),
                        "id",
                        "a list of ids changes models loaded before, and none of these is",
                    ));
                }
            }
            _ => {
                return Err(source.error(
                    cpu.id.span(),
                    "id",
                    "a model id is a string (or, to change several models, a list of them)",
                ));
            }
        }
    }
    Ok(())
}

/// One `[cpu.event_aliases]` entry: the alias's key and the event string it stands for, which
/// must name one of the model's events (and unit mask) and no modifier.
fn event_alias(
    source: &Source<'_>,
    model: &CpuModel,
    key: &toml::Spanned<String>,
    value: &toml::Spanned<String>,
) -> Result<(String, crate::parse::EventSpec), Error> {
    let alias = key.get_ref().trim();
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':');
    if alias.is_empty() || !alias.chars().all(valid) || alias.matches(':').count() > 1 {
        return Err(source.error(
            key.span(),
            alias,
            format!("`{alias}` is not a valid event alias (EVENT or EVENT:UNIT_MASK; letters, digits, _ and .)"),
        ));
    }
    let target = match crate::parse::parse_event(value.get_ref()) {
        Ok(crate::parse::ParsedEvent::Named(spec))
            if spec.pmu.is_none() && spec.modifiers == crate::parse::Modifiers::default() =>
        {
            spec
        }
        _ => {
            return Err(source.error(
                value.span(),
                alias,
                format!(
                    "alias target `{}` must be an event name with its unit masks (no PMU, no modifier)",
                    value.get_ref()
                ),
            ));
        }
    };
    alias_target(model, &target).map_err(|why| {
        source.error(
            value.span(),
            alias,
            format!(
                "alias `{alias}` names `{}`, which does not resolve: {why}",
                value.get_ref()
            ),
        )
    })?;
    Ok((crate::model::alias_key(alias), target))
}

/// Whether an alias's target names one of the model's events and, if it gives one, a unit
/// mask of it (a whole-event alias names the event alone).
fn alias_target(model: &CpuModel, target: &crate::parse::EventSpec) -> Result<(), String> {
    if target.unit_masks.is_empty() && !target.dotted {
        return match model.event(&target.name) {
            Some(_) => Ok(()),
            None => Err(format!(
                "no native event `{}` in model `{}`",
                target.name, model.id
            )),
        };
    }
    check_term(model, target)
}

/// Whether an alias key (`EVENT` or `EVENT:UNIT_MASK`) is one of the model's own names.
fn own_name(model: &CpuModel, key: &str) -> bool {
    let (event, mask) = match key.split_once(':') {
        Some((event, mask)) => (event, Some(mask)),
        None => (key, None),
    };
    model.event(event).is_some_and(|e| match mask {
        Some(m) => e.unit_mask(m).is_some(),
        // A bare name that needs a unit mask leaves room for an alias.
        None => !e.needs_unit_mask(),
    })
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

/// What one file's tables load into: the models, their positions by id, the layer.
struct Loading<'a, M: ModelSet> {
    models: &'a mut M,
    positions: &'a mut Positions,
    layer: &'a mut Layer,
    source: &'a Source<'a>,
}

impl<M: ModelSet> Loading<'_, M> {
    /// Loads the `[[cpu]]` table `doc` into model `id`: a new one, or one loaded before.
    fn load_cpu(&mut self, id: &str, doc: &CpuDoc) -> Result<(), Error> {
        let source = self.source;
        let id = id.trim().to_string();
        check_model_id(source, self.layer, &id, doc)?;
        self.layer.ids.insert(id.to_ascii_uppercase());
        let existing = self.positions.get(&id);
        let mut header = header_values(source, doc)?;
        let index = match existing {
            Some(i) => i,
            None => {
                let (Some(encoder), Some(pmu)) = (header.encoder, header.pmu) else {
                    return Err(source.error(
                        doc.id.span(),
                        "id",
                        format!("new model `{id}` needs `encoder` and `pmu`"),
                    ));
                };
                self.positions
                    .push(self.models, new_model(id.clone(), encoder, pmu))
            }
        };
        let model = self.models.get_mut(index);
        header.reencoded = existing.is_some()
            && (header.encoder.is_some_and(|e| e != model.encoder)
                || header.pmu.is_some_and(|p| p != model.pmu));
        apply_header(model, source, doc, header)?;
        load_events(model, source, &id, doc)?;
        load_mappings(model, source, doc, existing.is_some())
    }
}

/// A `[[cpu]]` table's encoder, PMU and hybrid core, each read and checked where given (not
/// yet compared with a model's).
fn header_values(source: &Source<'_>, doc: &CpuDoc) -> Result<Header, Error> {
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
    let hybrid = match &doc.hybrid {
        Some(hybrid) => Some(hybrid_core(source, hybrid.get_ref())?),
        None => None,
    };
    Ok(Header {
        encoder,
        pmu,
        hybrid,
        reencoded: false,
    })
}

/// Refuses a model id that is not one (letters, digits, `_ - .`), that this layer used
/// already, or past the [`MAX_FILE_MODELS`] a file may add or change.
fn check_model_id(source: &Source<'_>, layer: &Layer, id: &str, doc: &CpuDoc) -> Result<(), Error> {
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
    if layer.ids.len() >= MAX_FILE_MODELS {
        return Err(source.error(
            doc.id.span(),
            "id",
            format!(
                "model `{id}` is past the limit of {MAX_FILE_MODELS} models a file adds or \
                 changes (the library ships 98): split the file"
            ),
        ));
    }
    if layer.ids.contains(&id.to_ascii_uppercase()) {
        return Err(source.error(
            doc.id.span(),
            "id",
            format!("model id `{id}` is used twice"),
        ));
    }
    Ok(())
}

/// Counts the events and unit masks `doc` loads into `copies` models against
/// [`MAX_FILE_ENTRIES`], before they are read.
fn count_entries(
    source: &Source<'_>,
    layer: &mut Layer,
    doc: &CpuDoc,
    copies: usize,
) -> Result<(), Error> {
    let unit_masks: usize = doc.event.iter().map(|e| e.get_ref().umasks.len()).sum();
    let entries = (doc.event.len() + unit_masks).saturating_mul(copies);
    layer.entries = layer.entries.saturating_add(entries);
    if layer.entries > MAX_FILE_ENTRIES {
        return Err(source.error(
            doc.id.span(),
            "id",
            format!(
                "this table brings the file past the limit of {MAX_FILE_ENTRIES} events and unit \
                 masks loaded ({entries} here: a table for several models loads its own into \
                 each; the shipped data's largest model has 1,446): split the file"
            ),
        ));
    }
    Ok(())
}

/// A model with no events yet, which the first file that names it creates.
fn new_model(id: String, encoder: EncoderKind, pmu: PmuDescription) -> CpuModel {
    CpuModel {
        id,
        description: String::new(),
        aliases: Vec::new(),
        encoder,
        pmu,
        hybrid: None,
        rules: Vec::new(),
        events: Vec::new(),
        index: Default::default(),
        mappings: Vec::new(),
        refused_presets: Vec::new(),
        event_aliases: Default::default(),
    }
}

/// What a `[[cpu]]` table's header gives, read and checked.
struct Header {
    encoder: Option<EncoderKind>,
    pmu: Option<PmuDescription>,
    hybrid: Option<HybridCore>,
    /// Whether an existing model's encoder or PMU changes, so its events are checked again.
    reencoded: bool,
}

/// Applies a `[[cpu]]` table's header to `model`: aliases, description, encoder, PMU, hybrid
/// core and match rules; when the encoder or PMU changed, the events defined earlier must
/// still fit.
fn apply_header(
    model: &mut CpuModel,
    source: &Source<'_>,
    doc: &CpuDoc,
    header: Header,
) -> Result<(), Error> {
    let Header {
        encoder,
        pmu,
        hybrid,
        reencoded,
    } = header;
    if let Some(aliases) = &doc.aliases {
        model.aliases = aliases
            .iter()
            .map(|a| {
                let alias = a.get_ref().trim();
                if alias.is_empty()
                    || !alias
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                {
                    return Err(source.error(
                        a.span(),
                        "aliases",
                        format!("`{alias}` is not a valid model id (letters, digits, _ - .)"),
                    ));
                }
                Ok(alias.to_string())
            })
            .collect::<Result<_, _>>()?;
    }
    if let Some(description) = &doc.description {
        model.description.clone_from(description);
    }
    if let Some(encoder) = encoder {
        model.encoder = encoder;
    }
    if let Some(pmu) = pmu {
        model.pmu = pmu;
    }
    if hybrid.is_some() {
        model.hybrid = hybrid;
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
    Ok(())
}

/// Loads the `[[cpu.event]]` tables of `doc` into `model` (one replaces an event of that
/// name), drops the event aliases that now stand for nothing, and adds `doc`'s aliases.
fn load_events(
    model: &mut CpuModel,
    source: &Source<'_>,
    id: &str,
    doc: &CpuDoc,
) -> Result<(), Error> {
    // Names are found through sets and the model's index, so a file of many events loads in
    // time linear in its size. Each file's events keep the index whole (it is rebuilt here
    // only as a guard, where they change it).
    if !doc.event.is_empty() {
        model.rebuild_index();
    }
    let mut seen = crate::fast_map::FastSet::default();
    for event in &doc.event {
        let event = event.get_ref();
        let upper = event.name.get_ref().to_ascii_uppercase();
        if !seen.insert(upper) {
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
        let key = native.name.to_ascii_uppercase();
        match model.index.get(&key) {
            Some(&i) => model.events[i] = native,
            None => {
                model.index.insert(key, model.events.len());
                model.events.push(native);
            }
        }
    }
    if !doc.event.is_empty() {
        // An alias of an earlier file whose event this one replaced without the unit mask it
        // named stands for nothing now: the replacing file's names are the event's.
        // So is one this file's names shadow.
        let stale: Vec<String> = model
            .event_aliases
            .iter()
            .filter(|(key, target)| own_name(model, key) || alias_target(model, target).is_err())
            .map(|(key, _)| key.clone())
            .collect();
        for key in stale {
            model.event_aliases.remove(&key);
        }
    }
    if let Some(table) = &doc.event_aliases {
        if table.len() > MAX_EVENT_ALIASES {
            return Err(source.error(
                doc.id.span(),
                "event_aliases",
                format!(
                    "{} event aliases for model `{id}`, above the limit of {MAX_EVENT_ALIASES} a \
                     table (the shipped data's most is 337)",
                    table.len()
                ),
            ));
        }
        for (key, value) in table {
            let (alias, target) = event_alias(source, model, key, value)?;
            model.event_aliases.insert(alias, target);
        }
    }
    Ok(())
}

/// Loads the generalized events and PAPI presets of `doc` into `model`; over an `existing`
/// model, the mappings of earlier layers must still resolve.
fn load_mappings(
    model: &mut CpuModel,
    source: &Source<'_>,
    doc: &CpuDoc,
    existing: bool,
) -> Result<(), Error> {
    let mut touched = Vec::new();
    for (table, presets) in [(&doc.generalized, false), (&doc.presets, true)] {
        let Some(table) = table else { continue };
        for (key, value) in table {
            let mapping = match mapping(source, model, key, value, presets)? {
                Entry::Mapped(mapping) => mapping,
                Entry::Refused(event, why) => {
                    // A preset of PAPI's table this model cannot map: left out, as PAPI leaves
                    // out a preset whose natives it does not find, with the reason kept (a
                    // mapping another layer gives stays).
                    model.refused_presets.retain(|(e, _)| *e != event);
                    model.refused_presets.push((event, why));
                    continue;
                }
            };
            touched.push(mapping.event);
            match model.mappings.iter().position(|m| m.event == mapping.event) {
                Some(i) => model.mappings[i] = mapping,
                None => model.mappings.push(mapping),
            }
        }
    }
    if existing {
        // Mappings from an earlier layer must still name valid natives.
        for m in &model.mappings {
            if touched.contains(&m.event) {
                continue;
            }
            for (_, _, spec) in &m.terms {
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
