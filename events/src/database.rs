//! The database of CPU models: the shipped ones (rows of the shipped tables, each made on first use), users' files on top, and
//! lookup by id and by CPU. Resolution of event strings is in `resolve`.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use counterhal_hal::{Error, GeneralizedEvent, Result};

use crate::built::{feature_built, feature_of};
#[cfg(feature = "events-file")]
use crate::loader::{Layer, ModelSet, Source, load_file};
use crate::model::{CpuModel, EncoderKind, MatchRule, NumberSet, PmuDescription};
use crate::table::{Catalog, Models, Table};

/// A string of this module's part of the shipped tables.
type Str = crate::table::Str<Models>;
use crate::cpu::{CpuIdentity, HybridCore, Vendor};
use crate::suggest;

/// A string of the index (part `catalog`, in every build).
type Index = crate::table::Str<Catalog>;

crate::table::row! {
    /// A shipped model's header as `counterhal-gen tables` loaded it from its files: its
    /// aliases a range of `INDEX_STRINGS`, its match rules of `RULES`; the index is part
    /// `catalog`, in every build, so that a model a build leaves out is named.
    struct IndexedModel {
        id: Index,
        description: Index,
        aliases: (u16, u16),
        rules: (u16, u16),
        /// [`PmuDescription`]'s counts and widths, in its fields' order.
        pmu: [u8; 4],
        /// Its encoder (its index in [`EncoderKind::ALL`]), [`PmuDescription::tsx`] (0 for
        /// none, 1 for false, 2 for true), and a hybrid chip's core: 1 and its core type, or
        /// 0 for none.
        kind: [u8; 4],
        /// The hybrid core's native model, `u32::MAX` for none.
        native_model: u32,
    }
}

crate::table::row! {
    /// A match rule: vendor and number sets as inclusive ranges (a range of `RANGES`; none:
    /// any).
    struct IndexedRule {
        vendor: Index,
        family: (u16, u16),
        model: (u16, u16),
        stepping: (u16, u16),
    }
}

/// The shipped data files, in load order, as `events/data/shipped.list` lists them (their
/// content is in the shipped tables, loaded; none in a build without a model feature). Each
/// describes one CPU model and gives its header keys (`id`, `description`, `aliases`,
/// `encoder`, `match`, `pmu`, `hybrid`) before its events and mappings. A generated table (`generated/ID.toml`) is followed by its generated presets
/// and its hand-written overlay (`ID.toml`, the same id), or by an overlay several models
/// share, which lists their ids (`k8.toml`).
pub fn shipped_files() -> Vec<&'static str> {
    crate::table::table!(Models, Str, "FILES")
        .iter()
        .map(Str::text)
        .collect()
}

/// The shipped models' headers, in match order.
fn index() -> Table<IndexedModel> {
    crate::table::table!(Catalog, "INDEX")
}

impl IndexedModel {
    /// Whether `name` is one of its aliases (case-insensitive).
    fn has_alias(&self, name: &str) -> bool {
        crate::table::table!(Catalog, Index, "INDEX_STRINGS")
            .range(self.aliases)
            .iter()
            .any(|a| a.eq_ignore_ascii_case(name))
    }

    fn aliases(&self) -> impl Iterator<Item = &'static str> {
        crate::table::table!(Catalog, Index, "INDEX_STRINGS")
            .range(self.aliases)
            .iter()
            .map(Index::text)
    }

    fn rules(&self) -> impl Iterator<Item = IndexedRule> {
        crate::table::table!(Catalog, IndexedRule, "RULES")
            .range(self.rules)
            .iter()
    }

    fn encoder(&self) -> EncoderKind {
        EncoderKind::ALL
            .get(usize::from(self.kind[0]))
            .copied()
            .unwrap_or(EncoderKind::IntelArch)
    }

    fn pmu(&self) -> PmuDescription {
        let [general_counters, counter_width, fixed_counters, fixed_width] = self.pmu;
        PmuDescription {
            general_counters: u32::from(general_counters),
            counter_width: u32::from(counter_width),
            fixed_counters: u32::from(fixed_counters),
            fixed_width: u32::from(fixed_width),
            tsx: match self.kind[1] {
                0 => None,
                tsx => Some(tsx == 2),
            },
        }
    }

    /// The header it describes.
    fn header(&self) -> CpuModel {
        let ranges = crate::table::table!(Catalog, (u32, u32), "RANGES");
        let set = |range| NumberSet {
            ranges: ranges.range(range).iter().collect(),
        };
        CpuModel {
            id: self.id.text().to_string(),
            description: self.description.text().to_string(),
            aliases: self.aliases().map(str::to_string).collect(),
            encoder: self.encoder(),
            pmu: self.pmu(),
            hybrid: self.hybrid(),
            rules: self
                .rules()
                .map(|r| MatchRule {
                    vendor: Vendor::from_cpuid(r.vendor.text()),
                    family: set(r.family),
                    model: set(r.model),
                    stepping: set(r.stepping),
                })
                .collect(),
            events: Vec::new(),
            index: Default::default(),
            mappings: Vec::new(),
            refused_presets: Vec::new(),
            event_aliases: Default::default(),
        }
    }

    /// Whether its match rules accept `cpu` (as [`CpuModel::matches`] on its header).
    fn matches(&self, cpu: &CpuIdentity) -> bool {
        let ranges = crate::table::table!(Catalog, (u32, u32), "RANGES");
        let within = |range, value| {
            let mut rows = ranges.range(range).iter().peekable();
            rows.peek().is_none() || rows.any(|(low, high)| (low..=high).contains(&value))
        };
        self.rules().any(|r| {
            Vendor::from_cpuid(r.vendor.text()) == cpu.vendor
                && within(r.family, cpu.family)
                && within(r.model, cpu.model)
                && within(r.stepping, cpu.stepping)
        })
    }

    fn hybrid(&self) -> Option<HybridCore> {
        let native_model = (self.native_model != u32::MAX).then_some(self.native_model);
        (self.kind[2] == 1).then_some(HybridCore {
            core_type: self.kind[3],
            native_model,
        })
    }
}

/// The Cargo feature of this crate that brings the shipped CPU model `id` (an id or an
/// alias, case-insensitive) back, when this build leaves that model out (`x86-models`,
/// `arm-models`); `None` for a model this build holds or no shipped model has.
pub fn left_out_model(id: &str) -> Option<&'static str> {
    index()
        .iter()
        .find(|model| model.id.eq_ignore_ascii_case(id) || model.has_alias(id))
        .map(|model| feature_of(model.encoder()))
        .filter(|feature| !feature_built(feature))
}

/// What to say of a CPU model `id` the database lacks: "unknown CPU model `id`", or, for a
/// shipped model this build leaves out, that it is left out and the feature that brings it;
/// for a CPU signature or MIDR, that no model matches that CPU (rather than another model's
/// tables standing in for it).
pub fn unknown_model_message(id: &str) -> String {
    if let Some(feature) = left_out_model(id) {
        return format!(
            "CPU model `{id}` is left out of this build: it needs the `{feature}` feature \
             (of counterhal, or of counterhal-events)"
        );
    }
    match CpuIdentity::from_signature_with_core(id) {
        Some((cpu, _)) => format!(
            "no CPU model of the event database matches `{id}` ({cpu}): counterhal has no \
             event table for this CPU (`counterhal list --models` says what each model matches)"
        ),
        None => format!("unknown CPU model `{id}`"),
    }
}

/// The environment variable naming an extra events file.
pub const EVENTS_ENV: &str = "COUNTERHAL_EVENTS";

