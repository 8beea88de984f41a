//! libpapi's tables, as rows of the shipped tables' `papi` part (written by
//! `counterhal-gen tables` from `data/papi/`, `table_writer/papi.rs`), read in place: PAPI 7.0's
//! presets, libpfm4's `perf::` events (its perf_event PMU) and libpfm4's Intel uncore PMU
//! families by CPU model. Strings are the part's pool's; nothing is parsed or allocated at
//! start-up. For libpapi (counterhal-papi), not for library users.

use crate::table::Papi;

/// A string of this module's part of the shipped tables.
type Str = crate::table::Str<Papi>;

crate::table::row! {
    /// One of PAPI's presets (`data/papi/presets.toml`), in the order of their codes.
    struct PresetRow {
        name: Str,
        short: Str,
        categories: u32,
    }
}

crate::table::row! {
    /// One of libpfm4's `perf::` events (`data/papi/perf_natives.toml`): its perf type, and its
    /// unit masks and modifiers as `(start, length)` in `PERF_PAIRS`.
    struct PerfRow {
        name: Str,
        description: Str,
        kind: u8,
        config: u64,
        unit_masks: (u16, u16),
        modifiers: (u16, u16),
    }
}

crate::table::row! {
    /// One of libpfm4's uncore PMU families (`data/papi/uncore_families.toml`).
    struct FamilyRow {
        libpfm4: Str,
        kernel: Str,
        database: Str,
        boxes: u8,
    }
}

crate::table::row! {
    /// One of libpfm4's events of an uncore family, with a unit mask where it has them
    /// (`data/papi/uncore_events.toml`): its raw config as libpfm4 encodes it.
    struct UncoreEventRow {
        family: Str,
        name: Str,
        config: u64,
    }
}

crate::table::row! {
    /// A CPU model's uncore PMU families: `(start, length)` in `UNCORE_FAMILIES`.
    struct ModelRow {
        id: Str,
        families: (u16, u16),
    }
}

/// One of PAPI 7.0's presets.
#[derive(Clone, Copy)]
pub struct Preset(PresetRow);

impl std::fmt::Debug for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Preset").field(&self.name()).finish()
    }
}

impl Preset {
    /// Its name (`PAPI_TOT_INS`).
    pub fn name(&self) -> &'static str {
        self.0.name.text()
    }

    /// Its short description (`PAPI_event_info_t.short_descr`).
    pub fn short_description(&self) -> &'static str {
        self.0.short.text()
    }

    /// Its long description (`PAPI_event_info_t.long_descr`): the HAL's description of the
    /// preset, [`counterhal_hal::Preset::description`], the one copy (the table writer stops
    /// where PAPI's differs from it).
    pub fn long_description(&self) -> &'static str {
        counterhal_hal::Preset::from_name(self.name()).map_or("", |p| p.description())
    }

    /// Its categories, `PAPI_PRESET_BIT_*` (`PAPI_event_info_t.event_type`).
    pub fn categories(&self) -> u32 {
        self.0.categories
    }
}

/// PAPI 7.0's presets in the order of their codes: preset `index` is code
/// `0x8000_0000 | index`.
pub fn presets() -> impl ExactSizeIterator<Item = Preset> + Clone {
    crate::table::table!(Papi, PresetRow, "PRESETS")
        .iter()
        .map(Preset)
}

/// Preset `index` (code `0x8000_0000 | index`), if there is one.
pub fn preset(index: usize) -> Option<Preset> {
    crate::table::table!(Papi, PresetRow, "PRESETS")
        .get(index)
        .map(Preset)
}

/// The kind of a `perf::` event: its `perf_event_attr.type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerfType {
    /// `PERF_TYPE_HARDWARE`.
    Hardware,
    /// `PERF_TYPE_SOFTWARE`.
    Software,
    /// `PERF_TYPE_HW_CACHE`: the config is the cache; unit masks give the operation and result.
    Cache,
    /// `PERF_TYPE_RAW`: the config is the core PMU's own encoding (`perf_raw::`).
    Raw,
}

