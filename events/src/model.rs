//! The database's picture of one CPU model: match rules, PMU, native events, mappings.

use counterhal_hal::{CounterSet, ExtraMsr, Family, GeneralizedEvent, Sign};

use crate::cpu::{CpuIdentity, HybridCore, Vendor};
use crate::parse::EventSpec;

/// Which encoder turns a CPU model's events into hardware words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EncoderKind {
    /// Intel Pentium (P5): 6-bit events, CESR layout.
    P5,
    /// Intel P6 (Pentium Pro, II, III): PERFEVTSEL with cache-state and any-initiator unit
    /// masks, counter 0's enable bit gating both counters.
    P6,
    /// Intel architectural performance monitoring (PERFEVTSEL, fixed counters).
    IntelArch,
    /// AMD64 PerfEvtSel (12-bit events, bits 35:32).
    Amd64,
    /// The Arm PMUv3 (Armv8-A and Armv9-A cores): a 16-bit event number, counted through
    /// perf as a raw event of the core PMU (`event` is `config:0-15`, the 64-bit chained
    /// `long` form `config1:0`, as the kernel's `arm_pmuv3` driver's format attributes say).
    Armv8,
}

impl EncoderKind {
    /// Every encoder.
    pub const ALL: [EncoderKind; 5] = [
        EncoderKind::P5,
        EncoderKind::P6,
        EncoderKind::IntelArch,
        EncoderKind::Amd64,
        EncoderKind::Armv8,
    ];

    /// The name used in `events.toml`: `p5`, `p6`, `intel-arch`, `amd64`, `armv8`.
    pub const fn name(self) -> &'static str {
        match self {
            EncoderKind::P5 => "p5",
            EncoderKind::P6 => "p6",
            EncoderKind::IntelArch => "intel-arch",
            EncoderKind::Amd64 => "amd64",
            EncoderKind::Armv8 => "armv8",
        }
    }

    /// The encoder with this name.
    pub fn from_name(name: &str) -> Option<EncoderKind> {
        Self::ALL
            .into_iter()
            .find(|e| e.name().eq_ignore_ascii_case(name))
    }

    /// The largest event code the encoder can express (P5 0x3f, Intel 0xff, AMD 0xfff, Arm
    /// PMUv3 0xffff).
    pub const fn max_event_code(self) -> u16 {
        match self {
            EncoderKind::P5 => 0x3f,
            EncoderKind::P6 | EncoderKind::IntelArch => 0xff,
            EncoderKind::Amd64 => 0xfff,
            EncoderKind::Armv8 => 0xffff,
        }
    }

    /// The hardware family its events are encoded in: x86 EVTSEL, the P5's CESR field, or
    /// (Arm PMUv3, which only an OS's perf interface programs here) a perf attr.
    pub const fn family(self) -> Family {
        match self {
            EncoderKind::P5 => Family::P5Cesr,
            EncoderKind::P6 | EncoderKind::IntelArch | EncoderKind::Amd64 => Family::Evtsel,
            EncoderKind::Armv8 => Family::Perf,
        }
    }
}

/// A CPU model's PMU: how many counters of what width.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PmuDescription {
    /// General-purpose counters per logical CPU.
    pub general_counters: u32,
    /// Their width in bits.
    pub counter_width: u32,
    /// Fixed-function counters.
    pub fixed_counters: u32,
    /// Their width in bits (0 when there are none).
    pub fixed_width: u32,
    /// Whether the core has TSX's event-select bits IN_TX and IN_TXCP (`pmu = { tsx = true }`):
    /// `Some(false)` refuses `intx` and `intxcp` on this model, `None` (a model that does not
    /// say) leaves it to the backend, which checks the CPU.
    pub tsx: Option<bool>,
}

/// A set of numbers given as a list of inclusive ranges; empty means "any".
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct NumberSet {
    /// The inclusive ranges.
    pub ranges: Vec<(u32, u32)>,
}

impl NumberSet {
    /// Whether `value` is in the set (always, for an empty set).
    pub fn contains(&self, value: u32) -> bool {
        NumberSet::ranges_contain(&self.ranges, value)
    }

    /// Whether some number is in both sets (an empty set holds any).
    pub fn overlaps(&self, other: &NumberSet) -> bool {
        self.ranges.is_empty()
            || other.ranges.is_empty()
            || self.ranges.iter().any(|(lo, hi)| {
                other
                    .ranges
                    .iter()
                    .any(|(other_lo, other_hi)| lo <= other_hi && other_lo <= hi)
            })
    }

