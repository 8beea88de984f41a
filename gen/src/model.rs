//! The generator's picture of one CPU model, before it is written as TOML: facts only (names,
//! codes, unit masks, counters, flags), no description sentences.

/// One match rule: vendor, family, model and steppings (none = any).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Signature {
    /// `intel` or `amd`.
    pub vendor: &'static str,
    /// The display family.
    pub family: u32,
    /// The display model (None: any).
    pub model: Option<u32>,
    /// The last display model of a range starting at `model` (None: `model` alone).
    pub last_model: Option<u32>,
    /// The steppings it covers (empty: any).
    pub steppings: Vec<u32>,
}

/// A unit mask of a generated event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GenUnitMask {
    /// Its name (may hold inner dots, as Intel's names do).
    pub name: String,
    /// The unit-mask byte.
    pub code: u8,
    /// Counter mask (0 = none).
    pub cmask: u8,
    /// Edge detect.
    pub edge: bool,
    /// Invert.
    pub inv: bool,
    /// The fixed counter that counts exactly this, if any.
    pub fixed: Option<u32>,
    /// Its own event code, where it differs from the event's.
    pub event: Option<u16>,
    /// Its own general counters, where they differ from the event's.
    pub counters: Option<Vec<u32>>,
    /// Applies when no unit mask is named (or none of its group).
    pub default: bool,
    /// Its group (libpfm4's `grpid`; 0 unless the event has several).
    pub group: u8,
    /// The extra MSR it programs (address, value), if any.
    pub extra: Option<(u32, u64)>,
    /// It can be sampled precisely (PEBS).
    pub precise: bool,
    /// Deprecated upstream.
    pub deprecated: bool,
    /// Sets AnyThread.
    pub any: bool,
    /// The second unit-mask byte (Intel's `UMaskExt`, EVTSEL bits 47:40), 0 for none.
    pub umask_ext: u8,
    /// The bits it ORs into its event's extra register (libpfm4's offcore-response bits), if
    /// it is such a mask.
    pub extra_bits: Option<u64>,
    /// How it combines with the event's other register-bit masks (libpfm4's unit-mask flags).
    pub combine: Combine,
    /// The register-bit masks it stands for when named (libpfm4's `uequiv`, expanded).
    pub same_as: Vec<String>,
}

/// How a register-bit unit mask combines with the others of its event: libpfm4's
/// `INTEL_X86_NCOMBO`, `EXCL_GRP_GT`, `EXCL_GRP_BUT_0` and `GRP_DFL_NONE`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Combine {
    /// Never combined with another mask of its group.
    pub alone_in_group: bool,
    /// No mask of a later group may be used with it.
    pub excludes_later_groups: bool,
    /// No named mask of another group but group 0 may be used with it.
    pub excludes_other_groups: bool,
    /// Its group may stay without a default.
    pub group_may_be_empty: bool,
}

/// A generated native event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GenEvent {
    /// Its name.
    pub name: String,
    /// The event code.
    pub code: u16,
    /// A unit-mask byte always set (events without named unit masks).
    pub umask: Option<u8>,
    /// Its general counters (None: all).
    pub counters: Option<Vec<u32>>,
    /// The fixed counter that counts exactly this event, if any.
    pub fixed: Option<u32>,
    /// Flags as the schema names them.
    pub flags: Vec<&'static str>,
    /// Its unit masks.
    pub umasks: Vec<GenUnitMask>,
    /// The extra MSR it programs (address, value), if any.
    pub extra: Option<(u32, u64)>,
}

/// A generated model: header and events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GenModel {
    /// The model id.
    pub id: String,
    /// Other ids it answers to (libpfm4's PMU names for revisions sharing its table).
    pub model_aliases: Vec<String>,
    /// One line in our own words.
    pub description: String,
    /// `intel-arch`, `amd64`, `p6`.
    pub encoder: &'static str,
    /// What matches it.
    pub signatures: Vec<Signature>,
    /// General counters.
    pub general_counters: u32,
    /// Their width.
    pub counter_width: u32,
    /// Fixed counters.
    pub fixed_counters: u32,
    /// Their width.
    pub fixed_width: u32,
    /// Whether the core has TSX's IN_TX and IN_TXCP bits (`None`: not said, for AMD).
    pub tsx: Option<bool>,
    /// Where the data came from: source name, licence, commit, file.
    pub source: Provenance,
    /// What was left out, and why (reason, count), sorted.
    pub left_out: Vec<(String, usize)>,
    /// The events, sorted by name.
    pub events: Vec<GenEvent>,
    /// Other spellings of its encodings (`EVENT:UNIT_MASK` upper case) and the name each
    /// stands for, sorted.
    pub aliases: Vec<(String, String)>,
    /// Where the other spellings came from (one source per line of the header).
    pub alias_sources: Vec<Provenance>,
    /// Where the unit masks with an extra register value (offcore response, load latency,
    /// frontend) from another table came from (one source per line of the header).
    pub extra_mask_sources: Vec<Provenance>,
    /// Where libpfm4's names the model's own table lacks came from, with how many events and
    /// how many unit masks they hold, and how many unit masks of the table's own events were
    /// added under them.
    pub dropped_names: Option<(Provenance, DroppedCounts)>,
    /// The errata file applied to its source table and how many corrections it made.
    pub errata: Option<(String, usize)>,
}

/// How many of libpfm4's names a model got where its own table lacks them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DroppedCounts {
    /// Events added whole.
    pub events: usize,
    /// The unit masks those events hold.
    pub event_masks: usize,
    /// Unit masks added to events of the model's own table.
    pub masks: usize,
    /// Events of the model's own table given libpfm4's default unit mask (`BR_INST_RETIRED`
    /// alone is `BR_INST_RETIRED:ALL_BRANCHES`).
    pub defaults: usize,
    /// Events of the model's own table whose unit masks may combine, as in libpfm4.
    pub combinable: usize,
}

/// Where a generated model's data came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Provenance {
    /// `Intel perfmon (github.com/intel/perfmon, BSD-3-Clause)`.
    pub source: String,
    /// The source's commit.
    pub commit: String,
    /// The file inside the source.
    pub file: String,
}
