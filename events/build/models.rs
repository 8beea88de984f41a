//! The shipped CPU models in their compiled-in form: each model's files (`data/shipped.list`)
//! loaded by the library's own loader (`src/loader/`, with the modules it needs, included by
//! build.rs), exactly as a user's file is loaded, and the models' events, unit masks,
//! mappings, refused presets and event aliases written as static Rust data
//! (`OUT_DIR/models.rs`, read by `src/compiled.rs`):
//!
//! - `POOL`: every string once, each a `Str(offset, length)` into it;
//! - `EVENTS` and `MASKS`: every native event and unit mask once (the same event on two models
//!   is one row), a model's events a range of `EVENT_LISTS` (indices of `EVENTS`), an event's
//!   unit masks a range of `MASK_LISTS` (indices of `MASKS`);
//! - `MAPPINGS`, `TERMS`, `REFUSED`, `ALIASES`, `STRINGS`: the mappings with their terms (each
//!   term's event string as `spec_text` writes it, which the build checks reads back to the
//!   same event), the presets refused and why, the event aliases, and the lists of strings;
//! - `BODIES`: one per model, in `SHIPPED_INDEX`'s order.
//!
//! A file the loader refuses fails the build with the loader's own message.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use counterhal_hal::{GeneralizedEvent, Sign};

use crate::loader::{Layer, Source, load_file};
use crate::model::{CpuModel, UnitMaskClass, spec_text};
use crate::parse::{EventSpec, ParsedEvent, parse_event};

/// Every string once, and the rows of each table written so far.
#[derive(Default)]
struct Writer {
    pool: String,
    strings: HashMap<String, (u32, u32)>,
    events: Vec<String>,
    masks: Vec<String>,
    mappings: Vec<String>,
    terms: Vec<String>,
    refused: Vec<String>,
    aliases: Vec<String>,
    lists: Vec<String>,
    /// Extra MSRs (address and value), each once; a row names one by its index + 1 (0: none).
    extras: Vec<(u32, u64)>,
    /// Register-bit values, each once; a row names one by its index + 1 (0: none).
    words: Vec<u64>,
    /// Each unit-mask row written, with its index in `masks`: an event's unit masks are a list
    /// of indices (`mask_indices`), so a unit mask several events have alike is written once.
    mask_rows: HashMap<String, usize>,
    mask_indices: Vec<usize>,
    /// Each list of unit masks written, by its indices, with where it starts in
    /// `mask_indices`: an event whose unit masks are another's shares the list.
    mask_lists: HashMap<Vec<usize>, usize>,
    /// Each event row written, with its index in `events`: a model's events are a list of
    /// indices (`event_lists`), so an event two models have alike is written once.
    event_rows: HashMap<String, usize>,
    event_lists: Vec<usize>,
}