    /// Whether inclusive `ranges` hold `value` (no ranges: any value), as
    /// [`NumberSet::contains`] reads them.
    pub(crate) fn ranges_contain(ranges: &[(u32, u32)], value: u32) -> bool {
        ranges.is_empty() || ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&value))
    }
}

/// One match rule: a CPU matches when vendor, family, model and stepping all match.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MatchRule {
    /// The vendor.
    pub vendor: Vendor,
    /// Display families.
    pub family: NumberSet,
    /// Display models (empty = any).
    pub model: NumberSet,
    /// Steppings (empty = any).
    pub stepping: NumberSet,
}

impl MatchRule {
    /// Whether `cpu` matches this rule.
    pub fn matches(&self, cpu: &CpuIdentity) -> bool {
        self.vendor == cpu.vendor
            && self.family.contains(cpu.family)
            && self.model.contains(cpu.model)
            && self.stepping.contains(cpu.stepping)
    }

    /// Whether some CPU matches both this rule and `other`.
    pub fn overlaps(&self, other: &MatchRule) -> bool {
        self.vendor == other.vendor
            && self.family.overlaps(&other.family)
            && self.model.overlaps(&other.model)
            && self.stepping.overlaps(&other.stepping)
    }
}

/// What kind of bits a unit mask sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnitMaskClass {
    /// An ordinary named unit mask.
    Plain,
    /// A P6 cache-state bit (MODIFIED, EXCLUSIVE, SHARED, INVALID); all four apply when none
    /// is named.
    CacheState,
    /// The P6 any-initiator bit (ANY_INITIATOR).
    AnyInitiator,
}

/// How a register-bit unit mask combines with the other unit masks of its event (libpfm4's
/// unit-mask flags).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CombineRules {
    /// Never combined with another unit mask of its group (libpfm4's `INTEL_X86_NCOMBO`).
    pub alone_in_group: bool,
    /// No unit mask of a later group may be used with it, named or default
    /// (`INTEL_X86_EXCL_GRP_GT`).
    pub excludes_later_groups: bool,
    /// No named unit mask of another group but group 0 may be used with it
    /// (`INTEL_X86_EXCL_GRP_BUT_0`).
    pub excludes_other_groups: bool,
    /// Its group may be left without a default when none of its masks is named
    /// (`INTEL_X86_GRP_DFL_NONE`).
    pub group_may_be_empty: bool,
}

/// A named unit mask of a native event.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UnitMask {
    /// The name (libpfm4's where libpfm4 knows the CPU).
    pub name: String,
    /// The unit-mask byte.
    pub code: u8,
    /// A one-line description.
    pub description: String,
    /// Whether it applies when no unit mask is named.
    pub default: bool,
    /// The counter mask it implies (0 = none).
    pub cmask: u8,
    /// Whether it implies the edge bit.
    pub edge: bool,
    /// Whether it implies the invert bit.
    pub invert: bool,
    /// The fixed counter that counts exactly this event, if any.
    pub fixed: Option<u32>,
    /// The event code it selects instead of its event's (Intel tables list a few unit masks
    /// of one event name under another code), if any.
    pub event_code: Option<u16>,
    /// The general counters it may use instead of its event's (empty: its fixed counter
    /// only), if it narrows them.
    pub counters: Option<CounterSet>,
    /// Its group (libpfm4's `grpid`): a group no named unit mask belongs to still gets its
    /// defaults.
    pub group: u8,
    /// What kind of bits it sets.
    pub class: UnitMaskClass,
    /// The extra MSR it programs with its event select (offcore response, load latency,
    /// frontend), if any.
    pub extra: Option<ExtraMsr>,
    /// It can be sampled precisely (Intel PEBS).
    pub precise: bool,
    /// It is deprecated upstream: it still resolves, and `list` shows it apart.
    pub deprecated: bool,
    /// It sets AnyThread (EVTSEL bit 21): the event of both hyper-threads of the core.
    pub any_thread: bool,
    /// The second unit-mask byte it sets (Intel perfmon's `UMaskExt`, EVTSEL bits 47:40; TOML
    /// `umask_ext`), 0 for none.
    pub umask2: u8,
    /// The bits it ORs into its event's extra register value, if it is a register-bit mask
    /// (libpfm4's offcore-response request, supplier and snoop bits): such masks combine by
    /// their groups and [`CombineRules`].
    pub extra_bits: Option<u64>,
    /// How it combines with its event's other register-bit masks.
    pub combine: CombineRules,
    /// The register-bit masks it stands for when named (libpfm4's `uequiv`), if any: named,
    /// it is replaced by them; added as its group's default, its own bits apply.
    pub same_as: Vec<String>,
}

