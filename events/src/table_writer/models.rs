//! The shipped CPU models as rows: each model's files (`data/shipped.list`) loaded by the
//! library's own loader (`src/loader/`), exactly as a user's file is loaded, and the models'
//! headers, events, unit masks, mappings, refused presets and event aliases written as rows
//! (read by `src/database.rs` and `src/compiled.rs`), every row once however many models have
//! it, in records of a few bytes:
//!
//! - strings as `Str`s of the one pool (`pool.rs`);
//! - `INDEX`: each model's header (`INDEX_STRINGS`, `RULES` and `RANGES` hold its aliases and
//!   match rules), what finds and detects a model without making it;
//! - `EVENTS` and `MASKS`: every native event and unit mask once (the same event on two models
//!   is one row), a model's events a range of `EVENT_LISTS` (indices of `EVENTS`), an event's
//!   unit masks a range of `MASK_LISTS` (indices of `MASKS`); what few unit masks have (a
//!   fixed counter, an event code or counters of their own, other names, a description) is a
//!   row of `MASK_RARE`, and the counter sets events name are `COUNTER_SETS`; the events'
//!   descriptions are `EVENT_DESCRIPTIONS`, by event;
//! - `MAPPINGS` (a model's: a range of `MAPPING_LISTS`), their `PAPI` forms and `TERMS` (each
//!   term's event string as `spec_text` writes it, which the writer checks reads back to the
//!   same event), `REFUSED` (the presets refused and why), `ALIASES` (a model's: a range of
//!   `ALIAS_LISTS`) and `STRINGS` (lists of strings), each list written once;
//! - `EXTRA_MSRS` and `EXTRA_VALUES` (the extra MSRs, each once), `WORDS` (register bits);
//! - `BODIES`: one per model, in `INDEX`'s order.
//!
//! A file the loader refuses stops the writer with the loader's own message.

use std::path::Path;

use counterhal_hal::{GeneralizedEvent, Sign};

use super::{Lists, Rows, Tables, Values, short};
use crate::compiled::{Body, Event, MappingRow, Mask, MaskRare, Papi, Term};
use crate::database::{IndexedModel, IndexedRule};
use crate::loader::{Layer, Source, load_file};
use crate::model::{CpuModel, EncoderKind, NativeEvent, UnitMask, UnitMaskClass, spec_text};
use crate::parse::{EventSpec, ParsedEvent, parse_event};
use crate::table::{Catalog, Models};

/// A string of part `models`.
type Str = crate::table::Str<Models>;

/// A fixed counter's index as one byte, `u8::MAX` for none.
fn fixed(counter: Option<u32>) -> u8 {
    match counter {
        Some(c) => u8::try_from(c)
            .ok()
            .filter(|&c| c != u8::MAX)
            .expect("a fixed counter's index fits a byte"),
        None => u8::MAX,
    }
}

/// The rows of each table written so far.
struct Writer<'t> {
    tables: &'t mut Tables<Models>,
    events: Rows<Event>,
    event_lists: Lists<u16>,
    event_descriptions: Vec<(u16, Str)>,
    counter_sets: Values<u32>,
    masks: Rows<Mask>,
    mask_lists: Lists<u16>,
    mask_rare: Rows<MaskRare>,
    mappings: Rows<MappingRow>,
    mapping_lists: Lists<u16>,
    papi: Rows<Papi>,
    terms: Lists<TermKey>,
    refused: Vec<(Str, Str)>,
    aliases: Rows<(Str, Str)>,
    alias_lists: Lists<u16>,
    strings: Lists<Str>,
    /// Extra MSRs (address and value), each once; a row names one by its index + 1 (0: none).
    extras: Values<(u16, u64)>,
    /// Register-bit values, each once; a row names one by its index + 1 (0: none).
    words: Values<u64>,
}

/// A term as a list of them holds it: [`Term`] with its fields comparable.
#[derive(Clone, PartialEq, Eq, Hash)]
struct TermKey(Str, u32, bool);