fn index(n: usize) -> u32 {
    u32::try_from(n).expect("the compiled-in models stay below 4 GiB")
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

impl Writer {
    fn string(&mut self, s: &str) -> String {
        let (offset, length) = match self.strings.get(s) {
            Some(&at) => at,
            None => {
                let at = (index(self.pool.len()), index(s.len()));
                self.pool.push_str(s);
                self.strings.insert(s.to_string(), at);
                at
            }
        };
        format!("Str({offset}, {length})")
    }

    /// An extra MSR as its index + 1 in `EXTRAS` (0: none).
    fn extra(&mut self, extra: Option<counterhal_hal::ExtraMsr>) -> usize {
        let Some(e) = extra else { return 0 };
        let pair = (e.msr, e.value);
        let at = match self.extras.iter().position(|&x| x == pair) {
            Some(at) => at,
            None => {
                self.extras.push(pair);
                self.extras.len() - 1
            }
        };
        assert!(at < usize::from(u16::MAX), "too many extra MSR values");
        at + 1
    }

    /// A register-bit value as its index + 1 in `WORDS` (0: none).
    fn word(&mut self, word: Option<u64>) -> usize {
        let Some(w) = word else { return 0 };
        let at = match self.words.iter().position(|&x| x == w) {
            Some(at) => at,
            None => {
                self.words.push(w);
                self.words.len() - 1
            }
        };
        assert!(at < usize::from(u16::MAX), "too many register-bit values");
        at + 1
    }

    /// A list of strings, as the range of `STRINGS` it takes.
    fn list(&mut self, items: &[String]) -> String {
        let start = self.lists.len();
        for item in items {
            let s = self.string(item);
            self.lists.push(s);
        }
        assert!(
            items.len() <= usize::from(u16::MAX),
            "a list of {} strings",
            items.len()
        );
        format!("({start}, {})", items.len())
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

    /// Model `model`'s body, as one `Body` row.
    fn body(&mut self, model: &CpuModel) -> String {
        let first_event = self.event_lists.len();
        for event in model.events() {
            let mut masks = Vec::with_capacity(event.unit_masks().len());
            for mask in event.unit_masks() {
                let class = match mask.class {
                    UnitMaskClass::Plain => "UnitMaskClass::Plain",
                    UnitMaskClass::CacheState => "UnitMaskClass::CacheState",
                    UnitMaskClass::AnyInitiator => "UnitMaskClass::AnyInitiator",
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
                .fold(0u16, |bits, (i, &set)| bits | u16::from(set) << i);
                let row = format!(
                    "Mask {{ name: {}, description: {}, code: {}, cmask: {}, group: {}, umask2: {}, flags: {flags}, class: {class}, fixed: {}, event_code: {}, counters: {}, extra: {}, extra_bits: {}, same_as: {} }}",
                    self.string(&mask.name),
                    self.string(&mask.description),
                    mask.code,
                    mask.cmask,
                    mask.group,
                    mask.umask2,
                    fixed(mask.fixed),
                    mask.event_code.unwrap_or(0),
                    mask.counters.map_or(0, |c| c.mask()),
                    self.extra(mask.extra),
                    self.word(mask.extra_bits),
                    self.list(&mask.same_as),
                );
                masks.push(row);
            }
            let indices: Vec<usize> = masks
                .into_iter()
                .map(|row| match self.mask_rows.get(&row) {
                    Some(&at) => at,
                    None => {
                        self.masks.push(row.clone());
                        self.mask_rows.insert(row, self.masks.len() - 1);
                        self.masks.len() - 1
                    }
                })
                .collect();
            let first_mask = match self.mask_lists.get(&indices) {
                Some(&start) => start,
                None => {
                    let start = self.mask_indices.len();
                    self.mask_indices.extend(&indices);
                    self.mask_lists.insert(indices, start);
                    start
                }
            };
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
            assert!(event.unit_masks().len() <= usize::from(u16::MAX));
            let row = format!(
                "Event {{ name: {}, description: {}, code: {}, base_umask: {}, counters: {}, fixed: {}, flags: {flags}, extra: {}, masks: ({first_mask}, {}) }}",
                self.string(&event.name),
                self.string(&event.description),
                event.code,
                event.base_umask,
                event.counters.mask(),
                fixed(event.fixed),
                self.extra(event.extra),
                event.unit_masks().len(),
            );
            let at = match self.event_rows.get(&row) {
                Some(&at) => at,
                None => {
                    self.events.push(row.clone());
                    self.event_rows.insert(row, self.events.len() - 1);
                    self.events.len() - 1
                }
            };
            self.event_lists.push(at);
        }
        let first_mapping = self.mappings.len();
        for mapping in model.mappings() {
            let first_term = self.terms.len();
            for (sign, factor, spec) in &mapping.terms {
                let spec = self.spec(&model.id, spec);
                let minus = *sign == Sign::Minus;
                self.terms.push(format!(
                    "Term {{ minus: {minus}, factor: {factor}, event: {spec} }}"
                ));
            }
            let papi = match &mapping.papi {
                Some(form) => {
                    let postfix = match &form.postfix {
                        Some(p) => format!("Some({})", self.string(p)),
                        None => "None".into(),
                    };
                    format!(
                        "Some(Papi {{ derived: {}, postfix: {postfix}, natives: {} }})",
                        self.string(&form.derived),
                        self.list(&form.natives)
                    )
                }
                None => "None".into(),
            };
            let row = format!(
                "MappingRow {{ event: {}, expression: {}, papi: {papi}, terms: ({first_term}, {}) }}",
                self.generalized(mapping.event),
                self.string(&mapping.expression),
                mapping.terms.len()
            );
            self.mappings.push(row);
        }
        let first_refused = self.refused.len();
        for (event, why) in model.refused_presets() {
            let row = format!("({}, {})", self.generalized(*event), self.string(why));
            self.refused.push(row);
        }
        let first_alias = self.aliases.len();
        let mut aliases: Vec<(&String, &EventSpec)> = model.event_aliases.iter().collect();
        aliases.sort_by(|a, b| a.0.cmp(b.0));
        for (key, target) in aliases {
            let row = format!("({}, {})", self.string(key), self.spec(&model.id, target));
            self.aliases.push(row);
        }
        format!(
            "Body {{ events: ({first_event}, {}), mappings: ({first_mapping}, {}), refused: ({first_refused}, {}), aliases: ({first_alias}, {}) }}",
            model.events().len(),
            model.mappings().len(),
            model.refused_presets().len(),
            model.event_aliases.len()
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

/// A model's header as an `IndexedModel` row of the shipped index.
pub(crate) fn header(model: &CpuModel) -> String {
    let rules: Vec<String> = model
        .match_rules()
        .iter()
        .map(|rule| {
            let vendor = rule.vendor.name();
            assert_eq!(
                crate::Vendor::from_cpuid(vendor),
                rule.vendor,
                "model `{}`: vendor `{vendor}` does not name itself back",
                model.id
            );
            format!(
                "IndexedRule {{ vendor: {vendor:?}, family: &{:?}, model: &{:?}, stepping: &{:?} }}",
                rule.family.ranges, rule.model.ranges, rule.stepping.ranges
            )
        })
        .collect();
    let hybrid = match model.hybrid {
        Some(h) => format!("Some(({}, {:?}))", h.core_type, h.native_model),
        None => "None".into(),
    };
    format!(
        "IndexedModel {{ id: {:?}, description: {:?}, aliases: &{:?}, encoder: EncoderKind::{:?}, rules: &[{}], pmu: {:?}, hybrid: {hybrid} }}",
        model.id,
        model.description,
        model.aliases,
        model.encoder,
        rules.join(", "),
        model.pmu,
    )
}

/// Writes every model's body (`models` in the shipped index's order) to `OUT_DIR/models.rs`.
pub(crate) fn write(models: &[CpuModel], out_dir: &Path) {
    let mut w = Writer::default();
    let bodies: Vec<String> = models.iter().map(|model| w.body(model)).collect();
    let mut out = String::from(
        "// Generated by events/build.rs (build/models.rs) from the files events/data/shipped.list names.\n\n",
    );
    writeln!(out, "static POOL: &str = {:?};\n", w.pool).unwrap();
    let table = |out: &mut String, name: &str, kind: &str, rows: &[String]| {
        writeln!(out, "static {name}: [{kind}; {}] = [", rows.len()).unwrap();
        for row in rows {
            writeln!(out, "    {row},").unwrap();
        }
        out.push_str("];\n\n");
    };
    table(&mut out, "EVENTS", "Event", &w.events);
    table(&mut out, "MASKS", "Mask", &w.masks);
    let indices: Vec<String> = w.mask_indices.iter().map(|i| i.to_string()).collect();
    table(&mut out, "MASK_LISTS", "u32", &indices);
    let lists: Vec<String> = w.event_lists.iter().map(|i| i.to_string()).collect();
    table(&mut out, "EVENT_LISTS", "u32", &lists);
    table(&mut out, "MAPPINGS", "MappingRow", &w.mappings);
    table(&mut out, "TERMS", "Term", &w.terms);
    table(&mut out, "REFUSED", "(Str, Str)", &w.refused);
    table(&mut out, "ALIASES", "(Str, Str)", &w.aliases);
    table(&mut out, "STRINGS", "Str", &w.lists);
    let extras: Vec<String> = w.extras.iter().map(|e| format!("{e:?}")).collect();
    table(&mut out, "EXTRAS", "(u32, u64)", &extras);
    let words: Vec<String> = w.words.iter().map(|v| format!("{v:#x}")).collect();
    table(&mut out, "WORDS", "u64", &words);
    table(&mut out, "BODIES", "Body", &bodies);
    let target = out_dir.join("models.rs");
    std::fs::write(&target, out).unwrap_or_else(|e| panic!("{}: {e}", target.display()));
}
