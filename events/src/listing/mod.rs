//! The events a backend offers here, as `counterhal list` shows them and a tool lists them
//! (PAPI's `papi_avail` and `papi_native_avail`, libpfm4's `showevtinfo`): by section, with
//! the encoding each name resolves to and whether this process can count it, and why not;
//! each native event with its unit masks and the fields of their encodings ([`fields`]).

pub mod fields;

use crate::database::Database;
use crate::model::{CpuModel, NativeEvent, UnitMask};
use counterhal_hal::BackendExt;
use counterhal_hal::{
    Backend, BackendTarget, Countable, GeneralizedEvent, ResolvedEvent, Sign, countable_form,
};

use fields::{data_fields, resolved_fields};

/// Where a listed event comes from.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Section {
    /// perf's generalized hardware events (`cycles`, `instructions`, ...).
    Hardware,
    /// perf's software events (`task-clock`, `page-faults`, ...).
    Software,
    /// perf's generalized cache events (`L1-dcache-load-misses`, ...).
    Cache,
    /// PAPI's presets (`PAPI_TOT_CYC`, ...).
    Preset,
    /// The CPU model's own events, from the event database.
    Native,
    /// The CPU model's events its source marks deprecated: they still resolve, listed apart.
    Deprecated,
    /// Names only this backend knows, from what the OS exposes (tracepoints, dynamic PMUs).
    Backend,
}

impl Section {
    /// The section's name as the command prints it: `hardware`, `software`, `cache`,
    /// `preset`, `native`, `deprecated`, `backend`.
    pub fn name(self) -> &'static str {
        match self {
            Section::Hardware => "hardware",
            Section::Software => "software",
            Section::Cache => "cache",
            Section::Preset => "preset",
            Section::Native => "native",
            Section::Deprecated => "deprecated",
            Section::Backend => "backend",
        }
    }
}

/// One event as listed.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// Where it comes from.
    pub section: Section,
    /// Its canonical name.
    pub name: String,
    /// What it counts, in a few words (empty where the source gives none).
    pub description: String,
    /// What the name resolves to on the backend (derived events as `A + B` or `A - B`);
    /// `None` where it does not resolve there, and where the listing was asked to write no
    /// encodings ([`ListOptions::encodings`]) and the event has a description.
    pub encoding: Option<String>,
    /// Whether the name resolves on the backend (whether or not its encoding was written).
    pub resolves: bool,
    /// Whether this process can count it for its own thread here.
    pub usable: bool,
    /// Why it cannot be counted, or how it is counted instead (user space only where the OS
    /// refuses counting the kernel).
    pub reason: Option<String>,
    /// Whether the event (or one of its unit masks) can be sampled precisely (Intel PEBS:
    /// perf's `:p`, `:pp`).
    pub precise: bool,
    /// Other spellings that resolve to it or to one of its unit masks (libpfm4's, perf's
    /// names kept as aliases in the event database); not listed as events of their own.
    pub aliases: Vec<String>,
    /// A native event's fields in the event database, whichever backend lists it
    /// ([`fields::fields_text`]): `event=0xc4` for an event that needs a unit mask, the
    /// fields it resolves to alone otherwise (`event=0x3c umask=0x00 fixed=1`); `None` for the
    /// other sections.
    pub fields: Option<String>,
    /// A native event's unit masks, in the event database's order: all of them, or where the
    /// pattern matches none of the event's names but some of its unit masks', those. Empty for
    /// the other sections and for events without unit masks.
    pub unit_masks: Vec<ListedUnitMask>,
}

/// One unit mask of a listed native event.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedUnitMask {
    /// The name as typed: `EVENT.UNIT_MASK` (`BR_INST_RETIRED.ALL_BRANCHES`).
    pub name: String,
    /// What it counts, in a few words (empty where the source gives none).
    pub description: String,
    /// The fields it resolves to in the event database, whichever backend lists it
    /// ([`fields::fields_text`]): `event=0xc4 umask=0x04`, with the filter bits and extra MSR
    /// where set.
    pub fields: String,
    /// What the name resolves to on the backend (the same form as [`Listed::encoding`]);
    /// `None` where it does not resolve there, where no backend works here, and where the
    /// listing was asked to write no encodings ([`ListOptions::encodings`]).
    pub encoding: Option<String>,
    /// Why the backend does not resolve it (`None` where it does, where no backend works
    /// here: the event's reason says why, and where the listing was not asked to resolve unit
    /// masks).
    pub reason: Option<String>,
    /// Whether it applies when the event is named without a unit mask.
    pub default: bool,
    /// Whether it can be sampled precisely (Intel PEBS).
    pub precise: bool,
    /// Whether its source marks it deprecated (it still resolves).
    pub deprecated: bool,
}