impl Writer<'_> {
    fn string(&mut self, s: &str) -> Str {
        self.tables.string(s)
    }

    /// An extra MSR as its index + 1 in `EXTRA_MSRS` (0: none).
    fn extra(&mut self, extra: Option<counterhal_hal::ExtraMsr>) -> u16 {
        let Some(e) = extra else { return 0 };
        let address = u16::try_from(e.address()).expect("an extra register's address fits 16 bits");
        short(self.extras.add((address, e.value)) + 1, "the extra MSRs")
    }

    /// A register-bit value as its index + 1 in `WORDS` (0: none).
    fn word(&mut self, word: Option<u64>) -> u16 {
        word.map_or(0, |w| {
            short(self.words.add(w) + 1, "the register-bit values")
        })
    }

    /// A list of strings, as the range of `STRINGS` it takes.
    fn list(&mut self, items: &[String]) -> (u16, u16) {
        let items: Vec<Str> = items.iter().map(|item| self.string(item)).collect();
        self.strings.add(items)
    }

    /// A counter set as its index in `COUNTER_SETS`.
    fn counter_set(&mut self, mask: u32) -> u8 {
        u8::try_from(self.counter_sets.add(mask)).expect("at most 256 counter sets")
    }

    /// An event string as `spec_text` writes it, which must read back to the same event (the
    /// build refuses a model whose mapping or alias it could not give back exactly).
    fn spec(&mut self, model: &str, spec: &EventSpec) -> Str {
        let text = spec_text(spec);
        match parse_event(&text) {
            Ok(ParsedEvent::Named(again)) if again == *spec => {}
            other => panic!(
                "model `{model}`: the event `{text}` does not read back as {spec:?} but as {other:?}"
            ),
        }
        self.string(&text)
    }

    /// A generalized event or preset by its name, which must name it back.
    fn generalized(&mut self, event: GeneralizedEvent) -> Str {
        let name = event.name();
        assert_eq!(
            GeneralizedEvent::from_name(&name),
            Some(event),
            "`{name}` does not name {event:?} back"
        );
        self.string(&name)
    }

    /// A unit mask's row, as its index in `MASKS`.
    fn mask(&mut self, mask: &UnitMask) -> u16 {
        let class = match mask.class {
            UnitMaskClass::Plain => 0,
            UnitMaskClass::CacheState => 1,
            UnitMaskClass::AnyInitiator => 2,
        };
        let flags = [
            mask.default,
            mask.edge,
            mask.invert,
            mask.precise,
            mask.deprecated,
            mask.any_thread,
            mask.combine.alone_in_group,
            mask.combine.excludes_later_groups,
            mask.combine.excludes_other_groups,
            mask.combine.group_may_be_empty,
            mask.event_code.is_some(),
            mask.counters.is_some(),
        ]
        .iter()
        .enumerate()
        .fold(class << 12, |bits, (i, &set)| bits | u16::from(set) << i);
        let rare = fixed(mask.fixed) != u8::MAX
            || mask.event_code.is_some()
            || mask.counters.is_some()
            || !mask.same_as.is_empty()
            || !mask.description.is_empty();
        let rare = if rare {
            let row = MaskRare {
                description: self.string(&mask.description),
                counters: mask.counters.map_or(0, |c| c.mask()),
                event_code: mask.event_code.unwrap_or(0),
                same_as: self.list(&mask.same_as),
                fixed: fixed(mask.fixed),
            };
            short(self.mask_rare.add(&row) + 1, "the unit masks' rare rows")
        } else {
            0
        };
        let row = Mask {
            name: self.string(&mask.name),
            flags,
            extra: self.extra(mask.extra),
            extra_bits: self.word(mask.extra_bits),
            rare,
            code: mask.code,
            cmask: mask.cmask,
            group: mask.group,
            umask2: mask.umask2,
        };
        short(self.masks.add(&row), "a unit mask's index")
    }

    /// A native event's row, as its index in `EVENTS`.
    fn event(&mut self, event: &NativeEvent) -> u16 {
        let masks: Vec<u16> = event.unit_masks().iter().map(|m| self.mask(m)).collect();
        let masks = self.mask_lists.add(masks);
        let f = &event.flags;
        let flags = [
            f.umask_required,
            f.mesi,
            f.any_initiator,
            f.exclusive,
            f.precise,
            f.deprecated,
            f.any_thread,
        ]
        .iter()
        .enumerate()
        .fold(0u8, |bits, (i, &set)| bits | u8::from(set) << i);
        let row = Event {
            name: self.string(&event.name),
            code: event.code,
            extra: self.extra(event.extra),
            masks,
            base_umask: event.base_umask,
            fixed: fixed(event.fixed),
            flags,
            counters: self.counter_set(event.counters.mask()),
        };
        if event.description.is_empty() {
            return short(self.events.add(&row), "an event's index");
        }
        // Two events alike but for their descriptions are two rows.
        let description = self.string(&event.description);
        let count = self.events.len();
        let index = self.events.add_keyed(&row, &description.0.to_le_bytes());
        let index = short(index, "an event's index");
        if usize::from(index) == count {
            self.event_descriptions.push((index, description));
        }
        index
    }

    /// Model `model`'s body, as one `Body` row.
    fn body(&mut self, model: &CpuModel) -> Body {
        let events: Vec<u16> = model.events().iter().map(|e| self.event(e)).collect();
        let events = self.event_lists.add(events);
        let mut mappings = Vec::new();
        for mapping in model.mappings() {
            let mut terms = Vec::new();
            for (sign, factor, spec) in &mapping.terms {
                let spec = self.spec(&model.id, spec);
                let minus = *sign == Sign::Minus;
                terms.push(TermKey(spec, *factor, minus));
            }
            let terms = self.terms.add(terms);
            let papi = match &mapping.papi {
                Some(form) => {
                    let row = Papi {
                        derived: self.string(&form.derived),
                        postfix: form.postfix.as_ref().map(|p| self.string(p)),
                        natives: self.list(&form.natives),
                    };
                    self.papi.add(&row) + 1
                }
                None => 0,
            };
            let row = MappingRow {
                event: self.generalized(mapping.event),
                expression: self.string(&mapping.expression),
                papi: short(papi, "the PAPI forms"),
                terms,
            };
            mappings.push(short(self.mappings.add(&row), "a mapping's index"));
        }
        let mappings = self.mapping_lists.add(mappings);
        let first_refused = self.refused.len();
        for (event, why) in model.refused_presets() {
            let row = (self.generalized(*event), self.string(why));
            self.refused.push(row);
        }
        let refused = (
            short(first_refused, "the refused presets"),
            short(model.refused_presets().len(), "a model's refused presets"),
        );
        let mut aliases: Vec<(&String, &EventSpec)> = model.event_aliases.iter().collect();
        aliases.sort_by(|a, b| a.0.cmp(b.0));
        let aliases: Vec<u16> = aliases
            .into_iter()
            .map(|(key, target)| {
                let row = (self.string(key), self.spec(&model.id, target));
                short(self.aliases.add(&row), "an alias's index")
            })
            .collect();
        let aliases = self.alias_lists.add(aliases);
        Body {
            events,
            mappings,
            refused,
            aliases,
        }
    }
}