impl UnitMask {
    /// Whether the mask carries its own filter bits (counter mask, edge, invert, AnyThread).
    pub fn has_filters(&self) -> bool {
        self.cmask != 0 || self.edge || self.invert || self.any_thread
    }

    /// Whether the mask changes its event's code or counters, or needs its own extra MSR
    /// value, so it cannot be combined with another unit mask.
    pub fn overrides_event(&self) -> bool {
        self.event_code.is_some() || self.counters.is_some() || self.extra.is_some()
    }
}

/// Flags of a native event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EventFlags {
    /// A unit mask must be named (no default applies).
    pub umask_required: bool,
    /// The event takes P6 cache-state (MESI) bits.
    pub mesi: bool,
    /// The event may take the any-initiator bit.
    pub any_initiator: bool,
    /// At most one plain unit mask may be named.
    pub exclusive: bool,
    /// The event can be sampled precisely (Intel PEBS): perf's `:p`/`:pp` apply.
    pub precise: bool,
    /// The event is deprecated upstream: it still resolves, and `list` shows it apart.
    pub deprecated: bool,
    /// The event sets AnyThread (EVTSEL bit 21): both hyper-threads of the core.
    pub any_thread: bool,
}

/// A native event of a CPU model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NativeEvent {
    /// The name (libpfm4's where libpfm4 knows the CPU, the P6 manuals' on P6).
    pub name: String,
    /// The event code (6 bits on P5, 8 on Intel, 12 on AMD).
    pub code: u16,
    /// A unit-mask byte always set (for events whose unit mask is part of their identity).
    pub base_umask: u8,
    /// A one-line description.
    pub description: String,
    /// The general-purpose counters it may use (empty: fixed counter only).
    pub counters: CounterSet,
    /// The fixed counter that counts exactly this event (with no unit mask named), if any.
    pub fixed: Option<u32>,
    /// Its flags.
    pub flags: EventFlags,
    /// The extra MSR it programs with its event select when no unit mask brings its own.
    pub extra: Option<ExtraMsr>,
    pub(crate) unit_masks: Vec<UnitMask>,
}

impl NativeEvent {
    /// Its unit masks, including the P6 cache-state and any-initiator bits it takes.
    pub fn unit_masks(&self) -> &[UnitMask] {
        &self.unit_masks
    }

    /// The unit mask with this name (case-insensitive).
    pub fn unit_mask(&self, name: &str) -> Option<&UnitMask> {
        self.unit_masks
            .iter()
            .find(|u| u.name.eq_ignore_ascii_case(name))
    }

    /// Whether a plain unit mask must be named: the flag says so, or the event has plain unit
    /// masks and none is a default.
    pub fn needs_unit_mask(&self) -> bool {
        let plain = || {
            self.unit_masks
                .iter()
                .filter(|u| u.class == UnitMaskClass::Plain)
        };
        self.flags.umask_required || (plain().count() > 0 && !plain().any(|u| u.default))
    }
}

/// The native events behind a generalized event or preset: a sum or difference of terms,
/// each possibly weighted by a whole factor.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Mapping {
    /// The generalized event or preset.
    pub event: GeneralizedEvent,
    /// The expression as written (`BR_INST_RETIRED - BR_TAKEN_RETIRED`), or, for a preset
    /// from PAPI's table, the sum its form stands for (`A + 2 * B`).
    pub expression: String,
    /// Where the mapping comes from PAPI's preset table: its form there.
    pub papi: Option<PapiForm>,
    pub(crate) terms: Vec<(Sign, u32, EventSpec)>,
}

impl Mapping {
    /// The terms: sign, factor (1 for a plain sum) and native event string.
    pub fn terms(&self) -> impl Iterator<Item = (Sign, u32, String)> + '_ {
        self.terms
            .iter()
            .map(|(sign, factor, spec)| (*sign, *factor, spec_text(spec)))
    }
}