/// The event database: the shipped CPU models plus any user file.
///
/// The shipped models are rows of the shipped tables (`events/data/tables/`, which
/// `counterhal-gen tables` loads from the models' files): their headers (id, description,
/// encoder, match rules, PMU) are an index, which is enough for [`Database::detect_core_id`],
/// [`Database::model_id`] and listing ids; a model's events and mappings are made from its
/// rows when it is first asked for (no file is read or parsed). Users' files are parsed and
/// validated in full when they are loaded.
#[derive(Clone, Debug, Default)]
pub struct Database {
    models: Arc<Vec<Entry>>,
}

/// One model of a [`Database`].
#[derive(Clone, Debug)]
enum Entry {
    /// A shipped model, parsed in full on first use (shared by every clone of the database).
    Shipped(Arc<ShippedModel>),
    /// A model parsed in full (a user's, or a shipped one a user's file changed).
    Loaded(Box<CpuModel>),
}

impl Entry {
    /// Id, description, encoder, match rules and PMU (events may be missing).
    fn header(&self) -> &CpuModel {
        match self {
            Entry::Shipped(shipped) => shipped.header(),
            Entry::Loaded(model) => model,
        }
    }

    /// Its id (read from the index for a shipped model: nothing is made).
    fn id(&self) -> &str {
        match self {
            Entry::Shipped(shipped) => shipped.indexed.id.text(),
            Entry::Loaded(model) => &model.id,
        }
    }

    /// Whether its id is `name` (case-insensitive; a shipped id of another length is told
    /// apart without reading its text).
    fn is_named(&self, name: &str) -> bool {
        match self {
            Entry::Shipped(shipped) => shipped.indexed.id.eq_ignore_ascii_case(name),
            Entry::Loaded(model) => model.id.eq_ignore_ascii_case(name),
        }
    }

    /// Whether `name` is one of its aliases (case-insensitive).
    fn has_alias(&self, name: &str) -> bool {
        match self {
            Entry::Shipped(shipped) => shipped.indexed.has_alias(name),
            Entry::Loaded(model) => model.aliases.iter().any(|a| a.eq_ignore_ascii_case(name)),
        }
    }

    /// Whether its match rules accept `cpu`.
    fn matches(&self, cpu: &CpuIdentity) -> bool {
        match self {
            Entry::Shipped(shipped) => shipped.indexed.matches(cpu),
            Entry::Loaded(model) => model.matches(cpu),
        }
    }

    /// The hybrid core it serves.
    fn hybrid(&self) -> Option<HybridCore> {
        match self {
            Entry::Shipped(shipped) => shipped.indexed.hybrid(),
            Entry::Loaded(model) => model.hybrid,
        }
    }

    /// The whole model (parsing a shipped one on first use).
    fn model(&self) -> &CpuModel {
        match self {
            Entry::Shipped(shipped) => shipped.model(),
            Entry::Loaded(model) => model,
        }
    }
}

/// A shipped model: its index entry, its header (made on first use) and its full content
/// (made once from its rows).
#[derive(Clone, Debug)]
struct ShippedModel {
    /// Its place in the shipped index (and among the bodies).
    index: usize,
    indexed: IndexedModel,
    header: OnceLock<CpuModel>,
    full: OnceLock<CpuModel>,
}

impl ShippedModel {
    /// The header, made from the index on the first call.
    fn header(&self) -> &CpuModel {
        self.header.get_or_init(|| self.indexed.header())
    }

    /// Whether the model, not yet made whole, has no native event and no event alias named
    /// `name`: `None` once it is made (look in it then).
    fn spells_not(&self, name: &str) -> Option<bool> {
        if self.full.get().is_some() {
            return None;
        }
        Some(!crate::compiled::model_spells(self.index, name))
    }

    /// The full model, made from its body's rows on the first call.
    fn model(&self) -> &CpuModel {
        self.full
            .get_or_init(|| crate::compiled::model(self.index, self.header()))
    }
}

/// The entry of model `id` made a loaded one (a shipped model's full content copied: a file
/// or a description changing it changes this database's copy alone), by index.
fn loaded_position(models: &mut [Entry], id: &str) -> Option<usize> {
    let index = models.iter().position(|e| e.is_named(id))?;
    if let Entry::Shipped(shipped) = &models[index] {
        models[index] = Entry::Loaded(Box::new(shipped.model().clone()));
    }
    Some(index)
}

/// Entry `index`, a shipped one made a loaded one first (parsed in full) to be changed.
fn loaded_mut(models: &mut [Entry], index: usize) -> &mut CpuModel {
    if let Entry::Shipped(shipped) = &models[index] {
        models[index] = Entry::Loaded(Box::new(shipped.model().clone()));
    }
    match &mut models[index] {
        Entry::Loaded(model) => model,
        Entry::Shipped(_) => unreachable!("the entry was made a loaded one just above"),
    }
}

#[cfg(feature = "events-file")]
impl ModelSet for Vec<Entry> {
    fn count(&self) -> usize {
        self.len()
    }

    fn id(&self, index: usize) -> &str {
        match &self[index] {
            Entry::Shipped(shipped) => shipped.indexed.id.text(),
            Entry::Loaded(model) => &model.id,
        }
    }

    fn push(&mut self, model: CpuModel) -> usize {
        Vec::push(self, Entry::Loaded(Box::new(model)));
        self.len() - 1
    }

    fn get_mut(&mut self, index: usize) -> &mut CpuModel {
        loaded_mut(self, index)
    }
}

static SHIPPED: OnceLock<std::result::Result<Database, Error>> = OnceLock::new();