/// The files `data/shipped.list` names, in order: each one's name (`events/data/...`) and
/// text.
pub(crate) fn files(data: &Path) -> Vec<(String, String)> {
    let read = |path: &Path| {
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    read(&data.join("shipped.list"))
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|name| (format!("events/data/{name}"), read(&data.join(name))))
        .collect()
}

/// Every shipped model: the files (name and text) loaded in order by the library's loader,
/// each over the ones before (an overlay changes the model its generated table made), as
/// `Database::with_toml_str` loads a user's file over the shipped models.
pub(crate) fn load(files: &[(String, String)]) -> Vec<CpuModel> {
    let mut models: Vec<CpuModel> = Vec::new();
    for (name, text) in files {
        let source = Source { name, text };
        if let Err(e) = load_file(&mut models, &mut Layer::default(), &source) {
            panic!("{e}");
        }
    }
    assert!(
        models.iter().all(|m| !m.events().is_empty()),
        "events/data: a shipped model without events"
    );
    models
}

/// The shipped index (part `catalog`, `INDEX`: each model's header as an [`IndexedModel`]
/// row, in match order) with the tables its rows name: `INDEX_STRINGS` (the aliases), `RULES` (the match
/// rules) and `RANGES` (their number sets, as inclusive ranges), each list once.
pub(crate) fn index(models: &[CpuModel], tables: &mut Tables<Catalog>) {
    let (mut strings, mut rules, mut ranges) =
        (Lists::default(), Lists::default(), Lists::default());
    let mut rows = Vec::new();
    let byte = |n: u32, what: &str| {
        u8::try_from(n).unwrap_or_else(|_| panic!("a model's {what} is {n}: past its byte"))
    };
    for model in models {
        let mut model_rules = Vec::new();
        for rule in model.match_rules() {
            let vendor = rule.vendor.name();
            assert_eq!(
                crate::cpu::Vendor::from_cpuid(vendor),
                rule.vendor,
                "model `{}`: vendor `{vendor}` does not name itself back",
                model.id
            );
            let mut set = |numbers: &crate::model::NumberSet| ranges.add(numbers.ranges.clone());
            model_rules.push(IndexedRuleKey(
                tables.string(vendor),
                set(&rule.family),
                set(&rule.model),
                set(&rule.stepping),
            ));
        }
        let aliases = model.aliases.iter().map(|a| tables.string(a)).collect();
        let encoder = EncoderKind::ALL
            .iter()
            .position(|&e| e == model.encoder)
            .expect("every encoder is in EncoderKind::ALL");
        let pmu = &model.pmu;
        rows.push(IndexedModel {
            id: tables.string(&model.id),
            description: tables.string(&model.description),
            aliases: strings.add(aliases),
            rules: rules.add(model_rules),
            pmu: [
                byte(pmu.general_counters, "general counters"),
                byte(pmu.counter_width, "counter width"),
                byte(pmu.fixed_counters, "fixed counters"),
                byte(pmu.fixed_width, "fixed counters' width"),
            ],
            kind: [
                u8::try_from(encoder).expect("a handful of encoders"),
                pmu.tsx.map_or(0, |tsx| 1 + u8::from(tsx)),
                u8::from(model.hybrid.is_some()),
                model.hybrid.map_or(0, |h| h.core_type),
            ],
            native_model: model
                .hybrid
                .and_then(|h| h.native_model)
                .unwrap_or(u32::MAX),
        });
    }
    let rules: Vec<IndexedRule> = rules
        .items
        .into_iter()
        .map(
            |IndexedRuleKey(vendor, family, model, stepping)| IndexedRule {
                vendor,
                family,
                model,
                stepping,
            },
        )
        .collect();
    tables.section("INDEX", &rows);
    tables.section("INDEX_STRINGS", &strings.items);
    tables.section("RULES", &rules);
    tables.section("RANGES", &ranges.items);
}

