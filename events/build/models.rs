//! The shipped CPU models in their compiled-in form: each model's files (`data/shipped.list`)
//! loaded by the library's own loader (`src/loader/`, with the modules it needs, included by
//! build.rs), exactly as a user's file is loaded, and the models' events, unit masks,
//! mappings, refused presets and event aliases written as static Rust data
//! (`OUT_DIR/models.rs`, read by `src/compiled.rs`), every row once however many models have
//! it, in records of a few bytes:
//!
//! - strings as `Str`s of the one pool (`build/pool.rs`);
//! - `EVENTS` and `MASKS`: every native event and unit mask once (the same event on two models
//!   is one row), a model's events a range of `EVENT_LISTS` (indices of `EVENTS`), an event's
//!   unit masks a range of `MASK_LISTS` (indices of `MASKS`); what few unit masks have (a
//!   fixed counter, an event code or counters of their own, other names, a description) is a
//!   row of `MASK_RARE`, and the counter sets events name are `COUNTER_SETS`; the events'
//!   descriptions are `EVENT_DESCRIPTIONS`, by event;
//! - `MAPPINGS` (a model's: a range of `MAPPING_LISTS`), their `PAPI` forms and `TERMS` (each
//!   term's event string as `spec_text` writes it, which the build checks reads back to the
//!   same event), `REFUSED` (the presets refused and why), `ALIASES` (a model's: a range of
//!   `ALIAS_LISTS`) and `STRINGS` (lists of strings), each list written once;
//! - `EXTRA_MSRS` and `EXTRA_VALUES` (the extra MSRs, each once), `WORDS` (register bits);
//! - `BODIES`: one per model, in `SHIPPED_INDEX`'s order.
//!
//! A file the loader refuses fails the build with the loader's own message.

use std::fmt::Write as _;

use counterhal_hal::{GeneralizedEvent, Sign};

use crate::loader::{Layer, Source, load_file};
use crate::model::{CpuModel, NativeEvent, UnitMask, UnitMaskClass, spec_text};
use crate::parse::{EventSpec, ParsedEvent, parse_event};
use crate::pool::Pool;
use crate::rows::{Lists, Rows, Values, short};

/// A range of a table, as a record writes it.
fn range((start, length): (u16, u16)) -> String {
    format!("({start}, {length})")
}

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
#[derive(Default)]
struct Writer {
    pool: Pool,
    events: Rows,
    event_lists: Lists<usize>,
    event_descriptions: Vec<(usize, String)>,
    counter_sets: Values<u32>,
    masks: Rows,
    mask_lists: Lists<usize>,
    mask_rare: Rows,
    mappings: Rows,
    mapping_lists: Lists<usize>,
    papi: Rows,
    terms: Lists<String>,
    refused: Vec<String>,
    aliases: Rows,
    alias_lists: Lists<usize>,
    strings: Lists<String>,
    /// Extra MSRs (address and value), each once; a row names one by its index + 1 (0: none).
    extras: Values<(u16, u64)>,
    /// Register-bit values, each once; a row names one by its index + 1 (0: none).
    words: Values<u64>,
}

impl Writer {
    fn string(&mut self, s: &str) -> String {
        self.pool.string(s)
    }

    /// An extra MSR as its index + 1 in `EXTRA_MSRS` (0: none).
    fn extra(&mut self, extra: Option<counterhal_hal::ExtraMsr>) -> u16 {
        let Some(e) = extra else { return 0 };
        let msr = u16::try_from(e.msr).expect("an extra MSR's address fits 16 bits");
        short(self.extras.add((msr, e.value)) + 1, "the extra MSRs")
    }

    /// A register-bit value as its index + 1 in `WORDS` (0: none).
    fn word(&mut self, word: Option<u64>) -> u16 {
        word.map_or(0, |w| {
            short(self.words.add(w) + 1, "the register-bit values")
        })
    }