impl Database {
    /// The database shipped inside the library (parsed once per process, then shared).
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] if the shipped data is malformed, which
    /// the crate's tests rule out.
    pub fn shipped() -> Result<Database> {
        SHIPPED.get_or_init(Database::parse_shipped).clone()
    }

    /// Makes the shipped database afresh (what [`Database::shipped`] caches): the models'
    /// headers now, from the shipped tables' index (no TOML parsed), each model's events and
    /// mappings made from its rows when it is first used.
    ///
    /// # Errors
    /// As [`Database::shipped`].
    pub fn parse_shipped() -> Result<Database> {
        if !crate::built::MODELS_BUILT {
            return Ok(Database::default());
        }
        let models = index()
            .iter()
            .enumerate()
            .filter(|(_, indexed)| feature_built(feature_of(indexed.encoder())))
            .map(|(index, indexed)| {
                Entry::Shipped(Arc::new(ShippedModel {
                    index,
                    indexed,
                    header: OnceLock::new(),
                    full: OnceLock::new(),
                }))
            })
            .collect();
        Ok(Database {
            models: Arc::new(models),
        })
    }

    /// A database made of one `events.toml` text alone (no shipped data).
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] naming `name:line:column` and the key.
    pub fn from_toml_str(name: &str, text: &str) -> Result<Database> {
        Database::default().with_toml_str(name, text)
    }

    /// This database extended by an `events.toml` text: new model ids add CPUs, known ids
    /// override fields, events (by name) and mappings (by key).
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] naming `name:line:column` and the key:
    /// malformed TOML, unknown keys, duplicate names, codes out of range for the encoder,
    /// unknown counters, a mapping naming a missing native, an unknown encoder, a model id used
    /// twice, a text past one of the [`limits`](crate::limits) (its tokens counted before it
    /// is parsed, what it loads before it is loaded), naming the limit.
    ///
    /// [`counterhal_hal::ErrorKind::Unsupported`] in a build without the `events-file`
    /// feature, which holds no TOML reader, naming the feature.
    pub fn with_toml_str(self, name: &str, text: &str) -> Result<Database> {
        #[cfg(feature = "events-file")]
        {
            let mut models = Arc::unwrap_or_clone(self.models);
            load_file(&mut models, &mut Layer::default(), &Source { name, text })?;
            Ok(Database {
                models: Arc::new(models),
            })
        }
        #[cfg(not(feature = "events-file"))]
        {
            let _ = (self, text);
            Err(Error::unsupported(format!(
                "{name}: reading an events file needs the `events-file` feature (of counterhal, \
                 or of counterhal-events), which this build leaves out"
            )))
        }
    }

    /// The shipped database extended by a user file (adds CPUs, overrides events).
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] naming file:line:column and the key, or
    /// for a file that cannot be read; as [`Database::with_toml_str`] in a build without the
    /// `events-file` feature, the file left unread (what it holds cannot change the answer).
    pub fn with_user_file(self, path: &Path) -> Result<Database> {
        let name = path.display().to_string();
        if !cfg!(feature = "events-file") {
            return self.with_toml_str(&name, "");
        }
        let text = read_events_file(path)?;
        self.with_toml_str(&name, &text)
    }

    /// The shipped database, then the file named by `COUNTERHAL_EVENTS` (if set and not
    /// empty), then `user_file`.
    ///
    /// # Errors
    /// As [`Database::with_user_file`].
    pub fn load(user_file: Option<&Path>) -> Result<Database> {
        let mut database = Database::shipped()?;
        if let Some(path) = std::env::var_os(EVENTS_ENV).filter(|p| !p.is_empty()) {
            database = database
                .with_user_file(Path::new(&path))
                .map_err(|e| e.context(format_args!("{EVENTS_ENV}")))?;
        }
        if let Some(path) = user_file {
            database = database.with_user_file(path)?;
        }
        Ok(database)
    }

    /// Whether this build can hold a CPU model: shipped (`x86-models`, `arm-models`) or a
    /// user's (`events-file`). Where it cannot, detecting the CPU for a model is in vain.
    pub const fn may_hold_models() -> bool {
        crate::built::MODELS_BUILT
    }

    /// The models as the compiler sees them: none where the build can hold none, so that the
    /// code reading, detecting and naming models leaves such a build's binary.
    fn entries(&self) -> &[Entry] {
        let held = self.models.len() * usize::from(Database::may_hold_models());
        &self.models[..held]
    }

    /// Every CPU model, in match order (parsing each shipped model not used yet).
    pub fn models(&self) -> impl Iterator<Item = &CpuModel> {
        self.entries().iter().map(Entry::model)
    }

    /// Whether model `id` is a shipped one not yet made whole that has no native event and no
    /// event alias named `name`; false where it is made, loaded, or unknown.
    pub(crate) fn model_spells_not(&self, id: &str, name: &str) -> bool {
        match self.entry(id) {
            Some(Entry::Shipped(shipped)) => shipped.spells_not(name).unwrap_or(false),
            _ => false,
        }
    }

    /// The model with this id or alias (case-insensitive), or the model perf's CPU signature
    /// `Vendor-Family-Model[-Stepping]` detects (`GenuineIntel-6-8F-8` is `spr`; see
    /// [`CpuIdentity::from_signature`]), or the model a name of [`model_aliases`] means (perf's
    /// directory names, `zen4`, `icelake-server`).
    ///
    /// [`model_aliases`]: crate::model_aliases
    pub fn model(&self, id: &str) -> Option<&CpuModel> {
        self.entry(id).map(Entry::model)
    }

    /// The id of the model [`Database::model`] gives for `id`, read from the headers alone
    /// (no model's events are parsed).
    pub fn model_id(&self, id: &str) -> Option<&str> {
        self.entry(id).map(Entry::id)
    }

    /// The entry for an id, an alias or a CPU signature.
    fn entry(&self, id: &str) -> Option<&Entry> {
        if !Database::may_hold_models() {
            return None;
        }
        self.entries()
            .iter()
            .find(|e| e.is_named(id))
            .or_else(|| self.entries().iter().find(|e| e.has_alias(id)))
            .or_else(|| {
                let (cpu, core) = CpuIdentity::from_signature_with_core(id)?;
                self.detect_entry(&cpu, core.as_ref())
            })
            .or_else(|| self.entry(crate::model_aliases::model_for_alias(id)?))
    }

    /// The first model whose match rules accept `cpu`.
    pub fn detect(&self, cpu: &CpuIdentity) -> Option<&CpuModel> {
        self.entries()
            .iter()
            .find(|e| e.matches(cpu))
            .map(Entry::model)
    }

    /// The model for `cpu` on the core `core` of a hybrid chip (CPUID leaf 0x1A of the CPU
    /// the thread runs on): the first model whose match rules accept `cpu` and that serves
    /// that core; the first that accepts `cpu` when none does or `core` is `None` (on a hybrid
    /// chip, its performance cores' table).
    pub fn detect_core(&self, cpu: &CpuIdentity, core: Option<&HybridCore>) -> Option<&CpuModel> {
        self.detect_entry(cpu, core).map(Entry::model)
    }

    /// The id of the model [`Database::detect_core`] gives, read from the headers alone (no
    /// model's events are parsed).
    pub fn detect_core_id(&self, cpu: &CpuIdentity, core: Option<&HybridCore>) -> Option<&str> {
        self.detect_entry(cpu, core).map(Entry::id)
    }

    fn detect_entry(&self, cpu: &CpuIdentity, core: Option<&HybridCore>) -> Option<&Entry> {
        let mut matching = self.entries().iter().filter(|e| e.matches(cpu));
        let first = matching.clone().next();
        core.and_then(|core| {
            matching.find(|e| {
                e.hybrid()
                    .is_some_and(|h| core.served_by(h.core_type, h.native_model))
            })
        })
        .or(first)
    }

    /// The id of the model that serves the other core of model `id`'s hybrid chip: the first
    /// model for core type `core_type` ([`HybridCore::ATOM`], [`HybridCore::CORE`]) whose match
    /// rules accept a CPU that `id`'s accept (`adl_grt` for `adl_glc` and the Atom cores);
    /// `id`'s own id where it serves `core_type`; `None` where `id` names no model of a hybrid
    /// core or no model serves that core of its chip. Reads the headers alone.
    pub fn hybrid_sibling_id(&self, id: &str, core_type: u8) -> Option<&str> {
        let entry = self.entry(id)?;
        let own = entry.hybrid()?;
        if own.core_type == core_type {
            return Some(entry.id());
        }
        let rules = &entry.header().rules;
        self.entries()
            .iter()
            .filter(|e| e.hybrid().is_some_and(|h| h.core_type == core_type))
            .find(|e| {
                e.header()
                    .rules
                    .iter()
                    .any(|rule| rules.iter().any(|r| r.overlaps(rule)))
            })
            .map(Entry::id)
    }

    /// The models whose match rules accept `cpu`, in match order: more than one with a
    /// [`CpuModel::hybrid`] core each on a hybrid chip (one per kind of core).
    pub fn candidates(&self, cpu: &CpuIdentity) -> impl Iterator<Item = &CpuModel> {
        self.entries()
            .iter()
            .filter(move |e| e.matches(cpu))
            .map(Entry::model)
    }

    /// Why a `--cpu-model` signature picked its model, when the signature names a hybrid chip
    /// but not which core (`GenuineIntel-6-97-2`): the model picked and the signatures naming
    /// the others. `None` for ids and for signatures of chips with one kind of core.
    pub fn hybrid_note(&self, id: &str) -> Option<String> {
        let (cpu, None) = CpuIdentity::from_signature_with_core(id)? else {
            return None;
        };
        let headers: Vec<&CpuModel> = self
            .entries()
            .iter()
            .map(Entry::header)
            .filter(|m| m.matches(&cpu) && m.hybrid.is_some())
            .collect();
        let (picked, others) = headers.split_first()?;
        if others.is_empty() {
            return None;
        }
        let name = |m: &CpuModel| {
            let core = m.hybrid.unwrap_or(HybridCore {
                core_type: 0,
                native_model: None,
            });
            let suffix = if others
                .iter()
                .chain([picked])
                .filter(|o| o.hybrid.map(|h| h.core_type) == Some(core.core_type))
                .count()
                > 1
            {
                let native = core.native_model.unwrap_or(0);
                format!("0x{:08x}", (u32::from(core.core_type) << 24) | native)
            } else {
                core.type_name()
            };
            format!("`{}` ({id}-{suffix})", m.id)
        };
        Some(format!(
            "{id} is a hybrid chip: `{}` (core type {}) picked; name the core for the others: {}",
            picked.id,
            picked.hybrid.map(|h| h.type_name()).unwrap_or_default(),
            others
                .iter()
                .map(|m| name(m))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }

    /// The model `id` to change in place (a shipped one parsed in full first, this database's
    /// copy alone changed).
    pub(crate) fn model_mut(&mut self, id: &str) -> Result<Option<&mut CpuModel>> {
        let models = Arc::make_mut(&mut self.models);
        Ok(loaded_position(models, id).map(|index| loaded_mut(models, index)))
    }

    /// Every model id, in match order (no model is parsed in full for this).
    pub fn ids(&self) -> impl Iterator<Item = String> + '_ {
        self.entries().iter().map(|e| e.id().to_string())
    }

    /// Up to three known names nearest to `name`: native events of model `cpu` (when given
    /// and known), generalized events, presets and model ids.
    pub fn nearest_names(&self, cpu: Option<&str>, name: &str) -> Vec<String> {
        let model = cpu.and_then(|id| self.model(id));
        let natives = model
            .into_iter()
            .flat_map(|m| m.events.iter().map(|e| e.name.clone()));
        let generalized = GeneralizedEvent::all().map(|g| g.name().into_owned());
        suggest::nearest(name, natives.chain(generalized).chain(self.ids()), 3)
    }
}