/// A match rule as a list of them holds it: [`IndexedRule`] with its fields comparable.
#[derive(Clone, PartialEq, Eq, Hash)]
struct IndexedRuleKey(
    crate::table::Str<Catalog>,
    (u16, u16),
    (u16, u16),
    (u16, u16),
);

/// Every model's body (`models` in the shipped index's order) and the tables they name.
pub(crate) fn write(models: &[CpuModel], tables: &mut Tables<Models>) {
    let mut w = Writer {
        tables,
        events: Rows::default(),
        event_lists: Lists::default(),
        event_descriptions: Vec::new(),
        counter_sets: Values::default(),
        masks: Rows::default(),
        mask_lists: Lists::default(),
        mask_rare: Rows::default(),
        mappings: Rows::default(),
        mapping_lists: Lists::default(),
        papi: Rows::default(),
        terms: Lists::default(),
        refused: Vec::new(),
        aliases: Rows::default(),
        alias_lists: Lists::default(),
        strings: Lists::default(),
        extras: Values::default(),
        words: Values::default(),
    };
    let bodies: Vec<Body> = models.iter().map(|model| w.body(model)).collect();
    let Writer {
        tables,
        events,
        event_lists,
        mut event_descriptions,
        counter_sets,
        masks,
        mask_lists,
        mask_rare,
        mappings,
        mapping_lists,
        papi,
        terms,
        refused,
        aliases,
        alias_lists,
        strings,
        extras,
        words,
    } = w;
    tables.rows("EVENTS", events);
    tables.section("EVENT_LISTS", &event_lists.items);
    event_descriptions.sort_by_key(|&(event, _)| event);
    tables.section("EVENT_DESCRIPTIONS", &event_descriptions);
    tables.section("COUNTER_SETS", &counter_sets.values);
    tables.rows("MASKS", masks);
    tables.section("MASK_LISTS", &mask_lists.items);
    tables.rows("MASK_RARE", mask_rare);
    tables.rows("MAPPINGS", mappings);
    tables.section("MAPPING_LISTS", &mapping_lists.items);
    tables.rows("PAPI", papi);
    let terms: Vec<Term> = (terms.items.into_iter())
        .map(|TermKey(event, factor, minus)| Term {
            event,
            factor,
            minus,
        })
        .collect();
    tables.section("TERMS", &terms);
    tables.section("REFUSED", &refused);
    tables.rows("ALIASES", aliases);
    tables.section("ALIAS_LISTS", &alias_lists.items);
    tables.section("STRINGS", &strings.items);
    let msrs: Vec<u16> = extras.values.iter().map(|e| e.0).collect();
    tables.section("EXTRA_MSRS", &msrs);
    let values: Vec<u64> = extras.values.iter().map(|e| e.1).collect();
    tables.section("EXTRA_VALUES", &values);
    tables.section("WORDS", &words.values);
    tables.section("BODIES", &bodies);
}