/// A preset as PAPI's `papi_events.csv` defines it: `PRESET,NAME,DERIVED,[POSTFIX,]NATIVES`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PapiForm {
    /// PAPI's derived type: `NOT_DERIVED`, `DERIVED_ADD`, `DERIVED_SUB`, `DERIVED_POSTFIX`.
    pub derived: String,
    /// The postfix formula over `N0`..`Nn` (for `DERIVED_POSTFIX`).
    pub postfix: Option<String>,
    /// The native events, in libpfm4's spelling, in PAPI's order (`N0` first).
    pub natives: Vec<String>,
}

pub(crate) fn spec_text(spec: &EventSpec) -> String {
    let mut text = spec.name.clone();
    for mask in &spec.unit_masks {
        text.push(':');
        text.push_str(mask);
    }
    let m = &spec.modifiers;
    for (name, value) in [("e", m.edge), ("i", m.invert)] {
        if value == Some(true) {
            text.push(':');
            text.push_str(name);
        }
    }
    if let Some(c) = m.cmask {
        text.push_str(&format!(":c={c}"));
    }
    text
}

/// One CPU model of the database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuModel {
    /// The id used by `--cpu-model` (`p6`, `skl`, `amd64_fam19h_zen3`).
    pub id: String,
    /// A one-line description.
    pub description: String,
    /// Other names it answers to (libpfm4's PMU names for the CPUs that share its table).
    pub aliases: Vec<String>,
    /// The encoder for its events.
    pub encoder: EncoderKind,
    /// Its PMU.
    pub pmu: PmuDescription,
    /// On a hybrid chip, the core this table serves (CPUID leaf 0x1A's core type and native
    /// model id); `None` for the table of a chip whose cores are all alike.
    pub hybrid: Option<HybridCore>,
    pub(crate) rules: Vec<MatchRule>,
    pub(crate) events: Vec<NativeEvent>,
    pub(crate) index: crate::fast_map::FastMap<String, usize>,
    pub(crate) mappings: Vec<Mapping>,
    /// PAPI presets of the model's generated table it does not map, and why.
    pub(crate) refused_presets: Vec<(GeneralizedEvent, String)>,
    /// Other spellings of its events (libpfm4's, perf's) keyed by [`alias_key`], each with
    /// the event string it stands for.
    pub(crate) event_aliases: crate::fast_map::FastMap<String, EventSpec>,
}

/// `spec` (as typed) with its name, and the first unit mask it consumed, replaced by an alias's
/// `target`; `rest` are the unit masks typed after the alias.
fn rewrite_alias(spec: &EventSpec, target: &EventSpec, rest: &[String]) -> Option<EventSpec> {
    let mut out = target.clone();
    out.pmu = spec.pmu.clone();
    out.unit_masks.extend(rest.iter().cloned());
    // The loader allows no modifiers in a target, so the typed ones merge without conflict.
    out.modifiers.merge(&spec.modifiers).ok()?;
    Some(out)
}

/// The key an event alias is stored under: upper case, `EVENT` or `EVENT:UNIT_MASK` (the first
/// `.` of `EVENT.UNIT_MASK` read as `:`).
pub(crate) fn alias_key(text: &str) -> String {
    let upper = text.trim().to_ascii_uppercase();
    if upper.contains(':') {
        upper
    } else {
        upper.replacen('.', ":", 1)
    }
}

impl CpuModel {
    /// Its match rules, in order.
    pub fn match_rules(&self) -> &[MatchRule] {
        &self.rules
    }

    /// Whether any match rule accepts `cpu`.
    pub fn matches(&self, cpu: &CpuIdentity) -> bool {
        self.rules.iter().any(|r| r.matches(cpu))
    }

    /// Its native events, in file order.
    pub fn events(&self) -> &[NativeEvent] {
        &self.events
    }

    /// How many encodings it names: each event without unit masks, and each unit mask.
    pub fn unit_mask_count(&self) -> usize {
        self.events.iter().map(|e| e.unit_masks.len().max(1)).sum()
    }

    /// The native event with this name (case-insensitive).
    pub fn event(&self, name: &str) -> Option<&NativeEvent> {
        if let Some(&i) = self.index.get(name) {
            return self.events.get(i);
        }
        // The index's names are upper case: one without a lower-case letter was looked up.
        if !name.bytes().any(|b| b.is_ascii_lowercase()) {
            return None;
        }
        self.index
            .get(&name.to_ascii_uppercase())
            .and_then(|&i| self.events.get(i))
    }

    /// The mappings of generalized events and presets, in file order.
    pub fn mappings(&self) -> &[Mapping] {
        &self.mappings
    }