/// What a listing writes out beyond each event's name, section, description and fields and
/// whether it counts here. [`ListOptions::new`] is everything (what `counterhal list --json`
/// shows); a text listing, which shows no encoding, skips writing the encodings of thousands
/// of tracepoints and resolving each of a model's hundreds of unit masks on the backend.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListOptions {
    /// Whether what each name resolves to on the backend is written out: [`Listed::encoding`]
    /// and each unit mask's [`ListedUnitMask::encoding`] and [`ListedUnitMask::reason`].
    /// Without, events are still resolved and opened (to tell whether they count here, and
    /// why not), [`Listed::resolves`] says whether they resolved, an event's encoding is
    /// written only where it has no description (to stand in its place), and unit masks are
    /// not resolved on the backend (their encoding and reason are `None`; their fields come
    /// from the event database either way).
    pub encodings: bool,
}

impl ListOptions {
    /// Everything written out.
    pub const fn new() -> Self {
        Self { encodings: true }
    }

    /// The same, with the encodings written out or not ([`ListOptions::encodings`]).
    pub const fn with_encodings(self, encodings: bool) -> Self {
        Self { encodings }
    }
}

impl Default for ListOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// `event`'s encoding on one line: its natives joined by their signs, each after its factor
/// where it has one (`a + 2 * b`).
pub fn encoding_text(event: &ResolvedEvent) -> String {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(64);
    for (i, term) in event.terms.iter().enumerate() {
        match (i, term.sign) {
            (0, Sign::Plus) => {}
            (0, Sign::Minus) => text.push('-'),
            (_, Sign::Plus) => text.push_str(" + "),
            (_, Sign::Minus) => text.push_str(" - "),
        }
        if term.factor != 1 {
            _ = write!(text, "{} * ", term.factor);
        }
        _ = write!(text, "{}", term.request.encoding);
    }
    text
}

/// Every event `backend` offers under CPU model `model` of `database` whose name or description
/// contains `pattern` (case-insensitive; empty: every event), in section order. Without a
/// backend (none works here) the events are listed unusable, with `unusable` as the reason.
///
/// Native events carry their fields and unit masks ([`Listed::fields`],
/// [`Listed::unit_masks`]): all of an event's unit masks where the pattern matches the event's
/// name, description or an alias; else those whose name (`EVENT.UNIT_MASK`, or libpfm4's
/// `EVENT:UNIT_MASK`) or description matches, the event listed with those alone.
///
/// Telling whether an event is usable opens it for the calling thread and closes it at once;
/// a backend's own names (thousands of tracepoints) are marked usable when they resolve,
/// without opening them.
pub fn list_events<B: Backend + ?Sized>(
    database: &Database,
    model: Option<&str>,
    backend: Result<&B, &str>,
    pattern: &str,
) -> Vec<Listed> {
    list_events_with(database, model, backend, pattern, ListOptions::new())
}

/// [`list_events`] working out what `options` asks for ([`ListOptions`]).
pub fn list_events_with<B: Backend + ?Sized>(
    database: &Database,
    model: Option<&str>,
    backend: Result<&B, &str>,
    pattern: &str,
    options: ListOptions,
) -> Vec<Listed> {
    let pattern = pattern.to_ascii_lowercase();
    let matches = |name: &str, description: &str| {
        pattern.is_empty()
            || name.to_ascii_lowercase().contains(&pattern)
            || description.to_ascii_lowercase().contains(&pattern)
    };
    let mut listed = Vec::new();
    for event in GeneralizedEvent::all() {
        let (section, description) = match event {
            GeneralizedEvent::Hardware(_) => (Section::Hardware, "perf generalized hardware event"),
            GeneralizedEvent::Software(_) => (Section::Software, "perf software event"),
            GeneralizedEvent::Cache(_) => (Section::Cache, "perf generalized cache event"),
            GeneralizedEvent::Preset(p) => (Section::Preset, p.description()),
        };
        let name = event.name().into_owned();
        if matches(&name, description) {
            listed.push(entry(
                backend,
                section,
                (name, description.into()),
                None,
                true,
                options,
            ));
        }
    }
    if let Some(model) = model.and_then(|id| database.model(id)) {
        let mut deprecated = Vec::new();
        for event in model.events() {
            let aliases = model.aliases_of(event);
            let whole =
                matches(&event.name, &event.description) || aliases.iter().any(|a| matches(a, ""));
            // A pattern that matches no name of the event may match some of its unit masks:
            // the event is listed with those.
            let masks: Vec<&UnitMask> = event
                .unit_masks()
                .iter()
                .filter(|mask| {
                    whole
                        || matches(&unit_mask_name(event, mask), &mask.description)
                        || matches(&format!("{}:{}", event.name, mask.name), "")
                })
                .collect();
            if !whole && masks.is_empty() {
                continue;
            }
            let (name, description) = (event.name.clone(), event.description.clone());
            let section = if event.flags.deprecated {
                Section::Deprecated
            } else {
                Section::Native
            };
            let mut item = entry(backend, section, (name, description), None, true, options);
            item.aliases = aliases.into_iter().map(str::to_string).collect();
            item.precise = event.flags.precise || event.unit_masks().iter().any(|u| u.precise);
            item.fields = Some(
                resolved_fields(database, model, &event.name)
                    .unwrap_or_else(|| data_fields(event, None)),
            );
            item.unit_masks = masks
                .into_iter()
                .map(|mask| {
                    let backend = backend.map(|b| Some(b).filter(|_| options.encodings));
                    unit_mask_entry(database, model, backend, event, mask)
                })
                .collect();
            match section {
                Section::Deprecated => deprecated.push(item),
                _ => listed.push(item),
            }
        }
        listed.append(&mut deprecated);
    }
    if let Ok(backend) = backend {
        for own in backend.own_events() {
            if matches(&own.name, &own.description) {
                listed.push(entry(
                    Ok(backend),
                    Section::Backend,
                    (own.name, own.description),
                    own.resolved,
                    false,
                    options,
                ));
            }
        }
    }
    listed
}