    /// A list of strings, as the range of `STRINGS` it takes.
    fn list(&mut self, items: &[String]) -> String {
        let items: Vec<String> = items.iter().map(|item| self.string(item)).collect();
        range(self.strings.add(items))
    }

    /// A counter set as its index in `COUNTER_SETS`.
    fn counter_set(&mut self, mask: u32) -> u8 {
        u8::try_from(self.counter_sets.add(mask)).expect("at most 256 counter sets")
    }

    /// An event string as `spec_text` writes it, which must read back to the same event (the
    /// build refuses a model whose mapping or alias it could not give back exactly).
    fn spec(&mut self, model: &str, spec: &EventSpec) -> String {
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
    fn generalized(&mut self, event: GeneralizedEvent) -> String {
        let name = event.name();
        assert_eq!(
            GeneralizedEvent::from_name(&name),
            Some(event),
            "`{name}` does not name {event:?} back"
        );
        self.string(&name)
    }

    /// A unit mask's row, as its index in `MASKS`.
    fn mask(&mut self, mask: &UnitMask) -> usize {
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
            let row = format!(
                "MaskRare {{ description: {}, counters: {}, event_code: {}, same_as: {}, fixed: {} }}",
                self.string(&mask.description),
                mask.counters.map_or(0, |c| c.mask()),
                mask.event_code.unwrap_or(0),
                self.list(&mask.same_as),
                fixed(mask.fixed),
            );
            short(self.mask_rare.add(row) + 1, "the unit masks' rare rows")
        } else {
            0
        };
        let row = format!(
            "Mask {{ name: {}, flags: {flags}, extra: {}, extra_bits: {}, rare: {rare}, code: {}, cmask: {}, group: {}, umask2: {} }}",
            self.string(&mask.name),
            self.extra(mask.extra),
            self.word(mask.extra_bits),
            mask.code,
            mask.cmask,
            mask.group,
            mask.umask2,
        );
        self.masks.add(row)
    }

    /// A native event's row, as its index in `EVENTS`.
    fn event(&mut self, event: &NativeEvent) -> usize {
        let masks: Vec<usize> = event.unit_masks().iter().map(|m| self.mask(m)).collect();
        let masks = range(self.mask_lists.add(masks));
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
        let row = format!(
            "Event {{ name: {}, code: {}, extra: {}, masks: {masks}, base_umask: {}, fixed: {}, flags: {flags}, counters: {} }}",
            self.string(&event.name),
            event.code,
            self.extra(event.extra),
            event.base_umask,
            fixed(event.fixed),
            self.counter_set(event.counters.mask()),
        );
        if event.description.is_empty() {
            return self.events.add(row);
        }
        // Two events alike but for their descriptions are two rows.
        let description = self.string(&event.description);
        let count = self.events.rows.len();
        let index = self.events.add_keyed(format!("{row} {description}"), row);
        if index == count {
            self.event_descriptions.push((index, description));
        }
        index
    }