impl PerfType {
    /// Its `perf_event_attr.type`, as a row holds it.
    // The writer's alone (`counterhal-gen tables`).
    #[cfg_attr(not(feature = "table-writer"), allow(dead_code))]
    pub(crate) const fn code(self) -> u8 {
        match self {
            PerfType::Hardware => 0,
            PerfType::Software => 1,
            PerfType::Cache => 3,
            PerfType::Raw => 4,
        }
    }

    /// The kind whose `perf_event_attr.type` is `code` (the writer writes no other: any other
    /// reads as raw).
    fn of(code: u8) -> PerfType {
        match code {
            0 => PerfType::Hardware,
            1 => PerfType::Software,
            3 => PerfType::Cache,
            _ => PerfType::Raw,
        }
    }
}

/// One event of libpfm4's perf_event PMU (or its perf_raw PMU's pseudo-event).
#[derive(Clone, Copy)]
pub struct PerfNative(PerfRow);

impl PerfNative {
    /// Its PAPI name (`perf::CS`).
    pub fn name(&self) -> &'static str {
        self.0.name.text()
    }

    /// libpfm4's description.
    pub fn description(&self) -> &'static str {
        self.0.description.text()
    }

    /// Its perf type.
    pub fn kind(&self) -> PerfType {
        PerfType::of(self.0.kind)
    }

    /// Its perf config (a cache event's: the cache's id).
    pub fn config(&self) -> u64 {
        self.0.config
    }

    /// Its unit masks and their descriptions (a cache event's operations and results), in
    /// libpfm4's order.
    pub fn unit_masks(
        &self,
    ) -> impl ExactSizeIterator<Item = (&'static str, &'static str)> + Clone + use<> {
        pairs(self.0.unit_masks)
    }

    /// The qualifiers it takes and their descriptions, in libpfm4's order.
    pub fn modifiers(
        &self,
    ) -> impl ExactSizeIterator<Item = (&'static str, &'static str)> + Clone + use<> {
        pairs(self.0.modifiers)
    }
}

/// Two events are one where their names are (the writer refuses a name twice).
impl PartialEq for PerfNative {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for PerfNative {}

impl std::fmt::Debug for PerfNative {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerfNative")
            .field("name", &self.name())
            .field("kind", &self.kind())
            .field("config", &self.config())
            .finish()
    }
}

/// Names and descriptions `PERF_PAIRS[start..start + length]`.
fn pairs(range: (u16, u16)) -> impl ExactSizeIterator<Item = (&'static str, &'static str)> + Clone {
    crate::table::table!(Papi, (Str, Str), "PERF_PAIRS")
        .range(range)
        .iter()
        .map(|(name, description)| (name.text(), description.text()))
}

/// libpfm4's `perf::` events, in libpfm4's order.
pub fn perf_natives() -> impl ExactSizeIterator<Item = PerfNative> + Clone {
    crate::table::table!(Papi, PerfRow, "PERF_NATIVES")
        .iter()
        .map(PerfNative)
}

/// libpfm4's perf_raw PMU's one pseudo-event (`perf_raw::r0000`), named for perf's raw
/// syntax (`perf_raw::rc0` is config 0xc0 of `PERF_TYPE_RAW`).
pub fn perf_raw() -> Option<PerfNative> {
    crate::table::table!(Papi, PerfRow, "PERF_RAW")
        .get(0)
        .map(PerfNative)
}

/// One of libpfm4's uncore PMU families on a CPU model.
#[derive(Clone, Copy)]
pub struct UncoreFamily(FamilyRow);

impl std::fmt::Debug for UncoreFamily {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("UncoreFamily")
            .field(&self.libpfm4())
            .finish()
    }
}