    /// The mapping of one generalized event or preset.
    pub fn mapping(&self, event: GeneralizedEvent) -> Option<&Mapping> {
        self.mappings.iter().find(|m| m.event == event)
    }

    /// The presets of PAPI's table whose form there does not map on this model, each with why
    /// (a native event it names that does not resolve here, or a form that is no weighted
    /// sum), as PAPI leaves out a preset whose natives libpfm4 does not find. A hand-written
    /// overlay may still map such a preset ([`CpuModel::mapping`] says).
    pub fn refused_presets(&self) -> &[(GeneralizedEvent, String)] {
        &self.refused_presets
    }

    /// The native event `spec` names, and the unit mask split off a dotted name
    /// (`INST_RETIRED.ANY_P` is `INST_RETIRED` with unit mask `ANY_P`).
    pub(crate) fn lookup<'m, 's>(
        &'m self,
        spec: &'s EventSpec,
    ) -> Option<(&'m NativeEvent, Option<&'s str>)> {
        if let Some(event) = self.event(&spec.name) {
            return Some((event, None));
        }
        let (name, mask) = spec.name.split_once('.')?;
        Some((self.event(name)?, Some(mask)))
    }

    /// Its event aliases: each other spelling (`EVENT` or `EVENT:UNIT_MASK`, upper case) and
    /// the event string it stands for, sorted by spelling.
    pub fn event_aliases(&self) -> Vec<(&str, String)> {
        let mut aliases: Vec<(&str, String)> = self
            .event_aliases
            .iter()
            .map(|(key, spec)| (key.as_str(), spec_text(spec)))
            .collect();
        aliases.sort();
        aliases
    }

    /// The aliases that spell one of `event`'s encodings (its name or one of its unit masks),
    /// sorted.
    pub fn aliases_of(&self, event: &NativeEvent) -> Vec<&str> {
        let mut aliases: Vec<&str> = self
            .event_aliases
            .iter()
            .filter(|(_, spec)| {
                self.lookup(spec)
                    .is_some_and(|(e, _)| e.name.eq_ignore_ascii_case(&event.name))
            })
            .map(|(key, _)| key.as_str())
            .collect();
        aliases.sort_unstable();
        aliases
    }

    /// `spec` with an alias replaced by the event string it stands for, when the name (or the
    /// name and its first unit mask) is not the model's own but an alias's: `None` when no
    /// alias applies.
    pub(crate) fn unalias(&self, spec: &EventSpec) -> Option<EventSpec> {
        if self.event_aliases.is_empty() {
            return None;
        }
        // The event part and the first unit mask, as typed.
        let (event_part, first, rest) = match spec.name.split_once('.') {
            Some((event, mask)) if spec.dotted => (event, Some(mask), &spec.unit_masks[..]),
            _ => (
                spec.name.as_str(),
                spec.unit_masks.first().map(String::as_str),
                spec.unit_masks.get(1..).unwrap_or_default(),
            ),
        };
        if let Some((event, extra)) = self.lookup(spec) {
            let mask = extra.or(spec.unit_masks.first().map(String::as_str));
            match mask {
                Some(m) if event.unit_mask(m).is_some() => return None,
                // The bare name of an event that needs a unit mask may be another table's
                // name of one encoding (libpfm4's `CPU_CLK_UNHALTED` is 0x3c/0x00).
                None if !event.needs_unit_mask() => return None,
                None => {
                    let target = self.event_aliases.get(&event_part.to_ascii_uppercase())?;
                    return rewrite_alias(spec, target, &[]);
                }
                Some(_) => {}
            }
        }
        if let Some(mask) = first {
            let key = format!("{}:{}", event_part, mask).to_ascii_uppercase();
            if let Some(target) = self.event_aliases.get(&key) {
                return rewrite_alias(spec, target, rest);
            }
        }
        if self.event(event_part).is_none() {
            let target = self.event_aliases.get(&event_part.to_ascii_uppercase())?;
            let mut all: Vec<String> = first.map(str::to_string).into_iter().collect();
            all.extend(rest.iter().cloned());
            return rewrite_alias(spec, target, &all);
        }
        None
    }

    pub(crate) fn rebuild_index(&mut self) {
        self.index = self
            .events
            .iter()
            .enumerate()
            .map(|(i, e)| (e.name.to_ascii_uppercase(), i))
            .collect();
    }
}