/// The name `mask` of `event` is typed as: `EVENT.UNIT_MASK`.
fn unit_mask_name(event: &NativeEvent, mask: &UnitMask) -> String {
    let mut name = String::with_capacity(event.name.len() + 1 + mask.name.len());
    name.push_str(&event.name);
    name.push('.');
    name.push_str(&mask.name);
    name
}

/// One unit mask of a listed native event: its fields in the event database, and what it
/// resolves to on the backend (not opened: a model's thousands of unit masks would each cost a
/// system call); `Ok(None)` for a backend not asked to resolve it ([`ListOptions`]).
fn unit_mask_entry<B: Backend + ?Sized>(
    database: &Database,
    model: &CpuModel,
    backend: Result<Option<&B>, &str>,
    event: &NativeEvent,
    mask: &UnitMask,
) -> ListedUnitMask {
    let name = unit_mask_name(event, mask);
    let fields =
        resolved_fields(database, model, &name).unwrap_or_else(|| data_fields(event, Some(mask)));
    let (encoding, reason) = match backend {
        Ok(Some(backend)) => match backend.resolve(&name) {
            Ok(resolved) => (Some(encoding_text(&resolved)), None),
            Err(e) => (None, Some(e.to_string())),
        },
        Ok(None) | Err(_) => (None, None),
    };
    ListedUnitMask {
        name,
        description: mask.description.clone(),
        fields,
        encoding,
        reason,
        default: mask.default,
        precise: mask.precise,
        deprecated: mask.deprecated,
    }
}

/// One listed event: resolved, and (when `open` says so) opened to tell whether it counts;
/// its encoding written as `options` say.
fn entry<B: Backend + ?Sized>(
    backend: Result<&B, &str>,
    section: Section,
    (name, description): (String, String),
    found: Option<ResolvedEvent>,
    open: bool,
    options: ListOptions,
) -> Listed {
    let mut listed = Listed {
        section,
        name,
        description,
        encoding: None,
        resolves: false,
        usable: false,
        reason: None,
        precise: false,
        aliases: Vec::new(),
        fields: None,
        unit_masks: Vec::new(),
    };
    let backend = match backend {
        Ok(backend) => backend,
        Err(unusable) => {
            listed.reason = Some(unusable.to_string());
            return listed;
        }
    };
    // What the backend found in listing it, else what the name resolves to.
    let event = match found.map_or_else(|| backend.resolve(&listed.name), Ok) {
        Ok(event) => event,
        Err(e) => {
            listed.reason = Some(e.to_string());
            return listed;
        }
    };
    listed.resolves = true;
    if options.encodings || listed.description.is_empty() {
        listed.encoding = Some(encoding_text(&event));
    }
    if !open {
        listed.usable = true;
        return listed;
    }
    match countable_form(backend, &event, &BackendTarget::ThisThread) {
        Ok(Countable {
            kernel_refused: None,
            ..
        }) => listed.usable = true,
        Ok(Countable {
            event,
            kernel_refused: Some(refused),
        }) => {
            listed.usable = true;
            listed.reason = Some(format!(
                "counts user space only here, as {}: {}",
                event.user_space_name(),
                refused.hint().unwrap_or(refused.message())
            ));
        }
        Err(e) => listed.reason = Some(e.to_string()),
    }
    listed
}