/// The largest events file read: 48 times the shipped data's largest file (336 KB), a few
/// times what its strings then cost in memory (the other bounds are in [`crate::limits`]).
pub const MAX_EVENTS_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The text of the events file at `path`: a regular file (not a FIFO, which would wait for a
/// writer forever, nor a device such as `/dev/zero`, which never ends) of at most
/// [`MAX_EVENTS_FILE_BYTES`].
fn read_events_file(path: &Path) -> Result<String> {
    use std::io::Read;
    let cannot = |e: std::io::Error| {
        let error =
            Error::invalid_input(format!("cannot read events file {}: {e}", path.display()));
        match e.raw_os_error() {
            Some(errno) => error.with_errno(errno),
            None => error,
        }
    };
    let metadata = std::fs::metadata(path).map_err(cannot)?;
    if !metadata.is_file() {
        let kind = if metadata.is_dir() {
            "a directory"
        } else {
            "not a regular file (a FIFO, socket or device)"
        };
        return Err(
            Error::invalid_input(format!("events file {} is {kind}", path.display()))
                .with_hint("give the path of a TOML events file (see events/README.md)"),
        );
    }
    let too_big = || {
        Error::invalid_input(format!(
            "events file {} is larger than {} MiB",
            path.display(),
            MAX_EVENTS_FILE_BYTES >> 20
        ))
        .with_hint("an events file holds CPU models' events; split it or check the path")
    };
    if metadata.len() > MAX_EVENTS_FILE_BYTES {
        return Err(too_big());
    }
    // Read at most one byte more than the limit: a file that grows meanwhile is refused too.
    let mut text = String::new();
    std::fs::File::open(path)
        .map_err(cannot)?
        .take(MAX_EVENTS_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(cannot)?;
    if text.len() as u64 > MAX_EVENTS_FILE_BYTES {
        return Err(too_big());
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the data features keep and leave out (scripts/check-features runs this test in
    /// a build of each feature alone and of none): a model of an architecture left out is an
    /// unknown id whose message names the feature, and so are its metrics; metrics left out
    /// name `metrics`; the descriptions' reader left out names `descriptions`; a name that
    /// needs a model, with this machine's models left out, names their feature. In the
    /// default build all is there.
    #[test]
    fn parts_left_out_name_their_features() {
        let db = Database::shipped().unwrap();
        for (id, feature, built) in [
            ("skl", "x86-models", cfg!(feature = "x86-models")),
            ("neoverse-n1", "arm-models", cfg!(feature = "arm-models")),
        ] {
            if built {
                assert_eq!(db.model_id(id), Some(id));
                assert_eq!(left_out_model(id), None);
                // Without `metrics` (and the tables' writer) no metric is compiled at all.
                #[cfg(any(feature = "metrics", feature = "table-writer"))]
                match (
                    crate::metrics::shipped_metrics(id),
                    cfg!(feature = "metrics"),
                ) {
                    (Ok(table), true) => assert!(table.is_some(), "{id} has metrics"),
                    (Err(e), false) => assert!(e.message().contains("`metrics` feature"), "{e}"),
                    (result, _) => panic!("{id}'s metrics: {:?}", result.map(|_| ())),
                }
            } else {
                assert_eq!(db.model_id(id), None);
                assert_eq!(left_out_model(id), Some(feature));
                let message = unknown_model_message(id);
                assert!(
                    message.contains(&format!("`{feature}` feature")),
                    "{message}"
                );
                #[cfg(any(feature = "metrics", feature = "table-writer"))]
                {
                    let error = crate::metrics::shipped_metrics(id).unwrap_err();
                    assert!(error.message().contains(feature), "{error}");
                }
            }
        }
        // The reader of descriptions: without it, an error naming it before any file is read.
        let nowhere = Path::new("/no/such/directory");
        let model = db.ids().next();
        let said = match db
            .clone()
            .with_descriptions(model.as_deref().unwrap_or("none"), nowhere)
        {
            Err(e) => e.message().to_string(),
            Ok(_) => panic!("{} read", nowhere.display()),
        };
        let expected = match model {
            _ if !cfg!(feature = "descriptions") => "`descriptions` feature",
            Some(_) => "not a directory",
            None => "unknown CPU model",
        };
        assert!(said.contains(expected), "{said}");
        // The readers of the user's files: without them, an error naming their feature.
        let read = Database::from_toml_str("mine.toml", "[cpu]\nid = \"mine\"\n").map(|_| ());
        // A file named: refused as the text is, unread (it does not exist).
        let named = Database::shipped()
            .unwrap()
            .with_user_file(Path::new("/nonexistent/mine.toml"))
            .map(|_| ());
        // A metrics file: its reader is compiled with `metrics` alone.
        #[cfg(any(feature = "metrics", feature = "table-writer"))]
        let metrics = Some(
            crate::metrics::parse_metrics("mine-metrics.toml", "model = \"mine\"\n").map(|_| ()),
        );
        #[cfg(not(any(feature = "metrics", feature = "table-writer")))]
        let metrics: Option<Result<()>> = None;
        if cfg!(feature = "events-file") {
            if let Some(metrics) = metrics {
                assert!(metrics.is_ok(), "{metrics:?}");
            }
            let named = named.unwrap_err();
            assert!(
                named.message().contains("cannot read events file"),
                "{named}"
            );
        } else {
            let refused = [read, named].into_iter().chain(metrics);
            for error in refused.map(|r| r.unwrap_err()) {
                assert!(
                    error.message().contains("`events-file` feature")
                        && error.message().contains("mine"),
                    "{error}"
                );
            }
        }
        assert_eq!(left_out_model("no-such-model"), None);
        assert_eq!(
            unknown_model_message("no-such-model"),
            "unknown CPU model `no-such-model`"
        );
        // A native name or a preset with no model named or detected: where this build leaves
        // shipped models out (`features = ["linux"]` leaves out both), the hint names their
        // features, and a `--cpu-model` only where the build holds a model to name.
        let left_out = crate::built::models_left_out();
        for (name, accepts) in [
            ("INST_RETIRED.ANY_P", &crate::domain::tests::PERF),
            ("PAPI_TOT_INS", &crate::domain::tests::X86),
            ("PAPI_FP_OPS", &crate::domain::tests::PERF),
        ] {
            let refused = db.resolve_exact(None, name, accepts).unwrap_err();
            let hint = refused.hint().unwrap_or_default();
            for feature in &left_out {
                assert!(
                    hint.contains(&format!("`{feature}` feature")),
                    "{name}: {refused}"
                );
            }
            assert_eq!(
                hint.contains("--cpu-model"),
                left_out.len() < 2,
                "{name}: {refused}"
            );
        }
    }

    fn cpu(vendor: Vendor, family: u32, model: u32) -> CpuIdentity {
        CpuIdentity {
            vendor,
            family,
            model,
            stepping: 0,
        }
    }

    /// How many models the shipped files describe (an overlay adds none, nor does one that
    /// several models share, shipped after each).
    fn shipped_model_count() -> usize {
        let files = shipped_files();
        let shared = |name: &str| files.iter().filter(|n| **n == name).count() > 1;
        let mut ids: Vec<String> = files
            .iter()
            .filter(|name| !shared(name))
            .map(|name| {
                name.rsplit('/')
                    .next()
                    .unwrap_or(name)
                    .trim_end_matches(".toml")
                    .to_string()
            })
            .collect();
        ids.dedup();
        ids.len()
    }

    /// Oracle: the `toml` crate's parser, through the loader. Every shipped model, made from
    /// its rows, equals what one eager load of all the shipped files (read from
    /// the source tree) gives, header and all; the index gives each model's header.
    #[test]
    #[cfg(feature = "events-file")]
    fn every_shipped_model_is_what_its_files_load() {
        let mut eager: Vec<CpuModel> = Vec::new();
        for name in shipped_files() {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name);
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            // Each file a layer of its own: an overlay changes the model its generated table
            // made.
            load_file(
                &mut eager,
                &mut Layer::default(),
                &Source { name, text: &text },
            )
            .unwrap();
        }
        let db = Database::parse_shipped().unwrap();
        assert_eq!(db.models.len(), eager.len());
        assert_eq!(crate::compiled::count(), eager.len());
        for (entry, eager) in db.models.iter().zip(&eager) {
            let Entry::Shipped(shipped) = entry else {
                panic!("{}: not a shipped entry", eager.id);
            };
            let full = shipped.model();
            assert_eq!(full, eager);
            assert!(!full.events().is_empty() && !full.mappings().is_empty());
            assert!(shipped.header().events().is_empty(), "{}", eager.id);
        }
        assert_eq!(db.models().cloned().collect::<Vec<_>>(), eager);
    }

    #[test]
    fn detection_and_ids_parse_only_what_is_used() {
        let db = Database::parse_shipped().unwrap();
        let parsed = |db: &Database| -> Vec<String> {
            db.models
                .iter()
                .filter_map(|e| match e {
                    Entry::Shipped(s) if s.full.get().is_some() => {
                        Some(s.indexed.id.text().to_string())
                    }
                    _ => None,
                })
                .collect()
        };
        let zen3 = db.detect(&cpu(Vendor::Amd, 0x19, 0x21)).unwrap();
        assert!(
            zen3.event("LS_DISPATCH").is_some(),
            "detect gives the full model"
        );
        assert_eq!(parsed(&db), ["amd64_fam19h_zen3"]);
        assert!(!db.nearest_names(None, "p7").is_empty());
        assert!(db.model("p7").is_none());
        assert_eq!(parsed(&db), ["amd64_fam19h_zen3"]);
        assert!(db.model("p6").unwrap().event("INST_RETIRED").is_some());
        assert_eq!(parsed(&db), ["p6", "amd64_fam19h_zen3"]);
        // Clones share the parsed models.
        let clone = db.clone();
        assert_eq!(parsed(&clone), ["p6", "amd64_fam19h_zen3"]);
        assert_eq!(db.models().count(), shipped_model_count());
        assert_eq!(parsed(&clone).len(), shipped_model_count());
    }

    /// What `encode` and `list` of one model read (issue 58): resolving that model's native
    /// events, in its own spelling and in libpfm4's, and its uncore events, makes that model
    /// alone of the 98 shipped, and listing it makes no other.
    #[test]
    fn one_models_events_make_that_model_alone() {
        use crate::domain::tests::PERF;
        let made = |db: &Database| -> Vec<String> {
            db.models
                .iter()
                .filter(|e| matches!(e, Entry::Shipped(s) if s.full.get().is_some()))
                .map(|e| e.id().to_string())
                .collect()
        };
        let db = Database::parse_shipped().unwrap();
        assert!(db.models.len() > 90, "{} models", db.models.len());
        for event in [
            "INST_RETIRED.ANY",
            "cpu/event=0xc0,umask=0x0/",
            "spr::INST_RETIRED:ANY_P:u",
        ] {
            db.resolve_exact(Some("spr"), event, &PERF)
                .unwrap_or_else(|e| panic!("{event}: {e}"));
            assert_eq!(made(&db), ["spr"], "after {event}");
        }
        assert!(!db.uncore_events("spr", "UNC_CHA_CLOCKTICKS").is_empty());
        assert_eq!(made(&db), ["spr"]);
        let listed = db.model("spr").unwrap().events.len();
        assert!(listed > 50, "spr lists {listed} events");
        assert_eq!(made(&db), ["spr"]);
    }

    /// A name no native event can spell (`page-faults`) resolves on a perf-first backend
    /// without parsing the model's events, to what the full model gives; a name a native can
    /// spell (`branches`, which is p5's native `BRANCHES`) still reads the model; so does a
    /// backend without perf, where the model's mapping decides.
    #[test]
    fn perf_names_resolve_without_parsing_the_model() {
        use crate::domain::tests::{PERF, X86};
        let parsed = |db: &Database| -> usize {
            db.models
                .iter()
                .filter(|e| matches!(e, Entry::Shipped(s) if s.full.get().is_some()))
                .count()
        };
        let names = [
            "page-faults",
            "context-switches:u",
            "task-clock",
            "L1-dcache-load-misses:k",
            "branch-misses",
            "cpu-cycles",
        ];
        for id in ["p5", "rkl", "amd64_fam19h_zen3"] {
            let db = Database::parse_shipped().unwrap();
            let quick: Vec<_> = names
                .iter()
                .map(|n| db.resolve_exact(Some(id), n, &PERF))
                .collect();
            assert_eq!(parsed(&db), 0, "{id}: a model was parsed for {names:?}");
            let model = db.model(id);
            assert_eq!(parsed(&db), 1);
            for (name, quick) in names.iter().zip(quick) {
                assert_eq!(quick, db.resolve_own(model, name, &PERF), "{id}: {name}");
                assert!(quick.is_ok(), "{id}: {name}: {quick:?}");
            }
        }
        let db = Database::parse_shipped().unwrap();
        let perf_p5 = counterhal_hal::Accepts::new(
            &[counterhal_hal::Family::Perf, counterhal_hal::Family::P5Cesr],
            counterhal_hal::Domain::ALL,
            counterhal_hal::Domain::ALL,
        );
        let branches = db.resolve_exact(Some("p5"), "branches", &perf_p5).unwrap();
        assert_eq!(parsed(&db), 1, "`branches` may be p5's native event");
        assert!(matches!(
            branches.terms[0].request.encoding,
            counterhal_hal::Encoding::P5Cesr(_)
        ));
        let db = Database::parse_shipped().unwrap();
        let mapped = db
            .resolve_exact(Some("rkl"), "branch-misses", &X86)
            .unwrap();
        assert_eq!(parsed(&db), 1, "without perf the model's mapping decides");
        assert!(matches!(
            mapped.terms[0].request.encoding,
            counterhal_hal::Encoding::Evtsel(_)
        ));
    }

    #[test]
    fn a_file_changing_a_shipped_model_keeps_its_shipped_events() {
        let db = Database::parse_shipped().unwrap();
        let text = "[[cpu]]\nid = \"P6\"\ndescription = \"changed\"\n[[cpu.event]]\nname = \"MY_EVENT\"\ncode = 0x42\n";
        let changed = db.clone().with_toml_str("mine.toml", text).unwrap();
        let p6 = changed.model("p6").unwrap();
        assert_eq!(p6.description, "changed");
        assert!(p6.event("MY_EVENT").is_some());
        assert!(p6.event("INST_RETIRED").is_some(), "shipped events kept");
        assert!(
            p6.mapping(GeneralizedEvent::from_name("instructions").unwrap())
                .is_some()
        );
        assert_eq!(
            changed.detect(&cpu(Vendor::Intel, 6, 8)).unwrap().id,
            "piii"
        );
        // The original database is unchanged.
        assert_ne!(db.model("p6").unwrap().description, "changed");
        // The override is validated against the shipped content.
        let bad = "[[cpu]]\nid = \"p6\"\nencoder = \"p5\"\n";
        let error = db.with_toml_str("bad.toml", bad).unwrap_err();
        assert!(error.message().starts_with("bad.toml:3:"), "{error}");
    }

    /// The README's model table has one row per shipped model, in match order.
    #[test]
    fn readme_lists_every_shipped_model_in_order() {
        let readme = include_str!("../README.md");
        let table = readme
            .split_once("| id | also |")
            .and_then(|(_, rest)| rest.split_once("\n\n"))
            .map_or("", |(table, _)| table);
        let rows: Vec<&str> = table
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split_once("` |").map(|(id, _)| id))
            .collect();
        let db = Database::shipped().unwrap();
        let ids: Vec<String> = db.models().map(|m| m.id.clone()).collect();
        assert_eq!(rows, ids);
    }

    /// perf's signatures name models as detection would: family decimal, model and stepping
    /// hex, steppings telling Skylake-X from Cascade Lake.
    #[test]
    fn signatures_name_models() {
        let db = Database::shipped().unwrap();
        let id = |s: &str| db.model(s).map(|m| m.id.clone());
        assert_eq!(id("GenuineIntel-6-8F-8").as_deref(), Some("spr"));
        assert_eq!(
            id("AuthenticAMD-26-2-0").as_deref(),
            Some("amd64_fam1ah_zen5")
        );
        assert_eq!(id("GenuineIntel-6-55-4").as_deref(), Some("skx"));
        assert_eq!(id("GenuineIntel-6-55-7").as_deref(), Some("clx"));
        assert_eq!(id("GenuineIntel-6-55-B").as_deref(), Some("clx"));
        assert_eq!(id("GenuineIntel-6-E").as_deref(), Some("coreduo"));
        assert_eq!(
            id("AuthenticAMD-16-4").as_deref(),
            Some("amd64_fam10h_shanghai")
        );
        for bad in [
            "GenuineIntel-6",
            "GenuineIntel-0x6-8F",
            "GenuineIntel-6-8G",
            "GenuineIntel-6-8F-8-1",
            "CyrixInstead-6-8",
            "GenuineIntel-15-2",
        ] {
            assert_eq!(id(bad), None, "{bad}");
        }
        // libpfm4's names for CPUs that share a table are aliases.
        assert_eq!(id("knm").as_deref(), Some("knl"));
        assert_eq!(id("AMD64_K8_REVB").as_deref(), Some("amd64_k8_revc"));
        assert_eq!(id("amd64_k8_revf").as_deref(), Some("amd64_k8_revg"));
        assert_eq!(id("k8").as_deref(), Some("amd64_k8_revg"));
        assert_eq!(id("ix86arch").as_deref(), Some("intel-arch"));
        // libpfm4's names of its x86 core PMUs after 4.13 and on 32-bit builds (the installed
        // 4.13's are checked by tests/libpfm_sweep.rs): the P6 members are models of their own,
        // and `p6` is the pctr names' table.
        for (name, model) in [
            ("ppro", "ppro"),
            ("pii", "pii"),
            ("pm", "pm"),
            ("p6", "p6"),
            ("coreduo", "coreduo"),
            ("amd64_fam17h", "amd64_fam17h_zen1"),
            ("adl_glc", "adl_glc"),
            ("adl_grt", "adl_grt"),
            ("gnr", "gnr"),
            ("emr", "emr"),
            ("amd64_fam1ah_zen5", "amd64_fam1ah_zen5"),
        ] {
            assert_eq!(id(name).as_deref(), Some(model), "{name}");
        }
        let cpu = CpuIdentity::from_signature("GenuineIntel-6-8F-8").unwrap();
        assert_eq!(cpu.signature(), "GenuineIntel-6-8F-8");
        assert_eq!(
            CpuIdentity::from_signature(&cpu.signature()),
            Some(cpu.clone())
        );
    }

    /// K8's revisions by model and stepping, as libpfm4's `amd64_get_revision` decides them
    /// (revisions B and C share a table, as do F and G); every revision gets the shared
    /// overlay's generalized events and presets.
    #[test]
    fn k8_revisions_are_detected_as_libpfm4_decides() {
        let db = Database::shipped().unwrap();
        let id = |s: &str| db.model(s).map(|m| m.id.clone());
        for (signature, model) in [
            ("AuthenticAMD-15-5-1", "amd64_k8_revc"),
            ("AuthenticAMD-15-4-0", "amd64_k8_revc"),
            ("AuthenticAMD-15-5-2", "amd64_k8_revc"),
            ("AuthenticAMD-15-4-1", "amd64_k8_revc"),
            ("AuthenticAMD-15-F-0", "amd64_k8_revc"),
            ("AuthenticAMD-15-9F-2", "amd64_k8_revc"),
            ("AuthenticAMD-15-FF-0", "amd64_k8_revc"),
            ("AuthenticAMD-15-10-0", "amd64_k8_revd"),
            ("AuthenticAMD-15-1F-2", "amd64_k8_revd"),
            ("AuthenticAMD-15-23-2", "amd64_k8_reve"),
            ("AuthenticAMD-15-3F-2", "amd64_k8_reve"),
            ("AuthenticAMD-15-41-3", "amd64_k8_revg"),
            ("AuthenticAMD-15-5F-3", "amd64_k8_revg"),
            ("AuthenticAMD-15-C1-3", "amd64_k8_revg"),
            ("AuthenticAMD-15-6B-2", "amd64_k8_revg"),
            ("AuthenticAMD-15-8F-0", "amd64_k8_revg"),
        ] {
            assert_eq!(id(signature).as_deref(), Some(model), "{signature}");
        }
        for (name, model) in [
            ("amd64_k8_revb", "amd64_k8_revc"),
            ("amd64_k8_revc", "amd64_k8_revc"),
            ("amd64_k8_revd", "amd64_k8_revd"),
            ("amd64_k8_reve", "amd64_k8_reve"),
            ("amd64_k8_revf", "amd64_k8_revg"),
            ("amd64_k8_revg", "amd64_k8_revg"),
            ("k8", "amd64_k8_revg"),
        ] {
            let found = db.model(name).unwrap();
            assert_eq!(found.id, model, "{name}");
            assert_eq!(
                found.mappings().len(),
                db.model("k8").unwrap().mappings().len()
            );
        }
        // Revision D added the probes' upstream writes and the sized blocks, F the L2
        // writebacks.
        let has = |model: &str, event: &str, mask: &str| {
            db.model(model)
                .unwrap()
                .event(event)
                .is_some_and(|e| e.unit_mask(mask).is_some())
        };
        assert!(!has("amd64_k8_revc", "PROBE", "UPSTREAM_WRITES"));
        assert!(has("amd64_k8_revd", "PROBE", "UPSTREAM_WRITES"));
        assert!(!has("amd64_k8_reve", "L2_FILL_WRITEBACK", "L2_WRITEBACKS"));
        assert!(has("amd64_k8_revg", "L2_FILL_WRITEBACK", "L2_WRITEBACKS"));
        assert!(
            db.model("amd64_k8_revc")
                .unwrap()
                .event("SIZED_BLOCKS")
                .is_none()
        );
        assert!(
            db.model("amd64_k8_revd")
                .unwrap()
                .event("SIZED_BLOCKS")
                .is_some()
        );
    }

    /// perf's signatures with stepping ranges: Skylake-X is stepping 0-4 of model 0x55,
    /// Cascade Lake 5-F.
    #[test]
    fn signatures_split_a_model_by_stepping() {
        let db = Database::shipped().unwrap();
        let id = |s: &str| db.model(s).map(|m| m.id.clone());
        for stepping in ["0", "4"] {
            let signature = format!("GenuineIntel-6-55-{stepping}");
            assert_eq!(id(&signature).as_deref(), Some("skx"), "{signature}");
        }
        for stepping in ["5", "7", "B", "F"] {
            let signature = format!("GenuineIntel-6-55-{stepping}");
            assert_eq!(id(&signature).as_deref(), Some("clx"), "{signature}");
        }
        // Without a stepping, stepping 0: Skylake-X.
        assert_eq!(id("GenuineIntel-6-55").as_deref(), Some("skx"));
    }

    /// Oracle: Intel perfmon's mapfile, which gives Alder Lake (GenuineIntel-6-97) a table for
    /// its Core cores (`alderlake_goldencove_core`, core type 0x40) and one for its Atom cores
    /// (`alderlake_gracemont_core`, 0x20); Sapphire Rapids has one kind of core.
    #[test]
    fn a_hybrid_cores_sibling_is_the_other_table_of_its_chip() {
        let db = Database::shipped().unwrap();
        assert_eq!(
            db.hybrid_sibling_id("adl_glc", HybridCore::ATOM),
            Some("adl_grt")
        );
        assert_eq!(
            db.hybrid_sibling_id("adl_grt", HybridCore::CORE),
            Some("adl_glc")
        );
        assert_eq!(
            db.hybrid_sibling_id("GenuineIntel-6-97-2", HybridCore::CORE),
            Some("adl_glc")
        );
        assert_eq!(db.hybrid_sibling_id("spr", HybridCore::ATOM), None);
        assert_eq!(
            db.hybrid_sibling_id("no-such-model", HybridCore::ATOM),
            None
        );
    }

    /// A hybrid chip's core (CPUID leaf 0x1A: core type, native model id) picks its table;
    /// without one, the performance cores' table; the cores as Intel's mapfile lists them.
    #[test]
    fn hybrid_cores_pick_their_tables() {
        let db = Database::shipped().unwrap();
        let pick = |model: u32, eax: u32| {
            let core = HybridCore::from_leaf_1a(eax);
            db.detect_core(&cpu(Vendor::Intel, 6, model), core.as_ref())
                .map(|m| m.id.clone())
        };
        let table = [
            (0x97, 0x4000_0001, "adl_glc"),
            (0x97, 0x2000_0001, "adl_grt"),
            (0xb7, 0x2000_0001, "adl_grt"),
            (0xaa, 0x4000_0002, "mtl_rwc"),
            (0xaa, 0x2000_0002, "mtl_cmt"),
            (0xbd, 0x4000_0003, "lnl_lnc"),
            (0xbd, 0x2000_0003, "lnl_skt"),
            (0xc5, 0x4000_0003, "arl_lnc"),
            (0xc5, 0x2000_0003, "arl_skt"),
            // Arrow Lake H's low-power E-cores: Crestmont, native model 2.
            (0xc5, 0x2000_0002, "arl_cmt"),
            (0xc6, 0x2000_0003, "arl_skt"),
            (0xcc, 0x4000_0004, "ptl_cgc"),
            (0xcc, 0x2000_0004, "ptl_dkt"),
            // No core named (leaf 0x1A reads zeros): the P-cores' table.
            (0x97, 0, "adl_glc"),
            // A core type no table of the chip serves: the P-cores' table.
            (0x97, 0x1000_0001, "adl_glc"),
            // A chip with one kind of core ignores the core: Alder Lake-N is all Gracemont.
            (0xbe, 0x2000_0001, "adl_grt"),
            (0x55, 0x4000_0001, "skx"),
        ];
        for (model, eax, want) in table {
            assert_eq!(
                pick(model, eax).as_deref(),
                Some(want),
                "model {model:#x} leaf 0x1A {eax:#010x}"
            );
        }
        // Nova Lake is family 18.
        let nvl = |eax| {
            db.detect_core(
                &cpu(Vendor::Intel, 18, 1),
                HybridCore::from_leaf_1a(eax).as_ref(),
            )
            .map(|m| m.id.clone())
        };
        assert_eq!(nvl(0x2000_0005).as_deref(), Some("nvl_arw"));
        assert_eq!(nvl(0x4000_0005).as_deref(), Some("nvl_cyc"));
        // --cpu-model signatures name the core.
        let id = |s: &str| db.model(s).map(|m| m.id.clone());
        assert_eq!(id("GenuineIntel-6-97-2-atom").as_deref(), Some("adl_grt"));
        assert_eq!(id("GenuineIntel-6-97-2-core").as_deref(), Some("adl_glc"));
        assert_eq!(id("GenuineIntel-6-97-2").as_deref(), Some("adl_glc"));
        assert_eq!(id("GenuineIntel-6-C5-2-atom").as_deref(), Some("arl_skt"));
        assert_eq!(
            id("GenuineIntel-6-C5-2-0x20000002").as_deref(),
            Some("arl_cmt")
        );
        // A signature without its core says which table it picked and how to name the others.
        let note = db.hybrid_note("GenuineIntel-6-97-2").unwrap();
        assert!(note.contains("`adl_glc` (core type core) picked"), "{note}");
        assert!(
            note.contains("`adl_grt` (GenuineIntel-6-97-2-atom)"),
            "{note}"
        );
        let note = db.hybrid_note("GenuineIntel-6-C5-2").unwrap();
        assert!(
            note.contains("`arl_cmt` (GenuineIntel-6-C5-2-0x20000002)"),
            "{note}"
        );
        assert_eq!(db.hybrid_note("GenuineIntel-6-97-2-atom"), None);
        assert_eq!(db.hybrid_note("GenuineIntel-6-55-7"), None);
        assert_eq!(db.hybrid_note("adl_glc"), None);
        // The tables of Intel's hybrid chips, each naming its core.
        let hybrid: Vec<&str> = db
            .models()
            .filter(|m| m.hybrid.is_some())
            .map(|m| m.id.as_str())
            .collect();
        assert_eq!(hybrid.len(), 13, "{hybrid:?}");
    }

    #[test]
    fn detection_picks_the_first_match() {
        let db = Database::shipped().unwrap();
        let id = |c: CpuIdentity| db.detect(&c).map(|m| m.id.clone());
        assert_eq!(id(cpu(Vendor::Intel, 5, 2)).as_deref(), Some("p5"));
        assert_eq!(id(cpu(Vendor::Intel, 6, 8)).as_deref(), Some("piii"));
        assert_eq!(id(cpu(Vendor::Intel, 6, 0x0d)).as_deref(), Some("pm"));
        // Core Duo is its own PMU, not P6.
        assert_eq!(id(cpu(Vendor::Intel, 6, 0x0e)).as_deref(), Some("coreduo"));
        assert_eq!(id(cpu(Vendor::Intel, 6, 0x5e)).as_deref(), Some("skl"));
        assert_eq!(id(cpu(Vendor::Intel, 6, 0x8f)).as_deref(), Some("spr"));
        // A hybrid chip's signature gives its big core's table first.
        assert_eq!(id(cpu(Vendor::Intel, 6, 0x97)).as_deref(), Some("adl_glc"));
        // Skylake-X and Cascade Lake share model 0x55 and differ by stepping.
        let mut clx = cpu(Vendor::Intel, 6, 0x55);
        assert_eq!(id(clx.clone()).as_deref(), Some("skx"));
        clx.stepping = 7;
        assert_eq!(id(clx).as_deref(), Some("clx"));
        assert_eq!(id(cpu(Vendor::Intel, 6, 0x0f)).as_deref(), Some("core"));
        assert_eq!(id(cpu(Vendor::Intel, 6, 0x17)).as_deref(), Some("core"));
        // A family-6 model without a table of its own: the architectural catch-all.
        assert_eq!(
            id(cpu(Vendor::Intel, 6, 0x10)).as_deref(),
            Some("intel-arch")
        );
        assert_eq!(
            id(cpu(Vendor::Intel, 0xf, 2)),
            None,
            "NetBurst has no model"
        );
        assert_eq!(
            id(cpu(Vendor::Amd, 0xf, 5)).as_deref(),
            Some("amd64_k8_revc")
        );
        // Families 0x10-0x16 have their own tables (their DTLB events take a page-size unit
        // mask K8's do not).
        for (family, model) in [
            (0x10, "amd64_fam10h_barcelona"),
            (0x10 + 0x100, "amd64_fam10h_shanghai"),
            (0x10 + 0x200, "amd64_fam10h_istanbul"),
            (0x11, "amd64_fam11h_turion"),
            (0x12, "amd64_fam12h_llano"),
            (0x14, "amd64_fam14h_bobcat"),
            (0x15, "amd64_fam15h_interlagos"),
            (0x16, "amd64_fam16h"),
        ] {
            // Family 10h: model 2 is revision B, 4 revision C, 8 revision D (libpfm4's rule).
            let cpu_model = [2, 4, 8][family as usize >> 8];
            assert_eq!(
                id(cpu(Vendor::Amd, family & 0xff, cpu_model)).as_deref(),
                Some(model)
            );
        }
        assert_eq!(id(cpu(Vendor::Amd, 0x13, 2)), None, "no family 13h exists");
        // K7 is family 6 and must not get K8-only events.
        assert_eq!(id(cpu(Vendor::Amd, 6, 4)).as_deref(), Some("amd64_k7"));
        let amd = [
            (0x17, 0x01, "amd64_fam17h_zen1"),
            (0x17, 0x08, "amd64_fam17h_zen1"),
            (0x17, 0x2f, "amd64_fam17h_zen1"),
            (0x17, 0x31, "amd64_fam17h_zen2"),
            (0x17, 0x71, "amd64_fam17h_zen2"),
            (0x19, 0x01, "amd64_fam19h_zen3"),
            (0x19, 0x21, "amd64_fam19h_zen3"),
            (0x19, 0x50, "amd64_fam19h_zen3"),
            (0x19, 0x11, "amd64_fam19h_zen4"),
            (0x19, 0x61, "amd64_fam19h_zen4"),
            (0x19, 0x74, "amd64_fam19h_zen4"),
            (0x19, 0xa0, "amd64_fam19h_zen4"),
            // perf 7.2's mapfile: Zen 4 is every family 19h model its Zen 3 row leaves.
            (0x19, 0x30, "amd64_fam19h_zen4"),
            (0x19, 0xc0, "amd64_fam19h_zen4"),
            // This machine: AuthenticAMD family 0x1a model 2 (Zen 5), its own table.
            (0x1a, 0x02, "amd64_fam1ah_zen5"),
            (0x1a, 0x44, "amd64_fam1ah_zen5"),
            (0x1a, 0x70, "amd64_fam1ah_zen5"),
            (0x1a, 0x30, "amd64_fam1ah_zen6"),
            (0x1a, 0x50, "amd64_fam1ah_zen6"),
            (0x1a, 0xd0, "amd64_fam1ah_zen6"),
        ];
        for (family, model, want) in amd {
            assert_eq!(
                id(cpu(Vendor::Amd, family, model)).as_deref(),
                Some(want),
                "family {family:#x} model {model:#x}"
            );
        }
        assert_eq!(id(cpu(Vendor::Amd, 0x1b, 0x00)), None, "unknown AMD family");
    }

    #[test]
    fn readme_error_example_fails_as_shown() {
        let text = crate::resolve::tests::readme_block("### What an error looks like");
        let readme = include_str!("../README.md");
        let error = Database::shipped()
            .unwrap()
            .with_toml_str("bad.toml", text)
            .unwrap_err();
        assert!(error.message().contains("PAPI_L4_TCM"), "{error}");
        // The README quotes the message (file:line:column, key, what is wrong).
        assert!(
            error
                .message()
                .starts_with("bad.toml:3:13: key `PAPI_L4_TCM`"),
            "{error}"
        );
        assert!(
            readme.contains(error.message()),
            "README does not show the message `{}`",
            error.message()
        );
    }

    #[test]
    fn load_reads_the_environment_file() {
        // Only checks the no-variable path here: setting the process environment in a test
        // would race with other tests. tests/env.rs sets the variable in a child process.
        if std::env::var_os(EVENTS_ENV).is_none() {
            let db = Database::load(None).unwrap();
            assert_eq!(db.models().count(), shipped_model_count());
        }
        let missing = Database::load(Some(Path::new("/nonexistent/events.toml"))).unwrap_err();
        assert_eq!(missing.kind(), counterhal_hal::ErrorKind::InvalidInput);
        assert!(missing.errno().is_some());
    }
}