    /// Model `model`'s body, as one `Body` row.
    fn body(&mut self, model: &CpuModel) -> String {
        let events: Vec<usize> = model.events().iter().map(|e| self.event(e)).collect();
        let events = range(self.event_lists.add(events));
        let mut mappings = Vec::new();
        for mapping in model.mappings() {
            let mut terms = Vec::new();
            for (sign, factor, spec) in &mapping.terms {
                let spec = self.spec(&model.id, spec);
                let minus = *sign == Sign::Minus;
                terms.push(format!(
                    "Term {{ event: {spec}, factor: {factor}, minus: {minus} }}"
                ));
            }
            let terms = range(self.terms.add(terms));
            let papi = match &mapping.papi {
                Some(form) => {
                    let postfix = match &form.postfix {
                        Some(p) => format!("Some({})", self.string(p)),
                        None => "None".into(),
                    };
                    let row = format!(
                        "Papi {{ derived: {}, postfix: {postfix}, natives: {} }}",
                        self.string(&form.derived),
                        self.list(&form.natives)
                    );
                    self.papi.add(row) + 1
                }
                None => 0,
            };
            let row = format!(
                "MappingRow {{ event: {}, expression: {}, papi: {}, terms: {terms} }}",
                self.generalized(mapping.event),
                self.string(&mapping.expression),
                short(papi, "the PAPI forms"),
            );
            mappings.push(self.mappings.add(row));
        }
        let mappings = range(self.mapping_lists.add(mappings));
        let first_refused = self.refused.len();
        for (event, why) in model.refused_presets() {
            let row = format!("({}, {})", self.generalized(*event), self.string(why));
            self.refused.push(row);
        }
        let refused = format!(
            "({}, {})",
            short(first_refused, "the refused presets"),
            short(model.refused_presets().len(), "a model's refused presets")
        );
        let mut aliases: Vec<(&String, &EventSpec)> = model.event_aliases.iter().collect();
        aliases.sort_by(|a, b| a.0.cmp(b.0));
        let aliases: Vec<usize> = aliases
            .into_iter()
            .map(|(key, target)| {
                let row = format!("({}, {})", self.string(key), self.spec(&model.id, target));
                self.aliases.add(row)
            })
            .collect();
        let aliases = range(self.alias_lists.add(aliases));
        format!(
            "Body {{ events: {events}, mappings: {mappings}, refused: {refused}, aliases: {aliases} }}"
        )
    }
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

/// The shipped index (`SHIPPED_INDEX`: each model's header as an `IndexedModel` row, in
/// match order) with the tables its rows name: `INDEX_STRINGS` (the aliases), `RULES` (the
/// match rules) and `RANGES` (their number sets, as inclusive ranges), each list once; its
/// strings placeholders of `pool`.
pub(crate) fn index(models: &[CpuModel], pool: &mut Pool) -> String {
    let (mut strings, mut rules, mut ranges) =
        (Lists::default(), Lists::default(), Lists::default());
    let mut rows = Vec::new();
    for model in models {
        let mut model_rules = Vec::new();
        for rule in model.match_rules() {
            let vendor = rule.vendor.name();
            assert_eq!(
                crate::Vendor::from_cpuid(vendor),
                rule.vendor,
                "model `{}`: vendor `{vendor}` does not name itself back",
                model.id
            );
            let mut set = |numbers: &crate::model::NumberSet| {
                let items = numbers.ranges.iter().map(|r| format!("{r:?}")).collect();
                range(ranges.add(items))
            };
            let (family, cpu_model, stepping) =
                (set(&rule.family), set(&rule.model), set(&rule.stepping));
            model_rules.push(format!(
                "IndexedRule {{ vendor: {}, family: {family}, model: {cpu_model}, stepping: {stepping} }}",
                pool.string(vendor),
            ));
        }
        let aliases = model.aliases.iter().map(|a| pool.string(a)).collect();
        let hybrid = match model.hybrid {
            Some(h) => format!("Some(({}, {:?}))", h.core_type, h.native_model),
            None => "None".into(),
        };
        rows.push(format!(
            "IndexedModel {{ id: {:?}, description: {}, aliases: {}, encoder: EncoderKind::{:?}, rules: {}, pmu: {:?}, hybrid: {hybrid} }}",
            model.id,
            pool.string(&model.description),
            range(strings.add(aliases)),
            model.encoder,
            range(rules.add(model_rules)),
            model.pmu,
        ));
    }
    let mut out = String::new();
    let table = |out: &mut String, name: &str, kind: &str, rows: &[String]| {
        writeln!(out, "static {name}: [{kind}; {}] = [", rows.len()).unwrap();
        for row in rows {
            writeln!(out, "    {row},").unwrap();
        }
        out.push_str("];\n\n");
    };
    out.push_str("/// Each shipped model's header, as the loader made it, in match order.\n");
    table(&mut out, "SHIPPED_INDEX", "IndexedModel", &rows);
    table(&mut out, "INDEX_STRINGS", "Str", &strings.items);
    table(&mut out, "RULES", "IndexedRule", &rules.items);
    table(&mut out, "RANGES", "(u32, u32)", &ranges.items);
    out
}

/// Every model's body (`models` in the shipped index's order) as `OUT_DIR/models.rs`'s text,
/// its strings placeholders of `pool`.
pub(crate) fn write(models: &[CpuModel], pool: &mut Pool) -> String {
    let mut w = Writer {
        pool: std::mem::take(pool),
        ..Writer::default()
    };
    let bodies: Vec<String> = models.iter().map(|model| w.body(model)).collect();
    *pool = std::mem::take(&mut w.pool);
    let mut out = String::from(
        "// Generated by events/build.rs (build/models.rs) from the files events/data/shipped.list names.\n\n",
    );
    let table = |out: &mut String, name: &str, kind: &str, rows: &[String]| {
        writeln!(out, "static {name}: [{kind}; {}] = [", rows.len()).unwrap();
        for row in rows {
            writeln!(out, "    {row},").unwrap();
        }
        out.push_str("];\n\n");
    };
    let numbers = |items: &[usize], what: &str| -> Vec<String> {
        items.iter().map(|&i| short(i, what).to_string()).collect()
    };
    table(&mut out, "EVENTS", "Event", &w.events.rows);
    table(
        &mut out,
        "EVENT_LISTS",
        "u16",
        &numbers(&w.event_lists.items, "an event's index"),
    );
    let mut descriptions = w.event_descriptions.clone();
    descriptions.sort();
    let descriptions: Vec<String> = descriptions
        .iter()
        .map(|(i, d)| format!("({}, {d})", short(*i, "an event's index")))
        .collect();
    table(&mut out, "EVENT_DESCRIPTIONS", "(u16, Str)", &descriptions);
    let sets: Vec<String> = w
        .counter_sets
        .values
        .iter()
        .map(|m| format!("{m:#x}"))
        .collect();
    table(&mut out, "COUNTER_SETS", "u32", &sets);
    table(&mut out, "MASKS", "Mask", &w.masks.rows);
    table(
        &mut out,
        "MASK_LISTS",
        "u16",
        &numbers(&w.mask_lists.items, "a unit mask's index"),
    );
    table(&mut out, "MASK_RARE", "MaskRare", &w.mask_rare.rows);
    table(&mut out, "MAPPINGS", "MappingRow", &w.mappings.rows);
    table(
        &mut out,
        "MAPPING_LISTS",
        "u16",
        &numbers(&w.mapping_lists.items, "a mapping's index"),
    );
    table(&mut out, "PAPI", "Papi", &w.papi.rows);
    table(&mut out, "TERMS", "Term", &w.terms.items);
    table(&mut out, "REFUSED", "(Str, Str)", &w.refused);
    table(&mut out, "ALIASES", "(Str, Str)", &w.aliases.rows);
    table(
        &mut out,
        "ALIAS_LISTS",
        "u16",
        &numbers(&w.alias_lists.items, "an alias's index"),
    );
    table(&mut out, "STRINGS", "Str", &w.strings.items);
    let msrs: Vec<String> = w
        .extras
        .values
        .iter()
        .map(|e| format!("{:#x}", e.0))
        .collect();
    table(&mut out, "EXTRA_MSRS", "u16", &msrs);
    let values: Vec<String> = w
        .extras
        .values
        .iter()
        .map(|e| format!("{:#x}", e.1))
        .collect();
    table(&mut out, "EXTRA_VALUES", "u64", &values);
    let words: Vec<String> = w.words.values.iter().map(|v| format!("{v:#x}")).collect();
    table(&mut out, "WORDS", "u64", &words);
    table(&mut out, "BODIES", "Body", &bodies);
    out
}