impl UncoreFamily {
    /// libpfm4's PMU name without the box number (`skx_unc_imc`; `skx_unc_pcu`, one PMU).
    pub fn libpfm4(&self) -> &'static str {
        self.0.libpfm4.text()
    }

    /// How many boxes libpfm4 defines (`skx_unc_imc0` to `skx_unc_imc5`: 6); 0 for one PMU
    /// without a number.
    pub fn boxes(&self) -> u8 {
        self.0.boxes
    }

    /// The kernel PMU libpfm4 opens (`perf_name`), without the box number: box N of a family
    /// with boxes is `{kernel}_N` (`uncore_imc_0`); a single PMU is `kernel` itself.
    pub fn kernel(&self) -> &'static str {
        self.0.kernel.text()
    }

    /// The event database's uncore PMU whose events it counts (`uncore_imc`).
    pub fn database(&self) -> &'static str {
        self.0.database.text()
    }
}

/// libpfm4's events of uncore family `family` (`spr_unc_imc`) with their raw configs, as
/// libpfm4 encodes them (`EVENT:UMASK`, or `EVENT` for an event without unit masks), for the
/// families whose names resolve by libpfm4's own encodings (`data/papi/uncore_events.toml`);
/// none for the others, whose events are the database's.
pub fn uncore_libpfm4_events(family: &str) -> impl Iterator<Item = (&'static str, u64)> + '_ {
    crate::table::table!(Papi, UncoreEventRow, "UNCORE_EVENTS")
        .iter()
        .filter(move |row| row.family.text() == family)
        .map(|row| (row.name.text(), row.config))
}

/// Two families are one where their libpfm4 names are (a name is one family's).
impl PartialEq for UncoreFamily {
    fn eq(&self, other: &Self) -> bool {
        self.0.libpfm4 == other.0.libpfm4
    }
}

impl Eq for UncoreFamily {}

/// The CPU models (the event database's ids) that libpfm4's uncore PMU families are listed
/// for, in the data file's order.
pub fn uncore_models() -> impl ExactSizeIterator<Item = &'static str> + Clone {
    crate::table::table!(Papi, ModelRow, "UNCORE_MODELS")
        .iter()
        .map(|model| model.id.text())
}

/// libpfm4's uncore PMU families of CPU model `model` (none for a model without them).
pub fn uncore_families(model: &str) -> impl ExactSizeIterator<Item = UncoreFamily> + Clone {
    let range = crate::table::table!(Papi, ModelRow, "UNCORE_MODELS")
        .iter()
        .find(|row| row.id.text() == model)
        .map_or((0, 0), |row| row.families);
    crate::table::table!(Papi, FamilyRow, "UNCORE_FAMILIES")
        .range(range)
        .iter()
        .map(UncoreFamily)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_reads_whole() {
        assert_eq!(presets().len(), 108);
        assert_eq!(preset(0).map(|p| p.name()), Some("PAPI_L1_DCM"));
        assert!(preset(108).is_none());
        assert!(presets().all(|p| p.name().starts_with("PAPI_") && p.categories() != 0));
        assert_eq!(perf_natives().len(), 82);
        assert!(perf_natives().all(|e| e.name().starts_with("perf::") && e.modifiers().len() > 0));
        let l1d = perf_natives()
            .find(|e| e.name() == "perf::PERF_COUNT_HW_CACHE_L1D")
            .unwrap();
        assert_eq!(l1d.kind(), PerfType::Cache);
        assert_eq!(l1d.unit_masks().next(), Some(("READ", "read access")));
        let raw = perf_raw().unwrap();
        assert_eq!((raw.name(), raw.kind()), ("perf_raw::r0000", PerfType::Raw));
        assert_eq!(uncore_models().count(), 13);
        let skx: Vec<UncoreFamily> = uncore_families("skx").collect();
        assert_eq!(skx, uncore_families("clx").collect::<Vec<_>>());
        assert_eq!(
            (
                skx[2].libpfm4(),
                skx[2].boxes(),
                skx[2].kernel(),
                skx[2].database()
            ),
            ("skx_unc_imc", 6, "uncore_imc", "uncore_imc")
        );
        assert_eq!(uncore_families("tgl").len(), 0);
        assert_eq!(uncore_libpfm4_events("spr_unc_imc").count(), 171);
        assert_eq!(uncore_libpfm4_events("skx_unc_imc").count(), 0);
    }
}
